package fdbstore

// Interleaving tests: every write, with another operation committed
// between its reads and its commit.
//
// On a cluster any client may commit while a transaction runs; under the
// lease the suite's own writers never overlap, so without this a write
// that forgot a read conflict (a snapshot read of the lease, the head or
// the id index) passes every other test and, on a cluster, commits over a
// takeover, a second append on the same head or the same id in another
// thread. memkv's BeforeCommit hook runs the concurrent operation when the
// write asks to commit. The operation commits first; the write's commit
// must then fail with not_committed (its reads meet the operation's
// writes), and its retry must see the operation and end as the contract
// says for that order: with the contract error and nothing changed beyond
// the operation's own effect, or with the success the new state allows.
//
// Every case asserts that the hook ran and that the write's commit
// conflicted exactly once, then the outcome and the store's keyspace.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/fdbstore/kv"
	"github.com/ckptstore/ckptstore/fdbstore/kv/memkv"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

const ilLease = 10 * time.Second

// ilEnv is one interleaving case's store. Thread "a" has a lease and the
// chain a-c0 ← a-c1 ← a-c2 (the head); "b", "d" and "e" have leases and
// no checkpoints.
type ilEnv struct {
	t              *testing.T
	ctx            context.Context
	db             *memkv.DB
	s              *Driver
	clock          *testkit.Clock
	wa, wb, wd, we ckptstore.Writer
	chain          []string
}

func newILEnv(t *testing.T) *ilEnv {
	t.Helper()
	// The engine's clock stands still: a hooked transaction on a loaded
	// machine must not outlive memkv.Lifetime and fail with
	// transaction_too_old instead of the conflict each case asserts. The
	// lease clock is the test's own.
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	db, err := memkv.NewWithOptions(memkv.Options{Now: func() time.Time { return start }})
	if err != nil {
		t.Fatal(err)
	}
	e := &ilEnv{t: t, ctx: context.Background(), db: db, clock: testkit.NewClock(start)}
	s, err := NewDriver(e.db, Options{Options: ckptstore.Options{Now: e.clock.Now, LeaseDuration: ilLease}})
	e.must(err)
	e.s = s
	e.wa, e.wb, e.wd, e.we = e.acquire("a"), e.acquire("b"), e.acquire("d"), e.acquire("e")
	head := ""
	for i := range 3 {
		id := fmt.Sprintf("a-c%d", i)
		e.must(s.p().Append(e.ctx, testkit.Checkpoint("a", id, head, float64(i), 0, 1000+i), head, e.wa))
		e.chain = append(e.chain, id)
		head = id
	}
	return e
}

func (e *ilEnv) must(err error) {
	e.t.Helper()
	if err != nil {
		e.t.Fatal(err)
	}
}

func (e *ilEnv) acquire(thread string) ckptstore.Writer {
	e.t.Helper()
	l, err := e.s.p().AcquireWriter(e.ctx, thread)
	e.must(err)
	return l.Writer
}

// dump is every key and value of the database, in key order.
func (e *ilEnv) dump() []kv.KeyValue {
	e.t.Helper()
	var out []kv.KeyValue
	e.must(e.db.ReadTransact(e.ctx, func(tr kv.ReadTransaction) error {
		var err error
		out, err = tr.GetRange(kv.KeyRange{Begin: []byte{}, End: []byte{0xff}}, kv.RangeOptions{}).Get()
		return err
	}))
	return out
}

// takeover expires thread's lease and acquires it again as a new writer.
func (e *ilEnv) takeover(thread string) func() {
	return func() {
		e.clock.Advance(ilLease + time.Second)
		e.acquire(thread)
	}
}

// interleave runs write with op committed before write's first commit
// with writes. It checks that the hook ran and that write's transaction
// conflicted exactly once, and returns write's error and the keyspace as
// op left it.
func (e *ilEnv) interleave(op func(), write func() error) ([]kv.KeyValue, error) {
	e.t.Helper()
	var afterOp []kv.KeyValue
	ran := false
	remove := e.db.BeforeCommit(func(*memkv.Tx) {
		if ran {
			return
		}
		ran = true
		op()
		afterOp = e.dump()
	})
	before := e.db.Stats()
	err := write()
	remove()
	if !ran {
		e.t.Fatalf("the write committed nothing, so nothing was interleaved (error %v)", err)
	}
	if c := e.db.Stats().Conflicts - before.Conflicts; c != 1 {
		e.t.Errorf("the write's commit conflicted %d times with the interleaved operation, want 1 (its reads must take read conflicts); error %v", c, err)
	}
	return afterOp, err
}

// interleaveAny runs write with op interleaved, without requiring a
// conflict (for operations that commute), and requires success.
func (e *ilEnv) interleaveAny(op func(), write func() error) {
	e.t.Helper()
	ran := false
	remove := e.db.BeforeCommit(func(*memkv.Tx) {
		if !ran {
			ran = true
			op()
		}
	})
	err := write()
	remove()
	if !ran {
		e.t.Fatalf("nothing was interleaved (error %v)", err)
	}
	e.must(err)
}

// repeated checks that write, with the same call (the same op token)
// committed first, as a caller that lost the reply and sent it again
// meanwhile: the write must recognise the committed call, succeed and
// change nothing more.
func (e *ilEnv) repeated(call func(ctx context.Context) error) {
	e.t.Helper()
	ctx := ckptstore.WithOpToken(e.ctx, "interleave-token-1")
	afterOp, err := e.interleave(func() { e.must(call(ctx)) }, func() error { return call(ctx) })
	e.must(err)
	e.sameAs(afterOp)
}

// refused checks that write, with op interleaved, fails with want and
// leaves the keyspace exactly as op left it.
func (e *ilEnv) refused(op func(), write func() error, want error) {
	e.t.Helper()
	afterOp, err := e.interleave(op, write)
	if !errors.Is(err, want) {
		e.t.Fatalf("error %v, want %v", err, want)
	}
	e.sameAs(afterOp)
}

// sameAs fails unless the keyspace equals want.
func (e *ilEnv) sameAs(want []kv.KeyValue) {
	e.t.Helper()
	got := e.dump()
	if slices.EqualFunc(got, want, func(a, b kv.KeyValue) bool {
		return bytes.Equal(a.Key, b.Key) && bytes.Equal(a.Value, b.Value)
	}) {
		return
	}
	for i := range max(len(got), len(want)) {
		var g, w kv.KeyValue
		if i < len(got) {
			g = got[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if !bytes.Equal(g.Key, w.Key) || !bytes.Equal(g.Value, w.Value) {
			e.t.Fatalf("the write changed the store beyond the interleaved operation: %d keys, want %d; first difference at %d: %q = %x, want %q = %x",
				len(got), len(want), i, g.Key, g.Value, w.Key, w.Value)
		}
	}
}

// Concurrent operations on e's threads.
func (e *ilEnv) release(w ckptstore.Writer) func() {
	return func() { e.must(e.s.p().Release(e.ctx, w)) }
}
func (e *ilEnv) renew(w ckptstore.Writer) func() {
	return func() { _, err := e.s.p().Renew(e.ctx, w); e.must(err) }
}
func (e *ilEnv) appendOp(cp *ckptstore.Checkpoint, head string, w ckptstore.Writer) func() {
	return func() { e.must(e.s.p().Append(e.ctx, cp, head, w)) }
}
func (e *ilEnv) deleteHead(thread, id string, w ckptstore.Writer) func() {
	return func() { e.must(e.s.p().DeleteHead(e.ctx, thread, id, w)) }
}
func (e *ilEnv) prune(thread string, keep int, w ckptstore.Writer) func() {
	return func() { _, err := e.s.p().DeleteCheckpoints(e.ctx, thread, keep, w); e.must(err) }
}
func (e *ilEnv) fork(srcThread, srcID, dst, dstID string, w ckptstore.Writer) func() {
	return func() {
		_, err := e.s.p().ForkFromCheckpoint(e.ctx, ckptstore.ForkInput{
			SourceThreadID: srcThread, SourceCheckpointID: srcID,
			DestinationThreadID: dst, DestinationCheckpointID: dstID, Writer: w,
		})
		e.must(err)
	}
}

// importOp imports cps into thread without setting its head.
func (e *ilEnv) importOp(thread string, w ckptstore.Writer, cps ...*ckptstore.Checkpoint) func() {
	return func() {
		_, err := e.s.p().Import(e.ctx, ckptstore.ImportBatch{ThreadID: thread, Checkpoints: cps, Writer: w})
		e.must(err)
	}
}

// saveOp saves a one-message transcript of thread.
func (e *ilEnv) saveOp(thread string) func() {
	return func() {
		e.must(e.s.p().SaveThread(e.ctx, thread, []byte(`[{"role":"user","content":"saved"}]`)))
	}
}

// listed reports whether Threads lists thread.
func (e *ilEnv) listed(thread string) bool {
	e.t.Helper()
	for after := ""; ; {
		ids, next, err := e.s.p().Threads(e.ctx, after, driver.MaxPageLimit)
		e.must(err)
		if slices.Contains(ids, thread) {
			return true
		}
		if next == "" {
			return false
		}
		after = next
	}
}

func (e *ilEnv) head(thread string) string {
	e.t.Helper()
	h, err := e.s.p().GetHead(e.ctx, thread)
	e.must(err)
	return h
}

func (e *ilEnv) listIDs(thread string) []string {
	e.t.Helper()
	cps, err := e.s.p().List(e.ctx, thread)
	e.must(err)
	var ids []string
	for _, cp := range cps {
		ids = append(ids, cp.ID)
	}
	return ids
}

func (e *ilEnv) lease(thread string) leaseValue {
	e.t.Helper()
	var l leaseValue
	e.must(e.db.ReadTransact(e.ctx, func(tr kv.ReadTransaction) error {
		raw, err := tr.Get(e.s.k.lease(thread)).Get()
		if err != nil || raw == nil {
			return err
		}
		l, err = decodeLease(raw)
		return err
	}))
	return l
}

type ilCase struct {
	name string
	run  func(e *ilEnv)
}

func runILCases(t *testing.T, cases []ilCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(newILEnv(t)) })
	}
}

func TestInterleaveAppend(t *testing.T) {
	next := func(e *ilEnv) func() error {
		return func() error {
			return e.s.p().Append(e.ctx, testkit.Checkpoint("a", "a-c3", "a-c2", 3, 0, 7), "a-c2", e.wa)
		}
	}
	runILCases(t, []ilCase{
		{"LeaseReleased", func(e *ilEnv) { e.refused(e.release(e.wa), next(e), ckptstore.ErrWriterLost) }},
		{"LeaseTakenOver", func(e *ilEnv) { e.refused(e.takeover("a"), next(e), ckptstore.ErrWriterLost) }},
		{"AppendOnSameHead", func(e *ilEnv) {
			e.refused(e.appendOp(testkit.Checkpoint("a", "a-other", "a-c2", 3, 0), "a-c2", e.wa), next(e), ckptstore.ErrConflict)
		}},
		{"SameIDInAnotherThread", func(e *ilEnv) {
			e.refused(e.appendOp(testkit.Checkpoint("b", "a-c3", "", 1, 5), "", e.wb), next(e), ckptstore.ErrDuplicateID)
		}},
		{"HeadDeleted", func(e *ilEnv) { e.refused(e.deleteHead("a", "a-c2", e.wa), next(e), ckptstore.ErrConflict) }},
		{"ForkIntoSameThread", func(e *ilEnv) {
			// e is empty: an append of its first checkpoint races a fork into it.
			first := func() error { return e.s.p().Append(e.ctx, testkit.Checkpoint("e", "e-c0", "", 0, 1), "", e.we) }
			e.refused(e.fork("a", "a-c2", "e", "e-root", e.we), first, ckptstore.ErrConflict)
		}},
		{"SameOpTokenRepeated", func(e *ilEnv) {
			e.repeated(func(ctx context.Context) error {
				return e.s.p().Append(ctx, testkit.Checkpoint("a", "a-c3", "a-c2", 3, 0, 7), "a-c2", e.wa)
			})
		}},
		{"LeaseRenewed", func(e *ilEnv) {
			// The lease key changed, so the append must retry; the lease is
			// still the writer's, so the retry succeeds.
			_, err := e.interleave(e.renew(e.wa), next(e))
			e.must(err)
			if h := e.head("a"); h != "a-c3" {
				e.t.Fatalf("head %q, want a-c3", h)
			}
		}},
	})
}

func TestInterleaveDeleteHead(t *testing.T) {
	del := func(e *ilEnv) func() error {
		return func() error { return e.s.p().DeleteHead(e.ctx, "a", "a-c2", e.wa) }
	}
	runILCases(t, []ilCase{
		{"LeaseReleased", func(e *ilEnv) { e.refused(e.release(e.wa), del(e), ckptstore.ErrWriterLost) }},
		{"LeaseTakenOver", func(e *ilEnv) { e.refused(e.takeover("a"), del(e), ckptstore.ErrWriterLost) }},
		{"AppendOnSameHead", func(e *ilEnv) {
			e.refused(e.appendOp(testkit.Checkpoint("a", "a-c3", "a-c2", 3, 0), "a-c2", e.wa), del(e), ckptstore.ErrNotHead)
		}},
		{"HeadDeleted", func(e *ilEnv) { e.refused(e.deleteHead("a", "a-c2", e.wa), del(e), ckptstore.ErrNotHead) }},
		{"SameOpTokenRepeated", func(e *ilEnv) {
			e.repeated(func(ctx context.Context) error { return e.s.p().DeleteHead(ctx, "a", "a-c2", e.wa) })
		}},
		{"LastCheckpointWhileTranscriptSaved", func(e *ilEnv) {
			// Deleting a thread's only checkpoint unlists the thread unless
			// it keeps a transcript: a transcript saved meanwhile keeps it
			// listed.
			e.appendOp(testkit.Checkpoint("e", "e-c0", "", 0, 1), "", e.we)()
			_, err := e.interleave(e.saveOp("e"), func() error { return e.s.p().DeleteHead(e.ctx, "e", "e-c0", e.we) })
			e.must(err)
			if !e.listed("e") {
				e.t.Fatal("thread e has a transcript but Threads no longer lists it")
			}
		}},
		{"LastCheckpointWhileImported", func(e *ilEnv) {
			// Likewise a checkpoint imported off the chain meanwhile.
			e.appendOp(testkit.Checkpoint("e", "e-c0", "", 0, 1), "", e.we)()
			_, err := e.interleave(e.importOp("e", e.we, testkit.Checkpoint("e", "e-x", "", 5, 2)),
				func() error { return e.s.p().DeleteHead(e.ctx, "e", "e-c0", e.we) })
			e.must(err)
			if !e.listed("e") || !slices.Equal(e.listIDs("e"), []string{"e-x"}) {
				e.t.Fatalf("thread e holds %q, listed %v; want e-x and listed", e.listIDs("e"), e.listed("e"))
			}
		}},
		{"ChainPrunedBelowHead", func(e *ilEnv) {
			// A prune keeps the head, so it commutes with deleting it: both
			// succeed, whatever the order, and the head moves to the pruned
			// parent (as after any prune).
			e.interleaveAny(e.prune("a", 1, e.wa), del(e))
			if h, ids := e.head("a"), e.listIDs("a"); h != "a-c1" || len(ids) != 0 {
				e.t.Fatalf("head %q, checkpoints %q; want a-c1 (pruned) and none", h, ids)
			}
			testkit.CheckRefs(e.t, e.s.p(), "a", "b")
		}},
		{"IDReusedInAnotherThread", func(e *ilEnv) {
			// The head is deleted and its id stored in thread b: the head
			// key of a moved, and the id now names b's checkpoint.
			op := func() {
				e.deleteHead("a", "a-c2", e.wa)()
				e.appendOp(testkit.Checkpoint("b", "a-c2", "", 1, 5), "", e.wb)()
			}
			e.refused(op, del(e), ckptstore.ErrNotHead)
		}},
	})
}

func TestInterleaveDeleteCheckpoints(t *testing.T) {
	prune := func(e *ilEnv, got *[]string) func() error {
		return func() error {
			ids, err := e.s.p().DeleteCheckpoints(e.ctx, "a", 1, e.wa)
			*got = ids
			return err
		}
	}
	runILCases(t, []ilCase{
		{"LeaseReleased", func(e *ilEnv) { e.refused(e.release(e.wa), prune(e, new([]string)), ckptstore.ErrWriterLost) }},
		{"LeaseTakenOver", func(e *ilEnv) { e.refused(e.takeover("a"), prune(e, new([]string)), ckptstore.ErrWriterLost) }},
		{"AppendOnSameHead", func(e *ilEnv) {
			// The chain grew: keeping one now deletes a-c2 as well.
			var ids []string
			_, err := e.interleave(e.appendOp(testkit.Checkpoint("a", "a-c3", "a-c2", 3, 0), "a-c2", e.wa), prune(e, &ids))
			e.must(err)
			require.ElementsMatch(e.t, []string{"a-c0", "a-c1", "a-c2"}, ids, "deleted")
			require.ElementsMatch(e.t, []string{"a-c3"}, e.listIDs("a"), "left")
			testkit.CheckRefs(e.t, e.s.p(), "a", "b")
		}},
		{"HeadDeleted", func(e *ilEnv) {
			// The chain shrank: keeping one now deletes only a-c0.
			var ids []string
			_, err := e.interleave(e.deleteHead("a", "a-c2", e.wa), prune(e, &ids))
			e.must(err)
			require.ElementsMatch(e.t, []string{"a-c0"}, ids, "deleted")
			require.ElementsMatch(e.t, []string{"a-c1"}, e.listIDs("a"), "left")
			testkit.CheckRefs(e.t, e.s.p(), "a", "b")
		}},
		{"PrunedAncestorImportedAgain", func(e *ilEnv) {
			// a-c0 is pruned, then imported again (its parent link still
			// names it): the chain is a-c2, a-c1, a-c0 once more, so keeping
			// one deletes both of the others.
			e.prune("a", 2, e.wa)()
			var ids []string
			_, err := e.interleave(e.importOp("a", e.wa, testkit.Checkpoint("a", "a-c0", "", 0, 0, 1000)), prune(e, &ids))
			e.must(err)
			require.ElementsMatch(e.t, []string{"a-c0", "a-c1"}, ids, "deleted")
			require.ElementsMatch(e.t, []string{"a-c2"}, e.listIDs("a"), "left")
			testkit.CheckRefs(e.t, e.s.p(), "a", "b")
		}},
		{"SameChainPruned", func(e *ilEnv) {
			var ids []string
			afterOp, err := e.interleave(e.prune("a", 1, e.wa), prune(e, &ids))
			e.must(err)
			if len(ids) != 0 {
				e.t.Fatalf("the second prune deleted %q; the first had deleted them", ids)
			}
			e.sameAs(afterOp)
		}},
	})
}

func TestInterleaveFork(t *testing.T) {
	forkFrom := func(e *ilEnv, src string) func() error {
		return func() error {
			_, err := e.s.p().ForkFromCheckpoint(e.ctx, ckptstore.ForkInput{
				SourceThreadID: "a", SourceCheckpointID: src,
				DestinationThreadID: "d", DestinationCheckpointID: "d-root", Writer: e.wd,
			})
			return err
		}
	}
	fork := func(e *ilEnv) func() error { return forkFrom(e, "a-c2") }
	runILCases(t, []ilCase{
		{"LeaseReleased", func(e *ilEnv) { e.refused(e.release(e.wd), fork(e), ckptstore.ErrWriterLost) }},
		{"LeaseTakenOver", func(e *ilEnv) { e.refused(e.takeover("d"), fork(e), ckptstore.ErrWriterLost) }},
		{"ForkIntoSameDestination", func(e *ilEnv) {
			e.refused(e.fork("a", "a-c1", "d", "d-other", e.wd), fork(e), ckptstore.ErrForkDestinationNotEmpty)
		}},
		{"AppendOnDestination", func(e *ilEnv) {
			e.refused(e.appendOp(testkit.Checkpoint("d", "d-c0", "", 0, 3), "", e.wd), fork(e), ckptstore.ErrForkDestinationNotEmpty)
		}},
		{"SameIDInAnotherThread", func(e *ilEnv) {
			e.refused(e.appendOp(testkit.Checkpoint("b", "d-root", "", 0, 3), "", e.wb), fork(e), ckptstore.ErrForkDestinationNotEmpty)
		}},
		{"SourceChainPruned", func(e *ilEnv) {
			e.refused(e.prune("a", 1, e.wa), forkFrom(e, "a-c1"), ckptstore.ErrForkSourceNotFound)
		}},
		{"SourceDeleted", func(e *ilEnv) { e.refused(e.deleteHead("a", "a-c2", e.wa), fork(e), ckptstore.ErrForkSourceNotFound) }},
		{"SameOpTokenRepeated", func(e *ilEnv) {
			e.repeated(func(ctx context.Context) error {
				_, err := e.s.p().ForkFromCheckpoint(ctx, ckptstore.ForkInput{
					SourceThreadID: "a", SourceCheckpointID: "a-c2",
					DestinationThreadID: "d", DestinationCheckpointID: "d-root", Writer: e.wd,
				})
				return err
			})
		}},
		{"TranscriptSaved", func(e *ilEnv) {
			e.refused(e.saveOp("d"), fork(e), ckptstore.ErrForkDestinationNotEmpty)
		}},
		{"CheckpointImportedWithoutHead", func(e *ilEnv) {
			e.refused(e.importOp("d", e.wd, testkit.Checkpoint("d", "d-x", "", 0, 3)), fork(e), ckptstore.ErrForkDestinationNotEmpty)
		}},
		{"HeadOnlySetByImport", func(e *ilEnv) {
			// Only the destination's head changes (no checkpoint, as after
			// importing a pruned thread): the fork's read of the head alone
			// must catch it.
			op := func() {
				_, err := e.s.p().Import(e.ctx, ckptstore.ImportBatch{ThreadID: "d", SetHead: true, Head: "pruned", Writer: e.wd})
				e.must(err)
			}
			e.refused(op, fork(e), ckptstore.ErrForkDestinationNotEmpty)
		}},
	})
}

func TestInterleaveAcquireWriter(t *testing.T) {
	acquire := func(e *ilEnv, thread string) func() error {
		return func() error { _, err := e.s.p().AcquireWriter(e.ctx, thread); return err }
	}
	runILCases(t, []ilCase{
		{"NewThreadTakenFirst", func(e *ilEnv) {
			e.refused(func() { e.acquire("new") }, acquire(e, "new"), ckptstore.ErrWriterConflict)
			if l := e.lease("new"); l.fence != 1 {
				e.t.Fatalf("fence %d, want 1", l.fence)
			}
		}},
		{"ReleasedLeaseTakenFirst", func(e *ilEnv) {
			e.release(e.wa)()
			e.refused(func() { e.acquire("a") }, acquire(e, "a"), ckptstore.ErrWriterConflict)
			if l := e.lease("a"); l.fence != e.wa.Fence+1 {
				e.t.Fatalf("fence %d, want %d", l.fence, e.wa.Fence+1)
			}
		}},
		{"SameOpTokenRepeated", func(e *ilEnv) {
			// Both calls must return the one lease that was stored.
			var got []ckptstore.Writer
			e.repeated(func(ctx context.Context) error {
				l, err := e.s.p().AcquireWriter(ctx, "new")
				if err == nil {
					got = append(got, l.Writer)
				}
				return err
			})
			l := e.lease("new")
			for _, w := range got {
				if w.OwnerToken != l.token || w.Fence != l.fence || l.fence != 1 {
					e.t.Fatalf("writers %+v; the stored lease is %q fence %d (want fence 1)", got, l.token, l.fence)
				}
			}
		}},
		{"ExpiredLeaseTakenFirst", func(e *ilEnv) {
			e.clock.Advance(ilLease + time.Second)
			e.refused(func() { e.acquire("a") }, acquire(e, "a"), ckptstore.ErrWriterConflict)
		}},
	})
}

func TestInterleaveRenew(t *testing.T) {
	renew := func(e *ilEnv) func() error {
		return func() error { _, err := e.s.p().Renew(e.ctx, e.wa); return err }
	}
	runILCases(t, []ilCase{
		{"LeaseReleased", func(e *ilEnv) { e.refused(e.release(e.wa), renew(e), ckptstore.ErrWriterLost) }},
		{"LeaseTakenOver", func(e *ilEnv) {
			// The renew read a live lease; the takeover happens after.
			e.clock.Advance(ilLease - time.Second)
			e.refused(e.takeover("a"), renew(e), ckptstore.ErrWriterLost)
		}},
	})
}

func TestInterleaveRelease(t *testing.T) {
	release := func(e *ilEnv) func() error { return func() error { return e.s.p().Release(e.ctx, e.wa) } }
	runILCases(t, []ilCase{
		{"LeaseTakenOver", func(e *ilEnv) {
			// The stale holder's release must leave the new lease alone.
			afterOp, err := e.interleave(e.takeover("a"), release(e))
			e.must(err)
			e.sameAs(afterOp)
			if l := e.lease("a"); l.token == "" || l.fence != e.wa.Fence+1 {
				e.t.Fatalf("lease %+v after a stale release; want the new holder's, fence %d", l, e.wa.Fence+1)
			}
		}},
		{"LeaseRenewed", func(e *ilEnv) {
			_, err := e.interleave(e.renew(e.wa), release(e))
			e.must(err)
			if l := e.lease("a"); l.token != "" || l.fence != e.wa.Fence {
				e.t.Fatalf("lease %+v; want released with fence %d", l, e.wa.Fence)
			}
		}},
		{"ReleasedTwice", func(e *ilEnv) {
			afterOp, err := e.interleave(e.release(e.wa), release(e))
			e.must(err)
			e.sameAs(afterOp)
		}},
	})
}

func TestInterleaveDeleteThread(t *testing.T) {
	del := func(e *ilEnv, n *int) func() error {
		return func() error {
			var err error
			*n, err = e.s.p().DeleteThread(e.ctx, "a", e.wa)
			return err
		}
	}
	runILCases(t, []ilCase{
		{"LeaseReleased", func(e *ilEnv) { e.refused(e.release(e.wa), del(e, new(int)), ckptstore.ErrWriterLost) }},
		{"LeaseTakenOver", func(e *ilEnv) { e.refused(e.takeover("a"), del(e, new(int)), ckptstore.ErrWriterLost) }},
		{"AppendOnSameHead", func(e *ilEnv) {
			// The appended checkpoint is deleted with the others, not orphaned.
			var n int
			_, err := e.interleave(e.appendOp(testkit.Checkpoint("a", "a-c3", "a-c2", 3, 0, 9), "a-c2", e.wa), del(e, &n))
			e.must(err)
			if n != 4 || len(e.listIDs("a")) != 0 || e.head("a") != "" {
				e.t.Fatalf("deleted %d, left %q, head %q; want 4, none, none", n, e.listIDs("a"), e.head("a"))
			}
			testkit.CheckRefs(e.t, e.s.p(), "a", "b")
		}},
		{"ChainPruned", func(e *ilEnv) {
			var n int
			_, err := e.interleave(e.prune("a", 1, e.wa), del(e, &n))
			e.must(err)
			if n != 1 || len(e.listIDs("a")) != 0 {
				e.t.Fatalf("deleted %d, left %q; want 1, none", n, e.listIDs("a"))
			}
			testkit.CheckRefs(e.t, e.s.p(), "a", "b")
		}},
		{"ForkIntoThread", func(e *ilEnv) {
			var n int
			fork := e.fork("a", "a-c2", "d", "d-root", e.wd)
			delD := func() error {
				var err error
				n, err = e.s.p().DeleteThread(e.ctx, "d", e.wd)
				return err
			}
			_, err := e.interleave(fork, delD)
			e.must(err)
			if n != 1 || len(e.listIDs("d")) != 0 || e.head("d") != "" {
				e.t.Fatalf("deleted %d from d, left %q; want the fork root deleted", n, e.listIDs("d"))
			}
		}},
	})
}

func TestInterleaveSaveThread(t *testing.T) {
	// Transcripts of different sizes (one value, several values), so a
	// write that kept chunks of the other would show.
	big := func(tag string, n int) json.RawMessage {
		msgs := make([]map[string]string, n)
		for i := range msgs {
			msgs[i] = map[string]string{"role": "user", "content": fmt.Sprintf("%s %d %0500d", tag, i, i)}
		}
		b, _ := json.Marshal(msgs) // maps of strings always marshal
		return b
	}
	runILCases(t, []ilCase{
		{"SaveRaces", func(e *ilEnv) {
			mine, theirs := big("mine", 3), big("theirs", 2*kv.MaxValueSize/500)
			// Whatever the save reads, the later commit must leave exactly
			// its own transcript: nothing of the other's.
			ran := false
			rm := e.db.BeforeCommit(func(*memkv.Tx) {
				if !ran {
					ran = true
					e.must(e.s.p().SaveThread(e.ctx, "a", theirs))
				}
			})
			e.must(e.s.p().SaveThread(e.ctx, "a", mine))
			rm()
			if !ran {
				e.t.Fatal("nothing was interleaved")
			}
			got, err := e.s.p().LoadThread(e.ctx, "a")
			e.must(err)
			if !bytes.Equal(got, mine) {
				e.t.Fatalf("transcript is %d bytes, want the later save's %d", len(got), len(mine))
			}
		}},
		{"DeleteThreadRaces", func(e *ilEnv) {
			e.must(e.s.p().SaveThread(e.ctx, "a", big("old", 2)))
			mine := big("mine", 1)
			ran := false
			rm := e.db.BeforeCommit(func(*memkv.Tx) {
				if !ran {
					ran = true
					_, err := e.s.p().DeleteThread(e.ctx, "a", e.wa)
					e.must(err)
				}
			})
			e.must(e.s.p().SaveThread(e.ctx, "a", mine))
			rm()
			got, err := e.s.p().LoadThread(e.ctx, "a")
			e.must(err)
			if !bytes.Equal(got, mine) {
				e.t.Fatalf("transcript %q after a save that committed after the delete, want %q", got, mine)
			}
		}},
	})
}

func TestInterleaveImport(t *testing.T) {
	imp := func(e *ilEnv, n *int) func() error {
		return func() error {
			var err error
			*n, err = e.s.p().Import(e.ctx, ckptstore.ImportBatch{
				ThreadID: "e",
				Checkpoints: []*ckptstore.Checkpoint{
					testkit.Checkpoint("e", "e-c0", "", 0, 0, 20), testkit.Checkpoint("e", "e-c1", "e-c0", 1, 0, 21),
				},
				SetHead: true, Head: "e-c1", Writer: e.we,
			})
			return err
		}
	}
	runILCases(t, []ilCase{
		{"LeaseReleased", func(e *ilEnv) { e.refused(e.release(e.we), imp(e, new(int)), ckptstore.ErrWriterLost) }},
		{"LeaseTakenOver", func(e *ilEnv) { e.refused(e.takeover("e"), imp(e, new(int)), ckptstore.ErrWriterLost) }},
		{"SameIDInAnotherThread", func(e *ilEnv) {
			e.refused(e.appendOp(testkit.Checkpoint("b", "e-c1", "", 0, 3), "", e.wb), imp(e, new(int)), ckptstore.ErrDuplicateID)
		}},
		{"AppendOnSameHead", func(e *ilEnv) {
			e.refused(e.appendOp(testkit.Checkpoint("e", "e-x", "", 0, 3), "", e.we), imp(e, new(int)), ckptstore.ErrConflict)
		}},
		{"SameBatchImported", func(e *ilEnv) {
			// The same batch committed first: the retry finds it stored
			// and writes nothing.
			var n int
			op := func() { var m int; e.must(imp(e, &m)()) }
			afterOp, err := e.interleave(op, imp(e, &n))
			e.must(err)
			if n != 0 {
				e.t.Fatalf("the repeated import wrote %d checkpoints, want 0", n)
			}
			e.sameAs(afterOp)
			testkit.CheckRefs(e.t, e.s.p(), "a", "e")
		}},
	})
}

// TestDeleteHeadConflictsWithADeleteThreadBatch: a DeleteThread batch that
// deletes a thread's head without being its last batch (the head is the
// thread's oldest checkpoint in List order, and more follow) touches
// neither the head key nor the lease. So the only read of DeleteHead that
// such a batch changes is the head checkpoint by id: read as a snapshot,
// DeleteHead would commit the removal of a
// checkpoint already removed, and its blob counts drop twice.
func TestDeleteHeadConflictsWithADeleteThreadBatch(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	db, err := memkv.NewWithOptions(memkv.Options{Now: func() time.Time { return start }})
	if err != nil {
		t.Fatal(err)
	}
	clock := testkit.NewClock(start)
	s, err := NewDriver(db, Options{Options: ckptstore.Options{Now: clock.Now, LeaseDuration: time.Minute}, PruneBatch: 1})
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.p().AcquireWriter(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	w := l.Writer
	// The root a-1 (createdAt 1), then the head a-0 (createdAt 0): the
	// head is first in List order, so DeleteThread's first batch of one
	// deletes it and leaves a-1. Both use blob 7, so a count dropped twice
	// shows.
	if err := s.p().Append(ctx, testkit.Checkpoint("a", "a-1", "", 1, 7), "", w); err != nil {
		t.Fatal(err)
	}
	if err := s.p().Append(ctx, testkit.Checkpoint("a", "a-0", "a-1", 0, 7), "a-1", w); err != nil {
		t.Fatal(err)
	}

	ran := false
	remove := db.BeforeCommit(func(*memkv.Tx) {
		if ran {
			return
		}
		ran = true
		n, more, err := s.deleteThreadBatch(ctx, "a", w)
		if err != nil || n != 1 || !more {
			t.Errorf("the DeleteThread batch: %d deleted, more %v, error %v; want 1, true, nil", n, more, err)
		}
	})
	before := db.Stats()
	err = s.p().DeleteHead(ctx, "a", "a-0", w)
	remove()
	if !ran {
		t.Fatalf("DeleteHead committed nothing, so nothing was interleaved (error %v)", err)
	}
	if c := db.Stats().Conflicts - before.Conflicts; c != 1 {
		t.Errorf("DeleteHead's commit conflicted %d times with the DeleteThread batch, want 1 (its read of the checkpoint must take a read conflict)", c)
	}
	// In the order the batch committed first, a-0 is gone while the head
	// still names it: DeleteHead finds no head checkpoint to delete.
	if !errors.Is(err, ckptstore.ErrNotHead) {
		t.Fatalf("DeleteHead after the batch deleted the head checkpoint: error %v, want ErrNotHead", err)
	}
	if h, err := s.p().GetHead(ctx, "a"); err != nil || h != "a-0" {
		t.Errorf("head %q (error %v), want a-0: the failed DeleteHead changed it", h, err)
	}
	refs, err := s.p().ListBlobReferences(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != 1 || refs[0].References != 1 {
		t.Errorf("blob references %v, want blob 7 once (a-1)", refs)
	}
	problems, err := s.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("Check: %v", p)
	}
}
