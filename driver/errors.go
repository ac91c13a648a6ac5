package driver

import (
	"errors"

	"github.com/ckptstore/ckptstore/contract"
)

// prefix is the checkpoint contract's contract.Error prefix.
const prefix = "ckptstore"

// cerr is a sentinel of the checkpoint contract: a contract.Error with the
// "ckptstore" prefix, registered for contract.ErrorFor.
func cerr(code, msg string) error { return contract.NewError(prefix, code, msg) }

// The wire codes of the contract errors, shared with @tanstack/ai-sandbox
// (the code property of its error classes).
const (
	CodeStaleHead                = "SANDBOX_SNAPSHOT_STALE_HEAD"
	CodeParentMismatch           = "SANDBOX_SNAPSHOT_PARENT_MISMATCH"
	CodeDuplicateID              = "SANDBOX_SNAPSHOT_DUPLICATE_ID"
	CodeNotHead                  = "SANDBOX_SNAPSHOT_NOT_HEAD"
	CodeWriterConflict           = "SANDBOX_SNAPSHOT_WRITER_CONFLICT"
	CodeWriterLost               = "SANDBOX_SNAPSHOT_WRITER_LOST"
	CodeInvalidID                = "SANDBOX_SNAPSHOT_INVALID_ID"
	CodeInvalidEntry             = "SANDBOX_SNAPSHOT_INVALID_ENTRY"
	CodeForkSourceNotFound       = "SANDBOX_SNAPSHOT_FORK_SOURCE_NOT_FOUND"
	CodeForkSourceThreadMismatch = "SANDBOX_SNAPSHOT_FORK_SOURCE_THREAD_MISMATCH"
	CodeForkDestinationNotEmpty  = "SANDBOX_SNAPSHOT_FORK_DESTINATION_NOT_EMPTY"
)

// Sentinel errors. Every error a store returns for a contract violation
// satisfies errors.Is with exactly one of them; stores wrap them with
// context (fmt.Errorf("%w: ...")).
var (
	// ErrConflict: the thread's head is not the expected head.
	ErrConflict = cerr(CodeStaleHead, "the thread's head is not the expected head")
	// ErrParentMismatch: the checkpoint's parent is not the expected head.
	ErrParentMismatch = cerr(CodeParentMismatch, "parentCheckpointId does not equal the expected head")
	// ErrDuplicateID: the checkpoint id is already used by a stored checkpoint.
	ErrDuplicateID = cerr(CodeDuplicateID, "the checkpoint id is already used")
	// ErrNotHead: the checkpoint to delete is not the thread's head.
	ErrNotHead = cerr(CodeNotHead, "the checkpoint is not the thread's head")
	// ErrWriterConflict: the thread's writer lease is held and live.
	ErrWriterConflict = cerr(CodeWriterConflict, "the thread's writer lease is held")
	// ErrWriterLost: the writer is not the thread's current, live lease.
	ErrWriterLost = cerr(CodeWriterLost, "the writer is not the thread's current lease")
	// ErrInvalidID: a thread or checkpoint id or an instance key is empty,
	// not valid UTF-8 or longer than MaxIDBytes.
	ErrInvalidID = cerr(CodeInvalidID, "invalid id")
	// ErrInvalidEntry: a checkpoint field, entry, artifact or argument is invalid.
	ErrInvalidEntry = cerr(CodeInvalidEntry, "invalid entry")
	// ErrForkSourceNotFound: the fork's source checkpoint does not exist.
	ErrForkSourceNotFound = cerr(CodeForkSourceNotFound, "the fork source checkpoint does not exist")
	// ErrForkSourceThreadMismatch: the fork source is in another thread, or
	// source and destination threads are the same.
	ErrForkSourceThreadMismatch = cerr(CodeForkSourceThreadMismatch, "the fork source checkpoint is not in the source thread, or source and destination are the same thread")
	// ErrForkDestinationNotEmpty: the destination thread has a head or a
	// checkpoint, or the destination checkpoint id is used.
	ErrForkDestinationNotEmpty = cerr(CodeForkDestinationNotEmpty, "the fork destination thread is not empty or the destination id is used")
)

// ErrCorrupt reports stored data that breaks a store's invariants: a value
// that does not decode, a key outside its layout. It is contract.ErrCorrupt,
// the one value every contract of every engine reports corruption with, and
// not a contract error (Code returns "" for it): no input causes it, and a
// store's checker (Check, ckptctl check) says what is broken.
var ErrCorrupt = contract.ErrCorrupt

// ErrNotReplicated reports a write that the store applied but could not
// confirm on as many replicas as its options ask (redisstore's
// MinReplicas) in time. The write may exist, and a failover before the
// replicas have it may lose it. It is not a contract error (Code returns ""
// for it): a retry with the same op token (WithOpToken; over HTTP, the same
// Idempotency-Key) settles it, since it either finds the write done or
// does it.
var ErrNotReplicated = errors.New("ckptstore: write not acknowledged by enough replicas")

// ErrInvalidOptions reports lease options that break the rules of Options.
// It is not a contract error: Code returns "" for it.
var ErrInvalidOptions = errors.New("ckptstore: invalid options")

// Code returns the SANDBOX_SNAPSHOT_* wire code of the checkpoint contract
// error that err wraps, or "" when err is nil or wraps none
// (contract.CodeIn; contract.Code answers for every contract).
func Code(err error) string { return contract.CodeIn(err, prefix) }

// ErrorFor returns the sentinel whose wire code is code
// (SANDBOX_SNAPSHOT_STALE_HEAD → ErrConflict, …), or nil for any other
// string (contract.ErrorIn; contract.ErrorFor answers for every
// contract). It turns codes that cross a wire — from the TypeScript side,
// or from a store's server-side script — back into errors.Is-able values.
func ErrorFor(code string) error { return contract.ErrorIn(code, prefix) }
