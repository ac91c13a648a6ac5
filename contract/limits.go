package contract

// Invariant: every error built here has a size bounded by a constant plus
// the caller's field name, whatever the length of the input it describes.

import (
	"errors"
	"fmt"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// The limits every contract and every engine shares.
const (
	// MaxIDBytes is the longest id, key, namespace or token of every
	// contract, in bytes: a thread id, checkpoint id or instance key, a
	// run, interrupt or artifact id, a metadata namespace or key, a blob
	// key, a lock key or token, an op token, a tenant's namespace. The
	// bound keeps what one id costs — every index key that holds it, every
	// list that returns it, every error that names it — small on every
	// engine, well inside FoundationDB's 10 kB key limit.
	MaxIDBytes = 1024
	// MaxSafeInteger is 2^53−1, the largest integer a JavaScript number
	// (and so a JSON number the TypeScript side reads) holds exactly. Every
	// time, size, count and epoch a contract stores is within
	// ±MaxSafeInteger.
	MaxSafeInteger = 1<<53 - 1
	// MaxListLimit is the largest page an engine is asked for in one call.
	MaxListLimit = 1000
	// MaxJSONDepth is the deepest nesting of objects and arrays in a JSON
	// value a contract stores (a conversation, a transcript, a metadata
	// value, a payload, a response, a usage or result): part of the
	// JSON-validity rule, and refused with the contract's invalid-entry
	// error. The wire reader accepts 10,000 levels (encoding/json's
	// limit) for a whole request or stored record, whose envelope nests a
	// value a few levels deeper than it is; a bound of 1,000 leaves that
	// envelope 9,000 levels, so a value a contract accepts always fits
	// the request that carries it and reads back from every engine's
	// stored form, in process and through HTTP alike. It also bounds the
	// recursion of every scan of a value, and is far above the nesting of
	// any message list or record a model or tool writes.
	MaxJSONDepth = 1000
)

// SafeInteger reports whether v is within ±MaxSafeInteger.
func SafeInteger(v int64) bool { return -MaxSafeInteger <= v && v <= MaxSafeInteger }

// CheckID returns sentinel (the contract's invalid-id error), wrapped with
// why, unless id is 1 to MaxIDBytes bytes of valid UTF-8. The error quotes
// at most a short prefix of id (QuoteShort).
func CheckID(id string, sentinel error) error { return CheckNamedID("id", id, sentinel) }

// CheckNamedID is CheckID with the field's name (what: "thread id",
// "runId") in the error. It costs no allocation when id passes.
func CheckNamedID(what, id string, sentinel error) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: %s is empty", sentinel, what)
	case len(id) > MaxIDBytes:
		return fmt.Errorf("%w: %s %s is longer than %d bytes", sentinel, what, QuoteShort(id), MaxIDBytes)
	case !utf8.ValidString(id):
		return fmt.Errorf("%w: %s %s is not valid UTF-8", sentinel, what, QuoteShort(id))
	}
	return nil
}

// ErrInvalidNamespace is wrapped by CheckNamespace's errors. A namespace
// is not an argument of a contract's methods but the tenant a request is
// for, so it has no wire code of its own: front ends wrap it in their own
// usage error (storeurl.ErrBadURL, httpstore's BAD_REQUEST).
var ErrInvalidNamespace = errors.New("invalid namespace")

// CheckNamespace is the namespace rule: a tenant's name is 1 to MaxIDBytes
// bytes of valid UTF-8, the id rule, else the error wraps
// ErrInvalidNamespace. Any such name is a namespace: each engine maps it
// to its own key space injectively and prefix-free, so no byte of it
// (NUL, braces, glob characters) needs refusing.
func CheckNamespace(name string) error { return CheckNamedID("namespace", name, ErrInvalidNamespace) }

// quoteShortBytes is how much of an input QuoteShort quotes: enough to
// recognise it, while the error stays small however long the input.
const quoteShortBytes = 64

// QuoteShort quotes s for an error message (%q), or, when s is longer than
// 64 bytes, at most its first 64 bytes (cut between UTF-8 sequences) and
// its length: an error never echoes an unbounded input. The result is at
// most 4·64+2 bytes of quoted text and a length suffix.
func QuoteShort(s string) string {
	if len(s) <= quoteShortBytes {
		return strconv.Quote(s)
	}
	return strconv.Quote(CutUTF8(s, quoteShortBytes)) + "… (" + strconv.Itoa(len(s)) + " bytes)"
}

// CutUTF8 is s cut to at most n bytes, not inside a UTF-8 sequence.
func CutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && i > n-utf8.UTFMax && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i]
}

// ShowID is an id, already checked to be at most MaxIDBytes, as an error
// shows it after the sentinel's message and ": ". Some callers' tests
// match on the id as it is (TanStack's InterruptStore words a commit
// batch's rejections "missing id: <id>"), so a printable id is written as
// it is; one with a control or other non-printable character, or invalid
// UTF-8, is Go-quoted, so it never reaches a message raw.
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
