package fdbstore

import (
	"context"
	"fmt"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/fdbstore/kv"
)

// DeleteThread implements driver.Store. It deletes in batches
// from the oldest end (List order), each one transaction of at most
// Options.PruneBatch checkpoints within MaxTransactionBytes that checks
// the lease again; the batch that finds nothing more clears the head, the
// transcript and the thread's listed key. The lease, its fence and the op
// markers stay. After a failure it returns how many it deleted with the
// error, and the call can be repeated. Check order: ids (ErrInvalidID),
// writer (ErrWriterLost).
func (s *Driver) DeleteThread(ctx context.Context, threadID string, w ckptstore.Writer) (int, error) {
	if err := checkIDLengths(named("thread id", threadID), named("writer thread id", w.ThreadID)); err != nil {
		return 0, err
	}
	total := 0
	for {
		n, more, err := s.deleteThreadBatch(ctx, threadID, w)
		total += n
		if err != nil {
			if total == 0 {
				return 0, err
			}
			return total, fmt.Errorf("fdbstore: DeleteThread stopped after deleting %d checkpoints: %w", total, err)
		}
		if !more {
			return total, nil
		}
	}
}

// deleteThreadBatch is one transaction of DeleteThread: one read round
// (marker, lease, the oldest chunks of the thread), then the commit.
func (s *Driver) deleteThreadBatch(ctx context.Context, threadID string, w ckptstore.Writer) (n int, more bool, err error) {
	o := s.newOp(opDeleteThread, threadID)
	p := s.k.dataPrefix(threadID)
	limit := deleteReadLimit(s.opts.PruneBatch)
	err = s.db.Transact(ctx, func(tr kv.Transaction) error {
		r, err := s.startRound(tr, o, readLease)
		if err != nil {
			return err
		}
		dataf := tr.GetRange(rangeOf(p), kv.RangeOptions{Limit: limit})
		if done, _, err := r.done(); err != nil || done {
			return err // n and more are those of the attempt that committed
		}
		if err := r.checkWriter(w); err != nil {
			return err
		}
		kvs, err := dataf.Get()
		if err != nil {
			return err
		}
		groups, err := groupChunks(kvs, p, false)
		if err != nil {
			return err
		}
		whole := groups
		if len(kvs) == limit && len(groups) > 0 {
			whole = groups[:len(groups)-1] // the last may be cut by the limit
		}
		cps, err := decodeGroups(whole)
		if err != nil {
			return err
		}
		batch := cps[:s.deleteBatchSize(threadID, cps)]
		for _, cp := range batch {
			s.remove(tr, cp)
		}
		last := len(batch) == len(groups) && len(kvs) < limit
		if last {
			tr.Clear(s.k.head(threadID))
			tr.ClearRange(rangeOf(s.k.transcriptPrefix(threadID)))
			tr.Clear(s.k.listed(threadID))
		}
		if err := r.finish(tr, nil); err != nil {
			return err
		}
		n, more = len(batch), !last
		return nil
	})
	if err != nil {
		return 0, false, err
	}
	return n, more, nil
}

// maxChunksPerCheckpoint is the most chunks a stored checkpoint has: its
// value fits in one transaction.
var maxChunksPerCheckpoint = chunks(MaxTransactionBytes)

// deleteReadLimit is how many chunks one DeleteThread transaction reads:
// one more than a batch of single-chunk checkpoints, but at least enough
// to hold the largest checkpoint whole, and at most maxPruneReadBytes of
// full chunks.
func deleteReadLimit(pruneBatch int) int {
	return min(max(pruneBatch+1, maxChunksPerCheckpoint+1), maxPruneReadBytes/kv.MaxValueSize)
}

// deleteBatchSize is how many of cps (oldest first) one DeleteThread
// transaction deletes: at least one when there is one, at most
// Options.PruneBatch, and no more than fit in MaxTransactionBytes
// (deleteCost).
func (s *Driver) deleteBatchSize(threadID string, cps []*ckptstore.Checkpoint) int {
	cost := s.deleteCost(threadID, nil)
	n := 0
	for n < len(cps) && n < s.opts.PruneBatch {
		c := s.removeCost(threadID, cps[n].CreatedAt, cps[n].ID, "", len(cps[n].BlobKeys()))
		if n > 0 && cost+c > MaxTransactionBytes {
			break
		}
		cost += c
		n++
	}
	return n
}

// deleteCost estimates the transaction bytes of one DeleteThread batch
// that deletes cps: the marker, the reads of the lease and the data, the
// removals, and the clears of the head, transcript and listed key.
func (s *Driver) deleteCost(threadID string, cps []*ckptstore.Checkpoint) int {
	n := s.markerCost(threadID) + costRead(s.k.lease(threadID)) + costRange(rangeOf(s.k.dataPrefix(threadID))) +
		costClear(s.k.head(threadID)) + costRange(rangeOf(s.k.transcriptPrefix(threadID))) + costClear(s.k.listed(threadID))
	for _, cp := range cps {
		n += s.removeCost(threadID, cp.CreatedAt, cp.ID, "", len(cp.BlobKeys()))
	}
	return n
}
