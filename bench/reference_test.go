package bench

// BenchmarkReference measures memstore on the four cases the TypeScript
// reference store (InMemorySandboxCheckpointStore of @tanstack/ai-sandbox)
// was measured on, side by side in interleaved runs on this machine:
//
//	case                              reference    memstore goal (10×)
//	append, one writer, 2 KB          27.6k/s      ≥ 280k/s
//	append, one writer, tiny          81k/s        ≥ 800k/s
//	List of a 10,000-checkpoint       243 ms       ≤ 5 ms
//	ListBlobReferences over 200,000 keys  12 s         ≤ 40 ms
//
// "tiny" is one file entry and an empty conversation; "2 KB" is the
// harness shape of BenchmarkAppend with a 2 KB conversation.

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/internal/testkit"
	"github.com/ckptstore/ckptstore/internal/workload"
	"github.com/ckptstore/ckptstore/memstore"
)

func BenchmarkReference(b *testing.B) {
	b.Run("case=append-2KB", func(b *testing.B) {
		benchOneWriter(b, func(g *workload.Gen, thread, id, parent string, prev *ckptstore.Checkpoint) *ckptstore.Checkpoint {
			cp, _ := g.Next(thread, id, parent, prev)
			return cp
		})
	})
	b.Run("case=append-tiny", func(b *testing.B) {
		benchOneWriter(b, func(_ *workload.Gen, thread, id, parent string, _ *ckptstore.Checkpoint) *ckptstore.Checkpoint {
			return &ckptstore.Checkpoint{ID: id, ThreadID: thread, ParentCheckpointID: parent, CreatedAt: 1,
				Reason: ckptstore.ReasonAutomatic, Conversation: []byte("[]"),
				Files: []ckptstore.Entry{{Path: "a.txt", Kind: ckptstore.KindFile, BlobKey: testkit.FileKey(1), Size: 1}}}
		})
	})
	b.Run("case=list-10000", func(b *testing.B) {
		const n = 10_000
		s := memstore.New(ckptstore.Options{})
		chain(b, s, workload.NewGenSeed(harness("2KB"), 1, 2), "bench/list", n)
		ctx := context.Background()
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			cps, err := s.List(ctx, "bench/list")
			if err != nil || len(cps) != n {
				b.Fatalf("List: %d checkpoints, %v", len(cps), err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/list")
	})
	b.Run("case=blobrefs-200000", func(b *testing.B) {
		const keys, perCheckpoint = 200_000, 100
		s := memstore.New(ckptstore.Options{})
		ctx := context.Background()
		lease, err := s.AcquireWriter(ctx, "bench/refs")
		if err != nil {
			b.Fatal(err)
		}
		head := ""
		for i := range keys / perCheckpoint {
			cp := &ckptstore.Checkpoint{ID: fmt.Sprint("r", i), ThreadID: "bench/refs", ParentCheckpointID: head,
				CreatedAt: float64(i), Reason: ckptstore.ReasonAutomatic}
			for j := range perCheckpoint {
				cp.Files = append(cp.Files, ckptstore.Entry{Path: fmt.Sprint("f", j), Kind: ckptstore.KindFile,
					BlobKey: testkit.FileKey(i*perCheckpoint + j), Size: 1})
			}
			if err := s.Append(ctx, cp, head, lease.Writer); err != nil {
				b.Fatal(err)
			}
			head = cp.ID
		}
		b.ReportAllocs()
		b.ResetTimer()
		for b.Loop() {
			refs, err := s.ListBlobReferences(ctx)
			if err != nil || len(refs) != keys {
				b.Fatalf("BlobReferences: %d keys, %v", len(refs), err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/scan")
	})
}

// benchOneWriter appends made checkpoints to one thread from one writer,
// in rounds of at most roundBytes on fresh stores, and reports appends/s.
func benchOneWriter(b *testing.B, mk func(g *workload.Gen, thread, id, parent string, prev *ckptstore.Checkpoint) *ckptstore.Checkpoint) {
	ctx := context.Background()
	const thread, perRound = "bench/one", 20_000
	var elapsed time.Duration
	b.ReportAllocs()
	b.StopTimer()
	b.ResetTimer()
	for done, round := 0, 0; done < b.N; round++ {
		n := min(perRound, b.N-done)
		g := workload.NewGenSeed(harness("2KB"), 7, uint64(round))
		cps := make([]*ckptstore.Checkpoint, n)
		head := ""
		var prev *ckptstore.Checkpoint
		for i := range cps {
			cps[i] = mk(g, thread, g.NewID(), head, prev)
			head, prev = cps[i].ID, cps[i]
		}
		s := memstore.New(ckptstore.Options{})
		lease, err := s.AcquireWriter(ctx, thread)
		if err != nil {
			b.Fatal(err)
		}
		head = ""
		b.StartTimer()
		start := time.Now()
		for _, cp := range cps {
			if err := s.Append(ctx, cp, head, lease.Writer); err != nil {
				b.Fatal(err)
			}
			head = cp.ID
		}
		elapsed += time.Since(start)
		b.StopTimer()
		done += n
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "appends/s")
}
