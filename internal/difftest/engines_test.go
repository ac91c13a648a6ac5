package difftest_test

// The engines under test and the environment each call runs in.
//
// Invariants:
//   - Every engine is opened through storeurl and every namespace through
//     Opened.Namespace and Opened.Persistence (in process) or a --dev
//     httpstore handler over the same Opened (through HTTP), so the test
//     never names a driver package.
//   - Each environment has its own clock, moved only by the sequence: every
//     engine sees the same instants, so lease expiries and stamped times
//     compare equal. The clock is the stores' test clock (ckptstore.Options.Now,
//     the persistence driver's now, persist.Options.Now; Ckpt-Now through
//     HTTP), never the wall clock.

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/blobs"
	"github.com/ckptstore/ckptstore/httpstore"
	"github.com/ckptstore/ckptstore/internal/redistest"
	"github.com/ckptstore/ckptstore/persist"
	"github.com/ckptstore/ckptstore/storeurl"

	_ "github.com/ckptstore/ckptstore/fdbstore"
	_ "github.com/ckptstore/ckptstore/memstore"
	_ "github.com/ckptstore/ckptstore/redisstore"
)

// Lease timing of every store: writer leases and lock leases alike. The
// clock is a test clock, so these are never waited for in real time.
const (
	leaseDuration = 10 * time.Second
	renewAfter    = 4 * time.Second
	// startMs is where every clock starts: a fixed instant, so that times
	// stamped by a store are the same on every run.
	startMs = 1_700_000_000_000
	// maxBodyBytes is the HTTP handler's request-body limit: small, so
	// that a body just over it costs little to build.
	maxBodyBytes = 1 << 20
)

// clock is one environment's test clock, in milliseconds.
type clock struct{ ms atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.ms.Store(startMs)
	return c
}

func (c *clock) now() time.Time          { return time.UnixMilli(c.ms.Load()) }
func (c *clock) advance(d time.Duration) { c.ms.Add(d.Milliseconds()) }

// env is one engine's namespace: what every call of a sequence runs on,
// and the handles the sequence keeps between calls (writer leases by
// name), which differ between engines (an owner token is random).
type env struct {
	name   string
	cp     *ckptstore.Store
	inst   *ckptstore.InstanceStore
	ps     *persist.Store
	clk    *clock
	leases map[string]*ckptstore.Lease
}

// fataler is what opening a namespace needs of a test: a *testing.T or a
// *rapid.T.
type fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// engine opens namespaces of one engine, in process or through HTTP.
type engine struct {
	name string
	open func(t fataler, ns string) *env
	// tryNamespace opens namespace name and makes one checkpoint call and
	// one persistence call in it, and returns the first error.
	tryNamespace func(name string) error
	// url is the server's base URL, for an HTTP engine; "" in process.
	url string
}

// lease is the lease options of a namespace on clk.
func lease(clk *clock) ckptstore.Options {
	return ckptstore.Options{Now: clk.now, LeaseDuration: leaseDuration, RenewAfter: renewAfter}
}

// openEngines opens every engine: memstore, fdbstore on memkv and
// redisstore on a fresh redis-server, each in process and through HTTP.
// The reference, whose results the others are compared with, is the
// first: memstore in process (the contract's reference driver).
func openEngines(t testing.TB) []engine {
	t.Helper()
	srv := redistest.Start(t)
	urls := []struct{ name, url string }{
		{"mem", "mem"},
		{"memkv", "memkv"},
		{"redis", "redis://" + srv.Addr + "/0?prefix=difftest"},
	}
	var inproc, remote []engine
	for _, u := range urls {
		o, err := storeurl.Open(context.Background(), u.url, storeurl.Options{})
		if err != nil {
			t.Fatalf("open %s: %v", u.url, err)
		}
		t.Cleanup(func() { _ = o.Close() })
		inproc = append(inproc, engine{name: u.name, open: func(t fataler, ns string) *env {
			return openInProcess(t, o, u.name, ns)
		}, tryNamespace: func(name string) error {
			ctx := context.Background()
			ten, err := o.Namespace(name, ckptstore.Options{})
			if err != nil {
				return err
			}
			if _, err := ten.Store.GetHead(ctx, "t"); err != nil {
				return err
			}
			_, err = ten.Persistence.GetMetadata(ctx, "n", "k")
			return err
		}})
		h := httptest.NewServer(httpstore.NewHandler(o, httpstore.HandlerOptions{
			Dev:          true,
			Bucket:       blobs.NewMem(blobs.MemOptions{}),
			MaxBodyBytes: maxBodyBytes,
		}))
		t.Cleanup(h.Close)
		// One transport per server for every namespace's client, so that a
		// run of many namespaces holds a few connections, not a pool each.
		hc := &http.Client{Transport: httpstore.NewTransport()}
		t.Cleanup(hc.CloseIdleConnections)
		remote = append(remote, engine{name: "http/" + u.name, url: h.URL, open: func(t fataler, ns string) *env {
			return openHTTP(t, h.URL, hc, "http/"+u.name, ns)
		}, tryNamespace: func(name string) error {
			ctx := context.Background()
			c, err := httpstore.NewClient(h.URL, httpstore.ClientOptions{Namespace: name, Retries: -1, HTTPClient: hc})
			if err != nil {
				return err
			}
			if _, err := c.GetHead(ctx, "t"); err != nil {
				return err
			}
			_, err = c.Persistence().Metadata.Get(ctx, "n", "k")
			return err
		}})
	}
	return append(inproc, remote...)
}

// openInProcess opens namespace ns of o with a fresh clock.
func openInProcess(t fataler, o *storeurl.Opened, name, ns string) *env {
	t.Helper()
	clk := newClock()
	// One tenant, one lease clock: the checkpoint leases and the lock
	// leases of the namespace are both judged by clk.
	ten, err := o.Namespace(ns, lease(clk))
	if err != nil {
		t.Fatalf("%s: namespace %q: %v", name, ns, err)
	}
	cp, inst := ten.Store, ten.Instances
	ps, err := persist.New(ten.Persistence, persist.Options{
		Bucket: blobs.NewMem(blobs.MemOptions{Now: clk.now}), Now: clk.now,
		LeaseDuration: leaseDuration, RenewAfter: renewAfter,
	})
	if err != nil {
		t.Fatalf("%s: persist.New: %v", name, err)
	}
	return &env{name: name, cp: cp, inst: inst, ps: ps, clk: clk, leases: map[string]*ckptstore.Lease{}}
}

// openHTTP opens namespace ns of the --dev server at url with a fresh
// clock, which the client sends with every request (Ckpt-Now). The client
// does not retry: a retry would hide nothing here, and would only slow a
// failure down.
func openHTTP(t fataler, url string, hc *http.Client, name, ns string) *env {
	t.Helper()
	clk := newClock()
	c, err := httpstore.NewClient(url, httpstore.ClientOptions{Namespace: ns, Lease: lease(clk), Retries: -1, HTTPClient: hc})
	if err != nil {
		t.Fatalf("%s: client: %v", name, err)
	}
	return &env{name: name, cp: c.Store, inst: c.Instances(), ps: c.Persistence(), clk: clk, leases: map[string]*ckptstore.Lease{}}
}

// openAll opens namespace ns on every engine. An HTTP engine serves the
// same Opened as its in-process twin, so its namespace gets a suffix:
// the two must not share data.
func openAll(t fataler, engines []engine, ns string) []*env {
	t.Helper()
	envs := make([]*env, len(engines))
	for i, e := range engines {
		name := ns
		if strings.HasPrefix(e.name, "http/") {
			name += ".http"
		}
		envs[i] = e.open(t, name)
	}
	return envs
}

// nsCounter makes namespace names unique within the process.
var nsCounter atomic.Int64

// freshNamespace is a namespace no earlier sequence used.
func freshNamespace(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, nsCounter.Add(1))
}
