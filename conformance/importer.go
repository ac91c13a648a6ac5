package conformance

// Import: a batch is stored exactly as given — ids,
// parents, createdAt bits, reasons, checkpoints off the chain — in one
// atomic step under the thread's lease; a repeated batch writes nothing and
// succeeds; a checkpoint id stored elsewhere or with other content is
// refused; the head rules; blob counts for newly written checkpoints only.

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

// history is a thread as another store might hold it: a chain r1 → r2 → r3
// (the head), a branch off r1, and a checkpoint whose parent was pruned.
// createdAt values test the bits: -0, the smallest subnormal, 1e300.
func history(thread string) []*ckptstore.Checkpoint {
	r1 := testkit.Checkpoint(thread, "r1", "", math.Copysign(0, -1))
	r1.Files = []ckptstore.Entry{testkit.File("a", 1, 10), testkit.Dir("d"), testkit.File("d/b", 2, 20)}
	r2 := richCP(thread, "r2", "r1")
	r2.CreatedAt = 5e-324
	r2.Conversation = []byte(" [ {\"role\":\"user\",\"content\":\"é\"} ]\n")
	r3 := testkit.Checkpoint(thread, "r3", "r2", 1e300)
	r3.Reason = ckptstore.ReasonForkRoot
	r3.Files = []ckptstore.Entry{testkit.File("a", 1, 10)}
	off := testkit.Checkpoint(thread, "off", "r1", 2.5)
	off.Label = "a branch"
	off.Artifacts = []ckptstore.Artifact{testkit.Artifact("x", 5)}
	orphan := testkit.Checkpoint(thread, "orphan", "pruned-away", -7)
	orphan.SourceRunID = "run-1"
	orphan.Files = []ckptstore.Entry{testkit.File("z", 2, 20)}
	return []*ckptstore.Checkpoint{r1, r2, r3, off, orphan}
}

func cloneAll(cps []*ckptstore.Checkpoint) []*ckptstore.Checkpoint {
	out := make([]*ckptstore.Checkpoint, len(cps))
	for i, c := range cps {
		out[i] = cloneCP(c)
	}
	return out
}

// wantExactly checks that thread holds exactly want (createdAt to the bit,
// -0 included), with head, and that the counts equal a recount.
func (e *env) wantExactly(thread string, want []*ckptstore.Checkpoint, head string) {
	e.t.Helper()
	w := cloneAll(want)
	sortLikeList(w)
	wantCPs(e.t, e.list(thread), w, "List(%q)", thread)
	for _, c := range want {
		e.track(nil, c.ID)
		got := e.get(c.ID)
		if wantCP(e.t, got, c, "Get(%q)", c.ID) {
			assert.Equal(e.t, math.Float64bits(c.CreatedAt), math.Float64bits(got.CreatedAt), "Get(%q): the bits of createdAt", c.ID)
		}
	}
	e.wantHead(thread, head)
	e.wantRecount()
}

// doImport imports b and checks how many checkpoints it reports written.
func (e *env) doImport(what string, b ckptstore.ImportBatch, want int) {
	e.t.Helper()
	e.track([]string{b.ThreadID})
	for _, c := range b.Checkpoints {
		if c != nil {
			e.track(nil, c.ID)
		}
	}
	n, err := e.s.Import(e.ctx, b)
	require.NoError(e.t, err, what)
	assert.Equal(e.t, want, n, "%s: the checkpoints Import reports written", what)
}

func (s *suite) testImport(t *testing.T) {
	t.Run("Exact", s.importExact)
	t.Run("Idempotent", s.importIdempotent)
	t.Run("EqualContent", s.importEqualContent)
	t.Run("OtherContentRefused", s.importOtherContentRefused)
	t.Run("InvalidRefused", s.importInvalidRefused)
	t.Run("Head", s.importHead)
	t.Run("NoHeadIsNotEmpty", s.importNoHeadIsNotEmpty)
	t.Run("Transcript", s.importTranscript)
	t.Run("RoundTrip", s.importRoundTrip)
}

func (s *suite) importExact(t *testing.T) {
	e, w := s.leased(t, "dst")
	h := history("dst")
	b := ckptstore.ImportBatch{ThreadID: "dst", Checkpoints: cloneAll(h), SetHead: true, Head: "r3", Writer: w}
	b.Transcript = []byte(" [\"the transcript\"] ")
	e.doImport("Import", b, len(h))
	e.wantExactly("dst", h, "r3")
	e.wantTranscript("dst", ` ["the transcript"] `)
	e.wantRefs(artifactRef(1, 1), artifactRef(2, 1), artifactRef(5, 1), fileRef(1, 3), fileRef(2, 3))
	// The thread goes on from the imported head.
	e.append(testkit.Checkpoint("dst", "r4", "", 1000), w)
	e.wantHead("dst", "r4")
	// Changing the batch after the import changes nothing stored.
	for _, c := range b.Checkpoints {
		scribble(c)
	}
	wantCP(t, e.get("r2"), h[1], "changing the imported batch changed the store")
}

func (s *suite) importIdempotent(t *testing.T) {
	e, w := s.leased(t, "dst")
	h := history("dst")
	batch := func(set bool, cps ...*ckptstore.Checkpoint) ckptstore.ImportBatch {
		b := ckptstore.ImportBatch{ThreadID: "dst", Checkpoints: cloneAll(cps), SetHead: set, Writer: w}
		if set {
			b.Head = "r3"
		}
		return b
	}
	b1, b2, b3 := batch(false, h[0], h[1]), batch(false, h[2], h[3]), batch(true, h[4])
	e.doImport("batch 1", b1, 2)
	e.doImport("batch 2", b2, 2)
	// An interrupted copy resumes by sending its batches again.
	before := e.snap()
	e.doImport("batch 1 again", b1, 0)
	e.doImport("batch 2 again", b2, 0)
	e.unchanged("repeated batches", before)
	e.doImport("batch 3", b3, 1)
	before = e.snap()
	e.doImport("batch 3 again", b3, 0)
	e.doImport("everything again", batch(true, h...), 0)
	e.unchanged("repeated batches after the head was set", before)
	e.wantExactly("dst", h, "r3")
	// A batch of stored checkpoints and new ones writes the new ones.
	n := testkit.Checkpoint("dst", "new", "r3", 1000)
	e.doImport("stored and new", batch(false, h[0], n, h[2]), 1)
	e.wantExactly("dst", append(h, n), "r3")
}

func (s *suite) importEqualContent(t *testing.T) {
	// Equal content is EqualCheckpoints: an empty conversation equals
	// [], nil slices equal empty ones.
	e, w := s.leased(t, "t")
	c := testkit.Checkpoint("t", "c", "", 1000)
	c.Conversation = []byte(`[]`)
	c.Files = []ckptstore.Entry{}
	e.doImport("Import", ckptstore.ImportBatch{ThreadID: "t", Checkpoints: []*ckptstore.Checkpoint{c}, Writer: w}, 1)
	again := testkit.Checkpoint("t", "c", "", 1000)
	again.Conversation = nil
	e.doImport("Import with an empty conversation and nil files", ckptstore.ImportBatch{ThreadID: "t", Checkpoints: []*ckptstore.Checkpoint{again}, Writer: w}, 0)
	e.wantRecount()
}

func (s *suite) importOtherContentRefused(t *testing.T) {
	e, w := s.leased(t, "t")
	h := history("t")
	e.doImport("Import", ckptstore.ImportBatch{ThreadID: "t", Checkpoints: cloneAll(h), SetHead: true, Head: "r3", Writer: w}, len(h))
	e.chain("u", nil, "u1")
	for _, tc := range []struct {
		name string
		mod  func(c *ckptstore.Checkpoint)
	}{
		// Each case is a stored checkpoint with one field changed.
		{"createdAt +0 for -0", func(c *ckptstore.Checkpoint) { *c = *cloneCP(h[0]); c.CreatedAt = 0 }},
		{"createdAt one ulp off", func(c *ckptstore.Checkpoint) { *c = *cloneCP(h[2]); c.CreatedAt = math.Nextafter(1e300, 0) }},
		{"another parent", func(c *ckptstore.Checkpoint) { *c = *cloneCP(h[3]); c.ParentCheckpointID = "r2" }},
		{"another label", func(c *ckptstore.Checkpoint) { *c = *cloneCP(h[3]); c.Label = "other" }},
		{"another reason", func(c *ckptstore.Checkpoint) { *c = *cloneCP(h[2]); c.Reason = ckptstore.ReasonNamed }},
		{"another sourceRunId", func(c *ckptstore.Checkpoint) { *c = *cloneCP(h[4]); c.SourceRunID = "" }},
		{"files in another order", func(c *ckptstore.Checkpoint) {
			*c = *cloneCP(h[0])
			c.Files[0], c.Files[2] = c.Files[2], c.Files[0]
		}},
		{"conversation with other whitespace", func(c *ckptstore.Checkpoint) {
			*c = *cloneCP(h[1])
			c.Conversation = []byte(`[{"role":"user","content":"é"}]`)
		}},
		{"an artifact's createdAt", func(c *ckptstore.Checkpoint) {
			*c = *cloneCP(h[3])
			c.Artifacts[0].CreatedAt++
		}},
		{"id of another thread", func(c *ckptstore.Checkpoint) { c.ID = "u1" }},
		{"id of another thread, its content", func(c *ckptstore.Checkpoint) { *c = *cloneCP(e.get("u1")); c.ThreadID = "t" }},
	} {
		fresh := testkit.Checkpoint("t", "fresh", "r3", 1000) // would be new: the batch is all or nothing
		c := testkit.Checkpoint("t", "x", "", 1000)
		tc.mod(c)
		e.track(nil, "fresh")
		e.fails("Import of "+tc.name, ckptstore.ErrDuplicateID, func() error {
			return e.importErr(ckptstore.ImportBatch{ThreadID: "t", Checkpoints: []*ckptstore.Checkpoint{fresh, c}, Writer: w})
		})
	}
	e.wantExactly("t", h, "r3")
}

func (s *suite) importInvalidRefused(t *testing.T) {
	e, old := s.withLease(t, "t")
	old.Release(e.ctx)
	stale := old.Writer
	w := e.chain("t", nil, "a")
	wu := e.acquire("u").Writer
	e.save("t", `["kept"]`)
	ok := func() *ckptstore.Checkpoint { return testkit.Checkpoint("t", "new", "a", 1000) }
	bad := func(f func(c *ckptstore.Checkpoint)) []*ckptstore.Checkpoint {
		c := ok()
		f(c)
		return []*ckptstore.Checkpoint{testkit.Checkpoint("t", "fine", "", 1000), c}
	}
	e.track(nil, "new", "fine")
	for _, tc := range []struct {
		name string
		b    ckptstore.ImportBatch
		want error
	}{
		{"thread id empty", ckptstore.ImportBatch{Checkpoints: []*ckptstore.Checkpoint{ok()}, Writer: w}, ckptstore.ErrInvalidID},
		{"thread id invalid", ckptstore.ImportBatch{ThreadID: "\xff", Writer: w}, ckptstore.ErrInvalidID},
		{"writer thread id invalid", ckptstore.ImportBatch{ThreadID: "t", Writer: ckptstore.Writer{ThreadID: "\xc3", OwnerToken: w.OwnerToken, Fence: w.Fence}}, ckptstore.ErrInvalidID},
		{"checkpoint id invalid", ckptstore.ImportBatch{ThreadID: "t", Checkpoints: bad(func(c *ckptstore.Checkpoint) { c.ID = "\xff" }), Writer: w}, ckptstore.ErrInvalidID},
		{"parent invalid", ckptstore.ImportBatch{ThreadID: "t", Checkpoints: bad(func(c *ckptstore.Checkpoint) { c.ParentCheckpointID = "\xff" }), Writer: w}, ckptstore.ErrInvalidID},
		{"checkpoint's thread invalid", ckptstore.ImportBatch{ThreadID: "t", Checkpoints: bad(func(c *ckptstore.Checkpoint) { c.ThreadID = "\xc3" }), Writer: w}, ckptstore.ErrInvalidID},
		{"head invalid", ckptstore.ImportBatch{ThreadID: "t", SetHead: true, Head: "\xff", Writer: w}, ckptstore.ErrInvalidID},
		{"ids before content", ckptstore.ImportBatch{ThreadID: "t", Checkpoints: bad(func(c *ckptstore.Checkpoint) { c.ID, c.CreatedAt = "\xff", nan }), Writer: w}, ckptstore.ErrInvalidID},
		{"nil checkpoint", ckptstore.ImportBatch{ThreadID: "t", Checkpoints: []*ckptstore.Checkpoint{ok(), nil}, Writer: w}, ckptstore.ErrInvalidEntry},
		{"checkpoint of another thread", ckptstore.ImportBatch{ThreadID: "t", Checkpoints: bad(func(c *ckptstore.Checkpoint) { c.ThreadID = "u" }), Writer: w}, ckptstore.ErrInvalidEntry},
		{"the same id twice", ckptstore.ImportBatch{ThreadID: "t", Checkpoints: []*ckptstore.Checkpoint{ok(), ok()}, Writer: w}, ckptstore.ErrInvalidEntry},
		{"createdAt NaN", ckptstore.ImportBatch{ThreadID: "t", Checkpoints: bad(func(c *ckptstore.Checkpoint) { c.CreatedAt = nan }), Writer: w}, ckptstore.ErrInvalidEntry},
		{"invalid file", ckptstore.ImportBatch{ThreadID: "t", Checkpoints: bad(func(c *ckptstore.Checkpoint) { c.Files = []ckptstore.Entry{testkit.File("a/../b", 1, 1)} }), Writer: w}, ckptstore.ErrInvalidEntry},
		{"invalid conversation", ckptstore.ImportBatch{ThreadID: "t", Checkpoints: bad(func(c *ckptstore.Checkpoint) { c.Conversation = []byte("[\"\xff\"]") }), Writer: w}, ckptstore.ErrInvalidEntry},
		{"transcript empty", ckptstore.ImportBatch{ThreadID: "t", Transcript: []byte{}, Writer: w}, ckptstore.ErrInvalidEntry},
		{"transcript not an array", ckptstore.ImportBatch{ThreadID: "t", Transcript: []byte(`{}`), Writer: w}, ckptstore.ErrInvalidEntry},
		{"content before writer", ckptstore.ImportBatch{ThreadID: "t", Checkpoints: bad(func(c *ckptstore.Checkpoint) { c.Reason = "" }), Writer: forged(w)}, ckptstore.ErrInvalidEntry},
		{"empty batch, forged writer", ckptstore.ImportBatch{ThreadID: "t", Writer: forged(w)}, ckptstore.ErrWriterLost},
		{"writer before duplicate", ckptstore.ImportBatch{ThreadID: "t", Checkpoints: []*ckptstore.Checkpoint{testkit.Checkpoint("t", "a", "zz", 1000)}, Writer: forged(w)}, ckptstore.ErrWriterLost},
		{"duplicate before head", ckptstore.ImportBatch{ThreadID: "t", Checkpoints: []*ckptstore.Checkpoint{testkit.Checkpoint("t", "a", "zz", 1000)}, SetHead: true, Head: "zz", Writer: w}, ckptstore.ErrDuplicateID},
	} {
		e.fails("Import, "+tc.name, tc.want, func() error { return e.importErr(tc.b) })
	}
	for _, m := range append(misses(w, wu), namedWriter{"stale writer", stale}) {
		e.fails("Import with a writer: "+m.name, ckptstore.ErrWriterLost, func() error {
			return e.importErr(ckptstore.ImportBatch{ThreadID: "t", Checkpoints: []*ckptstore.Checkpoint{ok()}, Writer: m.w})
		})
	}
	e.clock.Advance(LeaseDuration)
	e.fails("Import with an expired writer", ckptstore.ErrWriterLost, func() error {
		return e.importErr(ckptstore.ImportBatch{ThreadID: "t", Checkpoints: []*ckptstore.Checkpoint{ok()}, Writer: w})
	})
}

func (s *suite) importHead(t *testing.T) {
	e, w := s.leased(t, "t")
	set := func(head string, cps ...*ckptstore.Checkpoint) ckptstore.ImportBatch {
		return ckptstore.ImportBatch{ThreadID: "t", Checkpoints: cps, SetHead: true, Head: head, Writer: w}
	}
	e.doImport("SetHead \"\" on an empty thread", set(""), 0)
	e.wantHead("t", "")
	// The head may name a checkpoint that does not exist.
	e.doImport("SetHead to a missing id", set("gone"), 0)
	e.wantHead("t", "gone")
	e.doImport("SetHead to the head it has", set("gone", testkit.Checkpoint("t", "x", "", 1000)), 1)
	e.wantHead("t", "gone")
	for _, head := range []string{"x", "", "other"} {
		e.fails("SetHead "+head+" on a thread whose head is gone", ckptstore.ErrConflict, func() error {
			return e.importErr(set(head, testkit.Checkpoint("t", "y", "", 1000)))
		})
	}
	// Without SetHead the head stays, whatever the batch holds.
	e.doImport("no SetHead", ckptstore.ImportBatch{ThreadID: "t", Checkpoints: []*ckptstore.Checkpoint{testkit.Checkpoint("t", "y", "x", 1000)}, Head: "y", Writer: w}, 1)
	e.wantThread("t", "gone", "x", "y")
	// Appends go on from the imported head; then SetHead must match it.
	e.append(testkit.Checkpoint("t", "z", "", 1000), w)
	e.wantHead("t", "z")
	e.fails("SetHead to the old head", ckptstore.ErrConflict, func() error { return e.importErr(set("gone")) })
	e.doImport("SetHead to the appended head", set("z"), 0)
}

func (s *suite) importNoHeadIsNotEmpty(t *testing.T) {
	// Checkpoints imported without a head still make the thread
	// non-empty: a fork into it is refused.
	e := s.env(t)
	e.chain("src", nil, "s1")
	w := e.acquire("t").Writer
	e.doImport("Import without a head", ckptstore.ImportBatch{ThreadID: "t", Checkpoints: []*ckptstore.Checkpoint{testkit.Checkpoint("t", "x", "y", 1000)}, Writer: w}, 1)
	e.wantHead("t", "")
	e.track(nil, "root")
	e.fails("ForkFromCheckpoint into a thread with checkpoints and no head", ckptstore.ErrForkDestinationNotEmpty, func() error { return e.forkErr(forkInput("src", "s1", "t", "root", 1, w)) })
	wantThreads(e, "checkpoints without a head make a thread", "src", "t")
}

func (s *suite) importTranscript(t *testing.T) {
	e, w := s.leased(t, "t")
	e.save("t", `["old"]`)
	e.doImport("no transcript", ckptstore.ImportBatch{ThreadID: "t", Writer: w}, 0)
	e.wantTranscript("t", `["old"]`)
	e.doImport("a transcript", ckptstore.ImportBatch{ThreadID: "t", Transcript: []byte(`[ "new" ]`), Writer: w}, 0)
	e.wantTranscript("t", `[ "new" ]`)
	e.doImport("the transcript []", ckptstore.ImportBatch{ThreadID: "u0", Transcript: []byte(`[]`), Writer: e.acquire("u0").Writer}, 0)
	wantThreads(e, "an imported transcript makes a thread", "t", "u0")
}

func (s *suite) importRoundTrip(t *testing.T) {
	// Export a thread made by the store's own writes, delete it, and
	// import it back: the store is as it was, blob counts included.
	e, w := s.leased(t, "t")
	for i, id := range []string{"a", "b", "c", "d"} {
		c := richCP("t", id, "")
		c.CreatedAt = float64(10 - i)
		c.Files = c.Files[:1+i%3]
		e.append(c, w)
	}
	e.prune("t", 3, w)
	require.NoError(t, e.s.DeleteHead(e.ctx, "t", "d", w), "DeleteHead d")
	e.append(testkit.Checkpoint("t", "e", "", 1000), w) // a second child of c
	e.chain("u", nil, "u1")
	e.save("t", `["t's"]`)
	before := e.snap()
	exported, head := e.list("t"), e.head("t")
	transcript := []byte(e.load("t"))
	e.deleteThread("t", w, len(exported))
	e.doImport("Import of the export", ckptstore.ImportBatch{ThreadID: "t", Checkpoints: exported, SetHead: true, Head: head,
		Transcript: transcript, Writer: w}, len(exported))
	e.unchanged("export, DeleteThread, import", before)
}
