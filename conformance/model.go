package conformance

// The model-based test. A plain model of the contract — maps and slices,
// written from docs/contract.md and sharing no code with any store — runs beside the
// store under random sequences of every operation (valid and invalid
// inputs, stale and forged writers, clock moves) drawn by pgregory.net/rapid.
// Every result and every error must match the model's, and at the end of
// each sequence the whole store must equal the model, with ListBlobReferences
// equal to a recount of the stored checkpoints.
//
// The model knows whether an input is invalid because the test builds it
// that way (one chosen defect), not by running a validator.
//
// Writes with caller op tokens, repeated later, must report success and
// change nothing.

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

// model is the contract as plain data.
type model struct {
	now     func() time.Time
	cps     map[string]*ckptstore.Checkpoint
	threads map[string]*mThread
}

type mThread struct {
	head       string
	lease      *ckptstore.Writer // the last lease granted; nil once released
	expiry     time.Time
	fence      int64 // the highest fence granted
	tokens     map[string]bool
	transcript *string // nil: none saved
}

func (m *model) thread(id string) *mThread {
	th := m.threads[id]
	if th == nil {
		th = &mThread{tokens: map[string]bool{}}
		m.threads[id] = th
	}
	return th
}

// current reports whether w is the live lease of thread.
func (m *model) current(thread string, w ckptstore.Writer) bool {
	th := m.threads[thread]
	return w.ThreadID == thread && th != nil && th.lease != nil &&
		th.lease.OwnerToken == w.OwnerToken && th.lease.Fence == w.Fence && m.now().Before(th.expiry)
}

func (m *model) head(thread string) string {
	if th := m.threads[thread]; th != nil {
		return th.head
	}
	return ""
}

func (m *model) list(thread string) []*ckptstore.Checkpoint {
	var out []*ckptstore.Checkpoint
	for _, c := range m.cps {
		if c.ThreadID == thread {
			out = append(out, c)
		}
	}
	sortLikeList(out)
	return out
}

// empty reports whether thread has no head, no checkpoint and no
// transcript: a fork may go there, and Threads does not list it.
func (m *model) empty(thread string) bool {
	th := m.threads[thread]
	return m.head(thread) == "" && len(m.list(thread)) == 0 && (th == nil || th.transcript == nil)
}

// transcript is what LoadThread must return.
func (m *model) transcript(thread string) string {
	if th := m.threads[thread]; th != nil && th.transcript != nil {
		return *th.transcript
	}
	return "[]"
}

// listed is what Threads must list: every thread that is not empty, in
// byte order.
func (m *model) listed() []string {
	var out []string
	for id := range m.threads {
		if !m.empty(id) {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

func (m *model) all() []*ckptstore.Checkpoint { return slices.Collect(maps.Values(m.cps)) }

// chain is the walk from thread's head through parents of the same thread,
// stopping at a missing, foreign or already visited checkpoint.
func (m *model) chain(thread string) []string {
	var out []string
	seen := map[string]bool{}
	for id := m.head(thread); id != "" && !seen[id]; {
		c := m.cps[id]
		if c == nil || c.ThreadID != thread {
			break
		}
		seen[id] = true
		out = append(out, id)
		id = c.ParentCheckpointID
	}
	return out
}

// machine runs one random sequence against a store and the model.
type machine struct {
	s       Store
	repeats []func(*rapid.T) // repeat a write that committed with an op token
	clock   *Clock
	m       *model
	leases  []*ckptstore.Lease // every lease the store granted
	ids     []string           // every checkpoint id ever used, so ids get reused
	fresh   int
	stats   map[string]int // outcome counts over all runs, for the log
}

var (
	modelThreads = []string{"t1", "t2", "t3", "f1", "f2"}
	modelBadIDs  = []string{"", "\xff", "a\xc3"}
)

func (s *suite) testModel(t *testing.T) {
	// rapid takes its number of checks from a flag, not per test. To let
	// slow stores ask for fewer, runs beyond the limit return at once
	// (cheap passing checks). Once a run fails, every later run — rapid's
	// shrinking and replay — is real, so the failure still reproduces.
	limit, matched, failed := s.opts.ModelChecks, 0, false
	stats := map[string]int{}
	rapid.Check(t, func(rt *rapid.T) {
		if limit > 0 && matched >= limit && !failed {
			return
		}
		ok := false
		defer func() {
			if !ok || rt.Failed() {
				failed = true
			} else {
				matched++
			}
		}()
		s.modelRun(t, rt, stats)
		ok = true
	})
	keys := slices.Sorted(maps.Keys(stats))
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "\n\t%6d  %s", stats[k], k)
	}
	t.Logf("model: %d random sequences matched; outcomes:%s", matched, b.String())
}

func (s *suite) modelRun(t *testing.T, rt *rapid.T, stats map[string]int) {
	opts, clock := leaseOptions()
	mc := &machine{s: s.newStore(t, opts), clock: clock, stats: stats,
		m: &model{now: clock.Now, cps: map[string]*ckptstore.Checkpoint{}, threads: map[string]*mThread{}}}
	rt.Repeat(map[string]func(*rapid.T){
		"Acquire":           mc.acquire,
		"Renew":             mc.renew,
		"Release":           mc.release,
		"Append":            mc.appendAny,
		"Append2":           mc.appendAny, // the richest action, twice as often
		"AppendOnHead":      mc.appendOnHead,
		"AppendOnHead2":     mc.appendOnHead, // appends that should work, twice as often
		"DeleteHead":        mc.deleteHead,
		"Get":               mc.get,
		"List":              mc.list,
		"Head":              mc.headOf,
		"BlobReferences":    mc.refs,
		"Advance":           mc.advance,
		"DeleteCheckpoints": mc.prune,
		"Fork":              mc.fork,
		"SaveThread":        mc.saveThread,
		"LoadThread":        mc.loadThread,
		"DeleteThread":      mc.deleteThread,
		"ListPage":          mc.listPage,
		"Threads":           mc.threadsPage,
		"Import":            mc.importBatch,
		"Import2":           mc.importBatch, // many outcomes to reach
		"WithOpToken":       mc.withOpToken,
		"RepeatOpToken":     mc.repeatOpToken,
	})
	mc.checkAll(rt)
}

// ---- drawing inputs ----

// pick returns an index drawn with the given weights. Index 0 should be
// the common case: rapid shrinks toward small values, so a shrunk failure
// keeps only the unusual choices it needs.
func pick(t *rapid.T, label string, weights ...int) int {
	sum := 0
	for _, w := range weights {
		sum += w
	}
	n := rapid.IntRange(0, sum-1).Draw(t, label)
	for i, w := range weights {
		if n < w {
			return i
		}
		n -= w
	}
	return len(weights) - 1
}

func (mc *machine) drawThread(t *rapid.T, label string) string {
	if pick(t, label+" invalid?", 19, 1) == 1 {
		return rapid.SampledFrom(modelBadIDs).Draw(t, label)
	}
	return rapid.SampledFrom(modelThreads).Draw(t, label)
}

// drawID returns a fresh id, a used one (stored or deleted) or an invalid
// one.
func (mc *machine) drawID(t *rapid.T, label string) string {
	switch pick(t, label+" kind", 14, 5, 1) {
	case 1:
		if len(mc.ids) > 0 {
			return rapid.SampledFrom(mc.ids).Draw(t, label)
		}
	case 2:
		return rapid.SampledFrom(modelBadIDs[1:]).Draw(t, label)
	}
	mc.fresh++
	return fmt.Sprintf("c%d", mc.fresh)
}

// drawRef returns an id to look up or to name as a head or parent: mostly
// used ones, sometimes none, unknown or invalid.
func (mc *machine) drawRef(t *rapid.T, label string) string {
	switch pick(t, label+" kind", 17, 1, 1, 1) {
	case 0:
		if len(mc.ids) > 0 {
			return rapid.SampledFrom(mc.ids).Draw(t, label)
		}
		return ""
	case 1:
		return ""
	case 2:
		return "unknown"
	default:
		return "\xff"
	}
}

// drawWriter returns a writer for a write to thread: mostly its live lease
// (taken now if there is none), else its latest lease (maybe stale), any
// lease, the live lease with another token or fence, or a writer with an
// invalid thread.
func (mc *machine) drawWriter(t *rapid.T, thread string) ckptstore.Writer {
	var latest *ckptstore.Lease
	for _, l := range mc.leases {
		if l.ThreadID == thread {
			latest = l
		}
	}
	switch pick(t, "writer kind", 12, 3, 2, 2, 1) {
	case 0:
		if validID(thread) {
			if w, ok := mc.liveWriter(t, thread); ok {
				return w
			}
		}
	case 1:
		if latest != nil {
			return latest.Writer
		}
	case 2:
		if len(mc.leases) > 0 {
			return rapid.SampledFrom(mc.leases).Draw(t, "writer lease").Writer
		}
	case 3:
		// The live lease with one field changed: the closest miss.
		if w, ok := mc.liveWriter(t, thread); ok && validID(thread) {
			if rapid.Bool().Draw(t, "forge token?") {
				w.OwnerToken += "x"
			} else {
				w.Fence += int64(rapid.SampledFrom([]int{-1, 1}).Draw(t, "fence shift"))
			}
			return w
		}
	case 4:
		return ckptstore.Writer{ThreadID: rapid.SampledFrom(modelBadIDs).Draw(t, "writer thread")}
	}
	return ckptstore.Writer{ThreadID: thread, OwnerToken: "none", Fence: 1}
}

// liveWriter returns the thread's live lease, taking it when the model says
// it is free; false when another live lease holds it.
func (mc *machine) liveWriter(t *rapid.T, thread string) (ckptstore.Writer, bool) {
	if mt := mc.m.threads[thread]; mt != nil && mt.lease != nil && mc.m.now().Before(mt.expiry) {
		return *mt.lease, true
	}
	l := mc.doAcquire(t.Context(), t, thread)
	if l == nil {
		return ckptstore.Writer{}, false
	}
	return l.Writer, true
}

// drawContent fills c's content; it returns true when it chose a defect
// that makes c invalid.
func (mc *machine) drawContent(t *rapid.T, c *ckptstore.Checkpoint, allowInvalid bool) bool {
	c.CreatedAt = rapid.SampledFrom([]float64{0, 1, 2, -1.5, 2.25, 1e6, -0.5, math.Copysign(0, -1)}).Draw(t, "createdAt")
	c.Reason = rapid.SampledFrom([]ckptstore.Reason{ckptstore.ReasonAutomatic, ckptstore.ReasonNamed, ckptstore.ReasonForkRoot}).Draw(t, "reason")
	if rapid.Bool().Draw(t, "label?") {
		c.Label = "v1"
	}
	for _, p := range []string{"a", "b", "x/y"} {
		switch rapid.IntRange(0, 2).Draw(t, "entry "+p) {
		case 1:
			c.Files = append(c.Files, testkit.File(p, rapid.IntRange(0, 3).Draw(t, "key "+p), 1))
		case 2:
			c.Files = append(c.Files, testkit.Dir(p))
		}
	}
	for i := rapid.IntRange(0, 2).Draw(t, "artifacts"); i > 0; i-- {
		c.Artifacts = append(c.Artifacts, testkit.Artifact(fmt.Sprint(i), rapid.IntRange(0, 2).Draw(t, "artifact key")))
	}
	if rapid.Bool().Draw(t, "conversation?") {
		c.Conversation = []byte(`[{"role":"user", "content":"hi"}]`)
	}
	if !allowInvalid || pick(t, "defect?", 9, 1) == 0 {
		return false
	}
	switch rapid.IntRange(0, 6).Draw(t, "defect") {
	case 0:
		c.CreatedAt = nan
	case 1:
		c.Files = append(c.Files, testkit.File("/abs", 1, 1))
	case 2:
		c.Files = append(c.Files, ckptstore.Entry{Path: "k", Kind: ckptstore.KindFile, BlobKey: "sandbox-files/sha256/" + hex64[:63] + "A", Size: 1})
	case 3:
		c.Files = append(c.Files, ckptstore.Entry{Path: "d", Kind: ckptstore.KindDir, Size: 1})
	case 4:
		a := testkit.Artifact("bad", 1)
		a.Name = ""
		c.Artifacts = append(c.Artifacts, a)
	case 5:
		c.Reason = "other"
	case 6:
		c.Conversation = []byte(`{}`)
	}
	return true
}

func (mc *machine) use(id string) {
	if validID(id) && id != "unknown" && !slices.Contains(mc.ids, id) {
		mc.ids = append(mc.ids, id)
	}
}

// ---- comparing ----

// agree fails the run unless err matches the model's want, and counts the
// outcome of op for the coverage log.
func (mc *machine) agree(t *rapid.T, op, what string, err, want error) {
	t.Helper()
	mc.stats[op+" → "+errName(want)]++
	if !wantErr(t, what+": store and model differ", err, want) {
		t.FailNow()
	}
}

func anyInvalid(ids ...string) bool {
	for _, id := range ids {
		if !validID(id) {
			return true
		}
	}
	return false
}

func optInvalid(ids ...string) bool {
	for _, id := range ids {
		if id != "" && !validID(id) {
			return true
		}
	}
	return false
}

// ---- actions ----

func (mc *machine) acquire(t *rapid.T) { mc.doAcquire(t.Context(), t, mc.drawThread(t, "thread")) }

// doAcquire calls AcquireWriter and checks it against the model; it
// returns the lease when one was granted.
func (mc *machine) doAcquire(ctx context.Context, t *rapid.T, th string) *ckptstore.Lease {
	l, err := mc.s.AcquireWriter(ctx, th)
	switch {
	case !validID(th):
		mc.agree(t, "AcquireWriter", "AcquireWriter", err, ckptstore.ErrInvalidID)
		return nil
	case mc.m.threads[th] != nil && mc.m.threads[th].lease != nil && mc.m.now().Before(mc.m.threads[th].expiry):
		mc.agree(t, "AcquireWriter", "AcquireWriter", err, ckptstore.ErrWriterConflict)
		return nil
	}
	mc.agree(t, "AcquireWriter", "AcquireWriter", err, nil)
	mt := mc.m.thread(th)
	want := mc.m.now().Add(LeaseDuration)
	switch {
	case l == nil:
		t.Fatalf("AcquireWriter(%q) returned nil and no error", th)
	case l.ThreadID != th || l.OwnerToken == "" || mt.tokens[l.OwnerToken]:
		t.Fatalf("AcquireWriter(%q) returned writer %+v: wrong thread, empty or reused token", th, l.Writer)
	case len(mt.tokens) > 0 && l.Fence <= mt.fence:
		t.Fatalf("AcquireWriter(%q) returned fence %d, not above the earlier %d", th, l.Fence, mt.fence)
	case !l.ExpiresAt.Equal(want) || l.RenewAfter != RenewAfter:
		t.Fatalf("AcquireWriter(%q): ExpiresAt %v, RenewAfter %v; want %v, %v", th, l.ExpiresAt, l.RenewAfter, want, RenewAfter)
	}
	w := l.Writer
	mt.lease, mt.expiry, mt.fence, mt.tokens[l.OwnerToken] = &w, want, l.Fence, true
	mc.leases = append(mc.leases, l)
	return l
}

func (mc *machine) pickLease(t *rapid.T) *ckptstore.Lease {
	if len(mc.leases) == 0 {
		t.Skip("no lease granted yet")
	}
	// Mostly the newest leases, which are more often live.
	i := len(mc.leases) - 1 - rapid.IntRange(0, len(mc.leases)-1).Draw(t, "lease age")
	return mc.leases[i]
}

// forge returns a copy of l (with the same store behind it) whose writer
// is usually l's, sometimes with the fence one off or another token.
func forge(t *rapid.T, l *ckptstore.Lease) *ckptstore.Lease {
	x := *l
	switch pick(t, "forged?", 8, 1, 1, 1) {
	case 1:
		x.Fence++
	case 2:
		x.Fence--
	case 3:
		x.OwnerToken += "x"
	}
	return &x
}

func (mc *machine) renew(t *rapid.T) {
	l := forge(t, mc.pickLease(t))
	w := l.Writer
	exp, err := l.Renew(t.Context())
	if !mc.m.current(w.ThreadID, w) {
		mc.agree(t, "Renew", "Renew", err, ckptstore.ErrWriterLost)
		return
	}
	mc.agree(t, "Renew", "Renew", err, nil)
	want := mc.m.now().Add(LeaseDuration)
	if !exp.Equal(want) || !l.ExpiresAt.Equal(want) {
		t.Fatalf("Renew returned %v, ExpiresAt %v; want %v", exp, l.ExpiresAt, want)
	}
	mc.m.threads[w.ThreadID].expiry = want
}

func (mc *machine) release(t *rapid.T) {
	l := forge(t, mc.pickLease(t))
	l.Release(t.Context())
	if th := mc.m.threads[l.ThreadID]; th != nil && th.lease != nil && *th.lease == l.Writer {
		th.lease = nil
	}
}

func (mc *machine) advance(t *rapid.T) {
	d := time.Duration(rapid.SampledFrom([]int{1, 24, 25, 50, 99, 100, 101, 250}).Draw(t, "advance ms")) * time.Millisecond
	if len(mc.leases) > 0 && rapid.Bool().Draw(t, "to an expiry?") {
		// Land exactly on (or just before) the newest lease's expiry.
		l := mc.leases[len(mc.leases)-1]
		th := mc.m.threads[l.ThreadID]
		to := th.expiry.Add(-time.Duration(rapid.IntRange(0, 1).Draw(t, "before by ms")) * time.Millisecond)
		if d = to.Sub(mc.clock.Now()); d <= 0 {
			t.Skip("that expiry has passed")
		}
	}
	mc.clock.Advance(d)
}

func (mc *machine) appendAny(t *rapid.T) {
	th := mc.drawThread(t, "thread")
	c := &ckptstore.Checkpoint{ID: mc.drawID(t, "id"), ThreadID: th}
	expected := mc.m.head(th)
	if pick(t, "expected other?", 4, 1) == 1 {
		expected = mc.drawRef(t, "expected")
	}
	c.ParentCheckpointID = expected
	if pick(t, "parent other?", 6, 1) == 1 {
		c.ParentCheckpointID = mc.drawRef(t, "parent")
	}
	bad := mc.drawContent(t, c, true)
	mc.doAppend(t.Context(), t, c, expected, mc.drawWriter(t, th), bad)
}

func (mc *machine) appendOnHead(t *rapid.T) {
	c, w := mc.drawOnHead(t, rapid.SampledFrom(modelThreads).Draw(t, "thread"))
	mc.doAppend(t.Context(), t, c, c.ParentCheckpointID, w, false)
}

// drawOnHead draws a valid new checkpoint on th's head and the writer to
// append it with: th's live lease, taken now if it is free.
func (mc *machine) drawOnHead(t *rapid.T, th string) (*ckptstore.Checkpoint, ckptstore.Writer) {
	mc.fresh++
	c := &ckptstore.Checkpoint{ID: fmt.Sprintf("c%d", mc.fresh), ThreadID: th, ParentCheckpointID: mc.m.head(th)}
	mc.drawContent(t, c, false)
	w, _ := mc.liveWriter(t, th)
	return c, w
}

// doAppend calls Append and checks it against the model; it reports
// whether the append was stored.
func (mc *machine) doAppend(ctx context.Context, t *rapid.T, c *ckptstore.Checkpoint, expected string, w ckptstore.Writer, bad bool) bool {
	stored := cloneCP(c)
	err := mc.s.Append(ctx, c, expected, w)
	var want error
	switch {
	case anyInvalid(c.ID, c.ThreadID, w.ThreadID) || optInvalid(expected, c.ParentCheckpointID):
		want = ckptstore.ErrInvalidID
	case bad:
		want = ckptstore.ErrInvalidEntry
	case !mc.m.current(c.ThreadID, w):
		want = ckptstore.ErrWriterLost
	case mc.m.cps[c.ID] != nil:
		want = ckptstore.ErrDuplicateID
	case mc.m.head(c.ThreadID) != expected:
		want = ckptstore.ErrConflict
	case c.ParentCheckpointID != expected:
		want = ckptstore.ErrParentMismatch
	}
	mc.agree(t, "Append", fmt.Sprintf("Append(%q on %q, expected %q)", c.ID, c.ThreadID, expected), err, want)
	if want == nil {
		mc.m.cps[c.ID] = stored
		mc.m.thread(c.ThreadID).head = c.ID
		mc.use(c.ID)
	}
	return want == nil
}

func (mc *machine) deleteHead(t *rapid.T) {
	th := mc.drawThread(t, "thread")
	id := mc.m.head(th)
	if id == "" || pick(t, "other id?", 5, 1) == 1 {
		id = mc.drawRef(t, "id")
	}
	w := mc.drawWriter(t, th)
	err := mc.s.DeleteHead(t.Context(), th, id, w)
	var want error
	c := mc.m.cps[id]
	switch {
	case anyInvalid(th, id, w.ThreadID):
		want = ckptstore.ErrInvalidID
	case !mc.m.current(th, w):
		want = ckptstore.ErrWriterLost
	case mc.m.head(th) != id || c == nil || c.ThreadID != th:
		want = ckptstore.ErrNotHead
	}
	mc.agree(t, "DeleteHead", fmt.Sprintf("DeleteHead(%q, %q)", th, id), err, want)
	if want == nil {
		delete(mc.m.cps, id)
		mc.m.threads[th].head = c.ParentCheckpointID
		mc.refs(t) // counts fall, and a key at 0 is forgotten
	}
}

func (mc *machine) prune(t *rapid.T) {
	th := mc.drawThread(t, "thread")
	keep := []int{1, 2, 3, 0, -1}[pick(t, "keep", 3, 3, 2, 1, 1)]
	w := mc.drawWriter(t, th)
	deleted, err := mc.s.DeleteCheckpoints(t.Context(), th, keep, w)
	var want error
	switch {
	case anyInvalid(th, w.ThreadID):
		want = ckptstore.ErrInvalidID
	case keep < 1:
		want = ckptstore.ErrInvalidEntry
	case !mc.m.current(th, w):
		want = ckptstore.ErrWriterLost
	}
	mc.agree(t, "DeleteCheckpoints", fmt.Sprintf("DeleteCheckpoints(%q, %d)", th, keep), err, want)
	if want != nil {
		return
	}
	var doomed []string
	if ch := mc.m.chain(th); len(ch) > keep {
		doomed = ch[keep:]
		slices.Reverse(doomed)
	}
	require.Equal(t, orNil(doomed), orNil(deleted), "DeleteCheckpoints(%q, %d) deleted, against the model", th, keep)
	for _, id := range doomed {
		delete(mc.m.cps, id)
	}
	if len(doomed) > 0 {
		mc.refs(t)
	}
}

func (mc *machine) fork(t *rapid.T) {
	in := ckptstore.ForkInput{
		SourceThreadID:          mc.drawThread(t, "source thread"),
		SourceCheckpointID:      mc.drawRef(t, "source checkpoint"),
		DestinationThreadID:     mc.drawThread(t, "destination thread"),
		DestinationCheckpointID: mc.drawID(t, "destination id"),
		CreatedAt:               rapid.SampledFrom([]float64{3, -7.5, 0.5, nan}).Draw(t, "createdAt"),
	}
	// Mostly a stored checkpoint with its own thread, into an empty thread.
	if all := mc.m.all(); len(all) > 0 && pick(t, "real source?", 3, 1) == 0 {
		sortLikeList(all) // map order is random; rapid needs the same draw to give the same value
		src := rapid.SampledFrom(all).Draw(t, "source")
		in.SourceThreadID, in.SourceCheckpointID = src.ThreadID, src.ID
	}
	var empty []string
	for _, th := range modelThreads {
		if mc.m.empty(th) {
			empty = append(empty, th)
		}
	}
	if len(empty) > 0 && pick(t, "empty destination?", 3, 1) == 0 {
		in.DestinationThreadID = rapid.SampledFrom(empty).Draw(t, "empty destination")
	}
	in.Writer = mc.drawWriter(t, in.DestinationThreadID)
	got, err := mc.s.ForkFromCheckpoint(t.Context(), in)
	src := mc.m.cps[in.SourceCheckpointID]
	var want error
	switch {
	case anyInvalid(in.SourceThreadID, in.SourceCheckpointID, in.DestinationThreadID, in.DestinationCheckpointID, in.Writer.ThreadID):
		want = ckptstore.ErrInvalidID
	case math.IsNaN(in.CreatedAt):
		want = ckptstore.ErrInvalidEntry
	case in.SourceThreadID == in.DestinationThreadID:
		want = ckptstore.ErrForkSourceThreadMismatch
	case src == nil:
		want = ckptstore.ErrForkSourceNotFound
	case src.ThreadID != in.SourceThreadID:
		want = ckptstore.ErrForkSourceThreadMismatch
	case !mc.m.current(in.DestinationThreadID, in.Writer):
		want = ckptstore.ErrWriterLost
	case !mc.m.empty(in.DestinationThreadID) || mc.m.cps[in.DestinationCheckpointID] != nil:
		want = ckptstore.ErrForkDestinationNotEmpty
	}
	mc.agree(t, "ForkFromCheckpoint", fmt.Sprintf("ForkFromCheckpoint(%+v)", in), err, want)
	if want != nil {
		return
	}
	root := wantForkRoot(src, in)
	mustCP(t, got, root, "ForkFromCheckpoint returned")
	mc.m.cps[root.ID] = root
	mc.m.thread(root.ThreadID).head = root.ID
	mc.use(root.ID)
	tr := string(canon(root).Conversation)
	mc.m.thread(root.ThreadID).transcript = &tr
}

// agreeRead checks the error of the read op of id against the model:
// ErrInvalidID for an invalid id, else none. It reports whether the read
// succeeded, so that its result is to be compared.
func (mc *machine) agreeRead(t *rapid.T, op, id string, err error) bool {
	t.Helper()
	if !validID(id) {
		mc.agree(t, op, op, err, ckptstore.ErrInvalidID)
		return false
	}
	mc.agree(t, op, op, err, nil)
	return true
}

func (mc *machine) get(t *rapid.T) {
	id := mc.drawRef(t, "id")
	if got, err := mc.s.Get(t.Context(), id); mc.agreeRead(t, "Get", id, err) {
		mustCP(t, got, mc.m.cps[id], "Get(%q)", id)
	}
}

func (mc *machine) list(t *rapid.T) {
	th := mc.drawThread(t, "thread")
	if got, err := mc.s.List(t.Context(), th); mc.agreeRead(t, "List", th, err) {
		mustCPs(t, got, mc.m.list(th), "List(%q)", th)
	}
}

func (mc *machine) headOf(t *rapid.T) {
	th := mc.drawThread(t, "thread")
	if got, err := mc.s.GetHead(t.Context(), th); mc.agreeRead(t, "Head", th, err) && got != mc.m.head(th) {
		t.Fatalf("Head(%q) = %q, model says %q", th, got, mc.m.head(th))
	}
}

func (mc *machine) refs(t *rapid.T) {
	got, err := mc.s.ListBlobReferences(t.Context())
	mc.agree(t, "BlobReferences", "BlobReferences", err, nil)
	mustRefList(t, got, testkit.Recount(mc.m.all()), "BlobReferences")
}

// checkAll compares the whole store with the model.
func (mc *machine) checkAll(t *rapid.T) {
	var stored []*ckptstore.Checkpoint
	for _, th := range modelThreads {
		h, err := mc.s.GetHead(t.Context(), th)
		mc.agree(t, "final read", "Head", err, nil)
		if want := mc.m.head(th); h != want {
			t.Fatalf("at the end: Head(%q) = %q, model says %q", th, h, want)
		}
		l, err := mc.s.List(t.Context(), th)
		mc.agree(t, "final read", "List", err, nil)
		mustCPs(t, l, mc.m.list(th), "at the end: List(%q)", th)
		stored = append(stored, l...)
		m, err := mc.s.LoadThread(t.Context(), th)
		mc.agree(t, "final read", "LoadThread", err, nil)
		if want := mc.m.transcript(th); string(m) != want {
			t.Fatalf("at the end: LoadThread(%q) = %q, model says %q", th, m, want)
		}
	}
	for _, id := range mc.ids {
		c, err := mc.s.Get(t.Context(), id)
		mc.agree(t, "final read", "Get", err, nil)
		mustCP(t, c, mc.m.cps[id], "at the end: Get(%q)", id)
	}
	threads, next, err := mc.s.Threads(t.Context(), "", 0)
	mc.agree(t, "final read", "Threads", err, nil)
	require.Equal(t, orNil(mc.m.listed()), orNil(threads), "at the end: Threads, against the model")
	require.Empty(t, next, "at the end: Threads' next cursor")
	got, err := mc.s.ListBlobReferences(t.Context())
	mc.agree(t, "final read", "BlobReferences", err, nil)
	mustRefList(t, got, testkit.Recount(stored), "at the end: BlobReferences differ from a recount of the stored checkpoints")
	mustRefList(t, got, testkit.Recount(mc.m.all()), "at the end: BlobReferences differ from the model")
}
