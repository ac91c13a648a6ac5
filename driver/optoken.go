package driver

// Caller-chosen op tokens. Every database-backed store already makes its
// writes idempotent with an op token per call: a retry after an unknown
// commit result finds the token's marker and reports the success instead of
// failing its own checks. WithOpToken lets the caller choose that token, so
// that a retry that comes from outside the store — a client that lost the
// HTTP response and sends the write again, possibly to another server — is
// recognised the same way. The store keeps no other state for it, so
// servers in front of one store stay stateless.
//
// A store honours the token in Append, DeleteHead, ForkFromCheckpoint and
// AcquireWriter: a second call with the token of a call that committed
// reports that call's success (for AcquireWriter, the same lease: the token
// is the lease's owner token). The other writes are idempotent by
// themselves — a repeated DeleteCheckpoints or DeleteThread deletes nothing
// more and reports only what it deleted itself; Renew, Release, SaveThread
// and Import repeat to the same state.

import "context"

// MaxOpTokenBytes is the longest op token.
const MaxOpTokenBytes = 128

type opTokenKey struct{}

// WithOpToken returns ctx carrying the op token of one logical write. The
// token must be unguessable (it becomes a lease's owner token), at most
// MaxOpTokenBytes of [A-Za-z0-9_-], and the same on every retry of that
// write and on no other write; ValidOpToken checks the form.
func WithOpToken(ctx context.Context, token string) context.Context {
	return context.WithValue(ctx, opTokenKey{}, token)
}

// OpToken returns the op token ctx carries, if any.
func OpToken(ctx context.Context) (string, bool) {
	t, ok := ctx.Value(opTokenKey{}).(string)
	return t, ok && t != ""
}

// ValidOpToken reports whether t is a well-formed op token.
func ValidOpToken(t string) bool {
	if t == "" || len(t) > MaxOpTokenBytes {
		return false
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// OpTokenContext is a context carrying an op token, as WithOpToken returns
// one, for a caller that keeps it inside a value it allocates anyway (the
// HTTP handler's per-request state), so that carrying the token costs no
// allocation of its own. Set both fields before use; Value answers the op
// token's key with Token and hands every other key to Context, so
// cancellation and the values of Context pass through unchanged.
type OpTokenContext struct {
	context.Context
	Token string
}

// Value returns Token for the op token's key and Context's value for any
// other.
func (c *OpTokenContext) Value(key any) any {
	if _, ok := key.(opTokenKey); ok {
		return c.Token
	}
	return c.Context.Value(key)
}
