package contract

import (
	"context"
	"fmt"
)

// Checker is an engine that can verify its own stored state: it reads the
// whole key space and reports every broken invariant of its layout, for
// every contract the engine holds. Tools (ckptctl check) and tests call it
// through this one interface, whatever the engine.
//
// Check is for operators and tests, not for hot paths: it reads every key.
// The store should be quiet while it runs, since a write between its reads
// can show as a problem that is not one. The error is for a store that
// could not be read; a consistent store returns no problem and no error.
type Checker interface {
	Check(ctx context.Context) ([]Problem, error)
}

// CheckProgress is how far a check has read: the keys so far, and the
// share of the key space they are when the engine can tell.
type CheckProgress struct {
	// Keys is how many keys the check has read.
	Keys int
	// Done is the share of the key space read, in [0, 1], or -1 when the
	// engine cannot tell (it has no count of the keys ahead).
	Done float64
}

// ProgressChecker is a Checker that reports its progress: report is
// called from the goroutine of CheckProgress after each page it reads, so
// a tool can show how far a long check is. The result is Check's.
type ProgressChecker interface {
	Checker
	CheckProgress(ctx context.Context, report func(CheckProgress)) ([]Problem, error)
}

// Problem is one broken invariant: the key where it shows (printed with
// %q, since keys may hold any byte) and what is wrong. It is also an error
// that wraps ErrCorrupt, so that a caller can join the problems into one
// error (errors.Join) that errors.Is recognises.
type Problem struct {
	Key  string
	What string
}

// String is the key, quoted, and what is wrong.
func (p Problem) String() string { return fmt.Sprintf("%q: %s", p.Key, p.What) }

// Error is String: a Problem is an error too.
func (p Problem) Error() string { return p.String() }

// Unwrap returns ErrCorrupt.
func (p Problem) Unwrap() error { return ErrCorrupt }
