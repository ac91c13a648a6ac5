package persist_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/ckptstore/ckptstore/blobs"
	"github.com/ckptstore/ckptstore/memstore"
	"github.com/ckptstore/ckptstore/persist"
)

func benchStore(b *testing.B) *persist.Store {
	s, err := persist.New(memstore.NewPersistence(memstore.PersistenceOptions{}), persist.Options{Bucket: blobs.NewMem(blobs.MemOptions{})})
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// BenchmarkChatTurn is one chat turn's run calls on the memory driver:
// createOrResume, findActiveRun, update to completed. It measures the
// portable layer's own cost (checks, clones), the floor under every driver.
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

// BenchmarkWithLock is an uncontended withLock on the memory driver: watch,
// acquire, the keeper goroutine, release.
func BenchmarkWithLock(b *testing.B) {
	s, ctx := benchStore(b), context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Locks.WithLock(ctx, "k", func(context.Context) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}
