package redisstore

// Upgrade moves a keyspace of the first layout (a thread's checkpoints in
// "{p}:m:<thread>", a sorted set scored by createdAt, and no thread index)
// to the present one (see the package doc). Stores of this version read
// only the present layout: run Upgrade once, with every writer of the
// prefix stopped, before they start.

import (
	"context"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/ckptstore/ckptstore"
)

// upgradeArgs are upgradeScript's parameters.
type upgradeArgs struct {
	Old, List, Thread, Transcript, Threads key
	ThreadID                               string
	CP                                     string
	Moves                                  []any // id, list member, …
}

// upgradeScript moves one batch of a thread from its old members set to
// its list index: each checkpoint of the thread gets its list member, in
// its l field and in the index, and leaves the old set. When the old set is
// empty it is deleted and the thread index updated. Repeating a batch
// moves nothing more.
var upgradeScript = newScript[upgradeArgs]("upgrade", true, `
for i = A.moves, #ARGV, 2 do
  local id, m = ARGV[i], ARGV[i + 1]
  local ck = A.cp .. id
  if redis.call('HGET', ck, 't') == A.threadid then
    redis.call('HSET', ck, 'l', m)
    redis.call('ZADD', K.list, 0, m)
  end
  redis.call('ZREM', K.old, id)
end
local left = redis.call('ZCARD', K.old)
if left == 0 then
  redis.call('DEL', K.old)
  sync_thread(K.threads, K.thread, K.list, K.transcript, A.threadid)
end
return {'ok', left}
`)

// Upgrade moves every thread of the first layout to the present one,
// Options.BatchSize checkpoints per script, and enters every thread with a
// head into the thread index; it returns how many checkpoints it moved. It
// is idempotent and resumable: after an error, run it again. On a keyspace
// of the present layout it moves nothing.
func (s *Driver) Upgrade(ctx context.Context) (int, error) {
	node, err := s.node(ctx)
	if err != nil {
		return 0, err
	}
	moved := 0
	err = s.scanKind(ctx, node, "m:", func(thread string) error {
		n, err := s.upgradeThread(ctx, node, thread)
		moved += n
		return err
	})
	if err != nil {
		return moved, fmt.Errorf("redisstore: upgrade: %w", err)
	}
	// Threads with a head but no checkpoints left (pruned or deleted down
	// to a missing head) had no members set.
	err = s.scanKind(ctx, node, "t:", func(thread string) error {
		has, err := node.HExists(ctx, string(s.keys.thread(thread)), "h").Result()
		if err != nil || !has {
			return err
		}
		return node.ZAdd(ctx, s.keys.threads, redis.Z{Member: thread}).Err()
	})
	if err != nil {
		return moved, fmt.Errorf("redisstore: upgrade: %w", err)
	}
	return moved, nil
}

// scanKind calls f with the id of every key "{p}:<kind><id>".
func (s *Driver) scanKind(ctx context.Context, node redis.Cmdable, kind string, f func(id string) error) error {
	prefix := s.keys.base + kind
	pattern := globEscape(prefix) + "*"
	var cursor uint64
	for {
		keys, next, err := node.Scan(ctx, cursor, pattern, 1000).Result()
		if err != nil {
			return err
		}
		for _, k := range keys {
			if err := f(strings.TrimPrefix(k, prefix)); err != nil {
				return err
			}
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
}

// globEscape escapes the glob syntax of SCAN MATCH in s.
func globEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, "*", `\*`, "?", `\?`, "[", `\[`, "]", `\]`).Replace(s)
}

// upgradeThread moves one thread, batch by batch. The list member comes
// from the createdAt bits in each checkpoint's header, not from the old
// score.
func (s *Driver) upgradeThread(ctx context.Context, node redis.Cmdable, thread string) (int, error) {
	old := s.keys.base + "m:" + thread
	moved := 0
	for {
		ids, err := node.ZRange(ctx, old, 0, int64(s.opts.BatchSize)-1).Result()
		if err != nil {
			return moved, err
		}
		a := upgradeArgs{Old: key(old), List: s.keys.list(thread), Thread: s.keys.thread(thread),
			Transcript: s.keys.transcript(thread), Threads: s.keys.threadsKey(), ThreadID: thread, CP: s.keys.cpPrefix()}
		for _, id := range ids {
			h, err := node.HGet(ctx, string(s.keys.checkpoint(id)), "h").Result()
			if err == redis.Nil {
				a.Moves = append(a.Moves, id, "") // a stale member: only removed
				continue
			}
			if err != nil {
				return moved, err
			}
			cp := &ckptstore.Checkpoint{}
			if err := decodeHeader(cp, h); err != nil {
				return moved, fmt.Errorf("checkpoint %q: %w", id, err)
			}
			a.Moves = append(a.Moves, id, orderMember(cp.CreatedAt, id))
			moved++
		}
		res, err := run(ctx, s.r, upgradeScript, a, true)
		if err != nil {
			return moved, err
		}
		if left, _ := intReply(res[1]); left == 0 || len(ids) == 0 {
			return moved, nil
		}
	}
}
