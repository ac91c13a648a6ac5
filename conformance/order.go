package conformance

// Check order. docs/contract.md fixes the order of every write's checks; the first
// failing check decides the error. For each method the suite lists its
// checks, each with inputs ("variants") that fail it, and runs every variant
// alone and every pair of variants of two different checks that touch
// different fields: the pair must fail with the earlier check's error, and
// change nothing.

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

// writerKind says which writer an input carries, relative to the thread the
// write targets; the fixture turns it into a Writer.
type writerKind int

const (
	wLive       writerKind = iota // the target thread's live lease
	wForged                       // the live lease with another owner token
	wFenceUp                      // the live lease with fence + 1
	wFenceDown                    // the live lease's token with fence − 1
	wStale                        // a released and replaced lease of the target thread
	wOther                        // another thread's live lease
	wThreadSwap                   // the live lease's token and fence, another thread id
	wBadThread                    // the live lease with an empty thread id (an ids failure)
)

// lostWriters are the writer kinds that fail with ErrWriterLost.
var lostWriters = []struct {
	name string
	kind writerKind
}{
	{"forged token", wForged},
	{"fence+1", wFenceUp},
	{"fence-1", wFenceDown},
	{"stale writer", wStale},
	{"other thread's writer", wOther},
	{"thread id swapped", wThreadSwap},
}

// fieldVariant is a variant that changes one field with f.
func fieldVariant[I any](name, field string, f func(in *I)) variant[I] {
	return variant[I]{name, []string{field}, f}
}

// writerVariant is the variant of field "writer" that set makes writer
// kind k.
func writerVariant[I any](name string, k writerKind, set func(in *I, k writerKind)) variant[I] {
	return fieldVariant(name, "writer", func(in *I) { set(in, k) })
}

// writerCheck is the check "writer" of a method whose writer set makes:
// ErrWriterLost for a variant of each of lostWriters, or only of the
// kinds in only when it is not empty.
func writerCheck[I any](set func(in *I, k writerKind), only ...writerKind) check[I] {
	c := check[I]{name: "writer", err: ckptstore.ErrWriterLost}
	for _, l := range lostWriters {
		if len(only) == 0 || slices.Contains(only, l.kind) {
			c.variants = append(c.variants, writerVariant(l.name, l.kind, set))
		}
	}
	return c
}

// fixture is a store with threads in every state the order tests need:
//
//	t: g → h (head h); "gone" was appended on h and deleted
//	u: d            n: x            w: y
//	e: empty        o: empty (its lease is the "other" writer)
//	p: head "p1" that no longer exists, no checkpoints
//	s: only a transcript; t has one too
//
// Every thread has a live lease and a stale (released, replaced) writer.
type fixture struct {
	*env
	live   map[string]ckptstore.Writer
	stale  map[string]ckptstore.Writer
	before snapshot // the state after setup, which every failing write keeps
}

func (s *suite) fixture(t *testing.T) *fixture {
	t.Helper()
	e := s.env(t)
	f := &fixture{env: e, live: map[string]ckptstore.Writer{}, stale: map[string]ckptstore.Writer{}}
	for _, th := range []string{"t", "u", "n", "w", "e", "o", "p", "s"} {
		old := e.acquire(th)
		old.Release(e.ctx)
		f.stale[th] = old.Writer
		f.live[th] = e.acquire(th).Writer
	}
	e.chain("t", ptr(f.live["t"]), "g", "h", "gone")
	require.NoError(t, e.s.DeleteHead(e.ctx, "t", "gone", f.live["t"]), "DeleteHead gone")
	e.chain("u", ptr(f.live["u"]), "d")
	e.chain("n", ptr(f.live["n"]), "x")
	e.chain("w", ptr(f.live["w"]), "y")
	e.chain("p", ptr(f.live["p"]), "p1", "p2")
	e.prune("p", 1, f.live["p"])
	require.NoError(t, e.s.DeleteHead(e.ctx, "p", "p2", f.live["p"]), "DeleteHead p2")
	require.NoError(t, e.s.SaveThread(e.ctx, "s", []byte(`[{"role":"user","content":"s"}]`)), "SaveThread s")
	require.NoError(t, e.s.SaveThread(e.ctx, "t", []byte(`["t"]`)), "SaveThread t")
	// Ids the writes under test would create, so snapshots cover them.
	e.track(nil, "new", "fork", "zz")
	f.before = e.snap()
	return f
}

func ptr[T any](v T) *T { return &v }

// writer returns the writer of kind k for a write to thread; an unknown or
// invalid thread uses base's leases.
func (f *fixture) writer(k writerKind, thread, base string) ckptstore.Writer {
	live, ok := f.live[thread]
	if !ok {
		thread, live = base, f.live[base]
	}
	other := "o"
	if thread == "o" {
		other = "u"
	}
	w := live
	switch k {
	case wForged:
		w = forged(live)
	case wFenceUp:
		w.Fence++
	case wFenceDown:
		w.Fence--
	case wStale:
		w = f.stale[thread]
	case wOther:
		w = f.live[other]
	case wThreadSwap:
		w.ThreadID = other
	case wBadThread:
		w.ThreadID = ""
	}
	return w
}

// variant is an input that fails one check, touching only fields.
type variant[I any] struct {
	name   string
	fields []string
	apply  func(in *I)
}

// check is one step of a method's check order.
type check[I any] struct {
	name     string
	err      error
	variants []variant[I]
	// holds reports whether in still fails this check after another
	// variant was applied; nil means always.
	holds func(in *I) bool
}

// orderTest runs a method's check order.
type orderTest[I any] struct {
	checks []check[I]
	base   func(f *fixture) I
	run    func(f *fixture, in I) error
	// impossible names the pairs of checks (1-based) that no input can
	// fail together, and why.
	impossible map[[2]int]string
	// transcripts says the method can write transcripts, so that the
	// snapshot after each attempt must cover them.
	transcripts bool
	// read says the method is a read: an attempt checks only its error,
	// not the whole store after it.
	read bool
}

// pureChecks names the checks that read only the arguments: the steps
// docs/contract.md marks pure, which the portable store runs before any
// driver. An input that fails one fails there, whatever the driver.
var pureChecks = map[string]bool{
	"ids": true, "entries": true, "keep": true, "createdAt": true, "same thread": true,
	"messages": true, "content": true, "limit": true, "cursor": true,
}

// runOrder runs every check of ot alone, then every pair of checks
// together, each failing input in its own subtest: those the portable
// store decides (a pure check alone, or a pure check as the earlier of a
// pair) when s.pure is set, and the others when it is not.
func runOrder[I any](t *testing.T, s *suite, ot orderTest[I]) {
	t.Helper()
	for i, ci := range ot.checks {
		if pureChecks[ci.name] != s.pure {
			continue
		}
		t.Run(fmt.Sprintf("%d-%s", i+1, ci.name), func(t *testing.T) { ot.runCheck(t, s, ci) })
	}
	for i := range ot.checks {
		for j := i + 1; j < len(ot.checks); j++ {
			ci, cj := ot.checks[i], ot.checks[j]
			if pureChecks[ci.name] != s.pure {
				continue
			}
			t.Run(fmt.Sprintf("%d+%d-%s-before-%s", i+1, j+1, ci.name, cj.name), func(t *testing.T) {
				if why, ok := ot.impossible[[2]int{i + 1, j + 1}]; ok {
					t.Skip("no input fails both checks: " + why)
				}
				ot.runPair(t, s, ci, cj)
			})
		}
	}
}

// runCheck runs each variant of check c alone: each must fail with c's
// error.
func (ot orderTest[I]) runCheck(t *testing.T, s *suite, c check[I]) {
	f := s.fixture(t)
	for _, v := range c.variants {
		t.Run(v.name, func(t *testing.T) { ot.attempt(t, f, c.err, ot.build(f, v)) })
	}
}

// runPair runs every input that fails both ci and cj (ci the earlier
// check): variants that touch other fields, both applied, each still
// failing its check. Each must fail with ci's error, and there must be
// one.
func (ot orderTest[I]) runPair(t *testing.T, s *suite, ci, cj check[I]) {
	f := s.fixture(t)
	n := 0
	for _, vi := range ci.variants {
		for _, vj := range cj.variants {
			if overlap(vi.fields, vj.fields) {
				continue
			}
			in := ot.build(f, vi, vj)
			if (ci.holds != nil && !ci.holds(&in)) || (cj.holds != nil && !cj.holds(&in)) {
				continue
			}
			n++
			t.Run(vi.name+"+"+vj.name, func(t *testing.T) { ot.attempt(t, f, ci.err, in) })
		}
	}
	if n == 0 {
		t.Fatalf("no input fails both %q and %q: the suite's variants are wrong", ci.name, cj.name)
	}
}

// build applies the variants to the base input.
func (ot orderTest[I]) build(f *fixture, vs ...variant[I]) I {
	in := ot.base(f)
	for _, v := range vs {
		v.apply(&in)
	}
	return in
}

// attempt runs one failing call. Every write on a fixture must fail, so one
// snapshot taken at setup serves them all; after a write that did change
// the store, the next ones compare with the changed state, so one bug is
// reported once.
func (ot orderTest[I]) attempt(t *testing.T, f *fixture, want error, in I) {
	t.Helper()
	fe := f.env.with(t)
	fe.noTranscripts = !ot.transcripts
	ff := &fixture{env: fe, live: f.live, stale: f.stale}
	wantErr(t, "the call", ot.run(ff, in), want)
	if ot.read {
		return
	}
	after := fe.snap()
	if !sameSnapshot(t, f.before, after, "the write") {
		f.before = after
	}
}

func overlap(a, b []string) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}

// ---- Append ----

type appendIn struct {
	c        *ckptstore.Checkpoint
	expected string
	w        writerKind
}

func appendOrder() orderTest[appendIn] {
	idv := fieldVariant[appendIn]
	setw := func(in *appendIn, k writerKind) { in.w = k }
	return orderTest[appendIn]{
		base: func(*fixture) appendIn {
			c := testkit.Checkpoint("t", "new", "h", 1000)
			c.Files = []ckptstore.Entry{testkit.File("f", 1, 1)}
			return appendIn{c: c, expected: "h"}
		},
		run: func(f *fixture, in appendIn) error {
			return f.s.Append(f.ctx, in.c, in.expected, f.writer(in.w, in.c.ThreadID, "t"))
		},
		checks: []check[appendIn]{
			{name: "ids", err: ckptstore.ErrInvalidID, variants: []variant[appendIn]{
				idv("checkpoint id empty", "id", func(in *appendIn) { in.c.ID = "" }),
				idv("checkpoint id invalid", "id", func(in *appendIn) { in.c.ID = "\xff" }),
				idv("thread id empty", "thread", func(in *appendIn) { in.c.ThreadID = "" }),
				idv("thread id invalid", "thread", func(in *appendIn) { in.c.ThreadID = "t\xc3" }),
				writerVariant("writer thread id empty", wBadThread, setw),
				idv("expected head invalid", "expected", func(in *appendIn) { in.expected = "\xed\xa0\x80" }),
				idv("parent invalid", "parent", func(in *appendIn) { in.c.ParentCheckpointID = "\xc0\x80" }),
			}},
			{name: "entries", err: ckptstore.ErrInvalidEntry, variants: []variant[appendIn]{
				idv("createdAt NaN", "createdAt", func(in *appendIn) { in.c.CreatedAt = nan }),
				idv("createdAt -Inf", "createdAt", func(in *appendIn) { in.c.CreatedAt = negInf }),
				idv("absolute path", "files", func(in *appendIn) { in.c.Files = []ckptstore.Entry{testkit.File("/etc/passwd", 1, 1)} }),
				idv("file beneath file", "files", func(in *appendIn) { in.c.Files = []ckptstore.Entry{testkit.File("a", 1, 1), testkit.File("a/b", 1, 1)} }),
				idv("bad artifact key", "artifacts", func(in *appendIn) {
					a := testkit.Artifact("a", 1)
					a.BlobKey = testkit.FileKey(1)
					in.c.Artifacts = []ckptstore.Artifact{a}
				}),
				idv("bad reason", "reason", func(in *appendIn) { in.c.Reason = "nope" }),
				idv("conversation object", "conversation", func(in *appendIn) { in.c.Conversation = []byte(`{}`) }),
			}},
			writerCheck(setw),
			{name: "duplicate id", err: ckptstore.ErrDuplicateID, variants: []variant[appendIn]{
				idv("id of another thread", "id", func(in *appendIn) { in.c.ID = "d" }),
				idv("id of an older checkpoint", "id", func(in *appendIn) { in.c.ID = "g" }),
				idv("id of the head", "id", func(in *appendIn) { in.c.ID = "h" }),
			}},
			{name: "stale head", err: ckptstore.ErrConflict,
				holds: func(in *appendIn) bool { return in.expected != "h" },
				variants: []variant[appendIn]{
					idv("expected an older checkpoint", "expected", func(in *appendIn) { in.expected = "g" }),
					idv("expected no head", "expected", func(in *appendIn) { in.expected = "" }),
					idv("expected an unknown id", "expected", func(in *appendIn) { in.expected = "zz" }),
					idv("expected a deleted id", "expected", func(in *appendIn) { in.expected = "gone" }),
				}},
			{name: "parent mismatch", err: ckptstore.ErrParentMismatch,
				holds: func(in *appendIn) bool { return in.c.ParentCheckpointID != in.expected },
				variants: []variant[appendIn]{
					idv("parent an older checkpoint", "parent", func(in *appendIn) { in.c.ParentCheckpointID = "g" }),
					idv("parent none", "parent", func(in *appendIn) { in.c.ParentCheckpointID = "" }),
					idv("parent unknown", "parent", func(in *appendIn) { in.c.ParentCheckpointID = "zz" }),
				}},
		},
	}
}

func (s *suite) testAppendOrder(t *testing.T) { runOrder(t, s, appendOrder()) }

// ---- DeleteHead ----

type deleteIn struct {
	thread, id string
	w          writerKind
}

func deleteHeadOrder() orderTest[deleteIn] {
	v := fieldVariant[deleteIn]
	return orderTest[deleteIn]{
		base: func(*fixture) deleteIn { return deleteIn{thread: "t", id: "h"} },
		run: func(f *fixture, in deleteIn) error {
			return f.s.DeleteHead(f.ctx, in.thread, in.id, f.writer(in.w, in.thread, "t"))
		},
		checks: []check[deleteIn]{
			{name: "ids", err: ckptstore.ErrInvalidID, variants: []variant[deleteIn]{
				v("thread id empty", "thread", func(in *deleteIn) { in.thread = "" }),
				v("thread id invalid", "thread", func(in *deleteIn) { in.thread = "\xff" }),
				v("checkpoint id empty", "id", func(in *deleteIn) { in.id = "" }),
				v("checkpoint id invalid", "id", func(in *deleteIn) { in.id = "h\xff" }),
				v("writer thread id empty", "writer", func(in *deleteIn) { in.w = wBadThread }),
			}},
			writerCheck(func(in *deleteIn, k writerKind) { in.w = k }),
			{name: "not head", err: ckptstore.ErrNotHead, variants: []variant[deleteIn]{
				v("an older checkpoint", "id", func(in *deleteIn) { in.id = "g" }),
				v("an unknown id", "id", func(in *deleteIn) { in.id = "zz" }),
				v("a deleted id", "id", func(in *deleteIn) { in.id = "gone" }),
				v("another thread's head", "id", func(in *deleteIn) { in.id = "d" }),
				v("the head of an empty thread", "thread", func(in *deleteIn) { in.thread = "e" }),
			}},
		},
	}
}

func (s *suite) testDeleteHeadOrder(t *testing.T) { runOrder(t, s, deleteHeadOrder()) }

// ---- DeleteCheckpoints ----

type pruneIn struct {
	thread string
	keep   int
	w      writerKind
}

func pruneOrder() orderTest[pruneIn] {
	v := fieldVariant[pruneIn]
	return orderTest[pruneIn]{
		base: func(*fixture) pruneIn { return pruneIn{thread: "t", keep: 1} },
		run: func(f *fixture, in pruneIn) error {
			return f.pruneErr(in.thread, in.keep, f.writer(in.w, in.thread, "t"))
		},
		checks: []check[pruneIn]{
			{name: "ids", err: ckptstore.ErrInvalidID, variants: []variant[pruneIn]{
				v("thread id empty", "thread", func(in *pruneIn) { in.thread = "" }),
				v("thread id invalid", "thread", func(in *pruneIn) { in.thread = "\xff" }),
				v("writer thread id empty", "writer", func(in *pruneIn) { in.w = wBadThread }),
			}},
			{name: "keep", err: ckptstore.ErrInvalidEntry, variants: []variant[pruneIn]{
				v("keep 0", "keep", func(in *pruneIn) { in.keep = 0 }),
				v("keep -1", "keep", func(in *pruneIn) { in.keep = -1 }),
				v("keep MinInt", "keep", func(in *pruneIn) { in.keep = math.MinInt }),
			}},
			writerCheck(func(in *pruneIn, k writerKind) { in.w = k }),
		},
	}
}

func (s *suite) testDeleteCheckpointsOrder(t *testing.T) { runOrder(t, s, pruneOrder()) }

// ---- ForkFromCheckpoint ----

// forkIn is ForkFromCheckpoint's input. The writer kind travels in
// Writer.Fence until forkRun turns it into the destination's writer, so
// that a variant changing the destination and one changing the writer
// combine.
type forkIn = ckptstore.ForkInput

func forkOrder() orderTest[forkIn] {
	return orderTest[forkIn]{
		// Snapshots leave transcripts out, for speed: ForkTranscript
		// proves that a refused fork writes none.
		impossible: map[[2]int]string{{4, 5}: "a checkpoint that does not exist is in no thread"},
		base: func(*fixture) forkIn {
			return forkIn{SourceThreadID: "t", SourceCheckpointID: "g", DestinationThreadID: "e",
				DestinationCheckpointID: "fork", CreatedAt: 5, Writer: ckptstore.Writer{Fence: int64(wLive)}}
		},
		run:    forkRun,
		checks: forkChecks(),
	}
}

// forkRun forks with the writer whose kind x.Writer.Fence names.
func forkRun(f *fixture, x forkIn) error {
	x.Writer = f.writer(writerKind(x.Writer.Fence), x.DestinationThreadID, "e")
	return f.forkErr(x)
}

// forkChecks is ForkFromCheckpoint's check order.
func forkChecks() []check[forkIn] {
	type in = forkIn
	v := fieldVariant[in]
	setw := func(x *in, k writerKind) { x.Writer.Fence = int64(k) }
	return []check[in]{
		{name: "ids", err: ckptstore.ErrInvalidID, variants: []variant[in]{
			v("source thread empty", "st", func(x *in) { x.SourceThreadID = "" }),
			v("source thread invalid", "st", func(x *in) { x.SourceThreadID = "\xff" }),
			v("source checkpoint empty", "sc", func(x *in) { x.SourceCheckpointID = "" }),
			v("source checkpoint invalid", "sc", func(x *in) { x.SourceCheckpointID = "g\xc3" }),
			v("destination thread empty", "dt", func(x *in) { x.DestinationThreadID = "" }),
			v("destination thread invalid", "dt", func(x *in) { x.DestinationThreadID = "\xed\xa0\x80" }),
			v("destination checkpoint empty", "dc", func(x *in) { x.DestinationCheckpointID = "" }),
			v("destination checkpoint invalid", "dc", func(x *in) { x.DestinationCheckpointID = "\xc0\x80" }),
			writerVariant("writer thread empty", wBadThread, setw),
		}},
		{name: "createdAt", err: ckptstore.ErrInvalidEntry, variants: []variant[in]{
			v("NaN", "at", func(x *in) { x.CreatedAt = nan }),
			v("+Inf", "at", func(x *in) { x.CreatedAt = posInf }),
			v("-Inf", "at", func(x *in) { x.CreatedAt = negInf }),
		}},
		{name: "same thread", err: ckptstore.ErrForkSourceThreadMismatch,
			holds: func(x *in) bool { return x.SourceThreadID == x.DestinationThreadID },
			variants: []variant[in]{
				v("destination is the source thread", "dt", func(x *in) { x.DestinationThreadID = "t" }),
				v("source is the destination thread", "st", func(x *in) { x.SourceThreadID = "e" }),
			}},
		{name: "source missing", err: ckptstore.ErrForkSourceNotFound, variants: []variant[in]{
			v("unknown id", "sc", func(x *in) { x.SourceCheckpointID = "zz" }),
			v("deleted id", "sc", func(x *in) { x.SourceCheckpointID = "gone" }),
		}},
		{name: "source in another thread", err: ckptstore.ErrForkSourceThreadMismatch,
			variants: []variant[in]{
				v("checkpoint of a third thread", "sc", func(x *in) { x.SourceCheckpointID = "y" }),
				v("checkpoint of a non-empty thread", "sc", func(x *in) { x.SourceCheckpointID = "x" }),
				v("head of another thread", "sc", func(x *in) { x.SourceCheckpointID = "d" }),
			}},
		writerCheck(setw),
		{name: "destination not empty", err: ckptstore.ErrForkDestinationNotEmpty, variants: forkDestinationVariants()},
	}
}

// forkDestinationVariants are the destinations a fork may not write to.
func forkDestinationVariants() []variant[forkIn] {
	type in = forkIn
	v := fieldVariant[in]
	return []variant[in]{
		v("destination has checkpoints", "dt", func(x *in) { x.DestinationThreadID = "n" }),
		v("destination is another source", "dt", func(x *in) { x.DestinationThreadID = "u" }),
		v("destination has only a head", "dt", func(x *in) { x.DestinationThreadID = "p" }),
		v("destination has only a transcript", "dt", func(x *in) { x.DestinationThreadID = "s" }),
		v("destination id used elsewhere", "dc", func(x *in) { x.DestinationCheckpointID = "x" }),
		v("destination id is the source", "dc", func(x *in) { x.DestinationCheckpointID = "g" }),
		v("destination id is the source head", "dc", func(x *in) { x.DestinationCheckpointID = "h" }),
	}
}

func (s *suite) testForkOrder(t *testing.T) { runOrder(t, s, forkOrder()) }

func (s *suite) testAcquireWriterOrder(t *testing.T) {
	// The ids check comes first: every thread is leased, and an invalid
	// id still fails with ErrInvalidID.
	f := s.fixture(t)
	for _, bad := range invalidIDs {
		f.fails("AcquireWriter("+bad.name+")", ckptstore.ErrInvalidID, func() error { return errOf(f.s.AcquireWriter(f.ctx, bad.id)) })
	}
	for th := range f.live {
		f.fails("AcquireWriter("+th+") while leased", ckptstore.ErrWriterConflict, func() error { return errOf(f.s.AcquireWriter(f.ctx, th)) })
	}
}
