package memkv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ckptstore/ckptstore/fdbstore/kv"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

// clock is a settable engine clock.
type clock = testkit.Clock

func newClock() *clock { return testkit.NewClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)) }

func newDB(t testing.TB, opts Options) *DB {
	t.Helper()
	db, err := NewWithOptions(opts)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func b(s string) []byte { return []byte(s) }

func wantCode(t *testing.T, err error, code int) {
	t.Helper()
	if got := kv.ErrorCode(err); got != code {
		t.Fatalf("error %v: code %d, want %d", err, got, code)
	}
}

func mustGet(t *testing.T, rt kv.ReadTransaction, key string) []byte {
	t.Helper()
	v, err := rt.Get(b(key)).Get()
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	return v
}

func mustRange(t *testing.T, rt kv.ReadTransaction, begin, end string, opts kv.RangeOptions) []string {
	t.Helper()
	kvs, err := rt.GetRange(kv.KeyRange{Begin: b(begin), End: b(end)}, opts).Get()
	if err != nil {
		t.Fatalf("GetRange(%q, %q): %v", begin, end, err)
	}
	out := make([]string, len(kvs))
	for i, p := range kvs {
		out[i] = string(p.Key) + "=" + string(p.Value)
	}
	return out
}

func put(t *testing.T, db *DB, pairs ...string) {
	t.Helper()
	err := db.Transact(context.Background(), func(tr kv.Transaction) error {
		for i := 0; i < len(pairs); i += 2 {
			tr.Set(b(pairs[i]), b(pairs[i+1]))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// read returns key's committed value ("<nil>" when absent).
func read(t *testing.T, db *DB, key string) string {
	t.Helper()
	var v []byte
	err := db.ReadTransact(context.Background(), func(tr kv.ReadTransaction) error {
		var err error
		v, err = tr.Get(b(key)).Get()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if v == nil {
		return "<nil>"
	}
	return string(v)
}

func TestReadYourWrites(t *testing.T) {
	db := New()
	put(t, db, "a", "1", "b", "2", "c", "3", "n", string(kv.EncodeInt64(40)))
	tr := db.Begin(context.Background())
	defer tr.Cancel()

	tr.Set(b("a"), b("one"))
	if got := string(mustGet(t, tr, "a")); got != "one" {
		t.Fatalf("a = %q after Set", got)
	}
	tr.Clear(b("b"))
	if got := mustGet(t, tr, "b"); got != nil {
		t.Fatalf("b = %q after Clear", got)
	}
	tr.Set(b("empty"), nil)
	if got := mustGet(t, tr, "empty"); got == nil || len(got) != 0 {
		t.Fatalf("empty value = %v, want present and empty", got)
	}
	// Add over a value the transaction has not read: applied over the
	// snapshot's value when read back.
	tr.Add(b("n"), 2)
	if got := kv.DecodeInt64(mustGet(t, tr, "n")); got != 42 {
		t.Fatalf("n = %d after Add, want 42", got)
	}
	tr.Add(b("fresh"), 5)
	tr.Add(b("fresh"), -2)
	if got := kv.DecodeInt64(mustGet(t, tr, "fresh")); got != 3 {
		t.Fatalf("fresh = %d, want 3", got)
	}
	tr.CompareAndClear(b("c"), b("3"))
	if got := mustGet(t, tr, "c"); got != nil {
		t.Fatalf("c = %q after matching CompareAndClear", got)
	}
	require.Equal(t, []string{"a=one", "empty=", "fresh=" + string(kv.EncodeInt64(3)), "n=" + string(kv.EncodeInt64(42))}, mustRange(t, tr, "a", "z", kv.RangeOptions{}))

	// A future sees the writes made before it was issued, not after.
	f := tr.Get(b("a"))
	tr.Set(b("a"), b("later"))
	if v, err := f.Get(); err != nil || string(v) != "one" {
		t.Fatalf("future issued before Set = %q, %v", v, err)
	}
	// Snapshot reads see the transaction's writes too.
	if got := string(mustGet(t, tr.Snapshot(), "a")); got != "later" {
		t.Fatalf("snapshot read of own write = %q", got)
	}
	if err := tr.Commit(); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"a": "later", "b": "<nil>", "c": "<nil>", "n": string(kv.EncodeInt64(42))} {
		if got := read(t, db, key); got != want {
			t.Errorf("committed %s = %q, want %q", key, got, want)
		}
	}
}

func TestClearRange(t *testing.T) {
	db := New()
	put(t, db, "a", "1", "b", "2", "c", "3", "d", "4", "e", "5")
	tr := db.Begin(context.Background())
	tr.Set(b("bb"), b("x"))
	tr.ClearRange(kv.KeyRange{Begin: b("b"), End: b("d")})
	tr.Set(b("c"), b("new"))           // written after the clear: survives
	tr.Add(b("bz"), 7)                 // over a cleared key: base is absent
	tr.CompareAndClear(b("c2"), b("")) // absent stays absent
	require.Equal(t, []string{"a=1", "bz=" + string(kv.EncodeInt64(7)), "c=new", "d=4", "e=5"}, mustRange(t, tr, "a", "z", kv.RangeOptions{}))
	// Reads wholly inside the cleared range need no round trip.
	before := db.Stats().ReadRounds
	require.Equal(t, []string{"bz=" + string(kv.EncodeInt64(7))}, mustRange(t, tr, "b", "bzz", kv.RangeOptions{}))
	if mustGet(t, tr, "b") != nil {
		t.Fatal("cleared key b visible")
	}
	if got := db.Stats().ReadRounds - before; got != 0 {
		t.Fatalf("reads inside a cleared range took %d rounds", got)
	}
	if err := tr.Commit(); err != nil {
		t.Fatal(err)
	}
	tr2 := db.Begin(context.Background())
	defer tr2.Cancel()
	require.Equal(t, []string{"a=1", "bz=" + string(kv.EncodeInt64(7)), "c=new", "d=4", "e=5"}, mustRange(t, tr2, "", "\xff", kv.RangeOptions{}))
}

func TestRangeReadsReverseAndLimit(t *testing.T) {
	db := New()
	put(t, db, "k1", "1", "k2", "2", "k3", "3", "k4", "4", "k5", "5", "l", "x")
	tr := db.Begin(context.Background())
	defer tr.Cancel()
	tr.Set(b("k25"), b("w"))
	tr.Clear(b("k4"))
	cases := []struct {
		opts kv.RangeOptions
		want []string
	}{
		{kv.RangeOptions{}, []string{"k1=1", "k2=2", "k25=w", "k3=3", "k5=5"}},
		{kv.RangeOptions{Limit: 3}, []string{"k1=1", "k2=2", "k25=w"}},
		{kv.RangeOptions{Reverse: true}, []string{"k5=5", "k3=3", "k25=w", "k2=2", "k1=1"}},
		{kv.RangeOptions{Reverse: true, Limit: 2}, []string{"k5=5", "k3=3"}},
		{kv.RangeOptions{Reverse: true, Limit: 4}, []string{"k5=5", "k3=3", "k25=w", "k2=2"}},
		{kv.RangeOptions{Limit: 100}, []string{"k1=1", "k2=2", "k25=w", "k3=3", "k5=5"}},
	}
	for _, c := range cases {
		require.Equal(t, c.want, mustRange(t, tr, "k", "l", c.opts))
	}
	// End is exclusive, Begin inclusive, in both directions.
	require.Equal(t, []string{"k2=2", "k25=w", "k3=3"}, mustRange(t, tr, "k2", "k5", kv.RangeOptions{}))
	require.Equal(t, []string{"k3=3", "k25=w", "k2=2"}, mustRange(t, tr, "k2", "k5", kv.RangeOptions{Reverse: true}))
	require.Empty(t, mustRange(t, tr, "k3", "k3", kv.RangeOptions{}))
	// -1 is FoundationDB's unlimited; below it, range_limits_invalid (2012).
	require.Equal(t, mustRange(t, tr, "k", "l", kv.RangeOptions{}), mustRange(t, tr, "k", "l", kv.RangeOptions{Limit: -1}))
	_, err := tr.GetRange(kv.KeyRange{Begin: b("a"), End: b("b")}, kv.RangeOptions{Limit: -2}).Get()
	wantCode(t, err, kv.CodeRangeLimitsInvalid)
}

func TestInvertedRange(t *testing.T) {
	db := New()
	inv := kv.KeyRange{Begin: b("b"), End: b("a")}

	// A read of an inverted range is empty, as on a cluster; a clear or a
	// conflict range of one fails the transaction.
	put(t, db, "a", "1")
	tr := db.Begin(context.Background())
	pairs, err := tr.GetRange(inv, kv.RangeOptions{}).Get()
	if err != nil || len(pairs) != 0 {
		t.Fatalf("read of an inverted range: %v, %v; want no pairs and no error", pairs, err)
	}
	_, err = tr.GetRange(kv.KeyRange{Begin: b("\xff\x01"), End: b("a")}, kv.RangeOptions{}).Get()
	wantCode(t, err, kv.CodeKeyOutsideLegalRange)
	tr.Cancel()

	tr = db.Begin(context.Background())
	tr.Set(b("x"), b("1"))
	tr.ClearRange(inv)
	_, err = tr.Get(b("x")).Get() // the deferred error surfaces on later reads
	wantCode(t, err, kv.CodeInvertedRange)
	wantCode(t, tr.Commit(), kv.CodeInvertedRange)

	tr = db.Begin(context.Background())
	tr.Set(b("x"), b("1"))
	tr.AddReadConflictRange(inv)
	wantCode(t, tr.Commit(), kv.CodeInvertedRange)
	if got := read(t, db, "x"); got != "<nil>" {
		t.Fatalf("x = %q after failed commits", got)
	}
}

func TestLegalKeyRange(t *testing.T) {
	db := New()
	tr := db.Begin(context.Background())
	_, err := tr.Get(b("\xff")).Get()
	wantCode(t, err, kv.CodeKeyOutsideLegalRange)
	_, err = tr.GetRange(kv.KeyRange{Begin: b("a"), End: b("\xff\x00")}, kv.RangeOptions{}).Get()
	wantCode(t, err, kv.CodeKeyOutsideLegalRange)
	if _, err := tr.GetRange(kv.KeyRange{Begin: b(""), End: b("\xff")}, kv.RangeOptions{}).Get(); err != nil {
		t.Fatalf("range up to \\xff: %v", err)
	}
	tr.Set(b("\xff/system"), b("x"))
	wantCode(t, tr.Commit(), kv.CodeKeyOutsideLegalRange)
}

func TestSnapshotIsolationOfReads(t *testing.T) {
	db := New()
	put(t, db, "k", "old")
	tr := db.Begin(context.Background())
	defer tr.Cancel()
	mustGet(t, tr, "other") // the first read takes the read version
	put(t, db, "k", "new", "k2", "added")
	if got := string(mustGet(t, tr, "k")); got != "old" {
		t.Fatalf("read at read version saw %q", got)
	}
	require.Equal(t, []string{"k=old"}, mustRange(t, tr, "k", "l", kv.RangeOptions{}))
}

func TestLostUpdatePrevented(t *testing.T) {
	db := New()
	put(t, db, "counter", "0")
	incr := func(tr *Tx) {
		v := mustGet(t, tr, "counter")
		var n int
		fmt.Sscan(string(v), &n)
		tr.Set(b("counter"), b(fmt.Sprint(n+1)))
	}
	t1, t2 := db.Begin(context.Background()), db.Begin(context.Background())
	incr(t1)
	incr(t2)
	if err := t1.Commit(); err != nil {
		t.Fatal(err)
	}
	wantCode(t, t2.Commit(), kv.CodeNotCommitted)
	if got := read(t, db, "counter"); got != "1" {
		t.Fatalf("counter = %s, want 1", got)
	}
	if s := db.Stats(); s.Conflicts != 1 {
		t.Fatalf("Conflicts = %d, want 1", s.Conflicts)
	}
}

func TestWriteSkewCaught(t *testing.T) {
	// Two doctors on call; each transaction lets one go off call only if the
	// other is still on. Serially only one can succeed.
	db := New()
	put(t, db, "oncall/alice", "1", "oncall/bob", "1")
	offCall := func(tr *Tx, me string) {
		if n := len(mustRange(t, tr, "oncall/", "oncall0", kv.RangeOptions{})); n < 2 {
			t.Fatalf("%s sees %d on call", me, n)
		}
		tr.Clear(b("oncall/" + me))
	}
	t1, t2 := db.Begin(context.Background()), db.Begin(context.Background())
	offCall(t1, "alice")
	offCall(t2, "bob")
	if err := t1.Commit(); err != nil {
		t.Fatal(err)
	}
	wantCode(t, t2.Commit(), kv.CodeNotCommitted)
	if got := read(t, db, "oncall/bob"); got != "1" {
		t.Fatalf("bob went off call too: %q", got)
	}
}

func TestPhantomInsertCaught(t *testing.T) {
	db := New()
	put(t, db, "items/1", "a", "items/3", "c")
	// t1 counts the items and stores the count; t2 inserts an item inside
	// the counted range.
	t1, t2 := db.Begin(context.Background()), db.Begin(context.Background())
	n := len(mustRange(t, t1, "items/", "items0", kv.RangeOptions{}))
	t1.Set(b("count"), b(fmt.Sprint(n)))
	t2.Set(b("items/2"), b("b"))
	if err := t2.Commit(); err != nil {
		t.Fatal(err)
	}
	wantCode(t, t1.Commit(), kv.CodeNotCommitted)

	// An insert outside the read range does not conflict.
	t3, t4 := db.Begin(context.Background()), db.Begin(context.Background())
	mustRange(t, t3, "items/", "items0", kv.RangeOptions{})
	t3.Set(b("count"), b("3"))
	t4.Set(b("other/1"), b("x"))
	if err := t4.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := t3.Commit(); err != nil {
		t.Fatalf("insert outside the read range conflicted: %v", err)
	}

	// A limited read conflicts only up to the last key it returned.
	t5, t6, t7 := db.Begin(context.Background()), db.Begin(context.Background()), db.Begin(context.Background())
	require.Equal(t, []string{"items/1=a"}, mustRange(t, t5, "items/", "items0", kv.RangeOptions{Limit: 1}))
	t5.Set(b("first"), b("1"))
	require.Equal(t, []string{"items/1=a"}, mustRange(t, t6, "items/", "items0", kv.RangeOptions{Limit: 1}))
	t6.Set(b("first2"), b("1"))
	t7.Set(b("items/4"), b("d"))   // beyond the limited read
	t7.Set(b("items/0"), b("new")) // before it: conflicts with both
	if err := t7.Commit(); err != nil {
		t.Fatal(err)
	}
	wantCode(t, t5.Commit(), kv.CodeNotCommitted)
	wantCode(t, t6.Commit(), kv.CodeNotCommitted)

	t8, t9 := db.Begin(context.Background()), db.Begin(context.Background())
	require.Equal(t, []string{"items/4=d"}, mustRange(t, t8, "items/", "items0", kv.RangeOptions{Limit: 1, Reverse: true}))
	t8.Set(b("last"), b("1"))
	t9.Set(b("items/00"), b("below")) // before the reverse read's last key: no conflict
	if err := t9.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := t8.Commit(); err != nil {
		t.Fatalf("write beyond a reverse limited read conflicted: %v", err)
	}
}

func TestSnapshotReadsDoNotConflict(t *testing.T) {
	db := New()
	put(t, db, "k", "1")
	t1, t2 := db.Begin(context.Background()), db.Begin(context.Background())
	mustGet(t, t1.Snapshot(), "k")
	mustRange(t, t1.Snapshot(), "a", "z", kv.RangeOptions{})
	t1.Set(b("other"), b("x"))
	t2.Set(b("k"), b("2"))
	t2.Set(b("m"), b("2"))
	if err := t2.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := t1.Commit(); err != nil {
		t.Fatalf("snapshot reads conflicted: %v", err)
	}
}

func TestAtomicOpsDoNotConflict(t *testing.T) {
	db := New()
	put(t, db, "n", string(kv.EncodeInt64(10)), "lock", "me")
	t1, t2, t3 := db.Begin(context.Background()), db.Begin(context.Background()), db.Begin(context.Background())
	t1.Add(b("n"), 1)
	t2.Add(b("n"), 2)
	t2.CompareAndClear(b("lock"), b("me"))
	t3.CompareAndClear(b("lock"), b("someone else"))
	t3.Add(b("n"), 4)
	for i, tr := range []*Tx{t1, t2, t3} {
		if err := tr.Commit(); err != nil {
			t.Fatalf("atomic-only transaction %d: %v", i+1, err)
		}
	}
	if got := kv.DecodeInt64([]byte(read(t, db, "n"))); got != 17 {
		t.Fatalf("n = %d, want 17", got)
	}
	if got := read(t, db, "lock"); got != "<nil>" {
		t.Fatalf("lock = %q after matching CompareAndClear", got)
	}

	// But an atomic op is a write: it conflicts with a transaction that read the key.
	t4, t5 := db.Begin(context.Background()), db.Begin(context.Background())
	mustGet(t, t4, "n")
	t4.Set(b("copy"), b("x"))
	t5.Add(b("n"), 1)
	if err := t5.Commit(); err != nil {
		t.Fatal(err)
	}
	wantCode(t, t4.Commit(), kv.CodeNotCommitted)
}

func TestAddReadConflictRange(t *testing.T) {
	db := New()
	// A conflict range counts from the read version, which a transaction
	// takes at its first read, or at commit when it never read: without a
	// read, t0's range covers no commit before its own, as on a cluster.
	t0, t00 := db.Begin(context.Background()), db.Begin(context.Background())
	t0.AddReadConflictRange(kv.KeyRange{Begin: b("a"), End: b("c")})
	t0.Set(b("z"), b("0"))
	t00.Set(b("b"), b("0"))
	if err := t00.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := t0.Commit(); err != nil {
		t.Fatalf("a transaction that never read conflicted with a commit before its own: %v", err)
	}

	t1, t2 := db.Begin(context.Background()), db.Begin(context.Background())
	mustGet(t, t1, "elsewhere") // takes the read version
	t1.AddReadConflictRange(kv.KeyRange{Begin: b("a"), End: b("c")})
	t1.Set(b("z"), b("1"))
	t2.Set(b("b"), b("1"))
	if err := t2.Commit(); err != nil {
		t.Fatal(err)
	}
	wantCode(t, t1.Commit(), kv.CodeNotCommitted)

	t3, t4 := db.Begin(context.Background()), db.Begin(context.Background())
	mustGet(t, t3, "elsewhere")
	t3.AddReadConflictRange(kv.KeyRange{Begin: b("a"), End: b("c")})
	t3.Set(b("z"), b("2"))
	t4.Set(b("c"), b("1")) // End is exclusive
	if err := t4.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := t3.Commit(); err != nil {
		t.Fatalf("write at the range's exclusive end conflicted: %v", err)
	}
}

func TestLimits(t *testing.T) {
	db := New()
	ctx := context.Background()
	commitOne := func(f func(tr *Tx)) error {
		tr := db.Begin(ctx)
		f(tr)
		return tr.Commit()
	}
	if err := commitOne(func(tr *Tx) { tr.Set(bytes.Repeat(b("k"), kv.MaxKeySize), b("v")) }); err != nil {
		t.Fatalf("key of %d bytes: %v", kv.MaxKeySize, err)
	}
	wantCode(t, commitOne(func(tr *Tx) { tr.Set(bytes.Repeat(b("k"), kv.MaxKeySize+1), b("v")) }), kv.CodeKeyTooLarge)
	// A too-large key cannot exist: its clear is dropped, as on a cluster.
	if err := commitOne(func(tr *Tx) { tr.Clear(bytes.Repeat(b("k"), kv.MaxKeySize+1)) }); err != nil {
		t.Fatalf("clear of a too-large key: %v", err)
	}
	wantCode(t, commitOne(func(tr *Tx) { tr.Clear(append([]byte{0xff}, bytes.Repeat(b("k"), kv.MaxKeySize+1)...)) }), kv.CodeKeyOutsideLegalRange)
	wantCode(t, commitOne(func(tr *Tx) { tr.Add(bytes.Repeat(b("k"), kv.MaxKeySize+1), 1) }), kv.CodeKeyTooLarge)
	if err := commitOne(func(tr *Tx) { tr.Set(b("v"), make([]byte, kv.MaxValueSize)) }); err != nil {
		t.Fatalf("value of %d bytes: %v", kv.MaxValueSize, err)
	}
	wantCode(t, commitOne(func(tr *Tx) { tr.Set(b("v2"), make([]byte, kv.MaxValueSize+1)) }), kv.CodeValueTooLarge)
	wantCode(t, commitOne(func(tr *Tx) { tr.CompareAndClear(b("v2"), make([]byte, kv.MaxValueSize+1)) }), kv.CodeValueTooLarge)
	if got := read(t, db, "v2"); got != "<nil>" {
		t.Fatal("value too large was written")
	}
	// A too-large key cannot exist: reading one answers absent.
	tr := db.Begin(ctx)
	if v := mustGet(t, tr, strings.Repeat("k", kv.MaxKeySize+1)); v != nil {
		t.Fatalf("too-large key read %q", v)
	}
	tr.Cancel()

	// Transaction size: 99 values of 100,000 bytes fit in 10,000,000; 101 do not.
	big := make([]byte, kv.MaxValueSize)
	fill := func(n int) func(*Tx) {
		return func(tr *Tx) {
			for i := range n {
				tr.Set(b(fmt.Sprintf("big/%03d", i)), big)
			}
		}
	}
	if err := commitOne(fill(99)); err != nil {
		t.Fatalf("99 large values: %v", err)
	}
	wantCode(t, commitOne(func(tr *Tx) { tr.ClearRange(kv.PrefixRange(b("big/"))); fill(101)(tr) }), kv.CodeTransactionTooLarge)
	if got := read(t, db, "big/000"); len(got) != kv.MaxValueSize {
		t.Fatal("a transaction over the size limit changed data")
	}
}

func TestTransactionTooOld(t *testing.T) {
	clk := newClock()
	db := newDB(t, Options{Now: clk.Now})
	put(t, db, "k", "v")

	tr := db.Begin(context.Background())
	mustGet(t, tr, "k") // the read version, and the Lifetime's start
	clk.Advance(Lifetime)
	mustGet(t, tr, "k") // exactly Lifetime old is still alive
	tr.Set(b("k"), b("w"))
	clk.Advance(time.Nanosecond)
	_, err := tr.Get(b("k")).Get()
	wantCode(t, err, kv.CodeTransactionTooOld)
	wantCode(t, tr.Commit(), kv.CodeTransactionTooOld)
	if got := read(t, db, "k"); got != "v" {
		t.Fatalf("too-old transaction wrote %q", got)
	}
	if !kv.IsRetryable(kv.NewError(kv.CodeTransactionTooOld)) {
		t.Fatal("1007 must be retryable")
	}

	// Transact retries 1007 in a fresh transaction.
	attempts := 0
	err = db.Transact(context.Background(), func(tr kv.Transaction) error {
		attempts++
		if _, err := tr.Get(b("k")).Get(); err != nil {
			return err
		}
		if attempts == 1 {
			clk.Advance(Lifetime + time.Second)
		}
		if _, err := tr.Get(b("k")).Get(); err != nil {
			return err
		}
		tr.Set(b("k"), b("retried"))
		return nil
	})
	if err != nil || attempts != 2 {
		t.Fatalf("Transact: %v after %d attempts, want success after 2", err, attempts)
	}
	if got := read(t, db, "k"); got != "retried" {
		t.Fatalf("k = %q", got)
	}
}

// TestReadVersionAtFirstRead: a transaction takes its read version at its
// first read, as on a cluster, so its reads see the commits made since
// Begin and the Lifetime counts from there; one that never read takes it
// at commit, and a read-only commit is local unless a read found the
// transaction too old. A real cluster answered each of these so (fdbkv,
// one-process 7.3 cluster).
func TestReadVersionAtFirstRead(t *testing.T) {
	clk := newClock()
	db := newDB(t, Options{Now: clk.Now})
	put(t, db, "k", "v")

	idle := db.Begin(context.Background())
	clk.Advance(Lifetime + time.Second)
	put(t, db, "k", "w")
	if got := string(mustGet(t, idle, "k")); got != "w" {
		t.Fatalf("a read after an idle Lifetime read %q, want the current w", got)
	}
	idle.Set(b("k"), b("idle"))
	if err := idle.Commit(); err != nil {
		t.Fatalf("a transaction idle past Lifetime before its first read: %v", err)
	}

	writeOnly := db.Begin(context.Background())
	writeOnly.Set(b("k"), b("late"))
	clk.Advance(Lifetime + time.Second)
	if err := writeOnly.Commit(); err != nil {
		t.Fatalf("a write-only commit past Lifetime: %v", err)
	}
	if got := read(t, db, "k"); got != "late" {
		t.Fatalf("k = %q, want late", got)
	}

	readOnly := db.Begin(context.Background())
	mustGet(t, readOnly, "k")
	clk.Advance(Lifetime + time.Second)
	if err := readOnly.Commit(); err != nil {
		t.Fatalf("a read-only commit past Lifetime: %v", err)
	}

	// But a read that found the transaction too old fails its commit.
	failedRead := db.Begin(context.Background())
	mustGet(t, failedRead, "k")
	clk.Advance(Lifetime + time.Second)
	_, err := failedRead.Get(b("k")).Get()
	wantCode(t, err, kv.CodeTransactionTooOld)
	wantCode(t, failedRead.Commit(), kv.CodeTransactionTooOld)
}

func TestInjectedNotCommitted(t *testing.T) {
	db := newDB(t, Options{Faults: Faults{NotCommittedRate: 1}})
	tr := db.Begin(context.Background())
	tr.Set(b("k"), b("v"))
	wantCode(t, tr.Commit(), kv.CodeNotCommitted)
	if err := db.SetFaults(Faults{}); err != nil {
		t.Fatal(err)
	}
	if got := read(t, db, "k"); got != "<nil>" {
		t.Fatalf("k = %q after injected not_committed", got)
	}
	if s := db.Stats(); s.InjectedFaults != 1 || s.Conflicts != 0 || s.Commits != 0 {
		t.Fatalf("stats %+v", s)
	}
}

func TestInjectedUnknownResult(t *testing.T) {
	for _, c := range []struct {
		name    string
		faults  Faults
		applied bool
	}{
		{"applied", Faults{UnknownResultAppliedRate: 1}, true},
		{"not applied", Faults{UnknownResultNotAppliedRate: 1}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			db := newDB(t, Options{Faults: c.faults})
			tr := db.Begin(context.Background())
			tr.Set(b("k"), b("v"))
			tr.Add(b("n"), 1)
			err := tr.Commit()
			wantCode(t, err, kv.CodeCommitUnknownResult)
			if !kv.MaybeCommitted(err) || !kv.IsRetryable(err) {
				t.Fatal("1021 must be maybe-committed and retryable")
			}
			want, wantN := "<nil>", "<nil>"
			if c.applied {
				want, wantN = "v", string(kv.EncodeInt64(1))
			}
			if got := read(t, db, "k"); got != want {
				t.Fatalf("k = %q, want %q", got, want)
			}
			if got := read(t, db, "n"); got != wantN {
				t.Fatalf("n = %q, want %q", got, wantN)
			}
			s := db.Stats()
			if s.InjectedFaults != 1 || (s.Commits == 1) != c.applied {
				t.Fatalf("stats %+v", s)
			}
		})
	}
}

func TestFaultsDeterministicFromSeed(t *testing.T) {
	outcomes := func(seed int64) string {
		db := newDB(t, Options{Faults: Faults{Seed: seed, NotCommittedRate: 0.3,
			UnknownResultAppliedRate: 0.2, UnknownResultNotAppliedRate: 0.2}})
		var sb strings.Builder
		for i := range 40 {
			tr := db.Begin(context.Background())
			tr.Set(b(fmt.Sprint("k", i)), b("v"))
			fmt.Fprintf(&sb, "%d/%s ", kv.ErrorCode(tr.Commit()), read(t, db, fmt.Sprint("k", i)))
		}
		return sb.String()
	}
	a, a2, c := outcomes(7), outcomes(7), outcomes(8)
	if a != a2 {
		t.Fatalf("same seed, different faults:\n%s\n%s", a, a2)
	}
	if a == c {
		t.Fatalf("different seeds, same 40 outcomes: %s", a)
	}
	for _, want := range []string{"0/v", "1020/<nil>", "1021/v", "1021/<nil>"} {
		if !strings.Contains(a, want) {
			t.Fatalf("outcome %q never drawn in %s", want, a)
		}
	}
}

func TestTransactRetriesUnderFaults(t *testing.T) {
	db := newDB(t, Options{
		Faults:      Faults{Seed: 1, NotCommittedRate: 0.3, UnknownResultAppliedRate: 0.2, UnknownResultNotAppliedRate: 0.2},
		BackoffBase: time.Microsecond, BackoffMax: 10 * time.Microsecond,
	})
	const n = 60
	for i := range n {
		// Idempotent: a marker key recognises an earlier run that committed.
		marker := b(fmt.Sprint("done/", i))
		err := db.Transact(context.Background(), func(tr kv.Transaction) error {
			v, err := tr.Get(marker).Get()
			if err != nil || v != nil {
				return err
			}
			tr.Set(marker, nil)
			tr.Add(b("count"), 1)
			return nil
		})
		if err != nil {
			t.Fatalf("Transact %d: %v", i, err)
		}
	}
	if err := db.SetFaults(Faults{}); err != nil {
		t.Fatal(err)
	}
	if got := kv.DecodeInt64([]byte(read(t, db, "count"))); got != n {
		t.Fatalf("count = %d, want %d", got, n)
	}
	if s := db.Stats(); s.Retries == 0 || s.InjectedFaults != s.Retries {
		t.Fatalf("stats %+v: want retries, one per injected fault", s)
	}
}

func TestTransactStopsOnNonRetryableError(t *testing.T) {
	db := New()
	boom := errors.New("boom")
	calls := 0
	err := db.Transact(context.Background(), func(tr kv.Transaction) error {
		calls++
		tr.Set(b("k"), b("v"))
		return boom
	})
	if !errors.Is(err, boom) || calls != 1 {
		t.Fatalf("err %v after %d calls", err, calls)
	}
	if got := read(t, db, "k"); got != "<nil>" {
		t.Fatal("a failed fn committed")
	}
	err = db.Transact(context.Background(), func(tr kv.Transaction) error {
		calls++
		tr.Set(b("k"), make([]byte, kv.MaxValueSize+1))
		return nil
	})
	wantCode(t, err, kv.CodeValueTooLarge)
	if calls != 2 {
		t.Fatalf("non-retryable 2103 was retried: %d calls", calls)
	}
}

func TestTransactMaxRetries(t *testing.T) {
	db := newDB(t, Options{Faults: Faults{NotCommittedRate: 1}, MaxRetries: 3, BackoffBase: time.Microsecond})
	calls := 0
	err := db.Transact(context.Background(), func(tr kv.Transaction) error {
		calls++
		tr.Set(b("k"), b("v"))
		return nil
	})
	wantCode(t, err, kv.CodeNotCommitted)
	if calls != 4 {
		t.Fatalf("fn ran %d times, want 1 + 3 retries", calls)
	}
}

func TestContextCancellationStopsRetries(t *testing.T) {
	db := newDB(t, Options{Faults: Faults{NotCommittedRate: 1}, BackoffBase: time.Microsecond})
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	err := db.Transact(ctx, func(tr kv.Transaction) error {
		calls++
		if calls == 3 {
			cancel()
		}
		tr.Set(b("k"), b("v"))
		return nil
	})
	if !errors.Is(err, context.Canceled) || calls != 3 {
		t.Fatalf("err %v after %d calls, want context.Canceled after 3", err, calls)
	}

	// An ended context runs nothing.
	err = db.ReadTransact(ctx, func(kv.ReadTransaction) error { calls++; return nil })
	if !errors.Is(err, context.Canceled) || calls != 3 {
		t.Fatalf("ReadTransact on a cancelled ctx: %v, calls %d", err, calls)
	}

	// Latency waits end with the context: a read round and a commit that
	// would take an hour.
	slow := newDB(t, Options{Faults: Faults{ReadLatency: time.Hour, CommitLatency: time.Hour}})
	ctx2, cancel2 := context.WithCancel(context.Background())
	tr := slow.Begin(ctx2)
	f := tr.Get(b("k"))
	tr.Set(b("k"), b("v"))
	cancel2()
	if _, err := f.Get(); !errors.Is(err, context.Canceled) {
		t.Fatalf("read wait: %v", err)
	}
	if err := tr.Commit(); !errors.Is(err, context.Canceled) {
		t.Fatalf("commit: %v", err)
	}
	if slow.Version() != 0 {
		t.Fatal("abandoned commit applied")
	}
}

func TestStatsExact(t *testing.T) {
	db := New()
	put(t, db, "a", "1", "b", "2", "r/1", "x", "r/2", "y")
	db.ResetStats()
	err := db.Transact(context.Background(), func(tr kv.Transaction) error {
		// Round 1: three reads issued, then waited on.
		fa, fb := tr.Get(b("a")), tr.Snapshot().Get(b("b"))
		fr := tr.GetRange(kv.PrefixRange(b("r/")), kv.RangeOptions{})
		for _, f := range []kv.FutureValue{fa, fb} {
			if _, err := f.Get(); err != nil {
				return err
			}
		}
		if _, err := fr.Get(); err != nil {
			return err
		}
		tr.Set(b("c"), b("333"))                                 // 1 + 3 bytes
		tr.Set(b("c"), b("3"))                                   // same key: counted once, final value
		tr.Clear(b("a"))                                         // 1 + 0
		tr.Add(b("n"), 5)                                        // 1 + 8
		tr.ClearRange(kv.KeyRange{Begin: b("r/"), End: b("r0")}) // 2 + 2
		// Answered from the transaction's own writes: no round.
		if v, err := tr.Get(b("c")).Get(); err != nil || string(v) != "3" {
			return fmt.Errorf("own write: %q %v", v, err)
		}
		// Round 2: one more read.
		_, err := tr.Get(b("zz")).Get()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	want := Stats{Transactions: 1, ReadRounds: 2, Reads: 4, Commits: 1, KeysWritten: 3,
		BytesWritten: (1 + 1) + (1 + 0) + (1 + 8) + (2 + 2), RangesCleared: 1}
	if got := db.Stats(); got != want {
		t.Fatalf("stats\n got %+v\nwant %+v", got, want)
	}
	db.ResetStats()
	if got := db.Stats(); got != (Stats{}) {
		t.Fatalf("after ResetStats: %+v", got)
	}
}

func TestFinishedTransactionRefusesWork(t *testing.T) {
	db := New()
	tr := db.Begin(context.Background())
	tr.Set(b("k"), b("v"))
	if err := tr.Commit(); err != nil {
		t.Fatal(err)
	}
	_, err := tr.Get(b("k")).Get()
	wantCode(t, err, kv.CodeUsedDuringCommit)
	wantCode(t, tr.Commit(), kv.CodeUsedDuringCommit)

	tr = db.Begin(context.Background())
	tr.Cancel()
	_, err = tr.GetRange(kv.KeyRange{Begin: b("a"), End: b("z")}, kv.RangeOptions{}).Get()
	wantCode(t, err, kv.CodeTransactionCancelled)
	wantCode(t, tr.Commit(), kv.CodeTransactionCancelled)
}

func TestNoAliasing(t *testing.T) {
	db := New()
	key, val := b("k"), b("value")
	tr := db.Begin(context.Background())
	tr.Set(key, val)
	key[0], val[0] = 'X', 'X'
	if err := tr.Commit(); err != nil {
		t.Fatal(err)
	}
	tr = db.Begin(context.Background())
	defer tr.Cancel()
	f := tr.Get(b("k"))
	v1, _ := f.Get()
	v1[0] = 'Y'
	v2, _ := f.Get()
	kvs, _ := tr.GetRange(kv.KeyRange{Begin: b("a"), End: b("z")}, kv.RangeOptions{}).Get()
	if string(v2) != "value" || len(kvs) != 1 || string(kvs[0].Value) != "value" {
		t.Fatalf("engine memory aliased: %q %q", v2, kvs)
	}
}

func TestHistoryIsPruned(t *testing.T) {
	clk := newClock()
	db := newDB(t, Options{Now: clk.Now})
	for i := range 100 {
		put(t, db, fmt.Sprint("k", i), "v")
	}
	db.mu.Lock()
	n := len(db.history)
	db.mu.Unlock()
	if n > 1 {
		t.Fatalf("history holds %d commits with no open transaction", n)
	}

	// An open transaction pins the history it needs, until it grows older
	// than Lifetime.
	old := db.Begin(context.Background())
	old.Get(b("k1"))
	for i := range 10 {
		put(t, db, fmt.Sprint("k", i), "w")
	}
	db.mu.Lock()
	n = len(db.history)
	db.mu.Unlock()
	if n < 10 {
		t.Fatalf("history holds %d commits, an open transaction needs 10", n)
	}
	clk.Advance(Lifetime + time.Second)
	put(t, db, "k1", "x")
	db.mu.Lock()
	n, floor := len(db.history), db.floor
	db.mu.Unlock()
	if n != 1 || floor <= old.ReadVersion() {
		t.Fatalf("history %d, floor %d: old commits not dropped", n, floor)
	}
	old.Set(b("k1"), b("late"))
	wantCode(t, old.Commit(), kv.CodeTransactionTooOld)
}

func TestConcurrentCounter(t *testing.T) {
	db := newDB(t, Options{BackoffBase: 10 * time.Microsecond, BackoffMax: time.Millisecond})
	const workers, iters = 8, 40
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range iters {
				err := db.Transact(context.Background(), func(tr kv.Transaction) error {
					v, err := tr.Get(b("counter")).Get()
					if err != nil {
						return err
					}
					// Yield between read and write so that other workers
					// commit in between: without conflict detection updates
					// would be lost.
					runtime.Gosched()
					tr.Set(b("counter"), kv.EncodeInt64(kv.DecodeInt64(v)+1))
					return nil
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := kv.DecodeInt64([]byte(read(t, db, "counter"))); got != workers*iters {
		t.Fatalf("counter = %d, want %d", got, workers*iters)
	}
	s := db.Stats()
	if s.Commits != workers*iters || s.Retries != s.Conflicts {
		t.Fatalf("stats %+v: want %d commits and one retry per conflict", s, workers*iters)
	}
}

func TestOptionsValidation(t *testing.T) {
	for _, o := range []Options{
		{Faults: Faults{NotCommittedRate: -0.1}},
		{Faults: Faults{NotCommittedRate: 0.6, UnknownResultAppliedRate: 0.6}},
		{Faults: Faults{ReadLatency: -1}},
		{BackoffBase: -1},
		{MaxRetries: -1},
		{BackoffBase: time.Second, BackoffMax: time.Millisecond},
	} {
		if _, err := NewWithOptions(o); err == nil {
			t.Errorf("NewWithOptions(%+v) accepted", o)
		}
	}
	if err := New().SetFaults(Faults{UnknownResultNotAppliedRate: 2}); err == nil {
		t.Error("SetFaults accepted a rate of 2")
	}
}

// TestConsistentSnapshotsUnderLoad moves units between accounts while
// readers sum every account: each read sees one version, so the sum never
// changes. It also exercises the copy-on-write snapshots under -race.
func TestConsistentSnapshotsUnderLoad(t *testing.T) {
	db := newDB(t, Options{BackoffBase: 10 * time.Microsecond, BackoffMax: time.Millisecond})
	const accounts, total = 20, 1000
	err := db.Transact(context.Background(), func(tr kv.Transaction) error {
		for i := range accounts {
			tr.Set(b(fmt.Sprintf("acct/%02d", i)), kv.EncodeInt64(total/accounts))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				from := b(fmt.Sprintf("acct/%02d", (w*7+i)%accounts))
				to := b(fmt.Sprintf("acct/%02d", (w*3+i*5+1)%accounts))
				err := db.Transact(context.Background(), func(tr kv.Transaction) error {
					f1, f2 := tr.Get(from), tr.Get(to)
					v1, err := f1.Get()
					if err != nil {
						return err
					}
					v2, err := f2.Get()
					if err != nil {
						return err
					}
					if bytes.Equal(from, to) {
						return nil
					}
					tr.Set(from, kv.EncodeInt64(kv.DecodeInt64(v1)-1))
					tr.Set(to, kv.EncodeInt64(kv.DecodeInt64(v2)+1))
					return nil
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				err := db.ReadTransact(context.Background(), func(tr kv.ReadTransaction) error {
					kvs, err := tr.GetRange(kv.PrefixRange(b("acct/")), kv.RangeOptions{Reverse: true}).Get()
					if err != nil {
						return err
					}
					var sum int64
					for _, p := range kvs {
						sum += kv.DecodeInt64(p.Value)
					}
					if len(kvs) != accounts || sum != total {
						return fmt.Errorf("read %d accounts summing to %d, want %d and %d", len(kvs), sum, accounts, total)
					}
					return nil
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}
