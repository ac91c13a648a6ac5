package driver

// Caller-chosen op tokens (package contract holds the scheme; the names
// here are kept for the callers of this package). A store honours the token
// in Append, DeleteHead, ForkFromCheckpoint and AcquireWriter: a second
// call with the token of a call that committed reports that call's success
// (for AcquireWriter, the same lease: the token is the lease's owner
// token). The other writes are idempotent by themselves — a repeated
// DeleteCheckpoints or DeleteThread deletes nothing more and reports only
// what it deleted itself; Renew, Release, SaveThread and Import repeat to
// the same state.

import (
	"context"

	"github.com/ckptstore/ckptstore/contract"
)

// MaxOpTokenBytes is the longest op token: contract.MaxIDBytes, the one
// limit of every id and token.
const MaxOpTokenBytes = contract.MaxIDBytes

// WithOpToken returns ctx carrying the op token of one logical write
// (contract.WithOpToken). The token must be unguessable (it becomes a
// lease's owner token), at most MaxOpTokenBytes of [A-Za-z0-9_-], and the
// same on every retry of that write and on no other write.
func WithOpToken(ctx context.Context, token string) context.Context {
	return contract.WithOpToken(ctx, token)
}

// OpToken returns the op token ctx carries, if any (contract.OpToken).
func OpToken(ctx context.Context) (string, bool) { return contract.OpToken(ctx) }

// ValidOpToken reports whether t is a well-formed op token
// (contract.ValidOpToken).
func ValidOpToken(t string) bool { return contract.ValidOpToken(t) }

// OpTokenContext is a context carrying an op token without an allocation
// of its own (contract.OpTokenContext).
type OpTokenContext = contract.OpTokenContext
