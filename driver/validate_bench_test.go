package driver_test

import (
	"testing"

	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/internal/workload"
)

// BenchmarkValidateHarness measures Append's pure checks on the harness shape
// of bench/ (8 entries, a 1 KB conversation, an artifact in four): most of a
// memstore Append's time.
func BenchmarkValidateHarness(b *testing.B) {
	g := workload.NewGenSeed(workload.GenOptions{Namespace: "bench", Payload: workload.MustSizeDist("2KB"),
		BlobShare: 0.8, GlobalBlobs: 2, ArtifactRate: 0.25}, 7, 0)
	cps := make([]*driver.Checkpoint, 256)
	var prev *driver.Checkpoint
	for i := range cps {
		cps[i], _ = g.Next("bench/one", g.NewID(), "", prev)
		prev = cps[i]
	}
	w := driver.Writer{ThreadID: "bench/one", OwnerToken: "t", Fence: 1}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := driver.ValidateAppend(cps[i%len(cps)], "", w); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
