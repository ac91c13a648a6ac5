package redisstore

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

// Every finite float64 that is hard to keep: signed zeros, subnormals, the
// extremes, fractions that are not short in decimal, negative ones.
var hardFloats = []float64{
	0, math.Copysign(0, -1), math.SmallestNonzeroFloat64, -math.SmallestNonzeroFloat64,
	2.2250738585072009e-308, // largest subnormal
	math.MaxFloat64, -math.MaxFloat64, 1e308, -1e-308,
	1, -1, 0.1, 0.30000000000000004, 1.0 / 3, -2.0 / 3,
	1 << 53, 1<<53 + 2, -(1 << 53), 9007199254740993, 4503599627370495.5,
	1_700_000_000_000.123, 1_700_000_000_000.1235, 1e21, 1e22, 123456789e-20,
	math.Nextafter(1, 2), math.Nextafter(1, 0), math.Pi * 1e200,
}

func TestCreatedAtRoundTripsExactly(t *testing.T) {
	backends(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := context.Background()
		s := newStore(t, c, Options{})
		rng := rand.New(rand.NewPCG(7, 7))
		floats := slices.Clone(hardFloats)
		for range 200 { // random bit patterns, kept when finite
			if f := math.Float64frombits(rng.Uint64()); !math.IsNaN(f) && !math.IsInf(f, 0) {
				floats = append(floats, f)
			}
		}
		w := acquire(t, s, "t")
		head := ""
		var want []*ckptstore.Checkpoint
		// checkList compares List with the checkpoints appended so far. It
		// runs once while the sorted set is small (a listpack on a real
		// server, scores kept as text) and once when it is large (a
		// skiplist, scores kept as doubles).
		checkList := func() {
			t.Helper()
			want := slices.Clone(want)
			slices.SortStableFunc(want, driver.CompareCheckpoints)
			got, err := s.p().List(ctx, "t")
			must(t, err)
			if len(got) != len(want) {
				t.Fatalf("List has %d checkpoints, want %d", len(got), len(want))
			}
			for i := range got {
				if got[i].ID != want[i].ID || math.Float64bits(got[i].CreatedAt) != math.Float64bits(want[i].CreatedAt) {
					t.Fatalf("List[%d] = %s (%v), want %s (%v)", i, got[i].ID, got[i].CreatedAt, want[i].ID, want[i].CreatedAt)
				}
			}
		}
		for i, f := range floats {
			if i == len(hardFloats) {
				checkList()
			}
			cp := testkit.Checkpoint("t", fmt.Sprintf("c%03d", i), head, f)
			cp.Artifacts = []ckptstore.Artifact{{ArtifactID: "a", Name: "n", MimeType: "m",
				BlobKey: testkit.ArtifactKey(i), CreatedAt: -f}}
			must(t, s.p().Append(ctx, cp, head, w))
			head = cp.ID
			want = append(want, cp)
			got, err := s.p().Get(ctx, cp.ID)
			must(t, err)
			if math.Float64bits(got.CreatedAt) != math.Float64bits(f) ||
				math.Float64bits(got.Artifacts[0].CreatedAt) != math.Float64bits(-f) {
				t.Fatalf("createdAt %v (bits %x) came back as %v (bits %x)", f, math.Float64bits(f), got.CreatedAt, math.Float64bits(got.CreatedAt))
			}
		}
		checkList()
	})
}

// Equal createdAt (-0 equals 0) sort by the bytes of the id, which is the
// sorted set's order of equal scores; ids hold key syntax and multi-byte
// runes.
func TestListTiesSortByIDBytes(t *testing.T) {
	backends(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := context.Background()
		s := newStore(t, c, Options{})
		ids := []string{"b", "a", "ab", "a:b", "{x}", "}", "{", "é", "e\u0301", "\u00ff", "\U0001F600", "Z", "a\x00b", "a\x00", "~", "\x7f", "c:", "m:t"}
		thread := "th{re}:ad"
		w := acquire(t, s, thread)
		head := ""
		for i, id := range ids {
			at := 5.0
			if i%2 == 1 {
				at = math.Copysign(0, -1)
			}
			if i%3 == 2 {
				at = 0
			}
			cp := testkit.Checkpoint(thread, id, head, at)
			must(t, s.p().Append(ctx, cp, head, w))
			head = id
		}
		got, err := s.p().List(ctx, thread)
		must(t, err)
		gotIDs := make([]string, len(got))
		for i, cp := range got {
			gotIDs[i] = cp.ID
		}
		want := slices.Clone(got)
		slices.SortFunc(want, driver.CompareCheckpoints)
		for i := range want {
			if want[i].ID != gotIDs[i] {
				t.Fatalf("List order %q, wrong at %d (%q)", gotIDs, i, want[i].ID)
			}
		}
		if len(got) != len(ids) {
			t.Fatalf("List has %d checkpoints, want %d", len(got), len(ids))
		}
	})
}

func TestBlobReferencesPagedInKeyOrder(t *testing.T) {
	backends(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := context.Background()
		for _, page := range []int{1, 3, 1000} {
			s := newStore(t, c, Options{PageSize: page})
			w := acquire(t, s, "t")
			head := ""
			for i := range 10 {
				cp := testkit.Checkpoint("t", fmt.Sprint("c", i), head, float64(i), i, i+1, i+2, 100)
				cp.Artifacts = []ckptstore.Artifact{{ArtifactID: "a", Name: "n", MimeType: "m", BlobKey: testkit.ArtifactKey(i % 3)}}
				must(t, s.p().Append(ctx, cp, head, w))
				head = cp.ID
			}
			refs := testkit.CheckRefs(t, s.p(), "t")
			if len(refs) != 12+1+3 {
				t.Fatalf("page %d: %d blob keys, want 16", page, len(refs))
			}
			// Draining part of the sequence stops early without error.
			n := 0
			for _, err := range s.p().BlobReferencesSeq(ctx) {
				must(t, err)
				if n++; n == 2 {
					break
				}
			}
			// Deleting every checkpoint forgets every key.
			for head != "" {
				cp, err := s.p().Get(ctx, head)
				must(t, err)
				must(t, s.p().DeleteHead(ctx, "t", head, w))
				head = cp.ParentCheckpointID
			}
			refs, err := s.p().ListBlobReferences(ctx)
			must(t, err)
			if refs == nil || len(refs) != 0 {
				t.Fatalf("page %d: after deleting everything BlobReferences = %#v, want empty", page, refs)
			}
		}
	})
}

// A prefix isolates tenants: same ids under two prefixes (one full of key
// syntax) never meet, and every key carries the store's hash tag.
func TestPrefixesIsolateAndShareOneHashTag(t *testing.T) {
	backends(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := context.Background()
		a := newStore(t, c, Options{Prefix: "a"})
		b := newStore(t, c, Options{Prefix: "a}:c:{b%"})
		for _, s := range []*Driver{a, b} {
			w := acquire(t, s, "t")
			must(t, s.p().Append(ctx, testkit.Checkpoint("t", "x", "", 1, 1), "", w))
		}
		inst := NewInstanceStore(c, "a")
		must(t, inst.Upsert(ctx, &ckptstore.InstanceRecord{Key: "x", UpdatedAt: 1}))
		for _, s := range []*Driver{a, b} {
			refs, err := s.p().ListBlobReferences(ctx)
			must(t, err)
			if len(refs) != 1 || refs[0].References != 1 {
				t.Fatalf("prefix %q: refs %v, want one key counted once", s.opts.Prefix, refs)
			}
		}
		keys, err := c.Keys(ctx, "*").Result()
		must(t, err)
		for _, k := range keys {
			if !strings.HasPrefix(k, "{a}:") && !strings.HasPrefix(k, "{a%7D:c:%7Bb%25}:") {
				t.Errorf("key %q is outside both hash tags", k)
			}
		}
		if len(keys) == 0 {
			t.Fatal("no keys")
		}
	})
}

func TestOptions(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	for _, o := range []Options{
		{MinReplicas: -1}, {OpTTL: -1}, {PageSize: -1}, {PageSize: MaxPageSize + 1}, {ReplicaTimeout: -1},
		{Options: ckptstore.Options{LeaseDuration: time.Second, RenewAfter: time.Second}},
	} {
		if _, err := NewDriver(c, o); !errors.Is(err, driver.ErrInvalidOptions) {
			t.Errorf("New(%+v) = %v, want ErrInvalidOptions", o, err)
		}
	}
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:1"}})
	defer ring.Close()
	if _, err := NewDriver(ring, Options{MinReplicas: 1}); !errors.Is(err, driver.ErrInvalidOptions) {
		t.Errorf("New(Ring, MinReplicas 1) = %v, want ErrInvalidOptions", err)
	}
	if _, err := NewDriver(nil, Options{}); !errors.Is(err, driver.ErrInvalidOptions) {
		t.Errorf("New(nil) = %v, want ErrInvalidOptions", err)
	}
	s, err := NewDriver(c, Options{})
	must(t, err)
	if s.opts.Prefix != DefaultPrefix || s.opts.OpTTL != DefaultOpTTL || s.opts.PageSize != DefaultPageSize ||
		s.opts.LeaseDuration != driver.DefaultLeaseDuration || s.opts.RenewAfter != driver.DefaultRenewAfter {
		t.Errorf("zero Options resolved to %+v", s.opts)
	}
}

// An id reused after pruning can make the parent links a cycle; pruning
// still ends and deletes each checkpoint once.
func TestPruneStopsOnParentCycle(t *testing.T) {
	backends(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := context.Background()
		s := newStore(t, c, Options{})
		w := acquire(t, s, "t")
		must(t, s.p().Append(ctx, testkit.Checkpoint("t", "a", "", 1, 1), "", w))
		must(t, s.p().Append(ctx, testkit.Checkpoint("t", "b", "a", 2, 2), "a", w))
		ids, err := s.p().DeleteCheckpoints(ctx, "t", 1, w)
		must(t, err)
		require.Equal(t, []string{"a"}, ids, "pruned")
		must(t, s.p().Append(ctx, testkit.Checkpoint("t", "a", "b", 3, 3), "b", w)) // a → b → a
		ids, err = s.p().DeleteCheckpoints(ctx, "t", 1, w)
		must(t, err)
		require.Equal(t, []string{"b"}, ids, "pruned")
		testkit.CheckRefs(t, s.p(), "t")
	})
}

func TestInstanceUpsertClearsOmittedFields(t *testing.T) {
	backends(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := context.Background()
		s := NewInstanceStore(c, "")
		full := &ckptstore.InstanceRecord{Key: "k{1}:", Provider: "p", ProviderSandboxID: "sb", ThreadID: "t",
			LatestSnapshotID: "snap", LatestRunID: "run", UpdatedAt: -(1<<53 - 1)} // the safe-integer extremes
		must(t, s.Upsert(ctx, full))
		got, err := s.Get(ctx, full.Key)
		must(t, err)
		require.Equal(t, full, got, "Get")
		bare := &ckptstore.InstanceRecord{Key: full.Key, UpdatedAt: 1<<53 - 1}
		must(t, s.Upsert(ctx, bare))
		got, err = s.Get(ctx, full.Key)
		must(t, err)
		require.Equal(t, bare, got, "Get after a bare upsert")
		must(t, s.Delete(ctx, full.Key))
		must(t, s.Delete(ctx, full.Key))
		if got, err := s.Get(ctx, full.Key); err != nil || got != nil {
			t.Fatalf("after Delete Get = %+v, %v", got, err)
		}
		if _, err := s.Get(ctx, "\xff"); !errors.Is(err, ckptstore.ErrInvalidID) {
			t.Fatalf("Get(invalid) = %v", err)
		}
	})
}

// Leases use Options.Now at millisecond resolution, never the server's
// clock: moving the test clock expires them.
func TestLeaseUsesOptionsClock(t *testing.T) {
	backends(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := context.Background()
		clk := newClock()
		s := newStore(t, c, Options{Options: ckptstore.Options{Now: clk.Now, LeaseDuration: time.Minute}})
		l, err := s.p().AcquireWriter(ctx, "t")
		must(t, err)
		if !l.ExpiresAt.Equal(clk.Now().Add(time.Minute)) || l.RenewAfter != time.Minute*3/8 || l.Fence != 1 {
			t.Fatalf("lease %+v", l)
		}
		if _, err := s.p().AcquireWriter(ctx, "t"); !errors.Is(err, ckptstore.ErrWriterConflict) {
			t.Fatalf("second AcquireWriter = %v, want ErrWriterConflict", err)
		}
		clk.Advance(time.Minute - time.Millisecond)
		exp, err := l.Renew(ctx)
		must(t, err)
		if !exp.Equal(clk.Now().Add(time.Minute)) {
			t.Fatalf("Renew = %v", exp)
		}
		clk.Advance(time.Minute)
		if err := s.p().Append(ctx, testkit.Checkpoint("t", "a", "", 1), "", l.Writer); !errors.Is(err, ckptstore.ErrWriterLost) {
			t.Fatalf("Append with an expired lease = %v, want ErrWriterLost", err)
		}
		l2, err := s.p().AcquireWriter(ctx, "t")
		must(t, err)
		if l2.Fence != 2 {
			t.Fatalf("takeover fence %d, want 2", l2.Fence)
		}
		l.Release(ctx) // replaced: does nothing
		must(t, s.p().Append(ctx, testkit.Checkpoint("t", "a", "", 1), "", l2.Writer))
		l2.Release(ctx)
		if err := s.p().Append(ctx, testkit.Checkpoint("t", "b", "a", 1), "a", l2.Writer); !errors.Is(err, ckptstore.ErrWriterLost) {
			t.Fatalf("Append after Release = %v, want ErrWriterLost", err)
		}
		l3, err := s.p().AcquireWriter(ctx, "t")
		must(t, err)
		if l3.Fence != 3 {
			t.Fatalf("fence after release %d, want 3", l3.Fence)
		}
	})
}

// The read paths return the caller's own copy and reject invalid ids.
func TestGetReturnsExactCheckpoint(t *testing.T) {
	backends(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := context.Background()
		s := newStore(t, c, Options{})
		w := acquire(t, s, "t")
		cp := &ckptstore.Checkpoint{ID: "x", ThreadID: "t", CreatedAt: 1.5, Reason: ckptstore.ReasonNamed,
			Label: "lbl", SourceRunID: "run",
			Files: []ckptstore.Entry{{Path: "d", Kind: ckptstore.KindDir},
				{Path: "d/f", Kind: ckptstore.KindFile, BlobKey: testkit.FileKey(1), Size: driver.MaxSize}},
			Conversation: []byte(" [ {\"a\" : 1} ]\n"),
			Artifacts:    []ckptstore.Artifact{}}
		must(t, s.p().Append(ctx, cp, "", w))
		got, err := s.p().Get(ctx, "x")
		must(t, err)
		require.Equal(t, cp, got, "Get")
		for _, f := range []func() error{
			func() error { _, err := s.p().Get(ctx, ""); return err },
			func() error { _, err := s.p().List(ctx, "\xff"); return err },
			func() error { _, err := s.p().GetHead(ctx, ""); return err },
		} {
			if err := f(); !errors.Is(err, ckptstore.ErrInvalidID) {
				t.Errorf("read with an invalid id = %v, want ErrInvalidID", err)
			}
		}
		if got, err := s.p().Get(ctx, "missing"); got != nil || err != nil {
			t.Errorf("Get(missing) = %v, %v", got, err)
		}
		if l, err := s.p().List(ctx, "missing"); l == nil || len(l) != 0 || err != nil {
			t.Errorf("List(missing) = %#v, %v", l, err)
		}
	})
}

// TestLongPruneStopsOnACycleAcrossStretches: a long prune walks the chain
// in stretches of BatchSize, each script knowing only its own stretch, so a
// parent cycle that closes into an earlier stretch shows in Go as an id
// walked twice, where the chain must end. Without that check the repeated id counts again and the prune deletes
// checkpoints it must keep.
func TestLongPruneStopsOnACycleAcrossStretches(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, miniClient(t), Options{BatchSize: 2})
	w := acquire(t, s, "t")
	head := ""
	for i, id := range []string{"c1", "c2", "c3", "c4"} {
		must(t, s.p().Append(ctx, testkit.Checkpoint("t", id, head, float64(i), i), head, w))
		head = id
	}
	if _, err := s.DeleteCheckpoints(ctx, "t", 1, w); err != nil {
		t.Fatal(err)
	}
	// c4's parent link names c3; storing c3 again with parent c4 closes
	// the cycle c3 → c4 → c3, and c2 on top makes the chain from the head
	// c2, c3, c4: the first stretch walks c2, c3, the second c4, c3.
	must(t, s.p().Append(ctx, testkit.Checkpoint("t", "c3", "c4", 5, 5), "c4", w))
	must(t, s.p().Append(ctx, testkit.Checkpoint("t", "c2", "c3", 6, 6), "c3", w))

	ids, err := s.DeleteCheckpoints(ctx, "t", 3, w)
	must(t, err)
	if len(ids) != 0 {
		t.Fatalf("keep 3 of the chain c2, c3, c4 deleted %v, want none", ids)
	}
	ids, err = s.DeleteCheckpoints(ctx, "t", 2, w)
	must(t, err)
	if len(ids) != 1 || ids[0] != "c4" {
		t.Fatalf("keep 2 of the chain c2, c3, c4 deleted %v, want [c4]", ids)
	}
	cps, err := s.List(ctx, "t")
	must(t, err)
	if len(cps) != 2 {
		t.Fatalf("%d checkpoints left, want c3 and c2", len(cps))
	}
	checkStore(t, s)
}
