package memkv

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/ckptstore/ckptstore/fdbstore/kv"
)

// Commit throughput of the engine itself (no injected latency). Run with
// go test -run '^$' -bench . ./fdbstore/kv/memkv/
func BenchmarkCommit(b *testing.B) {
	db := New()
	value := make([]byte, 100)
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		key := fmt.Appendf(nil, "k/%06d", i%10000)
		i++
		if err := db.Transact(ctx, func(tr kv.Transaction) error {
			tr.Set(key, value)
			return nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(db.Stats().Commits)/b.Elapsed().Seconds(), "commits/s")
}

// BenchmarkCommitParallel: writers on disjoint keys, each a read and a
// write, so every commit runs the conflict check against its neighbours.
func BenchmarkCommitParallel(b *testing.B) {
	db := New()
	value := make([]byte, 100)
	ctx := context.Background()
	var worker atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(8) // 8 × GOMAXPROCS writers
	b.RunParallel(func(pb *testing.PB) {
		w := worker.Add(1)
		i := 0
		for pb.Next() {
			key := fmt.Appendf(nil, "w%03d/%06d", w, i%1000)
			i++
			if err := db.Transact(ctx, func(tr kv.Transaction) error {
				if _, err := tr.Get(key).Get(); err != nil {
					return err
				}
				tr.Set(key, value)
				return nil
			}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	s := db.Stats()
	b.ReportMetric(float64(s.Commits)/b.Elapsed().Seconds(), "commits/s")
	b.ReportMetric(float64(s.Conflicts), "conflicts")
}

// BenchmarkAddHotKeyParallel: every writer adds to one key; atomic adds
// never conflict.
func BenchmarkAddHotKeyParallel(b *testing.B) {
	db := New()
	ctx := context.Background()
	b.SetParallelism(8)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := db.Transact(ctx, func(tr kv.Transaction) error {
				tr.Add([]byte("hot"), 1)
				return nil
			}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	s := db.Stats()
	b.ReportMetric(float64(s.Commits)/b.Elapsed().Seconds(), "commits/s")
	if s.Conflicts != 0 {
		b.Fatalf("%d conflicts between atomic adds", s.Conflicts)
	}
}
