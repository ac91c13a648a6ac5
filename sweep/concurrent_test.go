package sweep_test

// TestSweepWhileCapturing runs captures that reuse old blobs while sweeps
// run in a loop, on the mem, file and S3 (gofakes3 over HTTP, versioned)
// buckets, and checks the safety condition of docs/sweep.md: no stored
// checkpoint ever references a missing blob, and the sweep still frees
// every blob no checkpoint uses.
//
// Time is virtual. The clock moves one step each time a capture ends, and
// a capture appends only while it holds the clock still (a read lock that
// Advance waits for), after checking that it has not run longer than D:
// that is how a real deployment bounds its longest capture, with a
// deadline. The grace period G is then chosen just above F + D.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/blobs"
	"github.com/ckptstore/ckptstore/blobs/s3blob/s3blobtest"
	"github.com/ckptstore/ckptstore/conformance"
	"github.com/ckptstore/ckptstore/internal/testkit"
	"github.com/ckptstore/ckptstore/memstore"
	"github.com/ckptstore/ckptstore/sweep"
)

// gatedClock is a virtual clock (testkit.Clock) that captures can hold
// still.
type gatedClock struct {
	gate sync.RWMutex // Advance holds it for writing, Hold for reading
	*testkit.Clock
}

// Advance waits until no capture holds the clock, then moves it.
func (c *gatedClock) Advance(d time.Duration) {
	c.gate.Lock()
	defer c.gate.Unlock()
	c.Clock.Advance(d)
}

// Hold runs f while the clock cannot move.
func (c *gatedClock) Hold(f func()) {
	c.gate.RLock()
	defer c.gate.RUnlock()
	f()
}

const (
	step         = time.Minute      // the clock's move at the end of each capture
	freshenAfter = 10 * time.Minute // F
	maxCapture   = 15 * time.Minute // D
	graceSweep   = 26 * time.Minute // G > F + D
	poolSize     = 50               // distinct contents captures draw from
	perCapture   = 3                // files per capture
	workers      = 4                // concurrent capturing threads
)

type concurrentBucket struct {
	name string
	// captures per worker: S3 over HTTP costs ~25 ms a capture under -race
	captures int
	open     func(t *testing.T, now func() time.Time) blobs.Bucket
}

var concurrentBuckets = []concurrentBucket{
	{"mem", 60, func(t *testing.T, now func() time.Time) blobs.Bucket {
		return blobs.NewMem(blobs.MemOptions{Now: now})
	}},
	{"file", 60, func(t *testing.T, now func() time.Time) blobs.Bucket {
		b, err := blobs.OpenFile(t.TempDir(), blobs.FileOptions{NoSync: true, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.Close() })
		return b
	}},
	{"s3-versioned", 20, func(t *testing.T, now func() time.Time) blobs.Bucket {
		return s3blobtest.NewServer(t, s3blobtest.Options{Now: now, Versioned: true}).Open(t)
	}},
}

// figures are what one run did, for the log and the assertions.
type figures struct {
	captures, aborted, sweeps       atomic.Int64
	uploaded, freshened, skipped    atomic.Int64
	freedDuring, freedAtEnd, spared atomic.Int64
}

func TestSweepWhileCapturing(t *testing.T) {
	// SWEEP_CONCURRENT_CAPTURES=N runs N captures per worker on every
	// bucket instead of the few that keep this test within seconds.
	override, _ := strconv.Atoi(os.Getenv("SWEEP_CONCURRENT_CAPTURES"))
	for _, bk := range concurrentBuckets {
		captures := bk.captures
		if override > 0 {
			captures = override
		}
		t.Run(bk.name, func(t *testing.T) {
			c := &gatedClock{Clock: testkit.NewClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))}
			b := bk.open(t, c.Now)
			s := memstore.New(ckptstore.Options{})
			f := runConcurrent(t, s, b, c, captures)
			t.Logf("%s: %d captures (%d aborted past D), %d sweeps; blobs uploaded %d, freshened %d, reused fresh %d; "+
				"sweeps freed %d blobs while capturing (%d spared at the final check), %d at the end",
				bk.name, f.captures.Load(), f.aborted.Load(), f.sweeps.Load(), f.uploaded.Load(), f.freshened.Load(),
				f.skipped.Load(), f.freedDuring.Load(), f.spared.Load(), f.freedAtEnd.Load())
			if f.freshened.Load() == 0 || f.freedDuring.Load() == 0 {
				t.Errorf("the run freshened %d and freed %d blobs while capturing; the test needs both to mean anything",
					f.freshened.Load(), f.freedDuring.Load())
			}
		})
	}
}

func runConcurrent(t *testing.T, s *ckptstore.Store, b blobs.Bucket, c *gatedClock, captures int) *figures {
	ctx := context.Background()
	var f figures
	var wg sync.WaitGroup
	done := make(chan struct{})
	up := &blobs.Uploader{Bucket: b, FreshenAfter: freshenAfter, Now: c.Now}

	wg.Go(func() { // sweeps in a loop until the captures end
		for {
			select {
			case <-done:
				return
			default:
			}
			deleted, st, err := sweep.RunStats(ctx, s, b, sweep.Options{OlderThan: graceSweep, Now: c.Now, Concurrency: 4})
			if err != nil {
				t.Errorf("sweep: %v", err)
				return
			}
			f.sweeps.Add(1)
			f.freedDuring.Add(int64(len(deleted)))
			f.spared.Add(st.Spared)
		}
	})
	var capturing sync.WaitGroup
	for w := range workers {
		capturing.Go(func() {
			capture(t, s, b, up, c, fmt.Sprintf("thread-%d", w), uint64(w), captures, &f)
		})
	}
	capturing.Wait()
	close(done)
	wg.Wait()
	if t.Failed() {
		return &f
	}

	// Every stored checkpoint still has its blobs; then, once nothing
	// captures, a sweep past the grace period frees exactly what no
	// checkpoint uses.
	var threads []string
	for w := range workers {
		threads = append(threads, fmt.Sprintf("thread-%d", w))
	}
	checkStored(t, s, b, threads...)
	c.Advance(graceSweep + step)
	deleted, err := sweep.Run(ctx, s, b, sweep.Options{OlderThan: graceSweep, Now: c.Now})
	if err != nil {
		t.Fatalf("final sweep: %v", err)
	}
	f.freedAtEnd.Store(int64(len(deleted)))
	refs, err := s.ListBlobReferences(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, r := range refs {
		want = append(want, r.Key)
	}
	if got := listAll(t, b); !slices.Equal(got, want) {
		t.Errorf("after the final sweep the bucket holds %d keys, want exactly the %d referenced:\n got %q\nwant %q", len(got), len(want), got, want)
	}
	checkStored(t, s, b, threads...)
	return &f
}

// capture is one worker: it owns a thread, and each capture puts
// perCapture contents drawn from the pool (most of them stored already,
// many old and unreferenced) and appends a checkpoint naming them, then
// prunes the thread to its newest checkpoint so blobs fall out of use.
func capture(t *testing.T, s *ckptstore.Store, b blobs.Bucket, up *blobs.Uploader, c *gatedClock, thread string, seed uint64, n int, f *figures) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 99))
	lease, err := s.AcquireWriter(ctx, thread)
	if err != nil {
		t.Error(err)
		return
	}
	defer lease.Release(ctx)
	head := ""
	for i := range n {
		start := c.Now()
		cp := testkit.Checkpoint(thread, fmt.Sprintf("%s-cp%d", thread, i), head, float64(i))
		for j := range perCapture {
			res, err := up.PutFile(ctx, strings.NewReader(poolContent(rng.IntN(poolSize))))
			if err != nil {
				t.Errorf("%s: PutFile: %v", thread, err)
				return
			}
			switch {
			case res.Uploaded:
				f.uploaded.Add(1)
			case res.Freshened:
				f.freshened.Add(1)
			default:
				f.skipped.Add(1)
			}
			cp.Files = append(cp.Files, ckptstore.Entry{Path: fmt.Sprintf("f%d", j), Kind: ckptstore.KindFile, BlobKey: res.Key, Size: res.Size})
		}
		appended := false
		c.Hold(func() {
			if c.Now().Sub(start) > maxCapture {
				return // past its deadline: abandoned, its blobs are garbage
			}
			if err := s.Append(ctx, cp, head, lease.Writer); err != nil {
				t.Errorf("%s: Append: %v", thread, err)
				return
			}
			appended = true
		})
		if !appended {
			f.aborted.Add(1)
			c.Advance(step)
			continue
		}
		f.captures.Add(1)
		head = cp.ID
		// Only this worker changes its thread, so what it lists is stored
		// now: every blob of it must exist, just appended or about to be
		// pruned alike.
		checkStored(t, s, b, thread)
		if _, err := s.DeleteCheckpoints(ctx, thread, 1, lease.Writer); err != nil {
			t.Errorf("%s: prune: %v", thread, err)
			return
		}
		c.Advance(step)
	}
}

// poolContent is the text of the i-th content of the pool.
func poolContent(i int) string { return fmt.Sprintf("content %d of the pool\n", i) }

// checkStored fails t when a checkpoint stored in one of threads names a
// blob that the bucket does not hold.
func checkStored(t *testing.T, s conformance.Store, b blobs.Bucket, threads ...string) {
	t.Helper()
	ctx := context.Background()
	for _, th := range threads {
		cps, err := s.List(ctx, th)
		if err != nil {
			t.Errorf("List(%s): %v", th, err)
			return
		}
		for _, cp := range cps {
			for _, e := range cp.Files {
				if _, err := b.Head(ctx, e.BlobKey); err != nil {
					t.Errorf("stored checkpoint %s references %s: %v", cp.ID, e.BlobKey, err)
				}
			}
		}
	}
}
