package fdbstore

// The hot-range test: harness load on many threads must spread its writes
// over the keyspace, so that a cluster's storage teams share them. memkv's
// shard model (memkv.DB.Shards) cuts the keys into ranges of equal key
// counts, as data distribution cuts them into shards, and counts the
// mutations landing in each.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/fdbstore/kv/memkv"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

// Shape of the hot-range load.
const (
	hotThreads = 1000 // harness threads, each with its own lease
	hotRanges  = 64   // ranges of the shard model
	// hotMaxFactor is how many times its fair share (1/hotRanges) of the
	// mutations one range may take. Per-thread keys spread over the ranges
	// like balls into bins (about 16 threads a range), so the busiest
	// range sits near twice its share; a key range that every write
	// touches takes a fixed fraction of all writes (an op marker is about
	// one mutation in ten), far above this.
	hotMaxFactor = 4.0
	hotWorkers   = 4 // goroutines running sessions
)

// hotHarness runs harness sessions on a store: acquire the thread's lease,
// append a few checkpoints (files that mostly keep their parent's blobs),
// sometimes delete the head, prune or fork into a new thread, release.
// Blob keys are content hashes (random bytes), thread ids random-looking
// and checkpoint ids derived from the thread, as a harness makes them, so
// that only the store's own key layout can concentrate writes. No blob is
// shared by every thread: the count of such a blob is one key that every
// append moves, a hot key inherent to sharing, not to the layout.
type hotHarness struct {
	s       *Driver
	mu      sync.Mutex
	threads []*hotThread
	forks   int
	shared  []string // blob keys every checkpoint holds besides its own
}

type hotThread struct {
	id    string
	head  string
	n     int      // checkpoints made so far (ids)
	blobs []string // the head's file blob keys
	rng   *rand.Rand
}

func newHotHarness(s *Driver, threads int) *hotHarness {
	h := &hotHarness{s: s}
	for i := range threads {
		sum := sha256.Sum256(fmt.Appendf(nil, "thread %d", i))
		h.threads = append(h.threads, &hotThread{
			id:  "th-" + hex.EncodeToString(sum[:6]),
			rng: rand.New(rand.NewPCG(uint64(i), 42)),
		})
	}
	return h
}

// blobKey is a fresh content-hash key.
func (th *hotThread) blobKey() string {
	var b [32]byte
	for i := 0; i < len(b); i += 8 {
		v := th.rng.Uint64()
		for j := range 8 {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return "sandbox-files/sha256/" + hex.EncodeToString(b[:])
}

// next makes the thread's next checkpoint: three files, each keeping its
// parent's blob with probability 0.7.
func (th *hotThread) next(shared []string) *ckptstore.Checkpoint {
	if th.blobs == nil {
		th.blobs = []string{th.blobKey(), th.blobKey(), th.blobKey()}
	}
	own := slices.DeleteFunc(slices.Clone(th.blobs), func(k string) bool { return slices.Contains(shared, k) })
	blobs := make([]string, len(own))
	for i, k := range own {
		if th.rng.Float64() < 0.3 {
			k = th.blobKey()
		}
		blobs[i] = k
	}
	th.n++
	cp := &ckptstore.Checkpoint{
		ID: fmt.Sprintf("%s-cp%d", th.id, th.n), ThreadID: th.id, ParentCheckpointID: th.head,
		CreatedAt: float64(th.n), Reason: ckptstore.ReasonAutomatic,
		Conversation: fmt.Appendf(nil, `[{"role":"user","content":"step %d of %s"}]`, th.n, th.id),
	}
	for i, k := range blobs {
		cp.Files = append(cp.Files, ckptstore.Entry{Path: fmt.Sprintf("src/f%d.go", i), Kind: ckptstore.KindFile, BlobKey: k, Size: 1000})
	}
	for i, k := range shared {
		cp.Files = append(cp.Files, ckptstore.Entry{Path: fmt.Sprintf("lib/shared%d", i), Kind: ckptstore.KindFile, BlobKey: k, Size: 1000})
	}
	return cp
}

// session is one harness run on th.
func (h *hotHarness) session(ctx context.Context, th *hotThread) error {
	lease, err := h.s.p().AcquireWriter(ctx, th.id)
	if err != nil {
		return err
	}
	w := lease.Writer
	for range 2 + th.rng.IntN(4) {
		cp := th.next(h.shared)
		if err := h.s.p().Append(ctx, cp, th.head, w); err != nil {
			return fmt.Errorf("append %s: %w", cp.ID, err)
		}
		th.head = cp.ID
		th.blobs = th.blobs[:0]
		for _, f := range cp.Files {
			th.blobs = append(th.blobs, f.BlobKey)
		}
	}
	// A harness saves the thread's transcript as it goes.
	if th.rng.IntN(2) == 0 {
		msgs := fmt.Appendf(nil, `[{"role":"user","content":"transcript of %s at %d"}]`, th.id, th.n)
		if err := h.s.p().SaveThread(ctx, th.id, msgs); err != nil {
			return fmt.Errorf("save thread: %w", err)
		}
	}
	switch u := th.rng.Float64(); {
	case u < 0.10 && th.head != "":
		cp, err := h.s.p().Get(ctx, th.head)
		if err != nil || cp == nil {
			return fmt.Errorf("get head %s: %v", th.head, err)
		}
		if err := h.s.p().DeleteHead(ctx, th.id, th.head, w); err != nil {
			return fmt.Errorf("delete head: %w", err)
		}
		th.head = cp.ParentCheckpointID
		if th.head == "" {
			th.blobs = nil
		} else {
			// The restored head's blobs, as a harness would restore them.
			parent, err := h.s.p().Get(ctx, th.head)
			if err != nil || parent == nil {
				return fmt.Errorf("get parent %s: %v", th.head, err)
			}
			th.blobs = th.blobs[:0]
			for _, f := range parent.Files {
				th.blobs = append(th.blobs, f.BlobKey)
			}
		}
	case u < 0.25:
		if _, err := h.s.p().DeleteCheckpoints(ctx, th.id, 3, w); err != nil {
			return fmt.Errorf("prune: %w", err)
		}
	case u < 0.30 && th.head != "":
		h.mu.Lock()
		h.forks++
		dst := fmt.Sprintf("%s-fork%d", th.id, h.forks)
		h.mu.Unlock()
		dl, err := h.s.p().AcquireWriter(ctx, dst)
		if err != nil {
			return err
		}
		if _, err := h.s.p().ForkFromCheckpoint(ctx, ckptstore.ForkInput{
			SourceThreadID: th.id, SourceCheckpointID: th.head,
			DestinationThreadID: dst, DestinationCheckpointID: dst + "-root", Writer: dl.Writer,
		}); err != nil {
			return fmt.Errorf("fork: %w", err)
		}
		if err := h.s.p().Release(ctx, dl.Writer); err != nil {
			return err
		}
	}
	return h.s.p().Release(ctx, w)
}

// round runs one session on every thread, from hotWorkers goroutines.
func (h *hotHarness) round(ctx context.Context) error {
	var wg sync.WaitGroup
	errs := make([]error, hotWorkers)
	for g := range hotWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < len(h.threads); i += hotWorkers {
				if err := h.session(ctx, h.threads[i]); err != nil {
					errs[g] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// measureHotRange runs two rounds of sessions on s over db, cuts the keys
// into hotRanges ranges after the first and returns the load of the second.
func measureHotRange(t *testing.T, db *memkv.DB, s *Driver) memkv.ShardReport {
	t.Helper()
	return measureHotRangeShared(t, db, s, 0)
}

// measureHotRangeShared is measureHotRange with shared blobs that every
// checkpoint holds.
func measureHotRangeShared(t *testing.T, db *memkv.DB, s *Driver, shared int) memkv.ShardReport {
	t.Helper()
	ctx := context.Background()
	h := newHotHarness(s, hotThreads)
	for i := range shared {
		h.shared = append(h.shared, testkit.FileKey(i))
	}
	if err := h.round(ctx); err != nil {
		t.Fatal(err)
	}
	db.Shards(hotRanges)
	if err := h.round(ctx); err != nil {
		t.Fatal(err)
	}
	return db.ShardStats()
}

// hotStore returns a store over a fresh memkv engine.
func hotStore(t *testing.T, opts Options) (*memkv.DB, *Driver) {
	t.Helper()
	db := memkv.New()
	s, err := NewDriver(db, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if problems, err := s.Check(context.Background()); err != nil || len(problems) > 0 {
			t.Errorf("Check: %v; %d problems, the first: %v", err, len(problems), problems[:min(3, len(problems))])
		}
	})
	return db, s
}

// TestNoHotRange: under harness load on 1,000 threads no range of the
// shard model takes more than hotMaxFactor times its fair share of the
// mutations.
func TestNoHotRange(t *testing.T) {
	db, s := hotStore(t, Options{})
	r := measureHotRange(t, db, s)
	t.Logf("%d mutations, %d bytes; %v", r.Mutations, r.Bytes, r)
	logTopRanges(t, r, 3)
	if r.Mutations == 0 {
		t.Fatal("no mutations counted")
	}
	if limit := hotMaxFactor * r.FairShare(); r.HottestShare > limit {
		t.Fatalf("%v: more than %.0f× the fair share (%.1f %%)", r, hotMaxFactor, 100*limit)
	}
}

// TestHotRangeFindsASharedKey runs the same load with two blobs that every
// checkpoint holds, whose count keys every Append adds to: the test above
// must fail on it, so its threshold does catch a key range that every
// write touches. (It caught the first layout's op markers, which all went
// to one global range, (P, "o", wallMillis, token), at 8× the fair share.)
func TestHotRangeFindsASharedKey(t *testing.T) {
	db, s := hotStore(t, Options{})
	r := measureHotRangeShared(t, db, s, 2)
	t.Logf("two blobs in every checkpoint: %d mutations, %d bytes; %v", r.Mutations, r.Bytes, r)
	logTopRanges(t, r, 3)
	if limit := hotMaxFactor * r.FairShare(); r.HottestShare <= limit {
		t.Fatalf("two blobs in every checkpoint: %v: not above %.0f× the fair share; the hot-range test cannot tell a key range that every write touches", r, hotMaxFactor)
	}
}

// logTopRanges logs the n ranges with the most mutations.
func logTopRanges(t *testing.T, r memkv.ShardReport, n int) {
	t.Helper()
	idx := make([]int, len(r.Shards))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return int(r.Shards[b].Mutations - r.Shards[a].Mutations) })
	for _, i := range idx[:min(n, len(idx))] {
		sh := r.Shards[i]
		t.Logf("range %2d: %5.1f %% of mutations, %5.1f %% of bytes, %d keys at the cut, from %q", i,
			100*float64(sh.Mutations)/float64(max(1, r.Mutations)), 100*float64(sh.Bytes)/float64(max(1, r.Bytes)), sh.Keys, sh.Begin)
	}
}
