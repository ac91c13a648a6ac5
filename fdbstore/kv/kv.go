// Package kv is the small transactional key-value interface that fdbstore is
// written against. Its semantics are FoundationDB's, so that the same store
// code runs on a real cluster (package fdbkv, build tag fdb) and on memkv, an
// in-process engine used by tests and benchmarks.
//
// Semantics every implementation keeps:
//
//   - A transaction reads at one read version and sees its own writes.
//   - Reads (Get, GetRange) that are not snapshot reads add read-conflict
//     ranges; a commit fails with not_committed (1020) when any of them was
//     written by another transaction that committed after the read version.
//     That makes every transaction serializable.
//   - Snapshot reads add no conflict range.
//   - Add and CompareAndClear are atomic operations: they add no read conflict,
//     so two transactions that only Add to one key never conflict.
//   - Reads return futures: issue several, then wait on them, so a
//     transaction can do all its reads in one round trip.
//   - Limits: key 10,000 bytes, value 100,000 bytes, transaction 10,000,000
//     bytes, lifetime 5 seconds (transaction_too_old, 1007, after that).
//   - A commit may end with commit_unknown_result (1021): it may or may not
//     have been applied. Transact retries it like any retryable error, so the
//     function given to Transact must be idempotent: on a retry it must
//     recognise its own earlier commit.
package kv

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
)

// FoundationDB's limits, as documented in "Known Limitations".
const (
	MaxKeySize         = 10_000
	MaxValueSize       = 100_000
	MaxTransactionSize = 10_000_000
)

// FoundationDB error codes that this package names.
const (
	CodeTransactionTooOld      = 1007
	CodeFutureVersion          = 1009
	CodeNotCommitted           = 1020
	CodeCommitUnknownResult    = 1021
	CodeTransactionCancelled   = 1025
	CodeTransactionTimedOut    = 1031
	CodeProcessBehind          = 1037
	CodeTransactionTooLarge    = 2101
	CodeKeyTooLarge            = 2102
	CodeValueTooLarge          = 2103
	CodeInvertedRange          = 2005
	CodeKeyOutsideLegalRange   = 2004
	CodeRangeLimitsInvalid     = 2012
	CodeUsedDuringCommit       = 2017
	CodeClientInvalidOperation = 2000
)

// Error is a FoundationDB error: a numeric code and its message. Both the
// real binding adapter and memkv return errors of this type (possibly
// wrapped), so callers can use errors.As and the helpers below.
type Error struct {
	Code    int
	Message string
}

// Error formats the code and message as FoundationDB's clients print them.
func (e *Error) Error() string { return fmt.Sprintf("fdb error %d: %s", e.Code, e.Message) }

// NewError returns an *Error with FoundationDB's message for code.
func NewError(code int) *Error {
	msg, ok := messages[code]
	if !ok {
		msg = "unknown error"
	}
	return &Error{Code: code, Message: msg}
}

var messages = map[int]string{
	CodeTransactionTooOld:      "Transaction is too old to perform reads or be committed",
	CodeFutureVersion:          "Request for future version",
	CodeNotCommitted:           "Transaction not committed due to conflict with another transaction",
	CodeCommitUnknownResult:    "Transaction may or may not have committed",
	CodeTransactionCancelled:   "Operation aborted because the transaction was cancelled",
	CodeTransactionTimedOut:    "Operation aborted because the transaction timed out",
	CodeProcessBehind:          "Storage process does not have recent mutations",
	CodeTransactionTooLarge:    "Transaction exceeds byte limit",
	CodeKeyTooLarge:            "Key length exceeds limit",
	CodeValueTooLarge:          "Value length exceeds limit",
	CodeInvertedRange:          "Range begin key larger than end key",
	CodeKeyOutsideLegalRange:   "Key outside legal range",
	CodeRangeLimitsInvalid:     "Range limits not valid",
	CodeUsedDuringCommit:       "Operation issued while a commit was outstanding",
	CodeClientInvalidOperation: "Invalid API call",
}

// ErrorCode returns the FoundationDB code of err, or 0 when err carries none.
func ErrorCode(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

// IsRetryable reports whether FoundationDB's on_error would retry err: the
// transaction may be run again from the start.
func IsRetryable(err error) bool {
	switch ErrorCode(err) {
	case CodeTransactionTooOld, CodeFutureVersion, CodeNotCommitted,
		CodeCommitUnknownResult, CodeProcessBehind:
		return true
	}
	return false
}

// MaybeCommitted reports whether err leaves the commit's outcome unknown.
func MaybeCommitted(err error) bool { return ErrorCode(err) == CodeCommitUnknownResult }

// KeyRange is the half-open range [Begin, End).
type KeyRange struct {
	Begin, End []byte
}

// PrefixRange is the range of every key that starts with prefix, the prefix
// itself included, as FoundationDB's PrefixRange: [prefix, Strinc(prefix)).
func PrefixRange(prefix []byte) KeyRange {
	begin := append([]byte(nil), prefix...)
	return KeyRange{Begin: begin, End: Strinc(prefix)}
}

// Strinc returns the first key after every key that starts with prefix:
// prefix with its trailing 0xff bytes removed and the last byte incremented.
// It panics when prefix is empty or all 0xff, as FoundationDB's does.
func Strinc(prefix []byte) []byte {
	p := append([]byte(nil), prefix...)
	for len(p) > 0 && p[len(p)-1] == 0xff {
		p = p[:len(p)-1]
	}
	if len(p) == 0 {
		panic("kv: Strinc of an empty or all-0xff key")
	}
	p[len(p)-1]++
	return p
}

// KeyValue is one key and its value.
type KeyValue struct {
	Key, Value []byte
}

// RangeOptions shapes a range read. The zero value reads the whole range in
// ascending key order.
type RangeOptions struct {
	Limit   int  // at most this many pairs; 0 or -1 = no limit (FoundationDB's unlimited); below -1 fails with range_limits_invalid
	Reverse bool // descending key order (the limit then keeps the last keys)
}

// FutureValue is the pending result of Get.
type FutureValue interface {
	// Get waits for the value: nil (and no error) when the key is absent.
	Get() ([]byte, error)
}

// FutureRange is the pending result of GetRange.
type FutureRange interface {
	// Get waits for the pairs, in the order RangeOptions asked for.
	Get() ([]KeyValue, error)
}

// ReadTransaction is the read half of a transaction.
type ReadTransaction interface {
	Get(key []byte) FutureValue
	// GetRange reads the pairs of r; an inverted range (Begin > End)
	// reads none, without an error, as FoundationDB answers it.
	GetRange(r KeyRange, opts RangeOptions) FutureRange
	// Snapshot returns a view of the same transaction whose reads add no
	// read-conflict range.
	Snapshot() ReadTransaction
}

// Transaction is a read-write transaction. Writes are buffered and applied
// atomically at commit; later reads in the same transaction see them.
type Transaction interface {
	ReadTransaction
	Set(key, value []byte)
	// Clear removes key; a key longer than MaxKeySize cannot exist, and
	// its clear is dropped without an error (FoundationDB's behaviour).
	Clear(key []byte)
	ClearRange(r KeyRange)
	// Add atomically adds delta to the little-endian int64 stored at key
	// (an absent key counts as 0). It adds no read conflict.
	Add(key []byte, delta int64)
	// CompareAndClear atomically clears key when its value equals value.
	// It adds no read conflict.
	CompareAndClear(key, value []byte)
	// AddReadConflictRange makes the commit conflict with any write to r
	// committed after the read version, as if r had been read.
	AddReadConflictRange(r KeyRange)
}

// DB runs transactions.
type DB interface {
	// Transact runs fn in a new transaction and commits it. On a
	// retryable error (from fn or from the commit) it backs off and runs fn
	// again in a fresh transaction, until it commits, fn returns a
	// non-retryable error, or ctx ends (then ctx's error is returned,
	// wrapped). fn must be idempotent: after commit_unknown_result its
	// first run may have committed.
	Transact(ctx context.Context, fn func(tr Transaction) error) error
	// ReadTransact runs fn in a transaction that is never committed,
	// retrying it like Transact.
	ReadTransact(ctx context.Context, fn func(tr ReadTransaction) error) error
}

// EncodeInt64 returns the 8-byte little-endian form that Add operates on.
func EncodeInt64(v int64) []byte {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(v))
	return b[:]
}

// DecodeInt64 reads a value written by Add or EncodeInt64. Shorter values
// are zero-extended, as FoundationDB's ADD treats them; nil is 0.
func DecodeInt64(b []byte) int64 {
	var buf [8]byte
	copy(buf[:], b)
	return int64(binary.LittleEndian.Uint64(buf[:]))
}
