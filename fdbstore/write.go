package fdbstore

// The writes. Each is one serializable transaction (DeleteCheckpoints and
// DeleteThread: one per batch; DeleteThread, Import and SaveThread are in
// deletethread.go, import.go and transcripts.go) shaped the same way:
//
//  1. the portable store (ckptstore.Store) has checked the arguments
//     without the database, so every store fails the same input the same
//     way; the driver checks only fdbstore's own id length limit;
//  2. start every read as a future — the write round of markers.go first:
//     the op marker, the thread's lease and head — and only then wait, so
//     one read round serves all the checks;
//  3. when the marker exists, an earlier attempt of this call (or, with the
//     caller's op token, an earlier call) committed: return its result;
//  4. run the contract's checks in the contract's order on what was read;
//  5. write, including the marker.
//
// Closure state that a later attempt may return (the lease, the fork root,
// the deleted ids) is set only by the attempt that writes: after a commit
// every later attempt finds the marker, so the last attempt that wrote is
// the one that committed.

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/fdbstore/internal/tuple"
	"github.com/ckptstore/ckptstore/fdbstore/kv"
)

// checkWriter returns ErrWriterLost unless w is threadID's live lease at
// now, as read from the lease key (raw may be nil). That w is a writer of
// threadID at all the portable store checks before every write (Renew
// reads w.ThreadID's own lease).
func (s *Driver) checkWriter(threadID string, w ckptstore.Writer, raw []byte, now time.Time) error {
	if raw == nil {
		return driver.NoLeaseError(threadID)
	}
	l, err := decodeLease(raw)
	if err != nil {
		return err
	}
	if l.token == "" {
		// Released (the fence stays behind): worded as memstore, which keeps
		// nothing of a released lease, words it, so every engine agrees.
		return driver.NoLeaseError(threadID)
	}
	if l.token != w.OwnerToken || l.fence != w.Fence {
		return driver.NewerLeaseError(threadID, l.fence, w.Fence)
	}
	if !now.Before(l.expires) {
		return driver.LeaseExpiredError(threadID, l.expires)
	}
	return nil
}

// stored is a checkpoint ready to write: its encoding, its distinct blob
// keys and every key its insertion writes, built once for the size check
// and every attempt of the transaction. cp is read, never modified, and not
// kept after the write returns; what is stored is enc.
type stored struct {
	cp    *ckptstore.Checkpoint
	enc   []byte
	blobs []string
	// copied: the encoding is also stored under the index key, so that Get
	// reads it in one round (fit decides).
	copied bool
	// Keys: one per chunk and per chunk of the copy, one per blob key (in
	// blobs order, all in one allocation, each capped at its length), and
	// the index, link, head and lease keys.
	chunkKeys, copyKeys, refKeys         [][]byte
	indexKey, linkKey, headKey, leaseKey []byte
}

func (s *Driver) newStored(cp *ckptstore.Checkpoint) (*stored, error) {
	enc, err := encodeCheckpoint(cp)
	if err != nil {
		return nil, err
	}
	st := &stored{cp: cp, enc: enc, blobs: cp.BlobKeys()}
	n := chunks(len(st.enc))
	st.chunkKeys = make([][]byte, n)
	st.copyKeys = make([][]byte, n)
	for i := range n {
		st.chunkKeys[i] = s.k.chunk(cp.ThreadID, cp.CreatedAt, cp.ID, i)
		st.copyKeys[i] = s.k.copyChunk(cp.ID, i)
	}
	size := 0
	for _, b := range st.blobs {
		size += len(s.k.refSpace) + tuple.StringLen(b)
	}
	buf := make([]byte, 0, size)
	st.refKeys = make([][]byte, len(st.blobs))
	for i, b := range st.blobs {
		from := len(buf)
		buf = tuple.AppendString(append(buf, s.k.refSpace...), b)
		st.refKeys[i] = buf[from:len(buf):len(buf)]
	}
	st.indexKey = s.k.index(cp.ID)
	st.linkKey = s.k.link(cp.ThreadID, cp.ID)
	st.headKey = s.k.head(cp.ThreadID)
	st.leaseKey = s.k.lease(cp.ThreadID)
	return st, nil
}

// insert writes st as a stored checkpoint, and as the head of its thread
// when setHead, and counts its blobs.
func (s *Driver) insert(tr kv.Transaction, st *stored, setHead bool) {
	cp := st.cp
	for i, k := range st.chunkKeys {
		part := st.enc[i*kv.MaxValueSize : min(len(st.enc), (i+1)*kv.MaxValueSize)]
		tr.Set(k, part)
		if st.copied {
			tr.Set(st.copyKeys[i], part)
		}
	}
	ca := sortKey(cp.CreatedAt)
	tr.Set(st.indexKey, indexValue{thread: cp.ThreadID, createdAt: ca, copied: st.copied}.encode())
	tr.Set(st.linkKey, linkValue{
		parent: cp.ParentCheckpointID, createdAt: ca, size: int64(len(st.enc)), blobs: int64(len(st.blobs)),
	}.encode())
	if setHead {
		tr.Set(st.headKey, []byte(cp.ID))
	}
	for _, k := range st.refKeys {
		tr.Add(k, 1)
	}
}

var zeroCount = kv.EncodeInt64(0)

// remove deletes a stored checkpoint and its copy and drops its blob
// counts; a count that reaches 0 is cleared. It does not touch the head.
func (s *Driver) remove(tr kv.Transaction, cp *ckptstore.Checkpoint) {
	tr.ClearRange(rangeOf(s.k.checkpointPrefix(cp.ThreadID, cp.CreatedAt, cp.ID)))
	tr.ClearRange(s.k.idRange(cp.ID))
	tr.Clear(s.k.link(cp.ThreadID, cp.ID))
	for _, b := range cp.BlobKeys() {
		k := s.k.ref(b)
		tr.Add(k, -1)
		tr.CompareAndClear(k, zeroCount)
	}
}

// Append implements driver.Store: one read round (marker, lease, head,
// index), then the commit. Check order: ids (ErrInvalidID), entries
// (ErrInvalidEntry), writer (ErrWriterLost), id unused (ErrDuplicateID),
// head (ErrConflict), parent (ErrParentMismatch).
func (s *Driver) Append(ctx context.Context, cp *ckptstore.Checkpoint, expectedHeadID string, w ckptstore.Writer, opToken string) error {
	if err := checkIDLengths(named("checkpoint id", cp.ID), named("thread id", cp.ThreadID),
		named("writer thread id", w.ThreadID), named("expected head id", expectedHeadID),
		named("parentCheckpointId", cp.ParentCheckpointID)); err != nil {
		return err
	}
	o := s.callerOp(opToken, opAppend, cp.ThreadID)
	// No clone of cp: st holds its encoding, and the transaction reads only
	// cp's strings.
	st, err := s.newStored(cp)
	if err != nil {
		return err
	}
	if err := s.fit(st, 0); err != nil {
		return err
	}
	c := st.cp
	return s.db.Transact(ctx, func(tr kv.Transaction) error {
		r, err := s.startRound(tr, o, readLease|readHead)
		if err != nil {
			return err
		}
		idf := tr.Get(st.indexKey)
		if done, _, err := r.done(); err != nil || done {
			return err
		}
		if err := r.checkWriter(w); err != nil {
			return err
		}
		if idx, err := idf.Get(); err != nil {
			return err
		} else if idx != nil {
			return driver.DuplicateIDError(c.ID)
		}
		head, err := r.headID()
		if err != nil {
			return err
		}
		if head != expectedHeadID {
			return driver.StaleHeadError(c.ThreadID, head, expectedHeadID)
		}
		if c.ParentCheckpointID != expectedHeadID {
			return driver.ParentMismatchError(c.ParentCheckpointID, expectedHeadID)
		}
		s.insert(tr, st, true)
		if head == "" {
			// The thread may have been empty: list it. With a head it is
			// listed already.
			tr.Set(s.k.listed(c.ThreadID), nil)
		}
		return r.finish(tr, nil)
	})
}

// DeleteHead implements driver.Store: one read round (marker, lease,
// head, the checkpoint's copy under its index, and the thread's first
// links and transcript chunk, to tell whether deleting a root empties
// it), then the commit; a second round only when the checkpoint has no
// copy. Check order: ids
// (ErrInvalidID), writer (ErrWriterLost), head (ErrNotHead).
func (s *Driver) DeleteHead(ctx context.Context, threadID, checkpointID string, w ckptstore.Writer, opToken string) error {
	if err := checkIDLengths(named("thread id", threadID), named("checkpoint id", checkpointID),
		named("writer thread id", w.ThreadID)); err != nil {
		return err
	}
	o := s.callerOp(opToken, opDeleteHead, threadID)
	return s.db.Transact(ctx, func(tr kv.Transaction) error {
		r, err := s.startRound(tr, o, readLease|readHead)
		if err != nil {
			return err
		}
		idf := s.startByID(tr, checkpointID)
		// Whether the thread is empty once a root is deleted: read now, as
		// snapshots, so that a root costs no second round; unlistIfEmpty
		// adds their conflict ranges when it uses them.
		lf := tr.Snapshot().GetRange(rangeOf(s.k.linksPrefix(threadID)), kv.RangeOptions{Limit: 2})
		mf := tr.Snapshot().GetRange(rangeOf(s.k.transcriptPrefix(threadID)), kv.RangeOptions{Limit: 1})
		if done, _, err := r.done(); err != nil || done {
			return err
		}
		if err := r.checkWriter(w); err != nil {
			return err
		}
		head, err := r.headID()
		if err != nil {
			return err
		}
		notHead := driver.NotHeadError(checkpointID, threadID)
		if head != checkpointID {
			return notHead
		}
		cp, idx, err := s.readByID(tr, checkpointID, idf)
		if err != nil {
			return err
		}
		if idx == nil || idx.thread != threadID {
			return notHead // the head names a pruned id, or one another thread reused
		}
		s.remove(tr, cp)
		if cp.ParentCheckpointID != "" {
			tr.Set(s.k.head(threadID), []byte(cp.ParentCheckpointID))
		} else {
			tr.Clear(s.k.head(threadID))
			if err := s.unlistIfEmpty(tr, threadID, checkpointID, lf, mf); err != nil {
				return err
			}
		}
		return r.finish(tr, nil)
	})
}

// unlistIfEmpty clears the thread's listed key when, once this
// transaction deletes checkpoint id and the head, the thread has no
// checkpoint and no transcript. links (the first two link keys) and msgs
// (the first transcript chunk) are snapshot reads issued with the write's
// round; their conflict ranges are added here, so that a write making the
// thread non-empty meanwhile conflicts, and the listed key stays exact.
func (s *Driver) unlistIfEmpty(tr kv.Transaction, threadID, id string, links, msgs kv.FutureRange) error {
	lr, mr := rangeOf(s.k.linksPrefix(threadID)), rangeOf(s.k.transcriptPrefix(threadID))
	tr.AddReadConflictRange(lr)
	tr.AddReadConflictRange(mr)
	ls, err := links.Get()
	if err != nil {
		return err
	}
	ms, err := msgs.Get()
	if err != nil {
		return err
	}
	own := string(s.k.link(threadID, id))
	for _, l := range ls {
		if string(l.Key) != own {
			return nil // another checkpoint stays
		}
	}
	if len(ms) == 0 {
		tr.Clear(s.k.listed(threadID))
	}
	return nil
}

// DeleteCheckpoints implements driver.Store. It deletes in batches of
// at most Options.PruneBatch checkpoints (and MaxTransactionBytes), each a
// transaction that checks the lease again and recomputes the chain from the
// head, deleting the farthest checkpoints first; so a prune that fits in
// one batch is atomic, and a longer one that fails part way leaves an
// intact chain and can be repeated. On such a failure it returns the ids
// deleted so far with the error. Check order: ids (ErrInvalidID), keep
// (ErrInvalidEntry), writer (ErrWriterLost).
func (s *Driver) DeleteCheckpoints(ctx context.Context, threadID string, keep int, w ckptstore.Writer) ([]string, error) {
	if err := checkIDLengths(named("thread id", threadID), named("writer thread id", w.ThreadID)); err != nil {
		return nil, err
	}
	deleted := []string{}
	for {
		ids, more, err := s.pruneBatch(ctx, threadID, keep, w)
		deleted = append(deleted, ids...)
		if err != nil {
			if len(deleted) == 0 {
				return nil, err
			}
			return deleted, fmt.Errorf("fdbstore: DeleteCheckpoints stopped after deleting %d checkpoints: %w", len(deleted), err)
		}
		if !more {
			return deleted, nil
		}
	}
}

// pruneBatch is one transaction of DeleteCheckpoints: it deletes the
// farthest checkpoints of the chain beyond keep, as many as fit, and
// reports whether more remain.
func (s *Driver) pruneBatch(ctx context.Context, threadID string, keep int, w ckptstore.Writer) (ids []string, more bool, err error) {
	o := s.newOp(opPrune, threadID)
	linksPrefix := s.k.linksPrefix(threadID)
	err = s.db.Transact(ctx, func(tr kv.Transaction) error {
		r, err := s.startRound(tr, o, readLease|readHead)
		if err != nil {
			return err
		}
		linksf := tr.GetRange(rangeOf(linksPrefix), kv.RangeOptions{})
		if done, _, err := r.done(); err != nil || done {
			return err // ids and more are those of the attempt that committed
		}
		if err := r.checkWriter(w); err != nil {
			return err
		}
		head, err := r.headID()
		if err != nil {
			return err
		}
		linkKVs, err := linksf.Get()
		if err != nil {
			return err
		}
		links, err := decodeLinks(linkKVs, linksPrefix)
		if err != nil {
			return err
		}
		chain := chainFrom(head, links)
		if len(chain) <= keep {
			ids, more = []string{}, false
			return nil
		}
		doomed := chain[keep:]
		slices.Reverse(doomed) // farthest first
		batch := doomed[:s.pruneBatchSize(threadID, doomed, links)]
		pending := make([]pendingCheckpoint, len(batch))
		for i, id := range batch {
			pending[i] = s.readCheckpoint(tr, threadID, links[id].createdAt, id)
		}
		for _, pc := range pending {
			cp, err := pc.get()
			if err != nil {
				return err
			}
			if cp == nil {
				return fmt.Errorf("%w: checkpoint %q is linked but has no data", ErrCorrupt, pc.id)
			}
			s.remove(tr, cp)
		}
		if err := r.finish(tr, nil); err != nil {
			return err
		}
		ids, more = slices.Clone(batch), len(batch) < len(doomed)
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return ids, more, nil
}

// decodeLinks reads a range of the thread's link keys under p into a map
// by checkpoint id.
func decodeLinks(kvs []kv.KeyValue, p []byte) (map[string]linkValue, error) {
	links := make(map[string]linkValue, len(kvs))
	for _, kvp := range kvs {
		t, err := suffix(kvp.Key, p)
		if err != nil {
			return nil, err
		}
		id, ok := elem[string](t, 0, 1)
		if !ok {
			return nil, fmt.Errorf("%w: link key %x", ErrCorrupt, kvp.Key)
		}
		if links[id], err = decodeLink(kvp.Value); err != nil {
			return nil, err
		}
	}
	return links, nil
}

// chainFrom is the chain from head, nearest first, through the checkpoints
// of links (this thread's). An id may be reused after its checkpoint was
// pruned, so a parent id can name a newer checkpoint and close a loop: the
// chain stops there, as it stops at a parent that is not in links.
func chainFrom(head string, links map[string]linkValue) []string {
	var chain []string
	seen := make(map[string]bool)
	for id := head; id != "" && !seen[id]; {
		l, ok := links[id]
		if !ok {
			break
		}
		seen[id] = true
		chain = append(chain, id)
		id = l.parent
	}
	return chain
}

// pruneBatchSize is how many of doomed (farthest first) one prune
// transaction deletes: at least one, at most Options.PruneBatch, and no
// more than fit in MaxTransactionBytes and in maxPruneReadBytes of
// checkpoint reads.
func (s *Driver) pruneBatchSize(threadID string, doomed []string, links map[string]linkValue) int {
	cost := s.markerCost(threadID) + costRead(s.k.lease(threadID)) + costRead(s.k.head(threadID)) +
		costRange(rangeOf(s.k.linksPrefix(threadID)))
	var readBytes int64
	n := 0
	for n < len(doomed) && n < s.opts.PruneBatch {
		l := links[doomed[n]]
		c := s.removeCost(threadID, l.createdAt, doomed[n], "", int(l.blobs))
		if n > 0 && (cost+c > MaxTransactionBytes || readBytes+l.size > maxPruneReadBytes) {
			break
		}
		cost += c
		readBytes += l.size
		n++
	}
	return n
}

// maxPruneReadBytes bounds the checkpoint bytes one prune or DeleteThread
// transaction reads, to stay well inside FoundationDB's five-second
// transaction life.
const maxPruneReadBytes = 32 << 20

// ForkFromCheckpoint implements driver.Store: one read round (marker,
// the destination's lease, head, first link and transcript, the source's
// and the destination id's index and copy), then the commit; a second
// round when the source has no copy. It writes the destination's
// transcript, the root's conversation ("[]" when empty), in the same
// transaction. Check order: ids (ErrInvalidID), createdAt
// (ErrInvalidEntry), threads distinct (ErrForkSourceThreadMismatch),
// source exists (ErrForkSourceNotFound), source in the source thread
// (ErrForkSourceThreadMismatch), writer (ErrWriterLost), destination empty
// of head, checkpoints and transcript, and the id unused
// (ErrForkDestinationNotEmpty).
func (s *Driver) ForkFromCheckpoint(ctx context.Context, f driver.Fork) (*ckptstore.Checkpoint, error) {
	in := f.ForkInput
	if err := checkIDLengths(named("source thread id", in.SourceThreadID), named("source checkpoint id", in.SourceCheckpointID),
		named("destination thread id", in.DestinationThreadID), named("destination checkpoint id", in.DestinationCheckpointID),
		named("writer thread id", in.Writer.ThreadID)); err != nil {
		return nil, err
	}
	dst := in.DestinationThreadID
	o := s.callerOp(f.OpToken, opFork, dst)
	var root *ckptstore.Checkpoint
	err := s.db.Transact(ctx, func(tr kv.Transaction) error {
		r, err := s.startRound(tr, o, readLease|readHead)
		if err != nil {
			return err
		}
		srcf := s.startByID(tr, in.SourceCheckpointID)
		anyf := tr.GetRange(rangeOf(s.k.linksPrefix(dst)), kv.RangeOptions{Limit: 1})
		msgf := tr.GetRange(rangeOf(s.k.transcriptPrefix(dst)), kv.RangeOptions{Limit: 1})
		dstf := s.startByID(tr, in.DestinationCheckpointID)
		if done, _, err := r.done(); err != nil || done {
			if err == nil && root == nil {
				// A caller's repeat of a fork that committed: its root.
				root, err = s.forkRoot(tr, in, dstf, srcf)
			}
			return err
		}
		src, err := s.forkSource(tr, in, srcf)
		if err != nil {
			return err
		}
		if f.WriterThreadErr != nil {
			return f.WriterThreadErr
		}
		if err := r.checkWriter(in.Writer); err != nil {
			return err
		}
		if err := forkDestinationEmpty(r, in, anyf, msgf, dstf); err != nil {
			return err
		}
		st, err := s.newStored(driver.ForkRoot(src, in))
		if err != nil {
			return err
		}
		transcript := transcriptOf(st.cp)
		if err := s.fit(st, s.forkExtraCost(in, len(transcript))); err != nil {
			return err // the destination's ids made the copy too large
		}
		s.insert(tr, st, true)
		s.writeTranscript(tr, dst, transcript)
		if err := r.finish(tr, nil); err != nil {
			return err
		}
		root = st.cp
		return nil
	})
	if err != nil {
		return nil, err
	}
	return root.Clone(), nil
}

// forkSource reads the fork's source checkpoint (srcf, its index read):
// ErrForkSourceNotFound when there is none, ErrForkSourceThreadMismatch
// when it is in another thread than the input names.
func (s *Driver) forkSource(tr kv.Transaction, in ckptstore.ForkInput, srcf kv.FutureRange) (*ckptstore.Checkpoint, error) {
	src, srcIdx, err := s.readByID(tr, in.SourceCheckpointID, srcf)
	if err != nil {
		return nil, err
	}
	if srcIdx == nil {
		return nil, driver.ForkSourceNotFoundError(in.SourceCheckpointID)
	}
	if srcIdx.thread != in.SourceThreadID {
		return nil, driver.ForkSourceThreadError(in.SourceCheckpointID, srcIdx.thread, in.SourceThreadID)
	}
	return src, nil
}

// forkDestinationEmpty checks, from the round r and the reads started for
// the destination (its first link, first transcript chunk and the
// destination id's index), that the fork's destination has no head, no
// checkpoint and no transcript, and that its id is unused:
// ErrForkDestinationNotEmpty otherwise.
func forkDestinationEmpty(r *writeRound, in ckptstore.ForkInput, anyf, msgf, dstf kv.FutureRange) error {
	dst := in.DestinationThreadID
	head, err := r.headID()
	if err != nil {
		return err
	}
	members, err := anyf.Get()
	if err != nil {
		return err
	}
	msgs, err := msgf.Get()
	if err != nil {
		return err
	}
	if head != "" || len(members) != 0 {
		return driver.ForkDestinationCheckpointsError(dst)
	}
	if len(msgs) != 0 {
		return driver.ForkDestinationTranscriptError(dst)
	}
	if used, err := dstf.Get(); err != nil {
		return err
	} else if len(used) != 0 {
		return driver.ForkDestinationIDError(in.DestinationCheckpointID)
	}
	return nil
}

// forkExtraCost estimates what a fork adds to the insertion of its root:
// the destination's transcript of n bytes and the reads of the source,
// the destination's links and transcript.
func (s *Driver) forkExtraCost(in ckptstore.ForkInput, n int) int {
	dst := in.DestinationThreadID
	return s.transcriptCost(dst, n) + costRange(s.k.idRange(in.SourceCheckpointID)) +
		costRange(rangeOf(s.k.linksPrefix(dst))) + costRange(rangeOf(s.k.transcriptPrefix(dst)))
}

// transcriptOf is the transcript a fork gives its destination: the root's
// conversation, "[]" when it has none.
func transcriptOf(cp *ckptstore.Checkpoint) []byte {
	if len(cp.Conversation) == 0 {
		return driver.EmptyTranscript()
	}
	return cp.Conversation
}

// forkRoot is the root a fork that committed made, for a caller that
// repeats the fork with its op token: the destination checkpoint as
// stored, or, when it is gone since, the root rebuilt from the source.
func (s *Driver) forkRoot(tr kv.Transaction, in ckptstore.ForkInput, dstf, srcf kv.FutureRange) (*ckptstore.Checkpoint, error) {
	cp, idx, err := s.readByID(tr, in.DestinationCheckpointID, dstf)
	if err != nil {
		return nil, err
	}
	if idx != nil && idx.thread == in.DestinationThreadID {
		return cp, nil
	}
	src, srcIdx, err := s.readByID(tr, in.SourceCheckpointID, srcf)
	if err != nil {
		return nil, err
	}
	if srcIdx == nil {
		return nil, fmt.Errorf("fdbstore: the fork with this op token committed, but its root and its source were deleted since")
	}
	return driver.ForkRoot(src, in), nil
}

// AcquireWriter implements driver.Store. The lease's owner token is the
// op token: the caller's (ckptstore.WithOpToken), so that a repeat of a
// call that committed returns the same lease, or a fresh random one. Check
// order: id (ErrInvalidID), no live lease (ErrWriterConflict).
func (s *Driver) AcquireWriter(ctx context.Context, threadID, opToken string) (driver.Lease, error) {
	if err := checkIDLengths(named("thread id", threadID)); err != nil {
		return driver.Lease{}, err
	}
	o := s.callerOp(opToken, opAcquire, threadID)
	var taken leaseValue
	err := s.db.Transact(ctx, func(tr kv.Transaction) error {
		r, err := s.startRound(tr, o, readLease)
		if err != nil {
			return err
		}
		if done, result, err := r.done(); err != nil || done {
			if err == nil {
				taken, err = decodeTaken(o.token, result)
			}
			return err
		}
		raw, err := r.lease.Get()
		if err != nil {
			return err
		}
		now := r.now
		var fence int64
		if raw != nil {
			cur, err := decodeLease(raw)
			if err != nil {
				return err
			}
			if cur.token != "" && now.Before(cur.expires) {
				return driver.WriterConflictError(threadID, cur.expires)
			}
			fence = cur.fence
		}
		l := leaseValue{token: o.token, fence: fence + 1, expires: now.Add(s.opts.LeaseDuration)}
		tr.Set(s.k.lease(threadID), l.encode())
		if err := r.finish(tr, tuple.Pack(l.fence, l.expires.Unix(), int64(l.expires.Nanosecond()))); err != nil {
			return err
		}
		taken = l
		return nil
	})
	if err != nil {
		return driver.Lease{}, err
	}
	w := ckptstore.Writer{ThreadID: threadID, OwnerToken: taken.token, Fence: taken.fence}
	return driver.Lease{Writer: w, ExpiresAt: taken.expires, RenewAfter: s.opts.RenewAfter}, nil
}

// decodeTaken reads the lease an AcquireWriter marker stores.
func decodeTaken(token string, result []byte) (leaseValue, error) {
	t, err := tuple.Unpack(result)
	if err == nil && len(t) == 3 {
		fence, ok1 := t[0].(int64)
		sec, ok2 := t[1].(int64)
		nsec, ok3 := t[2].(int64)
		if ok1 && ok2 && ok3 {
			return leaseValue{token: token, fence: fence, expires: time.Unix(sec, nsec)}, nil
		}
	}
	return leaseValue{}, fmt.Errorf("%w: AcquireWriter marker result %x", ErrCorrupt, result)
}

// Renew implements driver.Store: one read round (marker
// and lease), then the commit. It writes a marker with the new expiry: a
// retry after commit_unknown_result that renewed again would move the
// expiry a second time and report a later one than the commit that other
// clients saw (or fail, once the first renewal's lease expired), which no
// single renewal explains. Check order: writer thread id (ErrInvalidID),
// writer live (ErrWriterLost).
func (s *Driver) Renew(ctx context.Context, w ckptstore.Writer) (time.Time, error) {
	if err := checkIDLengths(named("writer thread id", w.ThreadID)); err != nil {
		return time.Time{}, err
	}
	o := s.newOp(opRenew, w.ThreadID)
	var expires time.Time
	err := s.db.Transact(ctx, func(tr kv.Transaction) error {
		r, err := s.startRound(tr, o, readLease)
		if err != nil {
			return err
		}
		if done, result, err := r.done(); err != nil || done {
			if err == nil {
				var l leaseValue
				l, err = decodeTaken(w.OwnerToken, result)
				expires = l.expires
			}
			return err
		}
		if err := r.checkWriter(w); err != nil {
			return err
		}
		exp := r.now.Add(s.opts.LeaseDuration)
		tr.Set(s.k.lease(w.ThreadID), leaseValue{token: w.OwnerToken, fence: w.Fence, expires: exp}.encode())
		if err := r.finish(tr, tuple.Pack(w.Fence, exp.Unix(), int64(exp.Nanosecond()))); err != nil {
			return err
		}
		expires = exp
		return nil
	})
	if err != nil {
		return time.Time{}, err
	}
	return expires, nil
}

// Release implements driver.Store: it empties the token of
// w's lease and keeps the fence, when the lease is still w's. It is
// idempotent by itself.
func (s *Driver) Release(ctx context.Context, w ckptstore.Writer) error {
	if len(w.ThreadID) > MaxIDBytes {
		return nil // no such lease can exist
	}
	return s.db.Transact(ctx, func(tr kv.Transaction) error {
		raw, err := tr.Get(s.k.lease(w.ThreadID)).Get()
		if err != nil || raw == nil {
			return err
		}
		l, err := decodeLease(raw)
		if err != nil {
			return err
		}
		if l.token == "" || l.token != w.OwnerToken || l.fence != w.Fence {
			return nil
		}
		tr.Set(s.k.lease(w.ThreadID), leaseValue{fence: l.fence, expires: time.Unix(0, 0)}.encode())
		return nil
	})
}
