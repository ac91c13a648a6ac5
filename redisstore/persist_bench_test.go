package redisstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/ckptstore/ckptstore/blobs"
	"github.com/ckptstore/ckptstore/internal/redistest"
	"github.com/ckptstore/ckptstore/persist"
	pdriver "github.com/ckptstore/ckptstore/persist/driver"
	"github.com/ckptstore/ckptstore/redisstore"
)

func benchStore(b *testing.B) *persist.Store {
	srv := redistest.Start(b)
	d, err := redisstore.NewPersistence(redisstore.PersistenceOptions{Client: srv.Client(b, nil)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = d.Close() })
	s, err := persist.New(d, persist.Options{Bucket: blobs.NewMem(blobs.MemOptions{})})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkChatTurn is persist's BenchmarkChatTurn on a local
// redis-server: createOrResume, findActiveRun, update to completed, each
// one round trip (one script, or one command).
func BenchmarkChatTurn(b *testing.B) {
	s, ctx := benchStore(b), context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		id := fmt.Sprintf("run-%d", i)
		thread := fmt.Sprintf("thread-%d", i/4) // four turns per thread
		if _, err := s.Runs.CreateOrResume(ctx, persist.RunStart{RunID: id, ThreadID: thread, StartedAt: int64(i)}); err != nil {
			b.Fatal(err)
		}
		if r, err := s.Runs.FindActiveRun(ctx, thread); err != nil || r == nil {
			b.Fatal(r, err)
		}
		if err := s.Runs.Update(ctx, id, persist.RunPatch{Status: persist.Set(persist.RunCompleted), FinishedAt: persist.Set(int64(i))}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWithLock is an uncontended withLock on a local redis-server:
// the watch (on the driver's one subscription), acquire, release.
func BenchmarkWithLock(b *testing.B) {
	s, ctx := benchStore(b), context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Locks.WithLock(ctx, "k", func(context.Context) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDump dumps 20,000 runs on a local redis-server: whole (one
// Dump, SCAN windows of 4096 keys), and in pieces of 1000 records each a
// Dump resumed at the last one's position, as the server's export pages
// are (each piece pays one SCAN pass to find its place). It reports
// records/s.
func BenchmarkDump(b *testing.B) {
	const n, piece = 20_000, 1000
	srv := redistest.Start(b)
	d, err := redisstore.NewPersistence(redisstore.PersistenceOptions{Client: srv.Client(b, nil)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = d.Close() })
	ctx := context.Background()
	recs := make([]pdriver.Record, 0, 1000)
	for i := range n {
		recs = append(recs, pdriver.Record{Kind: pdriver.KindRun, Run: &pdriver.RunRecord{RunID: fmt.Sprintf("run-%06d", i), ThreadID: "t", Status: pdriver.RunCompleted, StartedAt: int64(i)}})
		if len(recs) == cap(recs) {
			if _, err := d.Load(ctx, recs); err != nil {
				b.Fatal(err)
			}
			recs = recs[:0]
		}
	}
	for _, bc := range []struct {
		name string
		size int
	}{{"whole", n + 1}, {"pieces", piece}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				got := 0
				at := pdriver.DumpPosition{}
				for {
					k := 0
					var last pdriver.Record
					for r, err := range d.Dump(ctx, at) {
						if err != nil {
							b.Fatal(err)
						}
						last = r
						if k++; k == bc.size {
							break
						}
					}
					got += k
					if k < bc.size {
						break
					}
					at = d.PositionOf(last)
				}
				if got != n {
					b.Fatalf("dumped %d records, want %d", got, n)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
