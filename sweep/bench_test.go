package sweep_test

// Benchmarks of the sweep over n blobs of which every other one is
// referenced (so 1,000,000 blobs meet 500,000 references and 500,000
// deletions). They report:
//
//   - keys/s: blobs examined per second of Run, deletions included;
//   - peak-live-MB: the highest live heap above the live heap before Run,
//     read after a full GC at ten points of an untimed dry run (the whole
//     merge, without deletions) paused mid-stream: what the sweep retains,
//     flat in n when its memory is bounded. For collect, the live heap
//     after Run while the returned key list is held;
//   - peak-heap-MB: the highest heap (live plus garbage not yet collected)
//     during the timed run, at the default GOGC, above the heap before it;
//     it follows the GC's pacing, not what the sweep keeps.
//
// References are streamed by a RefLister that makes keys on the fly, and
// deleted keys go to Options.OnDeleted, so the numbers are the merge's own.
// Sub-benchmarks named collect return the deleted-key slice instead.
//
// Run:  go test -run '^$' -bench Sweep -benchtime 1x ./sweep/
// The file bucket with 1M keys takes about 8 minutes here (building and
// removing a million files dominates); it runs only with
// SWEEP_BENCH_FILE_1M=1.

import (
	"context"
	"fmt"
	"iter"
	"os"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/blobs"
	"github.com/ckptstore/ckptstore/conformance"
	"github.com/ckptstore/ckptstore/memstore"
	"github.com/ckptstore/ckptstore/sweep"
)

// benchKey is the i-th of n content keys, ascending in i and spread evenly
// over the hex space like real SHA-256 keys.
func benchKey(i, n int) string {
	step := ^uint64(0) / uint64(n)
	return fmt.Sprintf("%ssha256/%016x%048x", blobs.FilesPrefix, uint64(i)*step, i)
}

// genRefs is a RefLister referencing every even key of n.
type genRefs struct {
	conformance.Store
	n int
}

func (g genRefs) BlobReferencesSeq(ctx context.Context) iter.Seq2[ckptstore.BlobRef, error] {
	return func(yield func(ckptstore.BlobRef, error) bool) {
		for i := 0; i < g.n; i += 2 {
			if !yield(ckptstore.BlobRef{Key: benchKey(i, g.n), References: 1}, nil) {
				return
			}
		}
	}
}

// fill puts keys i = from, from+step, … < n into b with 8 writers.
func fill(b *testing.B, bk blobs.Bucket, n, from, step int) {
	b.Helper()
	var wg sync.WaitGroup
	var next atomic.Int64
	next.Store(int64(from))
	var failed atomic.Value
	for range 8 {
		wg.Go(func() {
			for {
				i := int(next.Add(int64(step))) - step
				if i >= n {
					return
				}
				if err := bk.Put(context.Background(), benchKey(i, n), strings.NewReader("")); err != nil {
					failed.Store(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
}

// heapSampler records the peak heap and live heap while it runs.
type heapSampler struct {
	stop     chan struct{}
	done     chan struct{}
	peakHeap uint64
	peakLive uint64
}

var sampleNames = []string{"/memory/classes/heap/objects:bytes", "/gc/heap/live:bytes"}

func readHeap() (heap, live uint64) {
	s := []metrics.Sample{{Name: sampleNames[0]}, {Name: sampleNames[1]}}
	metrics.Read(s)
	return s[0].Value.Uint64(), s[1].Value.Uint64()
}

func startSampler() *heapSampler {
	h := &heapSampler{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(h.done)
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			heap, live := readHeap()
			h.peakHeap, h.peakLive = max(h.peakHeap, heap), max(h.peakLive, live)
			select {
			case <-h.stop:
				return
			case <-t.C:
			}
		}
	}()
	return h
}

func (h *heapSampler) finish() {
	close(h.stop)
	<-h.done
	heap, live := readHeap()
	h.peakHeap, h.peakLive = max(h.peakHeap, heap), max(h.peakLive, live)
}

func BenchmarkSweep(b *testing.B) {
	type bucketCase struct {
		name string
		open func(b *testing.B) blobs.Bucket
	}
	buckets := []bucketCase{
		{"mem", func(b *testing.B) blobs.Bucket { return blobs.NewMem(blobs.MemOptions{}) }},
		{"file", func(b *testing.B) blobs.Bucket {
			fb, err := blobs.OpenFile(b.TempDir(), blobs.FileOptions{NoSync: true})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { fb.Close() })
			return fb
		}},
	}
	for _, bc := range buckets {
		for _, n := range []int{100_000, 1_000_000} {
			for _, collect := range []bool{false, true} {
				name := fmt.Sprintf("%s/%dk", bc.name, n/1000)
				if collect {
					if n != 1_000_000 {
						continue
					}
					name += "/collect"
				}
				b.Run(name, func(b *testing.B) {
					if bc.name == "file" && n >= 1_000_000 && os.Getenv("SWEEP_BENCH_FILE_1M") == "" {
						b.Skip("a 1M-file bucket takes minutes to build and remove; set SWEEP_BENCH_FILE_1M=1 to run it")
					}
					benchSweep(b, bc.open(b), n, collect)
				})
			}
		}
	}
}

func benchSweep(b *testing.B, bk blobs.Bucket, n int, collect bool) {
	fill(b, bk, n, 0, 1)
	refs := genRefs{Store: memstore.New(ckptstore.Options{}), n: n}
	now := func() time.Time { return time.Now().Add(time.Hour) }

	// Memory pass, untimed: a dry run (the whole merge, without deletions,
	// so the bucket stays as it is) that stops ten times along the way to
	// collect garbage and read the live heap. In a dry run OnDeleted runs
	// on the merging goroutine, so the merge is paused mid-stream and
	// everything it holds is live.
	b.StopTimer()
	runtime.GC()
	_, baseLive := readHeap()
	var peakLive uint64
	var would int64
	opts := sweep.Options{OlderThan: time.Minute, Now: now, DryRun: true}
	if !collect {
		opts.OnDeleted = func(string) {
			if would++; would%int64(n/20) == 0 {
				runtime.GC()
				_, live := readHeap()
				peakLive = max(peakLive, live-min(live, baseLive))
			}
		}
	}
	keys, err := sweep.Run(context.Background(), refs, bk, opts)
	if err != nil {
		b.Fatal(err)
	}
	if collect {
		// What the caller holds is the list of deleted keys.
		would = int64(len(keys))
		runtime.GC()
		_, live := readHeap()
		peakLive = live - min(live, baseLive)
		runtime.KeepAlive(keys)
	}
	keys = nil
	if would != int64(n/2) {
		b.Fatalf("dry run found %d keys, want %d", would, n/2)
	}

	// Timed passes: real deletions at the default GC pacing.
	var peakHeap uint64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		if i > 0 {
			fill(b, bk, n, 1, 2) // put back the odd keys the last run deleted
		}
		runtime.GC()
		baseHeap, _ := readHeap()
		s := startSampler()
		b.StartTimer()

		var deleted atomic.Int64
		opts := sweep.Options{OlderThan: time.Minute, Now: now}
		if !collect {
			opts.OnDeleted = func(string) { deleted.Add(1) }
		}
		keys, err := sweep.Run(context.Background(), refs, bk, opts)
		if err != nil {
			b.Fatal(err)
		}

		b.StopTimer()
		s.finish()
		if collect {
			deleted.Store(int64(len(keys)))
		}
		if deleted.Load() != int64(n/2) {
			b.Fatalf("deleted %d keys, want %d", deleted.Load(), n/2)
		}
		peakHeap = max(peakHeap, s.peakHeap-min(s.peakHeap, baseHeap))
		b.StartTimer()
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "keys/s")
	b.ReportMetric(float64(peakLive)/(1<<20), "peak-live-MB")
	b.ReportMetric(float64(peakHeap)/(1<<20), "peak-heap-MB")
}
