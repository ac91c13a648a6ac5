package persisttest

import (
	"context"
	"fmt"
	"testing"

	"github.com/ckptstore/ckptstore/persist/driver"
)

// BenchDump is a driver's export benchmark: it loads n runs into p (in
// batches of 1000, small enough for every backend's transaction) and
// dumps them whole (one Dump) and in pieces of 1000 records, each a Dump
// resumed at the last one's position, as the server's export pages are.
// It reports records/s. p must be empty; each engine's BenchmarkDump
// calls it with the n its backend affords.
func BenchDump(b *testing.B, p driver.Porter, n int) {
	const piece = 1000
	ctx := context.Background()
	recs := make([]driver.Record, 0, piece)
	for i := range n {
		recs = append(recs, driver.Record{Kind: driver.KindRun, Run: &driver.RunRecord{RunID: fmt.Sprintf("run-%06d", i), ThreadID: "t", Status: driver.RunCompleted, StartedAt: int64(i)}})
		if len(recs) == cap(recs) || i == n-1 {
			if _, err := p.Load(ctx, recs); err != nil {
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
				if got := dumpInPieces(b, p, bc.size); got != n {
					b.Fatalf("dumped %d records, want %d", got, n)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}

// dumpInPieces dumps p in pieces of size records, each a Dump resumed
// where the last stopped, and returns how many records it read.
func dumpInPieces(b *testing.B, p driver.Porter, size int) int {
	ctx := context.Background()
	got := 0
	at := driver.DumpPosition{}
	for {
		k := 0
		var last driver.Record
		for r, err := range p.Dump(ctx, at) {
			if err != nil {
				b.Fatal(err)
			}
			last = r
			if k++; k == size {
				break
			}
		}
		got += k
		if k < size {
			return got
		}
		at = p.PositionOf(last)
	}
}
