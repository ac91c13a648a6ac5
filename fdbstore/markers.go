package fdbstore

// Op markers and the read round every write starts with.
//
// A write's transaction may be run again after commit_unknown_result, and
// a caller may send a write again after losing its reply (with the same
// ckptstore.WithOpToken). Either way the write must recognise that an
// earlier run committed, and report that success rather than fail checks
// its own write now fails. So every write of the contract stores a marker
// under its thread, (P, "t", …, thread, "o", token) → tuple(wallMillis,
// result…), in the transaction that does the write, and every run first
// reads its marker.
//
// The marker lives under the thread, not in one global range: every write
// already touches its thread's keys, so the markers add no key range that
// all writers share (the old global (P, "o", wallMillis, token) range grew
// at its end and put every write's marker on one storage team). The key is
// (T, "o", epoch, token), where the epoch is the write's start time in
// whole markerTTLs. A caller's repeat does not know when the first call
// ran, so a write looks its token up in its epoch and the one before (two
// point reads in its one read round); and every write clears, blind, its
// thread's markers of the epochs before those two. So markers live
// between one and two markerTTLs, and a thread keeps the markers of its
// writes of the last two epochs.
//
// A thread that stops writing keeps its last markers (about 80 bytes per
// write of its last two epochs), and DeleteThread leaves them: they make
// its own batches and the writes before it idempotent. They go with the
// thread's next write.

import (
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/fdbstore/internal/tuple"
	"github.com/ckptstore/ckptstore/fdbstore/kv"
)

// errGaveUp ends a write that kept failing for half the marker lifetime: a
// later retry could no longer tell whether an earlier attempt committed.
var errGaveUp = errors.New("fdbstore: gave up retrying a write; an earlier attempt may or may not have committed")

// markerTTL is how long op markers are kept. A write that has retried for
// markerTTL/2 gives up (errGaveUp), so its marker is always still there
// when it looks; a caller that repeats a write with its op token is
// recognised for markerTTL after the first call committed. Writers' wall
// clocks must agree to well within markerTTL/2.
const markerTTL = 10 * time.Minute

// opKind names the write a marker is of, so that a caller who reuses an op
// token for another kind of write gets that write run, not the other's
// result.
type opKind byte

const (
	opAppend       opKind = 'a'
	opDeleteHead   opKind = 'd'
	opPrune        opKind = 'p'
	opFork         opKind = 'f'
	opAcquire      opKind = 'w'
	opRenew        opKind = 'r'
	opDeleteThread opKind = 't'
	opImport       opKind = 'i'
)

// opKinds holds every opKind of the checkpoint writes, for Check.
const opKinds = "adpfwrti"

// opCall is the kind of the persistence's markers (persist.go), which
// record one call's result as JSON under (Q, "op", token).
const opCall opKind = 'q'

// op is one write call's identity across the retries of its transaction.
type op struct {
	kind     opKind
	thread   string // whose subspace holds the marker
	token    string
	ms       int64 // wall-clock milliseconds at the call's start
	start    time.Time
	attempts int
	marker   []byte // the marker key
}

// newOp returns the op of a write of thread with a fresh random token.
func (s *Driver) newOp(kind opKind, thread string) *op {
	return s.opWithToken(kind, thread, rand.Text())
}

// callerOp returns the op of a write of thread that honours the caller's
// op token (ckptstore.WithOpToken, checked by the portable store): Append,
// DeleteHead, ForkFromCheckpoint and AcquireWriter. Without one ("") the
// op gets a fresh token.
func (s *Driver) callerOp(token string, kind opKind, thread string) *op {
	if token == "" {
		return s.newOp(kind, thread)
	}
	return s.opWithToken(kind, thread, token)
}

func (s *Driver) opWithToken(kind opKind, thread, token string) *op {
	now := s.wallNow() // the wall clock, not Options.Now: markers measure real retry time
	o := &op{kind: kind, thread: thread, token: token, ms: now.UnixMilli(), start: now}
	o.marker = s.k.opMarker(thread, epochOf(now), token)
	return o
}

// wallNow is the wall clock of markers: time.Now, or the test's clock.
func (s *Driver) wallNow() time.Time {
	if s.opts.wallClock != nil {
		return s.opts.wallClock()
	}
	return time.Now()
}

// writeRound is the reads every write starts before any other: its
// marker (in the op's epoch and the one before), and the thread's lease
// and head when the write needs them. The write then starts its own reads and
// waits, so that all of them take one round trip.
type writeRound struct {
	s      *Driver
	o      *op
	marker kv.FutureValue
	prev   kv.FutureValue // the token in the epoch before
	epoch  int64          // the marker epoch of this attempt
	lease  kv.FutureValue // nil unless asked for
	head   kv.FutureValue // nil unless asked for
	// now is the lease clock of this attempt, read once: every lease
	// decision of the attempt (live or not, the new expiry) uses it, so a
	// renew cannot check at one instant and extend from a later one.
	now time.Time
}

// Which thread keys a write round reads besides the marker.
const (
	readLease = 1 << iota
	readHead
)

// startRound counts an attempt of o, gives up when o has retried for too
// long, and starts the round's reads: o's marker in its epoch and in the
// one before, where a caller's earlier call may have left it.
func (s *Driver) startRound(tr kv.Transaction, o *op, reads int) (*writeRound, error) {
	o.attempts++
	if o.attempts > 1 && s.wallNow().Sub(o.start) > markerTTL/2 {
		return nil, errGaveUp
	}
	r := &writeRound{s: s, o: o, marker: tr.Get(o.marker), epoch: epochOf(s.wallNow()), now: s.opts.Now()}
	r.prev = tr.Get(s.k.opMarker(o.thread, epochOf(o.start)-1, o.token))
	if reads&readLease != 0 {
		r.lease = tr.Get(s.k.lease(o.thread))
	}
	if reads&readHead != 0 {
		r.head = tr.Get(s.k.head(o.thread))
	}
	return r, nil
}

// done waits for the marker: true, with the result the committed run
// stored, when an earlier run of this op committed. A marker of another
// kind of write (a caller's token reused) does not count.
func (r *writeRound) done() (bool, []byte, error) {
	v, err := r.marker.Get()
	if err != nil {
		return false, nil, err
	}
	if v == nil {
		if v, err = r.prev.Get(); err != nil {
			return false, nil, err
		}
	}
	if v == nil {
		return false, nil, nil
	}
	_, rest, err := decodeMarker(v)
	if err != nil {
		return false, nil, err
	}
	if len(rest) == 0 {
		return false, nil, fmt.Errorf("%w: op marker %x without its kind", ErrCorrupt, v)
	}
	if opKind(rest[0]) != r.o.kind {
		return false, nil, nil
	}
	return true, rest[1:], nil
}

// checkWriter waits for the lease and checks that w is the thread's live
// lease (ErrWriterLost).
func (r *writeRound) checkWriter(w ckptstore.Writer) error {
	raw, err := r.lease.Get()
	if err != nil {
		return err
	}
	return r.s.checkWriter(r.o.thread, w, raw, r.now)
}

// headID waits for the head: "" when the thread has none.
func (r *writeRound) headID() (string, error) {
	h, err := r.head.Get()
	return string(h), err
}

// finish writes the marker, with result for a caller that repeats the
// write, and clears the thread's expired markers.
func (r *writeRound) finish(tr kv.Transaction, result []byte) error {
	o := r.o
	tr.Set(o.marker, encodeMarker(o.ms, o.kind, result))
	// Blind: the epochs before the two that lookups read.
	tr.ClearRange(r.s.k.opsBefore(o.thread, r.epoch-1))
	return nil
}

// epochOf is the marker epoch of t: whole markerTTLs since the Unix epoch.
func epochOf(t time.Time) int64 { return t.UnixMilli() / markerTTL.Milliseconds() }

// encodeMarker is a marker's value: the packed wall-clock milliseconds of
// the call, its kind, and its result.
func encodeMarker(ms int64, kind opKind, result []byte) []byte {
	b := tuple.AppendInt(make([]byte, 0, tuple.MaxIntLen+1+len(result)), ms)
	return append(append(b, byte(kind)), result...)
}

// callResult is the result a persistence marker records, or an error for
// a value that is not one.
func callResult(v []byte) ([]byte, error) {
	_, rest, err := decodeMarker(v)
	if err != nil {
		return nil, err
	}
	if len(rest) == 0 || opKind(rest[0]) != opCall {
		return nil, fmt.Errorf("%w: op marker %x is not a persistence call's", ErrCorrupt, v)
	}
	return rest[1:], nil
}

// decodeMarker splits a marker value into its time and the result bytes
// that follow the packed time.
func decodeMarker(v []byte) (ms int64, result []byte, err error) {
	if len(v) < 1 {
		return 0, nil, fmt.Errorf("%w: empty op marker", ErrCorrupt)
	}
	// The value starts with one packed int element: its code gives its length.
	n := 1 + int(v[0]) - 0x14
	if v[0] < 0x14 || v[0] > 0x1c || len(v) < n {
		return 0, nil, fmt.Errorf("%w: op marker %x", ErrCorrupt, v)
	}
	t, err := tuple.Unpack(v[:n])
	if err != nil || len(t) != 1 {
		return 0, nil, fmt.Errorf("%w: op marker %x", ErrCorrupt, v)
	}
	ms, ok := t[0].(int64)
	if !ok {
		return 0, nil, fmt.Errorf("%w: op marker %x", ErrCorrupt, v)
	}
	return ms, v[n:], nil
}

// markerCost bounds what a write round's marker reads and finish add to a
// transaction of thread, for the longest token.
func (s *Driver) markerCost(thread string) int {
	tok := string(make([]byte, driver.MaxOpTokenBytes))
	marker := s.k.opMarker(thread, 1<<62, tok)
	return 2*costRead(marker) + costSet(marker, tuple.MaxIntLen+maxResultBytes) + costRange(s.k.opsBefore(thread, 1<<62))
}

// maxResultBytes bounds the result a marker stores: its kind and
// AcquireWriter's or RenewWriter's lease.
const maxResultBytes = 1 + 3*tuple.MaxIntLen
