// Package kvtest is a test suite for implementations of kv.DB: it proves,
// through the kv interface alone, the FoundationDB semantics that fdbstore
// relies on. It runs against memkv in this module's tests and against a
// real cluster through fdbkv (build tag fdb), so the two engines are held
// to the same behaviour.
//
// The suite has the shape of every suite of this module
// (conformance.RunStore, blobstest.RunBucket, fdbstore's storetest): Run
// takes a factory that each subtest calls once, with its own *testing.T,
// for a fresh Env; the factory registers any cleanup with t.Cleanup.
//
// Every key a subtest writes starts with its Env's prefix, which must be
// empty when the factory returns it. No test sleeps or measures time:
// interleavings are forced by running a second transaction inside the
// first one's function.
package kvtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore/fdbstore/kv"
)

// Env is one subtest's database and the raw key prefix it may use: every
// key the subtest writes starts with Prefix ("" = the whole database, for
// a fresh in-process one).
type Env struct {
	DB     kv.DB
	Prefix string
}

// Run runs every test of the suite, each against the Env newEnv returns
// for it.
func Run(t *testing.T, newEnv func(t *testing.T) Env) {
	t.Helper()
	for _, tc := range []struct {
		name string
		run  func(*suite, *testing.T)
	}{
		{"ReadYourWrites", (*suite).testReadYourWrites},
		{"Ranges", (*suite).testRanges},
		{"Atomic", (*suite).testAtomic},
		{"Conflicts", (*suite).testConflicts},
		{"Errors", (*suite).testErrors},
		{"Edges", (*suite).testEdges},
		{"Context", (*suite).testContext},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t)
			tc.run(&suite{db: env.DB, p: []byte(env.Prefix)}, t)
		})
	}
}

type suite struct {
	db kv.DB
	p  []byte
}

// key returns the suite's key for name, under a per-test namespace.
func (s *suite) key(t *testing.T, name string) []byte {
	return append(append(append([]byte(nil), s.p...), t.Name()+"/"...), name...)
}

// space is the range of every key of the current test.
func (s *suite) space(t *testing.T) kv.KeyRange {
	return kv.PrefixRange(s.key(t, ""))
}

var ctx = context.Background()

func (s *suite) set(t *testing.T, pairs ...string) {
	t.Helper()
	err := s.db.Transact(ctx, func(tr kv.Transaction) error {
		for i := 0; i+1 < len(pairs); i += 2 {
			tr.Set(s.key(t, pairs[i]), []byte(pairs[i+1]))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// get returns the committed value of name, "<absent>" when there is none.
func (s *suite) get(t *testing.T, name string) string {
	t.Helper()
	var v []byte
	err := s.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		var err error
		v, err = tr.Get(s.key(t, name)).Get()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if v == nil {
		return "<absent>"
	}
	return string(v)
}

// dump renders the pairs as name=value, without the test's key prefix.
func (s *suite) dump(t *testing.T, kvs []kv.KeyValue) string {
	p := s.key(t, "")
	var b strings.Builder
	for i, kv := range kvs {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s=%s", bytes.TrimPrefix(kv.Key, p), kv.Value)
	}
	return b.String()
}

func (s *suite) testReadYourWrites(t *testing.T) {
	s.set(t, "a", "1", "b", "2", "c", "3")
	err := s.db.Transact(ctx, func(tr kv.Transaction) error {
		tr.Set(s.key(t, "b"), []byte("20"))
		tr.Clear(s.key(t, "c"))
		tr.Set(s.key(t, "d"), []byte(""))
		v, err := tr.Get(s.key(t, "b")).Get()
		if err != nil {
			return err
		}
		if string(v) != "20" {
			return fmt.Errorf("get after set = %q, want 20", v)
		}
		if v, err := tr.Get(s.key(t, "c")).Get(); err != nil || v != nil {
			return fmt.Errorf("get after clear = %q, %v; want absent", v, err)
		}
		if v, err := tr.Get(s.key(t, "d")).Get(); err != nil || v == nil || len(v) != 0 {
			return fmt.Errorf("get of an empty value = %v, %v; want present and empty", v, err)
		}
		kvs, err := tr.GetRange(s.space(t), kv.RangeOptions{}).Get()
		if err != nil {
			return err
		}
		if got := s.dump(t, kvs); got != "a=1 b=20 d=" {
			return fmt.Errorf("range with own writes = %q", got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.get(t, "b") + "," + s.get(t, "c") + "," + s.get(t, "zz"); got != "20,<absent>,<absent>" {
		t.Fatalf("committed b,c,zz = %s", got)
	}
}

func (s *suite) testRanges(t *testing.T) {
	s.set(t, "k1", "a", "k2", "b", "k3", "c", "k4", "d", "l", "x")
	read := func(r kv.KeyRange, o kv.RangeOptions) string {
		t.Helper()
		var got string
		err := s.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
			kvs, err := tr.GetRange(r, o).Get()
			got = s.dump(t, kvs)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	ks := kv.PrefixRange(s.key(t, "k"))
	for _, c := range []struct {
		o    kv.RangeOptions
		want string
	}{
		{kv.RangeOptions{}, "k1=a k2=b k3=c k4=d"},
		{kv.RangeOptions{Limit: 2}, "k1=a k2=b"},
		{kv.RangeOptions{Reverse: true}, "k4=d k3=c k2=b k1=a"},
		{kv.RangeOptions{Reverse: true, Limit: 3}, "k4=d k3=c k2=b"},
	} {
		if got := read(ks, c.o); got != c.want {
			t.Errorf("GetRange(%+v) = %q, want %q", c.o, got, c.want)
		}
	}
	if got := read(kv.KeyRange{Begin: s.key(t, "k2"), End: s.key(t, "k4")}, kv.RangeOptions{}); got != "k2=b k3=c" {
		t.Errorf("half-open range = %q", got)
	}
	if err := s.db.Transact(ctx, func(tr kv.Transaction) error {
		tr.ClearRange(kv.KeyRange{Begin: s.key(t, "k2"), End: s.key(t, "k4")})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := read(s.space(t), kv.RangeOptions{}); got != "k1=a k4=d l=x" {
		t.Errorf("after ClearRange = %q", got)
	}
}

func (s *suite) testAtomic(t *testing.T) {
	n := s.key(t, "n")
	err := s.db.Transact(ctx, func(tr kv.Transaction) error {
		tr.Add(n, 5) // absent counts as 0
		tr.Add(n, -2)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := kv.DecodeInt64([]byte(s.get(t, "n"))); got != 3 {
		t.Fatalf("Add 5, Add -2 = %d, want 3", got)
	}
	clear := func(v int64) {
		t.Helper()
		err := s.db.Transact(ctx, func(tr kv.Transaction) error {
			tr.Add(n, -1)
			tr.CompareAndClear(n, kv.EncodeInt64(v))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	clear(0) // 3-1 = 2: kept
	if got := kv.DecodeInt64([]byte(s.get(t, "n"))); got != 2 {
		t.Fatalf("after −1 and a failed compare-and-clear: %d, want 2", got)
	}
	clear(0) // 1: kept
	clear(0) // 0: cleared
	if got := s.get(t, "n"); got != "<absent>" {
		t.Fatalf("a count that reached 0 was not cleared: %x", got)
	}
}

// attempts runs read, then (on the first run only) commits other in a
// separate transaction, then writes; it returns how many times fn ran.
func (s *suite) attempts(t *testing.T, read func(tr kv.Transaction) error, other func(tr kv.Transaction)) int {
	t.Helper()
	runs := 0
	err := s.db.Transact(ctx, func(tr kv.Transaction) error {
		runs++
		// Pin the read version before the other transaction commits, as a
		// real client gets it at the first read (a snapshot read: no
		// conflict range).
		if _, err := tr.Snapshot().Get(s.key(t, "pin")).Get(); err != nil {
			return err
		}
		if err := read(tr); err != nil {
			return err
		}
		if runs == 1 {
			if err := s.db.Transact(ctx, func(o kv.Transaction) error { other(o); return nil }); err != nil {
				return fmt.Errorf("interleaved transaction: %w", err)
			}
		}
		tr.Set(s.key(t, fmt.Sprintf("out%d", runs)), []byte("x"))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return runs
}

func (s *suite) testConflicts(t *testing.T) {
	s.set(t, "k", "0")
	k := s.key(t, "k")
	write := func(o kv.Transaction) { o.Set(k, []byte("1")) }
	get := func(tr kv.ReadTransaction) error { _, err := tr.Get(k).Get(); return err }
	for _, c := range []struct {
		name  string
		read  func(tr kv.Transaction) error
		other func(o kv.Transaction)
		runs  int
	}{
		{"read then concurrent write conflicts", func(tr kv.Transaction) error { return get(tr) }, write, 2},
		{"snapshot read does not conflict", func(tr kv.Transaction) error { return get(tr.Snapshot()) }, write, 1},
		{"range read sees a phantom insert", func(tr kv.Transaction) error {
			_, err := tr.GetRange(kv.PrefixRange(s.key(t, "r")), kv.RangeOptions{}).Get()
			return err
		}, func(o kv.Transaction) { o.Set(s.key(t, "r5"), []byte("new")) }, 2},
		{"atomic adds do not conflict", func(tr kv.Transaction) error {
			tr.Add(s.key(t, "cnt"), 1)
			return nil
		}, func(o kv.Transaction) { o.Add(s.key(t, "cnt"), 1) }, 1},
		{"read conflict range conflicts", func(tr kv.Transaction) error {
			tr.AddReadConflictRange(kv.PrefixRange(s.key(t, "q")))
			return nil
		}, func(o kv.Transaction) { o.Set(s.key(t, "q1"), []byte("x")) }, 2},
		{"writes to other keys do not conflict", func(tr kv.Transaction) error { return get(tr) },
			func(o kv.Transaction) { o.Set(s.key(t, "other"), []byte("x")) }, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := s.attempts(t, c.read, c.other); got != c.runs {
				t.Fatalf("fn ran %d times, want %d", got, c.runs)
			}
		})
	}
	// The read version is taken at the first read, not when the
	// transaction starts: a commit that ended before it is seen (memkv once
	// read at the version of the transaction's start).
	t.Run("the first read takes the read version", func(t *testing.T) {
		runs := 0
		var got []byte
		err := s.db.Transact(ctx, func(tr kv.Transaction) error {
			runs++
			if runs == 1 {
				err := s.db.Transact(ctx, func(o kv.Transaction) error { o.Set(s.key(t, "v"), []byte("before")); return nil })
				if err != nil {
					return fmt.Errorf("interleaved transaction: %w", err)
				}
			}
			var err error
			got, err = tr.Get(s.key(t, "v")).Get()
			return err
		})
		if err != nil || string(got) != "before" {
			t.Fatalf("read %q (%v), want the value committed before the first read", got, err)
		}
	})
	// Without a read, a transaction takes its read version at commit, so
	// its conflict range covers no commit before its own (memkv once
	// counted it from the transaction's start).
	t.Run("conflict range before any read counts from the commit", func(t *testing.T) {
		runs := 0
		err := s.db.Transact(ctx, func(tr kv.Transaction) error {
			runs++
			tr.AddReadConflictRange(kv.PrefixRange(s.key(t, "u")))
			if runs == 1 {
				err := s.db.Transact(ctx, func(o kv.Transaction) error { o.Set(s.key(t, "u1"), []byte("x")); return nil })
				if err != nil {
					return fmt.Errorf("interleaved transaction: %w", err)
				}
			}
			tr.Set(s.key(t, "uout"), []byte("x"))
			return nil
		})
		if err != nil || runs != 1 {
			t.Fatalf("%v after %d runs, want a commit at the first", err, runs)
		}
	})
	if got := kv.DecodeInt64([]byte(s.get(t, "cnt"))); got != 2 {
		t.Fatalf("two concurrent adds = %d, want 2", got)
	}
}

var errMine = errors.New("kvtest: fn's own error")

func (s *suite) testErrors(t *testing.T) {
	runs := 0
	err := s.db.Transact(ctx, func(tr kv.Transaction) error {
		runs++
		tr.Set(s.key(t, "never"), []byte("x"))
		return fmt.Errorf("wrapped: %w", errMine)
	})
	if !errors.Is(err, errMine) || runs != 1 {
		t.Fatalf("fn's error: %v after %d runs; want it returned after 1 run", err, runs)
	}
	if got := s.get(t, "never"); got != "<absent>" {
		t.Fatal("a transaction whose fn failed was committed")
	}
	err = s.db.Transact(ctx, func(tr kv.Transaction) error {
		tr.Set(s.key(t, "big"), make([]byte, kv.MaxValueSize+1))
		return nil
	})
	if kv.ErrorCode(err) != kv.CodeValueTooLarge || kv.IsRetryable(err) {
		t.Fatalf("value over the limit: %v (code %d), want value_too_large", err, kv.ErrorCode(err))
	}
	err = s.db.Transact(ctx, func(tr kv.Transaction) error {
		tr.Set(append(s.key(t, "k"), make([]byte, kv.MaxKeySize)...), []byte("x"))
		return nil
	})
	if kv.ErrorCode(err) != kv.CodeKeyTooLarge {
		t.Fatalf("key over the limit: %v (code %d), want key_too_large", err, kv.ErrorCode(err))
	}
}

// testEdges pins answers a real cluster gave where memkv once differed
// (each was a memkv bug): an inverted range reads nothing, without an
// error; a row limit of -1 is unlimited and one below it fails with
// range_limits_invalid (2012); a read bound past \xff is
// key_outside_legal_range even when the range is inverted; a clear of a
// key too long to exist is dropped, and the transaction commits.
func (s *suite) testEdges(t *testing.T) {
	s.set(t, "a", "1", "b", "2")
	all := s.space(t)
	var got [4]string
	var codes [2]int
	err := s.db.Transact(ctx, func(tr kv.Transaction) error {
		inv := kv.KeyRange{Begin: s.key(t, "b"), End: s.key(t, "a")}
		for i, r := range []kv.FutureRange{
			tr.GetRange(inv, kv.RangeOptions{}),
			tr.Snapshot().GetRange(inv, kv.RangeOptions{Reverse: true}),
			tr.GetRange(all, kv.RangeOptions{Limit: -1}),
			tr.GetRange(all, kv.RangeOptions{Limit: -1, Reverse: true}),
		} {
			kvs, err := r.Get()
			if err != nil {
				return err
			}
			got[i] = s.dump(t, kvs)
		}
		_, err := tr.GetRange(all, kv.RangeOptions{Limit: -2}).Get()
		codes[0] = kv.ErrorCode(err)
		_, err = tr.GetRange(kv.KeyRange{Begin: []byte("\xff\x01"), End: s.key(t, "a")}, kv.RangeOptions{}).Get()
		codes[1] = kv.ErrorCode(err)
		tr.Clear(append(s.key(t, "c"), make([]byte, kv.MaxKeySize)...))
		tr.Set(s.key(t, "c"), []byte("3"))
		return nil
	})
	if err != nil {
		t.Fatalf("a transaction with a clear of a too-long key: %v, want it committed", err)
	}
	if want := [4]string{"", "", "a=1 b=2", "b=2 a=1"}; got != want {
		t.Errorf("inverted range, inverted snapshot range, limit -1, limit -1 reversed: %q, want %q", got, want)
	}
	if want := [2]int{kv.CodeRangeLimitsInvalid, kv.CodeKeyOutsideLegalRange}; codes != want {
		t.Errorf("limit -2, a bound past \\xff: codes %v, want %v", codes, want)
	}
	if v := s.get(t, "c"); v != "3" {
		t.Errorf("c = %s, want 3", v)
	}
}

func (s *suite) testContext(t *testing.T) {
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	ran := false
	err := s.db.Transact(cctx, func(tr kv.Transaction) error {
		ran = true
		tr.Set(s.key(t, "x"), []byte("x"))
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Transact with a cancelled context: %v, want context.Canceled", err)
	}
	if got := s.get(t, "x"); got != "<absent>" {
		t.Fatalf("Transact with a cancelled context committed (fn ran: %v)", ran)
	}
	err = s.db.ReadTransact(cctx, func(tr kv.ReadTransaction) error {
		_, err := tr.Get(s.key(t, "x")).Get()
		return err
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("ReadTransact with a cancelled context: %v, want context.Canceled", err)
	}
	// Cancelling while fn waits stops the retries.
	cctx, cancel = context.WithCancel(ctx)
	runs := 0
	err = s.db.Transact(cctx, func(tr kv.Transaction) error {
		runs++
		if runs == 1 {
			cancel()
		}
		return kv.NewError(kv.CodeNotCommitted) // retryable: only the context stops it
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("retry loop after cancel: %v after %d runs, want context.Canceled", err, runs)
	}
	// A deadline that passes during the retries ends them with
	// context.DeadlineExceeded, however the engine noticed it (FoundationDB's
	// timeout option can fire a moment before ctx's deadline). Several rounds,
	// since the race is between two timers.
	for i := 0; i < 5; i++ {
		dctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
		err = s.db.Transact(dctx, func(tr kv.Transaction) error {
			return kv.NewError(kv.CodeNotCommitted)
		})
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("retry loop past the deadline (round %d): %v, want context.DeadlineExceeded", i, err)
		}
	}
}
