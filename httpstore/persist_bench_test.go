package httpstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/httpstore"
	"github.com/ckptstore/ckptstore/internal/redistest"
	"github.com/ckptstore/ckptstore/persist"
	"github.com/ckptstore/ckptstore/redisstore"
	"github.com/ckptstore/ckptstore/storeurl"
)

// redisBackend keeps a namespace's checkpoints (redisstore) and
// persistence (redisstore.Persistence) on one redis-server, each under the
// namespace's prefix.
type redisBackend struct{ c redis.UniversalClient }

func (b redisBackend) Namespace(name string, lease ckptstore.Options) (*storeurl.Tenant, error) {
	s, err := redisstore.New(b.c, redisstore.Options{Options: lease, Prefix: "ckpt-" + name})
	if err != nil {
		return nil, err
	}
	p, err := redisstore.NewPersistence(redisstore.PersistenceOptions{Client: b.c, Prefix: "persist-" + name, Now: lease.Now})
	if err != nil {
		return nil, err
	}
	return &storeurl.Tenant{Store: s, Instances: redisstore.NewInstanceStore(b.c, "inst-"+name), Persistence: p}, nil
}

// BenchmarkChatTurn is one chat turn's persistence calls through the Go
// client and a loopback server: createOrResume, saveThread (the turn's
// transcript), update to completed, findActiveRun. Four HTTP round trips;
// beside persist's and redisstore's BenchmarkChatTurn (the same calls
// without the hop), it shows what the hop costs.
func BenchmarkChatTurn(b *testing.B) {
	b.Run("mem", func(b *testing.B) { benchChatTurn(b, memBackend{}) })
	b.Run("redis", func(b *testing.B) {
		srv := redistest.Start(b)
		benchChatTurn(b, redisBackend{srv.Client(b, nil)})
	})
}

func benchChatTurn(b *testing.B, backend httpstore.Backend) {
	srv := httptest.NewServer(httpstore.NewHandler(backend, httpstore.HandlerOptions{Tokens: map[string]string{"tok": "bench"}}))
	b.Cleanup(srv.Close)
	c, err := httpstore.NewClient(srv.URL, httpstore.ClientOptions{Token: "tok"})
	if err != nil {
		b.Fatal(err)
	}
	p, ctx := c.Persistence(), context.Background()
	messages := json.RawMessage(`[{"role":"user","content":"hello"},{"role":"assistant","content":"hi there, how can I help?"}]`)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		id := fmt.Sprintf("run-%d", i)
		thread := fmt.Sprintf("thread-%d", i/4) // four turns per thread
		if _, err := p.Runs.CreateOrResume(ctx, persist.RunStart{RunID: id, ThreadID: thread, StartedAt: int64(i)}); err != nil {
			b.Fatal(err)
		}
		if err := c.SaveThread(ctx, thread, messages); err != nil {
			b.Fatal(err)
		}
		if err := p.Runs.Update(ctx, id, persist.RunPatch{Status: persist.Set(persist.RunCompleted), FinishedAt: persist.Set(int64(i))}); err != nil {
			b.Fatal(err)
		}
		if r, err := p.Runs.FindActiveRun(ctx, thread); err != nil || r != nil {
			b.Fatal(r, err) // the turn's run completed: none is active
		}
	}
}

// BenchmarkWithLockHTTP is an uncontended withLock through the Go client:
// the acquire and the release, two round trips, and the protocol's keeper.
func BenchmarkWithLockHTTP(b *testing.B) {
	srv := httptest.NewServer(httpstore.NewHandler(memBackend{}, httpstore.HandlerOptions{Tokens: map[string]string{"tok": "bench"}}))
	b.Cleanup(srv.Close)
	c, err := httpstore.NewClient(srv.URL, httpstore.ClientOptions{Token: "tok"})
	if err != nil {
		b.Fatal(err)
	}
	p, ctx := c.Persistence(), context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := p.Locks.WithLock(ctx, "k", func(context.Context) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
}
