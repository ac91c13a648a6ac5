package redisstore

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/internal/redistest"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

// checkStore fails t with every problem Check reports.
func checkStore(t testing.TB, s *Driver) {
	t.Helper()
	problems, err := s.Check(context.Background())
	must(t, err)
	for _, p := range problems {
		t.Errorf("Check: %s", p)
	}
}

// Each corruption of a consistent keyspace is reported, and names the
// key it broke.
func TestCheckFindsCorruption(t *testing.T) {
	backends(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := context.Background()
		for _, tc := range []struct {
			name    string
			corrupt func(s *Driver)
			want    string
		}{
			{"count at zero", func(s *Driver) { c.HSet(ctx, s.keys.refs, testkit.FileKey(1), 0) }, "at 0 or below"},
			{"count off by one", func(s *Driver) { c.HIncrBy(ctx, s.keys.refs, testkit.FileKey(1), 1) }, "a recount"},
			{"count gone", func(s *Driver) { c.HDel(ctx, s.keys.refs, testkit.FileKey(2)) }, "not counted"},
			{"refkeys apart", func(s *Driver) { c.ZAdd(ctx, s.keys.refKeys, redis.Z{Member: "x"}) }, "refkeys"},
			{"index without data", func(s *Driver) { c.Del(ctx, string(s.keys.checkpoint("b"))) }, "not stored"},
			{"data without index", func(s *Driver) { c.ZRem(ctx, string(s.keys.list("t")), orderMember(2, "b")) }, "not in the list index"},
			{"link without checkpoint", func(s *Driver) {
				c.ZAdd(ctx, string(s.keys.list("t")), redis.Z{Member: orderMember(9, "ghost")})
			}, "not stored"},
			{"fence went down", func(s *Driver) { c.HSet(ctx, string(s.keys.thread("t")), "f", 0) }, "went down"},
			{"op key forever", func(s *Driver) { c.Set(ctx, string(s.keys.op(opAppend, "stale")), "1", 0) }, "without an expiry"},
			{"thread index misses", func(s *Driver) { c.ZRem(ctx, s.keys.threads, "t") }, "not in the thread index"},
			{"thread index extra", func(s *Driver) { c.ZAdd(ctx, s.keys.threads, redis.Z{Member: "nobody"}) }, "has no head"},
			{"bad transcript", func(s *Driver) { c.Set(ctx, string(s.keys.transcript("t")), "{}", 0) }, "not a JSON array"},
			{"undecodable checkpoint", func(s *Driver) { c.HSet(ctx, string(s.keys.checkpoint("a")), "b", "junk") }, "does not decode"},
			{"checkpoint not a hash", func(s *Driver) { c.Set(ctx, string(s.keys.checkpoint("zz")), "1", 0) }, "not a hash"},
			{"thread not a hash", func(s *Driver) { c.Set(ctx, string(s.keys.thread("zz")), "1", 0) }, "wrong type"},
			{"stranger key", func(s *Driver) { c.Set(ctx, s.keys.base+"zz", "1", 0) }, "no kind"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				s := newStore(t, c, Options{})
				w := acquire(t, s, "t")
				must(t, s.p().Append(ctx, testkit.Checkpoint("t", "a", "", 1, 1, 2), "", w))
				must(t, s.p().Append(ctx, testkit.Checkpoint("t", "b", "a", 2, 1), "a", w))
				must(t, s.p().SaveThread(ctx, "t", []byte("[]")))
				wo := acquire(t, s, "o")
				must(t, s.p().Append(ctx, testkit.Checkpoint("o", "o1", "", 1, 3), "", wo))
				if _, err := s.p().DeleteCheckpoints(ctx, "o", 1, wo); err != nil {
					t.Fatal(err)
				}
				checkStore(t, s)
				tc.corrupt(s)
				problems, err := s.Check(ctx)
				must(t, err)
				found := false
				for _, p := range problems {
					found = found || strings.Contains(p.What, tc.want)
				}
				if !found {
					t.Fatalf("Check = %v, want a problem saying %q", problems, tc.want)
				}
			})
		}
	})
}

// TestCheckProgress: on a real redis-server, CheckProgress reports every
// SCAN page, the keys growing to all of the store's and the share of the
// table growing to 1 at the end (the cursor's reversed bits; miniredis's
// cursor is an offset, so only a redis-server shows it).
func TestCheckProgress(t *testing.T) {
	ctx := context.Background()
	c := redistest.Start(t).Client(t, nil)
	s := newStore(t, c, Options{})
	const n = 5000
	pipe := c.Pipeline()
	for i := range n {
		pipe.Set(ctx, fmt.Sprintf("%szz%d", s.keys.base, i), "1", 0) // keys of no kind
	}
	_, err := pipe.Exec(ctx)
	must(t, err)
	var reports []driver.CheckProgress
	problems, err := s.CheckProgress(ctx, func(p driver.CheckProgress) { reports = append(reports, p) })
	must(t, err)
	if len(problems) != n {
		t.Errorf("%d problems, want one per stranger key (%d)", len(problems), n)
	}
	if len(reports) < 3 {
		t.Fatalf("%d progress reports for %d keys", len(reports), n)
	}
	for i, r := range reports {
		if r.Done < 0 || r.Done > 1 || (i > 0 && (r.Keys < reports[i-1].Keys || r.Done < reports[i-1].Done)) {
			t.Fatalf("progress reports %+v", reports)
		}
	}
	if last := reports[len(reports)-1]; last.Keys != n || last.Done != 1 {
		t.Errorf("the last report %+v, want %d keys and all of the table", last, n)
	}
	if mid := reports[len(reports)/2]; mid.Done <= 0 || mid.Done >= 1 {
		t.Errorf("a report midway says %v of the table is read", mid.Done)
	}
}
