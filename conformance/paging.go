package conformance

// ListPage (ckptstore.Pager) and Threads (ckptstore.ThreadLister): limits,
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

	"github.com/ckptstore/ckptstore"
)

// fill adds n checkpoints to thread with w, a chain on its head, with
// createdAt values that List order shuffles (and some ties), and returns
// their ids. Beyond a few, a store with Import gets them in batches of 100:
// a thousand appends through a faulty network would dominate the suite.
func (e *env) fill(thread string, w ckptstore.Writer, prefix string, n int) []string {
	e.t.Helper()
	head := e.head(thread)
	out := make([]string, 0, n)
	im, batched := e.s.(ckptstore.Importer)
	// Import sets a head only on a thread without one (or the same), so
	// the first batch sets the last id as the head, ahead of its checkpoint.
	batched = batched && n > 100 && head == ""
	last := fmt.Sprintf("%s%04d", prefix, n-1)
	var batch []*ckptstore.Checkpoint
	flush := func() {
		if len(batch) > 0 {
			first := len(out) <= 100
			_, err := im.Import(e.ctx, ckptstore.ImportBatch{ThreadID: thread, Checkpoints: batch, SetHead: first, Head: last, Writer: w})
			must(e.t, "Import of a batch to fill "+thread, err)
			batch = nil
		}
	}
	for i := range n {
		c := cp(fmt.Sprintf("%s%04d", prefix, i), thread, head)
		c.CreatedAt = float64((i * 7919) % (n/2 + 1)) // two of most values: ties by id
		if i%5 == 0 {
			c.Files = []ckptstore.Entry{file("f", i, 1)}
		}
		if batched {
			if len(batch) == 100 {
				flush()
			}
			batch = append(batch, c)
		} else {
			must(e.t, "Append "+c.ID, e.s.Append(e.ctx, c, head, w))
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
	page, next, err := e.pager().ListPage(e.ctx, thread, opt)
	must(e.t, fmt.Sprintf("ListPage(%q, %+v)", thread, opt), err)
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
	e.pager()
	e.acquire("leased")
	cursor := ckptstore.EncodeCursor(ckptstore.Position{CreatedAt: 1, ID: "x"})
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
	e := s.env(t)
	e.pager()
	w := e.acquire("t").Writer
	e.fill("t", w, "c", 1001)
	all := e.list("t")
	for _, tc := range []struct {
		limit, want int
	}{{0, 100}, {1, 1}, {2, 2}, {100, 100}, {999, 999}, {1000, 1000}} {
		for _, rev := range []bool{false, true} {
			page, next := e.page("t", ckptstore.ListOptions{Limit: tc.limit, Reverse: rev})
			want := all[:tc.want]
			if rev {
				want = reversed(all)[:tc.want]
			}
			if d := listDiff(page, want); d != "" {
				t.Errorf("ListPage(limit %d, reverse %v): %s", tc.limit, rev, d)
			}
			if next == "" {
				t.Errorf("ListPage(limit %d, reverse %v) of 1001 checkpoints: next is empty", tc.limit, rev)
			}
		}
	}
	// 1000 and then the last one; then nothing follows.
	for _, rev := range []bool{false, true} {
		want := all
		if rev {
			want = reversed(all)
		}
		_, next := e.page("t", ckptstore.ListOptions{Limit: 1000, Reverse: rev})
		last, end := e.page("t", ckptstore.ListOptions{After: next, Limit: 1000, Reverse: rev})
		if d := listDiff(last, want[1000:]); d != "" || end != "" {
			t.Errorf("the second page of 1000 (reverse %v): %s, next %q (want \"\")", rev, d, end)
		}
		// A page that ends exactly at the end says so: next is ""
		// when nothing follows.
		_, next = e.page("t", ckptstore.ListOptions{Limit: 999, Reverse: rev})
		two, end := e.page("t", ckptstore.ListOptions{After: next, Limit: 2, Reverse: rev})
		if d := listDiff(two, want[999:]); d != "" || end != "" {
			t.Errorf("the last two (reverse %v): %s, next %q (want \"\")", rev, d, end)
		}
	}
	for _, limit := range []int{1001, -1, -1000, 1 << 31} {
		page, next, err := e.pager().ListPage(e.ctx, "t", ckptstore.ListOptions{Limit: limit})
		if wantErr(t, fmt.Sprintf("ListPage(limit %d)", limit), err, ckptstore.ErrInvalidEntry) && (len(page) > 0 || next != "") {
			t.Errorf("ListPage(limit %d) failed but returned %d checkpoints, next %q", limit, len(page), next)
		}
	}
}

func (s *suite) listPageOrder(t *testing.T) {
	// Ties by the bytes of the id, -0 equal to 0, negative and
	// fractional createdAt; every page size, both directions.
	e := s.env(t)
	e.pager()
	w := e.acquire("t").Writer
	for _, it := range []struct {
		id string
		at float64
	}{
		{"é", 5}, {"a", 5}, {"B", 5}, {"😀", 5}, {"\uff21", 5}, {"\ue000", 5},
		{"z0", 0}, {"y0", math.Copysign(0, -1)}, {"x0", 0},
		{"n", -1.5}, {"m", -1e300}, {"p", 0.25}, {"q", 1e300}, {"r", 5e-324}, {"s", -5e-324},
		{"a\x00", 5}, {"ab", 5},
	} {
		c := cp(it.id, "t", "")
		c.CreatedAt = it.at
		e.append(c, w)
	}
	all := e.list("t")
	for _, limit := range []int{1, 2, 3, 7, 16, 17, 100} {
		if d := listDiff(e.pageAll("t", ckptstore.ListOptions{Limit: limit}), all); d != "" {
			t.Errorf("pages of %d: %s", limit, d)
		}
		if d := listDiff(e.pageAll("t", ckptstore.ListOptions{Limit: limit, Reverse: true}), reversed(all)); d != "" {
			t.Errorf("reverse pages of %d: %s", limit, d)
		}
	}
}

func (s *suite) listPageCursorIsAPosition(t *testing.T) {
	e := s.env(t)
	e.pager()
	w := e.acquire("t").Writer
	for i, id := range []string{"a", "b", "c", "d", "e"} {
		c := cp(id, "t", "")
		c.CreatedAt = float64(10 * (i + 1)) // a 10, b 20, …, e 50 (the head)
		e.append(c, w)
	}
	// Reverse from the newest: the first page ends at the head, which
	// is then deleted; the next page goes on from its position.
	page, next := e.page("t", ckptstore.ListOptions{Limit: 1, Reverse: true})
	if got := ids(page); !slices.Equal(got, []string{"e"}) {
		t.Fatalf("first reverse page = %q, want [e]", got)
	}
	must(t, "DeleteHead e", e.s.DeleteHead(e.ctx, "t", "e", w))
	// Added behind the cursor (newer than e): not seen. Added ahead
	// of it: seen in its place.
	for _, it := range []struct {
		id string
		at float64
	}{{"late", 60}, {"f-at-e", 50}, {"between", 35}} {
		c := cp(it.id, "t", "")
		c.CreatedAt = it.at
		e.append(c, w)
	}
	rest := e.pageAll("t", ckptstore.ListOptions{After: next, Limit: 2, Reverse: true})
	// "f-at-e" has e's createdAt and sorts after "e" by id: behind
	// the cursor in reverse.
	if got, want := ids(rest), []string{"d", "between", "c", "b", "a"}; !slices.Equal(got, want) {
		t.Errorf("after deleting the cursor's checkpoint, reverse paging gave %q, want %q", got, want)
	}
	// Forward, from a position no checkpoint has.
	after := ckptstore.EncodeCursor(ckptstore.Position{CreatedAt: 30, ID: "zzz"})
	if got, want := ids(e.pageAll("t", ckptstore.ListOptions{After: after, Limit: 2})), []string{"between", "d", "f-at-e", "late"}; !slices.Equal(got, want) {
		t.Errorf("forward from (30, zzz) = %q, want %q", got, want)
	}
	// At a position of equal createdAt, the id decides.
	after = ckptstore.EncodeCursor(ckptstore.Position{CreatedAt: 50, ID: "f-at-e"})
	if got, want := ids(e.pageAll("t", ckptstore.ListOptions{After: after})), []string{"late"}; !slices.Equal(got, want) {
		t.Errorf("forward from (50, f-at-e) = %q, want %q", got, want)
	}
	if got, want := ids(e.pageAll("t", ckptstore.ListOptions{After: after, Reverse: true, Limit: 3})), []string{"d", "between", "c", "b", "a"}; !slices.Equal(got, want) {
		t.Errorf("reverse from (50, f-at-e) = %q, want %q", got, want)
	}
	// Forward: the first page ends at the head, which is deleted.
	lo := cp("lo", "t", "")
	lo.CreatedAt = 5
	e.append(lo, w)
	page, next = e.page("t", ckptstore.ListOptions{Limit: 1})
	if got := ids(page); !slices.Equal(got, []string{"lo"}) {
		t.Fatalf("first page = %q, want [lo]", got)
	}
	must(t, "DeleteHead lo", e.s.DeleteHead(e.ctx, "t", "lo", w))
	if got, want := ids(e.pageAll("t", ckptstore.ListOptions{After: next, Limit: 4})), []string{"a", "b", "c", "between", "d", "f-at-e", "late"}; !slices.Equal(got, want) {
		t.Errorf("after deleting the cursor's checkpoint, forward paging gave %q, want %q", got, want)
	}
	// -0 and 0 are one position.
	after = ckptstore.EncodeCursor(ckptstore.Position{CreatedAt: math.Copysign(0, -1), ID: "a"})
	if got := ids(e.pageAll("t", ckptstore.ListOptions{After: after, Reverse: true})); len(got) != 0 {
		t.Errorf("reverse from (-0, a) = %q, want none", got)
	}
}

func (s *suite) listPageCursorFromAnotherThread(t *testing.T) {
	e := s.env(t)
	e.pager()
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
	if d := listDiff(got, want); d != "" {
		t.Errorf("u paged from t's cursor: %s", d)
	}
}

func (s *suite) listPageCopies(t *testing.T) {
	e := s.env(t)
	e.pager()
	w := e.acquire("t").Writer
	c := richCP("c1", "t", "")
	want := cloneCP(c)
	e.append(c, w)
	page, _ := e.page("t", ckptstore.ListOptions{})
	for _, x := range page {
		scribble(x)
	}
	if d := cpDiff(e.get("c1"), want); d != "" {
		t.Errorf("changing what ListPage returned changed the store: %s", d)
	}
	page, _ = e.page("t", ckptstore.ListOptions{Reverse: true})
	if d := listDiff(page, []*ckptstore.Checkpoint{want}); d != "" {
		t.Errorf("ListPage after scribbling: %s", d)
	}
}

func (s *suite) listPageOffChain(t *testing.T) {
	e := s.env(t)
	e.pager()
	im := e.importer()
	w := e.chain("t", nil, "a", "b")
	x := cp("x", "t", "nowhere")
	x.CreatedAt = 1000.5
	_, err := im.Import(e.ctx, ckptstore.ImportBatch{ThreadID: "t", Checkpoints: []*ckptstore.Checkpoint{x}, Writer: w})
	must(t, "Import", err)
	e.track(nil, "x")
	if got := ids(e.pageAll("t", ckptstore.ListOptions{Limit: 1})); !slices.Equal(got, []string{"a", "x", "b"}) {
		t.Errorf("pages = %q, want [a x b] with the checkpoint off the chain", got)
	}
}

func (s *suite) listPageWhileWriting(t *testing.T) {
	for _, rev := range []bool{false, true} {
		t.Run(fmt.Sprintf("reverse=%v", rev), func(t *testing.T) { s.pageWhileWriting(t, rev) })
	}
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
	e.pager()
	p, pruner := e.s.(ckptstore.Pruner)
	rng := rand.New(rand.NewPCG(7, map[bool]uint64{false: 1, true: 2}[reverse]))
	w := e.acquire("t").Writer
	head := ""
	alive := map[string]*ckptstore.Checkpoint{}
	add := func(id string, at float64) {
		c := cp(id, "t", head)
		c.CreatedAt = at
		must(t, "Append "+id, e.s.Append(e.ctx, c, head, w))
		head = id
		alive[id] = c
	}
	for i := range 40 {
		add(fmt.Sprintf("s%02d", i), float64(rng.IntN(20)))
	}
	throughout := map[string]bool{}
	for id := range alive {
		throughout[id] = true
	}
	seen := map[string]bool{}
	var got []*ckptstore.Checkpoint
	opt := ckptstore.ListOptions{Limit: 2, Reverse: reverse}
	fresh, deletes := 0, 0
	for pages := 0; ; pages++ {
		if pages > maxPages {
			t.Fatal("paging does not end")
		}
		page, next := e.page("t", opt)
		for _, c := range page {
			if seen[c.ID] {
				t.Errorf("checkpoint %q came twice", c.ID)
			}
			if alive[c.ID] == nil {
				t.Errorf("checkpoint %q came after it was deleted", c.ID)
			}
			seen[c.ID] = true
		}
		got = append(got, page...)
		if next == "" {
			break
		}
		opt.After = next
		// Between pages: appends anywhere, including at the createdAt of
		// the last checkpoint returned; deletes of the head (often new,
		// sometimes the last one returned); now and then a prune.
		last := page[len(page)-1]
		for range rng.IntN(4) {
			fresh++
			at := float64(rng.IntN(20))
			if rng.IntN(3) == 0 {
				at = last.CreatedAt
			}
			add(fmt.Sprintf("n%03d", fresh), at)
		}
		if rng.IntN(2) == 0 {
			// Heads: mostly new checkpoints, sometimes, once those are
			// gone, the old ones, one of which may be at the cursor.
			for range rng.IntN(3) {
				c := alive[head]
				if c == nil {
					break
				}
				must(t, "DeleteHead "+head, e.s.DeleteHead(e.ctx, "t", head, w))
				deletes++
				delete(alive, head)
				delete(throughout, head)
				head = c.ParentCheckpointID
			}
		}
		if pruner && rng.IntN(8) == 0 {
			deleted, err := p.DeleteCheckpoints(e.ctx, "t", 30, w)
			must(t, "DeleteCheckpoints", err)
			for _, id := range deleted {
				delete(alive, id)
				delete(throughout, id)
			}
		}
	}
	for id := range throughout {
		if !seen[id] {
			t.Errorf("checkpoint %q existed throughout the paging but never came", id)
		}
	}
	for i := 1; i < len(got); i++ {
		a, b := got[i-1], got[i]
		less := a.CreatedAt < b.CreatedAt || a.CreatedAt == b.CreatedAt && a.ID < b.ID
		if less == reverse {
			t.Errorf("pages out of order: %q (%v) before %q (%v)", a.ID, a.CreatedAt, b.ID, b.CreatedAt)
		}
	}
	if len(throughout) < 15 || fresh < 10 || deletes < 10 {
		t.Fatalf("%d checkpoints lived throughout, %d were added and %d deleted: the test lost its point",
			len(throughout), fresh, deletes)
	}
}

// wantThreads checks that a full walk of Threads gives want.
func wantThreads(e *env, what string, want ...string) {
	e.t.Helper()
	if got := e.allThreads(e.lister()); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
		e.t.Errorf("%s: Threads = %q, want %q", what, got, want)
	}
}

func (s *suite) testThreads(t *testing.T) {
	t.Run("WhatCounts", s.threadsWhatCounts)
	t.Run("ByteOrder", s.threadsByteOrder)
	t.Run("Paging", s.threadsPaging)
}

func (s *suite) threadsWhatCounts(t *testing.T) {
	e := s.env(t)
	e.lister()
	wantThreads(e, "empty store")
	l := e.acquire("leased")
	wantThreads(e, "a lease alone")
	l.Release(e.ctx)
	wantThreads(e, "a released lease")
	w := e.chain("t", nil, "a")
	wantThreads(e, "one checkpoint", "t")
	must(t, "DeleteHead a", e.s.DeleteHead(e.ctx, "t", "a", w))
	wantThreads(e, "emptied by DeleteHead")
	if p, ok := e.s.(ckptstore.Pruner); ok {
		wp := e.chain("p", nil, "p1", "p2")
		_, err := p.DeleteCheckpoints(e.ctx, "p", 1, wp)
		must(t, "DeleteCheckpoints", err)
		must(t, "DeleteHead p2", e.s.DeleteHead(e.ctx, "p", "p2", wp))
		wantThreads(e, "a head whose checkpoint is gone", "p")
	}
	if _, ok := e.s.(ckptstore.Transcripts); ok {
		e.save("s", `[]`)
		e.wantTranscript("s", `[]`)
	}
	if f, ok := e.s.(ckptstore.Forker); ok {
		e.chain("src", nil, "s1")
		wd := e.acquire("fork").Writer
		_, err := f.ForkFromCheckpoint(e.ctx, ckptstore.ForkInput{SourceThreadID: "src", SourceCheckpointID: "s1",
			DestinationThreadID: "fork", DestinationCheckpointID: "f1", CreatedAt: 1, Writer: wd})
		must(t, "ForkFromCheckpoint", err)
	}
	var want []string
	for _, th := range []string{"fork", "p", "s", "src"} {
		switch th {
		case "fork", "src":
			if _, ok := e.s.(ckptstore.Forker); !ok {
				continue
			}
		case "p":
			if _, ok := e.s.(ckptstore.Pruner); !ok {
				continue
			}
		case "s":
			if _, ok := e.s.(ckptstore.Transcripts); !ok {
				continue
			}
		}
		want = append(want, th)
	}
	wantThreads(e, "after a prune, a transcript and a fork", want...)
	if d, ok := e.s.(ckptstore.ThreadDeleter); ok {
		wt := e.chain("tmp", nil, "tmp1")
		if _, ok := e.s.(ckptstore.Transcripts); ok {
			e.save("tmp", `[1]`)
		}
		_, err := d.DeleteThread(e.ctx, "tmp", wt)
		must(t, "DeleteThread", err)
		wantThreads(e, "after DeleteThread", want...)
	}
}

func (s *suite) threadsByteOrder(t *testing.T) {
	e := s.env(t)
	e.lister()
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
	tl := e.lister()
	var all []string
	writers := map[string]ckptstore.Writer{}
	for i := range 25 {
		th := fmt.Sprintf("t%02d", i)
		writers[th] = e.chain(th, nil, th+"-c")
		all = append(all, th)
	}
	for _, limit := range []int{1, 2, 7, 24, 25, 26, 0, 1000} {
		got, err := pageThreads(e, tl, limit)
		must(t, "Threads", err)
		if !slices.Equal(got, all) {
			t.Errorf("pages of %d: %q, want %q", limit, got, all)
		}
	}
	page, next, err := tl.Threads(e.ctx, "", 10)
	must(t, "Threads", err)
	if !slices.Equal(page, all[:10]) || next == "" {
		t.Errorf("Threads(\"\", 10) = %q, next %q; want %q and a cursor", page, next, all[:10])
	}
	// Between pages: a thread added before the cursor is not seen,
	// one after it is; a thread emptied after the cursor is not, and
	// the thread at the cursor being emptied changes nothing.
	e.chain("t05x", nil, "early")
	e.chain("t15x", nil, "late")
	for _, th := range []string{"t09", "t20"} {
		must(t, "DeleteHead", e.s.DeleteHead(e.ctx, th, th+"-c", writers[th]))
	}
	rest, err := pageThreadsFrom(e, tl, next, 4)
	must(t, "Threads from the cursor", err)
	want := append(slices.Clone(all[10:16]), "t15x")
	want = append(want, all[16:20]...)
	want = append(want, all[21:]...)
	if !slices.Equal(rest, want) {
		t.Errorf("Threads after adding between pages = %q, want %q", rest, want)
	}
	for _, limit := range []int{-1, 1001, math.MaxInt} {
		e.fails(fmt.Sprintf("Threads(limit %d)", limit), ckptstore.ErrInvalidEntry, func() error {
			_, _, err := tl.Threads(e.ctx, "", limit)
			return err
		})
	}
	e.fails("Threads with a list cursor", ckptstore.ErrInvalidEntry, func() error {
		_, _, err := tl.Threads(e.ctx, ckptstore.EncodeCursor(ckptstore.Position{CreatedAt: 1, ID: "t"}), 1)
		return err
	})
}

// pageThreadsFrom pages through Threads from the cursor after.
func pageThreadsFrom(e *env, tl ckptstore.ThreadLister, after string, limit int) ([]string, error) {
	var out []string
	for range maxPages {
		page, next, err := tl.Threads(e.ctx, after, limit)
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if next == "" {
			return out, nil
		}
		after = next
	}
	e.t.Fatalf("Threads: more than %d pages", maxPages)
	return nil, nil
}
