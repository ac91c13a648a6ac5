package redisstore

import (
	"context"
	"fmt"
	"testing"

	"github.com/alicebob/miniredis/v2"

	"github.com/redis/go-redis/v9"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/conformance"
	"github.com/ckptstore/ckptstore/internal/redistest"
	"github.com/ckptstore/ckptstore/memstore"
	"github.com/ckptstore/ckptstore/storeurl"
	"github.com/ckptstore/ckptstore/streams"
)

// TestEngine is redisstore's one suite call, on one real redis-server,
// where each tenant is a namespace of its own (tenants that never see each
// other's keys), and on miniredis (which runs the scripts in gopher-lua,
// with cjson, and delivers a script's PUBLISH to subscribers), a fresh
// server per tenant. Every
// tenant is opened through the engine's storeurl registration, and the
// engine's one Check (which walks the tenant's persistence keys too) runs
// after every case. The persistence suite's lock cases run on real time
// (EngineOptions.Network): the lock subscription waits on the network.
// The stream suites run on both, with memstore as the peer that dumps
// move to and from. The two servers run side by side, as the lock cases
// mostly sleep.
func TestEngine(t *testing.T) {
	t.Run("redis-server", func(t *testing.T) {
		t.Parallel()
		srv := redistest.Start(t)
		o, err := storeurl.Open(context.Background(), "redis://"+srv.Addr+"/0?prefix=engine", storeurl.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = o.Close() })
		conformance.RunEngine(t, func(t *testing.T, lease ckptstore.Options) *storeurl.Tenant {
			ten, err := o.Namespace(fmt.Sprintf("t%d", prefixSeq.Add(1)), lease)
			if err != nil {
				t.Fatal(err)
			}
			return ten
		}, conformance.EngineOptions{Network: true, Streams: true, StreamsPeer: memStreams})
	})
	t.Run("miniredis", func(t *testing.T) {
		t.Parallel()
		conformance.RunEngine(t, func(t *testing.T, lease ckptstore.Options) *storeurl.Tenant {
			o, err := storeurl.Open(context.Background(), "redis://"+miniredis.RunT(t).Addr(), storeurl.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = o.Close() })
			ten, err := o.Namespace("conformance", lease)
			if err != nil {
				t.Fatal(err)
			}
			return ten
		}, conformance.EngineOptions{Network: true, Streams: true, StreamsPeer: memStreams})
	})
}

// memStreams is the stream suites' peer: a memstore driver.
func memStreams(*testing.T) streams.Driver { return memstore.NewStreams() }

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
