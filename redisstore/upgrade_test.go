package redisstore

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ckptstore/ckptstore/internal/testkit"
)

// toFirstLayout rewrites a keyspace of the present layout as the first
// one wrote it: members sets scored by createdAt, no list members, no list
// index, no thread index.
func toFirstLayout(t *testing.T, c redis.UniversalClient, s *Driver, threads ...string) {
	t.Helper()
	ctx := context.Background()
	for _, th := range threads {
		list, err := s.p().List(ctx, th)
		must(t, err)
		for _, cp := range list {
			must(t, c.HDel(ctx, string(s.keys.checkpoint(cp.ID)), "l").Err())
			must(t, c.ZAdd(ctx, s.keys.base+"m:"+th, redis.Z{Score: cp.CreatedAt, Member: cp.ID}).Err())
		}
		must(t, c.Del(ctx, string(s.keys.list(th))).Err())
	}
	must(t, c.Del(ctx, s.keys.threads).Err())
}

// Upgrade turns a first-layout keyspace into one that Check passes and
// that lists, pages and enumerates as before; run again, it moves nothing.
func TestUpgradeFromFirstLayout(t *testing.T) {
	backends(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := context.Background()
		s := newStore(t, c, Options{BatchSize: 3})
		want := testkit.IDs(tieThread(t, s, "t", 11))
		w := acquire(t, s, "p")
		chainOf(t, s, "p", w, 1)
		must(t, s.p().DeleteHead(ctx, "p", "p-000", w)) // "p" keeps no head, no checkpoint: not a thread
		wq := acquire(t, s, "q")
		chainOf(t, s, "q", wq, 3)
		_, err := s.p().DeleteCheckpoints(ctx, "q", 1, wq)
		must(t, err)
		toFirstLayout(t, c, s, "t", "q")
		if problems, err := s.Check(ctx); err != nil || len(problems) == 0 {
			t.Fatalf("Check of the first layout = %v, %v; want problems", problems, err)
		}
		moved, err := s.Upgrade(ctx)
		must(t, err)
		if moved != 12 {
			t.Fatalf("Upgrade moved %d checkpoints, want 12", moved)
		}
		checkStore(t, s)
		list, err := s.p().List(ctx, "t")
		must(t, err)
		require.Equal(t, want, testkit.IDs(list), "List after Upgrade")
		threads, _, err := s.p().Threads(ctx, "", 0)
		require.NoError(t, err)
		require.Equal(t, []string{"q", "t"}, threads, "Threads after Upgrade")
		again, err := s.Upgrade(ctx)
		must(t, err)
		if again != 0 {
			t.Fatalf("a second Upgrade moved %d", again)
		}
		checkStore(t, s)
	})
}
