package fdbstore_test

import (
	"fmt"
	"runtime/metrics"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/fdbstore"
	"github.com/ckptstore/ckptstore/fdbstore/internal/storetest"
	"github.com/ckptstore/ckptstore/fdbstore/kv/memkv"
	"github.com/ckptstore/ckptstore/internal/testkit"
	"github.com/ckptstore/ckptstore/internal/workload"
)

// BenchmarkAppend appends to one thread's chain on memkv and reports the
// engine's counters per Append: read rounds, commits, bytes written.
func BenchmarkAppend(b *testing.B) {
	for _, files := range []int{10, 1000} {
		b.Run(fmt.Sprintf("files=%d", files), func(b *testing.B) {
			s, db := newMemStore(b, fdbstore.Options{}, memkv.Options{})
			lease, err := s.AcquireWriter(ctx, "t")
			must(b, err)
			blobs := make([]int, files)
			for i := range blobs {
				blobs[i] = i
			}
			head := ""
			db.ResetStats()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				id := fmt.Sprintf("c%d", i)
				if err := s.Append(ctx, testkit.Checkpoint("t", id, head, float64(i), blobs...), head, lease.Writer); err != nil {
					b.Fatal(err)
				}
				head = id
			}
			b.StopTimer()
			st := db.Stats()
			b.ReportMetric(float64(st.ReadRounds)/float64(b.N), "rounds/op")
			b.ReportMetric(float64(st.Commits)/float64(b.N), "commits/op")
			b.ReportMetric(float64(st.BytesWritten)/float64(b.N), "B-written/op")
		})
	}
}

// BenchmarkList lists a thread of 100 checkpoints: one range read.
func BenchmarkList(b *testing.B) {
	s, db := newMemStore(b, fdbstore.Options{}, memkv.Options{})
	lease, err := s.AcquireWriter(ctx, "t")
	must(b, err)
	storetest.Chain(b, s, lease.Writer, "t", 100)
	db.ResetStats()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cps, err := s.List(ctx, "t")
		if err != nil || len(cps) != 100 {
			b.Fatal(len(cps), err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(db.Stats().ReadRounds)/float64(b.N), "rounds/op")
}

// BenchmarkAppendParallel: one writer per thread, each with its own lease,
// all appending at once, as harness processes do; checkpoints shaped like
// the project benchmark's (./bench: workload generator, 80 % of files
// shared with the parent, two blobs every checkpoint references). It
// reports throughput, latency percentiles, CPU time and the engine's
// conflicts and retries per append. Writers on distinct threads share no
// key but the blob counts, which they only Add to, so a conflict or a
// retry fails the benchmark.
//
//	go test -run '^$' -bench AppendParallel ./fdbstore
func BenchmarkAppendParallel(b *testing.B) {
	for _, threads := range []int{1, 16, 64} {
		for _, payload := range []string{"2KB", "50KB"} {
			b.Run(fmt.Sprintf("threads=%d/payload=%s", threads, payload), func(b *testing.B) {
				benchAppendParallel(b, threads, payload)
			})
		}
	}
}

// idleTime is the time, in seconds, the runtime's Ps have spent idle: with
// more writers than cores it stays near 0 unless goroutines wait on each
// other (a lock convoy leaves Ps idle while the lock's next owner waits to
// be scheduled).
func idleTime() float64 {
	s := []metrics.Sample{{Name: "/cpu/classes/idle:cpu-seconds"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindFloat64 {
		return 0
	}
	return s[0].Value.Float64()
}

// appendWriter is one thread of benchAppendParallel: its lease, the
// checkpoints it appends and how long each Append took.
type appendWriter struct {
	w   ckptstore.Writer
	cps []*ckptstore.Checkpoint
	lat []time.Duration
}

func benchAppendParallel(b *testing.B, threads int, payload string) {
	s, db := newMemStore(b, fdbstore.Options{}, memkv.Options{})
	ws := appendWriters(b, s, threads, payload)
	db.ResetStats()
	b.ReportAllocs()
	cpu0, cpuOK := cpuTime()
	idle0 := idleTime()
	b.ResetTimer()
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Go(func() {
			head := ""
			for _, cp := range w.cps {
				t := time.Now()
				if err := s.Append(ctx, cp, head, w.w); err != nil {
					b.Error(err)
					return
				}
				w.lat = append(w.lat, time.Since(t))
				head = cp.ID
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	cpu1, _ := cpuTime()
	idle := idleTime() - idle0
	var lat []time.Duration
	for _, w := range ws {
		lat = append(lat, w.lat...)
	}
	n := float64(b.N)
	reportLatencies(b, lat)
	// CPU time (user and system, all goroutines and the collector) per
	// append: it shows work that grows with the number of writers, which
	// ns/op mixes up with the load other processes put on the machine.
	if cpuOK {
		b.ReportMetric(float64(cpu1-cpu0)/n, "cpu-ns/op")
	}
	b.ReportMetric(idle*1e9/n, "idle-ns/op")
	st := db.Stats()
	b.ReportMetric(float64(st.Conflicts)/n, "conflicts/op")
	b.ReportMetric(float64(st.Retries)/n, "retries/op")
	b.ReportMetric(float64(st.ReadRounds)/n, "rounds/op")
	b.ReportMetric(float64(st.Commits)/n, "commits/op")
	if st.Conflicts != 0 || st.Retries != 0 {
		b.Errorf("%d conflicts and %d retries between writers of distinct threads; want none", st.Conflicts, st.Retries)
	}
}

// appendWriters takes the leases of threads threads and generates their
// checkpoints: writer i appends b.N/threads of the b.N, the first
// b.N%threads one more, with payloads of the size distribution payload.
func appendWriters(b *testing.B, s *ckptstore.Store, threads int, payload string) []*appendWriter {
	gopts := workload.GenOptions{
		Namespace: "bench", Payload: workload.MustSizeDist(payload),
		BlobShare: 0.8, GlobalBlobs: 2, ArtifactRate: 0.25,
	}
	ws := make([]*appendWriter, threads)
	for i := range ws {
		thread := fmt.Sprintf("bench/append/t%d", i)
		lease, err := s.AcquireWriter(ctx, thread)
		must(b, err)
		w := &appendWriter{w: lease.Writer}
		g := workload.NewGenSeed(gopts, uint64(i), 1)
		head := ""
		var prev *ckptstore.Checkpoint
		k := b.N / threads
		if i < b.N%threads {
			k++
		}
		for range k {
			cp, _ := g.Next(thread, g.NewID(), head, prev)
			w.cps = append(w.cps, cp)
			head, prev = cp.ID, cp
		}
		w.lat = make([]time.Duration, 0, len(w.cps))
		ws[i] = w
	}
	return ws
}

// reportLatencies reports the appends per second and the p50, p90, p99 and
// largest of lat (which it sorts).
func reportLatencies(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "appends/s")
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)*99/100]), "p99-ns")
		b.ReportMetric(float64(lat[len(lat)*50/100]), "p50-ns")
		b.ReportMetric(float64(lat[len(lat)*90/100]), "p90-ns")
		b.ReportMetric(float64(lat[len(lat)-1]), "max-ns")
	}
}

// BenchmarkReads measures Get, Restore and ListPage under memkv's 1 ms
// read latency, the cost of a round trip that the one-round layouts save:
// each op should take about one latency, not two.
//
//	go test -run '^$' -bench Reads ./fdbstore
func BenchmarkReads(b *testing.B) {
	s, db := newMemStore(b, fdbstore.Options{}, memkv.Options{})
	lease, err := s.AcquireWriter(ctx, "t")
	must(b, err)
	ids := storetest.Chain(b, s, lease.Writer, "t", 300)
	must(b, db.SetFaults(memkv.Faults{ReadLatency: time.Millisecond}))
	for _, c := range []struct {
		name string
		op   func(i int) error
	}{
		{"Get", func(i int) error { _, err := s.Get(ctx, ids[i%len(ids)]); return err }},
		{"Restore", func(int) error { _, _, err := fdbDriver(s).Restore(ctx, "t"); return err }},
		{"HeadThenGet", func(int) error {
			h, err := s.GetHead(ctx, "t")
			if err == nil {
				_, err = s.Get(ctx, h)
			}
			return err
		}},
		{"ListPage100", func(int) error {
			_, _, err := s.ListPage(ctx, "t", ckptstore.ListOptions{Limit: 100})
			return err
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			db.ResetStats()
			for i := 0; i < b.N; i++ {
				if err := c.op(i); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(db.Stats().ReadRounds)/float64(b.N), "rounds/op")
		})
	}
}
