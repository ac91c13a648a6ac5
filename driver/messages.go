package driver

// The messages of the checkpoint contract errors that need a store's
// state. Every engine builds these errors here, from the fields its check
// read, so that one call fails with the same sentinel, wire code and
// message on every engine (a Redis script replies with the fields, and Go
// formats them). Invariants of every message:
//   - each id is quoted with QuoteShort, so an error quotes at most the
//     first 64 bytes of an id however long it is (docs/contract.md, rule 1);
//   - each time is in UTC, RFC 3339 with as many fraction digits as it
//     needs, so a message does not depend on the process's time zone or
//     carry a monotonic clock reading.

import (
	"fmt"
	"time"
)

// formatTime is t as the messages show it.
func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// StaleHeadError is Append's ErrConflict: thread's head is head where the
// caller expected expected.
func StaleHeadError(thread, head, expected string) error {
	return fmt.Errorf("%w: head of thread %s is %s, expected %s", ErrConflict, QuoteShort(thread), QuoteShort(head), QuoteShort(expected))
}

// ImportHeadError is Import's ErrConflict: with SetHead, thread's head is
// head, neither "" nor the batch's want.
func ImportHeadError(thread, head, want string) error {
	return fmt.Errorf("%w: head of thread %s is %s, not %s", ErrConflict, QuoteShort(thread), QuoteShort(head), QuoteShort(want))
}

// ParentMismatchError is Append's ErrParentMismatch: the checkpoint's
// parent is not the expected head.
func ParentMismatchError(parent, expected string) error {
	return fmt.Errorf("%w: parent %s, expected head %s", ErrParentMismatch, QuoteShort(parent), QuoteShort(expected))
}

// DuplicateIDError is Append's ErrDuplicateID: a checkpoint id is stored.
func DuplicateIDError(id string) error {
	return fmt.Errorf("%w: %s", ErrDuplicateID, QuoteShort(id))
}

// DuplicateInThreadError is Import's ErrDuplicateID for an id stored in
// another thread, thread.
func DuplicateInThreadError(id, thread string) error {
	return fmt.Errorf("%w: checkpoint %s is stored in thread %s", ErrDuplicateID, QuoteShort(id), QuoteShort(thread))
}

// DuplicateContentError is Import's ErrDuplicateID for an id stored in
// the batch's thread with other content.
func DuplicateContentError(id string) error {
	return fmt.Errorf("%w: checkpoint %s is stored with other content", ErrDuplicateID, QuoteShort(id))
}

// NotHeadError is DeleteHead's ErrNotHead: checkpoint is not thread's
// head (or not stored in thread).
func NotHeadError(checkpoint, thread string) error {
	return fmt.Errorf("%w: %s is not the head of thread %s", ErrNotHead, QuoteShort(checkpoint), QuoteShort(thread))
}

// WriterConflictError is AcquireWriter's ErrWriterConflict: thread's
// lease is live until expiresAt, on the engine's lease clock.
func WriterConflictError(thread string, expiresAt time.Time) error {
	return fmt.Errorf("%w: thread %s is leased until %s", ErrWriterConflict, QuoteShort(thread), formatTime(expiresAt))
}

// NoLeaseError is ErrWriterLost for a thread with no lease: never taken,
// or released.
func NoLeaseError(thread string) error {
	return fmt.Errorf("%w: thread %s has no lease", ErrWriterLost, QuoteShort(thread))
}

// NewerLeaseError is ErrWriterLost for a writer whose lease was replaced:
// thread's lease has fence fence (or another owner token), the writer's
// is writerFence.
func NewerLeaseError(thread string, fence, writerFence int64) error {
	return fmt.Errorf("%w: thread %s has a newer lease (fence %d, writer has %d)", ErrWriterLost, QuoteShort(thread), fence, writerFence)
}

// LeaseExpiredError is ErrWriterLost for a writer whose lease expired at
// expiredAt, on the engine's lease clock.
func LeaseExpiredError(thread string, expiredAt time.Time) error {
	return fmt.Errorf("%w: the lease of thread %s expired at %s", ErrWriterLost, QuoteShort(thread), formatTime(expiredAt))
}

// WriterThreadError is ErrWriterLost for a writer of writerThread used to
// write thread: the pure part of "the writer is current".
func WriterThreadError(writerThread, thread string) error {
	return fmt.Errorf("%w: writer of thread %s cannot write thread %s", ErrWriterLost, QuoteShort(writerThread), QuoteShort(thread))
}

// ForkSourceNotFoundError is ForkFromCheckpoint's ErrForkSourceNotFound:
// no checkpoint checkpoint is stored.
func ForkSourceNotFoundError(checkpoint string) error {
	return fmt.Errorf("%w: %s", ErrForkSourceNotFound, QuoteShort(checkpoint))
}

// ForkSourceThreadError is ForkFromCheckpoint's
// ErrForkSourceThreadMismatch for a source checkpoint stored in thread,
// not in the call's sourceThread.
func ForkSourceThreadError(checkpoint, thread, sourceThread string) error {
	return fmt.Errorf("%w: checkpoint %s is in thread %s, not %s", ErrForkSourceThreadMismatch, QuoteShort(checkpoint), QuoteShort(thread), QuoteShort(sourceThread))
}

// ForkSameThreadError is ForkFromCheckpoint's ErrForkSourceThreadMismatch
// for a fork whose source and destination are both thread (a pure check).
func ForkSameThreadError(thread string) error {
	return fmt.Errorf("%w: source and destination are both thread %s", ErrForkSourceThreadMismatch, QuoteShort(thread))
}

// ForkDestinationCheckpointsError is ForkFromCheckpoint's
// ErrForkDestinationNotEmpty for a destination thread with a head or a
// checkpoint.
func ForkDestinationCheckpointsError(thread string) error {
	return fmt.Errorf("%w: thread %s has checkpoints", ErrForkDestinationNotEmpty, QuoteShort(thread))
}

// ForkDestinationTranscriptError is ForkFromCheckpoint's
// ErrForkDestinationNotEmpty for a destination thread with a transcript.
func ForkDestinationTranscriptError(thread string) error {
	return fmt.Errorf("%w: thread %s has a transcript", ErrForkDestinationNotEmpty, QuoteShort(thread))
}

// ForkDestinationIDError is ForkFromCheckpoint's
// ErrForkDestinationNotEmpty for a destination checkpoint id already
// stored.
func ForkDestinationIDError(id string) error {
	return fmt.Errorf("%w: checkpoint id %s is used", ErrForkDestinationNotEmpty, QuoteShort(id))
}
