package streams

import (
	"errors"
	"fmt"
)

// Error is a failure of the stream contract, with its wire code. Errors
// compare by code (errors.Is(err, ErrNotFound)), so a driver may add
// detail to a sentinel's message and the fields a reply needs.
type Error struct {
	// Code is the wire code (STREAM_NOT_FOUND, …).
	Code string
	// Msg says what went wrong, bounded: it never echoes an unbounded input.
	Msg string
	// Tail is the stream's tail, for ErrClosed and ErrTailMismatch (the
	// reply's Stream-Next-Offset).
	Tail Pos
	// Epoch is the producer's current epoch, for ErrStaleEpoch.
	Epoch int64
	// Expected and Received are the producer sequences of ErrSeqGap.
	Expected, Received int64
}

func (e *Error) Error() string { return "streams: " + e.Msg }

// Is reports whether target is an *Error of the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// The errors of the contract, by code. Their HTTP status is in
// docs/streams.md.
var (
	// ErrBadRequest: a malformed header, offset, body or name (400).
	ErrBadRequest = &Error{Code: "BAD_REQUEST", Msg: "bad request"}
	// ErrNotFound: no stream of that name (or it expired) (404).
	ErrNotFound = &Error{Code: "STREAM_NOT_FOUND", Msg: "no such stream"}
	// ErrGone: the stream was deleted while forks still read it (410).
	ErrGone = &Error{Code: "STREAM_GONE", Msg: "the stream is deleted"}
	// ErrExists: a stream of that name exists with another configuration,
	// or the name is held by a deleted stream that forks still read (409).
	ErrExists = &Error{Code: "STREAM_EXISTS", Msg: "the stream exists with another configuration"}
	// ErrClosed: an append to a closed stream (409, Stream-Closed: true).
	ErrClosed = &Error{Code: "STREAM_CLOSED", Msg: "the stream is closed"}
	// ErrContentType: the body's content type is not the stream's (409).
	ErrContentType = &Error{Code: "CONTENT_TYPE_MISMATCH", Msg: "the content type is not the stream's"}
	// ErrTailMismatch: a conditional append (Ckpt-Expect-Offset) met
	// another tail (409, with the tail in Stream-Next-Offset).
	ErrTailMismatch = &Error{Code: "STREAM_TAIL_MISMATCH", Msg: "the stream's tail is not the expected offset"}
	// ErrSeqConflict: a Stream-Seq not above the last one (409).
	ErrSeqConflict = &Error{Code: "SEQ_CONFLICT", Msg: "Stream-Seq is not above the stream's last"}
	// ErrStaleEpoch: a producer epoch below the one the stream holds (403).
	ErrStaleEpoch = &Error{Code: "PRODUCER_STALE_EPOCH", Msg: "stale producer epoch"}
	// ErrSeqGap: a producer sequence past the next one expected (409).
	ErrSeqGap = &Error{Code: "PRODUCER_SEQ_GAP", Msg: "producer sequence gap"}
	// ErrTooLarge: a body over the server's limit (413).
	ErrTooLarge = &Error{Code: "PAYLOAD_TOO_LARGE", Msg: "the body is too large"}
	// ErrSourceGone: a fork of a stream that is deleted but still
	// forked (409).
	ErrSourceGone = &Error{Code: "FORK_SOURCE_GONE", Msg: "the fork's source is deleted"}
)

// errorf returns an error of sentinel's code with a message of its own.
func errorf(sentinel *Error, format string, args ...any) *Error {
	e := *sentinel
	e.Msg = fmt.Sprintf(format, args...)
	return &e
}

// Errorf returns an error of sentinel's code with the message format
// makes, for drivers that add detail to a sentinel.
func Errorf(sentinel *Error, format string, args ...any) *Error {
	return errorf(sentinel, format, args...)
}

// Code is the wire code of err: the code of the *Error it wraps, or "".
func Code(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}
