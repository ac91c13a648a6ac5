package fdbstore

import (
	"bytes"
	"context"
	"fmt"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/fdbstore/kv"
)

// Import implements driver.Store: one transaction per batch, with
// one read round (marker, lease, head, and each checkpoint's index and
// copy) and a second, for all of them at once, only for stored
// checkpoints without a copy. A stored
// checkpoint of the batch's thread whose content is equal
// (driver.EqualCheckpoints, on the decoded stored value) is skipped, so
// a batch that committed repeats as a no-op. A batch whose transaction
// would pass MaxTransactionBytes fails with ErrInvalidEntry before
// anything is written: callers send smaller batches (a few MB of
// checkpoint encodings). Check order: ids (ErrInvalidID), content
// (ErrInvalidEntry), writer (ErrWriterLost), ids stored elsewhere or with
// other content (ErrDuplicateID), head (ErrConflict).
func (s *Driver) Import(ctx context.Context, b ckptstore.ImportBatch) (int, error) {
	sts, err := s.importStored(ctx, b)
	if err != nil {
		return 0, err
	}
	transcript := bytes.Clone(b.Transcript)
	if cost := s.importCost(b.ThreadID, sts, transcript); cost > MaxTransactionBytes {
		return 0, fmt.Errorf("%w: import batch of %d checkpoints is too large for one FoundationDB transaction: about %d bytes, more than fdbstore's limit of %d; send smaller batches",
			ckptstore.ErrInvalidEntry, len(sts), cost, MaxTransactionBytes)
	}
	o := s.newOp(opImport, b.ThreadID)
	written := 0
	err = s.db.Transact(ctx, func(tr kv.Transaction) error {
		r, err := s.startRound(tr, o, readLease|readHead)
		if err != nil {
			return err
		}
		fs := make([]kv.FutureRange, len(sts))
		for i, st := range sts {
			fs[i] = s.startByID(tr, st.cp.ID)
		}
		if done, _, err := r.done(); err != nil || done {
			return err // written is that of the attempt that committed
		}
		if err := r.checkWriter(b.Writer); err != nil {
			return err
		}
		fresh, err := s.freshImports(tr, b.ThreadID, sts, fs)
		if err != nil {
			return err
		}
		head, err := r.headID()
		if err != nil {
			return err
		}
		if b.SetHead && head != "" && head != b.Head {
			return driver.ImportHeadError(b.ThreadID, head, b.Head)
		}
		if len(fresh) == 0 && (!b.SetHead || head == b.Head) && transcript == nil {
			// All stored already: a read-only transaction, nothing to
			// mark, as there is no commit whose result could be unknown.
			written = 0
			return nil
		}
		s.writeImport(tr, b, fresh, head, transcript)
		if err := r.finish(tr, nil); err != nil {
			return err
		}
		written = len(fresh)
		return nil
	})
	if err != nil {
		return 0, err
	}
	return written, nil
}

// importStored runs Import's pure checks (the id lengths fdbstore's keys
// allow among them) and encodes every checkpoint of b.
func (s *Driver) importStored(ctx context.Context, b ckptstore.ImportBatch) ([]*stored, error) {
	ids := []idArg{named("thread id", b.ThreadID), named("writer thread id", b.Writer.ThreadID)}
	for _, cp := range b.Checkpoints {
		if cp != nil {
			ids = append(ids, named("checkpoint id", cp.ID), named("thread id", cp.ThreadID), named("parentCheckpointId", cp.ParentCheckpointID))
		}
	}
	if b.SetHead {
		ids = append(ids, named("head id", b.Head))
	}
	if err := checkIDLengths(ids...); err != nil {
		return nil, err
	}
	sts := make([]*stored, len(b.Checkpoints))
	for i, cp := range b.Checkpoints {
		st, err := s.newStored(cp)
		if err != nil {
			return nil, err
		}
		if err := s.fit(st, 0); err != nil {
			return nil, err
		}
		sts[i] = st
	}
	return sts, nil
}

// freshImports reads what is stored under the ids of sts (fs, the index
// reads started for them) and returns the checkpoints not stored yet. One
// stored in another thread or with other content fails with
// ErrDuplicateID.
func (s *Driver) freshImports(tr kv.Transaction, thread string, sts []*stored, fs []kv.FutureRange) ([]*stored, error) {
	ids := make([]string, len(sts))
	for i, st := range sts {
		ids[i] = st.cp.ID
	}
	curs, idxs, err := s.readByIDs(tr, ids, fs)
	if err != nil {
		return nil, err
	}
	var fresh []*stored
	for i, st := range sts {
		cur, idx := curs[i], idxs[i]
		switch {
		case idx == nil:
			fresh = append(fresh, st)
		case idx.thread != thread:
			return nil, driver.DuplicateInThreadError(st.cp.ID, idx.thread)
		case !driver.EqualCheckpoints(cur, st.cp):
			return nil, driver.DuplicateContentError(st.cp.ID)
		}
	}
	return fresh, nil
}

// writeImport writes an Import batch's fresh checkpoints, its head (over
// head, the thread's current one) and its transcript, and lists the thread.
func (s *Driver) writeImport(tr kv.Transaction, b ckptstore.ImportBatch, fresh []*stored, head string, transcript []byte) {
	for _, st := range fresh {
		s.insert(tr, st, false)
	}
	if b.SetHead && head != b.Head {
		tr.Set(s.k.head(b.ThreadID), []byte(b.Head)) // head is "": b.Head is not
	}
	if transcript != nil {
		s.writeTranscript(tr, b.ThreadID, transcript)
	}
	if len(fresh) > 0 || (b.SetHead && b.Head != "") {
		tr.Set(s.k.listed(b.ThreadID), nil)
	}
}

// importCost estimates the transaction bytes of an Import of sts and the
// transcript (nil = none) into thread: the marker, the reads of the lease
// and head, and each insertion with its reads.
func (s *Driver) importCost(thread string, sts []*stored, transcript []byte) int {
	n := s.markerCost(thread) + costRead(s.k.lease(thread)) + costRead(s.k.head(thread))
	for _, st := range sts {
		n += s.insertCost(st)
	}
	if transcript != nil {
		n += s.transcriptCost(thread, len(transcript))
	}
	return n
}
