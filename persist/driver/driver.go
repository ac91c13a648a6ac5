// Package driver is the interface a backend implements to hold TanStack AI's
// persistence state (runs, generation runs, interrupts, metadata, artifact
// records, blob metadata and lock leases). Users never call a driver: they
// use the portable stores of package persist, which sit on a Driver as
// gocloud's blob.Bucket sits on blob/driver.Bucket. docs/persistence.md
// states the contract; this package states what a driver must do and what it
// may assume.
//
// # What a driver may assume
//
// The portable layer calls a driver only after it has done, once and in the
// documented order, everything that needs no state:
//
//   - Every argument passed the pure checks of its method: ids are 1 to
//     MaxIDBytes of valid UTF-8, statuses are one of their values, numbers
//     are safe integers (|n| ≤ 2^53−1) and not negative where time spans or
//     sizes are meant, JSON values are valid JSON of the right kind
//     (nested at most contract.MaxJSONDepth levels), each JSON value and
//     text of a record is within MaxValueBytes, a patch
//     never clears a required field, a commit batch is non-empty and names
//     each interrupt once, a list limit is 1 to MaxListLimit.
//   - ctx was not done when the call began. A driver passes it to its
//     transport and nothing more.
//   - Records handed to the driver are the driver's to keep: the portable
//     layer never reads or changes them after the call.
//   - Records the driver returns are read-only for the portable layer, which
//     copies them before they reach a user (clone-on-read happens once, in
//     the portable layer).
//   - Times the contract stamps on records (an interrupt's resolvedAt, a
//     blob's createdAt and updatedAt) arrive as inputs, so a retried
//     transaction writes the same values.
//
// # What a driver must do
//
//   - Each method is one atomic step: its state checks and its write happen
//     in one transaction (fdbstore), one script (redisstore) or under one
//     lock (memstore). A method that returns an error has changed nothing.
//   - A stored record is never modified in place after it was stored or
//     returned: an update stores a new value. (This is what lets the portable
//     layer copy a returned record without holding the driver's lock.)
//   - Lock leases expire by the driver's own clock (the store's clock): a
//     lease is live while the store's now is before its expiry. It is the
//     only decision a driver makes with a clock.
//   - A driver never waits for a lock and never sleeps. Lock waiting, renewal
//     and the abort signal belong to the portable layer, which a driver helps
//     only through WatchLock.
//   - Blob bytes never pass through a driver: it keeps the metadata row and
//     the name of the bucket object that holds the bytes.
//   - Errors for contract violations wrap one of this package's sentinels;
//     any other error is a transport or storage failure.
package driver

import (
	"context"
	"encoding/json"
	"time"

	"github.com/ckptstore/ckptstore/contract"
)

// Limits every driver can rely on; the portable layer enforces them. They
// are the contract core's, shared by every contract.
const (
	// MaxIDBytes is the longest id, key, namespace or token, in bytes:
	// contract.MaxIDBytes, one limit for every contract.
	MaxIDBytes = contract.MaxIDBytes
	// MaxListLimit is the largest page a driver is asked for in one call
	// (contract.MaxListLimit).
	MaxListLimit = contract.MaxListLimit
	// MaxSafeInteger is 2^53−1, the largest integer a JavaScript number
	// holds exactly; every time, size and epoch is within ±MaxSafeInteger
	// (contract.MaxSafeInteger).
	MaxSafeInteger = contract.MaxSafeInteger
	// MaxValueBytes bounds each value a record or metadata entry holds:
	// every JSON value (a run's usage, a generation run's result,
	// artifacts and usage, an interrupt's payload and response, a metadata
	// value) is at most MaxValueBytes bytes as given, and every text (an
	// error's message and code, a sandboxKey, a generation run's activity,
	// provider and model, an artifact's name, mimeType and sourceUrl) at
	// most MaxValueBytes bytes as a stored record writes it (TextSize:
	// quoted and escaped, <, > and & included, so at most six bytes a
	// byte). It is the one bound that lets every engine store what any
	// engine stores: the largest record, a generation run with its two ids
	// (at most 6·1024+2 bytes each stored), five texts and three JSON
	// values, takes at most 86,228 bytes (2·6,146 + 5·8,192 + 3·10,926 and
	// 300 of names and numbers; fdbstore's TestStoredFormWithinOneValue) in
	// fdbstore's stored form, which writes each JSON value as base64 (4/3
	// of its size, quoted): inside one FoundationDB value (100,000 bytes),
	// for the record and for each index copy of it alike. A bound on a
	// whole record could not be checked before an update merges a patch
	// into the stored record (in a Redis script, say); one on each value
	// can, by the portable layer alone.
	MaxValueBytes = 8 << 10
)

// Driver is every store of the persistence contract in one backend. A
// backend implements all of it: TanStack's stores are all required (the
// upstream evolution policy), and one driver per backend keeps a tenant's
// state in one namespace.
type Driver interface {
	Runs
	GenerationRuns
	Interrupts
	Metadata
	Artifacts
	Blobs
	Locks
}

// Runs holds chat run records (TanStack's RunStore).
type Runs interface {
	// CreateOrResumeRun stores rec when no run has its RunID and returns it;
	// otherwise it returns the stored run unchanged and stores nothing. The
	// record's Status is set (the portable layer fills the default) and none
	// of its optional fields are.
	CreateOrResumeRun(ctx context.Context, rec *RunRecord) (*RunRecord, error)
	// UpdateRun applies patch to the run and reports whether the run
	// existed; an unknown run is left absent (no error).
	UpdateRun(ctx context.Context, runID string, patch RunPatch) (bool, error)
	// GetRun returns the run or nil.
	GetRun(ctx context.Context, runID string) (*RunRecord, error)
	// ActiveRun returns the thread's running run with the greatest
	// StartedAt (ties: the greatest RunID in byte order), or nil.
	ActiveRun(ctx context.Context, threadID string) (*RunRecord, error)
	// ThreadRuns returns the thread's runs in ListOrder, at most limit of
	// them, strictly after the position after (nil: from the start).
	ThreadRuns(ctx context.Context, threadID string, after *Position, limit int) ([]*RunRecord, error)
	// ReclaimableRuns returns running runs whose DetachedSince is set and
	// at most cutoff, in ReclaimOrder (DetachedSince, then RunID bytes),
	// at most limit of them, strictly after the position after.
	ReclaimableRuns(ctx context.Context, cutoff int64, after *Position, limit int) ([]*RunRecord, error)
}

// GenerationRuns holds generation run records (TanStack's
// GenerationRunStore).
type GenerationRuns interface {
	// CreateOrResumeGenerationRun is CreateOrResumeRun for generation runs.
	CreateOrResumeGenerationRun(ctx context.Context, rec *GenerationRunRecord) (*GenerationRunRecord, error)
	// UpdateGenerationRun is UpdateRun for generation runs.
	UpdateGenerationRun(ctx context.Context, runID string, patch GenerationRunPatch) (bool, error)
	// GetGenerationRun returns the generation run or nil.
	GetGenerationRun(ctx context.Context, runID string) (*GenerationRunRecord, error)
	// LatestGenerationRun returns the thread's generation run with the
	// greatest StartedAt, whatever its status (ties: the greatest RunID in
	// byte order), or nil.
	LatestGenerationRun(ctx context.Context, threadID string) (*GenerationRunRecord, error)
}

// InterruptScope selects the interrupts a list returns.
type InterruptScope struct {
	// ThreadID or RunID, exactly one non-empty.
	ThreadID, RunID string
	// PendingOnly keeps only interrupts whose status is pending.
	PendingOnly bool
}

// Interrupts holds human-in-the-loop interrupts (TanStack's InterruptStore).
type Interrupts interface {
	// CreateInterrupt stores rec (status pending, no resolvedAt) when no
	// interrupt has its id, and does nothing otherwise.
	CreateInterrupt(ctx context.Context, rec *InterruptRecord) error
	// ResolveInterrupt sets the interrupt's status to resolved, its
	// resolvedAt to at and its response to response (nil: absent). It
	// reports whether the interrupt existed; an unknown one stays absent.
	ResolveInterrupt(ctx context.Context, id string, at int64, response json.RawMessage) (bool, error)
	// CancelInterrupt sets the status to cancelled and resolvedAt to at,
	// keeping the response. It reports whether the interrupt existed.
	CancelInterrupt(ctx context.Context, id string, at int64) (bool, error)
	// CommitInterrupts applies every entry, stamping resolvedAt with at, or
	// none. The first entry in order whose interrupt is absent fails the
	// batch with ErrNotFound, one that is not pending with ErrNotPending.
	// When opToken is not "", a batch that committed with the same token
	// within the last OpTokenTTL reports success again without checking or
	// writing: that is how a client's retry after a lost reply succeeds.
	CommitInterrupts(ctx context.Context, entries []InterruptCommitEntry, at int64, opToken string) error
	// GetInterrupt returns the interrupt or nil.
	GetInterrupt(ctx context.Context, id string) (*InterruptRecord, error)
	// ListInterrupts returns the scope's interrupts in InterruptOrder
	// (requestedAt, then interruptId bytes), at most limit of them,
	// strictly after the position after.
	ListInterrupts(ctx context.Context, scope InterruptScope, after *Position, limit int) ([]*InterruptRecord, error)
}

// OpTokenTTL is how long a driver remembers the op token of a committed
// batch: contract.OpTokenTTL, the one op-token lifetime of every contract.
const OpTokenTTL = contract.OpTokenTTL

// Metadata holds the (namespace, key) → JSON value map (TanStack's
// MetadataStore). Namespace and key are two fields of the identity, never
// joined into one string that could collide.
type Metadata interface {
	// GetMetadata returns the stored value, or nil when none is stored.
	GetMetadata(ctx context.Context, namespace, key string) (json.RawMessage, error)
	// SetMetadata stores value, replacing any value there.
	SetMetadata(ctx context.Context, namespace, key string, value json.RawMessage) error
	// DeleteMetadata removes the value; an absent one is not an error.
	DeleteMetadata(ctx context.Context, namespace, key string) error
}

// ArtifactScope selects the artifacts a list or delete covers: exactly one
// of ThreadID and RunID is non-empty.
type ArtifactScope struct {
	ThreadID, RunID string
}

// Artifacts holds artifact metadata records (TanStack's ArtifactStore).
type Artifacts interface {
	// SaveArtifact stores rec, replacing any record with its id (and moving
	// it in the run and thread indexes when those fields changed).
	SaveArtifact(ctx context.Context, rec *ArtifactRecord) error
	// GetArtifact returns the artifact or nil.
	GetArtifact(ctx context.Context, artifactID string) (*ArtifactRecord, error)
	// ListArtifacts returns the scope's artifacts in ArtifactOrder
	// (createdAt, then artifactId bytes), at most limit of them, strictly
	// after the position after.
	ListArtifacts(ctx context.Context, scope ArtifactScope, after *Position, limit int) ([]*ArtifactRecord, error)
	// DeleteArtifact removes the record; an absent one is not an error.
	DeleteArtifact(ctx context.Context, artifactID string) error
	// DeleteRunArtifacts removes at most limit of the run's artifacts and
	// returns how many it removed; the portable layer repeats it until it
	// removes fewer than limit.
	DeleteRunArtifacts(ctx context.Context, runID string, limit int) (int, error)
}

// Blobs holds blob metadata: the rows that say which bucket object holds a
// key's bytes. The bytes are the portable layer's, in its bucket.
type Blobs interface {
	// PutBlob stores meta under meta.Key. When a row was there, the stored
	// CreatedAt is kept (meta.CreatedAt is ignored) and the old row's Object
	// is returned so the caller can delete those bytes; otherwise "" is.
	// The stored row is returned.
	PutBlob(ctx context.Context, meta *BlobMeta) (stored *BlobMeta, replaced string, err error)
	// GetBlob returns the row or nil.
	GetBlob(ctx context.Context, key string) (*BlobMeta, error)
	// DeleteBlob removes the row and returns its Object, or "" when there
	// was none.
	DeleteBlob(ctx context.Context, key string) (string, error)
	// ListBlobs returns, in ascending byte order of the key, at most limit
	// rows whose key starts with prefix and is greater than after.
	ListBlobs(ctx context.Context, prefix, after string, limit int) ([]*BlobMeta, error)
}

// Locks holds lock leases and the queue of waiters of each key. Every
// method is one atomic step judged by the store's clock.
type Locks interface {
	// AcquireLock grants the lease of req.Key to req.Token when no other
	// token holds a live lease and req.Token is first among the key's live
	// waiters (or there are none): the lease then lives until the store's
	// now + req.Lease, and the fence goes up by one. Otherwise the token
	// joins the end of the queue (or keeps its place), and its place lives
	// until now + req.Lease unless it asks again. Waiters whose place
	// expired are dropped first. A token that already holds the live lease
	// is granted again without a new fence.
	AcquireLock(ctx context.Context, req LockRequest) (LockState, error)
	// RenewLock extends token's live lease to the store's now + lease, or
	// fails with ErrLockLost when token does not hold a live lease.
	RenewLock(ctx context.Context, key, token string, lease time.Duration) (LockState, error)
	// ReleaseLock ends token's lease, or removes its place in the queue. A
	// token that holds neither changes nothing: a stale holder cannot free
	// its successor. The state returned says whether token held the live
	// lease (Held).
	ReleaseLock(ctx context.Context, key, token string) (LockState, error)
	// WatchLock returns a channel that is closed after the next change of
	// the key's lock (release, grant, expiry noticed, queue change) that
	// commits after WatchLock returns. The caller cancels ctx when it stops
	// watching, which lets a driver free what the watch holds (a
	// subscription, an FDB watch); the channel need not close then. A driver that
	// cannot notify returns a nil channel and the portable layer falls back
	// to polling with backoff. Spurious closes are allowed; missed changes
	// are not.
	WatchLock(ctx context.Context, key string) (<-chan struct{}, error)
}

// LockRequest asks for a key's lease.
type LockRequest struct {
	Key, Token string
	// Lease is how long the lease (or the place in the queue) lives.
	Lease time.Duration
}

// LockState is the outcome of a lock step, with the store's clock readings
// so that a checker can order leases by the store's clock.
type LockState struct {
	// Held: the caller's token holds the live lease after the step (for
	// ReleaseLock: held it before the release).
	Held bool
	// Fence counts the grants of the key; it goes up with each new holder.
	Fence int64
	// Now is the store's clock at the step.
	Now time.Time
	// ExpiresAt is when the caller's lease expires (Held), or when the
	// current holder's does (not Held; zero when nobody holds it).
	ExpiresAt time.Time
	// Ahead is how many live waiters are queued before the caller.
	Ahead int
}

// Position is where a list page ended: the sort key of its last record. A
// driver returns the records strictly after it.
type Position struct {
	// At is the record's sort time (startedAt, detachedSince, requestedAt,
	// createdAt).
	At int64
	// ID is the record's id.
	ID string
}
