package httpstore_test

import (
	"context"
	"crypto/rand"
	"net/http"
	"net/http/httptest"
	"os"
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

// inProcess is an http.RoundTripper that serves each request with a
// handler in the calling goroutine: the whole protocol (headers, bodies,
// both sides' encoding and checks) without TCP, for suites that make many
// thousands of calls under the race detector.
type inProcess struct{ h http.Handler }

func (p inProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	p.h.ServeHTTP(rec, req)
	if req.Body != nil {
		req.Body.Close() // a RoundTripper closes the request body
	}
	return rec.Result(), nil
}

// serveInProcess is serve with an in-process transport: the "address"
// it returns is only the client's base URL, and the transport is the
// server.
func serveInProcess(t testing.TB, url string, opts storeurl.Options) (*http.Client, *storeurl.Opened) {
	t.Helper()
	o, err := storeurl.Open(context.Background(), url, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.Close() })
	return &http.Client{Transport: inProcess{httpstore.NewHandler(o, httpstore.HandlerOptions{Dev: true})}}, o
}

// clientVia returns a client of a fresh namespace of the server at addr,
// over hc (nil = the default transport).
func clientVia(t testing.TB, addr string, hc *http.Client, lease ckptstore.Options) *httpstore.Client {
	t.Helper()
	c, err := httpstore.NewClient(addr, httpstore.ClientOptions{Namespace: "t-" + rand.Text(), Lease: lease, HTTPClient: hc})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// runConformance runs both suites through clients of the server at addr,
// each store a fresh namespace. Every call is a loopback round trip, so
// the model-based test runs 10 sequences (a fifth of them under -short)
// unless CKPT_HTTP_LONG is set, which runs rapid's full count.
func runConformance(t *testing.T, addr string) { runConformanceVia(t, addr, nil) }

func runConformanceVia(t *testing.T, addr string, hc *http.Client) {
	o := conformance.Options{ModelChecks: 10, ConcurrentAppends: 4}
	if testing.Short() {
		o.ModelChecks = 2
	}
	if os.Getenv("CKPT_HTTP_LONG") != "" {
		o = conformance.Options{}
	} else {
		t.Log("the model-based test runs few sequences through HTTP; CKPT_HTTP_LONG=1 runs rapid's full count")
	}
	conformance.RunStoreWith(t, func(t *testing.T, opts ckptstore.Options) conformance.Store {
		return clientVia(t, addr, hc, opts)
	}, o)
	conformance.RunInstanceStore(t, func(t *testing.T) conformance.InstanceStore {
		return clientVia(t, addr, hc, ckptstore.Options{}).Instances()
	})
}

// TestConformanceMem runs the suites on memstore over a real loopback
// TCP server (in process under the race detector, where TCP makes the
// suite several times slower; the isolation, two-server and ckptserver
// tests cover TCP there).
func TestConformanceMem(t *testing.T) {
	if raceEnabled {
		hc, _ := serveInProcess(t, "mem", storeurl.Options{})
		runConformanceVia(t, "http://in-process", hc)
		return
	}
	addr, _ := serve(t, "mem", storeurl.Options{})
	runConformance(t, addr)
}

// TestConformanceMemkvFaults runs the suites on fdbstore over memkv with
// not_committed and commit_unknown_result faults on a fifth of the commits,
// through an in-process transport (TestConformanceMem covers real TCP).
func TestConformanceMemkvFaults(t *testing.T) {
	hc, o := serveInProcess(t, "memkv", storeurl.Options{MemkvNotCommittedRate: 0.1, MemkvUnknownResultRate: 0.1})
	r0 := o.ReadRounds()
	runConformanceVia(t, "http://in-process", hc)
	if o.ReadRounds() == r0 {
		t.Fatal("the suite did not reach memkv")
	}
}

// TestConformanceRedis runs the suites on redisstore over a real
// redis-server, through an in-process transport.
func TestConformanceRedis(t *testing.T) {
	if raceEnabled && os.Getenv("CKPT_HTTP_LONG") == "" {
		t.Skip("under the race detector this suite takes minutes; redisstore's own package runs it with -race, and TestIsolationRedis and TestTwoServersRedis cover redis through HTTP; CKPT_HTTP_LONG=1 runs it")
	}
	srv := redistest.Start(t)
	hc, _ := serveInProcess(t, "redis://"+srv.Addr, storeurl.Options{})
	runConformanceVia(t, "http://in-process", hc)
}
