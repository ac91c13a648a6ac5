package fdbstore_test

import (
	"fmt"
	"testing"

	"github.com/ckptstore/ckptstore/fdbstore"
	"github.com/ckptstore/ckptstore/fdbstore/kv/memkv"
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
				if err := s.Append(ctx, checkpoint("t", id, head, float64(i), blobs...), head, lease.Writer); err != nil {
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
	chain(b, s, lease.Writer, "t", 100)
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
