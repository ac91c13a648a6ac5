package driver

import "github.com/ckptstore/ckptstore/contract"

// prefix is the persistence contract's contract.Error prefix.
const prefix = "persist"

// perr is a sentinel of the persistence contract: a contract.Error with
// the "persist" prefix, registered for contract.ErrorFor.
func perr(code, msg string) error { return contract.NewError(prefix, code, msg) }

// The wire codes of the contract errors. TanStack's persistence packages
// throw plain Errors and define no codes, so these are ckptstore's own; the
// HTTP layer and the TypeScript client carry them.
const (
	CodeInvalidID           = "PERSIST_INVALID_ID"
	CodeInvalidEntry        = "PERSIST_INVALID_ENTRY"
	CodeDuplicateEntry      = "PERSIST_BATCH_DUPLICATE_ID"
	CodeNotFound            = "PERSIST_BATCH_MISSING_ID"
	CodeNotPending          = "PERSIST_BATCH_NOT_PENDING"
	CodeRangeNotSatisfiable = "PERSIST_RANGE_NOT_SATISFIABLE"
	CodeLockLost            = "PERSIST_LOCK_LOST"
)

// The sentinels. Every contract violation a store or driver reports wraps
// exactly one of them (fmt.Errorf("%w: …")).
var (
	// ErrInvalidID: an id, key, namespace or token is empty, not valid
	// UTF-8, or longer than MaxIDBytes.
	ErrInvalidID = perr(CodeInvalidID, "invalid id")
	// ErrInvalidEntry: a field or argument breaks a pure rule (a status, a
	// number, a JSON value, a patch, a range length, a list option).
	ErrInvalidEntry = perr(CodeInvalidEntry, "invalid entry")
	// ErrDuplicateEntry: a commit batch names one interrupt twice.
	ErrDuplicateEntry = perr(CodeDuplicateEntry, "the batch has a duplicate id")
	// ErrNotFound: a commit batch names an interrupt that does not exist.
	ErrNotFound = perr(CodeNotFound, "the batch names a missing id")
	// ErrNotPending: a commit batch names an interrupt that is not pending.
	ErrNotPending = perr(CodeNotPending, "the batch names a non-pending id")
	// ErrRangeNotSatisfiable: a blob range starts outside the object. A
	// serve route answers 416 before asking; reaching the store is the
	// caller's bug.
	ErrRangeNotSatisfiable = perr(CodeRangeNotSatisfiable, "the range starts outside the object")
	// ErrLockLost: the lock's lease was lost or could not be renewed in
	// time, or the token does not hold it.
	ErrLockLost = perr(CodeLockLost, "the lock's lease is lost")
)

// ShowID is an interrupt id as a commit batch's error shows it, after the
// sentinel's message and ": " (contract.ShowID): as it is when printable,
// so that harness tests matching TanStack's wording ("missing id: <id>")
// pass, else Go-quoted. Ids are at most MaxIDBytes, checked before.
func ShowID(id string) string { return contract.ShowID(id) }

// ErrCorrupt reports stored data that breaks the driver's invariants. It
// is contract.ErrCorrupt, the value the checkpoint drivers and every
// engine's Check report corruption with, and not a contract error (Code
// returns ""): no input causes it.
var ErrCorrupt = contract.ErrCorrupt

// Code returns the wire code of the persistence contract error err wraps,
// or "" (contract.CodeIn; contract.Code answers for every contract).
func Code(err error) string { return contract.CodeIn(err, prefix) }

// ErrorFor returns the persistence sentinel whose wire code is code, or
// nil (contract.ErrorIn; contract.ErrorFor answers for every contract). It
// turns a code that crossed a wire back into an errors.Is-able value.
func ErrorFor(code string) error { return contract.ErrorIn(code, prefix) }
