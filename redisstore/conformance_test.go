package redisstore

import (
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/conformance"
	"github.com/ckptstore/ckptstore/internal/redistest"
)

// TestConformance runs the contract's suite on miniredis (a fresh server
// per store) and on one real redis-server, where each store gets its own
// prefix: tenants that never see each other's keys.
func TestConformance(t *testing.T) {
	t.Run("miniredis", func(t *testing.T) {
		conformance.RunStore(t, func(t *testing.T, opts ckptstore.Options) conformance.Store {
			return checkedStore(t, miniClient(t), Options{Options: opts}).p()
		})
		conformance.RunInstanceStore(t, func(t *testing.T) conformance.InstanceStore {
			return NewInstanceStore(miniClient(t), "")
		})
	})
	t.Run("redis-server", func(t *testing.T) {
		c := redistest.Start(t).Client(t, nil)
		conformance.RunStore(t, func(t *testing.T, opts ckptstore.Options) conformance.Store {
			return checkedStore(t, c, Options{Options: opts}).p()
		})
		conformance.RunInstanceStore(t, func(t *testing.T) conformance.InstanceStore {
			return NewInstanceStore(c, fmt.Sprintf("inst%d", prefixSeq.Add(1)))
		})
	})
}

// TestConformanceThroughFaults runs the suite on a real server behind a
// proxy that loses 2 % of replies (after the script ran) and cuts 2 % of
// requests (before it ran). go-redis resends each such command; the suite
// must not see a single doubled count or false error.
func TestConformanceThroughFaults(t *testing.T) {
	srv := redistest.Start(t)
	c, proxy := faultyClient(t, srv.Addr)
	proxy.SetFaults(7, 0.02, 0.02)
	conformance.RunStoreWith(t, func(t *testing.T, opts ckptstore.Options) conformance.Store {
		return checkedStore(t, c, Options{Options: opts}).p()
	}, conformance.Options{ModelChecks: 30})
	if proxy.DroppedReplies() == 0 || proxy.DroppedRequests() == 0 {
		t.Fatalf("the proxy lost %d replies and cut %d requests; the test needs both", proxy.DroppedReplies(), proxy.DroppedRequests())
	}
	t.Logf("lost replies %d, cut requests %d", proxy.DroppedReplies(), proxy.DroppedRequests())
}

// checkedStore is newStore, with Check run on the store when the test
// ends: a store that passes the suite but breaks an invariant of its
// keyspace fails too.
func checkedStore(t *testing.T, c redis.UniversalClient, o Options) *Driver {
	s := newStore(t, c, o)
	t.Cleanup(func() { checkStore(t, s) })
	return s
}
