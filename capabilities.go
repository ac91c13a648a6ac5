package ckptstore

// The optional capabilities beyond Store, Pruner and Forker: thread
// transcripts, DeleteThread, paged List, thread listing and import. Each is
// its own interface, so a store implements what it can and callers (the
// conformance suite, httpstore, ckptctl) discover it with a type assertion.
// docs/contract.md gives the rules and check orders.

import (
	"context"
	"encoding/json"
)

// Transcripts is a store that keeps each thread's transcript: the
// conversation as the harness keeps it between checkpoints (TanStack's
// persistence "messages" store). A store with transcripts checks and writes
// them in ForkFromCheckpoint, in the same atomic step as the fork.
type Transcripts interface {
	// LoadThread returns the thread's transcript, or "[]" when none was
	// saved. Check order: thread id (ErrInvalidID).
	LoadThread(ctx context.Context, threadID string) (json.RawMessage, error)
	// SaveThread replaces the thread's whole transcript with messages, a
	// JSON array kept byte for byte. It needs no lease. Check order: thread
	// id (ErrInvalidID), messages a JSON array (ErrInvalidEntry).
	SaveThread(ctx context.Context, threadID string, messages json.RawMessage) error
}

// ThreadDeleter is a store that can delete a whole thread.
type ThreadDeleter interface {
	// DeleteThread removes every checkpoint of the thread (on and off the
	// head chain), its head and its transcript, drops their blob counts,
	// and returns how many checkpoints it removed. The lease stays. Check
	// order: ids (ErrInvalidID), writer (ErrWriterLost). A thread too large
	// for one atomic step is deleted in batches from the oldest end, each
	// checking the lease; after a failure the call can be repeated.
	DeleteThread(ctx context.Context, threadID string, w Writer) (int, error)
}

// Pager is a store that can list a thread one page at a time.
type Pager interface {
	// ListPage returns at most opt.Limit checkpoints of the thread in List
	// order (or its reverse) strictly after the cursor opt.After, and the
	// cursor of the next page ("" when nothing follows). A cursor names a
	// position (createdAt, id), so paging stays correct while checkpoints
	// are added and deleted. Check order: thread id (ErrInvalidID), limit,
	// cursor (ErrInvalidEntry).
	ListPage(ctx context.Context, threadID string, opt ListOptions) ([]*Checkpoint, string, error)
}

// ThreadLister is a store that can enumerate its threads.
type ThreadLister interface {
	// Threads returns, in byte order, at most limit ids of the threads that
	// have a head, a checkpoint or a transcript, strictly after the cursor
	// after, and the next cursor ("" when nothing follows). limit is 1 to
	// MaxPageLimit, 0 for DefaultPageLimit. Check order: limit, cursor
	// (ErrInvalidEntry). For operators, not for hot paths.
	Threads(ctx context.Context, after string, limit int) ([]string, string, error)
}

// Importer is a store that can take checkpoints exactly as another store
// holds them. Import is idempotent: repeating a batch that was stored (in
// whole, as every batch is one atomic step) writes nothing and succeeds, so
// an interrupted migration resumes by sending its batches again.
type Importer interface {
	// Import stores the batch in one atomic step and returns how many
	// checkpoints it newly wrote; each adds its blob counts as in Append.
	// Check order: ids (thread, writer thread, every checkpoint's ids and
	// the head: ErrInvalidID), content (every checkpoint valid and of
	// ThreadID, the transcript a JSON array: ErrInvalidEntry), writer
	// (ErrWriterLost), ids (a checkpoint id stored in another thread or
	// with other content: ErrDuplicateID), head (with SetHead, a thread
	// whose head is neither "" nor Head: ErrConflict).
	Import(ctx context.Context, b ImportBatch) (int, error)
}
