package ckptstore

import (
	"context"
	"encoding/json"
	"iter"
	"time"

	"github.com/ckptstore/ckptstore/contract"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/internal/seqs"
)

// Store is the portable checkpoint store, over a backend's driver:
// memstore.New, fdbstore.New and redisstore.New return one, and
// httpstore.NewClient one inside its Client. It runs
// every rule of docs/contract.md that needs no state — ids, content,
// limits, cursors, the writer's thread, the context and the caller's op
// token — once, in contract order, and leaves the state checks to the
// driver, inside its atomic step. It is safe for concurrent use.
type Store struct {
	d driver.Store
}

// New returns the store over the driver d. Backends call it from their
// constructors; a harness gets its store from one of them.
func New(d driver.Store) *Store { return &Store{d: d} }

// opToken returns the caller's op token, "" for none, or ErrInvalidEntry
// for one that is not well formed: it would become an owner token, and a
// malformed one is a caller's bug.
func opToken(ctx context.Context) (string, error) { return contract.CheckOpToken(ctx, ErrInvalidEntry) }

// Get returns the checkpoint, or nil and no error when id is not stored.
// Checks: id (ErrInvalidID).
func (s *Store) Get(ctx context.Context, id string) (*Checkpoint, error) {
	if err := checkRead(ctx, "checkpoint id", id); err != nil {
		return nil, err
	}
	return s.d.Get(ctx, id)
}

// List returns every checkpoint of the thread, also those off the head
// chain, in List order; an unknown thread has none. Checks: thread id.
func (s *Store) List(ctx context.Context, threadID string) ([]*Checkpoint, error) {
	if err := checkRead(ctx, "thread id", threadID); err != nil {
		return nil, err
	}
	return s.d.List(ctx, threadID)
}

// GetHead returns the thread's head id, or "" when it has none. After pruning
// it may name a checkpoint that no longer exists. Checks: thread id.
func (s *Store) GetHead(ctx context.Context, threadID string) (string, error) {
	if err := checkRead(ctx, "thread id", threadID); err != nil {
		return "", err
	}
	return s.d.GetHead(ctx, threadID)
}

// Append stores cp and makes it the head of its thread when the head is
// expectedHeadID, as one compare-and-swap, and adds a reference to each of
// cp's blob keys. Checks, first failure wins: ids, content, writer, id
// unused, head, parent.
func (s *Store) Append(ctx context.Context, cp *Checkpoint, expectedHeadID string, w Writer) error {
	if err := checkAppend(ctx, cp, expectedHeadID, w); err != nil {
		return err
	}
	token, err := opToken(ctx)
	if err != nil {
		return err
	}
	return s.d.Append(ctx, cp, expectedHeadID, w, token)
}

// AppendDecoded is Append for a checkpoint decoded by a
// driver.JSONReader (Decoded): the same checks, but its conversation,
// which the reader validated as it read it, is not scanned a second time.
func (s *Store) AppendDecoded(ctx context.Context, d Decoded, expectedHeadID string, w Writer) error {
	cp := d.Checkpoint()
	if err := checkAppendChecked(ctx, cp, driver.ValidateAppendDecoded(d, expectedHeadID, w), w); err != nil {
		return err
	}
	token, err := opToken(ctx)
	if err != nil {
		return err
	}
	return s.d.Append(ctx, cp, expectedHeadID, w, token)
}

// DeleteHead removes the head checkpoint, moves the head to its parent and
// drops a reference from each of its blob keys. Checks: ids, writer, the
// checkpoint is the head (ErrNotHead).
func (s *Store) DeleteHead(ctx context.Context, threadID, checkpointID string, w Writer) error {
	if err := checkDeleteHead(ctx, threadID, checkpointID, w); err != nil {
		return err
	}
	token, err := opToken(ctx)
	if err != nil {
		return err
	}
	return s.d.DeleteHead(ctx, threadID, checkpointID, w, token)
}

// AcquireWriter takes the thread's writer lease without waiting, or fails
// with ErrWriterConflict while another lease is live. Checks: thread id, no
// live lease.
func (s *Store) AcquireWriter(ctx context.Context, threadID string) (*Lease, error) {
	if err := checkAcquireWriter(ctx, threadID); err != nil {
		return nil, err
	}
	token, err := opToken(ctx)
	if err != nil {
		return nil, err
	}
	l, err := s.d.AcquireWriter(ctx, threadID, token)
	if err != nil {
		return nil, err
	}
	return driver.NewLease(l.Writer, l.ExpiresAt, l.RenewAfter, s), nil
}

// Renew extends w's lease to now + the lease duration and returns
// the new expiry; ErrWriterLost when w is no longer the live lease.
func (s *Store) Renew(ctx context.Context, w Writer) (time.Time, error) {
	if err := checkRenew(ctx, w); err != nil {
		return time.Time{}, err
	}
	return s.d.Renew(ctx, w)
}

// Release ends w's lease when it is still the thread's lease and
// does nothing otherwise; an error means the backend could not be reached.
func (s *Store) Release(ctx context.Context, w Writer) error {
	if ok, err := checkRelease(ctx, w); !ok || err != nil {
		return err
	}
	return s.d.Release(ctx, w)
}

// ListBlobReferences returns every blob key with a count above 0, over all
// threads, in byte order.
func (s *Store) ListBlobReferences(ctx context.Context) ([]BlobRef, error) {
	return seqs.Collect(s.BlobReferencesSeq(ctx))
}

// BlobReferencesSeq yields what ListBlobReferences returns, streamed as the
// backend reads it (in pages in the database-backed stores), so that a
// sweep never holds every reference (sweep.RefLister).
func (s *Store) BlobReferencesSeq(ctx context.Context) iter.Seq2[BlobRef, error] {
	if err := ctx.Err(); err != nil {
		return func(yield func(BlobRef, error) bool) { yield(BlobRef{}, err) }
	}
	return s.d.ListBlobReferences(ctx)
}

// DeleteCheckpoints keeps the head and the keep−1 checkpoints before it on
// the parent chain, deletes the older ones of that chain, and returns their
// ids farthest from the head first. Checks: ids, keep ≥ 1
// (ErrInvalidEntry), writer.
func (s *Store) DeleteCheckpoints(ctx context.Context, threadID string, keep int, w Writer) ([]string, error) {
	if err := checkDeleteCheckpoints(ctx, threadID, keep, w); err != nil {
		return nil, err
	}
	return s.d.DeleteCheckpoints(ctx, threadID, keep, w)
}

// ForkFromCheckpoint copies the source checkpoint into the empty
// destination thread as its root (reason fork-root, no parent), makes it
// the destination's head and sets the destination's transcript to its
// conversation. Checks: ids, createdAt, distinct threads, source exists,
// source in the source thread, writer, destination empty.
func (s *Store) ForkFromCheckpoint(ctx context.Context, in ForkInput) (*Checkpoint, error) {
	if err := checkFork(ctx, in); err != nil {
		return nil, err
	}
	token, err := opToken(ctx)
	if err != nil {
		return nil, err
	}
	return s.d.ForkFromCheckpoint(ctx, driver.Fork{
		ForkInput:       in,
		OpToken:         token,
		WriterThreadErr: checkWriterThread(in.Writer, in.DestinationThreadID),
	})
}

// LoadThread returns the thread's transcript, or "[]" when none was saved.
// Checks: thread id.
func (s *Store) LoadThread(ctx context.Context, threadID string) (json.RawMessage, error) {
	if err := checkLoadThread(ctx, threadID); err != nil {
		return nil, err
	}
	return s.d.LoadThread(ctx, threadID)
}

// SaveThread replaces the thread's whole transcript with messages, a JSON
// array kept byte for byte. It needs no lease. Checks: thread id, messages
// a JSON array (ErrInvalidEntry).
func (s *Store) SaveThread(ctx context.Context, threadID string, messages json.RawMessage) error {
	if err := checkSaveThread(ctx, threadID, messages); err != nil {
		return err
	}
	return s.d.SaveThread(ctx, threadID, messages)
}

// SaveTranscript is SaveThread for a transcript that was validated as it
// was decoded (driver.JSONReader.Transcript, driver.CheckTranscript): the
// store gets its bytes as they came in, without a second pass over them.
// Checks: thread id.
func (s *Store) SaveTranscript(ctx context.Context, threadID string, t Transcript) error {
	if err := checkSaveTranscript(ctx, threadID, t); err != nil {
		return err
	}
	return s.d.SaveThread(ctx, threadID, t.Bytes())
}

// DeleteThread removes every checkpoint of the thread (on and off the head
// chain), its head and its transcript, drops their blob counts, and
// returns how many checkpoints it removed. The lease stays. Checks: ids,
// writer.
func (s *Store) DeleteThread(ctx context.Context, threadID string, w Writer) (int, error) {
	if err := checkDeleteThread(ctx, threadID, w); err != nil {
		return 0, err
	}
	return s.d.DeleteThread(ctx, threadID, w)
}

// ListPage returns at most opt.Limit checkpoints of the thread in List
// order (or its reverse) strictly after the cursor opt.After, and the
// cursor of the next page ("" when nothing follows). Checks: thread id,
// limit, cursor (ErrInvalidEntry).
func (s *Store) ListPage(ctx context.Context, threadID string, opt ListOptions) ([]*Checkpoint, string, error) {
	p, err := checkListPage(ctx, threadID, opt)
	if err != nil {
		return nil, "", err
	}
	return s.d.ListPage(ctx, threadID, p)
}

// Threads returns, in byte order, at most limit ids of the threads that
// have a head, a checkpoint or a transcript, strictly after the cursor
// after, and the next cursor ("" when nothing follows). Checks: limit,
// cursor (ErrInvalidEntry). For operators, not for hot paths.
func (s *Store) Threads(ctx context.Context, after string, limit int) ([]string, string, error) {
	p, err := checkThreads(ctx, after, limit)
	if err != nil {
		return nil, "", err
	}
	return s.d.Threads(ctx, p)
}

// Import stores the batch in one atomic step, exactly as given, and
// returns how many checkpoints it newly wrote. A repeated batch writes
// nothing and succeeds. Checks: ids, content, writer, ids unused elsewhere
// or stored equal (ErrDuplicateID), head (ErrConflict).
func (s *Store) Import(ctx context.Context, b ImportBatch) (int, error) {
	if err := checkImport(ctx, b); err != nil {
		return 0, err
	}
	return s.d.Import(ctx, b)
}

// Driver returns the backend the store runs over, for a backend's own
// operations beyond the contract (a consistency check).
func (s *Store) Driver() driver.Store { return s.d }

// InstanceStore is the portable instance store, over a backend's driver:
// it checks keys and records (ErrInvalidID, ErrInvalidEntry) and the
// context, and hands the rest to the driver.
type InstanceStore struct {
	d driver.InstanceStore
}

// NewInstanceStore returns the instance store over d.
func NewInstanceStore(d driver.InstanceStore) *InstanceStore {
	return &InstanceStore{d: d}
}

// Get returns the record, or nil and no error when key is not stored.
func (s *InstanceStore) Get(ctx context.Context, key string) (*InstanceRecord, error) {
	if err := checkInstanceKey(ctx, key); err != nil {
		return nil, err
	}
	return s.d.Get(ctx, key)
}

// Upsert replaces the whole record of rec.Key; the last write wins.
func (s *InstanceStore) Upsert(ctx context.Context, rec *InstanceRecord) error {
	if err := checkInstanceUpsert(ctx, rec); err != nil {
		return err
	}
	return s.d.Upsert(ctx, rec)
}

// Delete removes the record; a missing key is not an error.
func (s *InstanceStore) Delete(ctx context.Context, key string) error {
	if err := checkInstanceKey(ctx, key); err != nil {
		return err
	}
	return s.d.Delete(ctx, key)
}
