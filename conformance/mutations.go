package conformance

// DeleteHead, DeleteCheckpoints and ForkFromCheckpoint:
// what each removes or creates, the chain they follow, heads that name a
// missing or foreign checkpoint, and the counts.
//
// A thread's checkpoints always form one chain from the head (appends go on
// the head, DeleteHead takes the head, pruning takes the far end), but ids
// may be reused once deleted, so a chain can reach another thread's
// checkpoint or loop back to its own head. These cases are built here on
// purpose.

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

func (s *suite) testDeleteHead(t *testing.T) {
	t.Run("MovesToParent", func(t *testing.T) {
		e, w := s.chained(t, "t", "a", "b", "c")
		for _, step := range []struct{ del, head string }{{"c", "b"}, {"b", "a"}, {"a", ""}} {
			require.NoError(t, e.s.DeleteHead(e.ctx, "t", step.del, w), "DeleteHead "+step.del)
			e.wantHead("t", step.head)
			assert.Nil(t, e.get(step.del), "Get(%q) after DeleteHead", step.del)
			e.wantRecount()
		}
		e.wantList("t")
		e.wantRefs()
		e.fails("DeleteHead on an emptied thread", ckptstore.ErrNotHead, func() error { return e.s.DeleteHead(e.ctx, "t", "a", w) })
	})
	t.Run("EmptyThread", func(t *testing.T) {
		e, w := s.leased(t, "t")
		e.track(nil, "x")
		e.fails("DeleteHead on a thread that never had a head", ckptstore.ErrNotHead, func() error { return e.s.DeleteHead(e.ctx, "t", "x", w) })
	})
	t.Run("HeadWithMissingParent", func(t *testing.T) {
		e, w := s.chained(t, "t", "a", "b", "c")
		e.prune("t", 1, w)
		require.NoError(t, e.s.DeleteHead(e.ctx, "t", "c", w), "DeleteHead c")
		// The head moved to c's parent as stored, which no longer exists.
		e.wantHead("t", "b")
		assert.Nil(t, e.get("b"), "Get(b)")
		e.wantList("t")
		e.fails("DeleteHead of a head that does not exist", ckptstore.ErrNotHead, func() error { return e.s.DeleteHead(e.ctx, "t", "b", w) })
		e.appendFails("Append on no head", testkit.Checkpoint("t", "d", "", 1000), "", w, ckptstore.ErrConflict)
		require.NoError(t, e.s.Append(e.ctx, testkit.Checkpoint("t", "d", "b", 1000), "b", w), "Append on the missing head")
		e.wantThread("t", "d", "d")
		// The missing head's id is free again, even in its own thread.
		e.append(testkit.Checkpoint("t", "b", "", 1000), w)
		e.wantList("t", "b", "d")
	})
	t.Run("HeadInAnotherThread", func(t *testing.T) {
		e, wt := s.chained(t, "t", "p", "q")
		e.prune("t", 1, wt)
		wu := e.chain("u", nil, "p") // p's id, reused by u
		require.NoError(t, e.s.DeleteHead(e.ctx, "t", "q", wt), "DeleteHead q")
		e.wantThread("t", "p")
		e.fails("DeleteHead of t's head, which is u's checkpoint", ckptstore.ErrNotHead, func() error { return e.s.DeleteHead(e.ctx, "t", "p", wt) })
		require.NoError(t, e.s.Append(e.ctx, testkit.Checkpoint("t", "r", "p", 1000), "p", wt), "Append on the foreign head")
		e.wantList("t", "r")
		e.wantThread("u", "p", "p")
		require.NoError(t, e.s.DeleteHead(e.ctx, "u", "p", wu), "DeleteHead p in u")
		e.wantHead("t", "r")
		e.wantRecount()
	})
}

func (s *suite) testDeleteCheckpoints(t *testing.T) {
	t.Run("FollowsChainNotCreatedAt", s.deleteCheckpointsFollowsChainNotCreatedAt)
	t.Run("NothingToDelete", s.deleteCheckpointsNothingToDelete)
	t.Run("KeepOne", s.deleteCheckpointsKeepOne)
	t.Run("ForeignAncestorsStay", s.deleteCheckpointsForeignAncestorsStay)
	t.Run("ParentCycle", s.deleteCheckpointsParentCycle)
	t.Run("KeepNewest", s.deleteCheckpointsKeepNewest)
}

func (s *suite) deleteCheckpointsFollowsChainNotCreatedAt(t *testing.T) {
	e, w := s.leased(t, "t")
	// createdAt falls along the chain: the newest by createdAt are the
	// farthest from the head.
	for i, id := range []string{"c1", "c2", "c3", "c4", "c5"} {
		e.append(blobCP("t", id, float64(10-i), entries(testkit.File("f", i, 1), testkit.File("shared", 100, 1))), w)
	}
	kept := []*ckptstore.Checkpoint{e.get("c5"), e.get("c4")}
	deleted := e.prune("t", 2, w)
	assert.Equal(t, []string{"c1", "c2", "c3"}, deleted, "deleted, in chain order, farthest from the head first")
	e.wantThread("t", "c5", "c5", "c4")
	for _, k := range kept {
		wantCP(t, e.get(k.ID), k, "kept checkpoint %q changed", k.ID)
	}
	for _, id := range deleted {
		assert.Nil(t, e.get(id), "Get(%q) after pruning", id)
	}
	e.wantRefs(fileRef(3, 1), fileRef(4, 1), fileRef(100, 2))
	// The pruned ids may be used again.
	e.append(testkit.Checkpoint("t", "c1", "", 1000), w)
}

// pruneNone expects DeleteCheckpoints to succeed, delete nothing and
// change nothing.
func (e *env) pruneNone(what, thread string, keep int, w ckptstore.Writer) {
	e.t.Helper()
	e.fails(what, nil, func() error {
		d, err := e.s.DeleteCheckpoints(e.ctx, thread, keep, w)
		assert.Empty(e.t, d, "%s (keep %d) deleted", what, keep)
		return err
	})
}

func (s *suite) deleteCheckpointsNothingToDelete(t *testing.T) {
	e := s.env(t)
	e.pruneNone("DeleteCheckpoints on an empty thread", "empty", 1, e.acquire("empty").Writer)
	w := e.chain("t", nil, "a", "b", "c")
	for _, keep := range []int{3, 4, maxSize} {
		e.pruneNone("DeleteCheckpoints keeping the whole chain of 3", "t", keep, w)
	}
}

func (s *suite) deleteCheckpointsKeepOne(t *testing.T) {
	e, w := s.chained(t, "t", "a", "b", "c", "d")
	e.chain("u", nil, "other")
	before := e.snap()
	assert.Equal(t, []string{"a", "b", "c"}, e.prune("t", 1, w), "deleted")
	e.wantList("t", "d")
	after := e.snap()
	wantCP(t, after.gets["other"], before.gets["other"], "pruning t changed thread u")
	assert.Equal(t, "other", after.heads["u"], "pruning t changed thread u's head")
	e.wantRecount()
}

func (s *suite) deleteCheckpointsForeignAncestorsStay(t *testing.T) {
	// The chain walk stops at a checkpoint of another thread: t's
	// oldest parent id is reused by u, and pruning t leaves it.
	e, wt := s.chained(t, "t", "p", "q")
	e.prune("t", 1, wt)
	e.chain("u", nil, "p")
	e.append(testkit.Checkpoint("t", "r", "", 1000), wt)
	e.append(testkit.Checkpoint("t", "s", "", 1000), wt)
	assert.Equal(t, []string{"q", "r"}, e.prune("t", 1, wt), "deleted")
	e.wantList("t", "s")
	e.wantThread("u", "p", "p")
	e.wantRecount()
}

func (s *suite) deleteCheckpointsParentCycle(t *testing.T) {
	// x → y, prune x, then append a new x on y: y's parent is x again,
	// and the chain from the head loops. The walk must stop.
	e, w := s.chained(t, "t", "x", "y")
	e.prune("t", 1, w)
	e.append(testkit.Checkpoint("t", "x", "", 1000), w) // parent y; y's parent is x
	e.wantList("t", "x", "y")
	e.pruneNone("DeleteCheckpoints of a 2-cycle", "t", 2, w)
	e.append(testkit.Checkpoint("t", "z", "", 1000), w) // z → x → y → x
	assert.Equal(t, []string{"y", "x"}, e.prune("t", 1, w), "deleted from a cycle")
	e.wantList("t", "z")
	e.wantRecount()
}

func (s *suite) deleteCheckpointsKeepNewest(t *testing.T) {
	e, l := s.withLease(t, "t")
	e.chain("t", &l.Writer, "a", "b", "c")
	e.fails("KeepNewest while the lease is held", ckptstore.ErrWriterConflict, func() error { return errOf(ckptstore.KeepNewest(e.ctx, e.s, "t", 1)) })
	l.Release(e.ctx)
	deleted, err := ckptstore.KeepNewest(e.ctx, e.s, "t", 2)
	require.NoError(t, err, "KeepNewest")
	assert.Equal(t, []string{"a"}, deleted, "KeepNewest deleted")
	e.acquire("t") // KeepNewest released its lease
	e.wantList("t", "b", "c")
}

// wantForkRoot builds, without the store's help, the checkpoint a fork of
// src as in must store.
func wantForkRoot(src *ckptstore.Checkpoint, in ckptstore.ForkInput) *ckptstore.Checkpoint {
	c := cloneCP(src)
	c.ID, c.ThreadID, c.ParentCheckpointID = in.DestinationCheckpointID, in.DestinationThreadID, ""
	c.CreatedAt, c.Reason, c.Label, c.SourceRunID = in.CreatedAt, ckptstore.ReasonForkRoot, "", ""
	return c
}

func (s *suite) testFork(t *testing.T) {
	t.Run("Root", s.forkRoot)
	t.Run("CountsUp", s.forkCountsUp)
	t.Run("IntoEmptiedThread", s.forkIntoEmptiedThread)
	t.Run("ForkOfForkAndSourceLeaseNotNeeded", s.forkForkOfForkAndSourceLeaseNotNeeded)
}

func (s *suite) forkRoot(t *testing.T) {
	e, ws := s.leased(t, "src")
	a := richCP("src", "a", "")
	e.append(a, ws)
	b := richCP("src", "b", "")
	b.Files = b.Files[:2]
	e.append(b, ws)
	src := e.get("a")
	wd := e.acquire("dest").Writer
	e.track([]string{"dest"}, "f1")
	before := e.snap()
	in := forkInput("src", "a", "dest", "f1", -42.5, wd)
	got, err := e.s.ForkFromCheckpoint(e.ctx, in)
	require.NoError(t, err, "ForkFromCheckpoint")
	want := wantForkRoot(src, in)
	wantCP(t, got, want, "ForkFromCheckpoint returned")
	wantCP(t, e.get("f1"), want, "Get(f1)")
	e.wantHead("dest", "f1")
	wantCPs(t, e.list("dest"), []*ckptstore.Checkpoint{want}, "List(dest)")
	after := e.snap()
	assert.Equal(t, before.heads["src"], after.heads["src"], "the fork changed its source thread's head")
	wantCPs(t, after.lists["src"], before.lists["src"], "the fork changed its source thread")
	e.wantRecount()
	// Changing the returned root changes nothing stored.
	scribble(got)
	wantCP(t, e.get("f1"), want, "changing the returned fork root changed the store")
	// The destination goes on like any thread.
	e.append(testkit.Checkpoint("dest", "f2", "", 1000), wd)
	e.wantList("dest", "f1", "f2")
}

func (s *suite) forkCountsUp(t *testing.T) {
	e, ws := s.leased(t, "src")
	e.append(blobCP("src", "a", 1000, entries(testkit.File("x", 1, 1), testkit.File("y", 1, 1), testkit.File("z", 2, 1), testkit.Dir("d")), testkit.Artifact("q", 1), testkit.Artifact("r", 1)), ws)
	for i, dest := range []string{"d1", "d2"} {
		wd := e.acquire(dest).Writer
		require.NoError(t, e.forkErr(forkInput("src", "a", dest, dest+"-root", 1, wd)), "ForkFromCheckpoint into "+dest)
		n := int64(i + 2)
		e.wantRefs(artifactRef(1, n), fileRef(1, n), fileRef(2, n))
	}
	require.NoError(t, e.s.DeleteHead(e.ctx, "src", "a", ws), "DeleteHead of the source")
	e.wantRecount()
}

func (s *suite) forkIntoEmptiedThread(t *testing.T) {
	// A thread whose checkpoints were all deleted has no head and is
	// empty again.
	e := s.env(t)
	e.chain("src", nil, "a")
	wd := e.chain("dest", nil, "old")
	require.NoError(t, e.s.DeleteHead(e.ctx, "dest", "old", wd), "DeleteHead old")
	require.NoError(t, e.forkErr(forkInput("src", "a", "dest", "old", 1, wd)), "ForkFromCheckpoint into an emptied thread, reusing a deleted id")
	e.wantList("dest", "old")
	if c := e.get("old"); c == nil || c.Reason != ckptstore.ReasonForkRoot {
		t.Errorf("Get(old) = %+v, want the fork root", c)
	}
}

func (s *suite) forkForkOfForkAndSourceLeaseNotNeeded(t *testing.T) {
	e := s.env(t)
	e.chain("src", nil, "a")
	e.clock.Advance(LeaseDuration) // src's lease expired: forking needs only the destination's
	require.NoError(t, e.forkErr(forkInput("src", "a", "d1", "r1", 1, e.acquire("d1").Writer)), "fork src → d1")
	in := forkInput("d1", "r1", "d2", "r2", 2, e.acquire("d2").Writer)
	got, err := e.s.ForkFromCheckpoint(e.ctx, in)
	require.NoError(t, err, "fork d1 → d2")
	wantCP(t, got, wantForkRoot(e.get("r1"), in), "fork of a fork root")
}

func (s *suite) testContext(t *testing.T) {
	e, l := s.withLease(t, "t")
	e.chain("t", &l.Writer, "a", "b")
	free := e.acquire("free")
	free.Release(e.ctx)
	e.track([]string{"dest"}, "new", "fork")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	canceled := func(what string, err error) { t.Helper(); wantCanceled(t, what, err) }
	before := e.snap()
	canceled("Get", errOf(e.s.Get(ctx, "a")))
	canceled("List", errOf(e.s.List(ctx, "t")))
	canceled("Head", errOf(e.s.GetHead(ctx, "t")))
	canceled("BlobReferences", errOf(e.s.ListBlobReferences(ctx)))
	canceled("Append", e.s.Append(ctx, testkit.Checkpoint("t", "new", "b", 1000), "b", l.Writer))
	canceled("DeleteHead", e.s.DeleteHead(ctx, "t", "b", l.Writer))
	canceled("AcquireWriter", errOf(e.s.AcquireWriter(ctx, "free")))
	canceled("Renew", errOf(l.Renew(ctx)))
	canceled("DeleteCheckpoints", errOf(e.s.DeleteCheckpoints(ctx, "t", 1, l.Writer)))
	canceled("ForkFromCheckpoint", errOf(e.s.ForkFromCheckpoint(ctx, forkInput("t", "a", "dest", "fork", 1, e.acquire("dest").Writer))))
	e.unchanged("calls with a cancelled context", before)
	e.acquire("free") // the cancelled AcquireWriter took no lease
	e.works("after a cancelled Renew", l.Writer, "t")
}
