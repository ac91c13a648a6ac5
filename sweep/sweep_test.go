package sweep_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/blobs"
	"github.com/ckptstore/ckptstore/blobs/s3blob/s3blobtest"
	"github.com/ckptstore/ckptstore/conformance"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/fdbstore"
	"github.com/ckptstore/ckptstore/fdbstore/kv/memkv"
	"github.com/ckptstore/ckptstore/internal/testkit"
	"github.com/ckptstore/ckptstore/memstore"
	"github.com/ckptstore/ckptstore/redisstore"
	"github.com/ckptstore/ckptstore/sweep"
)

// clock is a settable time source shared by a bucket and the sweep.
type clock = testkit.Clock

func newClock() *clock { return testkit.NewClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)) }

type bucketKind struct {
	name string
	// open returns an empty bucket whose ModTimes come from c.
	open func(t *testing.T, c *clock) blobs.Bucket
}

var bucketKinds = []bucketKind{
	{"mem", func(t *testing.T, c *clock) blobs.Bucket {
		return blobs.NewMem(blobs.MemOptions{Now: c.Now})
	}},
	{"file", func(t *testing.T, c *clock) blobs.Bucket {
		b, err := blobs.OpenFile(t.TempDir(), blobs.FileOptions{NoSync: true, Now: c.Now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}},
	{"s3", func(t *testing.T, c *clock) blobs.Bucket {
		// Unversioned, so that the sweep's DeleteOlder is the Head-then-
		// Delete fallback; the versioned bucket runs in concurrent_test.go.
		return s3blobtest.NewServer(t, s3blobtest.Options{Now: c.Now}).Open(t)
	}},
}

type storeKind struct {
	name string
	open func(t *testing.T) conformance.Store
}

// storeKinds are the stores the sweep is tested against. Stores added to
// the module join here.
var storeKinds = []storeKind{
	{"memstore", func(t *testing.T) conformance.Store { return memstore.New(ckptstore.Options{}) }},
	{"fdbstore-memkv", func(t *testing.T) conformance.Store {
		s, err := fdbstore.New(memkv.New(), fdbstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}},
	{"redisstore-miniredis", func(t *testing.T) conformance.Store {
		c := redis.NewClient(&redis.Options{Addr: miniredis.RunT(t).Addr()})
		t.Cleanup(func() { c.Close() })
		s, err := redisstore.New(c, redisstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}},
}

func forEach(t *testing.T, f func(t *testing.T, s conformance.Store, b blobs.Bucket, c *clock)) {
	for _, sk := range storeKinds {
		for _, bk := range bucketKinds {
			t.Run(sk.name+"/"+bk.name, func(t *testing.T) {
				c := newClock()
				f(t, sk.open(t), bk.open(t, c), c)
			})
		}
	}
}

// fileKey and artifactKey are content keys of the given text.
func fileKey(s string) string     { return blobs.FileKey(sha256.Sum256([]byte(s))) }
func artifactKey(s string) string { return blobs.ArtifactKey(sha256.Sum256([]byte(s))) }

func putKeys(t *testing.T, b blobs.Bucket, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if err := b.Put(context.Background(), k, strings.NewReader(k)); err != nil {
			t.Fatalf("Put(%q): %v", k, err)
		}
	}
}

// thread appends checkpoints to one thread of a store.
type thread struct {
	t     *testing.T
	s     conformance.Store
	id    string
	head  string
	n     int
	lease *ckptstore.Lease
}

func newThread(t *testing.T, s conformance.Store, id string) *thread {
	lease, err := s.AcquireWriter(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return &thread{t: t, s: s, id: id, lease: lease}
}

// append stores a checkpoint using the given blob keys and returns its id.
func (th *thread) append(keys ...string) string {
	th.t.Helper()
	th.n++
	cp := testkit.Checkpoint(th.id, fmt.Sprintf("%s-cp%d", th.id, th.n), th.head, float64(th.n))
	for i, k := range keys {
		if strings.HasPrefix(k, blobs.FilesPrefix) {
			cp.Files = append(cp.Files, ckptstore.Entry{Path: fmt.Sprintf("f%d", i), Kind: ckptstore.KindFile, BlobKey: k, Size: int64(len(k))})
		} else {
			cp.Artifacts = append(cp.Artifacts, ckptstore.Artifact{ArtifactID: fmt.Sprintf("a%d", i), Name: "a", MimeType: "text/plain", Size: int64(len(k)), BlobKey: k, CreatedAt: 1})
		}
	}
	if err := th.s.Append(context.Background(), cp, th.head, th.lease.Writer); err != nil {
		th.t.Fatalf("Append: %v", err)
	}
	th.head = cp.ID
	return cp.ID
}

func (th *thread) deleteHead() {
	th.t.Helper()
	cp, err := th.s.Get(context.Background(), th.head)
	if err != nil || cp == nil {
		th.t.Fatalf("Get head: %v", err)
	}
	if err := th.s.DeleteHead(context.Background(), th.id, th.head, th.lease.Writer); err != nil {
		th.t.Fatalf("DeleteHead: %v", err)
	}
	th.head = cp.ParentCheckpointID
}

func listAll(t *testing.T, b blobs.Bucket) []string {
	t.Helper()
	var keys []string
	for o, err := range b.List(context.Background(), "") {
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, o.Key)
	}
	return keys
}

func sorted(keys ...string) []string {
	keys = slices.Clone(keys)
	slices.Sort(keys)
	return keys
}

func TestSweep(t *testing.T) {
	forEach(t, func(t *testing.T, s conformance.Store, b blobs.Bucket, c *clock) {
		ctx := context.Background()
		used, usedArt, shared := fileKey("used"), artifactKey("used"), fileKey("shared")
		gone, goneArt := fileKey("only in a deleted checkpoint"), artifactKey("only in a deleted checkpoint")
		orphan := fileKey("never referenced")
		outside := []string{"other/x", "sandbox-filesX/y", "sandbox-files", "sandbox-artifactsZ", "a/sandbox-files/z"}
		putKeys(t, b, used, usedArt, shared, gone, goneArt, orphan, "sandbox-files/not-a-hash")
		putKeys(t, b, outside...)

		th := newThread(t, s, "t1")
		th.append(used, usedArt, shared)
		th.append(shared, gone, goneArt)
		th.deleteHead() // gone and goneArt lose their only checkpoint

		// A capture in progress: uploaded, not yet referenced, young.
		c.Advance(time.Hour)
		capturing, capturingArt := fileKey("being captured"), artifactKey("being captured")
		putKeys(t, b, capturing, capturingArt)
		c.Advance(time.Minute)

		deleted, stats, err := sweep.RunStats(ctx, s, b, sweep.Options{OlderThan: 10 * time.Minute, Now: c.Now})
		require.NoError(t, err, "Run")
		assert.Equal(t, sorted(gone, goneArt, orphan, "sandbox-files/not-a-hash"), deleted, "deleted")
		left := sorted(append([]string{used, usedArt, shared, capturing, capturingArt}, outside...)...)
		assert.Equal(t, left, listAll(t, b), "the bucket holds")
		assert.Equal(t, sweep.Stats{Examined: 9, Referenced: 3, Young: 2, Deleted: 4}, stats, "stats")

		// The capture appends its checkpoint; later sweeps keep its blobs.
		th.append(capturing, capturingArt)
		c.Advance(24 * time.Hour)
		deleted, err = sweep.Run(ctx, s, b, sweep.Options{Now: c.Now})
		if err != nil || len(deleted) != 0 {
			t.Errorf("second Run deleted %q, %v; want nothing", deleted, err)
		}
	})
}

func TestGraceBoundary(t *testing.T) {
	forEach(t, func(t *testing.T, s conformance.Store, b blobs.Bucket, c *clock) {
		older, exact := fileKey("older"), fileKey("exact")
		putKeys(t, b, older)
		c.Advance(time.Second)
		putKeys(t, b, exact)
		// exact's ModTime is exactly Now − OlderThan: not strictly older, kept.
		c.Advance(time.Minute)
		deleted, err := sweep.Run(context.Background(), s, b, sweep.Options{OlderThan: time.Minute, Now: c.Now})
		if err != nil || !slices.Equal(deleted, []string{older}) {
			t.Errorf("Run = %q, %v; want only the strictly older key", deleted, err)
		}
		// With OlderThan 0, everything unreferenced and older than now goes.
		c.Advance(time.Nanosecond)
		deleted, err = sweep.Run(context.Background(), s, b, sweep.Options{Now: c.Now})
		if err != nil || !slices.Equal(deleted, []string{exact}) {
			t.Errorf("Run(OlderThan 0) = %q, %v", deleted, err)
		}
	})
}

func TestDryRun(t *testing.T) {
	forEach(t, func(t *testing.T, s conformance.Store, b blobs.Bucket, c *clock) {
		keys := sorted(fileKey("a"), fileKey("b"), artifactKey("c"))
		putKeys(t, b, keys...)
		c.Advance(time.Hour)
		var streamed []string
		deleted, err := sweep.Run(context.Background(), s, b, sweep.Options{OlderThan: time.Minute, Now: c.Now, DryRun: true})
		if err != nil || !slices.Equal(deleted, keys) {
			t.Errorf("DryRun = %q, %v; want %q", deleted, err, keys)
		}
		if got := listAll(t, b); !slices.Equal(got, keys) {
			t.Errorf("DryRun deleted objects: bucket holds %q", got)
		}
		deleted, err = sweep.Run(context.Background(), s, b, sweep.Options{OlderThan: time.Minute, Now: c.Now,
			OnDeleted: func(k string) { streamed = append(streamed, k) }})
		if err != nil || deleted != nil {
			t.Errorf("Run with OnDeleted returned %q, %v; want no list", deleted, err)
		}
		if slices.Sort(streamed); !slices.Equal(streamed, keys) {
			t.Errorf("OnDeleted saw %q, want %q", streamed, keys)
		}
		if got := listAll(t, b); len(got) != 0 {
			t.Errorf("bucket holds %q after the sweep", got)
		}
	})
}

// TestEndToEndPrune proves that pruning then sweeping frees exactly the
// bytes that only the pruned checkpoints used.
func TestEndToEndPrune(t *testing.T) {
	forEach(t, func(t *testing.T, s conformance.Store, b blobs.Bucket, c *clock) {
		ctx := context.Background()
		content := func(name string, size int) string { return strings.Repeat(name, size) }
		put := func(kind, text string) string {
			var res blobs.PutResult
			var err error
			if kind == "file" {
				res, err = blobs.PutFile(ctx, b, strings.NewReader(text))
			} else {
				res, err = blobs.PutArtifact(ctx, b, strings.NewReader(text))
			}
			if err != nil {
				t.Fatal(err)
			}
			return res.Key
		}
		base := put("file", content("b", 1000))   // in every checkpoint
		v1 := put("file", content("1", 100))      // cp1 only
		v2 := put("file", content("2", 200))      // cp2 only
		v3 := put("file", content("3", 300))      // cp3 and cp4
		log1 := put("artifact", content("L", 10)) // cp1 only
		log2 := put("artifact", content("M", 20)) // cp2 and cp4
		other := put("file", content("o", 50))    // another thread
		sizes := map[string]int64{base: 1000, v1: 100, v2: 200, v3: 300, log1: 10, log2: 20, other: 50}

		th := newThread(t, s, "main")
		th.append(base, v1, log1)
		th.append(base, v2, log2)
		th.append(base, v3)
		th.append(base, v3, log2)
		th.lease.Release(ctx)
		oth := newThread(t, s, "other")
		oth.append(base, other)
		oth.lease.Release(ctx)

		pruned, err := ckptstore.KeepNewest(ctx, s, "main", 2)
		require.NoError(t, err, "KeepNewest")
		require.Equal(t, []string{"main-cp1", "main-cp2"}, pruned, "KeepNewest pruned")
		c.Advance(time.Hour)
		deleted, err := sweep.Run(ctx, s, b, sweep.Options{OlderThan: 30 * time.Minute, Now: c.Now})
		require.NoError(t, err, "Run")
		assert.Equal(t, sorted(v1, v2, log1), deleted, "deleted")
		var freed, wantFreed int64
		for _, k := range deleted {
			freed += sizes[k]
		}
		wantFreed = 100 + 200 + 10
		if freed != wantFreed {
			t.Errorf("freed %d bytes, want %d", freed, wantFreed)
		}
		var left int64
		for o, err := range b.List(ctx, "") {
			if err != nil {
				t.Fatal(err)
			}
			left += o.Size
		}
		if total := int64(1000 + 100 + 200 + 300 + 10 + 20 + 50); left != total-wantFreed {
			t.Errorf("bucket holds %d bytes, want %d", left, total-wantFreed)
		}
	})
}

// spyBucket wraps a real bucket to count or disturb calls.
type spyBucket struct {
	blobs.Bucket
	mu         sync.Mutex
	lists      int
	failDelete map[string]error
	beforeHead func(key string) // called before each Head
	swap       bool             // yield listings in descending order
}

func (s *spyBucket) List(ctx context.Context, prefix string) iter.Seq2[blobs.Object, error] {
	s.mu.Lock()
	s.lists++
	s.mu.Unlock()
	inner := s.Bucket.List(ctx, prefix)
	return func(yield func(blobs.Object, error) bool) {
		if s.swap {
			var all []blobs.Object
			for o, err := range inner {
				if err != nil {
					yield(o, err)
					return
				}
				all = append(all, o)
			}
			for _, o := range slices.Backward(all) {
				if !yield(o, nil) {
					return
				}
			}
			return
		}
		for o, err := range inner {
			if !yield(o, err) {
				return
			}
		}
	}
}

func (s *spyBucket) Head(ctx context.Context, key string) (blobs.Object, error) {
	if s.beforeHead != nil {
		s.beforeHead(key)
	}
	return s.Bucket.Head(ctx, key)
}

func (s *spyBucket) Delete(ctx context.Context, key string) error {
	if err := s.failDelete[key]; err != nil {
		return err
	}
	return s.Bucket.Delete(ctx, key)
}

func TestInvalidOptionsListNothing(t *testing.T) {
	spy := &spyBucket{Bucket: blobs.NewMem(blobs.MemOptions{})}
	s := memstore.New(ckptstore.Options{})
	for _, o := range []sweep.Options{{OlderThan: -time.Nanosecond}, {Concurrency: -1}} {
		if _, err := sweep.Run(context.Background(), s, spy, o); !errors.Is(err, driver.ErrInvalidOptions) {
			t.Errorf("Run(%+v) = %v, want ErrInvalidOptions", o, err)
		}
	}
	if _, err := sweep.Run(context.Background(), nil, spy, sweep.Options{}); err == nil {
		t.Error("Run with a nil store succeeded")
	}
	if spy.lists != 0 {
		t.Errorf("invalid options still listed the bucket %d times", spy.lists)
	}
}

func TestKeyErrorsAreReported(t *testing.T) {
	c := newClock()
	mem := blobs.NewMem(blobs.MemOptions{Now: c.Now})
	var keys []string
	for i := range 50 {
		keys = append(keys, fileKey(fmt.Sprint(i)))
	}
	putKeys(t, mem, keys...)
	keys = sorted(keys...)
	boom := errors.New("permission denied")
	spy := &spyBucket{Bucket: mem, failDelete: map[string]error{keys[3]: boom, keys[40]: boom}}
	c.Advance(time.Hour)
	// Options.Stats is deprecated but still filled, for old callers.
	var old sweep.Stats
	deleted, stats, err := sweep.RunStats(context.Background(), memstore.New(ckptstore.Options{}), spy, sweep.Options{Now: c.Now, Concurrency: 4, Stats: &old})
	if old != stats {
		t.Errorf("Options.Stats = %+v, RunStats returned %+v", old, stats)
	}
	want := slices.Delete(slices.Clone(keys), 40, 41)
	want = slices.Delete(want, 3, 4)
	if !slices.Equal(deleted, want) {
		t.Errorf("deleted %d keys, want the %d that did not fail", len(deleted), len(want))
	}
	if !errors.Is(err, boom) {
		t.Fatalf("Run error = %v, want the delete failures", err)
	}
	var failed []string
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var ke *sweep.KeyError
		if errors.As(e, &ke) {
			failed = append(failed, ke.Key)
		}
	}
	if slices.Sort(failed); !slices.Equal(failed, []string{keys[3], keys[40]}) {
		t.Errorf("KeyErrors name %q, want the two failing keys", failed)
	}
	if stats.Failed != 2 || stats.Deleted != 48 {
		t.Errorf("stats = %+v", stats)
	}
}

func TestUnsortedListingStops(t *testing.T) {
	c := newClock()
	mem := blobs.NewMem(blobs.MemOptions{Now: c.Now})
	putKeys(t, mem, fileKey("1"), fileKey("2"), fileKey("3"))
	c.Advance(time.Hour)
	deleted, err := sweep.Run(context.Background(), memstore.New(ckptstore.Options{}), &spyBucket{Bucket: mem, swap: true}, sweep.Options{Now: c.Now, Concurrency: 1})
	if !errors.Is(err, blobs.ErrUnsorted) {
		t.Errorf("Run over a descending listing = %v, want ErrUnsorted", err)
	}
	if len(deleted) > 1 {
		t.Errorf("deleted %d keys after the order broke", len(deleted))
	}
}

// TestReuploadedDuringSweepSurvives re-uploads a key after the sweep listed
// it and before it deletes it, as a capture refreshing an old blob does: the
// sweep must see the new ModTime and keep it.
func TestReuploadedDuringSweepSurvives(t *testing.T) {
	forEach(t, func(t *testing.T, s conformance.Store, b blobs.Bucket, c *clock) {
		k1, k2 := fileKey("refreshed"), fileKey("stale")
		putKeys(t, b, k1, k2)
		c.Advance(time.Hour)
		spy := &spyBucket{Bucket: b, beforeHead: func(key string) {
			if key == k1 {
				putKeys(t, b, k1)
			}
		}}
		deleted, err := sweep.Run(context.Background(), s, spy, sweep.Options{OlderThan: time.Minute, Now: c.Now, Concurrency: 1})
		if err != nil || !slices.Equal(deleted, []string{k2}) {
			t.Errorf("Run = %q, %v; want only %q", deleted, err, k2)
		}
		if _, err := b.Head(context.Background(), k1); err != nil {
			t.Errorf("re-uploaded key was deleted: %v", err)
		}
	})
}

// streamStore serves references through RefLister, in the given order, and
// fails ListBlobReferences so that a test notices the sweep using it.
type streamStore struct {
	conformance.Store
	refs []ckptstore.BlobRef
}

func (s streamStore) ListBlobReferences(context.Context) ([]ckptstore.BlobRef, error) {
	return nil, errors.New("BlobReferences called although RefLister is implemented")
}

func (s streamStore) BlobReferencesSeq(ctx context.Context) iter.Seq2[ckptstore.BlobRef, error] {
	return func(yield func(ckptstore.BlobRef, error) bool) {
		for _, r := range s.refs {
			if !yield(r, nil) {
				return
			}
		}
	}
}

// sliceStore returns a fixed ListBlobReferences slice.
type sliceStore struct {
	conformance.Store
	refs []ckptstore.BlobRef
}

func (s sliceStore) ListBlobReferences(context.Context) ([]ckptstore.BlobRef, error) {
	return s.refs, nil
}

func TestReferenceSources(t *testing.T) {
	keys := sorted(fileKey("a"), fileKey("b"), fileKey("c"), fileKey("d"), artifactKey("e"))
	setup := func() (*clock, blobs.Bucket) {
		c := newClock()
		b := blobs.NewMem(blobs.MemOptions{Now: c.Now})
		putKeys(t, b, keys...)
		c.Advance(time.Hour)
		return c, b
	}
	refs := []ckptstore.BlobRef{{Key: keys[1], References: 1}, {Key: keys[3], References: 2}, {Key: "unknown/key", References: 1}}
	slices.SortFunc(refs, func(a, b ckptstore.BlobRef) int { return strings.Compare(a.Key, b.Key) })
	want := []string{keys[0], keys[2], keys[4]}
	base := memstore.New(ckptstore.Options{})

	c, b := setup()
	got, err := sweep.Run(context.Background(), streamStore{base, refs}, b, sweep.Options{Now: c.Now})
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("RefLister: deleted %q, %v; want %q", got, err, want)
	}

	c, b = setup()
	shuffled := slices.Clone(refs)
	slices.Reverse(shuffled)
	got, err = sweep.Run(context.Background(), sliceStore{base, shuffled}, b, sweep.Options{Now: c.Now})
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("unsorted slice: deleted %q, %v; want %q (the sweep sorts it)", got, err, want)
	}

	c, b = setup()
	_, err = sweep.Run(context.Background(), streamStore{base, shuffled}, b, sweep.Options{Now: c.Now})
	if !errors.Is(err, blobs.ErrUnsorted) {
		t.Errorf("unsorted RefLister: %v, want ErrUnsorted", err)
	}
}

func TestCancelled(t *testing.T) {
	c := newClock()
	b := blobs.NewMem(blobs.MemOptions{Now: c.Now})
	putKeys(t, b, fileKey("x"))
	c.Advance(time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	deleted, err := sweep.Run(ctx, memstore.New(ckptstore.Options{}), b, sweep.Options{Now: c.Now})
	if !errors.Is(err, context.Canceled) || len(deleted) != 0 {
		t.Errorf("Run(cancelled) = %q, %v", deleted, err)
	}
	if b.Len() != 1 {
		t.Error("a cancelled sweep deleted")
	}
}

// touchingBucket touches one key just before the sweep's DeleteOlder of
// it, as a capture reusing that blob would.
type touchingBucket struct {
	*blobs.MemBucket
	key string
}

func (b touchingBucket) DeleteOlder(ctx context.Context, key string, before time.Time) (bool, error) {
	if key == b.key {
		if err := b.Touch(ctx, key); err != nil {
			return false, err
		}
	}
	return b.MemBucket.DeleteOlder(ctx, key, before)
}

// TestTouchedBeforeFinalCheckIsSpared: on an OlderDeleter the sweep's final
// decision is DeleteOlder's, and a key touched before it stays, counted as
// spared.
func TestTouchedBeforeFinalCheckIsSpared(t *testing.T) {
	c := newClock()
	mem := blobs.NewMem(blobs.MemOptions{Now: c.Now})
	touched, stale := fileKey("touched"), fileKey("stale")
	putKeys(t, mem, touched, stale)
	c.Advance(time.Hour)
	deleted, st, err := sweep.RunStats(context.Background(), memstore.New(ckptstore.Options{}), touchingBucket{mem, touched},
		sweep.Options{OlderThan: time.Minute, Now: c.Now})
	if err != nil || !slices.Equal(deleted, []string{stale}) {
		t.Errorf("RunStats = %q, %v; want only %q deleted", deleted, err, stale)
	}
	if want := (sweep.Stats{Examined: 2, Young: 1, Spared: 1, Deleted: 1}); st != want {
		t.Errorf("stats = %+v, want %+v", st, want)
	}
	if _, err := mem.Head(context.Background(), touched); err != nil {
		t.Errorf("the touched key was deleted: %v", err)
	}
}
