package redisstore

// The Store's methods. Each one runs the pure checks of package ckptstore
// in memstore's order, then one round trip: a read (HMGET, HGET or a
// read-only script) or one write script (see scripts.go), whose reply is
// either "ok" or the name of the contract error, mapped by scriptError.
// Nothing is cached in the process: every decision is made on the server,
// inside a script, so any number of Stores may share a prefix.

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ckptstore/ckptstore"
)

// ErrNotReplicated reports a write that happened on the primary but was not
// acknowledged by Options.MinReplicas replicas within ReplicaTimeout. It is
// not a contract error: Code returns "" for it.
var ErrNotReplicated = errors.New("redisstore: write not acknowledged by enough replicas")

// Store is the Redis ckptstore.Store, Pruner and Forker. It is safe for
// concurrent use; it keeps no state of its own besides its options, so any
// number of Store values (in any number of processes) may share a prefix.
type Store struct {
	c    redis.UniversalClient
	opts Options
	keys keys

	leaseMs int64 // lease duration, whole ms
	opTTL   string
	waitMs  int64
}

var (
	_ ckptstore.Store       = (*Store)(nil)
	_ ckptstore.Pruner      = (*Store)(nil)
	_ ckptstore.Forker      = (*Store)(nil)
	_ ckptstore.LeaseKeeper = (*Store)(nil)
)

// New returns a store over client. It does no I/O; scripts are loaded on
// first use. An error wraps ckptstore.ErrInvalidOptions.
func New(client redis.UniversalClient, opts Options) (*Store, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: nil client", ckptstore.ErrInvalidOptions)
	}
	o, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	if o.MinReplicas > 0 {
		// WAIT counts the writes of its own connection: the script and the
		// WAIT must share one, which only these clients can promise.
		switch client.(type) {
		case *redis.Client, *redis.ClusterClient:
		default:
			return nil, fmt.Errorf("%w: MinReplicas needs a *redis.Client (single server or Sentinel) or a *redis.ClusterClient, not %T", ckptstore.ErrInvalidOptions, client)
		}
	}
	return &Store{
		c:       client,
		opts:    o,
		keys:    newKeys(o.Prefix),
		leaseMs: ceilMillis(o.LeaseDuration),
		opTTL:   strconv.FormatInt(ceilMillis(o.OpTTL), 10),
		waitMs:  ceilMillis(o.ReplicaTimeout),
	}, nil
}

// keys builds the store's key names. Every key starts with the hash tag
// "{prefix}:" and a fixed kind ("c:", "t:", "m:", "o:", or an exact name),
// and ids come last, so no two (kind, id) pairs share a key whatever bytes
// the ids hold.
type keys struct {
	base    string
	cp      string // + checkpoint id → hash: t, p, h, b, k
	refs    string // hash: blob key → count > 0
	refKeys string // sorted set, all scores 0: blob keys with a count > 0
}

func newKeys(prefix string) keys {
	b := keyBase(prefix)
	return keys{base: b, cp: b + "c:", refs: b + "refs", refKeys: b + "refkeys"}
}

func (k keys) checkpoint(id string) string { return k.cp + id }
func (k keys) thread(id string) string     { return k.base + "t:" + id } // hash: h, f, o, x
func (k keys) members(id string) string    { return k.base + "m:" + id } // sorted set: id scored by createdAt
func (k keys) op(token string) string      { return k.base + "o:" + token }

// now returns the lease clock in ms.
func (s *Store) now() int64 { return s.opts.Now().UnixMilli() }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// score formats f as a sorted-set score: the shortest decimal that parses
// back to exactly f, so the order of scores is the order of createdAt.
func score(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// write runs a write script. With MinReplicas set, the script and a WAIT
// go down one connection in one pipeline, since WAIT counts the writes of
// its own connection.
func (s *Store) write(ctx context.Context, sc *redis.Script, keys []string, args ...any) ([]any, error) {
	if s.opts.MinReplicas == 0 {
		return sc.Run(ctx, s.c, keys, args...).Slice()
	}
	node := redis.Cmdable(s.c)
	if cc, ok := s.c.(*redis.ClusterClient); ok {
		m, err := cc.MasterForKey(ctx, keys[0])
		if err != nil {
			return nil, err
		}
		node = m
	}
	for loaded := false; ; loaded = true {
		var ev *redis.Cmd
		var wait *redis.Cmd
		_, err := node.Pipelined(ctx, func(p redis.Pipeliner) error {
			ev = p.EvalSha(ctx, sc.Hash(), keys, args...)
			wait = p.Do(ctx, "WAIT", s.opts.MinReplicas, s.waitMs)
			return nil
		})
		if err != nil && redis.HasErrorPrefix(ev.Err(), "NOSCRIPT") && !loaded {
			if err := sc.Load(ctx, node).Err(); err != nil {
				return nil, err
			}
			continue
		}
		res, err := ev.Slice()
		if err != nil || !succeeded(res) {
			return res, err // a failed check wrote nothing: nothing to wait for
		}
		n, err := wait.Int64()
		if err != nil {
			return nil, fmt.Errorf("%w: WAIT: %w", ErrNotReplicated, err)
		}
		if n < int64(s.opts.MinReplicas) {
			return nil, fmt.Errorf("%w: %d of %d replicas within %v", ErrNotReplicated, n, s.opts.MinReplicas, s.opts.ReplicaTimeout)
		}
		return res, nil
	}
}

// scriptError maps a script's error reply to the contract error.
func scriptError(res []any, format string, args ...any) error {
	if len(res) == 0 {
		return fmt.Errorf("redisstore: empty script reply")
	}
	name, _ := res[0].(string)
	// Scripts reply with the wire code less its SANDBOX_SNAPSHOT_ prefix.
	sentinel := ckptstore.ErrorFor("SANDBOX_SNAPSHOT_" + name)
	if sentinel == nil {
		return fmt.Errorf("redisstore: unexpected script reply %q", res)
	}
	detail := ""
	if len(res) > 1 {
		if d, ok := res[1].(string); ok && d != "" {
			detail = " (" + d + ")"
		}
	}
	return fmt.Errorf("%w: "+format+"%s", append(append([]any{sentinel}, args...), detail)...)
}

// succeeded reports whether a script replied "ok".
func succeeded(res []any) bool {
	return len(res) > 0 && res[0] == "ok"
}

// Get implements ckptstore.Store.
func (s *Store) Get(ctx context.Context, id string) (*ckptstore.Checkpoint, error) {
	if err := ckptstore.ValidateID("checkpoint id", id); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	v, err := s.c.HMGet(ctx, s.keys.checkpoint(id), "t", "p", "h", "b", "v").Result()
	if err != nil {
		return nil, fmt.Errorf("redisstore: get %q: %w", id, err)
	}
	if v[0] == nil {
		return nil, nil
	}
	cp, err := decodeCheckpoint(id, v[0], v[1], v[2], v[3], v[4])
	if err != nil {
		return nil, fmt.Errorf("checkpoint %q: %w", id, err)
	}
	return cp, nil
}

// decodeCheckpoint builds a checkpoint from its stored fields.
func decodeCheckpoint(id string, thread, parent, header, body, conv any) (*ckptstore.Checkpoint, error) {
	t, ok1 := thread.(string)
	p, ok2 := parent.(string)
	h, ok3 := header.(string)
	b, ok4 := body.(string)
	v, ok5 := conv.(string)
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 {
		return nil, fmt.Errorf("%w: missing fields", ErrCorrupt)
	}
	cp := &ckptstore.Checkpoint{ID: id, ThreadID: t, ParentCheckpointID: p}
	if err := decodeHeader(cp, h); err != nil {
		return nil, err
	}
	if err := decodeBody(cp, b, v); err != nil {
		return nil, err
	}
	return cp, nil
}

// List implements ckptstore.Store. The order comes from the thread's
// sorted set (score createdAt, ties by id bytes), read with the
// checkpoints in one script, so the list is one consistent snapshot.
func (s *Store) List(ctx context.Context, threadID string) ([]*ckptstore.Checkpoint, error) {
	if err := ckptstore.ValidateID("thread id", threadID); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res, err := listScript.Run(ctx, s.c, []string{s.keys.members(threadID)}, s.keys.cp).Slice()
	if err != nil {
		return nil, fmt.Errorf("redisstore: list %q: %w", threadID, err)
	}
	out := make([]*ckptstore.Checkpoint, 0, len(res)/5)
	for i := 0; i+4 < len(res); i += 5 {
		id, _ := res[i].(string)
		cp, err := decodeCheckpoint(id, threadID, res[i+1], res[i+2], res[i+3], res[i+4])
		if err != nil {
			return nil, fmt.Errorf("checkpoint %q: %w", id, err)
		}
		out = append(out, cp)
	}
	return out, nil
}

// Head implements ckptstore.Store.
func (s *Store) Head(ctx context.Context, threadID string) (string, error) {
	if err := ckptstore.ValidateID("thread id", threadID); err != nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	h, err := s.c.HGet(ctx, s.keys.thread(threadID), "h").Result()
	if err == redis.Nil {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("redisstore: head %q: %w", threadID, err)
	}
	return h, nil
}

// writerThreadLost is the part of the writer check that needs no state.
func writerThreadLost(threadID string, w ckptstore.Writer) error {
	if w.ThreadID != threadID {
		return fmt.Errorf("%w: writer of thread %q cannot write thread %q", ckptstore.ErrWriterLost, w.ThreadID, threadID)
	}
	return nil
}

// Append implements ckptstore.Store. Steps 1–2 and the writer's thread run
// here; the rest, and the write, in appendScript.
func (s *Store) Append(ctx context.Context, cp *ckptstore.Checkpoint, expectedHeadID string, w ckptstore.Writer) error {
	if err := ckptstore.ValidateAppend(cp, expectedHeadID, w); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := writerThreadLost(cp.ThreadID, w); err != nil {
		return err
	}
	return s.appendValidated(ctx, cp, expectedHeadID, w)
}

// appendValidated is Append after its pure checks.
func (s *Store) appendValidated(ctx context.Context, cp *ckptstore.Checkpoint, expectedHeadID string, w ckptstore.Writer) error {
	body, err := encodeBody(cp)
	if err != nil {
		return err
	}
	op := rand.Text()
	res, err := s.write(ctx, appendScript,
		[]string{s.keys.thread(cp.ThreadID), s.keys.members(cp.ThreadID), s.keys.checkpoint(cp.ID),
			s.keys.refs, s.keys.refKeys, s.keys.op(op)},
		s.opTTL, itoa(s.now()), w.OwnerToken, itoa(w.Fence), cp.ID, cp.ThreadID, expectedHeadID,
		cp.ParentCheckpointID, score(cp.CreatedAt), encodeHeader(cp), body, strings.Join(cp.BlobKeys(), "\n"),
		[]byte(cp.Conversation))
	if err != nil {
		return fmt.Errorf("redisstore: append %q: %w", cp.ID, err)
	}
	if !succeeded(res) {
		return scriptError(res, "append %q to thread %q (expected head %q)", cp.ID, cp.ThreadID, expectedHeadID)
	}
	return nil
}

// DeleteHead implements ckptstore.Store.
func (s *Store) DeleteHead(ctx context.Context, threadID, checkpointID string, w ckptstore.Writer) error {
	if err := ckptstore.ValidateDeleteHead(threadID, checkpointID, w); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := writerThreadLost(threadID, w); err != nil {
		return err
	}
	op := rand.Text()
	res, err := s.write(ctx, deleteHeadScript,
		[]string{s.keys.thread(threadID), s.keys.members(threadID), s.keys.checkpoint(checkpointID),
			s.keys.refs, s.keys.refKeys, s.keys.op(op)},
		s.opTTL, itoa(s.now()), w.OwnerToken, itoa(w.Fence), checkpointID, threadID)
	if err != nil {
		return fmt.Errorf("redisstore: delete head %q: %w", checkpointID, err)
	}
	if !succeeded(res) {
		return scriptError(res, "delete %q, head of thread %q", checkpointID, threadID)
	}
	return nil
}

// DeleteCheckpoints implements ckptstore.Pruner.
func (s *Store) DeleteCheckpoints(ctx context.Context, threadID string, keep int, w ckptstore.Writer) ([]string, error) {
	if err := ckptstore.ValidatePrune(threadID, keep, w); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := writerThreadLost(threadID, w); err != nil {
		return nil, err
	}
	op := rand.Text()
	res, err := s.write(ctx, pruneScript,
		[]string{s.keys.thread(threadID), s.keys.members(threadID), s.keys.refs, s.keys.refKeys, s.keys.op(op)},
		s.opTTL, itoa(s.now()), w.OwnerToken, itoa(w.Fence), threadID, strconv.Itoa(keep), s.keys.cp)
	if err != nil {
		return nil, fmt.Errorf("redisstore: delete checkpoints of %q: %w", threadID, err)
	}
	if !succeeded(res) {
		return nil, scriptError(res, "delete checkpoints of thread %q", threadID)
	}
	ids := make([]string, 0, len(res)-1)
	for _, v := range res[1:] {
		id, isStr := v.(string)
		if !isStr {
			return nil, fmt.Errorf("redisstore: delete checkpoints of %q: unexpected reply %v", threadID, v)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// ForkFromCheckpoint implements ckptstore.Forker.
func (s *Store) ForkFromCheckpoint(ctx context.Context, in ckptstore.ForkInput) (*ckptstore.Checkpoint, error) {
	if err := ckptstore.ValidateFork(in); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// The header depends on in alone: ForkRoot of an empty source.
	root := ckptstore.ForkRoot(&ckptstore.Checkpoint{}, in)
	writerMatches := "0"
	if in.Writer.ThreadID == in.DestinationThreadID {
		writerMatches = "1"
	}
	op := rand.Text()
	dst := in.DestinationThreadID
	res, err := s.write(ctx, forkScript,
		[]string{s.keys.checkpoint(in.SourceCheckpointID), s.keys.thread(dst), s.keys.members(dst),
			s.keys.checkpoint(in.DestinationCheckpointID), s.keys.refs, s.keys.refKeys, s.keys.op(op)},
		s.opTTL, itoa(s.now()), in.Writer.OwnerToken, itoa(in.Writer.Fence), in.SourceThreadID, dst,
		in.DestinationCheckpointID, writerMatches, score(in.CreatedAt), encodeHeader(root))
	if err != nil {
		return nil, fmt.Errorf("redisstore: fork %q: %w", in.SourceCheckpointID, err)
	}
	if !succeeded(res) {
		return nil, scriptError(res, "fork %q of thread %q into %q of thread %q",
			in.SourceCheckpointID, in.SourceThreadID, in.DestinationCheckpointID, dst)
	}
	body, isStr := res[1].(string)
	conv, isStr2 := res[2].(string)
	if !isStr || !isStr2 {
		// Only a resent call whose fork root was deleted in between.
		return nil, fmt.Errorf("redisstore: fork %q: done, but the new checkpoint %q was deleted before it could be read", in.SourceCheckpointID, in.DestinationCheckpointID)
	}
	if err := decodeBody(root, body, conv); err != nil {
		return nil, fmt.Errorf("checkpoint %q: %w", in.SourceCheckpointID, err)
	}
	return root, nil
}

// AcquireWriter implements ckptstore.Store.
func (s *Store) AcquireWriter(ctx context.Context, threadID string) (*ckptstore.Lease, error) {
	if err := ckptstore.ValidateID("thread id", threadID); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	token := rand.Text()
	now := s.now()
	res, err := acquireScript.Run(ctx, s.c, []string{s.keys.thread(threadID)}, token, itoa(now), itoa(now+s.leaseMs)).Slice()
	if err != nil {
		return nil, fmt.Errorf("redisstore: acquire writer of %q: %w", threadID, err)
	}
	if !succeeded(res) {
		return nil, scriptError(res, "thread %q is leased", threadID)
	}
	fence, err1 := intReply(res[1])
	exp, err2 := intReply(res[2])
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("redisstore: acquire writer of %q: %w", threadID, err)
	}
	w := ckptstore.Writer{ThreadID: threadID, OwnerToken: token, Fence: fence}
	return ckptstore.NewLease(w, time.UnixMilli(exp), s.opts.RenewAfter, s), nil
}

// intReply reads an integer that a script returned as a number or as the
// decimal string Redis stored.
func intReply(v any) (int64, error) {
	switch v := v.(type) {
	case int64:
		return v, nil
	case string:
		return strconv.ParseInt(v, 10, 64)
	}
	return 0, fmt.Errorf("%w: %v is not an integer", ErrCorrupt, v)
}

// RenewWriter implements ckptstore.LeaseKeeper.
func (s *Store) RenewWriter(ctx context.Context, w ckptstore.Writer) (time.Time, error) {
	if err := ckptstore.ValidateID("writer thread id", w.ThreadID); err != nil {
		return time.Time{}, err
	}
	if err := ctx.Err(); err != nil {
		return time.Time{}, err
	}
	now := s.now()
	exp := now + s.leaseMs
	res, err := renewScript.Run(ctx, s.c, []string{s.keys.thread(w.ThreadID)}, w.OwnerToken, itoa(w.Fence), itoa(now), itoa(exp)).Slice()
	if err != nil {
		return time.Time{}, fmt.Errorf("redisstore: renew writer of %q: %w", w.ThreadID, err)
	}
	if !succeeded(res) {
		return time.Time{}, scriptError(res, "renew the lease of thread %q", w.ThreadID)
	}
	return time.UnixMilli(exp), nil
}

// ReleaseWriter implements ckptstore.LeaseKeeper.
func (s *Store) ReleaseWriter(ctx context.Context, w ckptstore.Writer) error {
	if ckptstore.ValidateID("writer thread id", w.ThreadID) != nil {
		return nil // no such lease can exist
	}
	err := releaseScript.Run(ctx, s.c, []string{s.keys.thread(w.ThreadID)}, w.OwnerToken, itoa(w.Fence)).Err()
	if err != nil {
		return fmt.Errorf("redisstore: release writer of %q: %w", w.ThreadID, err)
	}
	return nil
}

// BlobReferences implements ckptstore.Store. It reads PageSize keys per
// round trip; each page is consistent, the whole list is not one snapshot
// (see BlobReferencesSeq).
func (s *Store) BlobReferences(ctx context.Context) ([]ckptstore.BlobRef, error) {
	out := []ckptstore.BlobRef{}
	for ref, err := range s.BlobReferencesSeq(ctx) {
		if err != nil {
			return nil, err
		}
		out = append(out, ref)
	}
	return slices.Clip(out), nil
}
