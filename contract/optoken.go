package contract

// Caller-chosen op tokens. Every engine makes its writes idempotent with an
// op token per call: a retry after an unknown commit result finds the
// token's marker and reports the success instead of failing its own checks.
// WithOpToken lets the caller choose that token, so that a retry that comes
// from outside the store — a client that lost the HTTP response and sends
// the write again, possibly to another server — is recognised the same way.
// The store keeps no other state for it, so servers in front of one store
// stay stateless. Each contract says which of its writes honour the token.

import (
	"context"
	"fmt"
	"time"
)

// OpTokenTTL is how long, on the store's clock, an engine remembers the op
// token of a committed write: a retry within it reports the first call's
// outcome, a later one runs as a new call. A client retries a lost reply
// within seconds; ten minutes is ample and keeps the tables small.
const OpTokenTTL = 10 * time.Minute

type opTokenKey struct{}

// WithOpToken returns ctx carrying the op token of one logical write. The
// token must be unguessable (it may become a lease's owner token), 1 to
// MaxIDBytes of [A-Za-z0-9_-], and the same on every retry of that write
// and on no other write; ValidOpToken checks the form.
func WithOpToken(ctx context.Context, token string) context.Context {
	return context.WithValue(ctx, opTokenKey{}, token)
}

// OpToken returns the op token ctx carries, if any.
func OpToken(ctx context.Context) (string, bool) {
	t, ok := ctx.Value(opTokenKey{}).(string)
	return t, ok && t != ""
}

// ValidOpToken reports whether t is a well-formed op token: 1 to
// MaxIDBytes bytes of [A-Za-z0-9_-]. The charset keeps a token usable
// as it is in a header, a key and a log line.
func ValidOpToken(t string) bool {
	if t == "" || len(t) > MaxIDBytes {
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

// CheckOpToken returns the op token ctx carries, "" for none, or sentinel
// (the contract's invalid-entry error) wrapped for one that is not well
// formed: it may become an owner token, and a malformed one is a caller's
// bug.
func CheckOpToken(ctx context.Context, sentinel error) (string, error) {
	t, ok := OpToken(ctx)
	if !ok {
		return "", nil
	}
	if !ValidOpToken(t) {
		return "", fmt.Errorf("%w: op token is not 1 to %d characters of [A-Za-z0-9_-]", sentinel, MaxIDBytes)
	}
	return t, nil
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
