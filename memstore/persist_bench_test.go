package memstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/ckptstore/ckptstore/memstore"
	"github.com/ckptstore/ckptstore/persist/driver"
)

// BenchmarkDump dumps 100,000 runs: whole (pages of 256, each one pass
// over the runs map under the lock), and in pieces of 1000 records each a
// Dump resumed at the last one's position, as the server's export pages
// are. It reports records/s.
func BenchmarkDump(b *testing.B) {
	const n, piece = 100_000, 1000
	d := memstore.NewPersistence(memstore.PersistenceOptions{})
	ctx := context.Background()
	recs := make([]driver.Record, n)
	for i := range recs {
		recs[i] = driver.Record{Kind: driver.KindRun, Run: &driver.RunRecord{RunID: fmt.Sprintf("run-%06d", i), ThreadID: "t", Status: driver.RunCompleted, StartedAt: int64(i)}}
	}
	if _, err := d.Load(ctx, recs); err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		size int
	}{{"whole", n + 1}, {"pieces", piece}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				got := 0
				at := driver.DumpPosition{}
				for {
					k := 0
					var last driver.Record
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
