package httpstore_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/ckptstore/ckptstore/fdbstore"
	"github.com/ckptstore/ckptstore/fdbstore/kv"
	"github.com/ckptstore/ckptstore/httpstore"
	"github.com/ckptstore/ckptstore/internal/redistest"
	"github.com/ckptstore/ckptstore/internal/testkit"
	"github.com/ckptstore/ckptstore/redisstore"
	"github.com/ckptstore/ckptstore/storeurl"
)

// writeThread appends a short chain to thread of c.
func writeThread(t *testing.T, c *httpstore.Client, thread string, n int) {
	t.Helper()
	ctx := context.Background()
	l, err := c.AcquireWriter(ctx, thread)
	testkit.Must(t, err)
	parent := ""
	for i := range n {
		id := thread + "-" + string(rune('a'+i))
		testkit.Must(t, c.Append(ctx, testkit.Checkpoint(thread, id, parent, float64(i), 1, 2), parent, l.Writer))
		parent = id
	}
}

// TestCheckOfANamespace plants a broken key in one tenant's key space of
// fdbstore over memkv: /v1/check reports it to that tenant, and another
// tenant of the same store sees a consistent namespace.
func TestCheckOfANamespace(t *testing.T) {
	ctx := context.Background()
	addr, o := serve(t, "memkv", storeurl.Options{})
	client := func(ns string) *httpstore.Client {
		c, err := httpstore.NewClient(addr, httpstore.ClientOptions{Namespace: ns})
		testkit.Must(t, err)
		return c
	}
	bad, good := client("bad"), client("good")
	for _, c := range []*httpstore.Client{bad, good} {
		writeThread(t, c, "t", 3)
		rep, err := c.Check(ctx)
		testkit.Must(t, err)
		if rep.Len() != 0 {
			t.Fatalf("a consistent namespace: %+v", rep)
		}
	}
	// Break every value of the bad tenant that decodes as a checkpoint's
	// chunk: overwrite the namespace's keys with junk, leaving the others.
	prefix := fdbstore.NamespacePrefix("bad")
	db := o.Handle.(kv.DB)
	broken := 0
	testkit.Must(t, db.Transact(ctx, func(tr kv.Transaction) error {
		kvs, err := tr.GetRange(kv.KeyRange{Begin: []byte(prefix), End: []byte(prefix + "\xff")}, kv.RangeOptions{}).Get()
		if err != nil {
			return err
		}
		for _, p := range kvs {
			tr.Set(p.Key, []byte("junk"))
			broken++
		}
		return nil
	}))
	if broken == 0 {
		t.Fatal("the bad tenant wrote no key under its prefix: the test breaks the wrong key space")
	}
	rep, err := bad.Check(ctx)
	testkit.Must(t, err)
	if len(rep.Checkpoints) == 0 || rep.Len() != len(rep.Checkpoints)+len(rep.Persistence)+rep.More {
		t.Fatalf("the broken tenant's check: %+v, want problems", rep)
	}
	for _, p := range rep.Checkpoints {
		if !strings.HasPrefix(p.Key, prefix) {
			t.Errorf("problem %v: the key is not the tenant's", p)
		}
	}
	rep, err = good.Check(ctx)
	testkit.Must(t, err)
	if rep.Len() != 0 {
		t.Fatalf("the other tenant sees %+v, want no problem", rep)
	}
}

// TestCheckUnsupported: memstore keeps no keys and has no checker.
func TestCheckUnsupported(t *testing.T) {
	addr, _ := serve(t, "mem", storeurl.Options{})
	c, err := httpstore.NewClient(addr, httpstore.ClientOptions{Namespace: "n"})
	testkit.Must(t, err)
	_, err = c.Check(context.Background())
	var he *httpstore.Error
	if !errors.As(err, &he) || he.Code != httpstore.CodeUnsupported {
		t.Fatalf("Check on memstore = %v, want UNSUPPORTED", err)
	}
}

// TestCheckReplyIsBounded plants more problems than one reply lists: the
// reply lists MaxCheckProblems and counts the rest.
func TestCheckReplyIsBounded(t *testing.T) {
	ctx := context.Background()
	addr, o := serve(t, "memkv", storeurl.Options{})
	c, err := httpstore.NewClient(addr, httpstore.ClientOptions{Namespace: "many"})
	testkit.Must(t, err)
	writeThread(t, c, "t", 1)
	prefix := fdbstore.NamespacePrefix("many")
	const planted = httpstore.MaxCheckProblems + 234
	testkit.Must(t, o.Handle.(kv.DB).Transact(ctx, func(tr kv.Transaction) error {
		for i := range planted {
			tr.Set([]byte(prefix+"\x01stray-"+strconv.Itoa(i)), []byte("junk"))
		}
		return nil
	}))
	rep, err := c.Check(ctx)
	testkit.Must(t, err)
	if n := len(rep.Checkpoints) + len(rep.Persistence); n != httpstore.MaxCheckProblems || rep.More < planted-n {
		t.Fatalf("the reply lists %d problems and counts %d more, want %d listed and at least %d more",
			n, rep.More, httpstore.MaxCheckProblems, planted-httpstore.MaxCheckProblems)
	}
}

// TestCheckPersistence plants a key of no space in one tenant's
// persistence key space (fdbstore over memkv): /v1/check reports it as a
// persistence problem to that tenant and to no other.
func TestCheckPersistence(t *testing.T) {
	ctx := context.Background()
	addr, o := serve(t, "memkv", storeurl.Options{})
	bad, err := httpstore.NewClient(addr, httpstore.ClientOptions{Namespace: "bad"})
	testkit.Must(t, err)
	good, err := httpstore.NewClient(addr, httpstore.ClientOptions{Namespace: "good"})
	testkit.Must(t, err)
	for _, c := range []*httpstore.Client{bad, good} {
		testkit.Must(t, c.Persistence().Metadata.Set(ctx, "ns", "k", []byte(`1`)))
	}
	prefix := fdbstore.PersistNamespacePrefix("bad")
	testkit.Must(t, o.Handle.(kv.DB).Transact(ctx, func(tr kv.Transaction) error {
		tr.Set([]byte(prefix+"\x02zz\x00"), nil)
		return nil
	}))
	rep, err := bad.Check(ctx)
	testkit.Must(t, err)
	// fdbstore has one Check for the engine: the store's checker reports
	// the persistence key among its problems.
	if rep.Len() != 1 || rep.More != 0 || len(rep.Checkpoints) != 1 ||
		!strings.HasPrefix(rep.Checkpoints[0].Key, prefix) || !strings.HasPrefix(rep.Checkpoints[0].What, "persistence: ") {
		t.Fatalf("the broken tenant's check: %+v, want one persistence problem under its prefix", rep)
	}
	rep, err = good.Check(ctx)
	testkit.Must(t, err)
	if rep.Len() != 0 {
		t.Fatalf("the other tenant sees %+v, want no problem", rep)
	}
}

// TestCheckCancelled: a check whose context is done fails with the
// context's error and is not retried into a reply.
func TestCheckCancelled(t *testing.T) {
	addr, _ := serve(t, "memkv", storeurl.Options{})
	c, err := httpstore.NewClient(addr, httpstore.ClientOptions{Namespace: "n"})
	testkit.Must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Check(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Check with a cancelled context = %v, want context.Canceled", err)
	}
}

// TestCheckIsNotRetried: a check that failed with a reply the other calls
// retry (503 UNAVAILABLE) is sent once.
func TestCheckIsNotRetried(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"code":"UNAVAILABLE","message":"the store is down"}`))
	}))
	t.Cleanup(srv.Close)
	c, err := httpstore.NewClient(srv.URL, httpstore.ClientOptions{Namespace: "n"})
	testkit.Must(t, err)
	if _, err := c.Check(context.Background()); err == nil {
		t.Fatal("Check of a failing server succeeded")
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("Check sent %d requests, want 1", n)
	}
	calls.Store(0)
	if _, err := c.GetHead(context.Background(), "t"); err == nil || calls.Load() < 2 {
		t.Fatalf("GetHead: %v after %d requests; the test wants a failure the other calls retry", err, calls.Load())
	}
}

// TestCheckOfANamespaceRedis: on redisstore (a real redis-server), a key
// planted under one tenant's prefix is that tenant's problem only.
func TestCheckOfANamespaceRedis(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	addr, o := serve(t, "redis://"+srv.Addr, storeurl.Options{})
	bad, err := httpstore.NewClient(addr, httpstore.ClientOptions{Namespace: "bad"})
	testkit.Must(t, err)
	good, err := httpstore.NewClient(addr, httpstore.ClientOptions{Namespace: "good"})
	testkit.Must(t, err)
	for _, c := range []*httpstore.Client{bad, good} {
		writeThread(t, c, "t", 3)
	}
	key := "{" + redisstore.NamespacePrefix("", "bad") + "}:zz-stray"
	testkit.Must(t, o.Handle.(redis.UniversalClient).Set(ctx, key, "junk", 0).Err())
	rep, err := bad.Check(ctx)
	testkit.Must(t, err)
	if rep.Len() == 0 || len(rep.Checkpoints) == 0 || rep.Checkpoints[0].Key != key {
		t.Fatalf("the broken tenant's check: %+v, want a problem at %q", rep, key)
	}
	rep, err = good.Check(ctx)
	testkit.Must(t, err)
	if rep.Len() != 0 {
		t.Fatalf("the other tenant sees %+v, want no problem", rep)
	}
}
