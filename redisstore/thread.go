package redisstore

// Transcripts, DeleteThread, ListPage, Threads and Import. Their pure
// checks are the portable store's; their state checks run in their
// scripts, in the order of docs/contract.md.

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
)

// LoadThread implements driver.Store: the transcript as saved,
// byte for byte, or "[]" when none was.
func (s *Driver) LoadThread(ctx context.Context, threadID string) (json.RawMessage, error) {
	b, err := s.c.Get(ctx, string(s.keys.transcript(threadID))).Bytes()
	if err == redis.Nil {
		return driver.EmptyTranscript(), nil
	}
	if err != nil {
		return nil, fmt.Errorf("redisstore: load thread %q: %w", threadID, err)
	}
	return json.RawMessage(b), nil
}

// SaveThread implements driver.Store. It needs no lease; the
// thread enters the thread index in the same script.
func (s *Driver) SaveThread(ctx context.Context, threadID string, messages json.RawMessage) error {
	_, err := run(ctx, s.r, saveThreadScript, saveThreadArgs{Transcript: s.keys.transcript(threadID),
		Threads: s.keys.threadsKey(), Op: s.keys.op(opSaveThread, rand.Text()), ThreadID: threadID,
		Messages: messages, TTL: s.opTTL}, true)
	if err != nil {
		return fmt.Errorf("redisstore: save thread %q: %w", threadID, err)
	}
	return nil
}

// DeleteThread implements driver.Store: Options.BatchSize
// checkpoints per script, oldest first in List order, each script checking
// the lease; the last one removes the head and the transcript too. A batch
// is atomic and the call is not: after a failure, the thread has lost its
// oldest checkpoints and can be deleted by calling again.
func (s *Driver) DeleteThread(ctx context.Context, threadID string, w ckptstore.Writer) (int, error) {
	a := deleteThreadArgs{Thread: s.keys.thread(threadID), List: s.keys.list(threadID),
		Transcript: s.keys.transcript(threadID), Threads: s.keys.threadsKey(), TTL: s.opTTL,
		Token: w.OwnerToken, Fence: itoa(w.Fence), ThreadID: threadID, CP: s.keys.cpPrefix(), Batch: s.opts.BatchSize}
	a.Refs, a.RefKeys = s.keys.refsKey()
	total := 0
	for {
		// Each batch has its own op token: a resent batch reports its own
		// count, and a repeated call deletes (and counts) only what is left.
		a.Op, a.Now = s.keys.op(opDeleteThread, rand.Text()), s.now()
		res, err := run(ctx, s.r, deleteThreadScript, a, true)
		if err != nil {
			return total, fmt.Errorf("redisstore: delete thread %q (%d checkpoints deleted so far): %w", threadID, total, err)
		}
		if !succeeded(res) {
			return total, scriptCall{thread: threadID, writer: w}.failure(res)
		}
		if len(res) != 3 {
			return total, fmt.Errorf("redisstore: delete thread %q: unexpected reply %q", threadID, res)
		}
		n, err := intReply(res[1])
		if err != nil {
			return total, fmt.Errorf("redisstore: delete thread %q: %w", threadID, err)
		}
		total += int(n)
		if done, _ := res[2].(string); done == "1" {
			return total, nil
		}
		if err := ctx.Err(); err != nil {
			return total, err
		}
	}
}

// ListPage implements driver.Store: one script, one ZRANGEBYLEX of the
// thread's list index (Limit+1 members, to learn whether more follow) and
// the checkpoints it names. The cursor's position (createdAt, id) is the
// exclusive lex bound "(" + orderMember(createdAt, id), so a page starts
// exactly after it whether or not that checkpoint is still stored, and
// ties on createdAt continue by id bytes.
func (s *Driver) ListPage(ctx context.Context, threadID string, p driver.Page) ([]*ckptstore.Checkpoint, string, error) {
	from := "-"
	if p.Reverse {
		from = "+"
	}
	if p.After != nil {
		from = "(" + orderMember(p.After.CreatedAt, p.After.ID)
	}
	page, more, err := s.readPage(ctx, threadID, from, p.Limit, p.Reverse)
	if err != nil {
		return nil, "", fmt.Errorf("redisstore: list page of %q: %w", threadID, err)
	}
	return page, p.Next(page, more), nil
}

// Threads implements driver.Store: one ZRANGEBYLEX of the thread
// index, which the write scripts keep exact (a thread is in it while it
// has a head, a checkpoint or a transcript).
func (s *Driver) Threads(ctx context.Context, p driver.ThreadPage) ([]string, string, error) {
	from := "-"
	if p.After != "" {
		from = "(" + p.After
	}
	ids, err := s.c.ZRangeByLex(ctx, s.keys.threads, &redis.ZRangeBy{Min: from, Max: "+", Count: int64(p.Limit) + 1}).Result()
	if err != nil {
		return nil, "", fmt.Errorf("redisstore: threads: %w", err)
	}
	more := len(ids) > p.Limit
	if more {
		ids = ids[:p.Limit]
	}
	return ids, p.Next(ids, more), nil
}

// Import implements driver.Store: the batch in one script. A
// checkpoint stored in the thread with the same bytes is skipped; one whose
// bytes differ is compared here by content (driver.EqualCheckpoints: a
// nil and an empty slice encode apart but are equal) and the batch sent
// again with the stored bytes of those found equal, which the script
// checks are still in place.
func (s *Driver) Import(ctx context.Context, b ckptstore.ImportBatch) (int, error) {
	a := importArgs{Thread: s.keys.thread(b.ThreadID), List: s.keys.list(b.ThreadID),
		Transcript: s.keys.transcript(b.ThreadID), Threads: s.keys.threadsKey(), Op: s.keys.op(opImport, rand.Text()),
		TTL: s.opTTL, Token: b.Writer.OwnerToken, Fence: itoa(b.Writer.Fence), ThreadID: b.ThreadID,
		CP: s.keys.cpPrefix(), SetHead: b.SetHead, Head: b.Head,
		HasTranscript: b.Transcript != nil, Messages: b.Transcript}
	a.Refs, a.RefKeys = s.keys.refsKey()
	a.CPs = make([]any, 0, importFields*len(b.Checkpoints))
	for _, cp := range b.Checkpoints {
		body, err := encodeBody(cp)
		if err != nil {
			return 0, err
		}
		a.CPs = append(a.CPs, cp.ID, cp.ParentCheckpointID, encodeHeader(cp), body,
			strings.Join(cp.BlobKeys(), "\n"), []byte(cp.Conversation), orderMember(cp.CreatedAt, cp.ID), "", "")
	}
	// Two rounds suffice unless a stored copy is deleted and stored anew,
	// with other bytes, between them.
	for range 3 {
		a.Now = s.now()
		res, err := run(ctx, s.r, importScript, a, true)
		if err != nil {
			return 0, fmt.Errorf("redisstore: import into %q: %w", b.ThreadID, err)
		}
		if succeeded(res) && len(res) == 2 {
			n, err := intReply(res[1])
			if err != nil {
				return 0, fmt.Errorf("redisstore: import into %q: %w", b.ThreadID, err)
			}
			return int(n), nil
		}
		if len(res) == 0 || res[0] != "COMPARE" {
			return 0, scriptCall{thread: b.ThreadID, writer: b.Writer, importHead: true, head: b.Head}.failure(res)
		}
		if err := s.compareImport(b, a.CPs, res[1:]); err != nil {
			return 0, err
		}
	}
	return 0, fmt.Errorf("redisstore: import into %q: stored checkpoints kept changing", b.ThreadID)
}

// compareImport compares the stored checkpoints a COMPARE reply holds
// (index, parent, header, body, conversation each) with the batch's, and
// records the stored body and conversation of each equal one in cps, for
// the script to accept. One that differs fails with ErrDuplicateID.
func (s *Driver) compareImport(b ckptstore.ImportBatch, cps []any, res []any) error {
	for i := 0; i+4 < len(res); i += 5 {
		n, err := intReply(res[i])
		if err != nil || n < 0 || int(n) >= len(b.Checkpoints) {
			return fmt.Errorf("redisstore: import into %q: unexpected reply %v", b.ThreadID, res[i])
		}
		want := b.Checkpoints[n]
		got, err := decodeCheckpoint(want.ID, b.ThreadID, res[i+1], res[i+2], res[i+3], res[i+4])
		if err != nil {
			return fmt.Errorf("checkpoint %q: %w", want.ID, err)
		}
		if !driver.EqualCheckpoints(got, want) {
			return driver.DuplicateContentError(want.ID)
		}
		cps[int(n)*importFields+7] = res[i+3]
		cps[int(n)*importFields+8] = res[i+4]
	}
	return nil
}
