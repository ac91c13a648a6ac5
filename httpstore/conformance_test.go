package httpstore_test

import (
	"context"
	"crypto/rand"
	"net/http/httptest"
	"testing"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/conformance"
	"github.com/ckptstore/ckptstore/httpstore"
	"github.com/ckptstore/ckptstore/internal/redistest"
	"github.com/ckptstore/ckptstore/storeurl"
)

// serve starts a --dev handler over the backend of url and returns its
// address.
func serve(t testing.TB, url string, opts storeurl.Options) (string, *storeurl.Opened) {
	t.Helper()
	o, err := storeurl.Open(context.Background(), url, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.Close() })
	srv := httptest.NewServer(httpstore.NewHandler(o, httpstore.HandlerOptions{Dev: true}))
	t.Cleanup(srv.Close)
	return srv.URL, o
}

// client returns a client of a fresh namespace of the server at addr.
func client(t testing.TB, addr string, lease ckptstore.Options) *httpstore.Client {
	t.Helper()
	c, err := httpstore.NewClient(addr, httpstore.ClientOptions{Namespace: "t-" + rand.Text(), Lease: lease})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// runConformance runs both suites through clients of the server at addr,
// each store a fresh namespace.
func runConformance(t *testing.T, addr string) {
	conformance.RunStore(t, func(t *testing.T, opts ckptstore.Options) ckptstore.Store {
		return narrow(t, client(t, addr, opts))
	})
	conformance.RunInstanceStore(t, func(t *testing.T) ckptstore.InstanceStore {
		return client(t, addr, ckptstore.Options{}).Instances()
	})
}

func TestConformanceMem(t *testing.T) {
	addr, _ := serve(t, "mem", storeurl.Options{})
	runConformance(t, addr)
}

// TestConformanceMemkvFaults runs the suites on fdbstore over memkv with
// not_committed and commit_unknown_result faults on a fifth of the commits.
func TestConformanceMemkvFaults(t *testing.T) {
	addr, o := serve(t, "memkv", storeurl.Options{MemkvNotCommittedRate: 0.1, MemkvUnknownResultRate: 0.1})
	runConformance(t, addr)
	_ = o
}

func TestConformanceRedis(t *testing.T) {
	srv := redistest.Start(t)
	addr, _ := serve(t, "redis://"+srv.Addr, storeurl.Options{})
	runConformance(t, addr)
}

// baseStore is a Client seen as a store with only the capabilities every
// store has had from the start.
type baseStore struct {
	ckptstore.Store
	ckptstore.Pruner
	ckptstore.Forker
	ckptstore.LeaseKeeper
}

// narrow returns c itself when the server's store has every optional
// capability, and c as a baseStore when it has none of the newer ones, so
// that the suite tests what the store has: a Client has every method, and
// reports the ones the server's store lacks as UNSUPPORTED.
func narrow(t *testing.T, c *httpstore.Client) ckptstore.Store {
	caps, err := c.Capabilities(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	switch len(caps) {
	case 7:
		return c
	case 2:
		return baseStore{c, c, c, c}
	}
	t.Fatalf("the server's store has capabilities %v: test it with all or with prune and fork only", caps)
	return nil
}
