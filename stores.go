package ckptstore

import (
	"context"
)

// Store keeps chains of checkpoints per thread, their heads, writer leases
// and blob reference counts. Implementations are safe for concurrent use.
type Store interface {
	// Get returns the checkpoint, or nil and no error when id is not stored.
	// Checks: id (ErrInvalidID).
	Get(ctx context.Context, id string) (*Checkpoint, error)
	// List returns every checkpoint of the thread, also those off the head
	// chain, ordered by CompareCheckpoints; an unknown thread has none.
	// Checks: thread id (ErrInvalidID).
	List(ctx context.Context, threadID string) ([]*Checkpoint, error)
	// GetHead returns the thread's head id, or "" when it has none. After
	// pruning the head may name a checkpoint that no longer exists.
	// Checks: thread id (ErrInvalidID).
	GetHead(ctx context.Context, threadID string) (string, error)
	// Append stores cp and makes it the head of its thread when the head is
	// expectedHeadID, as one compare-and-swap, and adds a reference to each
	// of cp's blob keys. Checks, first failure wins (docs/contract.md):
	// ids, content, writer, id unused, head, parent.
	Append(ctx context.Context, cp *Checkpoint, expectedHeadID string, w Writer) error
	// DeleteHead removes the head checkpoint, moves the head to its parent
	// and drops a reference from each of its blob keys. Checks: ids,
	// writer, checkpoint is the head (ErrNotHead).
	DeleteHead(ctx context.Context, threadID, checkpointID string, w Writer) error
	// AcquireWriter takes the thread's writer lease without waiting, or
	// fails with ErrWriterConflict while another lease is live. Checks:
	// thread id, no live lease.
	AcquireWriter(ctx context.Context, threadID string) (*Lease, error)
	// ListBlobReferences returns every blob key with a count above 0, over all
	// threads, sorted by the key's bytes.
	ListBlobReferences(ctx context.Context) ([]BlobRef, error)
}

// Pruner is a Store that can delete old checkpoints of a thread.
type Pruner interface {
	// DeleteCheckpoints keeps the head and the keep−1 checkpoints before it
	// on the parent chain, deletes the older ones of that chain, and returns
	// their ids farthest from the head first. Checks: ids, keep ≥ 1
	// (ErrInvalidEntry), writer.
	DeleteCheckpoints(ctx context.Context, threadID string, keep int, w Writer) ([]string, error)
}

// Forker is a Store that can copy a checkpoint into a new, empty thread.
type Forker interface {
	// ForkFromCheckpoint copies the source checkpoint into the empty
	// destination thread as its root (reason fork-root, no parent) and makes
	// it the destination's head; a store with Transcripts also writes the
	// destination's transcript. Checks: ids, createdAt, distinct threads,
	// source exists, source in the source thread, writer, destination
	// empty (docs/contract.md).
	ForkFromCheckpoint(ctx context.Context, in ForkInput) (*Checkpoint, error)
}

// InstanceStore keeps one InstanceRecord per key.
type InstanceStore interface {
	// Get returns the record, or nil and no error when key is not stored.
	Get(ctx context.Context, key string) (*InstanceRecord, error)
	// Upsert replaces the whole record of rec.Key; the last write wins.
	Upsert(ctx context.Context, rec *InstanceRecord) error
	// Delete removes the record; a missing key is not an error.
	Delete(ctx context.Context, key string) error
}
