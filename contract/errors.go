package contract

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// Error is a violation of a contract: one value per sentinel, so that
// errors.Is matches exactly one sentinel and Code finds the wire code
// through any wrapping. Make one with NewError.
type Error struct {
	prefix, code, msg string
}

// Error is the prefix (the contract's package, "ckptstore", "persist"),
// ": " and the message.
func (e *Error) Error() string { return e.prefix + ": " + e.msg }

// Code is e's wire code.
func (e *Error) Code() string { return e.code }

// registry maps each wire code to its sentinel. It is written only by
// NewError (in practice from package initialisation) and read by ErrorFor,
// which a client calls per error reply, so readers take no lock: writers
// copy the map under mu and publish the copy.
var registry struct {
	mu     sync.Mutex
	byCode atomic.Pointer[map[string]*Error]
}

// NewError returns a new contract sentinel and registers it for ErrorFor.
// Each wire code names one sentinel across every contract: registering a
// code twice panics, since two contracts claiming one code is a build
// mistake that would make a code mean two errors on the wire.
func NewError(prefix, code, msg string) *Error {
	if code == "" {
		panic("contract: NewError needs a wire code")
	}
	e := &Error{prefix: prefix, code: code, msg: msg}
	registry.mu.Lock()
	defer registry.mu.Unlock()
	next := map[string]*Error{}
	if cur := registry.byCode.Load(); cur != nil {
		for c, s := range *cur {
			next[c] = s
		}
	}
	if _, dup := next[code]; dup {
		panic(fmt.Sprintf("contract: wire code %s registered twice", code))
	}
	next[code] = e
	registry.byCode.Store(&next)
	return e
}

// Code returns the wire code of the contract error err wraps, of whichever
// contract, or "" when err is nil or wraps none. Wire codes are unique
// across contracts, so the code alone says which contract an error is of.
func Code(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.code
	}
	return ""
}

// ErrorFor returns the sentinel whose wire code is code, of any registered
// contract, or nil for any other string. It turns a code that crossed a
// wire (from the TypeScript side, an HTTP reply, a store's server-side
// script) back into an errors.Is-able value.
func ErrorFor(code string) error {
	if m := registry.byCode.Load(); m != nil {
		if e, ok := (*m)[code]; ok {
			return e
		}
	}
	return nil
}

// ErrCorrupt reports stored data that breaks an engine's invariants: a
// value that does not decode, a key outside its layout. It is not a
// contract error (Code returns "" for it): no input causes it, and an
// engine's checker (Check, ckptctl check) says what is broken. Every
// contract of every engine reports corruption with this one value.
var ErrCorrupt = errors.New("ckptstore: stored data is corrupt")
