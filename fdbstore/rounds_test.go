package fdbstore_test

// Read rounds per operation, on memkv's exact counters: every read issued
// before a wait is one round trip, which on a cluster is the latency a
// caller pays.

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/fdbstore"
	"github.com/ckptstore/ckptstore/fdbstore/kv"
	"github.com/ckptstore/ckptstore/fdbstore/kv/memkv"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

// rounds runs op on a fresh count and returns the engine's stats for it.
func rounds(t *testing.T, db *memkv.DB, op func() error) memkv.Stats {
	t.Helper()
	db.ResetStats()
	must(t, op())
	return db.Stats()
}

// wantRounds fails unless st took one transaction, n read rounds and r
// reads (r < 0: any number of reads).
func wantRounds(t *testing.T, what string, st memkv.Stats, n, r int64) {
	t.Helper()
	if st.Transactions != 1 || st.ReadRounds != n || (r >= 0 && st.Reads != r) {
		t.Errorf("%s: %d transactions, %d read rounds, %d reads; want 1, %d, %d", what, st.Transactions, st.ReadRounds, st.Reads, n, r)
	}
}

// bigConversation is a conversation of at least n bytes.
func bigConversation(n int) []byte {
	return []byte(`["` + strings.Repeat("x", n) + `"]`)
}

func TestReadRounds(t *testing.T) {
	s, db := newMemStore(t, fdbstore.Options{}, memkv.Options{})
	lease, err := s.AcquireWriter(ctx, "t")
	must(t, err)
	w := lease.Writer
	must(t, s.Append(ctx, testkit.Checkpoint("t", "a", "", 1, 1), "", w))
	big := testkit.Checkpoint("t", "big", "a", 2, 2)
	big.Conversation = bigConversation(3 * kv.MaxValueSize)
	must(t, s.Append(ctx, big, "a", w))
	must(t, s.Append(ctx, testkit.Checkpoint("t", "c", "big", 3, 3), "big", w))
	getRounds(t, s, db, big)
	restoreRounds(t, s, db, w, big)
	restoreOfAForeignHead(t, s, w)
	writeAndListRounds(t, s, db)
}

// getRounds: Get reads in one round, a checkpoint of several values (big)
// and a missing id too.
func getRounds(t *testing.T, s *ckptstore.Store, db *memkv.DB, big *ckptstore.Checkpoint) {
	var got *ckptstore.Checkpoint
	wantRounds(t, "Get", rounds(t, db, func() (err error) { got, err = s.Get(ctx, "c"); return }), 1, 1)
	if got == nil || got.ID != "c" || got.ParentCheckpointID != "big" {
		t.Fatalf("Get(c) = %+v", got)
	}
	// A checkpoint of several values is copied under its index too.
	wantRounds(t, "Get of a 4-chunk checkpoint", rounds(t, db, func() (err error) { got, err = s.Get(ctx, "big"); return }), 1, 1)
	if got == nil || string(got.Conversation) != string(big.Conversation) {
		t.Fatal("Get(big) returned another conversation")
	}
	wantRounds(t, "Get of a missing id", rounds(t, db, func() (err error) { got, err = s.Get(ctx, "nope"); return }), 1, 1)
	if got != nil {
		t.Fatalf("Get(nope) = %+v", got)
	}
}

// restoreRounds: Restore reads in one round when the head is the newest
// checkpoint and has at most four chunks, in two otherwise; DeleteHead in
// one. It leaves t's head on "old".
func restoreRounds(t *testing.T, s *ckptstore.Store, db *memkv.DB, w ckptstore.Writer, big *ckptstore.Checkpoint) {
	var head string
	var got *ckptstore.Checkpoint
	wantRounds(t, "Restore", rounds(t, db, func() (err error) { head, got, err = fdbDriver(s).Restore(ctx, "t"); return }), 1, 2)
	if head != "c" || got == nil || got.ID != "c" {
		t.Fatalf("Restore = %q, %+v", head, got)
	}
	wantRounds(t, "Restore of an empty thread", rounds(t, db, func() (err error) { head, got, err = fdbDriver(s).Restore(ctx, "none"); return }), 1, 2)
	if head != "" || got != nil {
		t.Fatalf("Restore(none) = %q, %+v", head, got)
	}
	// DeleteHead of a checkpoint that is not the root: one round.
	wantRounds(t, "DeleteHead", rounds(t, db, func() error { return s.DeleteHead(ctx, "t", "c", w) }), 1, -1)
	// A head of up to four chunks comes with the first round too,
	wantRounds(t, "Restore of a 4-chunk head", rounds(t, db, func() (err error) { head, got, err = fdbDriver(s).Restore(ctx, "t"); return }), 1, 2)
	if head != "big" || got == nil || string(got.Conversation) != string(big.Conversation) {
		t.Fatalf("Restore = %q, %v", head, got != nil)
	}
	// a larger one is found by id, in a second round.
	huge := testkit.Checkpoint("t", "huge", "big", 2.5, 2)
	huge.Conversation = bigConversation(5 * kv.MaxValueSize)
	must(t, s.Append(ctx, huge, "big", w))
	wantRounds(t, "Restore of a 6-chunk head", rounds(t, db, func() (err error) { head, got, err = fdbDriver(s).Restore(ctx, "t"); return }), 2, 3)
	if head != "huge" || got == nil || string(got.Conversation) != string(huge.Conversation) {
		t.Fatalf("Restore = %q, %v", head, got != nil)
	}
	// A head that is not the newest checkpoint (an older createdAt) too.
	must(t, s.Append(ctx, testkit.Checkpoint("t", "old", "huge", 0.5, 3), "huge", w))
	wantRounds(t, "Restore of a head older than its parent", rounds(t, db, func() (err error) { head, got, err = fdbDriver(s).Restore(ctx, "t"); return }), 2, 3)
	if head != "old" || got == nil || got.ID != "old" {
		t.Fatalf("Restore = %q, %+v", head, got)
	}
}

// restoreOfAForeignHead: a head that names a checkpoint of another thread
// restores as the head and no checkpoint. t's head must be "old".
func restoreOfAForeignHead(t *testing.T, s *ckptstore.Store, w ckptstore.Writer) {
	ul, err := s.AcquireWriter(ctx, "u")
	must(t, err)
	must(t, s.Append(ctx, testkit.Checkpoint("u", "u0", "", 1), "", ul.Writer))
	must(t, s.Append(ctx, testkit.Checkpoint("u", "u1", "u0", 2), "u0", ul.Writer))
	_, err = s.DeleteCheckpoints(ctx, "u", 1, ul.Writer)
	must(t, err)
	must(t, s.DeleteHead(ctx, "u", "u1", ul.Writer)) // head = u0, pruned
	must(t, s.Append(ctx, testkit.Checkpoint("t", "u0", "old", 9), "old", w))
	if head, got, err := fdbDriver(s).Restore(ctx, "u"); err != nil || head != "u0" || got != nil {
		t.Fatalf("Restore(u) = %q, %+v, %v; want the head and no checkpoint (its id is t's now)", head, got, err)
	}
}

// writeAndListRounds: DeleteHead of a root and ForkFromCheckpoint take one
// round, as do Threads and LoadThread.
func writeAndListRounds(t *testing.T, s *ckptstore.Store, db *memkv.DB) {
	// DeleteHead of a root, which empties its thread: one round too.
	rl, err := s.AcquireWriter(ctx, "r")
	must(t, err)
	must(t, s.Append(ctx, testkit.Checkpoint("r", "r0", "", 1, 1), "", rl.Writer))
	wantRounds(t, "DeleteHead of a root", rounds(t, db, func() error { return s.DeleteHead(ctx, "r", "r0", rl.Writer) }), 1, -1)
	if ids, _, err := s.Threads(ctx, "", 0); err != nil || slices.Contains(ids, "r") {
		t.Fatalf("Threads = %v, %v: the emptied thread is still listed", ids, err)
	}

	// Fork: one round for the checks, the source and the destination.
	fl, err := s.AcquireWriter(ctx, "f")
	must(t, err)
	in := ckptstore.ForkInput{SourceThreadID: "t", SourceCheckpointID: "a", DestinationThreadID: "f",
		DestinationCheckpointID: "f-root", CreatedAt: 5, Writer: fl.Writer}
	wantRounds(t, "ForkFromCheckpoint", rounds(t, db, func() error { _, err := s.ForkFromCheckpoint(ctx, in); return err }), 1, -1)

	var ids []string
	wantRounds(t, "Threads", rounds(t, db, func() (err error) { ids, _, err = s.Threads(ctx, "", 0); return }), 1, 1)
	if !slices.Equal(ids, []string{"f", "t", "u"}) {
		t.Fatalf("Threads = %v", ids)
	}
	var tr []byte
	wantRounds(t, "LoadThread", rounds(t, db, func() (err error) { tr, err = s.LoadThread(ctx, "f"); return }), 1, 1)
	if string(tr) != `[{"role":"user","content":"hi"}]` {
		t.Fatalf("the fork's transcript = %s", tr)
	}
}

// TestListPageOfALongThread pages through a 10,000-checkpoint thread in
// pages of 100, forward and in reverse: each page one range read in one
// round, every checkpoint once, in List order.
func TestListPageOfALongThread(t *testing.T) {
	const n, page = 10_000, 100
	s, db := newMemStore(t, fdbstore.Options{}, memkv.Options{})
	lease, err := s.AcquireWriter(ctx, "t")
	must(t, err)
	var want []string
	for b := 0; b < n; b += 1000 {
		batch := ckptstore.ImportBatch{ThreadID: "t", Writer: lease.Writer}
		for i := b; i < b+1000; i++ {
			id := fmt.Sprintf("c%05d", i)
			parent := ""
			if i > 0 {
				parent = fmt.Sprintf("c%05d", i-1)
			}
			batch.Checkpoints = append(batch.Checkpoints, testkit.Checkpoint("t", id, parent, float64(i), i%7))
			want = append(want, id)
		}
		_, err := s.Import(ctx, batch)
		must(t, err)
	}
	for _, reverse := range []bool{false, true} {
		var got []string
		cursor, pages := "", 0
		for {
			var cps []*ckptstore.Checkpoint
			st := rounds(t, db, func() (err error) {
				cps, cursor, err = s.ListPage(ctx, "t", ckptstore.ListOptions{After: cursor, Limit: page, Reverse: reverse})
				return
			})
			wantRounds(t, fmt.Sprintf("ListPage %d (reverse %v)", pages, reverse), st, 1, 1)
			pages++
			for _, cp := range cps {
				got = append(got, cp.ID)
			}
			if cursor == "" {
				break
			}
			if len(cps) != page {
				t.Fatalf("page %d holds %d checkpoints, want %d", pages, len(cps), page)
			}
		}
		w := slices.Clone(want)
		if reverse {
			slices.Reverse(w)
		}
		if pages != n/page || !slices.Equal(got, w) {
			t.Fatalf("reverse %v: %d pages, %d checkpoints; want %d pages, every checkpoint once in order", reverse, pages, len(got), n/page)
		}
	}
}

// TestSingleCopy: without the copy under the index, Get takes two rounds
// and Appends write about half the bytes; everything reads the same.
func TestSingleCopy(t *testing.T) {
	written := map[bool]int64{}
	for _, single := range []bool{false, true} {
		s, db := newMemStore(t, fdbstore.Options{SingleCopy: single}, memkv.Options{})
		lease, err := s.AcquireWriter(ctx, "t")
		must(t, err)
		cp := testkit.Checkpoint("t", "a", "", 1, 1)
		cp.Conversation = bigConversation(2000)
		db.ResetStats()
		must(t, s.Append(ctx, cp, "", lease.Writer))
		written[single] = db.Stats().BytesWritten
		var got *ckptstore.Checkpoint
		want := int64(1)
		if single {
			want = 2
		}
		wantRounds(t, fmt.Sprintf("Get, SingleCopy %v", single), rounds(t, db, func() (err error) { got, err = s.Get(ctx, "a"); return }), want, want)
		if got == nil || string(got.Conversation) != string(cp.Conversation) {
			t.Fatalf("SingleCopy %v: Get returned another checkpoint", single)
		}
		wantRounds(t, fmt.Sprintf("Restore, SingleCopy %v", single), rounds(t, db, func() (err error) { _, got, err = fdbDriver(s).Restore(ctx, "t"); return }), 1, 2)
		// Re-importing stored checkpoints reads them all in one more round
		// at most, whatever their number.
		b := ckptstore.ImportBatch{ThreadID: "t", Writer: lease.Writer, Checkpoints: []*ckptstore.Checkpoint{cp}}
		for i := range 4 {
			c := testkit.Checkpoint("t", fmt.Sprintf("x%d", i), "", float64(10+i), i)
			b.Checkpoints = append(b.Checkpoints, c)
		}
		_, err = s.Import(ctx, b)
		must(t, err)
		var n int
		wantRounds(t, fmt.Sprintf("re-Import, SingleCopy %v", single), rounds(t, db, func() (err error) { n, err = s.Import(ctx, b); return }), want, -1)
		if n != 0 {
			t.Fatalf("re-Import wrote %d", n)
		}
	}
	if 10*written[true] > 6*written[false] {
		t.Fatalf("an Append wrote %d bytes with SingleCopy, %d without; want about half", written[true], written[false])
	}
	t.Logf("bytes written by a 2 KB Append: %d with the copy, %d with SingleCopy", written[false], written[true])
}
