package fdbstore

// Transaction size estimates. FoundationDB refuses a transaction whose
// mutations and conflict ranges pass 10,000,000 bytes; the writes check
// their estimate against MaxTransactionBytes before they write anything,
// so a checkpoint that could not be stored, or not deleted again, fails
// with ErrInvalidEntry instead of transaction_too_large. Each estimate is
// an upper bound of FoundationDB's accounting: a mutation costs its key
// and value, a write conflict range its key twice (begin and end), a read
// conflict range its begin and end.

import (
	"fmt"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/fdbstore/kv"
)

func costSet(key []byte, valueLen int) int { return 3*len(key) + valueLen + 1 }
func costAtomic(key []byte) int            { return 3*len(key) + 9 }
func costClear(key []byte) int             { return 4*len(key) + 2 }
func costRead(key []byte) int              { return 2*len(key) + 1 }
func costRange(r kv.KeyRange) int          { return 2 * (len(r.Begin) + len(r.End)) }

// chunks is how many values of at most kv.MaxValueSize bytes n bytes take
// (one, for an empty value).
func chunks(n int) int { return max(1, (n+kv.MaxValueSize-1)/kv.MaxValueSize) }

// longestBlobRef is the reference key of the longest blob key kind
// (sandbox-artifacts/sha256/<64 hex>); every blob key is at most as long.
func (s *Driver) longestBlobRef() []byte {
	return s.k.ref("sandbox-artifacts/sha256/0000000000000000000000000000000000000000000000000000000000000000")
}

// insertCost estimates the transaction bytes of inserting st: its chunks,
// the copy under its index when st.copied, the index, link and head, +1 on
// each blob count, and the reads of the index, head and lease. The op's
// marker is not included (markerCost).
func (s *Driver) insertCost(st *stored) int {
	n := 0
	for _, k := range st.chunkKeys {
		n += costSet(k, 0)
	}
	n += len(st.enc)
	if st.copied {
		for _, k := range st.copyKeys {
			n += costSet(k, 0)
		}
		n += len(st.enc)
	}
	n += costSet(st.indexKey, len(st.cp.ThreadID)+24)
	n += costSet(st.linkKey, len(st.cp.ParentCheckpointID)+40)
	n += costSet(st.headKey, len(st.cp.ID))
	n += costSet(s.k.listed(st.cp.ThreadID), 0)
	n += costRange(s.k.idRange(st.cp.ID)) + costRead(st.headKey) + costRead(st.leaseKey)
	for _, k := range st.refKeys {
		n += costAtomic(k)
	}
	return n
}

// removeCost estimates the transaction bytes of deleting one checkpoint of
// thread with the given ids and number of blob keys: the range clears of
// its chunks and of its index and copy, the link, the read of its index
// and copy, a new head, and −1 and compare-and-clear per blob key.
func (s *Driver) removeCost(thread string, createdAt float64, id, parent string, blobs int) int {
	data := rangeOf(s.k.checkpointPrefix(thread, createdAt, id))
	idr := s.k.idRange(id)
	n := costRange(data) + costRange(idr) + // the clears
		costRange(idr) + // the read
		costClear(s.k.link(thread, id)) + costSet(s.k.head(thread), len(parent))
	return n + blobs*2*costAtomic(s.longestBlobRef())
}

// transcriptCost estimates the transaction bytes of replacing thread's
// transcript with n bytes: the range clear, every chunk and the listed key.
func (s *Driver) transcriptCost(thread string, n int) int {
	return costRange(rangeOf(s.k.transcriptPrefix(thread))) +
		chunks(n)*costSet(s.k.transcriptChunk(thread, maxChunksPerCheckpoint), 0) + n +
		costSet(s.k.listed(thread), 0)
}

// fit decides whether st keeps a copy under its index and checks that it
// can be inserted, with extra bytes of the write's own, and deleted again,
// each in one transaction: ErrInvalidEntry otherwise. The copy is kept
// when it fits, which is every checkpoint up to about 4.4 MB, unless
// Options.SingleCopy.
func (s *Driver) fit(st *stored, extra int) error {
	cp := st.cp
	del := s.removeCost(cp.ThreadID, cp.CreatedAt, cp.ID, cp.ParentCheckpointID, len(st.blobs)) +
		s.markerCost(cp.ThreadID) + costRead(st.leaseKey) + costRead(st.headKey)
	base := extra + s.markerCost(cp.ThreadID)
	st.copied = !s.opts.SingleCopy
	ins := s.insertCost(st) + base
	if st.copied && ins > MaxTransactionBytes {
		st.copied = false
		ins = s.insertCost(st) + base
	}
	if n := max(ins, del); n > MaxTransactionBytes {
		return fmt.Errorf("%w: checkpoint %s is too large for one FoundationDB transaction: about %d bytes (encoding %d bytes, %d distinct blob keys), more than fdbstore's limit of %d",
			ckptstore.ErrInvalidEntry, driver.QuoteShort(cp.ID), n, len(st.enc), len(st.blobs), MaxTransactionBytes)
	}
	return nil
}
