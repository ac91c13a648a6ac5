package conformance

// The seam the suites test through: the method sets they exercise, as
// interfaces, so that a test can hand them a wrapped store (the behavioural
// mutants of internal/mutation, a store that fails on purpose). Every
// backend's constructor returns a *ckptstore.Store, which implements Store;
// its instance store, a *ckptstore.InstanceStore, implements InstanceStore.

import (
	"context"
	"encoding/json"
	"time"

	"github.com/ckptstore/ckptstore"
)

// Store is what RunStore tests: every method of the contract
// (docs/contract.md), none optional. Implementations are safe for
// concurrent use.
type Store interface {
	// Get returns the checkpoint, or nil and no error when id is not stored.
	// Checks: id (ErrInvalidID).
	Get(ctx context.Context, id string) (*ckptstore.Checkpoint, error)
	// List returns every checkpoint of the thread, also those off the head
	// chain, ordered by CompareCheckpoints; an unknown thread has none.
	// Checks: thread id (ErrInvalidID).
	List(ctx context.Context, threadID string) ([]*ckptstore.Checkpoint, error)
	// GetHead returns the thread's head id, or "" when it has none. After
	// pruning the head may name a checkpoint that no longer exists.
	// Checks: thread id (ErrInvalidID).
	GetHead(ctx context.Context, threadID string) (string, error)
	// Append stores cp and makes it the head of its thread when the head is
	// expectedHeadID, as one compare-and-swap, and adds a reference to each
	// of cp's blob keys. Checks, first failure wins (docs/contract.md):
	// ids, content, writer, id unused, head, parent.
	Append(ctx context.Context, cp *ckptstore.Checkpoint, expectedHeadID string, w ckptstore.Writer) error
	// DeleteHead removes the head checkpoint, moves the head to its parent
	// and drops a reference from each of its blob keys. Checks: ids,
	// writer, checkpoint is the head (ErrNotHead).
	DeleteHead(ctx context.Context, threadID, checkpointID string, w ckptstore.Writer) error
	// AcquireWriter takes the thread's writer lease without waiting, or
	// fails with ErrWriterConflict while another lease is live. Checks:
	// thread id, no live lease.
	AcquireWriter(ctx context.Context, threadID string) (*ckptstore.Lease, error)
	// ListBlobReferences returns every blob key with a count above 0, over all
	// threads, sorted by the key's bytes.
	ListBlobReferences(ctx context.Context) ([]ckptstore.BlobRef, error)
	// Renew extends w's lease to now + lease duration and returns the
	// new expiry, or fails with ErrWriterLost when w is no longer the
	// thread's live lease.
	Renew(ctx context.Context, w ckptstore.Writer) (time.Time, error)
	// Release ends w's lease when it is still the thread's lease, and
	// does nothing otherwise. An error means the store could not be reached;
	// the lease then simply expires.
	Release(ctx context.Context, w ckptstore.Writer) error
	// DeleteCheckpoints keeps the head and the keep−1 checkpoints before it
	// on the parent chain, deletes the older ones of that chain, and returns
	// their ids farthest from the head first. Checks: ids, keep ≥ 1
	// (ErrInvalidEntry), writer.
	DeleteCheckpoints(ctx context.Context, threadID string, keep int, w ckptstore.Writer) ([]string, error)
	// ForkFromCheckpoint copies the source checkpoint into the empty
	// destination thread as its root (reason fork-root, no parent) and makes
	// it the destination's head; a store with Transcripts also writes the
	// destination's transcript. Checks: ids, createdAt, distinct threads,
	// source exists, source in the source thread, writer, destination
	// empty (docs/contract.md).
	ForkFromCheckpoint(ctx context.Context, in ckptstore.ForkInput) (*ckptstore.Checkpoint, error)
	// LoadThread returns the thread's transcript, or "[]" when none was
	// saved. Check order: thread id (ErrInvalidID).
	LoadThread(ctx context.Context, threadID string) (json.RawMessage, error)
	// SaveThread replaces the thread's whole transcript with messages, a
	// JSON array kept byte for byte. It needs no lease. Check order: thread
	// id (ErrInvalidID), messages a JSON array (ErrInvalidEntry).
	SaveThread(ctx context.Context, threadID string, messages json.RawMessage) error
	// DeleteThread removes every checkpoint of the thread (on and off the
	// head chain), its head and its transcript, drops their blob counts,
	// and returns how many checkpoints it removed. The lease stays. Check
	// order: ids (ErrInvalidID), writer (ErrWriterLost). A thread too large
	// for one atomic step is deleted in batches from the oldest end, each
	// checking the lease; after a failure the call can be repeated.
	DeleteThread(ctx context.Context, threadID string, w ckptstore.Writer) (int, error)
	// ListPage returns at most opt.Limit checkpoints of the thread in List
	// order (or its reverse) strictly after the cursor opt.After, and the
	// cursor of the next page ("" when nothing follows). A cursor names a
	// position (createdAt, id), so paging stays correct while checkpoints
	// are added and deleted. Check order: thread id (ErrInvalidID), limit,
	// cursor (ErrInvalidEntry).
	ListPage(ctx context.Context, threadID string, opt ckptstore.ListOptions) ([]*ckptstore.Checkpoint, string, error)
	// Threads returns, in byte order, at most limit ids of the threads that
	// have a head, a checkpoint or a transcript, strictly after the cursor
	// after, and the next cursor ("" when nothing follows). limit is 1 to
	// MaxPageLimit, 0 for DefaultPageLimit. Check order: limit, cursor
	// (ErrInvalidEntry). For operators, not for hot paths.
	Threads(ctx context.Context, after string, limit int) ([]string, string, error)
	// Import stores the batch in one atomic step and returns how many
	// checkpoints it newly wrote; each adds its blob counts as in Append.
	// Check order: ids (thread, writer thread, every checkpoint's ids and
	// the head: ErrInvalidID), content (every checkpoint valid and of
	// ThreadID, the transcript a JSON array: ErrInvalidEntry), writer
	// (ErrWriterLost), ids (a checkpoint id stored in another thread or
	// with other content: ErrDuplicateID), head (with SetHead, a thread
	// whose head is neither "" nor Head: ErrConflict).
	Import(ctx context.Context, b ckptstore.ImportBatch) (int, error)
}

// InstanceStore is what RunInstanceStore tests.
type InstanceStore interface {
	// Get returns the record, or nil and no error when key is not stored.
	// Checks: key (ErrInvalidID).
	Get(ctx context.Context, key string) (*ckptstore.InstanceRecord, error)
	// Upsert replaces the whole record of rec.Key; the last write wins.
	// Checks: key (ErrInvalidID), record (ErrInvalidEntry).
	Upsert(ctx context.Context, rec *ckptstore.InstanceRecord) error
	// Delete removes the record; a missing key is not an error. Checks: key
	// (ErrInvalidID).
	Delete(ctx context.Context, key string) error
}
