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

// Prefix is the prefix of e's message: the contract's package
// ("ckptstore", "persist"), which tells the contracts' errors apart.
func (e *Error) Prefix() string { return e.prefix }

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

// CodeIn is Code for the errors of one contract, those whose Prefix is
// prefix: the wire code of the first such error err wraps, or "". A
// contract's layer uses it to tell an error of its own from another
// contract's that reached it (a checkpoint error inside a persistence
// call is not a persistence error).
func CodeIn(err error, prefix string) string {
	if e := findIn(err, prefix); e != nil {
		return e.code
	}
	return ""
}

// findIn walks err's tree as errors.As does (depth first, Unwrap() error
// and Unwrap() []error) for the first *Error of the contract prefix.
func findIn(err error, prefix string) *Error {
	for err != nil {
		if e, ok := err.(*Error); ok && e.prefix == prefix {
			return e
		}
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		case interface{ Unwrap() []error }:
			for _, err := range u.Unwrap() {
				if e := findIn(err, prefix); e != nil {
					return e
				}
			}
			return nil
		default:
			return nil
		}
	}
	return nil
}

// ErrorIn is ErrorFor for the sentinels of one contract: the sentinel of
// code when its Prefix is prefix, else nil.
func ErrorIn(code, prefix string) error {
	if m := registry.byCode.Load(); m != nil {
		if e, ok := (*m)[code]; ok && e.prefix == prefix {
			return e
		}
	}
	return nil
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
