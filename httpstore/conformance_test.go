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
		return client(t, addr, opts)
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
