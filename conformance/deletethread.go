package conformance

// DeleteThread: every checkpoint of the thread,
// on and off the head chain, its head and its transcript go; blob counts
// drop; the lease stays and can write again; other threads keep theirs. And
// DeleteThread followed by the sweep frees exactly the blobs that only that
// thread used.

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/blobs"
	"github.com/ckptstore/ckptstore/internal/testkit"
	"github.com/ckptstore/ckptstore/sweep"
)

// deleteThread calls DeleteThread and checks the count it reports.
func (e *env) deleteThread(thread string, w ckptstore.Writer, want int) {
	e.t.Helper()
	n, err := e.s.DeleteThread(e.ctx, thread, w)
	require.NoError(e.t, err, "DeleteThread(%q)", thread)
	assert.Equal(e.t, want, n, "DeleteThread(%q): the checkpoints it reports deleted", thread)
}

// wantGone checks that thread has no head, no checkpoints, no transcript
// and is not listed, and that none of ids is stored.
func (e *env) wantGone(thread string, ids ...string) {
	e.t.Helper()
	e.wantThread(thread, "")
	for _, id := range ids {
		assert.Nil(e.t, e.get(id), "Get(%q) after DeleteThread", id)
	}
	e.wantTranscript(thread, "[]")
	assert.NotContains(e.t, e.allThreads(), thread, "Threads after DeleteThread")
}

func (s *suite) testDeleteThread(t *testing.T) {
	t.Run("Everything", s.deleteThreadEverything)
	t.Run("EmptyThread", s.deleteThreadEmptyThread)
	t.Run("EmptiedThread", s.deleteThreadEmptiedThread)
	t.Run("OnlyAHead", s.deleteThreadOnlyAHead)
	t.Run("OnlyATranscript", s.deleteThreadOnlyATranscript)
	t.Run("ForkIntoDeletedThread", s.deleteThreadForkIntoDeletedThread)
	t.Run("WriterLost", s.deleteThreadWriterLost)
}

func (s *suite) deleteThreadEverything(t *testing.T) {
	e, w := s.leased(t, "t")
	for i, id := range []string{"a", "b", "c"} {
		e.append(blobCP("t", id, float64(3-i), entries(testkit.File("own", i, 1), testkit.File("shared", 100, 1)), testkit.Artifact("x", 100)), w)
	}
	ids := []string{"a", "b", "c"}
	// Off the head chain: a parent that does not exist, and a
	// second child of a.
	x := testkit.Checkpoint("t", "x", "missing", 1000)
	x.Files = []ckptstore.Entry{testkit.File("x", 50, 1)}
	y := testkit.Checkpoint("t", "y", "a", -5)
	e.doImport("Import of off-chain checkpoints", ckptstore.ImportBatch{ThreadID: "t", Checkpoints: []*ckptstore.Checkpoint{x, y}, Writer: w}, 2)
	ids = append(ids, "x", "y")
	e.save("t", `["the transcript"]`)
	e.append(blobCP("u", "u1", 1000, entries(testkit.File("shared", 100, 1), testkit.File("u", 200, 1))), e.acquire("u").Writer)
	e.save("u", `["u's"]`)
	before := e.snap()

	e.deleteThread("t", w, len(ids))
	e.wantGone("t", ids...)
	e.wantRefs(fileRef(100, 1), fileRef(200, 1))
	after := e.snap()
	wantCP(t, after.gets["u1"], before.gets["u1"], "DeleteThread(t) changed thread u")
	assert.Equal(t, "u1", after.heads["u"], "DeleteThread(t) changed thread u's head")
	e.wantTranscript("u", `["u's"]`)

	// A repeat deletes nothing more.
	e.fails("DeleteThread repeated", nil, func() error { e.deleteThread("t", w, 0); return nil })
	// The lease stays: no one else can take it, its holder can write.
	e.conflict("after DeleteThread", "t")
	e.append(testkit.Checkpoint("t", "a", "", 1000), w) // the deleted ids are free again
	e.wantThread("t", "a", "a")
	e.wantRecount()
}

func (s *suite) deleteThreadEmptyThread(t *testing.T) {
	e, w := s.leased(t, "t")
	e.fails("DeleteThread of a thread with only a lease", nil, func() error { e.deleteThread("t", w, 0); return nil })
	e.works("after deleting an empty thread", w, "t")
}

func (s *suite) deleteThreadEmptiedThread(t *testing.T) {
	e, w := s.chained(t, "t", "a")
	require.NoError(t, e.s.DeleteHead(e.ctx, "t", "a", w), "DeleteHead a")
	e.deleteThread("t", w, 0)
	e.wantGone("t", "a")
}

func (s *suite) deleteThreadOnlyAHead(t *testing.T) {
	// After pruning and DeleteHead, the head names a checkpoint that
	// no longer exists: DeleteThread clears it.
	e, w := s.chained(t, "t", "a", "b")
	e.prune("t", 1, w)
	require.NoError(t, e.s.DeleteHead(e.ctx, "t", "b", w), "DeleteHead b")
	e.wantHead("t", "a")
	e.deleteThread("t", w, 0)
	e.wantGone("t", "a", "b")
	e.append(testkit.Checkpoint("t", "c", "", 1000), w) // on no head
	e.wantHead("t", "c")
}

func (s *suite) deleteThreadOnlyATranscript(t *testing.T) {
	e := s.env(t)
	e.save("t", `[1]`)
	e.deleteThread("t", e.acquire("t").Writer, 0)
	e.wantGone("t")
}

func (s *suite) deleteThreadForkIntoDeletedThread(t *testing.T) {
	e := s.env(t)
	e.chain("src", nil, "s1")
	w := e.chain("t", nil, "a", "b")
	e.save("t", `[1]`)
	e.deleteThread("t", w, 2)
	require.NoError(t, e.forkErr(forkInput("src", "s1", "t", "b", 1, w)), "ForkFromCheckpoint into the deleted thread")
	e.wantList("t", "b")
}

func (s *suite) deleteThreadWriterLost(t *testing.T) {
	e, old := s.withLease(t, "t")
	old.Release(e.ctx)
	l := e.acquire("t")
	e.chain("t", &l.Writer, "a", "b")
	e.save("t", `["kept"]`)
	wu := e.chain("u", nil, "c")
	for _, tc := range append(misses(l.Writer, wu), namedWriter{"released writer", old.Writer}) {
		e.fails("DeleteThread with "+tc.name, ckptstore.ErrWriterLost, func() error { return e.deleteThreadErr("t", tc.w) })
	}
	e.clock.Advance(LeaseDuration) // expired at now == expiresAt
	e.fails("DeleteThread with an expired writer", ckptstore.ErrWriterLost, func() error { return e.deleteThreadErr("t", l.Writer) })
	l2 := e.acquire("t")
	e.fails("DeleteThread with a replaced writer", ckptstore.ErrWriterLost, func() error { return e.deleteThreadErr("t", l.Writer) })
	e.deleteThread("t", l2.Writer, 2)
}

// testDeleteThreadSweep deletes a thread and sweeps a memory bucket: the
// sweep frees exactly the blobs that only the deleted thread used, and
// keeps those another thread shares.
func (s *suite) testDeleteThreadSweep(t *testing.T) {
	e := s.env(t)
	ctx := context.Background()
	bucket := blobs.NewMem(blobs.MemOptions{Now: e.clock.Now})
	keys := []string{testkit.FileKey(1), testkit.FileKey(2), testkit.FileKey(3), testkit.FileKey(4), testkit.ArtifactKey(1), testkit.ArtifactKey(2), testkit.ArtifactKey(3)}
	for _, k := range keys {
		if err := bucket.Put(ctx, k, strings.NewReader(k)); err != nil {
			t.Fatalf("Put(%q): %v", k, err)
		}
	}
	e.clock.Advance(time.Millisecond) // every blob is older than OlderThan 0
	// t uses files 1, 2, 3 and artifacts 1, 2; u shares file 3 and
	// artifact 2, and uses file 4 and artifact 3 alone.
	wt := e.acquire("t").Writer
	e.append(blobCP("t", "t1", 1000, entries(testkit.File("a", 1, 1), testkit.File("c", 3, 1)), testkit.Artifact("x", 1)), wt)
	e.append(blobCP("t", "t2", 1000, entries(testkit.File("a", 1, 1), testkit.File("b", 2, 1)), testkit.Artifact("y", 2)), wt)
	e.append(blobCP("u", "u1", 1000, entries(testkit.File("c", 3, 1), testkit.File("d", 4, 1)), testkit.Artifact("y", 2), testkit.Artifact("z", 3)), e.acquire("u").Writer)

	opts := sweep.Options{OlderThan: 0, Now: e.clock.Now}
	deleted, err := sweep.Run(ctx, e.s, bucket, opts)
	require.NoError(t, err, "sweep before DeleteThread")
	if len(deleted) != 0 {
		t.Fatalf("the sweep before DeleteThread deleted %q, though every blob is used", deleted)
	}
	e.deleteThread("t", wt, 2)
	deleted, err = sweep.Run(ctx, e.s, bucket, opts)
	require.NoError(t, err, "sweep after DeleteThread")
	want := []string{testkit.ArtifactKey(1), testkit.FileKey(1), testkit.FileKey(2)}
	assert.Equal(t, want, deleted, "the sweep after DeleteThread deletes exactly t's unshared blobs")
	var left []string
	for o, err := range bucket.List(ctx, "") {
		require.NoError(t, err, "List")
		left = append(left, o.Key)
	}
	assert.Equal(t, []string{testkit.ArtifactKey(2), testkit.ArtifactKey(3), testkit.FileKey(3), testkit.FileKey(4)}, left,
		"the bucket after the sweep holds u's blobs")
	// u's checkpoint is whole: every blob it names is still there.
	for _, k := range append([]string{}, testkit.FileKey(3), testkit.FileKey(4), testkit.ArtifactKey(2), testkit.ArtifactKey(3)) {
		if _, err := bucket.Head(ctx, k); err != nil {
			t.Errorf("blob %q of the kept thread u: %v", k, err)
		}
	}
}
