package redisstore

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ckptstore/ckptstore/internal/linz"
	"github.com/ckptstore/ckptstore/internal/redistest"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

// TestLinearizableThroughFaults checks concurrent histories of the store
// on a real redis-server behind the fault proxy (5 % of replies lost after
// the script ran, 5 % of requests cut before it did; go-redis resends a
// few times, then the call's outcome is open) against the contract's
// sequential model, with short leases on a controlled clock so that
// takeovers race stale writers. LINZ_RUNS sets the number of histories
// (default 3). Check runs on the keyspace after each.
func TestLinearizableThroughFaults(t *testing.T) {
	runs := 3
	if n, err := strconv.Atoi(os.Getenv("LINZ_RUNS")); err == nil && n > 0 {
		runs = n
	}
	srv := redistest.Start(t)
	direct := srv.Client(t, nil)
	p := redistest.NewProxy(t, srv.Addr)
	// Few resends, so that some calls end with their outcome unknown.
	c := redistest.NewClient(t, p.Addr, &redis.Options{MaxRetries: 2, MinRetryBackoff: time.Millisecond, MaxRetryBackoff: 2 * time.Millisecond})
	p.SetFaults(11, 0.05, 0.05)
	var total linz.Result
	for seed := range uint64(runs) {
		clock := testkit.NewClock(time.UnixMilli(1_700_000_000_000))
		opt := linz.Options{Seed: seed}
		s := newStore(t, c, Options{Options: opt.StoreOptions(clock)})
		r := linz.Run(t, s.p(), clock, opt)
		total.Operations += r.Operations
		total.Open += r.Open
		total.Conflicts += r.Conflicts
		sure, err := NewDriver(direct, Options{Options: opt.StoreOptions(clock), Prefix: s.opts.Prefix})
		must(t, err)
		checkStore(t, sure)
	}
	if p.DroppedReplies() == 0 || p.DroppedRequests() == 0 {
		t.Fatalf("the proxy lost %d replies and cut %d requests; the run proves nothing about faults", p.DroppedReplies(), p.DroppedRequests())
	}
	t.Logf("%d histories, %d operations checked, %d open outcomes, %d contract errors; %d replies lost, %d requests cut",
		runs, total.Operations, total.Open, total.Conflicts, p.DroppedReplies(), p.DroppedRequests())
}
