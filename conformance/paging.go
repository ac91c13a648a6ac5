package conformance

// ListPage and Threads: limits,
// List's order and its reverse, cursors that name positions, and paging
// that neither skips nor repeats a checkpoint (or thread) that exists for
// the whole paging while others are added and deleted between pages.

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

// fill adds n checkpoints to thread with w, a chain on its head, with
// createdAt values that List order shuffles (and some ties), and returns
// their ids. Beyond 100 on an empty thread they go in Imports of 100: a
// thousand appends through a faulty network would dominate the suite.
func (e *env) fill(thread string, w ckptstore.Writer, prefix string, n int) []string {
	e.t.Helper()
	head := e.head(thread)
	out := make([]string, 0, n)
	// Import sets a head only on a thread without one (or the same), so
	// the first batch sets the last id as the head, ahead of its checkpoint.
	batched := n > 100 && head == ""
	last := fmt.Sprintf("%s%04d", prefix, n-1)
	var batch []*ckptstore.Checkpoint
	flush := func() {
		if len(batch) > 0 {
			first := len(out) <= 100
			_, err := e.s.Import(e.ctx, ckptstore.ImportBatch{ThreadID: thread, Checkpoints: batch, SetHead: first, Head: last, Writer: w})
			require.NoError(e.t, err, "Import of a batch to fill "+thread)
			batch = nil
		}
	}
	for i := range n {
		c := testkit.Checkpoint(thread, fmt.Sprintf("%s%04d", prefix, i), head, float64((i*7919)%(n/2+1))) // two of most values: ties by id
		if i%5 == 0 {
			c.Files = []ckptstore.Entry{testkit.File("f", i, 1)}
		}
		if batched {
			if len(batch) == 100 {
				flush()
			}
			batch = append(batch, c)
		} else {
			require.NoError(e.t, e.s.Append(e.ctx, c, head, w), "Append "+c.ID)
		}
		head = c.ID
		out = append(out, c.ID)
	}
	flush()
	// Only the thread: List covers its checkpoints in snapshots, and a
	// Get for each of a thousand ids would make every snapshot slow.
	e.track([]string{thread})
	return out
}

func reversed[T any](s []T) []T {
	r := slices.Clone(s)
	slices.Reverse(r)
	return r
}

// page calls ListPage and fails the test on an error.
func (e *env) page(thread string, opt ckptstore.ListOptions) ([]*ckptstore.Checkpoint, string) {
	e.t.Helper()
	page, next, err := e.s.ListPage(e.ctx, thread, opt)
	require.NoError(e.t, err, "ListPage(%q, %+v)", thread, opt)
	return page, next
}

func (s *suite) testListPage(t *testing.T) {
	t.Run("EmptyAndUnknown", s.listPageEmptyAndUnknown)
	t.Run("Limits", s.listPageLimits)
	t.Run("Order", s.listPageOrder)
	t.Run("CursorIsAPosition", s.listPageCursorIsAPosition)
	t.Run("CursorFromAnotherThread", s.listPageCursorFromAnotherThread)
	t.Run("Copies", s.listPageCopies)
	t.Run("OffChain", s.listPageOffChain)
	t.Run("WhileWriting", s.listPageWhileWriting)
}

func (s *suite) listPageEmptyAndUnknown(t *testing.T) {
	e := s.env(t)
	e.acquire("leased")
	cursor := driver.EncodeCursor(driver.Position{CreatedAt: 1, ID: "x"})
	for _, th := range []string{"unknown", "leased"} {
		for _, opt := range []ckptstore.ListOptions{{}, {Reverse: true}, {After: cursor}, {After: cursor, Reverse: true, Limit: 1}} {
			page, next := e.page(th, opt)
			if len(page) != 0 || next != "" {
				t.Errorf("ListPage(%q, %+v) = %d checkpoints, next %q; want none", th, opt, len(page), next)
			}
		}
	}
}

func (s *suite) listPageLimits(t *testing.T) {
	e, w := s.leased(t, "t")
	e.fill("t", w, "c", 1001)
	all := e.list("t")
	inOrder := map[bool][]*ckptstore.Checkpoint{false: all, true: reversed(all)} // by reverse
	for _, tc := range []struct {
		limit, want int
	}{{0, 100}, {1, 1}, {2, 2}, {100, 100}, {999, 999}, {1000, 1000}} {
		for _, rev := range []bool{false, true} {
			page, next := e.page("t", ckptstore.ListOptions{Limit: tc.limit, Reverse: rev})
			wantCPs(t, page, inOrder[rev][:tc.want], "ListPage(limit %d, reverse %v)", tc.limit, rev)
			if next == "" {
				t.Errorf("ListPage(limit %d, reverse %v) of 1001 checkpoints: next is empty", tc.limit, rev)
			}
		}
	}
	// 1000 and then the last one; then nothing follows.
	for _, rev := range []bool{false, true} {
		want := inOrder[rev]
		_, next := e.page("t", ckptstore.ListOptions{Limit: 1000, Reverse: rev})
		last, end := e.page("t", ckptstore.ListOptions{After: next, Limit: 1000, Reverse: rev})
		wantCPs(t, last, want[1000:], "the second page of 1000 (reverse %v)", rev)
		assert.Empty(t, end, "the second page of 1000 (reverse %v): next", rev)
		// A page that ends exactly at the end says so: next is ""
		// when nothing follows.
		_, next = e.page("t", ckptstore.ListOptions{Limit: 999, Reverse: rev})
		two, end := e.page("t", ckptstore.ListOptions{After: next, Limit: 2, Reverse: rev})
		wantCPs(t, two, want[999:], "the last two (reverse %v)", rev)
		assert.Empty(t, end, "the last two (reverse %v): next", rev)
	}
	for _, limit := range []int{1001, -1, -1000, 1 << 31} {
		page, next, err := e.s.ListPage(e.ctx, "t", ckptstore.ListOptions{Limit: limit})
		if wantErr(t, fmt.Sprintf("ListPage(limit %d)", limit), err, ckptstore.ErrInvalidEntry) && (len(page) > 0 || next != "") {
			t.Errorf("ListPage(limit %d) failed but returned %d checkpoints, next %q", limit, len(page), next)
		}
	}
}

func (s *suite) listPageOrder(t *testing.T) {
	// Ties by the bytes of the id, -0 equal to 0, negative and
	// fractional createdAt; every page size, both directions.
	e, w := s.leased(t, "t")
	for _, it := range []struct {
		id string
		at float64
	}{
		{"é", 5}, {"a", 5}, {"B", 5}, {"😀", 5}, {"\uff21", 5}, {"\ue000", 5},
		{"z0", 0}, {"y0", math.Copysign(0, -1)}, {"x0", 0},
		{"n", -1.5}, {"m", -1e300}, {"p", 0.25}, {"q", 1e300}, {"r", 5e-324}, {"s", -5e-324},
		{"a\x00", 5}, {"ab", 5},
	} {
		e.append(testkit.Checkpoint("t", it.id, "", it.at), w)
	}
	all := e.list("t")
	for _, limit := range []int{1, 2, 3, 7, 16, 17, 100} {
		wantCPs(t, e.pageAll("t", ckptstore.ListOptions{Limit: limit}), all, "pages of %d", limit)
		wantCPs(t, e.pageAll("t", ckptstore.ListOptions{Limit: limit, Reverse: true}), reversed(all), "reverse pages of %d", limit)
	}
}

func (s *suite) listPageCursorIsAPosition(t *testing.T) {
	e, w := s.leased(t, "t")
	for i, id := range []string{"a", "b", "c", "d", "e"} {
		e.append(testkit.Checkpoint("t", id, "", float64(10*(i+1))), w) // a 10, b 20, …, e 50 (the head)
	}
	// Reverse from the newest: the first page ends at the head, which
	// is then deleted; the next page goes on from its position.
	page, next := e.page("t", ckptstore.ListOptions{Limit: 1, Reverse: true})
	require.Equal(t, []string{"e"}, testkit.IDs(page), "first reverse page")
	require.NoError(t, e.s.DeleteHead(e.ctx, "t", "e", w), "DeleteHead e")
	// Added behind the cursor (newer than e): not seen. Added ahead
	// of it: seen in its place.
	for _, it := range []struct {
		id string
		at float64
	}{{"late", 60}, {"f-at-e", 50}, {"between", 35}} {
		e.append(testkit.Checkpoint("t", it.id, "", it.at), w)
	}
	rest := e.pageAll("t", ckptstore.ListOptions{After: next, Limit: 2, Reverse: true})
	// "f-at-e" has e's createdAt and sorts after "e" by id: behind
	// the cursor in reverse.
	assert.Equal(t, []string{"d", "between", "c", "b", "a"}, testkit.IDs(rest), "after deleting the cursor's checkpoint, reverse paging")
	// Forward, from a position no checkpoint has.
	after := driver.EncodeCursor(driver.Position{CreatedAt: 30, ID: "zzz"})
	assert.Equal(t, []string{"between", "d", "f-at-e", "late"}, testkit.IDs(e.pageAll("t", ckptstore.ListOptions{After: after, Limit: 2})), "forward from (30, zzz)")
	// At a position of equal createdAt, the id decides.
	after = driver.EncodeCursor(driver.Position{CreatedAt: 50, ID: "f-at-e"})
	assert.Equal(t, []string{"late"}, testkit.IDs(e.pageAll("t", ckptstore.ListOptions{After: after})), "forward from (50, f-at-e)")
	assert.Equal(t, []string{"d", "between", "c", "b", "a"}, testkit.IDs(e.pageAll("t", ckptstore.ListOptions{After: after, Reverse: true, Limit: 3})), "reverse from (50, f-at-e)")
	// Forward: the first page ends at the head, which is deleted.
	e.append(testkit.Checkpoint("t", "lo", "", 5), w)
	page, next = e.page("t", ckptstore.ListOptions{Limit: 1})
	require.Equal(t, []string{"lo"}, testkit.IDs(page), "first page")
	require.NoError(t, e.s.DeleteHead(e.ctx, "t", "lo", w), "DeleteHead lo")
	assert.Equal(t, []string{"a", "b", "c", "between", "d", "f-at-e", "late"}, testkit.IDs(e.pageAll("t", ckptstore.ListOptions{After: next, Limit: 4})), "after deleting the cursor's checkpoint, forward paging")
	// -0 and 0 are one position.
	after = driver.EncodeCursor(driver.Position{CreatedAt: math.Copysign(0, -1), ID: "a"})
	if got := testkit.IDs(e.pageAll("t", ckptstore.ListOptions{After: after, Reverse: true})); len(got) != 0 {
		t.Errorf("reverse from (-0, a) = %q, want none", got)
	}
}

func (s *suite) listPageCursorFromAnotherThread(t *testing.T) {
	e := s.env(t)
	e.fill("t", e.acquire("t").Writer, "t", 10)
	e.fill("u", e.acquire("u").Writer, "u", 10)
	_, next := e.page("t", ckptstore.ListOptions{Limit: 4})
	got := e.pageAll("u", ckptstore.ListOptions{After: next, Limit: 3})
	t4 := e.list("t")[3]
	var want []*ckptstore.Checkpoint
	for _, c := range e.list("u") {
		if c.CreatedAt > t4.CreatedAt || c.CreatedAt == t4.CreatedAt && c.ID > t4.ID {
			want = append(want, c)
		}
	}
	wantCPs(t, got, want, "u paged from t's cursor")
}

func (s *suite) listPageCopies(t *testing.T) {
	e, w := s.leased(t, "t")
	want := e.appendKept(richCP("t", "c1", ""), w)
	page, _ := e.page("t", ckptstore.ListOptions{})
	for _, x := range page {
		scribble(x)
	}
	wantCP(t, e.get("c1"), want, "changing what ListPage returned changed the store")
	page, _ = e.page("t", ckptstore.ListOptions{Reverse: true})
	wantCPs(t, page, []*ckptstore.Checkpoint{want}, "ListPage after scribbling")
}

func (s *suite) listPageOffChain(t *testing.T) {
	e, w := s.chained(t, "t", "a", "b")
	x := testkit.Checkpoint("t", "x", "nowhere", 1000.5)
	e.doImport("Import", ckptstore.ImportBatch{ThreadID: "t", Checkpoints: []*ckptstore.Checkpoint{x}, Writer: w}, 1)
	assert.Equal(t, []string{"a", "x", "b"}, testkit.IDs(e.pageAll("t", ckptstore.ListOptions{Limit: 1})), "pages, with the checkpoint off the chain")
}

func (s *suite) listPageWhileWriting(t *testing.T) {
	for _, rev := range []bool{false, true} {
		t.Run(fmt.Sprintf("reverse=%v", rev), func(t *testing.T) { s.pageWhileWriting(t, rev) })
	}
}

// pagingRun is one run of pageWhileWriting: thread t of the store, the
// lease, and what the writes between pages and the pages themselves did.
type pagingRun struct {
	t          *testing.T
	e          *env
	w          ckptstore.Writer
	rng        *rand.Rand
	head       string
	alive      map[string]*ckptstore.Checkpoint // every checkpoint t holds now
	throughout map[string]bool                  // the ones that existed from start to end
	seen       map[string]bool                  // the ones a page returned
	got        []*ckptstore.Checkpoint          // the pages, joined
	fresh      int                              // checkpoints added between pages
	deletes    int                              // heads deleted between pages
}

// pageWhileWriting pages through a thread while, between pages, new
// checkpoints are appended (ahead of and behind the cursor, some at the
// cursor's own createdAt) and heads are deleted, some of them the
// checkpoint the cursor came from. Every checkpoint that exists from the
// first page to the last must come exactly once, in order; nothing comes
// twice, and nothing comes that was deleted before the page that returned
// it.
func (s *suite) pageWhileWriting(t *testing.T, reverse bool) {
	e := s.env(t)
	r := &pagingRun{t: t, e: e, w: e.acquire("t").Writer,
		rng:   rand.New(rand.NewPCG(7, map[bool]uint64{false: 1, true: 2}[reverse])),
		alive: map[string]*ckptstore.Checkpoint{}, throughout: map[string]bool{}, seen: map[string]bool{}}
	for i := range 40 {
		r.add(fmt.Sprintf("s%02d", i), float64(r.rng.IntN(20)))
	}
	for id := range r.alive {
		r.throughout[id] = true
	}
	opt := ckptstore.ListOptions{Limit: 2, Reverse: reverse}
	for pages := 0; ; pages++ {
		require.LessOrEqual(t, pages, maxPages, "paging does not end")
		page, next := e.page("t", opt)
		r.take(page)
		if next == "" {
			break
		}
		opt.After = next
		r.writeBetween(page[len(page)-1])
	}
	r.check(reverse)
}

// add appends id at createdAt at on the head.
func (r *pagingRun) add(id string, at float64) {
	c := testkit.Checkpoint("t", id, r.head, at)
	require.NoError(r.t, r.e.s.Append(r.e.ctx, c, r.head, r.w), "Append "+id)
	r.head = id
	r.alive[id] = c
}

// take records a page: no checkpoint twice, none after its delete.
func (r *pagingRun) take(page []*ckptstore.Checkpoint) {
	for _, c := range page {
		assert.False(r.t, r.seen[c.ID], "checkpoint %q came twice", c.ID)
		assert.NotNil(r.t, r.alive[c.ID], "checkpoint %q came after it was deleted", c.ID)
		r.seen[c.ID] = true
	}
	r.got = append(r.got, page...)
}

// writeBetween writes between two pages, last being the last checkpoint
// returned: appends anywhere, including at last's createdAt; deletes of
// the head (often new, sometimes last itself); now and then a prune.
func (r *pagingRun) writeBetween(last *ckptstore.Checkpoint) {
	for range r.rng.IntN(4) {
		r.fresh++
		at := float64(r.rng.IntN(20))
		if r.rng.IntN(3) == 0 {
			at = last.CreatedAt
		}
		r.add(fmt.Sprintf("n%03d", r.fresh), at)
	}
	if r.rng.IntN(2) == 0 {
		// Heads: mostly new checkpoints, sometimes, once those are gone,
		// the old ones, one of which may be at the cursor.
		for range r.rng.IntN(3) {
			c := r.alive[r.head]
			if c == nil {
				break
			}
			require.NoError(r.t, r.e.s.DeleteHead(r.e.ctx, "t", r.head, r.w), "DeleteHead "+r.head)
			r.deletes++
			r.gone(r.head)
			r.head = c.ParentCheckpointID
		}
	}
	if r.rng.IntN(8) == 0 {
		deleted, err := r.e.s.DeleteCheckpoints(r.e.ctx, "t", 30, r.w)
		require.NoError(r.t, err, "DeleteCheckpoints")
		for _, id := range deleted {
			r.gone(id)
		}
	}
}

// gone records the delete of id.
func (r *pagingRun) gone(id string) {
	delete(r.alive, id)
	delete(r.throughout, id)
}

// check proves, once the pages end, that every checkpoint that lived
// throughout came, that the pages kept List's order (or its reverse), and
// that the run wrote enough to make its point.
func (r *pagingRun) check(reverse bool) {
	for id := range r.throughout {
		assert.True(r.t, r.seen[id], "checkpoint %q existed throughout the paging but never came", id)
	}
	for i := 1; i < len(r.got); i++ {
		a, b := r.got[i-1], r.got[i]
		less := a.CreatedAt < b.CreatedAt || a.CreatedAt == b.CreatedAt && a.ID < b.ID
		if less == reverse {
			r.t.Errorf("pages out of order: %q (%v) before %q (%v)", a.ID, a.CreatedAt, b.ID, b.CreatedAt)
		}
	}
	if len(r.throughout) < 15 || r.fresh < 10 || r.deletes < 10 {
		r.t.Fatalf("%d checkpoints lived throughout, %d were added and %d deleted: the test lost its point",
			len(r.throughout), r.fresh, r.deletes)
	}
}

// wantThreads checks that a full walk of Threads gives want.
func wantThreads(e *env, what string, want ...string) {
	e.t.Helper()
	assert.Equal(e.t, orNil(want), orNil(e.allThreads()), "%s: Threads", what)
}

func (s *suite) testThreads(t *testing.T) {
	t.Run("WhatCounts", s.threadsWhatCounts)
	t.Run("ByteOrder", s.threadsByteOrder)
	t.Run("Paging", s.threadsPaging)
}

func (s *suite) threadsWhatCounts(t *testing.T) {
	e := s.env(t)
	wantThreads(e, "empty store")
	l := e.acquire("leased")
	wantThreads(e, "a lease alone")
	l.Release(e.ctx)
	wantThreads(e, "a released lease")
	w := e.chain("t", nil, "a")
	wantThreads(e, "one checkpoint", "t")
	require.NoError(t, e.s.DeleteHead(e.ctx, "t", "a", w), "DeleteHead a")
	wantThreads(e, "emptied by DeleteHead")
	wp := e.chain("p", nil, "p1", "p2")
	e.prune("p", 1, wp)
	require.NoError(t, e.s.DeleteHead(e.ctx, "p", "p2", wp), "DeleteHead p2")
	wantThreads(e, "a head whose checkpoint is gone", "p")
	e.save("s", `[]`)
	e.wantTranscript("s", `[]`)
	e.chain("src", nil, "s1")
	require.NoError(t, e.forkErr(forkInput("src", "s1", "fork", "f1", 1, e.acquire("fork").Writer)), "ForkFromCheckpoint")
	var want []string
	want = append(want, "fork", "p", "s", "src")
	wantThreads(e, "after a prune, a transcript and a fork", want...)
	wt := e.chain("tmp", nil, "tmp1")
	e.save("tmp", `[1]`)
	e.deleteThread("tmp", wt, 1)
	wantThreads(e, "after DeleteThread", want...)
}

func (s *suite) threadsByteOrder(t *testing.T) {
	e := s.env(t)
	ids := []string{"é", "a", "B", "😀", "\uff21", "\ue000", "a\x00", "ab", "a b", "A", "{x}", "t:1"}
	for i, th := range ids {
		e.chain(th, nil, fmt.Sprintf("c%d", i))
	}
	want := slices.Clone(ids)
	sort.Strings(want) // Go compares strings by bytes
	wantThreads(e, "byte order", want...)
}

func (s *suite) threadsPaging(t *testing.T) {
	e := s.env(t)
	var all []string
	writers := map[string]ckptstore.Writer{}
	for i := range 25 {
		th := fmt.Sprintf("t%02d", i)
		writers[th] = e.chain(th, nil, th+"-c")
		all = append(all, th)
	}
	for _, limit := range []int{1, 2, 7, 24, 25, 26, 0, 1000} {
		got, err := e.pageThreads("", limit)
		require.NoError(t, err, "Threads")
		assert.Equal(t, all, got, "pages of %d", limit)
	}
	page, next, err := e.s.Threads(e.ctx, "", 10)
	require.NoError(t, err, "Threads")
	if !slices.Equal(page, all[:10]) || next == "" {
		t.Errorf("Threads(\"\", 10) = %q, next %q; want %q and a cursor", page, next, all[:10])
	}
	// Between pages: a thread added before the cursor is not seen,
	// one after it is; a thread emptied after the cursor is not, and
	// the thread at the cursor being emptied changes nothing.
	e.chain("t05x", nil, "early")
	e.chain("t15x", nil, "late")
	for _, th := range []string{"t09", "t20"} {
		require.NoError(t, e.s.DeleteHead(e.ctx, th, th+"-c", writers[th]), "DeleteHead")
	}
	rest, err := e.pageThreads(next, 4)
	require.NoError(t, err, "Threads from the cursor")
	want := append(slices.Clone(all[10:16]), "t15x")
	want = append(want, all[16:20]...)
	want = append(want, all[21:]...)
	assert.Equal(t, want, rest, "Threads after adding between pages")
	for _, limit := range []int{-1, 1001, math.MaxInt} {
		e.fails(fmt.Sprintf("Threads(limit %d)", limit), ckptstore.ErrInvalidEntry, func() error { return errOf2(e.s.Threads(e.ctx, "", limit)) })
	}
	e.fails("Threads with a list cursor", ckptstore.ErrInvalidEntry, func() error {
		return errOf2(e.s.Threads(e.ctx, driver.EncodeCursor(driver.Position{CreatedAt: 1, ID: "t"}), 1))
	})
}
