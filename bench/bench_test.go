package bench

// Invariants of these benchmarks:
//
//   - The timer runs only around store calls: checkpoints are generated,
//     leases taken and fixtures built with the timer stopped, so ns/op and
//     allocs/op are the store's (and its client's).
//   - Every timed operation is also recorded in an HDR histogram, whose
//     50th and 99th percentiles are reported as p50-ns and p99-ns.
//   - Every invocation writes a fresh namespace of the backend's engine
//     and clears it afterwards (backends_test.go), so invocations never
//     meet each other's checkpoints, though their ids repeat.
//   - An in-process store never holds more than about roundBytes of
//     appended checkpoints: Append runs in rounds, each in a fresh
//     namespace cleared after it, so a fast store's large b.N cannot
//     exhaust memory.
//   - Fixtures are built with memkv's latency model off (SetLatency), so
//     the modelled cluster costs only the timed operations.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/blobs"
	"github.com/ckptstore/ckptstore/conformance"
	"github.com/ckptstore/ckptstore/internal/workload"
	"github.com/ckptstore/ckptstore/storeurl"
	"github.com/ckptstore/ckptstore/sweep"
)

// roundBytes bounds the checkpoints one Append round makes and stores.
const roundBytes = 32 << 20

// harness is the checkpoint shape of every benchmark but the blob ones:
// files keep their key from the parent four times in five, two hot global
// blobs, an artifact every fourth checkpoint.
func harness(payload string) workload.GenOptions {
	return workload.GenOptions{
		Namespace: "bench", Payload: workload.MustSizeDist(payload),
		BlobShare: 0.8, GlobalBlobs: 2, ArtifactRate: 0.25,
	}
}

// nest runs f as the sub-benchmark path name ("a=1/b=2"), one level per
// element, so that -bench patterns and benchstat see every key.
func nest(b *testing.B, name string, f func(b *testing.B)) {
	first, rest, ok := strings.Cut(name, "/")
	if !ok {
		b.Run(name, f)
		return
	}
	b.Run(first, func(b *testing.B) { nest(b, rest, f) })
}

// metrics collects the latency histogram and the memkv read rounds of a
// benchmark and reports them with the throughput.
type metrics struct {
	hist    *hdrhistogram.Histogram
	rounds  int64
	elapsed time.Duration // timed wall time
}

func newMetrics() *metrics { return &metrics{hist: workload.NewHistogram()} }

func (m *metrics) report(b *testing.B, o *storeurl.Opened, rate string) {
	b.ReportMetric(float64(m.hist.ValueAtQuantile(50)), "p50-ns")
	b.ReportMetric(float64(m.hist.ValueAtQuantile(99)), "p99-ns")
	if rate != "" && m.elapsed > 0 {
		b.ReportMetric(float64(b.N)/m.elapsed.Seconds(), rate)
	}
	if o.ReadRounds != nil {
		b.ReportMetric(float64(m.rounds)/float64(b.N), "rounds/op")
	}
}

func readRounds(o *storeurl.Opened) int64 {
	if o.ReadRounds == nil {
		return 0
	}
	return o.ReadRounds()
}

func latency(b *testing.B, o *storeurl.Opened, on bool) {
	if o.SetLatency != nil {
		if err := o.SetLatency(on); err != nil {
			b.Fatal(err)
		}
	}
}

// chain appends n checkpoints to thread under one lease, and returns them.
func chain(b *testing.B, st conformance.Store, g *workload.Gen, thread string, n int) []*ckptstore.Checkpoint {
	ctx := context.Background()
	lease, err := st.AcquireWriter(ctx, thread)
	if err != nil {
		b.Fatal(err)
	}
	defer lease.Release(ctx)
	var prev *ckptstore.Checkpoint
	head := ""
	out := make([]*ckptstore.Checkpoint, 0, n)
	for range n {
		cp, _ := g.Next(thread, g.NewID(), head, prev)
		if err := st.Append(ctx, cp, head, lease.Writer); err != nil {
			b.Fatal(err)
		}
		head, prev = cp.ID, cp
		out = append(out, cp)
	}
	return out
}

// BenchmarkAppend: writers in parallel, one per thread, each with its own
// lease, as harness processes run; payloads of 2 KB and 50 KB.
func BenchmarkAppend(b *testing.B) {
	for _, be := range backends() {
		b.Run("store="+be.name, func(b *testing.B) {
			for _, threads := range []int{1, 16, 64} {
				b.Run(fmt.Sprintf("threads=%d", threads), func(b *testing.B) {
					for _, payload := range []string{"2KB", "50KB"} {
						b.Run("payload="+payload, func(b *testing.B) { benchAppend(b, be, threads, payload) })
					}
				})
			}
		})
	}
}

func benchAppend(b *testing.B, be backend, threads int, payload string) {
	ctx := context.Background()
	size, _ := workload.ParseSize(payload)
	perRound := max(threads, roundBytes/size)
	m := newMetrics()
	hists := make([]*hdrhistogram.Histogram, threads)
	for i := range hists {
		hists[i] = workload.NewHistogram()
	}
	var last *storeurl.Opened
	b.ReportAllocs()
	b.StopTimer()
	b.ResetTimer()
	for done, round := 0, 0; done < b.N; round++ {
		n := min(perRound, b.N-done)
		o, free := be.open(b)
		last = o
		// Each writer's checkpoints, made in advance: writer i appends
		// n/threads of them (the first n%threads writers one more).
		type writer struct {
			thread string
			lease  *ckptstore.Lease
			cps    []*ckptstore.Checkpoint
		}
		ws := make([]*writer, threads)
		for i := range ws {
			w := &writer{thread: fmt.Sprintf("bench/append/t%d", i)}
			k := n / threads
			if i < n%threads {
				k++
			}
			g := workload.NewGenSeed(harness(payload), uint64(i), uint64(round))
			head := ""
			var prev *ckptstore.Checkpoint
			for range k {
				cp, _ := g.Next(w.thread, g.NewID(), head, prev)
				w.cps = append(w.cps, cp)
				head, prev = cp.ID, cp
			}
			var err error
			if w.lease, err = o.Store.AcquireWriter(ctx, w.thread); err != nil {
				b.Fatal(err)
			}
			ws[i] = w
		}
		r0 := readRounds(o)
		var failed sync.Once
		var wg sync.WaitGroup
		b.StartTimer()
		start := time.Now()
		for i, w := range ws {
			wg.Go(func() {
				head := ""
				for _, cp := range w.cps {
					t := time.Now()
					err := o.Store.Append(ctx, cp, head, w.lease.Writer)
					workload.RecordDuration(hists[i], time.Since(t))
					if err != nil {
						failed.Do(func() { b.Errorf("append to %s: %v", w.thread, err) })
						return
					}
					head = cp.ID
				}
			})
		}
		wg.Wait()
		m.elapsed += time.Since(start)
		b.StopTimer()
		m.rounds += readRounds(o) - r0
		for _, w := range ws {
			w.lease.Release(ctx)
		}
		free()
		done += n
	}
	for _, h := range hists {
		m.hist.Merge(h)
	}
	m.report(b, last, "appends/s")
}

// BenchmarkRead: Get (a random checkpoint), Head and List on a thread of
// 1,000 checkpoints of 2 KB.
func BenchmarkRead(b *testing.B) {
	const thread, n = "bench/read", 1000
	for _, be := range backends() {
		b.Run("store="+be.name, func(b *testing.B) {
			o, free := be.open(b)
			defer free()
			latency(b, o, false)
			cps := chain(b, o.Store, workload.NewGenSeed(harness("2KB"), 1, 1), thread, n)
			latency(b, o, true)
			ctx := context.Background()
			read := func(op string, f func(i int) error) {
				b.Run("op="+op+"/checkpoints=1000", func(b *testing.B) {
					m := newMetrics()
					r0 := readRounds(o)
					b.ReportAllocs()
					b.ResetTimer()
					start := time.Now()
					for i := 0; b.Loop(); i++ {
						t := time.Now()
						err := f(i)
						workload.RecordDuration(m.hist, time.Since(t))
						if err != nil {
							b.Fatal(err)
						}
					}
					m.elapsed = time.Since(start)
					m.rounds = readRounds(o) - r0
					m.report(b, o, "")
				})
			}
			rng := rand.New(rand.NewPCG(1, 2))
			read("Get", func(int) error {
				want := cps[rng.IntN(n)].ID
				cp, err := o.Store.Get(ctx, want)
				if err == nil && (cp == nil || cp.ID != want) {
					err = fmt.Errorf("Get(%q) = %v", want, cp)
				}
				return err
			})
			read("Head", func(int) error {
				h, err := o.Store.GetHead(ctx, thread)
				if err == nil && h != cps[n-1].ID {
					err = fmt.Errorf("Head = %q, want %q", h, cps[n-1].ID)
				}
				return err
			})
			read("List", func(int) error {
				list, err := o.Store.List(ctx, thread)
				if err == nil && len(list) != n {
					err = fmt.Errorf("List returned %d checkpoints, want %d", len(list), n)
				}
				return err
			})
		})
	}
}

// BenchmarkBlobs: ListBlobReferences over 100,000 referenced keys (1,000
// checkpoints of 100 distinct files on 10 threads), and a sweep of a
// bucket holding those keys and 10,000 unreferenced ones, which it
// deletes (they are put back, untimed, before each iteration).
func BenchmarkBlobs(b *testing.B) {
	const threads, perThread, files, garbage = 10, 100, 100, 10_000
	const keys = threads * perThread * files
	for _, be := range backends() {
		b.Run("store="+be.name, func(b *testing.B) {
			o, free := be.open(b)
			defer free()
			latency(b, o, false)
			gopts := workload.GenOptions{Namespace: "bench-blobs", Files: files} // no sharing: every key fresh
			var referenced []string
			for t := range threads {
				g := workload.NewGenSeed(gopts, uint64(t), 7)
				for _, cp := range chain(b, o.Store, g, fmt.Sprintf("bench/blobs/t%d", t), perThread) {
					referenced = append(referenced, cp.BlobKeys()...)
				}
			}
			if len(referenced) != keys {
				b.Fatalf("fixture has %d keys, want %d", len(referenced), keys)
			}
			latency(b, o, true)
			ctx := context.Background()

			b.Run("op=BlobReferences/keys=100k", func(b *testing.B) {
				m := newMetrics()
				r0 := readRounds(o)
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					t := time.Now()
					refs, err := o.Store.ListBlobReferences(ctx)
					workload.RecordDuration(m.hist, time.Since(t))
					if err != nil || len(refs) != keys {
						b.Fatalf("BlobReferences: %d refs, %v", len(refs), err)
					}
				}
				m.rounds = readRounds(o) - r0
				m.report(b, o, "")
			})

			b.Run("op=Sweep/keys=100k", func(b *testing.B) {
				old := time.Now().Add(-time.Hour)
				bucket := blobs.NewMem(blobs.MemOptions{Now: func() time.Time { return old }})
				put := func(k string) {
					if err := bucket.Put(ctx, k, strings.NewReader("x")); err != nil {
						b.Fatal(err)
					}
				}
				for _, k := range referenced {
					put(k)
				}
				junk := workload.NewGenSeed(workload.GenOptions{Namespace: "bench-junk", Files: garbage}, 9, 9)
				cp, _ := junk.Next("junk", "junk", "", nil)
				unreferenced := cp.BlobKeys()
				m := newMetrics()
				r0 := readRounds(o)
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					b.StopTimer()
					for _, k := range unreferenced {
						put(k)
					}
					b.StartTimer()
					t := time.Now()
					deleted, err := sweep.Run(ctx, o.Store, bucket, sweep.Options{})
					workload.RecordDuration(m.hist, time.Since(t))
					if err != nil || len(deleted) != len(unreferenced) {
						b.Fatalf("sweep deleted %d keys, want %d: %v", len(deleted), len(unreferenced), err)
					}
				}
				m.rounds = readRounds(o) - r0
				m.report(b, o, "")
			})
		})
	}
}

// BenchmarkDeleteCheckpoints: prune a 1,000-long chain of 2 KB checkpoints
// to its newest 10 (990 deletions, with their blob counts). Each iteration
// builds its chain on a fresh thread, untimed.
func BenchmarkDeleteCheckpoints(b *testing.B) {
	const n, keep = 1000, 10
	for _, be := range backends() {
		nest(b, fmt.Sprintf("store=%s/chain=%d/keep=%d", be.name, n, keep), func(b *testing.B) {
			o, free := be.open(b)
			defer free()
			p := o.Store
			ctx := context.Background()
			g := workload.NewGenSeed(harness("2KB"), 3, 3)
			m := newMetrics()
			var rounds int64
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				thread := fmt.Sprintf("bench/prune/t%d", i)
				latency(b, o, false)
				chain(b, o.Store, g, thread, n)
				lease, err := o.Store.AcquireWriter(ctx, thread)
				if err != nil {
					b.Fatal(err)
				}
				latency(b, o, true)
				r0 := readRounds(o)
				b.StartTimer()
				t := time.Now()
				deleted, err := p.DeleteCheckpoints(ctx, thread, keep, lease.Writer)
				workload.RecordDuration(m.hist, time.Since(t))
				b.StopTimer()
				rounds += readRounds(o) - r0
				if err != nil || len(deleted) != n-keep {
					b.Fatalf("DeleteCheckpoints deleted %d, want %d: %v", len(deleted), n-keep, err)
				}
				lease.Release(ctx)
				b.StartTimer()
			}
			m.rounds = rounds
			m.report(b, o, "")
		})
	}
}
