package redisstore

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

// The bytes of list members sort exactly as List does: createdAt (-0
// equal to 0), then the id's bytes, shorter first.
func TestOrderMemberSortsLikeList(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	floats := slices.Clone(hardFloats)
	for range 300 {
		if f := math.Float64frombits(rng.Uint64()); !math.IsNaN(f) && !math.IsInf(f, 0) {
			floats = append(floats, f)
		}
	}
	ids := []string{"", "a", "a\x00", "a\x00b", "ab", "b", "\xff", "é", "\U0001F600"}
	var cps []*ckptstore.Checkpoint
	for i := range 2000 {
		cps = append(cps, &ckptstore.Checkpoint{CreatedAt: floats[rng.IntN(len(floats))], ID: ids[rng.IntN(len(ids))] + fmt.Sprint(i%7)})
	}
	for i := range cps {
		for j := range 20 {
			a, b := cps[i], cps[(i*31+j*17)%len(cps)]
			want := driver.CompareCheckpoints(a, b)
			got := strings.Compare(orderMember(a.CreatedAt, a.ID), orderMember(b.CreatedAt, b.ID))
			if got != want {
				t.Fatalf("(%v, %q) vs (%v, %q): members compare %d, List order %d", a.CreatedAt, a.ID, b.CreatedAt, b.ID, got, want)
			}
		}
	}
	if orderMember(math.Copysign(0, -1), "x") != orderMember(0, "x") {
		t.Fatal("-0 and 0 have different positions")
	}
}

// tieThread appends, in one chain, checkpoints whose createdAt values tie
// often (-0 with 0 too) and whose ids are prefixes of one another.
func tieThread(t *testing.T, s *Driver, thread string, n int) []*ckptstore.Checkpoint {
	t.Helper()
	ctx := context.Background()
	w := acquire(t, s, thread)
	ats := []float64{0, math.Copysign(0, -1), 1, -1, 1e-300, 1}
	ids := []string{"a", "a\x00", "ab", "b", "", "é"}
	head := ""
	var out []*ckptstore.Checkpoint
	for i := range n {
		cp := testkit.Checkpoint(thread, ids[i%len(ids)]+strings.Repeat("x", i/len(ids)), head, ats[(i/2)%len(ats)], i%5)
		if cp.ID == "" {
			cp.ID = "z"
		}
		must(t, s.p().Append(ctx, cp, head, w))
		head = cp.ID
		out = append(out, cp)
	}
	slices.SortFunc(out, driver.CompareCheckpoints)
	return out
}

// Paging through ties, forward and in reverse, at every page size, gives
// List; a cursor at a position that holds no checkpoint starts exactly
// after it.
func TestListPageTies(t *testing.T) {
	backends(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := context.Background()
		s := newStore(t, c, Options{BatchSize: 4})
		want := testkit.IDs(tieThread(t, s, "t", 40))
		list, err := s.p().List(ctx, "t")
		must(t, err)
		require.Equal(t, want, testkit.IDs(list), "List (in pages of 4)")
		rev := slices.Clone(want)
		slices.Reverse(rev)
		for _, limit := range []int{1, 2, 3, 7, 40, 41} {
			for _, reverse := range []bool{false, true} {
				var got []string
				after, pages := "", 0
				for {
					page, next, err := s.p().ListPage(ctx, "t", ckptstore.ListOptions{After: after, Limit: limit, Reverse: reverse})
					must(t, err)
					pages++
					got = append(got, testkit.IDs(page)...)
					if next == "" {
						break
					}
					after = next
				}
				w := want
				if reverse {
					w = rev
				}
				require.Equal(t, w, got, "limit %d reverse %v: the ids of the pages", limit, reverse)
				require.Equal(t, max(1, (len(w)+limit-1)/limit), pages, "limit %d: pages", limit)
			}
		}
		// Positions between stored checkpoints.
		for _, pos := range []driver.Position{{CreatedAt: 0, ID: "a\x00\x00"}, {CreatedAt: math.Copysign(0, -1), ID: "a"},
			{CreatedAt: 1, ID: "\x00"}, {CreatedAt: 0.5, ID: "zzz"}, {CreatedAt: -math.MaxFloat64, ID: "\x00"}, {CreatedAt: math.MaxFloat64, ID: "\x00"}} {
			fwd, back := []string{}, []string{} // IDs of an empty page is empty, not nil
			for _, cp := range list {
				if c := driver.ComparePosition(cp, pos); c > 0 {
					fwd = append(fwd, cp.ID)
				} else if c < 0 {
					back = append([]string{cp.ID}, back...)
				}
			}
			page, _, err := s.p().ListPage(ctx, "t", ckptstore.ListOptions{After: driver.EncodeCursor(pos), Limit: 1000})
			must(t, err)
			require.Equal(t, fwd, testkit.IDs(page), "after %v", pos)
			page, _, err = s.p().ListPage(ctx, "t", ckptstore.ListOptions{After: driver.EncodeCursor(pos), Limit: 1000, Reverse: true})
			must(t, err)
			require.Equal(t, back, testkit.IDs(page), "reverse after %v", pos)
		}
	})
}

// chainOf appends n checkpoints to thread as one chain and returns their
// ids, oldest first.
func chainOf(t *testing.T, s *Driver, thread string, w ckptstore.Writer, n int) []string {
	t.Helper()
	ctx := context.Background()
	head, err := s.p().GetHead(ctx, thread)
	must(t, err)
	var ids []string
	for i := range n {
		id := fmt.Sprintf("%s-%03d", thread, i)
		must(t, s.p().Append(ctx, testkit.Checkpoint(thread, id, head, float64(i%3), i%4, 100+i), head, w))
		head = id
		ids = append(ids, id)
	}
	return ids
}

// Prune and DeleteThread of threads many batches long delete exactly what
// the contract says, in its order, and keep the counts exact.
func TestLongThreadsInBatches(t *testing.T) {
	backends(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := context.Background()
		s := newStore(t, c, Options{BatchSize: 3})
		w := acquire(t, s, "t")
		ids := chainOf(t, s, "t", w, 20)
		other := acquire(t, s, "o")
		chainOf(t, s, "o", other, 4)
		deleted, err := s.p().DeleteCheckpoints(ctx, "t", 4, w)
		must(t, err)
		if want := ids[:16]; !slices.Equal(deleted, want) {
			t.Fatalf("DeleteCheckpoints deleted %q, want %q (farthest from the head first)", deleted, want)
		}
		list, err := s.p().List(ctx, "t")
		must(t, err)
		if got := testkit.IDs(list); len(got) != 4 {
			t.Fatalf("List after prune = %q, want the 4 kept", got)
		}
		testkit.CheckRefs(t, s.p(), "t", "o")
		again, err := s.p().DeleteCheckpoints(ctx, "t", 4, w)
		must(t, err)
		if len(again) != 0 {
			t.Fatalf("a repeated prune deleted %q", again)
		}
		must(t, s.p().SaveThread(ctx, "t", []byte(`["m"]`)))
		chainOf(t, s, "t", w, 7) // ids reused: 000…006 again
		n, err := s.p().DeleteThread(ctx, "t", w)
		must(t, err)
		if n != 11 {
			t.Fatalf("DeleteThread = %d, want 11", n)
		}
		wantEmptyThread(t, s, "t")
		testkit.CheckRefs(t, s.p(), "t", "o")
		threads, _, err := s.p().Threads(ctx, "", 0)
		must(t, err)
		if !slices.Equal(threads, []string{"o"}) {
			t.Fatalf("Threads = %q, want [o]", threads)
		}
		// The lease stays: the holder writes the thread again.
		must(t, s.p().Append(ctx, testkit.Checkpoint("t", "again", "", 1), "", w))
		checkStore(t, s)
	})
}

func wantEmptyThread(t *testing.T, s *Driver, thread string) {
	t.Helper()
	ctx := context.Background()
	list, err := s.p().List(ctx, thread)
	must(t, err)
	head, err := s.p().GetHead(ctx, thread)
	must(t, err)
	tr, err := s.p().LoadThread(ctx, thread)
	must(t, err)
	if len(list) != 0 || head != "" || string(tr) != "[]" {
		t.Fatalf("thread %q holds %q, head %q, transcript %s; want nothing", thread, testkit.IDs(list), head, tr)
	}
}

// A long prune or DeleteThread stopped after its first batch leaves a
// state the repeated call finishes: the prune's far end goes first, so
// what is left is still the chain from the head.
func TestLongDeletesResume(t *testing.T) {
	backends(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := context.Background()
		s := newStore(t, c, Options{BatchSize: 3})
		w := acquire(t, s, "t")
		ids := chainOf(t, s, "t", w, 12)
		// The first batch alone, as if the call failed after it.
		first, err := s.pruneBatches(ctx, "t", []string{ids[0], ids[1], ids[2]}, w)
		must(t, err)
		if !slices.Equal(first, ids[:3]) {
			t.Fatalf("first batch deleted %q", first)
		}
		rest, err := s.p().DeleteCheckpoints(ctx, "t", 2, w)
		must(t, err)
		if !slices.Equal(rest, ids[3:10]) {
			t.Fatalf("the repeated prune deleted %q, want %q", rest, ids[3:10])
		}
		testkit.CheckRefs(t, s.p(), "t")

		chainOf(t, s, "u", acquire(t, s, "u"), 0)
		wu := acquire(t, s, "v")
		chainOf(t, s, "v", wu, 8)
		a := deleteThreadArgs{Thread: s.keys.thread("v"), List: s.keys.list("v"), Transcript: s.keys.transcript("v"),
			Threads: s.keys.threadsKey(), Op: s.keys.op(opDeleteThread, "one-batch"), TTL: s.opTTL, Now: s.now(),
			Token: wu.OwnerToken, Fence: itoa(wu.Fence), ThreadID: "v", CP: s.keys.cpPrefix(), Batch: 3}
		a.Refs, a.RefKeys = s.keys.refsKey()
		res, err := run(ctx, s.r, deleteThreadScript, a, true)
		must(t, err)
		if !succeeded(res) || res[1] != int64(3) || res[2] != "0" {
			t.Fatalf("one batch replied %v", res)
		}
		n, err := s.p().DeleteThread(ctx, "v", wu)
		must(t, err)
		if n != 5 {
			t.Fatalf("the repeated DeleteThread = %d, want the 5 left", n)
		}
		wantEmptyThread(t, s, "v")
		testkit.CheckRefs(t, s.p(), "t", "v")
		checkStore(t, s)
	})
}

// A stale writer's long prune or DeleteThread stops at the first batch:
// every batch checks the lease.
func TestLongDeletesCheckTheLease(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	s := newStore(t, miniClient(t), Options{Options: ckptstore.Options{Now: clk.Now}, BatchSize: 2})
	w := acquire(t, s, "t")
	ids := chainOf(t, s, "t", w, 9)
	stale := w
	stale.Fence++
	if _, err := s.p().DeleteCheckpoints(ctx, "t", 1, stale); !errors.Is(err, ckptstore.ErrWriterLost) {
		t.Fatalf("prune with a forged fence = %v, want ErrWriterLost", err)
	}
	if _, err := s.pruneBatches(ctx, "t", ids[:2], stale); !errors.Is(err, ckptstore.ErrWriterLost) {
		t.Fatalf("a prune batch with a forged fence = %v, want ErrWriterLost", err)
	}
	if n, err := s.p().DeleteThread(ctx, "t", stale); !errors.Is(err, ckptstore.ErrWriterLost) || n != 0 {
		t.Fatalf("DeleteThread with a forged fence = %d, %v, want ErrWriterLost", n, err)
	}
	list, err := s.p().List(ctx, "t")
	must(t, err)
	if len(list) != 9 {
		t.Fatalf("%d checkpoints left, want all 9", len(list))
	}
}

// Import compares by content: a stored copy whose bytes differ only where
// EqualCheckpoints sees no difference (nil and empty slices, a nil and an
// empty conversation) is the same checkpoint; any other difference, or the
// id in another thread, is ErrDuplicateID.
func TestImportComparesByContent(t *testing.T) {
	backends(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := context.Background()
		s := newStore(t, c, Options{})
		w := acquire(t, s, "t")
		a := testkit.Checkpoint("t", "a", "", 1, 1)
		a.Artifacts, a.Conversation = nil, nil
		b := testkit.Checkpoint("t", "b", "a", 2)
		b.Files = nil
		n, err := s.p().Import(ctx, ckptstore.ImportBatch{ThreadID: "t", Checkpoints: []*ckptstore.Checkpoint{a, b}, SetHead: true, Head: "b", Writer: w})
		must(t, err)
		if n != 2 {
			t.Fatalf("Import wrote %d, want 2", n)
		}
		a2, b2 := a.Clone(), b.Clone()
		a2.Artifacts, a2.Conversation = []ckptstore.Artifact{}, []byte("[]")
		b2.Files = []ckptstore.Entry{}
		c3 := testkit.Checkpoint("t", "c", "b", 3, 2)
		n, err = s.p().Import(ctx, ckptstore.ImportBatch{ThreadID: "t", Checkpoints: []*ckptstore.Checkpoint{a2, b2, c3}, SetHead: true, Head: "b", Writer: w})
		must(t, err)
		if n != 1 {
			t.Fatalf("Import of equal content wrote %d, want only c", n)
		}
		testkit.CheckRefs(t, s.p(), "t")
		differs := b.Clone()
		differs.Label = "other"
		before := keyspace(t, c, s)
		if _, err := s.p().Import(ctx, ckptstore.ImportBatch{ThreadID: "t", Checkpoints: []*ckptstore.Checkpoint{testkit.Checkpoint("t", "d", "", 4), differs}, Writer: w}); !errors.Is(err, ckptstore.ErrDuplicateID) {
			t.Fatalf("Import of other content = %v, want ErrDuplicateID", err)
		}
		wo := acquire(t, s, "o")
		elsewhere := a.Clone()
		elsewhere.ThreadID = "o"
		if _, err := s.p().Import(ctx, ckptstore.ImportBatch{ThreadID: "o", Checkpoints: []*ckptstore.Checkpoint{elsewhere}, Writer: wo}); !errors.Is(err, ckptstore.ErrDuplicateID) {
			t.Fatalf("Import of an id of another thread = %v, want ErrDuplicateID", err)
		}
		require.Equal(t, withoutLeasesAndOps(before, s), withoutLeasesAndOps(keyspace(t, c, s), s), "refused imports changed the store")
		checkStore(t, s)
	})
}

// keyspace dumps every key of s but the lease and op keys.
func keyspace(t *testing.T, c redis.UniversalClient, s *Driver) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	keys, err := c.Keys(ctx, s.keys.base+"*").Result()
	must(t, err)
	for _, k := range keys {
		out[k] = dumpKey(t, c, k)
	}
	return out
}

// dumpKey returns the contents of k as text (miniredis has no DUMP for
// hashes and sorted sets).
func dumpKey(t *testing.T, c redis.UniversalClient, k string) string {
	t.Helper()
	ctx := context.Background()
	typ, err := c.Type(ctx, k).Result()
	must(t, err)
	var v any
	switch typ {
	case "string":
		v, err = c.Get(ctx, k).Result()
	case "hash":
		v, err = c.HGetAll(ctx, k).Result()
	case "zset":
		v, err = c.ZRangeWithScores(ctx, k, 0, -1).Result()
	case "list":
		v, err = c.LRange(ctx, k, 0, -1).Result()
	}
	must(t, err)
	return fmt.Sprintf("%s %v", typ, v)
}

// withoutLeasesAndOps is keyspace m without the thread hashes (leases,
// fences) and op keys, which a refused write may leave behind.
func withoutLeasesAndOps(m map[string]string, s *Driver) map[string]string {
	maps.DeleteFunc(m, func(k, _ string) bool {
		return strings.HasPrefix(k, s.keys.base+"o:") || strings.HasPrefix(k, s.keys.base+"t:")
	})
	return m
}

// The thread index holds exactly the threads with a head, a checkpoint or
// a transcript, through every write that adds or removes one.
func TestThreadIndexIsExact(t *testing.T) {
	backends(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := context.Background()
		s := newStore(t, c, Options{})
		want := func(ids ...string) {
			t.Helper()
			got, next, err := s.p().Threads(ctx, "", 0)
			must(t, err)
			if !slices.Equal(got, ids) && !(len(got) == 0 && len(ids) == 0) || next != "" {
				t.Fatalf("Threads = %q (next %q), want %q", got, next, ids)
			}
		}
		w := acquire(t, s, "a")
		want()
		must(t, s.p().Append(ctx, testkit.Checkpoint("a", "a1", "", 1), "", w))
		must(t, s.p().SaveThread(ctx, "s", []byte("[]")))
		want("a", "s")
		must(t, s.p().DeleteHead(ctx, "a", "a1", w))
		want("s")
		wf := acquire(t, s, "f")
		must(t, s.p().Append(ctx, testkit.Checkpoint("a", "a2", "", 1), "", w))
		_, err := s.p().ForkFromCheckpoint(ctx, ckptstore.ForkInput{SourceThreadID: "a", SourceCheckpointID: "a2",
			DestinationThreadID: "f", DestinationCheckpointID: "f1", CreatedAt: 2, Writer: wf})
		must(t, err)
		want("a", "f", "s")
		must(t, s.p().DeleteHead(ctx, "f", "f1", wf))
		want("a", "f", "s") // f keeps the transcript the fork wrote
		_, err = s.p().DeleteThread(ctx, "f", wf)
		must(t, err)
		wi := acquire(t, s, "i")
		_, err = s.p().Import(ctx, ckptstore.ImportBatch{ThreadID: "i", SetHead: true, Head: "gone", Writer: wi})
		must(t, err)
		want("a", "i", "s")
		_, err = s.p().DeleteThread(ctx, "i", wi)
		must(t, err)
		want("a", "s")
		checkStore(t, s)
	})
}
