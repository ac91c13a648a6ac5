package ckptstore

// The contract's types, sentinels and wire names are declared once, in
// package driver, which both this package and every store import; the
// names a harness needs are repeated here so that it imports only
// ckptstore. Each alias is the same type, and each error the same value,
// so errors.Is and type switches see no difference.

import (
	"context"

	"github.com/ckptstore/ckptstore/driver"
)

// The contract's data types (docs/contract.md, "What is stored").
type (
	// Checkpoint is the state of a thread's sandbox after a run.
	Checkpoint = driver.Checkpoint
	// Entry is one path of a sandbox's workspace: a file or a directory.
	Entry = driver.Entry
	// Artifact is a file a run produced, stored as a blob.
	Artifact = driver.Artifact
	// Reason says why a checkpoint was taken.
	Reason = driver.Reason
	// EntryKind is the kind of a file entry.
	EntryKind = driver.EntryKind
	// Writer identifies a writer lease: thread, owner token and fence.
	Writer = driver.Writer
	// BlobRef is a blob key and the number of stored checkpoints that use it.
	BlobRef = driver.BlobRef
	// ForkInput names the checkpoint to fork and the thread to fork it into.
	ForkInput = driver.ForkInput
	// ImportBatch is one batch of a thread that Import writes as given.
	ImportBatch = driver.ImportBatch
	// ListOptions page through a thread's checkpoints in List order.
	ListOptions = driver.ListOptions
	// InstanceRecord maps a key to the provider sandbox that serves it.
	InstanceRecord = driver.InstanceRecord
	// Transcript is a transcript validated as it was read (SaveTranscript).
	Transcript = driver.Transcript
	// Decoded is a checkpoint whose conversation was validated as it was
	// read (AppendDecoded).
	Decoded = driver.Decoded
	// Options are the lease settings and clock shared by every store.
	Options = driver.Options
	// Lease is a thread's writer lease, as Store.AcquireWriter returns it:
	// its Writer goes with every write; Renew and Release keep and end it.
	Lease = driver.Lease
)

// The reasons a checkpoint may carry and the kinds of entry.
const (
	ReasonAutomatic = driver.ReasonAutomatic // after a run
	ReasonNamed     = driver.ReasonNamed     // a version the user named
	ReasonForkRoot  = driver.ReasonForkRoot  // the root of a forked thread
	KindFile        = driver.KindFile
	KindDir         = driver.KindDir
)

// The contract errors: every error a store returns for a contract violation
// satisfies errors.Is with exactly one of them (docs/contract.md, "Wire
// codes").
var (
	ErrConflict                 = driver.ErrConflict
	ErrParentMismatch           = driver.ErrParentMismatch
	ErrDuplicateID              = driver.ErrDuplicateID
	ErrNotHead                  = driver.ErrNotHead
	ErrWriterConflict           = driver.ErrWriterConflict
	ErrWriterLost               = driver.ErrWriterLost
	ErrInvalidID                = driver.ErrInvalidID
	ErrInvalidEntry             = driver.ErrInvalidEntry
	ErrForkSourceNotFound       = driver.ErrForkSourceNotFound
	ErrForkSourceThreadMismatch = driver.ErrForkSourceThreadMismatch
	ErrForkDestinationNotEmpty  = driver.ErrForkDestinationNotEmpty

	// ErrNotReplicated is not a contract error: a write that was applied
	// but not acknowledged by the replicas a store was told to wait for
	// (redisstore's MinReplicas). It may exist; a retry with the same op
	// token settles it.
	ErrNotReplicated = driver.ErrNotReplicated
)

// Code returns the wire code of the contract error that err wraps
// (SANDBOX_SNAPSHOT_* for this contract's), or "" when err is nil or not a
// contract error (contract.Code).
func Code(err error) string { return driver.Code(err) }

// WithOpToken returns ctx carrying the op token of one logical write, so
// that a retry of it from outside the store (a client that lost the reply)
// reports the first call's success (docs/contract.md, "Caller op tokens and
// retries"). The token must be unguessable, 1 to 1024 (contract.MaxIDBytes)
// characters of [A-Za-z0-9_-], and the same on every retry of that write
// and on no other.
func WithOpToken(ctx context.Context, token string) context.Context {
	return driver.WithOpToken(ctx, token)
}
