package fdbstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/fdbstore/internal/tuple"
	"github.com/ckptstore/ckptstore/fdbstore/kv"
	"github.com/ckptstore/ckptstore/fdbstore/kv/memkv"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

// checkStart is the wall clock of the fixtures' op markers.
var checkStart = time.UnixMilli(1_700_000_000_000)

// fixture is a store with every kind of key: thread t holds the chain
// a ← b ← c (c has three chunks and no blob), under a lease taken twice
// (fence 2); thread f is a fork of b; thread m has only a transcript.
// Blob counts: FileKey(0) is in a, b and f's root (3), FileKey(1) in b and
// the root (2).
type fixture struct {
	s     *Driver
	db    *memkv.DB
	clock *testkit.Clock
	lease ckptstore.Writer // t's, fence 2
}

func checkFixture(t *testing.T, opts Options) fixture {
	t.Helper()
	ctx := context.Background()
	db := memkv.New()
	clock := testkit.NewClock(checkStart)
	opts.wallClock = clock.Now
	s, err := NewDriver(db, opts)
	testkit.Must(t, err)
	first, err := s.p().AcquireWriter(ctx, "t")
	testkit.Must(t, err)
	testkit.Must(t, s.p().Release(ctx, first.Writer))
	lease, err := s.p().AcquireWriter(ctx, "t")
	testkit.Must(t, err)
	if lease.Writer.Fence != 2 {
		t.Fatalf("fence %d, want 2", lease.Writer.Fence)
	}
	testkit.Must(t, s.p().Append(ctx, sizedCheckpoint("t", "a", "", 0, 10, 1), "", lease.Writer))
	testkit.Must(t, s.p().Append(ctx, sizedCheckpoint("t", "b", "a", 1, 10, 2), "a", lease.Writer))
	testkit.Must(t, s.p().Append(ctx, sizedCheckpoint("t", "c", "b", 2, 250_000, 0), "b", lease.Writer))
	fl, err := s.p().AcquireWriter(ctx, "f")
	testkit.Must(t, err)
	_, err = s.p().ForkFromCheckpoint(ctx, ckptstore.ForkInput{SourceThreadID: "t", SourceCheckpointID: "b",
		DestinationThreadID: "f", DestinationCheckpointID: "root", CreatedAt: 7, Writer: fl.Writer})
	testkit.Must(t, err)
	testkit.Must(t, s.p().SaveThread(ctx, "m", []byte(`["x"]`)))
	return fixture{s: s, db: db, clock: clock, lease: lease.Writer}
}

// mustCheck runs Check and fails on its error.
func mustCheck(t *testing.T, s *Driver) []driver.Problem {
	t.Helper()
	problems, err := s.Check(context.Background())
	testkit.Must(t, err)
	return problems
}

// marker is the value of a marker of kind written at ms, with result.
func marker(ms int64, kind opKind, result ...byte) []byte {
	return append(append(tuple.Pack(ms), byte(kind)), result...)
}

// wantProblem is one problem a corruption must cause: its key and a part
// of what it says.
type wantProblem struct {
	key  func(s *Driver) []byte
	what string
}

func at(key func(s *Driver) []byte, what string) []wantProblem {
	return []wantProblem{{key, what}}
}

func ref(n int) func(s *Driver) []byte {
	return func(s *Driver) []byte { return s.k.ref(testkit.FileKey(n)) }
}

// TestCheckFindsEachBrokenInvariant: the fixture is consistent, and each
// corruption, written directly through memkv, makes Check report exactly
// the problems it should: the key and what is wrong.
// brokenCase is one broken invariant: a write that breaks the consistent
// fixture, and the problems Check must report for it.
type brokenCase struct {
	name   string
	break_ func(f fixture, tr kv.Transaction)
	want   []wantProblem
}

func TestCheckFindsEachBrokenInvariant(t *testing.T) {
	if p := mustCheck(t, checkFixture(t, Options{}).s); len(p) != 0 {
		t.Fatalf("the consistent fixture: %v", p)
	}
	var cases []brokenCase
	for _, group := range [][]brokenCase{countCases(), storageCases(), threadCases(), leaseCases(), markerCases(), foreignKeyCases()} {
		cases = append(cases, group...)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { checkBroken(t, c) })
	}
}

// checkBroken breaks a fresh fixture as c says and checks that Check
// reports exactly c's problems.
func checkBroken(t *testing.T, c brokenCase) {
	f := checkFixture(t, Options{})
	testkit.Must(t, f.db.Transact(context.Background(), func(tr kv.Transaction) error { c.break_(f, tr); return nil }))
	problems := mustCheck(t, f.s)
	if len(problems) != len(c.want) {
		t.Fatalf("Check = %v, want %d problems", problems, len(c.want))
	}
	for _, w := range c.want {
		found := false
		for _, p := range problems {
			found = found || (p.Key == string(w.key(f.s)) && strings.Contains(p.What, w.what))
		}
		if !found {
			t.Errorf("Check = %v, want a problem at %q with %q", problems, w.key(f.s), w.what)
		}
	}
}

// countCases break the blob counts.
func countCases() []brokenCase {
	return []brokenCase{
		// Blob counts.
		{"count at 0", func(f fixture, tr kv.Transaction) { tr.Set(f.s.k.ref(testkit.FileKey(0)), kv.EncodeInt64(0)) },
			at(ref(0), "count 0")},
		{"count below 0", func(f fixture, tr kv.Transaction) { tr.Set(f.s.k.ref(testkit.FileKey(1)), kv.EncodeInt64(-1)) },
			at(ref(1), "count -1")},
		{"count bumped", func(f fixture, tr kv.Transaction) { tr.Add(f.s.k.ref(testkit.FileKey(0)), 1) },
			at(ref(0), "count 4, 3 stored checkpoints use it")},
		{"count of an unused blob", func(f fixture, tr kv.Transaction) { tr.Add(f.s.k.ref(testkit.FileKey(9)), 1) },
			at(ref(9), "count 1, 0 stored checkpoints use it")},
		{"count dropped", func(f fixture, tr kv.Transaction) { tr.Clear(f.s.k.ref(testkit.FileKey(1))) },
			at(ref(1), "no count, 2 stored checkpoints use it")},
		{"count value malformed", func(f fixture, tr kv.Transaction) { tr.Set(f.s.k.ref(testkit.FileKey(1)), []byte{2}) },
			at(ref(1), "malformed blob count")},
	}
}

// storageCases break a checkpoint's index, chunks or copy.
func storageCases() []brokenCase {
	return []brokenCase{
		// Index, chunks and copies.
		{"index deleted", func(f fixture, tr kv.Transaction) { tr.ClearRange(f.s.k.idRange("c")) },
			at(func(s *Driver) []byte { return s.k.chunk("t", 2, "c", 0) }, `checkpoint "c" has no index`)},
		{"chunks deleted", func(f fixture, tr kv.Transaction) { tr.ClearRange(rangeOf(f.s.k.checkpointPrefix("t", 2, "c"))) },
			at(func(s *Driver) []byte { return s.k.index("c") }, `the index and the link of "c" have no chunks in thread "t"`)},
		{"chunks and link deleted", func(f fixture, tr kv.Transaction) {
			tr.ClearRange(rangeOf(f.s.k.checkpointPrefix("t", 2, "c")))
			tr.Clear(f.s.k.link("t", "c"))
		}, at(func(s *Driver) []byte { return s.k.index("c") }, `index of "c" without its chunks in thread "t"`)},
		{"chunk deleted", func(f fixture, tr kv.Transaction) { tr.Clear(f.s.k.chunk("t", 2, "c", 1)) },
			at(func(s *Driver) []byte { return s.k.chunk("t", 2, "c", 0) }, "chunk 1 is missing (chunks [0 2])")},
		{"stray chunk after a value", func(f fixture, tr kv.Transaction) { tr.Set(f.s.k.chunk("t", 0, "a", 1), []byte("junk")) },
			at(func(s *Driver) []byte { return s.k.chunk("t", 0, "a", 0) }, "stray chunks [1] after the end of its value (chunk 0)")},
		{"stray chunk after a gap", func(f fixture, tr kv.Transaction) { tr.Set(f.s.k.chunk("t", 2, "c", 5), []byte("junk")) },
			at(func(s *Driver) []byte { return s.k.chunk("t", 2, "c", 0) }, "stray chunks [5] after the end of its value (chunk 2)")},
		{"stray chunks of no checkpoint", func(f fixture, tr kv.Transaction) { tr.Set(f.s.k.chunk("t", 5, "zz", 0), []byte("junk")) },
			[]wantProblem{
				{func(s *Driver) []byte { return s.k.chunk("t", 5, "zz", 0) }, `checkpoint "zz" has no index`},
				{func(s *Driver) []byte { return s.k.chunk("t", 5, "zz", 0) }, `checkpoint "zz": the value does not decode`},
				{func(s *Driver) []byte { return s.k.chunk("t", 5, "zz", 0) }, `checkpoint "zz" has no link`},
			}},
		{"copy chunk deleted", func(f fixture, tr kv.Transaction) { tr.Clear(f.s.k.copyChunk("c", 1)) },
			at(func(s *Driver) []byte { return s.k.copyChunk("c", 2) }, "copy chunk 2, want 1")},
		{"copy dropped", func(f fixture, tr kv.Transaction) { tr.Clear(f.s.k.copyChunk("b", 0)) },
			at(func(s *Driver) []byte { return s.k.index("b") }, "copied = true with 0 copy chunks")},
		{"copy changed", func(f fixture, tr kv.Transaction) {
			st, _ := f.s.newStored(sizedCheckpoint("t", "b", "a", 1, 11, 2))
			tr.Set(f.s.k.copyChunk("b", 0), st.enc)
		}, at(func(s *Driver) []byte { return s.k.index("b") }, `the copy of "b" differs from its data`)},
		{"copy without an index", func(f fixture, tr kv.Transaction) { tr.Set(f.s.k.copyChunk("zz", 0), []byte("x")) },
			at(func(s *Driver) []byte { return s.k.copyChunk("zz", 0) }, `copy chunk of "zz" without an index`)},
		{"index names another thread", func(f fixture, tr kv.Transaction) {
			tr.Set(f.s.k.index("a"), indexValue{thread: "f", createdAt: 0, copied: true}.encode())
		}, []wantProblem{
			{func(s *Driver) []byte { return s.k.chunk("t", 0, "a", 0) }, `the index of "a" names thread "f" at 0`},
			{func(s *Driver) []byte { return s.k.index("a") }, `index of "a" without its chunks in thread "f"`},
		}},
	}
}

// threadCases break a thread's links, head, listing or transcript.
func threadCases() []brokenCase {
	return []brokenCase{
		// Links.
		{"link dropped", func(f fixture, tr kv.Transaction) { tr.Clear(f.s.k.link("t", "a")) },
			at(func(s *Driver) []byte { return s.k.chunk("t", 0, "a", 0) }, `checkpoint "a" has no link`)},
		{"link without its checkpoint", func(f fixture, tr kv.Transaction) {
			tr.Set(f.s.k.link("t", "zz"), linkValue{parent: "c", createdAt: 9}.encode())
		}, at(func(s *Driver) []byte { return s.k.link("t", "zz") }, `link of "zz" without its checkpoint`)},
		{"link wrong", func(f fixture, tr kv.Transaction) { tr.Set(f.s.k.link("t", "a"), linkValue{parent: "zz"}.encode()) },
			at(func(s *Driver) []byte { return s.k.link("t", "a") }, `checkpoint has parent ""`)},
		// Heads.
		{"empty head", func(f fixture, tr kv.Transaction) { tr.Set(f.s.k.head("t"), nil) },
			at(func(s *Driver) []byte { return s.k.head("t") }, "empty head")},
		// The thread index.
		{"unlisted", func(f fixture, tr kv.Transaction) { tr.Clear(f.s.k.listed("m")) },
			at(func(s *Driver) []byte { return s.k.listed("m") }, "listed = false for a thread with head false, checkpoints false, transcript true")},
		{"listed, no keys", func(f fixture, tr kv.Transaction) { tr.Set(f.s.k.listed("nobody"), nil) },
			at(func(s *Driver) []byte { return s.k.listed("nobody") }, `listed thread "nobody" has no keys`)},
		// Transcripts.
		{"transcript not an array", func(f fixture, tr kv.Transaction) { tr.Set(f.s.k.transcriptChunk("m", 0), []byte("{}")) },
			at(func(s *Driver) []byte { return s.k.transcriptChunk("m", 0) }, "transcript:")},
		{"stray transcript chunk", func(f fixture, tr kv.Transaction) { tr.Set(f.s.k.transcriptChunk("m", 2), []byte("x")) },
			at(func(s *Driver) []byte { return s.k.transcriptChunk("m", 0) }, "stray transcript chunks [2]")},
	}
}

// leaseCases break the lease and its fences.
func leaseCases() []brokenCase {
	nowMs := checkStart.UnixMilli()
	epoch := epochOf(checkStart)
	leaseKey := func(s *Driver) []byte { return s.k.lease("t") }
	return []brokenCase{
		// Leases and fences.
		{"fence went down", func(f fixture, tr kv.Transaction) {
			tr.Set(f.s.k.lease("t"), leaseValue{fence: 1, expires: time.Unix(0, 0)}.encode())
		}, at(leaseKey, "fence 1 went down")},
		{"lease gone", func(f fixture, tr kv.Transaction) { tr.Clear(f.s.k.lease("t")) },
			at(leaseKey, "fence 0 went down")},
		{"fence taken twice", func(f fixture, tr kv.Transaction) {
			tr.Set(f.s.k.opMarker("t", epoch, "zzz"), marker(nowMs, opAcquire, tuple.Pack(int64(2), int64(1), int64(0))...))
		}, at(func(s *Driver) []byte { return s.k.opMarker("t", epoch, "zzz") }, `and "zzz" both took fence 2`)},
		{"lease of another token", func(f fixture, tr kv.Transaction) {
			tr.Set(f.s.k.lease("t"), leaseValue{token: "other", fence: 2, expires: time.Now().Add(time.Hour)}.encode())
		}, at(leaseKey, `the lease at fence 2 has owner token "other"`)},
		{"lease malformed", func(f fixture, tr kv.Transaction) { tr.Set(f.s.k.lease("m"), []byte("x")) },
			at(func(s *Driver) []byte { return s.k.lease("m") }, "malformed lease")},
	}
}

// markerCases leave op markers Check must report.
func markerCases() []brokenCase {
	nowMs := checkStart.UnixMilli()
	epoch := epochOf(checkStart)
	return []brokenCase{
		// Op markers.
		{"leftover marker", func(f fixture, tr kv.Transaction) {
			ms := nowMs - 2*markerTTL.Milliseconds()
			tr.Set(f.s.k.opMarker("t", epochOf(time.UnixMilli(ms)), "old"), marker(ms, opAppend))
		}, at(func(s *Driver) []byte { return s.k.opMarker("t", epoch-2, "old") }, fmt.Sprintf("a marker of epoch %d left over", epoch-2))},
		{"marker from the future", func(f fixture, tr kv.Transaction) {
			ms := nowMs + 2*markerTTL.Milliseconds()
			tr.Set(f.s.k.opMarker("t", epoch+2, "new"), marker(ms, opAppend))
		}, at(func(s *Driver) []byte { return s.k.opMarker("t", epoch+2, "new") }, "more than markerTTL/2 after this clock")},
		{"marker in another epoch", func(f fixture, tr kv.Transaction) {
			tr.Set(f.s.k.opMarker("t", epoch, "tok"), marker(nowMs-markerTTL.Milliseconds(), opAppend))
		},
			at(func(s *Driver) []byte { return s.k.opMarker("t", epoch, "tok") }, fmt.Sprintf("marker of epoch %d written at", epoch))},
		{"marker of no kind", func(f fixture, tr kv.Transaction) { tr.Set(f.s.k.opMarker("t", epoch, "tok"), marker(nowMs, 'z')) },
			at(func(s *Driver) []byte { return s.k.opMarker("t", epoch, "tok") }, "marker of no kind of write")},
		{"marker with a result it does not have", func(f fixture, tr kv.Transaction) {
			tr.Set(f.s.k.opMarker("t", epoch, "tok"), marker(nowMs, opAppend, 1, 2))
		},
			at(func(s *Driver) []byte { return s.k.opMarker("t", epoch, "tok") }, "marker of kind a with a result of 2 bytes")},
		// The first layout kept markers in one global range, (P, "o",
		// wallMillis, token); a key left there by a store of that time is
		// no key of this package.
		{"global marker of the first layout", func(f fixture, tr kv.Transaction) { tr.Set(f.s.k.key("o", 5, "tok"), []byte{1, 'a'}) },
			at(func(s *Driver) []byte { return s.k.key("o", 5, "tok") }, "not a key of this package")},
	}
}

// foreignKeyCases write keys outside the layout.
func foreignKeyCases() []brokenCase {
	return []brokenCase{
		// Keys outside the layout.
		{"foreign space", func(f fixture, tr kv.Transaction) { tr.Set(f.s.k.key("zz", "x"), nil) },
			at(func(s *Driver) []byte { return s.k.key("zz", "x") }, "not a key of this package")},
		{"foreign thread key", func(f fixture, tr kv.Transaction) { tr.Set(f.s.k.threadKey("t", "z", 0), nil) },
			at(func(s *Driver) []byte { return s.k.threadKey("t", "z", 0) }, "not a key of this package")},
		{"not a tuple", func(f fixture, tr kv.Transaction) { tr.Set(append(append([]byte(nil), f.s.k.p...), 0xfe), nil) },
			at(func(s *Driver) []byte { return append(append([]byte(nil), s.k.p...), 0xfe) }, "not a key of this package")},
		{"wrong bucket", func(f fixture, tr kv.Transaction) {
			tr.Set(f.s.k.key(spaceThread, bucket("t")+1, "t", threadHead), []byte("c"))
		},
			at(func(s *Driver) []byte { return s.k.key(spaceThread, bucket("t")+1, "t", threadHead) }, "bucket")},
		{"instance record", func(f fixture, tr kv.Transaction) { tr.Set(f.s.k.instance("k"), []byte("x")) },
			at(func(s *Driver) []byte { return s.k.instance("k") }, "instance record")},
	}
}

// TestCheckHeadOfAnotherThread: a head naming another thread's checkpoint
// is a state the contract reaches, so Check does not report it: thread t's
// head is left on its pruned root x, then thread u stores an x of its own.
func TestCheckHeadOfAnotherThread(t *testing.T) {
	ctx := context.Background()
	s, err := NewDriver(memkv.New(), Options{})
	testkit.Must(t, err)
	lt, err := s.p().AcquireWriter(ctx, "t")
	testkit.Must(t, err)
	testkit.Must(t, s.p().Append(ctx, sizedCheckpoint("t", "x", "", 0, 10, 1), "", lt.Writer))
	testkit.Must(t, s.p().Append(ctx, sizedCheckpoint("t", "y", "x", 1, 10, 1), "x", lt.Writer))
	if _, err := s.p().DeleteCheckpoints(ctx, "t", 1, lt.Writer); err != nil {
		t.Fatal(err)
	}
	testkit.Must(t, s.p().DeleteHead(ctx, "t", "y", lt.Writer))
	lu, err := s.p().AcquireWriter(ctx, "u")
	testkit.Must(t, err)
	testkit.Must(t, s.p().Append(ctx, sizedCheckpoint("u", "x", "", 5, 10, 2), "", lu.Writer))
	head, err := s.p().GetHead(ctx, "t")
	testkit.Must(t, err)
	cp, err := s.p().Get(ctx, head)
	testkit.Must(t, err)
	if head != "x" || cp == nil || cp.ThreadID != "u" {
		t.Fatalf("head of t %q names %+v, want x of thread u", head, cp)
	}
	if p := mustCheck(t, s); len(p) != 0 {
		t.Fatalf("Check = %v, want none: the contract reaches this state", p)
	}
}

// TestCheckMarkerExpiry: markers older than markerTTL by the clock stay
// while their thread is idle (not a problem), and go with its next write.
func TestCheckMarkerExpiry(t *testing.T) {
	ctx := context.Background()
	f := checkFixture(t, Options{})
	f.clock.Advance(5 * markerTTL)
	if p := mustCheck(t, f.s); len(p) != 0 {
		t.Fatalf("idle threads' old markers: %v", p)
	}
	// The next write of t clears its old epochs.
	testkit.Must(t, f.s.p().DeleteHead(ctx, "t", "c", f.lease))
	if p := mustCheck(t, f.s); len(p) != 0 {
		t.Fatalf("after the next write: %v", p)
	}
	if err := f.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		old, err := tr.GetRange(f.s.k.opsBefore("t", epochOf(f.clock.Now())-1), kv.RangeOptions{}).Get()
		if err == nil && len(old) != 0 {
			err = fmt.Errorf("%d old markers of t left after its write", len(old))
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// TestCheckProblemsAreErrors: each problem wraps driver.ErrCorrupt, so
// that the problems joined are one error errors.Is recognises.
func TestCheckProblemsAreErrors(t *testing.T) {
	f := checkFixture(t, Options{})
	testkit.Must(t, f.db.Transact(context.Background(), func(tr kv.Transaction) error {
		tr.Set(f.s.k.ref(testkit.FileKey(0)), kv.EncodeInt64(0))
		return nil
	}))
	problems := mustCheck(t, f.s)
	errs := make([]error, len(problems))
	for i, p := range problems {
		errs[i] = p
	}
	err := errors.Join(errs...)
	if len(problems) != 1 || !errors.Is(err, driver.ErrCorrupt) || err.Error() != problems[0].String() {
		t.Fatalf("problems %v, joined %v", problems, err)
	}
}

// TestCheckPages: the scan in pages of two keys, a transaction of four,
// finds what one page finds: nothing on the fixture, the planted problem
// on a corrupted one.
func TestCheckPages(t *testing.T) {
	ctx := context.Background()
	tiny := checkLimits{rangeKeys: 2, txKeys: 4, txBytes: 1 << 20, txTime: time.Minute, confirmBytes: 64 << 20}
	f := checkFixture(t, Options{})
	counting := &hookDB{DB: f.db}
	f.s.db = counting
	var reports []driver.CheckProgress
	p, err := f.s.check(ctx, tiny, func(cp driver.CheckProgress) { reports = append(reports, cp) })
	testkit.Must(t, err)
	if len(p) != 0 {
		t.Fatalf("paged check of the fixture: %v", p)
	}
	if n := counting.reads.Load(); n < 10 {
		t.Fatalf("%d read transactions: the limits did not page the scan", n)
	}
	// A report per page of the scan, the keys growing, the share unknown.
	if len(reports) < 3 {
		t.Fatalf("%d progress reports of a paged scan", len(reports))
	}
	for i, r := range reports {
		if r.Done != -1 || r.Keys <= 0 || (i > 0 && r.Keys <= reports[i-1].Keys) {
			t.Fatalf("progress reports %+v", reports)
		}
	}
	testkit.Must(t, f.db.Transact(ctx, func(tr kv.Transaction) error { tr.Clear(f.s.k.chunk("t", 2, "c", 1)); return nil }))
	p, err = f.s.check(ctx, tiny, nil)
	testkit.Must(t, err)
	if len(p) != 1 || !strings.Contains(p[0].What, "chunk 1 is missing") {
		t.Fatalf("paged check with a missing chunk: %v", p)
	}
}

// hookDB counts read transactions and runs after once, after the read
// transaction numbered at has returned.
type hookDB struct {
	kv.DB
	reads atomic.Int64
	at    int64
	after func()
}

func (h *hookDB) ReadTransact(ctx context.Context, fn func(kv.ReadTransaction) error) error {
	err := h.DB.ReadTransact(ctx, fn)
	if h.reads.Add(1) == h.at && h.after != nil {
		h.after()
	}
	return err
}

// TestCheckConfirmsAcrossPages: a write between two pages of the scan
// makes a consistent store look broken (the index of t's checkpoints read
// before DeleteThread, their chunks after); the confirming read of the
// thread and its ids at one instant finds nothing.
func TestCheckConfirmsAcrossPages(t *testing.T) {
	ctx := context.Background()
	f := checkFixture(t, Options{})
	writer := f.s // over the engine itself, not through the hook
	tiny := checkLimits{rangeKeys: 2, txKeys: 2, txBytes: 1 << 20, txTime: time.Minute, confirmBytes: 64 << 20}
	hooked := func() *Driver {
		// After the scan has read the index keys, before the threads.
		var index []kv.KeyValue
		testkit.Must(t, f.db.ReadTransact(ctx, func(tr kv.ReadTransaction) (err error) {
			index, err = tr.GetRange(rangeOf(f.s.k.indexSpace), kv.RangeOptions{}).Get()
			return err
		}))
		s := *f.s
		s.db = &hookDB{DB: f.db, at: int64(len(index)+1) / 2, after: func() {
			if _, err := writer.p().DeleteThread(ctx, "t", f.lease); err != nil {
				t.Error(err)
			}
		}}
		return &s
	}
	raw, err := hooked().scan(ctx, tiny, nil)
	testkit.Must(t, err)
	if len(raw) == 0 {
		t.Fatal("the scan across the DeleteThread found nothing: the test does not split the scan where it matters")
	}
	t.Logf("the scan alone: %v", raw)

	f = checkFixture(t, Options{})
	writer = f.s
	p, err := hooked().check(ctx, tiny, nil)
	testkit.Must(t, err)
	if len(p) != 0 {
		t.Fatalf("Check across the DeleteThread: %v", p)
	}
	if cps, err := f.s.p().List(ctx, "t"); err != nil || len(cps) != 0 {
		t.Fatalf("the hook did not delete thread t: %d checkpoints, %v", len(cps), err)
	}
}

// TestCheckWhileWriting runs the checker in small pages while writers
// append, delete heads, prune, fork and delete threads: every problem it
// reports of a thread or checkpoint is confirmed at one instant, so it
// reports none (the blob counts, which need a quiet store, are left out),
// and once the writers stop it reports nothing at all.
func TestCheckWhileWriting(t *testing.T) {
	s, err := NewDriver(memkv.New(), Options{PruneBatch: 2})
	testkit.Must(t, err)
	const writers, ops = 4, 60
	var wg sync.WaitGroup
	done := make(chan struct{})
	for w := range writers {
		wg.Go(func() {
			if err := randomWrites(s, w, ops); err != nil {
				t.Error(err)
			}
		})
	}
	go func() { wg.Wait(); close(done) }()
	checks, unconfirmed, counts := checkUntil(t, s, done)
	t.Logf("%d checks while writing: %d problems of the scan that the confirming reads dropped; %d count problems (unconfirmable while writers run)", checks, unconfirmed, counts)
	if p := mustCheck(t, s); len(p) != 0 {
		t.Fatalf("Check after the writers: %v", p)
	}
}

// randomWrites is writer w of TestCheckWhileWriting: ops random writes to
// its thread w<w> (appends, most often, head deletes, prunes, forks into
// new threads, deletes of the whole thread). It stops at the first error.
func randomWrites(s *Driver, w, ops int) error {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(uint64(w), 7))
	thread := fmt.Sprintf("w%d", w)
	l, err := s.p().AcquireWriter(ctx, thread)
	if err != nil {
		return err
	}
	head, n := "", 0
	for range ops {
		var err error
		switch r := rng.IntN(10); {
		case r < 6 || head == "":
			id := fmt.Sprintf("%s-%d", thread, n)
			n++
			cp := sizedCheckpoint(thread, id, head, float64(n), 10+rng.IntN(150_000), rng.IntN(3))
			if err = s.p().Append(ctx, cp, head, l.Writer); err == nil {
				head = id
			}
		case r < 7:
			if err = s.p().DeleteHead(ctx, thread, head, l.Writer); errors.Is(err, ckptstore.ErrNotHead) {
				err = nil
			}
			head, _ = s.p().GetHead(ctx, thread)
		case r < 8:
			_, err = s.p().DeleteCheckpoints(ctx, thread, 2, l.Writer)
		case r < 9:
			if cp, err := s.p().Get(ctx, head); err != nil || cp == nil {
				continue // a head left on a pruned parent
			}
			dst := fmt.Sprintf("%s-fork%d", thread, n)
			n++
			err = forkInto(ctx, s, thread, head, dst)
		default:
			_, err = s.p().DeleteThread(ctx, thread, l.Writer)
			head = ""
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// forkInto forks checkpoint id of thread into the new thread dst, under a
// lease of its own.
func forkInto(ctx context.Context, s *Driver, thread, id, dst string) error {
	fl, err := s.p().AcquireWriter(ctx, dst)
	if err != nil {
		return err
	}
	_, err = s.p().ForkFromCheckpoint(ctx, ckptstore.ForkInput{SourceThreadID: thread, SourceCheckpointID: id,
		DestinationThreadID: dst, DestinationCheckpointID: dst + "-root", CreatedAt: 1, Writer: fl.Writer})
	return err
}

// checkUntil runs Check's scan and confirming reads with tiny limits until
// done is closed, and fails t on every confirmed problem but a count's. It
// returns how many checks ran, how many scan problems the confirming reads
// dropped, and how many count problems it let pass (a count cannot be
// confirmed while writers run).
func checkUntil(t *testing.T, s *Driver, done <-chan struct{}) (checks, unconfirmed, counts int) {
	ctx := context.Background()
	tiny := checkLimits{rangeKeys: 3, txKeys: 6, txBytes: 1 << 20, txTime: time.Minute, confirmBytes: 64 << 20}
	for running := true; running; checks++ {
		select {
		case <-done:
			running = false
		default:
		}
		raw, err := s.scan(ctx, tiny, nil)
		testkit.Must(t, err)
		p, err := s.confirm(ctx, raw, tiny)
		testkit.Must(t, err)
		for _, p := range raw {
			if p.thread != "" || p.id != "" {
				unconfirmed++
			}
		}
		for _, p := range p {
			if strings.HasPrefix(p.Key, string(s.k.refSpace)) {
				counts++
				continue
			}
			t.Errorf("check %d while writing: %v", checks, p)
		}
	}
	return checks, unconfirmed, counts
}

// BenchmarkCheck10k times Check on 10,000 checkpoints (100 threads of
// 100, 1 KB conversations, two blobs each) on memkv.
func BenchmarkCheck10k(b *testing.B) {
	ctx := context.Background()
	s, err := NewDriver(memkv.New(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	for th := range 100 {
		thread := fmt.Sprintf("thread-%03d", th)
		l, err := s.p().AcquireWriter(ctx, thread)
		if err != nil {
			b.Fatal(err)
		}
		head := ""
		for i := range 100 {
			id := fmt.Sprintf("%s-%03d", thread, i)
			if err := s.p().Append(ctx, sizedCheckpoint(thread, id, head, float64(i), 1000, 2), head, l.Writer); err != nil {
				b.Fatal(err)
			}
			head = id
		}
	}
	for b.Loop() {
		p, err := s.Check(ctx)
		if err != nil || len(p) != 0 {
			b.Fatal(p, err)
		}
	}
}

// TestCheckFindsALeakedZeroCount: a blob count left at 0 for a blob that no
// checkpoint uses, the leak a missing CompareAndClear leaves (BlobReferences
// hides it), is a problem of its own. Its recount is 0 too, so only the
// count-at-0 rule finds it.
func TestCheckFindsALeakedZeroCount(t *testing.T) {
	ctx := context.Background()
	db := memkv.New()
	s, err := NewDriver(db, Options{})
	testkit.Must(t, err)
	key := s.k.ref("sandbox-files/sha256/" + strings.Repeat("0", 64))
	testkit.Must(t, db.Transact(ctx, func(tr kv.Transaction) error {
		tr.Set(key, kv.EncodeInt64(0))
		return nil
	}))
	problems, err := s.Check(ctx)
	testkit.Must(t, err)
	if len(problems) != 1 || problems[0].Key != string(key) {
		t.Fatalf("Check found %v, want one problem at the zero count %q", problems, key)
	}
}
