package driver

import (
	"errors"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// contractError is a violation of the persistence contract. Each sentinel
// is one value of this type, so errors.Is matches exactly one of them and
// Code finds the wire code through any wrapping.
type contractError struct {
	code string
	msg  string
}

func (e *contractError) Error() string { return "persist: " + e.msg }

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
	ErrInvalidID error = &contractError{CodeInvalidID, "invalid id"}
	// ErrInvalidEntry: a field or argument breaks a pure rule (a status, a
	// number, a JSON value, a patch, a range length, a list option).
	ErrInvalidEntry error = &contractError{CodeInvalidEntry, "invalid entry"}
	// ErrDuplicateEntry: a commit batch names one interrupt twice.
	ErrDuplicateEntry error = &contractError{CodeDuplicateEntry, "the batch has a duplicate id"}
	// ErrNotFound: a commit batch names an interrupt that does not exist.
	ErrNotFound error = &contractError{CodeNotFound, "the batch names a missing id"}
	// ErrNotPending: a commit batch names an interrupt that is not pending.
	ErrNotPending error = &contractError{CodeNotPending, "the batch names a non-pending id"}
	// ErrRangeNotSatisfiable: a blob range starts outside the object. A
	// serve route answers 416 before asking; reaching the store is the
	// caller's bug.
	ErrRangeNotSatisfiable error = &contractError{CodeRangeNotSatisfiable, "the range starts outside the object"}
	// ErrLockLost: the lock's lease was lost or could not be renewed in
	// time, or the token does not hold it.
	ErrLockLost error = &contractError{CodeLockLost, "the lock's lease is lost"}
)

// ShowID is an interrupt id as a commit batch's error shows it, after the
// sentinel's message and ": ". TanStack's in-memory InterruptStore words
// these rejections "duplicate id: <id>", "missing id: <id>" and
// "non-pending id: <id>", with the id as it is, and harness tests match on
// those words, so a printable id is written as it is; one with a control
// or other non-printable character (or invalid UTF-8) is Go-quoted, so it
// never reaches a message raw. Ids are at most MaxIDBytes, checked before.
func ShowID(id string) string {
	if !utf8.ValidString(id) {
		return strconv.Quote(id)
	}
	for _, r := range id {
		if !unicode.IsPrint(r) {
			return strconv.Quote(id)
		}
	}
	return id
}

// ErrCorrupt reports stored data that breaks the driver's invariants. It
// is not a contract error (Code returns ""): no input causes it.
var ErrCorrupt = errors.New("persist: stored data is corrupt")

// Code returns the wire code of the contract error err wraps, or "".
func Code(err error) string {
	var ce *contractError
	if errors.As(err, &ce) {
		return ce.code
	}
	return ""
}

var contractErrors = []error{
	ErrInvalidID, ErrInvalidEntry, ErrDuplicateEntry, ErrNotFound,
	ErrNotPending, ErrRangeNotSatisfiable, ErrLockLost,
}

// ErrorFor returns the sentinel whose wire code is code, or nil. It turns a
// code that crossed a wire back into an errors.Is-able value.
func ErrorFor(code string) error {
	for _, e := range contractErrors {
		if Code(e) == code {
			return e
		}
	}
	return nil
}
