//go:build fdb

// Package fdbkv implements kv.DB over a real FoundationDB cluster through
// the official Go binding (github.com/apple/foundationdb/bindings/go, API
// version 730). It needs cgo and the FoundationDB client library (libfdb_c,
// from the foundationdb-clients package), so it builds only with the build
// tag fdb:
//
//	go test -tags fdb ./...
//
// Invariants:
//
//   - Every error that comes from FoundationDB reaches the caller as a
//     *kv.Error with the same code (the binding's fdb.Error is mapped at
//     each future and at commit), so store code is identical on memkv and
//     here.
//   - Transact and ReadTransact are the binding's retry loop (run fn,
//     commit, on error wait on Transaction.OnError, which backs off and
//     resets the transaction when the error is retryable), plus context
//     support: the ctx deadline becomes the transaction's timeout option,
//     and ctx cancellation cancels the transaction, after which the loop
//     returns ctx's error. A timeout (1031) under a ctx deadline is
//     reported as context.DeadlineExceeded, even when ctx has not yet
//     noticed its deadline.
//   - Errors that are not FoundationDB errors (those fn returns itself)
//     end the loop unchanged and are never retried.
//   - An error the binding reports without a future (AddReadConflictRange)
//     is remembered and ends the attempt before commit, as it would fail
//     the commit anyway.
package fdbkv

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apple/foundationdb/bindings/go/src/fdb"

	"github.com/ckptstore/ckptstore/fdbstore/kv"
)

// APIVersion is the FoundationDB API version this package selects: 7.3.
const APIVersion = 730

// DB is a FoundationDB database as a kv.DB. It is safe for concurrent use.
type DB struct {
	db          fdb.Database
	clusterFile string
	watches     *watchCount // the shared handle's

	closeOnce sync.Once
	// closed is set by Close: a transaction on a closed DB fails with
	// ErrClosed instead of reaching a handle the binding may have freed
	// (which crashes the process in C).
	closed atomic.Bool
}

// ErrClosed is the error of a transaction on a DB after its Close.
var ErrClosed = errors.New("fdbkv: the DB is closed")

var _ kv.DB = (*DB)(nil)

// The binding caches one fdb.Database per cluster file in an unguarded map
// and closing it destroys the shared handle, so Open and Close serialize
// here and count the users of each handle.
var (
	openMu sync.Mutex
	opened = map[string]*sharedDB{}
)

type sharedDB struct {
	db    fdb.Database
	users int
	// watches counts the handle's outstanding watches (watch.go).
	watches watchCount
}

// Open connects to the cluster named by clusterFile ("" = the default
// cluster file: $FDB_CLUSTER_FILE, then the platform default). It selects API
// version 730 on first use; a process that already selected another version
// gets an error. Close the DB when done with it.
func Open(clusterFile string) (*DB, error) {
	if err := fdb.APIVersion(APIVersion); err != nil {
		return nil, fmt.Errorf("fdbkv: select API version %d: %w", APIVersion, mapError(err))
	}
	openMu.Lock()
	defer openMu.Unlock()
	s := opened[clusterFile]
	if s == nil {
		db, err := fdb.OpenDatabase(clusterFile)
		if err != nil {
			return nil, fmt.Errorf("fdbkv: open %q: %w", clusterFile, mapError(err))
		}
		s = &sharedDB{db: db}
		if err := s.watches.setMax(db, 0); err != nil {
			db.Close()
			return nil, err
		}
		opened[clusterFile] = s
	}
	s.users++
	return &DB{db: s.db, clusterFile: clusterFile, watches: &s.watches}, nil
}

// Close releases the database handle. The binding shares one handle per
// cluster file; it is destroyed when the last DB that uses it is closed.
// Close is idempotent. A transaction started after Close fails with
// ErrClosed; closing a DB while its transactions run is a misuse.
func (d *DB) Close() {
	d.closeOnce.Do(func() {
		d.closed.Store(true)
		openMu.Lock()
		defer openMu.Unlock()
		s := opened[d.clusterFile]
		if s == nil {
			return
		}
		s.users--
		if s.users == 0 {
			delete(opened, d.clusterFile)
			s.db.Close()
		}
	})
}

// Transact implements kv.DB.
func (d *DB) Transact(ctx context.Context, fn func(tr kv.Transaction) error) error {
	return d.run(ctx, true, func(t *transaction) error { return fn(t) })
}

// ReadTransact implements kv.DB. The transaction is never committed.
func (d *DB) ReadTransact(ctx context.Context, fn func(tr kv.ReadTransaction) error) error {
	return d.run(ctx, false, func(t *transaction) error { return fn(t) })
}

// run is the retry loop shared by Transact and ReadTransact.
func (d *DB) run(ctx context.Context, commit bool, fn func(t *transaction) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("fdbkv: %w", err)
	}
	if d.closed.Load() {
		return ErrClosed
	}
	tr, err := d.db.CreateTransaction()
	if err != nil {
		return fmt.Errorf("fdbkv: create transaction: %w", mapError(err))
	}
	deadline, hasDeadline := ctx.Deadline()
	if hasDeadline {
		// The timeout counts from the transaction's creation and, at API
		// version ≥ 610, survives OnError's reset: it bounds all retries.
		if err := tr.Options().SetTimeout(timeoutMillis(time.Until(deadline))); err != nil {
			return fmt.Errorf("fdbkv: set timeout: %w", mapError(err))
		}
	}
	// Cancel makes every pending and later future of tr fail with
	// transaction_cancelled, which unblocks a wait on ctx's behalf.
	stop := context.AfterFunc(ctx, tr.Cancel)
	defer stop()

	for {
		t := &transaction{tr: tr}
		err := fn(t)
		if err == nil {
			err = t.err
		}
		if err == nil && commit {
			err = mapError(tr.Commit().Get())
		}
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			// Whatever failed, the caller's context ended: report that.
			// A commit interrupted this way may still have been applied.
			return fmt.Errorf("fdbkv: %w (last error: %v)", ctx.Err(), err)
		}
		code := kv.ErrorCode(err)
		if code == 0 {
			return err // fn's own error: not retried
		}
		if hasDeadline && code == kv.CodeTransactionTimedOut {
			return deadlineError(err)
		}
		// OnError waits out the backoff and resets tr when the error is
		// retryable; otherwise it returns the error (maybe another code).
		if oerr := tr.OnError(fdb.Error{Code: code}).Get(); oerr != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("fdbkv: %w (last error: %v)", ctx.Err(), err)
			}
			if hasDeadline && kv.ErrorCode(mapError(oerr)) == kv.CodeTransactionTimedOut {
				return deadlineError(fmt.Errorf("%v (after %v)", mapError(oerr), err))
			}
			if kv.ErrorCode(mapError(oerr)) == code {
				return err
			}
			return fmt.Errorf("%w (after %v)", mapError(oerr), err)
		}
	}
}

// deadlineError reports the transaction_timed_out (1031) of the timeout
// option that ctx's deadline set as that deadline: the cluster's timer can
// fire a moment before ctx's (the option is set in whole milliseconds, from
// the transaction's creation), and a caller must see context.DeadlineExceeded
// either way, as memkv reports it. last is the error that ended the attempt.
func deadlineError(last error) error {
	return fmt.Errorf("fdbkv: %w (last error: %v)", context.DeadlineExceeded, last)
}

// timeoutMillis converts the time left before a deadline to the timeout
// option's milliseconds: at least 1 (0 would disable the timeout) and at
// most INT_MAX.
func timeoutMillis(d time.Duration) int64 {
	ms := d.Milliseconds()
	switch {
	case ms < 1:
		return 1
	case ms > math.MaxInt32:
		return math.MaxInt32
	}
	return ms
}

// mapError turns the binding's fdb.Error into *kv.Error, keeping the code;
// other errors (and nil) are returned unchanged.
func mapError(err error) error {
	var fe fdb.Error
	if errors.As(err, &fe) {
		return &kv.Error{Code: fe.Code, Message: fe.Error()}
	}
	return err
}

// transaction adapts fdb.Transaction to kv.Transaction for one attempt.
type transaction struct {
	tr  fdb.Transaction
	err error // first error of a call that has no future to report it
}

func (t *transaction) Get(key []byte) kv.FutureValue {
	return futureValue{t.tr.Get(fdb.Key(key))}
}

func (t *transaction) GetRange(r kv.KeyRange, opts kv.RangeOptions) kv.FutureRange {
	return futureRange{t.tr.GetRange(keyRange(r), rangeOptions(opts))}
}

func (t *transaction) Snapshot() kv.ReadTransaction { return snapshot{t.tr.Snapshot()} }

func (t *transaction) Set(key, value []byte) { t.tr.Set(fdb.Key(key), value) }

func (t *transaction) Clear(key []byte) { t.tr.Clear(fdb.Key(key)) }

func (t *transaction) ClearRange(r kv.KeyRange) { t.tr.ClearRange(keyRange(r)) }

func (t *transaction) Add(key []byte, delta int64) {
	t.tr.Add(fdb.Key(key), kv.EncodeInt64(delta))
}

func (t *transaction) CompareAndClear(key, value []byte) {
	t.tr.CompareAndClear(fdb.Key(key), value)
}

func (t *transaction) AddReadConflictRange(r kv.KeyRange) {
	if err := t.tr.AddReadConflictRange(keyRange(r)); err != nil && t.err == nil {
		t.err = mapError(err)
	}
}

// snapshot adapts fdb.Snapshot: the same transaction, reads without
// conflict ranges.
type snapshot struct{ s fdb.Snapshot }

func (s snapshot) Get(key []byte) kv.FutureValue { return futureValue{s.s.Get(fdb.Key(key))} }

func (s snapshot) GetRange(r kv.KeyRange, opts kv.RangeOptions) kv.FutureRange {
	return futureRange{s.s.GetRange(keyRange(r), rangeOptions(opts))}
}

func (s snapshot) Snapshot() kv.ReadTransaction { return s }

func keyRange(r kv.KeyRange) fdb.KeyRange {
	return fdb.KeyRange{Begin: fdb.Key(r.Begin), End: fdb.Key(r.End)}
}

// rangeOptions asks for the whole result at once (WANT_ALL) unless a limit
// is set, when EXACT fetches exactly that many: the store reads a range to
// use all of it, never to iterate lazily.
func rangeOptions(o kv.RangeOptions) fdb.RangeOptions {
	mode := fdb.StreamingModeWantAll
	if o.Limit > 0 {
		mode = fdb.StreamingModeExact
	}
	return fdb.RangeOptions{Limit: o.Limit, Reverse: o.Reverse, Mode: mode}
}

type futureValue struct{ f fdb.FutureByteSlice }

func (f futureValue) Get() ([]byte, error) {
	v, err := f.f.Get()
	if err != nil {
		return nil, mapError(err)
	}
	return v, nil
}

type futureRange struct{ r fdb.RangeResult }

func (f futureRange) Get() ([]kv.KeyValue, error) {
	kvs, err := f.r.GetSliceWithError()
	if err != nil {
		return nil, mapError(err)
	}
	out := make([]kv.KeyValue, len(kvs))
	for i, p := range kvs {
		out[i] = kv.KeyValue{Key: p.Key, Value: p.Value}
	}
	return out, nil
}
