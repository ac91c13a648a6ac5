package fdbstore

// The writes. Each is one serializable transaction (DeleteCheckpoints: one
// per batch) shaped the same way:
//
//  1. validate the arguments without the database (shared validators, so
//     every store fails the same input the same way);
//  2. start every read as a future — the op marker first — and only then
//     wait, so one read round serves all the checks;
//  3. when the marker exists, an earlier attempt of this call committed:
//     return its result;
//  4. run the contract's checks in the contract's order on what was read;
//  5. write, including the marker.
//
// Closure state that a later attempt may return (the lease, the fork root,
// the deleted ids) is set only by the attempt that writes: after a commit
// every later attempt finds the marker, so the last attempt that wrote is
// the one that committed.

import (
	"context"
	"crypto/rand"
	"fmt"
	"slices"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/fdbstore/internal/tuple"
	"github.com/ckptstore/ckptstore/fdbstore/kv"
)

// checkWriter returns ErrWriterLost unless w is threadID's live lease, as
// read from the lease key (raw may be nil).
func (s *Store) checkWriter(threadID string, w ckptstore.Writer, raw []byte) error {
	if w.ThreadID != threadID {
		return fmt.Errorf("%w: writer of thread %q cannot write thread %q", ckptstore.ErrWriterLost, w.ThreadID, threadID)
	}
	if raw == nil {
		return fmt.Errorf("%w: thread %q has no lease", ckptstore.ErrWriterLost, threadID)
	}
	l, err := decodeLease(raw)
	if err != nil {
		return err
	}
	if l.token == "" {
		return fmt.Errorf("%w: the lease of thread %q was released", ckptstore.ErrWriterLost, threadID)
	}
	if l.token != w.OwnerToken || l.fence != w.Fence {
		return fmt.Errorf("%w: thread %q has a newer lease (fence %d, writer has %d)", ckptstore.ErrWriterLost, threadID, l.fence, w.Fence)
	}
	if !s.opts.Now().Before(l.expires) {
		return fmt.Errorf("%w: the lease of thread %q expired at %v", ckptstore.ErrWriterLost, threadID, l.expires)
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
	// Keys: one per chunk, one per blob key (in blobs order, all in one
	// allocation, each capped at its length), and the index, link, head
	// and lease keys.
	chunkKeys, refKeys                   [][]byte
	indexKey, linkKey, headKey, leaseKey []byte
}

func (s *Store) newStored(cp *ckptstore.Checkpoint) (*stored, error) {
	enc, err := encodeCheckpoint(cp)
	if err != nil {
		return nil, err
	}
	st := &stored{cp: cp, enc: enc, blobs: cp.BlobKeys()}
	st.chunkKeys = make([][]byte, max(1, (len(st.enc)+kv.MaxValueSize-1)/kv.MaxValueSize))
	for i := range st.chunkKeys {
		st.chunkKeys[i] = s.k.chunk(cp.ThreadID, cp.CreatedAt, cp.ID, i)
	}
	n := 0
	for _, b := range st.blobs {
		n += len(s.k.refSpace) + tuple.StringLen(b)
	}
	buf := make([]byte, 0, n)
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

// insertCost estimates the transaction bytes of inserting st (without the
// marker and the op's own reads).
func (s *Store) insertCost(st *stored) int {
	cp := st.cp
	n := 0
	for _, k := range st.chunkKeys {
		n += costSet(k, 0)
	}
	n += len(st.enc)
	n += costSet(st.indexKey, len(cp.ThreadID)+16)
	n += costSet(st.linkKey, len(cp.ParentCheckpointID)+40)
	n += costSet(st.headKey, len(cp.ID))
	n += costRead(st.indexKey) + costRead(st.headKey) + costRead(st.leaseKey)
	for _, k := range st.refKeys {
		n += costAtomic(k)
	}
	return n
}

// removeCost estimates the transaction bytes of deleting one checkpoint of
// thread with the given ids and number of blob keys.
func (s *Store) removeCost(thread string, createdAt float64, id, parent string, blobs int) int {
	r := rangeOf(s.k.checkpointPrefix(thread, createdAt, id))
	n := 2*costRange(r) + costClear(s.k.index(id)) + costClear(s.k.link(thread, id)) +
		costRead(s.k.index(id)) + costSet(s.k.head(thread), len(parent))
	// Blob keys all have the same length as the longest kind
	// (sandbox-artifacts/sha256/<64 hex>): −1 and compare-and-clear each.
	ref := s.k.ref("sandbox-artifacts/sha256/0000000000000000000000000000000000000000000000000000000000000000")
	return n + blobs*2*costAtomic(ref)
}

// checkSize returns ErrInvalidEntry when st could not be appended, or not
// deleted again, in one transaction.
func (s *Store) checkSize(st *stored) error {
	cp := st.cp
	ins := s.insertCost(st) + s.markerCost
	del := s.removeCost(cp.ThreadID, cp.CreatedAt, cp.ID, cp.ParentCheckpointID, len(st.blobs)) + s.markerCost +
		costRead(st.leaseKey) + costRead(st.headKey)
	if n := max(ins, del); n > MaxTransactionBytes {
		return fmt.Errorf("%w: checkpoint %q is too large for one FoundationDB transaction: about %d bytes (encoding %d bytes, %d distinct blob keys), more than fdbstore's limit of %d",
			ckptstore.ErrInvalidEntry, cp.ID, n, len(st.enc), len(st.blobs), MaxTransactionBytes)
	}
	return nil
}

// insert writes st as a stored checkpoint and the head of its thread, and
// counts its blobs.
func (s *Store) insert(tr kv.Transaction, st *stored) {
	cp := st.cp
	for i, k := range st.chunkKeys {
		end := min(len(st.enc), (i+1)*kv.MaxValueSize)
		tr.Set(k, st.enc[i*kv.MaxValueSize:end])
	}
	ca := sortKey(cp.CreatedAt)
	tr.Set(st.indexKey, indexValue{thread: cp.ThreadID, createdAt: ca}.encode())
	tr.Set(st.linkKey, linkValue{
		parent: cp.ParentCheckpointID, createdAt: ca, size: int64(len(st.enc)), blobs: int64(len(st.blobs)),
	}.encode())
	tr.Set(st.headKey, []byte(cp.ID))
	for _, k := range st.refKeys {
		tr.Add(k, 1)
	}
}

var zeroCount = kv.EncodeInt64(0)

// remove deletes a stored checkpoint and drops its blob counts; a count
// that reaches 0 is cleared. It does not touch the head.
func (s *Store) remove(tr kv.Transaction, cp *ckptstore.Checkpoint) {
	tr.ClearRange(rangeOf(s.k.checkpointPrefix(cp.ThreadID, cp.CreatedAt, cp.ID)))
	tr.Clear(s.k.index(cp.ID))
	tr.Clear(s.k.link(cp.ThreadID, cp.ID))
	for _, b := range cp.BlobKeys() {
		k := s.k.ref(b)
		tr.Add(k, -1)
		tr.CompareAndClear(k, zeroCount)
	}
}

// Append implements ckptstore.Store: one read round (marker, lease,
// index, head), then the commit.
func (s *Store) Append(ctx context.Context, cp *ckptstore.Checkpoint, expectedHeadID string, w ckptstore.Writer) error {
	if cp != nil {
		if err := checkIDLengths(named("checkpoint id", cp.ID), named("thread id", cp.ThreadID),
			named("writer thread id", w.ThreadID), named("expected head id", expectedHeadID),
			named("parentCheckpointId", cp.ParentCheckpointID)); err != nil {
			return err
		}
	}
	if err := ckptstore.ValidateAppend(cp, expectedHeadID, w); err != nil {
		return err
	}
	// No clone of cp: st holds its encoding, and the transaction reads only
	// cp's strings.
	st, err := s.newStored(cp)
	if err != nil {
		return err
	}
	if err := s.checkSize(st); err != nil {
		return err
	}
	c := st.cp
	o := s.newOp()
	return s.db.Transact(ctx, func(tr kv.Transaction) error {
		mf, err := o.begin(tr)
		if err != nil {
			return err
		}
		lf := tr.Get(st.leaseKey)
		idf := tr.Get(st.indexKey)
		hf := tr.Get(st.headKey)
		if done, err := committed(mf); err != nil || done {
			return err
		}
		lease, err := lf.Get()
		if err != nil {
			return err
		}
		if err := s.checkWriter(c.ThreadID, w, lease); err != nil {
			return err
		}
		if idx, err := idf.Get(); err != nil {
			return err
		} else if idx != nil {
			return fmt.Errorf("%w: %q", ckptstore.ErrDuplicateID, c.ID)
		}
		head, err := hf.Get()
		if err != nil {
			return err
		}
		if string(head) != expectedHeadID {
			return fmt.Errorf("%w: head of thread %q is %q, expected %q", ckptstore.ErrConflict, c.ThreadID, head, expectedHeadID)
		}
		if c.ParentCheckpointID != expectedHeadID {
			return fmt.Errorf("%w: parent %q, expected head %q", ckptstore.ErrParentMismatch, c.ParentCheckpointID, expectedHeadID)
		}
		s.insert(tr, st)
		s.finish(tr, o)
		return nil
	})
}

// DeleteHead implements ckptstore.Store: a read round for the checks, one
// for the checkpoint's blob keys and parent, then the commit.
func (s *Store) DeleteHead(ctx context.Context, threadID, checkpointID string, w ckptstore.Writer) error {
	if err := checkIDLengths(named("thread id", threadID), named("checkpoint id", checkpointID),
		named("writer thread id", w.ThreadID)); err != nil {
		return err
	}
	if err := ckptstore.ValidateDeleteHead(threadID, checkpointID, w); err != nil {
		return err
	}
	o := s.newOp()
	return s.db.Transact(ctx, func(tr kv.Transaction) error {
		mf, err := o.begin(tr)
		if err != nil {
			return err
		}
		lf := tr.Get(s.k.lease(threadID))
		hf := tr.Get(s.k.head(threadID))
		idf := tr.Get(s.k.index(checkpointID))
		if done, err := committed(mf); err != nil || done {
			return err
		}
		lease, err := lf.Get()
		if err != nil {
			return err
		}
		if err := s.checkWriter(threadID, w, lease); err != nil {
			return err
		}
		head, err := hf.Get()
		if err != nil {
			return err
		}
		rawIdx, err := idf.Get()
		if err != nil {
			return err
		}
		notHead := fmt.Errorf("%w: %q is not the head of thread %q", ckptstore.ErrNotHead, checkpointID, threadID)
		if string(head) != checkpointID || rawIdx == nil {
			return notHead
		}
		idx, err := decodeIndex(rawIdx)
		if err != nil {
			return err
		}
		if idx.thread != threadID {
			return notHead // the head names an id that another thread reused
		}
		cp, err := s.readCheckpoint(tr, threadID, idx.createdAt, checkpointID).get()
		if err != nil {
			return err
		}
		if cp == nil {
			return fmt.Errorf("%w: checkpoint %q is indexed but has no data", errCorrupt, checkpointID)
		}
		s.remove(tr, cp)
		if cp.ParentCheckpointID == "" {
			tr.Clear(s.k.head(threadID))
		} else {
			tr.Set(s.k.head(threadID), []byte(cp.ParentCheckpointID))
		}
		s.finish(tr, o)
		return nil
	})
}

// DeleteCheckpoints implements ckptstore.Pruner. It deletes in batches of
// at most Options.PruneBatch checkpoints (and MaxTransactionBytes), each a
// transaction that checks the lease again and recomputes the chain from the
// head, deleting the farthest checkpoints first; so a prune that fits in
// one batch is atomic, and a longer one that fails part way leaves an
// intact chain and can be repeated. On such a failure it returns the ids
// deleted so far with the error.
func (s *Store) DeleteCheckpoints(ctx context.Context, threadID string, keep int, w ckptstore.Writer) ([]string, error) {
	if err := checkIDLengths(named("thread id", threadID), named("writer thread id", w.ThreadID)); err != nil {
		return nil, err
	}
	if err := ckptstore.ValidatePrune(threadID, keep, w); err != nil {
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
func (s *Store) pruneBatch(ctx context.Context, threadID string, keep int, w ckptstore.Writer) (ids []string, more bool, err error) {
	o := s.newOp()
	linksPrefix := s.k.linksPrefix(threadID)
	err = s.db.Transact(ctx, func(tr kv.Transaction) error {
		mf, err := o.begin(tr)
		if err != nil {
			return err
		}
		lf := tr.Get(s.k.lease(threadID))
		hf := tr.Get(s.k.head(threadID))
		linksf := tr.GetRange(rangeOf(linksPrefix), kv.RangeOptions{})
		if done, err := committed(mf); err != nil || done {
			return err // ids and more are those of the attempt that committed
		}
		lease, err := lf.Get()
		if err != nil {
			return err
		}
		if err := s.checkWriter(threadID, w, lease); err != nil {
			return err
		}
		head, err := hf.Get()
		if err != nil {
			return err
		}
		linkKVs, err := linksf.Get()
		if err != nil {
			return err
		}
		links := make(map[string]linkValue, len(linkKVs))
		for _, p := range linkKVs {
			t, err := suffix(p.Key, linksPrefix)
			if err != nil {
				return err
			}
			id, ok := elem[string](t, 0, 1)
			if !ok {
				return fmt.Errorf("%w: link key %x", errCorrupt, p.Key)
			}
			if links[id], err = decodeLink(p.Value); err != nil {
				return err
			}
		}
		// The chain from the head, through checkpoints of this thread.
		// An id may be reused after its checkpoint was pruned, so a parent
		// id can name a newer checkpoint and close a loop: stop there.
		var chain []string
		seen := make(map[string]bool)
		for id := string(head); id != "" && !seen[id]; {
			l, ok := links[id]
			if !ok {
				break
			}
			seen[id] = true
			chain = append(chain, id)
			id = l.parent
		}
		if len(chain) <= keep {
			ids, more = []string{}, false
			return nil
		}
		doomed := chain[keep:]
		slices.Reverse(doomed) // farthest first
		// As many as fit in one transaction, at least one.
		cost := s.markerCost + costRead(s.k.lease(threadID)) + costRead(s.k.head(threadID)) + costRange(rangeOf(linksPrefix))
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
		batch := doomed[:n]
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
				return fmt.Errorf("%w: checkpoint %q is linked but has no data", errCorrupt, pc.id)
			}
			s.remove(tr, cp)
		}
		s.finish(tr, o)
		ids, more = slices.Clone(batch), n < len(doomed)
		return nil
	})
	if err != nil {
		return nil, false, err
	}
	return ids, more, nil
}

// maxPruneReadBytes bounds the checkpoint bytes one prune transaction
// reads, to stay well inside FoundationDB's five-second transaction life.
const maxPruneReadBytes = 32 << 20

// ForkFromCheckpoint implements ckptstore.Forker: a read round for the
// checks, one for the source checkpoint, then the commit.
func (s *Store) ForkFromCheckpoint(ctx context.Context, in ckptstore.ForkInput) (*ckptstore.Checkpoint, error) {
	if err := checkIDLengths(named("source thread id", in.SourceThreadID), named("source checkpoint id", in.SourceCheckpointID),
		named("destination thread id", in.DestinationThreadID), named("destination checkpoint id", in.DestinationCheckpointID),
		named("writer thread id", in.Writer.ThreadID)); err != nil {
		return nil, err
	}
	if err := ckptstore.ValidateFork(in); err != nil {
		return nil, err
	}
	dst := in.DestinationThreadID
	o := s.newOp()
	var root *ckptstore.Checkpoint
	err := s.db.Transact(ctx, func(tr kv.Transaction) error {
		mf, err := o.begin(tr)
		if err != nil {
			return err
		}
		srcf := tr.Get(s.k.index(in.SourceCheckpointID))
		lf := tr.Get(s.k.lease(dst))
		hf := tr.Get(s.k.head(dst))
		anyf := tr.GetRange(rangeOf(s.k.linksPrefix(dst)), kv.RangeOptions{Limit: 1})
		dstf := tr.Get(s.k.index(in.DestinationCheckpointID))
		if done, err := committed(mf); err != nil || done {
			return err
		}
		rawSrc, err := srcf.Get()
		if err != nil {
			return err
		}
		if rawSrc == nil {
			return fmt.Errorf("%w: %q", ckptstore.ErrForkSourceNotFound, in.SourceCheckpointID)
		}
		srcIdx, err := decodeIndex(rawSrc)
		if err != nil {
			return err
		}
		if srcIdx.thread != in.SourceThreadID {
			return fmt.Errorf("%w: checkpoint %q is in thread %q, not %q", ckptstore.ErrForkSourceThreadMismatch, in.SourceCheckpointID, srcIdx.thread, in.SourceThreadID)
		}
		lease, err := lf.Get()
		if err != nil {
			return err
		}
		if err := s.checkWriter(dst, in.Writer, lease); err != nil {
			return err
		}
		head, err := hf.Get()
		if err != nil {
			return err
		}
		members, err := anyf.Get()
		if err != nil {
			return err
		}
		if len(head) != 0 || len(members) != 0 {
			return fmt.Errorf("%w: thread %q has checkpoints", ckptstore.ErrForkDestinationNotEmpty, dst)
		}
		if used, err := dstf.Get(); err != nil {
			return err
		} else if used != nil {
			return fmt.Errorf("%w: checkpoint id %q is used", ckptstore.ErrForkDestinationNotEmpty, in.DestinationCheckpointID)
		}
		src, err := s.readCheckpoint(tr, in.SourceThreadID, srcIdx.createdAt, in.SourceCheckpointID).get()
		if err != nil {
			return err
		}
		if src == nil {
			return fmt.Errorf("%w: checkpoint %q is indexed but has no data", errCorrupt, in.SourceCheckpointID)
		}
		st, err := s.newStored(ckptstore.ForkRoot(src, in))
		if err != nil {
			return err
		}
		if err := s.checkSize(st); err != nil {
			return err // the destination's ids made the copy too large
		}
		s.insert(tr, st)
		s.finish(tr, o)
		root = st.cp
		return nil
	})
	if err != nil {
		return nil, err
	}
	return root.Clone(), nil
}

// AcquireWriter implements ckptstore.Store.
func (s *Store) AcquireWriter(ctx context.Context, threadID string) (*ckptstore.Lease, error) {
	if err := checkIDLengths(named("thread id", threadID)); err != nil {
		return nil, err
	}
	if err := ckptstore.ValidateID("thread id", threadID); err != nil {
		return nil, err
	}
	token := rand.Text()
	o := s.newOp()
	var taken leaseValue
	err := s.db.Transact(ctx, func(tr kv.Transaction) error {
		mf, err := o.begin(tr)
		if err != nil {
			return err
		}
		lf := tr.Get(s.k.lease(threadID))
		if done, err := committed(mf); err != nil || done {
			return err
		}
		raw, err := lf.Get()
		if err != nil {
			return err
		}
		now := s.opts.Now()
		var fence int64
		if raw != nil {
			cur, err := decodeLease(raw)
			if err != nil {
				return err
			}
			if cur.token != "" && now.Before(cur.expires) {
				return fmt.Errorf("%w: thread %q is leased until %v", ckptstore.ErrWriterConflict, threadID, cur.expires)
			}
			fence = cur.fence
		}
		l := leaseValue{token: token, fence: fence + 1, expires: now.Add(s.opts.LeaseDuration)}
		tr.Set(s.k.lease(threadID), l.encode())
		s.finish(tr, o)
		taken = l
		return nil
	})
	if err != nil {
		return nil, err
	}
	w := ckptstore.Writer{ThreadID: threadID, OwnerToken: taken.token, Fence: taken.fence}
	return ckptstore.NewLease(w, taken.expires, s.opts.RenewAfter, s), nil
}

// RenewWriter implements ckptstore.LeaseKeeper. It needs no marker: a
// retry after an applied commit finds its own live lease and renews it
// again.
func (s *Store) RenewWriter(ctx context.Context, w ckptstore.Writer) (time.Time, error) {
	if err := checkIDLengths(named("writer thread id", w.ThreadID)); err != nil {
		return time.Time{}, err
	}
	if err := ckptstore.ValidateID("writer thread id", w.ThreadID); err != nil {
		return time.Time{}, err
	}
	var expires time.Time
	err := s.db.Transact(ctx, func(tr kv.Transaction) error {
		raw, err := tr.Get(s.k.lease(w.ThreadID)).Get()
		if err != nil {
			return err
		}
		if err := s.checkWriter(w.ThreadID, w, raw); err != nil {
			return err
		}
		expires = s.opts.Now().Add(s.opts.LeaseDuration)
		tr.Set(s.k.lease(w.ThreadID), leaseValue{token: w.OwnerToken, fence: w.Fence, expires: expires}.encode())
		return nil
	})
	if err != nil {
		return time.Time{}, err
	}
	return expires, nil
}

// ReleaseWriter implements ckptstore.LeaseKeeper: it empties the token of
// w's lease and keeps the fence, when the lease is still w's. It is
// idempotent by itself.
func (s *Store) ReleaseWriter(ctx context.Context, w ckptstore.Writer) error {
	if w.ThreadID == "" || len(w.ThreadID) > MaxIDBytes {
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
