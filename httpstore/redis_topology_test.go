package httpstore_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/conformance"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/httpstore"
	"github.com/ckptstore/ckptstore/internal/redistest"
	"github.com/ckptstore/ckptstore/internal/testkit"
	"github.com/ckptstore/ckptstore/redisstore"
	"github.com/ckptstore/ckptstore/storeurl"
)

// TestNotReplicatedOverHTTP: a write the store applied but could not get
// onto enough replicas is a 503 NOT_REPLICATED, which the Go client
// retries with the same Idempotency-Key and then returns as
// ckptstore.ErrNotReplicated; the metrics count it apart from UNAVAILABLE;
// and the write is there, as the code says it may be.
func TestNotReplicatedOverHTTP(t *testing.T) {
	srv := redistest.Start(t) // no replica, so min_replicas=1 never holds
	o, err := storeurl.Open(context.Background(), "redis://"+srv.Addr+"?min_replicas=1&replica_timeout=20ms", storeurl.Options{})
	testkit.Must(t, err)
	t.Cleanup(func() { _ = o.Close() })
	reg := prometheus.NewRegistry()
	hs := httptest.NewServer(httpstore.NewHandler(o, httpstore.HandlerOptions{Dev: true, Registerer: reg}))
	t.Cleanup(hs.Close)
	f := &flaky{next: httpstore.NewTransport(), keys: map[string][]string{}}
	c, err := httpstore.NewClient(hs.URL, httpstore.ClientOptions{Namespace: "nr", HTTPClient: &http.Client{Transport: f},
		Retries: 2, RetryBackoff: time.Millisecond})
	testkit.Must(t, err)
	ctx := context.Background()
	if _, err := c.AcquireWriter(ctx, "u"); !errors.Is(err, ckptstore.ErrNotReplicated) {
		t.Fatalf("AcquireWriter without the replicas = %v, want ckptstore.ErrNotReplicated (a lease waits too)", err)
	}
	// The lease comes through a second server on the same Redis whose
	// store does not wait: the servers keep nothing, the store has it.
	plain, err := storeurl.Open(ctx, "redis://"+srv.Addr, storeurl.Options{})
	testkit.Must(t, err)
	t.Cleanup(func() { _ = plain.Close() })
	hs2 := httptest.NewServer(httpstore.NewHandler(plain, httpstore.HandlerOptions{Dev: true}))
	t.Cleanup(hs2.Close)
	c2, err := httpstore.NewClient(hs2.URL, httpstore.ClientOptions{Namespace: "nr"})
	testkit.Must(t, err)
	l, err := c2.AcquireWriter(ctx, "t")
	testkit.Must(t, err)
	f.keys = map[string][]string{}

	err = c.Append(ctx, testkit.Checkpoint("t", "a", "", 1), "", l.Writer)
	var he *httpstore.Error
	if !errors.Is(err, ckptstore.ErrNotReplicated) || ckptstore.Code(err) != "" || !errors.As(err, &he) ||
		he.Status != http.StatusServiceUnavailable || he.Code != httpstore.CodeNotReplicated {
		t.Fatalf("Append without the replicas = %v, want a 503 %s that is ckptstore.ErrNotReplicated", err, httpstore.CodeNotReplicated)
	}
	keys := f.keys["append"]
	if len(keys) != 3 || keys[0] == "" || keys[1] != keys[0] || keys[2] != keys[0] {
		t.Errorf("append attempts' Idempotency-Keys %q, want 3 equal ones (the call and its 2 retries)", keys)
	}
	if head, err := c.GetHead(ctx, "t"); err != nil || head != "a" {
		t.Errorf("head after the unreplicated append = %q, %v; want the write, which the primary has", head, err)
	}
	if n := errorCount(t, reg, "acquireWriter", httpstore.CodeNotReplicated); n != 3 {
		t.Errorf("ckptstore_http_errors_total{rpc=acquireWriter,code=NOT_REPLICATED} = %v, want 3", n)
	}
	if n := errorCount(t, reg, "append", httpstore.CodeNotReplicated); n != 3 {
		t.Errorf("ckptstore_http_errors_total{rpc=append,code=NOT_REPLICATED} = %v, want 3", n)
	}
	if n := errorCount(t, reg, "append", httpstore.CodeUnavailable); n != 0 {
		t.Errorf("NOT_REPLICATED counted as UNAVAILABLE too: %v", n)
	}
}

// errorCount reads ckptstore_http_errors_total{rpc, code} from reg.
func errorCount(t *testing.T, reg *prometheus.Registry, rpc, code string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	testkit.Must(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "ckptstore_http_errors_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = lp.GetValue()
			}
			if labels["rpc"] == rpc && labels["code"] == code {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// TestClusterThroughServer serves a three-master Redis Cluster through the
// handler (the one ckptserver serves) on a redis+cluster:// URL: the
// conformance suites pass through the Go client, each store a namespace of
// its own, and two namespaces that land on different masters keep their
// keys in their own slots and their own state.
func TestClusterThroughServer(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	url := "redis+cluster://" + strings.Join(cl.Addrs, ",")
	addr, o := serve(t, url, storeurl.Options{})
	if !strings.Contains(o.Desc, "redis+cluster://") {
		t.Fatalf("opened %s", o.Desc)
	}
	// Under the race detector the suites go through the handler in
	// process (as TestConformanceMem's do), where loopback TCP would make
	// them minutes long; the namespaces below go over TCP either way.
	suiteAddr, hc := addr, (*http.Client)(nil)
	opts := conformance.Options{ModelChecks: 4, ConcurrentAppends: 4}
	if raceEnabled {
		hc = &http.Client{Transport: inProcess{httpstore.NewHandler(o, httpstore.HandlerOptions{Dev: true})}}
		suiteAddr, opts.ModelChecks = "http://in-process", 1
	}
	conformance.RunStoreWith(t, func(t *testing.T, lease ckptstore.Options) conformance.Store {
		return clientVia(t, suiteAddr, hc, lease)
	}, opts)
	conformance.RunInstanceStore(t, func(t *testing.T) conformance.InstanceStore {
		return clientVia(t, suiteAddr, hc, ckptstore.Options{}).Instances()
	})

	// Two namespaces whose hash tags map to slots of different masters.
	ctx := context.Background()
	cc := o.Handle.(*redis.ClusterClient)
	tag := func(ns string) string { return "{" + redisstore.NamespacePrefix(redisstore.DefaultPrefix, ns) + "}" }
	master := func(ns string) string {
		m, err := cc.MasterForKey(ctx, tag(ns))
		testkit.Must(t, err)
		return m.Options().Addr
	}
	a, b := "tenant-a", ""
	for _, n := range []string{"tenant-b", "tenant-c", "tenant-d", "tenant-e", "tenant-f", "tenant-g", "tenant-h"} {
		if master(n) != master(a) {
			b = n
			break
		}
	}
	if b == "" {
		t.Fatal("no candidate namespace lands on another master than tenant-a")
	}
	slotA, err := cc.ClusterKeySlot(ctx, tag(a)).Result()
	testkit.Must(t, err)
	slotB, err := cc.ClusterKeySlot(ctx, tag(b)).Result()
	testkit.Must(t, err)
	var written atomic.Int32
	for _, ns := range []string{a, b} {
		c, err := httpstore.NewClient(addr, httpstore.ClientOptions{Namespace: ns})
		testkit.Must(t, err)
		l, err := c.AcquireWriter(ctx, "t") // the same thread in both: no lease crosses
		testkit.Must(t, err)
		testkit.Must(t, c.Append(ctx, testkit.Checkpoint("t", "cp-"+ns, "", 1), "", l.Writer))
		written.Add(1)
	}
	for _, pair := range [][2]string{{a, b}, {b, a}} {
		own, other := pair[0], pair[1]
		m, err := cc.MasterForKey(ctx, tag(own))
		testkit.Must(t, err)
		keys, err := m.Keys(ctx, "*").Result()
		testkit.Must(t, err)
		mine := 0
		for _, k := range keys {
			switch {
			case strings.HasPrefix(k, tag(own)+":"):
				mine++
			case strings.HasPrefix(k, tag(other)+":"):
				t.Errorf("key %q of namespace %q is on the master of %q", k, other, own)
			}
		}
		if mine == 0 {
			t.Errorf("the master %s of namespace %q holds none of its keys", m.Options().Addr, own)
		}
		ten, err := o.Namespace(own, ckptstore.Options{})
		testkit.Must(t, err)
		st := ten.Store
		if cp, err := st.Get(ctx, "cp-"+other); err != nil || cp != nil {
			t.Errorf("namespace %q sees the checkpoint of %q: %v, %v", own, other, cp, err)
		}
		problems, err := st.Driver().(driver.Checker).Check(ctx)
		testkit.Must(t, err)
		if len(problems) > 0 {
			t.Errorf("Check of namespace %q: %v", own, problems)
		}
	}
	t.Logf("namespaces %q (slot %d, master %s) and %q (slot %d, master %s)", a, slotA, master(a), b, slotB, master(b))
}
