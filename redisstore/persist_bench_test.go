package redisstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/ckptstore/ckptstore/blobs"
	"github.com/ckptstore/ckptstore/internal/redistest"
	"github.com/ckptstore/ckptstore/persist"
	"github.com/ckptstore/ckptstore/persist/persisttest"
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

// BenchmarkDump is persisttest.BenchDump on 20,000 runs on a local
// redis-server: whole (one Dump, SCAN windows of 4096 keys), and in
// pieces resumed at the last record's position (each piece pays one SCAN
// pass to find its place).
func BenchmarkDump(b *testing.B) {
	srv := redistest.Start(b)
	d, err := redisstore.NewPersistence(redisstore.PersistenceOptions{Client: srv.Client(b, nil)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = d.Close() })
	persisttest.BenchDump(b, d, 20_000)
}
