// Package persist is TanStack AI's persistence contract in Go: the stores of
// @tanstack/ai-persistence's AIPersistence (runs, interrupts, metadata,
// generationRuns, artifacts, blobs) and @tanstack/ai's LockStore, as portable
// stores over one driver (package persist/driver), the way gocloud's
// blob.Bucket sits over blob/driver.Bucket. The root package ckptstore stays
// the checkpoint contract.
//
// The portable stores do, once and in the order docs/persistence.md gives
// for each method, everything that needs no state: the pure checks, the
// context, the op token, the defaults and timestamps, clone-on-read, blob
// bytes (which go to a blobs.Bucket) and the whole lock protocol (waiting,
// renewal, the abort signal). A driver does the state checks and the write
// of each call in one atomic step; memstore.Persistence is the
// reference, and package persist/persisttest proves any driver with one call.
//
// # Messages
//
// TanStack's messages store is the checkpoint store's transcripts:
// ckptstore.Transcripts' LoadThread and SaveThread are loadThread and
// saveThread (a full replace; "[]" for a thread never saved), and a fork
// writes the destination's transcript in the same atomic step as the fork.
// This package does not repeat them; a server that serves persistence takes
// messages from the checkpoint store of the same namespace.
//
// # Wire shapes
//
// The record types marshal to TanStack's JSON shapes: its field names,
// optional fields left out when absent, epoch-millisecond times. A patch's
// explicit `undefined` (which clears a field) is a JSON null on the wire.
package persist

import (
	"context"
	"fmt"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/blobs"
	"github.com/ckptstore/ckptstore/contract"
	ckptdriver "github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/persist/driver"
)

// The record types and patch fields, defined in the driver package so that
// drivers and users share one declaration.
type (
	// RunStatus is a run's lifecycle status.
	RunStatus = driver.RunStatus
	// RunError says why a run failed.
	RunError = driver.RunError
	// RunRecord is one chat run.
	RunRecord = driver.RunRecord
	// RunPatch is an update of a run's mutable fields.
	RunPatch = driver.RunPatch
	// GenerationRunRecord is one generation run.
	GenerationRunRecord = driver.GenerationRunRecord
	// GenerationRunPatch is an update of a generation run's mutable fields.
	GenerationRunPatch = driver.GenerationRunPatch
	// InterruptStatus is an interrupt's lifecycle status.
	InterruptStatus = driver.InterruptStatus
	// InterruptRecord is one human-in-the-loop interrupt.
	InterruptRecord = driver.InterruptRecord
	// InterruptCommitEntry is one terminal write of a commit batch.
	InterruptCommitEntry = driver.InterruptCommitEntry
	// ArtifactRecord is one artifact's metadata.
	ArtifactRecord = driver.ArtifactRecord
	// BlobRecord is one blob's metadata.
	BlobRecord = driver.BlobRecord
	// Field is one field of a patch: kept, set or cleared.
	Field[T any] = driver.Field[T]
)

// The statuses, as in package driver.
const (
	RunRunning         = driver.RunRunning
	RunInterrupted     = driver.RunInterrupted
	RunCompleted       = driver.RunCompleted
	RunFailed          = driver.RunFailed
	RunAborted         = driver.RunAborted
	InterruptPending   = driver.InterruptPending
	InterruptResolved  = driver.InterruptResolved
	InterruptCancelled = driver.InterruptCancelled
)

// The contract errors, as in package driver; Code gives their wire codes.
var (
	ErrInvalidID           = driver.ErrInvalidID
	ErrInvalidEntry        = driver.ErrInvalidEntry
	ErrDuplicateEntry      = driver.ErrDuplicateEntry
	ErrNotFound            = driver.ErrNotFound
	ErrNotPending          = driver.ErrNotPending
	ErrRangeNotSatisfiable = driver.ErrRangeNotSatisfiable
	ErrLockLost            = driver.ErrLockLost
)

// Code returns the wire code of the contract error err wraps, or "".
func Code(err error) string { return driver.Code(err) }

// Set returns a patch Field that sets the field to v.
func Set[T any](v T) Field[T] { return driver.Set(v) }

// Clear returns a patch Field that removes the field (TanStack's explicit
// undefined).
func Clear[T any]() Field[T] { return driver.Clear[T]() }

// Options configure a Store. The zero value is valid but for Bucket.
type Options struct {
	// Bucket holds blob bytes. Required.
	Bucket blobs.Bucket
	// BlobPrefix is the prefix of the bucket objects that hold blob bytes;
	// "" means DefaultBlobPrefix. It must differ from the checkpoint
	// content prefixes, which the checkpoint sweep deletes from.
	BlobPrefix string
	// Now is this process's clock: it stamps resolvedAt and blob times, and
	// it is the lock holder's own clock, by which a lock holder aborts
	// before its lease can expire. nil means time.Now. Lease expiry itself
	// is judged by the driver's (the store's) clock.
	Now func() time.Time
	// LeaseDuration and RenewAfter time the lock leases, with the rules and
	// defaults of ckptstore.Options (120 s, renew after 45 s).
	LeaseDuration, RenewAfter time.Duration
}

// DefaultBlobPrefix is where blob bytes go in the bucket: one object per
// put, named by a random id.
const DefaultBlobPrefix = "tanstack-blobs/"

// Store is the persistence of one namespace: one field per TanStack store.
// New fills it with the portable types over one driver; a client of a
// remote store (httpstore) fills it with its own.
type Store struct {
	Runs           RunStore
	GenerationRuns GenerationRunStore
	Interrupts     InterruptStore
	Metadata       MetadataStore
	Artifacts      ArtifactStore
	Blobs          BlobStore
	// Locks is the lock protocol; New's runs over DriverLockSteps.
	Locks LockStore
}

// New returns the portable stores over d. It fails with an error wrapping
// ckptdriver.ErrInvalidOptions when the lease timing breaks the rules of
// ckptstore.Options, when Bucket is nil, or when BlobPrefix is not a valid
// key prefix or is a checkpoint content prefix.
func New(d driver.Driver, opts Options) (*Store, error) {
	lease, err := ckptstore.Options{Now: opts.Now, LeaseDuration: opts.LeaseDuration, RenewAfter: opts.RenewAfter}.Resolve()
	if err != nil {
		return nil, err
	}
	if d == nil || opts.Bucket == nil {
		return nil, fmt.Errorf("%w: persist.New needs a driver and a bucket", ckptdriver.ErrInvalidOptions)
	}
	prefix := opts.BlobPrefix
	if prefix == "" {
		prefix = DefaultBlobPrefix
	}
	if err := blobs.ValidateKey(prefix + "x"); err != nil || prefix[len(prefix)-1] != '/' || overlaps(prefix, blobs.FilesPrefix) || overlaps(prefix, blobs.ArtifactsPrefix) {
		return nil, fmt.Errorf("%w: BlobPrefix %q must be a key prefix ending in / and apart from the checkpoint content prefixes", ckptdriver.ErrInvalidOptions, prefix)
	}
	c := &core{d: d, now: lease.Now}
	return &Store{
		Runs:           &Runs{c},
		GenerationRuns: &GenerationRuns{c},
		Interrupts:     &Interrupts{c},
		Metadata:       &Metadata{c},
		Artifacts:      &Artifacts{c},
		Blobs:          &Blobs{core: c, bucket: opts.Bucket, prefix: prefix},
		Locks:          NewLocks(NewDriverLockSteps(d, lease.Now, lease.LeaseDuration, lease.RenewAfter), lease.Now, 0),
	}, nil
}

// overlaps reports whether one prefix starts with the other.
func overlaps(a, b string) bool {
	return len(a) <= len(b) && b[:len(a)] == a || len(b) <= len(a) && a[:len(b)] == b
}

// core is what every portable store shares.
type core struct {
	d   driver.Driver
	now func() time.Time
}

// nowMs is the process clock in epoch milliseconds.
func (c *core) nowMs() int64 { return c.now().UnixMilli() }

// begin is the first step of every method: a done context fails before
// anything else is looked at, so a cancelled call never reaches the driver.
func begin(ctx context.Context) error { return ctx.Err() }

// beginID is begin, then the check of the method's one id (what names it).
func beginID(ctx context.Context, what, id string) error {
	return firstErr(begin(ctx), checkID(what, id))
}

// opToken returns the op token ctx carries (ckptstore.WithOpToken), "" when
// none, or ErrInvalidEntry when it is malformed (contract.CheckOpToken).
func opToken(ctx context.Context) (string, error) { return contract.CheckOpToken(ctx, ErrInvalidEntry) }
