package persist

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/ckptstore/ckptstore/contract"
	ckptdriver "github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/persist/driver"
)

// The pure checks, shared by every method. Each fails with a contract error
// that names the field; docs/persistence.md gives the order in which each
// method applies them.

// MaxValueBytes bounds each value a record or metadata entry holds: a JSON
// value at most MaxValueBytes bytes, a text at most MaxValueBytes bytes
// once written as a JSON string (driver.MaxValueBytes, which works out why
// 8 KiB: every engine's stored form of the largest record then fits, one
// FoundationDB value included). docs/persistence.md, Limits.
const MaxValueBytes = driver.MaxValueBytes

// firstErr is the first non-nil of errs: a method's checks, listed in the
// order it documents. Every check is pure, so running the ones after a
// failure changes nothing but the time a failing call takes.
func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// checkID: 1 to MaxIDBytes bytes of valid UTF-8 (ErrInvalidID), the one
// id rule of every contract (contract.CheckNamedID).
func checkID(what, id string) error { return contract.CheckNamedID(what, id, ErrInvalidID) }

// quoteShort quotes s, or only a short prefix of it (contract.QuoteShort).
func quoteShort(s string) string { return contract.QuoteShort(s) }

// checkOptID is checkID for an optional id.
func checkOptID(what string, id *string) error {
	if id == nil {
		return nil
	}
	return checkID(what, *id)
}

// checkText: valid UTF-8, possibly empty (ErrInvalidEntry).
func checkText(what, s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: %s %s is not valid UTF-8", ErrInvalidEntry, what, quoteShort(s))
	}
	return nil
}

// checkValueText is checkText for a text a record holds: also at most
// MaxValueBytes as a stored JSON string (driver.TextSize; ErrInvalidEntry).
func checkValueText(what, s string) error {
	if err := checkText(what, s); err != nil {
		return err
	}
	// A byte takes at most 6 as stored JSON (\u001f, \u003c): only a long
	// text needs writing out to be measured.
	if 6*len(s)+2 <= MaxValueBytes {
		return nil
	}
	if n := driver.TextSize(s); n > MaxValueBytes {
		return fmt.Errorf("%w: %s is %d bytes as a stored JSON string, more than %d (MaxValueBytes)", ErrInvalidEntry, what, n, MaxValueBytes)
	}
	return nil
}

// checkOptValueText is checkValueText for an optional string.
func checkOptValueText(what string, s *string) error {
	if s == nil {
		return nil
	}
	return checkValueText(what, *s)
}

// checkOptText is checkText for an optional string.
func checkOptText(what string, s *string) error {
	if s == nil {
		return nil
	}
	return checkText(what, *s)
}

// checkInt: a safe integer, and not negative when nonNeg (ErrInvalidEntry).
// Times are epoch milliseconds, which JavaScript holds exactly only up to
// 2^53−1.
func checkInt(what string, v int64, nonNeg bool) error {
	if !contract.SafeInteger(v) {
		return fmt.Errorf("%w: %s %d is not a safe integer", ErrInvalidEntry, what, v)
	}
	if nonNeg && v < 0 {
		return fmt.Errorf("%w: %s %d is negative", ErrInvalidEntry, what, v)
	}
	return nil
}

func checkOptInt(what string, v *int64, nonNeg bool) error {
	if v == nil {
		return nil
	}
	return checkInt(what, *v, nonNeg)
}

// jsonKind is what a JSON value must be.
type jsonKind uint8

const (
	anyJSON jsonKind = iota
	objectJSON
	arrayJSON
)

// checkJSON: raw is at most MaxValueBytes and one valid JSON value of the
// kind asked for, within the contract's JSON-validity rule
// (ckptdriver.CheckJSON: nested at most contract.MaxJSONDepth levels),
// else ErrInvalidEntry. The size goes first: it costs nothing, and bounds
// the scan. nil is absent and
// passes; the caller checks presence.
func checkJSON(what string, raw json.RawMessage, kind jsonKind) error {
	if raw == nil {
		return nil
	}
	if len(raw) > MaxValueBytes {
		return fmt.Errorf("%w: %s is %d bytes, more than %d (MaxValueBytes)", ErrInvalidEntry, what, len(raw), MaxValueBytes)
	}
	if err := ckptdriver.CheckJSON(raw); err != nil {
		return fmt.Errorf("%w: %s is not valid JSON: %v", ErrInvalidEntry, what, err)
	}
	t := bytes.TrimLeft(raw, " \t\r\n")
	switch {
	case kind == objectJSON && t[0] != '{':
		return fmt.Errorf("%w: %s is not a JSON object", ErrInvalidEntry, what)
	case kind == arrayJSON && t[0] != '[':
		return fmt.Errorf("%w: %s is not a JSON array", ErrInvalidEntry, what)
	}
	return nil
}

// checkRunStatus: one of the five run statuses (ErrInvalidEntry).
func checkRunStatus(what string, s driver.RunStatus) error {
	if !s.Valid() {
		return fmt.Errorf("%w: %s %s is not running, interrupted, completed, failed or aborted", ErrInvalidEntry, what, quoteShort(string(s)))
	}
	return nil
}

// checkRunError: message and code valid UTF-8.
func checkRunError(e *driver.RunError) error {
	if e == nil {
		return nil
	}
	return firstErr(checkValueText("error.message", e.Message), checkOptValueText("error.code", e.Code))
}

// checkLimit: a list page size, 0 (no limit) or positive.
func checkLimit(limit int) error {
	if limit < 0 {
		return fmt.Errorf("%w: limit %d is negative", ErrInvalidEntry, limit)
	}
	return nil
}

// checkStatusPatch: a patch may set the status to a valid one but never
// clear it, since every record has one.
func checkStatusPatch(f Field[RunStatus]) error {
	if f.IsClear() {
		return fmt.Errorf("%w: patch clears status, which every run has", ErrInvalidEntry)
	}
	if f.IsSet() {
		return checkRunStatus("patch status", f.Value())
	}
	return nil
}

func checkIntPatch(what string, f Field[int64], nonNeg bool) error {
	if !f.IsSet() {
		return nil
	}
	return checkInt(what, f.Value(), nonNeg)
}

func checkErrorPatch(f Field[RunError]) error {
	if !f.IsSet() {
		return nil
	}
	e := f.Value()
	return checkRunError(&e)
}

func checkJSONPatch(what string, f Field[json.RawMessage], kind jsonKind) error {
	if !f.IsSet() {
		return nil
	}
	if f.Value() == nil {
		return fmt.Errorf("%w: patch sets %s to nothing; clear it instead", ErrInvalidEntry, what)
	}
	return checkJSON(what, f.Value(), kind)
}

// readOne is every read of one record by one id: ctx, then the id (named
// what in the error), then the driver's read, whose record is copied
// before it reaches the caller (the driver keeps its own).
func readOne[T any](ctx context.Context, what, id string, read func(context.Context, string) (*T, error), clone func(*T) *T) (*T, error) {
	if err := beginID(ctx, what, id); err != nil {
		return nil, err
	}
	rec, err := read(ctx, id)
	return clone(rec), err
}
