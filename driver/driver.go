// Package driver is the implementer's side of ckptstore: the one interface
// a backend implements (Store, and InstanceStore for its instance records),
// the contract's types, sentinel errors and wire codes, and the helpers
// that only backends and the wire need (validation, cursors, op tokens,
// JSON, millisecond numbers). Harnesses use package ckptstore, whose
// portable *ckptstore.Store runs every rule that needs no state, once, and
// then calls a driver; package ckptstore aliases the types a harness needs,
// so a driver's values and a harness's are the same.
//
// This is the shape of gocloud.dev's blob.Bucket over blob/driver.Bucket:
// the portable type is what users hold, the driver is what a backend
// writes, and the split keeps every rule that needs no state in one place.
//
// # What a driver may assume
//
// The portable store calls a driver method only after it has, in the order
// of docs/contract.md:
//
//   - checked every id (ErrInvalidID), the checkpoint's and the batch's
//     content, limits and cursors (ErrInvalidEntry), and the writer's
//     thread against the thread written (ErrWriterLost): the steps marked
//     pure in the contract's check order. A driver never calls a Validate
//     function; the one pure check that comes after state checks, the
//     fork's writer thread, arrives precomputed as Fork.WriterThreadErr,
//     which the driver returns at its place in the order.
//   - found the context not done (a driver may still see it end, and then
//     fails with its error having changed nothing);
//   - checked the caller's op token (ckptstore.WithOpToken) and passed it
//     explicitly: "" when there is none, else a valid one (ValidOpToken); a
//     driver does not read the context for it;
//   - resolved page limits and decoded cursors (Page, ThreadPage).
//
// And it promises the driver that the caller neither changes nor keeps an
// input while the call runs: a driver may read a checkpoint, a batch or a
// transcript without copying it first, but must copy what it keeps beyond
// the call. In return a driver's outputs belong to the caller: a
// checkpoint, slice or transcript it returns shares no memory with what it
// stores, so the portable store hands them on without cloning.
//
// A driver runs the state checks — the writer's lease is live, the id is
// unused, the head and the parent are expected, the fork's source and
// destination, Import's ids and head — inside its one atomic step (its lock,
// transaction or script), in the contract's order, and changes nothing when
// one fails. It honours a given op token as docs/contract.md says: a repeat
// of a committed Append, DeleteHead, ForkFromCheckpoint or AcquireWriter
// reports that call's success.
package driver

import (
	"context"
	"encoding/json"
	"iter"
	"time"
)

// Store is the backend of a ckptstore.Store: every method of the contract,
// with its inputs checked as the package comment says. Its methods carry
// the names of the TanStack contract and of the wire (docs/contract.md,
// "One name per operation"). Implementations are safe for concurrent use.
type Store interface {
	// Get returns the checkpoint, or nil and no error when id is not stored.
	Get(ctx context.Context, id string) (*Checkpoint, error)
	// List returns every checkpoint of the thread, also those off the head
	// chain, in List order (CompareCheckpoints); an unknown thread has none.
	List(ctx context.Context, threadID string) ([]*Checkpoint, error)
	// GetHead returns the thread's head id, or "" when it has none.
	GetHead(ctx context.Context, threadID string) (string, error)
	// Append stores cp and makes it the head, as one compare-and-swap, and
	// adds a reference to each of its blob keys. State checks, in order:
	// writer live, id unused in every thread, head, parent.
	Append(ctx context.Context, cp *Checkpoint, expectedHeadID string, w Writer, opToken string) error
	// DeleteHead removes the head, moves the head to its stored parent and
	// drops its blob references. State checks: writer live, the checkpoint
	// is the head and stored in this thread (ErrNotHead).
	DeleteHead(ctx context.Context, threadID, checkpointID string, w Writer, opToken string) error
	// AcquireWriter takes the thread's writer lease without waiting
	// (ErrWriterConflict while another is live). With an op token, the
	// token is the lease's owner token; without, the driver draws a random
	// one.
	AcquireWriter(ctx context.Context, threadID, opToken string) (Lease, error)
	// Renew extends w's lease to now + the lease duration and returns the
	// new expiry (ErrWriterLost when w is not the live lease).
	Renew(ctx context.Context, w Writer) (time.Time, error)
	// Release ends w's lease when it is still the thread's lease, and does
	// nothing otherwise; an error means the backend could not be reached.
	Release(ctx context.Context, w Writer) error
	// ListBlobReferences yields every blob key with a count above 0, each
	// once, in strictly ascending byte order; an error ends the sequence.
	// It need not be one snapshot (a driver may read it in pages), but a
	// key referenced for the whole iteration must be yielded: the sweep
	// streams millions of keys through it.
	ListBlobReferences(ctx context.Context) iter.Seq2[BlobRef, error]
	// DeleteCheckpoints keeps the head and the keep−1 checkpoints before it
	// on the parent chain and deletes the older ones, returning their ids
	// farthest from the head first. State check: writer live.
	DeleteCheckpoints(ctx context.Context, threadID string, keep int, w Writer) ([]string, error)
	// ForkFromCheckpoint stores ForkRoot(source, f.ForkInput) as the root
	// and head of the empty destination thread, and sets its transcript to
	// the root's conversation. State checks, in order: source stored
	// (ErrForkSourceNotFound), source in the source thread
	// (ErrForkSourceThreadMismatch), f.WriterThreadErr, writer live,
	// destination empty (ErrForkDestinationNotEmpty).
	ForkFromCheckpoint(ctx context.Context, f Fork) (*Checkpoint, error)
	// LoadThread returns the thread's transcript, or EmptyTranscript().
	LoadThread(ctx context.Context, threadID string) (json.RawMessage, error)
	// SaveThread replaces the thread's transcript with messages.
	SaveThread(ctx context.Context, threadID string, messages json.RawMessage) error
	// DeleteThread removes the thread's checkpoints, head and transcript,
	// and returns how many checkpoints went. State check: writer live, in
	// every batch.
	DeleteThread(ctx context.Context, threadID string, w Writer) (int, error)
	// ListPage returns the page p of the thread and the next cursor
	// (p.Next).
	ListPage(ctx context.Context, threadID string, p Page) ([]*Checkpoint, string, error)
	// Threads returns the page p of thread ids and the next cursor (p.Next).
	Threads(ctx context.Context, p ThreadPage) ([]string, string, error)
	// Import stores the batch as given and returns how many checkpoints it
	// newly wrote. State checks, in order: writer live, each id unused
	// elsewhere or stored here equal (ErrDuplicateID), with SetHead the head
	// "" or already b.Head (ErrConflict).
	Import(ctx context.Context, b ImportBatch) (int, error)
}

// Fork is a checked ForkFromCheckpoint request.
type Fork struct {
	ForkInput
	// OpToken is the caller's op token, or "".
	OpToken string
	// WriterThreadErr is ErrWriterLost, wrapped, when the writer is not of
	// the destination thread, and nil otherwise: a pure check that the
	// contract places after the source checks, so the driver returns it
	// there, before it checks the lease.
	WriterThreadErr error
}

// InstanceStore is the backend of a ckptstore.InstanceStore. Keys and
// records arrive checked (ErrInvalidID, ErrInvalidEntry) and the context
// not done; the record is the driver's to read during the call only.
type InstanceStore interface {
	// Get returns the record, or nil and no error when key is not stored.
	Get(ctx context.Context, key string) (*InstanceRecord, error)
	// Upsert replaces the whole record of rec.Key.
	Upsert(ctx context.Context, rec *InstanceRecord) error
	// Delete removes the record; a missing key is not an error.
	Delete(ctx context.Context, key string) error
}
