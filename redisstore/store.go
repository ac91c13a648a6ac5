package redisstore

// The Driver's methods. Each one, after the portable store's pure checks,
// is one round trip: a read (HMGET, HGET or a read-only script) or one
// write script (see scripts.go), whose reply is either "ok" or the name of
// the contract error and its fields, which scriptCall.failure words. The calls that span a whole
// thread (List, a long DeleteCheckpoints, DeleteThread) take one bounded
// script per Options.BatchSize checkpoints instead. Nothing is cached in
// the process: every decision is made on the server, inside a script, so
// any number of Stores may share a prefix.

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
)

// ErrNotReplicated reports a write that happened on the primary but was not
// acknowledged by Options.MinReplicas replicas within ReplicaTimeout. It is
// ckptstore.ErrNotReplicated (the same value, so that errors.Is matches
// either, also on an error that crossed HTTP): not a contract error.
var ErrNotReplicated = ckptstore.ErrNotReplicated

// Driver is the Redis driver.Store. It is safe for concurrent use; it
// keeps no state of its own besides its options, so any number of Driver
// values (in any number of processes) may share a prefix.
type Driver struct {
	c    redis.UniversalClient
	r    runner
	opts Options
	keys keys

	leaseMs int64 // lease duration, whole ms
	opTTL   string
	// clock is the test clock (Options.Now as given); nil means the
	// server's TIME, read inside each script that judges a lease.
	clock func() time.Time
}

var _ driver.Store = (*Driver)(nil)

// New returns the portable store over a Driver over client. It does no
// I/O; scripts are loaded on first use. An error wraps
// driver.ErrInvalidOptions.
func New(client redis.UniversalClient, opts Options) (*ckptstore.Store, error) {
	d, err := NewDriver(client, opts)
	if err != nil {
		return nil, err
	}
	return ckptstore.New(d), nil
}

// NewDriver returns the driver that New wraps, for Check and Upgrade. It
// fails as New does.
func NewDriver(client redis.UniversalClient, opts Options) (*Driver, error) {
	o, r, err := resolveClient(client, opts)
	if err != nil {
		return nil, err
	}
	return &Driver{
		c:       client,
		r:       r,
		opts:    o,
		keys:    newKeys(o.Prefix),
		leaseMs: ceilMillis(o.LeaseDuration),
		opTTL:   strconv.FormatInt(ceilMillis(o.OpTTL), 10),
		clock:   opts.Now,
	}, nil
}

// resolveClient checks client and opts for New and NewInstances, and
// returns opts with their defaults filled in and the runner of the
// client's scripts; an error wraps driver.ErrInvalidOptions.
func resolveClient(client redis.UniversalClient, opts Options) (Options, runner, error) {
	if client == nil {
		return opts, runner{}, fmt.Errorf("%w: nil client", driver.ErrInvalidOptions)
	}
	o, err := opts.resolve()
	if err != nil {
		return opts, runner{}, err
	}
	if o.MinReplicas > 0 {
		// WAIT counts the writes of its own connection: the script and the
		// WAIT must share one, which only these clients can promise.
		switch client.(type) {
		case *redis.Client, *redis.ClusterClient:
		default:
			return opts, runner{}, fmt.Errorf("%w: MinReplicas needs a *redis.Client (single server or Sentinel) or a *redis.ClusterClient, not %T", driver.ErrInvalidOptions, client)
		}
	}
	return o, runner{c: client, minReplicas: o.MinReplicas, waitMs: ceilMillis(o.ReplicaTimeout), replicaTimeout: o.ReplicaTimeout}, nil
}

// keys builds the store's key names. Every key starts with the hash tag
// "{prefix}:" and a fixed kind ("c:", "t:", "l:", "v:", "o:", or an exact
// name), and ids come last, so no two (kind, id) pairs share a key whatever
// bytes the ids hold.
type keys struct {
	base    string
	cp      string // + checkpoint id → hash: t, p, h, b, v, k, l
	refs    string // hash: blob key → count > 0
	refKeys string // sorted set, all scores 0: blob keys with a count > 0
	threads string // sorted set, all scores 0: ids of threads with a head, a checkpoint or a transcript
}

func newKeys(prefix string) keys {
	b := keyBase(prefix)
	return keys{base: b, cp: b + "c:", refs: b + "refs", refKeys: b + "refkeys", threads: b + "threads"}
}

func (k keys) checkpoint(id string) key { return key(k.cp + id) }
func (k keys) thread(id string) key     { return key(k.base + "t:" + id) } // hash: h, f, o, x
func (k keys) list(id string) key       { return key(k.base + "l:" + id) } // sorted set: orderMember of each checkpoint
func (k keys) transcript(id string) key { return key(k.base + "v:" + id) } // string: the transcript
func (k keys) op(kind byte, token string) key {
	return key(k.base + "o:" + string(kind) + ":" + token)
}
func (k keys) refsKey() (key, key) { return key(k.refs), key(k.refKeys) }
func (k keys) threadsKey() key     { return key(k.threads) }
func (k keys) cpPrefix() string    { return k.cp }

// orderMember is a checkpoint's member in its thread's list index: the
// 8-byte position of createdAt, then the id. Byte order of members is List
// order: the position is the float's bits made to sort as unsigned big-
// endian integers (sign bit flipped for positives, every bit for
// negatives), with -0 taken as 0, since the two are equal in List order;
// equal positions then sort by the bytes of the id, shorter first. So a
// thread is listed with ZRANGEBYLEX, and a cursor's position (createdAt,
// id) is exactly one lex bound: no float score is ever compared.
func orderMember(createdAt float64, id string) string {
	b := make([]byte, 8, 8+len(id))
	binary.BigEndian.PutUint64(b, orderBits(createdAt))
	return string(append(b, id...))
}

func orderBits(f float64) uint64 {
	if f == 0 {
		f = 0 // -0 sorts as 0
	}
	u := math.Float64bits(f)
	if u>>63 == 1 {
		return ^u
	}
	return u | 1<<63
}

// The kinds of op keys, "{prefix}:o:<kind>:<token>", of every driver of
// the engine: a token is recognised only by the kind of write that
// recorded it. Checkpoint and instance writes have lower-case kinds,
// persistence writes (Persistence) upper-case ones.
const (
	opAppend       = 'a'
	opDeleteHead   = 'd'
	opPrune        = 'p'
	opFork         = 'f'
	opAcquire      = 'w'
	opRenew        = 'r'
	opSaveThread   = 's'
	opInstance     = 'n' // InstanceStore's Upsert and Delete
	opDeleteThread = 'x'
	opImport       = 'i'

	opRunCreate          = 'R'
	opRunUpdate          = 'U'
	opGenRunCreate       = 'N'
	opGenRunUpdate       = 'G'
	opInterruptFinish    = 'I' // resolve and cancel
	opInterruptCommit    = 'C' // its token is the caller's
	opMetadata           = 'M'
	opArtifactSave       = 'S'
	opRunArtifactsDelete = 'X'
	opBlobPut            = 'B'
	opBlobDelete         = 'D'
	opLockAcquire        = 'A'
	opLockRenew          = 'W'
	opLockRelease        = 'L'
)

// now is the scripts' clock argument: the test clock's reading in ms, or
// "" for the server's TIME, read inside the script (now_ms).
func (s *Driver) now() string {
	if s.clock == nil {
		return ""
	}
	return itoa(s.clock().UnixMilli())
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// opToken returns the op token of a call: the caller's, checked by the
// portable store, or a fresh random one when there is none ("").
func opToken(token string) string {
	if token != "" {
		return token
	}
	return rand.Text()
}

// scriptCall is what Go knows of a write script's call that the message
// of its failure needs besides the reply's own fields (see scripts.go):
// each message is written by driver's formatters, from the same fields
// memstore and fdbstore give them.
type scriptCall struct {
	// thread is the thread written, whose lease the script checks.
	thread string
	// writer is the call's writer.
	writer ckptstore.Writer
	// id is the checkpoint of the call: Append's, DeleteHead's, or the
	// fork's source.
	id string
	// expected and parent are Append's expected head and its checkpoint's
	// parent.
	expected, parent string
	// importHead is true for an Import, whose STALE_HEAD is against head,
	// the head the batch sets.
	importHead bool
	head       string
	// sourceThread and destID are a fork's source thread and destination
	// checkpoint id; writerThreadErr its precomputed writer-thread error.
	sourceThread, destID string
	writerThreadErr      error
}

// failure is the contract error that a script's failure reply res names:
// the wire code less its SANDBOX_SNAPSHOT_ prefix, then the error's fields.
func (c scriptCall) failure(res []any) error {
	if len(res) == 0 {
		return fmt.Errorf("redisstore: empty script reply")
	}
	code, _ := res[0].(string)
	f := func(i int) string {
		if i >= len(res) {
			return ""
		}
		switch v := res[i].(type) {
		case string:
			return v
		case int64:
			return itoa(v)
		}
		return ""
	}
	ms := func(i int) (time.Time, error) {
		n, err := strconv.ParseInt(f(i), 10, 64)
		if err != nil {
			return time.Time{}, fmt.Errorf("%w: script reply %v has no time", ErrCorrupt, res)
		}
		return time.UnixMilli(n), nil
	}
	switch code {
	case "WRITER_LOST":
		switch f(1) {
		case "none":
			return driver.NoLeaseError(c.thread)
		case "fence":
			fence, err := strconv.ParseInt(f(2), 10, 64)
			if err != nil {
				return fmt.Errorf("%w: thread %s has a lease without a fence", ErrCorrupt, driver.QuoteShort(c.thread))
			}
			return driver.NewerLeaseError(c.thread, fence, c.writer.Fence)
		case "expired":
			at, err := ms(2)
			if err != nil {
				return err
			}
			return driver.LeaseExpiredError(c.thread, at)
		case "thread":
			if c.writerThreadErr != nil {
				return c.writerThreadErr
			}
		}
	case "WRITER_CONFLICT":
		at, err := ms(1)
		if err != nil {
			return err
		}
		return driver.WriterConflictError(c.thread, at)
	case "STALE_HEAD":
		if c.importHead {
			return driver.ImportHeadError(c.thread, f(1), c.head)
		}
		return driver.StaleHeadError(c.thread, f(1), c.expected)
	case "PARENT_MISMATCH":
		return driver.ParentMismatchError(c.parent, c.expected)
	case "DUPLICATE_ID":
		if len(res) >= 3 {
			return driver.DuplicateInThreadError(f(1), f(2))
		}
		return driver.DuplicateIDError(c.id)
	case "NOT_HEAD":
		return driver.NotHeadError(c.id, c.thread)
	case "FORK_SOURCE_NOT_FOUND":
		return driver.ForkSourceNotFoundError(c.id)
	case "FORK_SOURCE_THREAD_MISMATCH":
		return driver.ForkSourceThreadError(c.id, f(1), c.sourceThread)
	case "FORK_DESTINATION_NOT_EMPTY":
		switch f(1) {
		case "checkpoints":
			return driver.ForkDestinationCheckpointsError(c.thread)
		case "transcript":
			return driver.ForkDestinationTranscriptError(c.thread)
		case "id":
			return driver.ForkDestinationIDError(c.destID)
		}
	}
	return fmt.Errorf("redisstore: unexpected script reply %q", res)
}

// succeeded reports whether a script replied "ok".
func succeeded(res []any) bool {
	return len(res) > 0 && res[0] == "ok"
}

// Get implements driver.Store.
func (s *Driver) Get(ctx context.Context, id string) (*ckptstore.Checkpoint, error) {
	v, err := s.c.HMGet(ctx, string(s.keys.checkpoint(id)), "t", "p", "h", "b", "v").Result()
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

// List implements driver.Store. It reads the thread in pages of
// Options.BatchSize checkpoints, one script each, so a thread of any size
// never holds the server for long. A thread of at most BatchSize
// checkpoints is read in one atomic step. A longer one is read page after
// page by position, as ListPage reads it: every checkpoint that stays in
// the thread during the whole call is returned exactly once, in List
// order; one appended or deleted while the call runs may or may not be.
// Under the contract's single writer per thread, a List that runs while no
// write of the thread commits is exact.
func (s *Driver) List(ctx context.Context, threadID string) ([]*ckptstore.Checkpoint, error) {
	var out []*ckptstore.Checkpoint
	from := "-"
	for {
		page, more, err := s.readPage(ctx, threadID, from, s.opts.BatchSize, false)
		if err != nil {
			return nil, fmt.Errorf("redisstore: list %q: %w", threadID, err)
		}
		if out == nil {
			out = make([]*ckptstore.Checkpoint, 0, len(page))
		}
		out = append(out, page...)
		if !more {
			return out, nil
		}
		last := page[len(page)-1]
		from = "(" + orderMember(last.CreatedAt, last.ID)
	}
}

// readPage reads up to limit checkpoints of a thread from the lex bound
// from, forward or in reverse, and whether more follow (it reads limit+1).
func (s *Driver) readPage(ctx context.Context, threadID, from string, limit int, reverse bool) ([]*ckptstore.Checkpoint, bool, error) {
	res, err := run(ctx, s.r, pageScript, pageArgs{List: s.keys.list(threadID), CP: s.keys.cpPrefix(),
		From: from, Limit: limit + 1, Reverse: reverse}, false)
	if err != nil {
		return nil, false, err
	}
	out := make([]*ckptstore.Checkpoint, 0, min(len(res)/5, limit))
	for i := 0; i+4 < len(res) && len(out) < limit; i += 5 {
		id, _ := res[i].(string)
		cp, err := decodeCheckpoint(id, threadID, res[i+1], res[i+2], res[i+3], res[i+4])
		if err != nil {
			return nil, false, fmt.Errorf("checkpoint %q: %w", id, err)
		}
		out = append(out, cp)
	}
	return out, len(res)/5 > limit, nil
}

// GetHead implements driver.Store.
func (s *Driver) GetHead(ctx context.Context, threadID string) (string, error) {
	h, err := s.c.HGet(ctx, string(s.keys.thread(threadID)), "h").Result()
	if err == redis.Nil {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("redisstore: head %q: %w", threadID, err)
	}
	return h, nil
}

// Append implements driver.Store: the state checks and the write in
// appendScript.
func (s *Driver) Append(ctx context.Context, cp *ckptstore.Checkpoint, expectedHeadID string, w ckptstore.Writer, token string) error {
	op := opToken(token)
	body, err := encodeBody(cp)
	if err != nil {
		return err
	}
	refs, refKeys := s.keys.refsKey()
	res, err := run(ctx, s.r, appendScript, appendArgs{
		Thread: s.keys.thread(cp.ThreadID), List: s.keys.list(cp.ThreadID), Checkpoint: s.keys.checkpoint(cp.ID),
		Refs: refs, RefKeys: refKeys, Threads: s.keys.threadsKey(), Op: s.keys.op(opAppend, op),
		TTL: s.opTTL, Now: s.now(), Token: w.OwnerToken, Fence: itoa(w.Fence),
		ID: cp.ID, ThreadID: cp.ThreadID, Expected: expectedHeadID, Parent: cp.ParentCheckpointID,
		Member: orderMember(cp.CreatedAt, cp.ID), Header: string(encodeHeader(cp)), Body: body,
		Blobs: strings.Join(cp.BlobKeys(), "\n"), Conv: []byte(cp.Conversation),
	}, true)
	if err != nil {
		return fmt.Errorf("redisstore: append %q: %w", cp.ID, err)
	}
	if !succeeded(res) {
		return scriptCall{thread: cp.ThreadID, writer: w, id: cp.ID, expected: expectedHeadID, parent: cp.ParentCheckpointID}.failure(res)
	}
	return nil
}

// DeleteHead implements driver.Store.
func (s *Driver) DeleteHead(ctx context.Context, threadID, checkpointID string, w ckptstore.Writer, token string) error {
	op := opToken(token)
	refs, refKeys := s.keys.refsKey()
	res, err := run(ctx, s.r, deleteHeadScript, deleteHeadArgs{
		Thread: s.keys.thread(threadID), List: s.keys.list(threadID), Checkpoint: s.keys.checkpoint(checkpointID),
		Refs: refs, RefKeys: refKeys, Transcript: s.keys.transcript(threadID), Threads: s.keys.threadsKey(),
		Op: s.keys.op(opDeleteHead, op), TTL: s.opTTL, Now: s.now(), Token: w.OwnerToken, Fence: itoa(w.Fence),
		ID: checkpointID, ThreadID: threadID,
	}, true)
	if err != nil {
		return fmt.Errorf("redisstore: delete head %q: %w", checkpointID, err)
	}
	if !succeeded(res) {
		return scriptCall{thread: threadID, writer: w, id: checkpointID}.failure(res)
	}
	return nil
}

// DeleteCheckpoints implements driver.Store. A chain that fits in one
// batch (at most Options.BatchSize checkpoints walked and deleted) is
// pruned in one atomic script, as before. A longer one is walked from the
// head in stretches of BatchSize checkpoints, then deleted in batches of
// BatchSize from the end farthest from the head, each batch a script that
// checks the lease; so no script holds the server for longer than one
// batch. Deleting from the far end keeps what is left a chain from the
// head: after a failure midway the thread is as after a smaller prune, and
// repeating the call finishes it. While a long prune runs, its thread must
// not be written (the lease makes that so, but for the holder itself).
func (s *Driver) DeleteCheckpoints(ctx context.Context, threadID string, keep int, w ckptstore.Writer) ([]string, error) {
	a := pruneArgs{Thread: s.keys.thread(threadID), List: s.keys.list(threadID), ThreadID: threadID,
		Token: w.OwnerToken, Fence: itoa(w.Fence), TTL: s.opTTL, Keep: keep, CP: s.keys.cpPrefix(),
		Hops: s.opts.BatchSize, Budget: s.opts.BatchSize}
	a.Refs, a.RefKeys = s.keys.refsKey()
	var chain []string
	seen := map[string]bool{}
	for {
		a.Op, a.Now = s.keys.op(opPrune, rand.Text()), s.now()
		res, err := run(ctx, s.r, pruneScript, a, true)
		if err != nil {
			return nil, fmt.Errorf("redisstore: delete checkpoints of %q: %w", threadID, err)
		}
		if succeeded(res) {
			return idReply(threadID, res[1:])
		}
		if len(res) < 2 || res[0] != "walk" {
			return nil, scriptCall{thread: threadID, writer: w}.failure(res)
		}
		walked, err := idReply(threadID, res[2:])
		if err != nil {
			return nil, err
		}
		next, _ := res[1].(string)
		end := false
		for _, id := range walked {
			if seen[id] { // a cycle through reused ids: the chain ends here
				end = true
				break
			}
			seen[id] = true
			chain = append(chain, id)
		}
		if end || next == "" || seen[next] {
			break
		}
		a.From, a.Budget = next, 0
	}
	if len(chain) <= keep {
		return []string{}, nil
	}
	doomed := chain[keep:]
	slices.Reverse(doomed) // farthest from the head first
	return s.pruneBatches(ctx, threadID, doomed, w)
}

// pruneBatches deletes doomed, in order, BatchSize ids per script.
func (s *Driver) pruneBatches(ctx context.Context, threadID string, doomed []string, w ckptstore.Writer) ([]string, error) {
	a := pruneBatchArgs{Thread: s.keys.thread(threadID), List: s.keys.list(threadID), ThreadID: threadID,
		Token: w.OwnerToken, Fence: itoa(w.Fence), TTL: s.opTTL, CP: s.keys.cpPrefix()}
	a.Refs, a.RefKeys = s.keys.refsKey()
	deleted := make([]string, 0, len(doomed))
	for batch := range slices.Chunk(doomed, s.opts.BatchSize) {
		a.Op, a.Now = s.keys.op(opPrune, rand.Text()), s.now()
		a.IDs = make([]any, len(batch))
		for i, id := range batch {
			a.IDs[i] = id
		}
		res, err := run(ctx, s.r, pruneBatchScript, a, true)
		if err != nil {
			return nil, fmt.Errorf("redisstore: delete checkpoints of %q (%d deleted so far): %w", threadID, len(deleted), err)
		}
		if !succeeded(res) {
			return nil, scriptCall{thread: threadID, writer: w}.failure(res)
		}
		ids, err := idReply(threadID, res[1:])
		if err != nil {
			return nil, err
		}
		deleted = append(deleted, ids...)
	}
	return deleted, nil
}

// idReply reads a script's list of ids.
func idReply(threadID string, res []any) ([]string, error) {
	ids := make([]string, 0, len(res))
	for _, v := range res {
		id, isStr := v.(string)
		if !isStr {
			return nil, fmt.Errorf("redisstore: delete checkpoints of %q: unexpected reply %v", threadID, v)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// ForkFromCheckpoint implements driver.Store. The destination's
// transcript is checked with its head and checkpoints, and set to the
// copied conversation, in the same script.
func (s *Driver) ForkFromCheckpoint(ctx context.Context, f driver.Fork) (*ckptstore.Checkpoint, error) {
	in, op := f.ForkInput, opToken(f.OpToken)
	// The header depends on in alone: ForkRoot of an empty source.
	root := driver.ForkRoot(&ckptstore.Checkpoint{}, in)
	dst := in.DestinationThreadID
	refs, refKeys := s.keys.refsKey()
	res, err := run(ctx, s.r, forkScript, forkArgs{
		Source: s.keys.checkpoint(in.SourceCheckpointID), Thread: s.keys.thread(dst), List: s.keys.list(dst),
		Checkpoint: s.keys.checkpoint(in.DestinationCheckpointID), Refs: refs, RefKeys: refKeys,
		Transcript: s.keys.transcript(dst), Threads: s.keys.threadsKey(), Op: s.keys.op(opFork, op),
		TTL: s.opTTL, Now: s.now(), Token: in.Writer.OwnerToken, Fence: itoa(in.Writer.Fence),
		SourceThread: in.SourceThreadID, DestThread: dst, DestID: in.DestinationCheckpointID,
		// The writer's thread is checked after the source, in the script's
		// order; the portable store computed it.
		WriterMatches: f.WriterThreadErr == nil,
		Member:        orderMember(in.CreatedAt, in.DestinationCheckpointID), Header: string(encodeHeader(root)),
	}, true)
	if err != nil {
		return nil, fmt.Errorf("redisstore: fork %q: %w", in.SourceCheckpointID, err)
	}
	if !succeeded(res) {
		return nil, scriptCall{thread: dst, writer: in.Writer, id: in.SourceCheckpointID, sourceThread: in.SourceThreadID,
			destID: in.DestinationCheckpointID, writerThreadErr: f.WriterThreadErr}.failure(res)
	}
	body, isStr := res[1].(string)
	conv, isStr2 := res[2].(string)
	if !isStr || !isStr2 {
		// Only a repeated call whose fork root was deleted in between.
		return nil, fmt.Errorf("redisstore: fork %q: done, but the new checkpoint %q was deleted before it could be read", in.SourceCheckpointID, in.DestinationCheckpointID)
	}
	if err := decodeBody(root, body, conv); err != nil {
		return nil, fmt.Errorf("checkpoint %q: %w", in.SourceCheckpointID, err)
	}
	return root, nil
}

// AcquireWriter implements driver.Store. With a caller's op token
// (ckptstore.WithOpToken) the token is the lease's owner token, and a
// repeated call reports the lease the first one took. With MinReplicas,
// it waits for the replicas like every write (the lease and its fence
// must survive a failover, or a promoted replica would hand the thread,
// and the same fence, to a second writer) and fails with
// ErrNotReplicated when they don't answer; so do Renew and Release.
//
// The lease's ExpiresAt is the server's TIME (or the test clock) plus the
// lease duration: a time on the store's clock, which may differ from the
// caller's by any skew. RenewAfter is a duration, unaffected by skew.
func (s *Driver) AcquireWriter(ctx context.Context, threadID, opTok string) (driver.Lease, error) {
	token := opToken(opTok)
	res, err := run(ctx, s.r, acquireScript, acquireArgs{Thread: s.keys.thread(threadID), Op: s.keys.op(opAcquire, token),
		Token: token, Now: s.now(), Span: itoa(s.leaseMs), TTL: s.opTTL, ThreadID: threadID}, true)
	if err != nil {
		return driver.Lease{}, fmt.Errorf("redisstore: acquire writer of %q: %w", threadID, err)
	}
	if !succeeded(res) {
		return driver.Lease{}, scriptCall{thread: threadID}.failure(res)
	}
	fence, err1 := intReply(res[1])
	exp, err2 := intReply(res[2])
	if err := errors.Join(err1, err2); err != nil {
		return driver.Lease{}, fmt.Errorf("redisstore: acquire writer of %q: %w", threadID, err)
	}
	w := ckptstore.Writer{ThreadID: threadID, OwnerToken: token, Fence: fence}
	return driver.Lease{Writer: w, ExpiresAt: time.UnixMilli(exp), RenewAfter: s.opts.RenewAfter}, nil
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

// Renew implements driver.Store. The new expiry is the server's TIME
// (or the test clock) plus the lease duration, as the script computed it.
func (s *Driver) Renew(ctx context.Context, w ckptstore.Writer) (time.Time, error) {
	res, err := run(ctx, s.r, renewScript, renewArgs{Thread: s.keys.thread(w.ThreadID), Op: s.keys.op(opRenew, rand.Text()),
		Token: w.OwnerToken, Fence: itoa(w.Fence), Now: s.now(), Span: itoa(s.leaseMs), TTL: s.opTTL}, true)
	if err != nil {
		return time.Time{}, fmt.Errorf("redisstore: renew writer of %q: %w", w.ThreadID, err)
	}
	if !succeeded(res) {
		return time.Time{}, scriptCall{thread: w.ThreadID, writer: w}.failure(res)
	}
	if len(res) < 2 {
		return time.Time{}, fmt.Errorf("%w: renew writer of %q: reply %v has no expiry", ErrCorrupt, w.ThreadID, res)
	}
	exp, err := intReply(res[1])
	if err != nil {
		return time.Time{}, fmt.Errorf("redisstore: renew writer of %q: %w", w.ThreadID, err)
	}
	return time.UnixMilli(exp), nil
}

// Release implements driver.Store.
func (s *Driver) Release(ctx context.Context, w ckptstore.Writer) error {
	_, err := run(ctx, s.r, releaseScript, releaseArgs{Thread: s.keys.thread(w.ThreadID), Token: w.OwnerToken,
		Fence: itoa(w.Fence)}, true)
	if err != nil {
		return fmt.Errorf("redisstore: release writer of %q: %w", w.ThreadID, err)
	}
	return nil
}
