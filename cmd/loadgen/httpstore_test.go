package main

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/httpstore"
	"github.com/ckptstore/ckptstore/storeurl"
)

// TestHTTPRunVerifies drives a --dev handler over memstore through
// --store http://…: the run's appends, prunes and forks cross the wire and
// the closing check passes on what the server stored.
func TestHTTPRunVerifies(t *testing.T) {
	o, err := storeurl.Open(context.Background(), "mem", storeurl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(httpstore.NewHandler(o, httpstore.HandlerOptions{Dev: true}))
	defer srv.Close()
	res, code, out := runJSON(t, nil, "--store", srv.URL, "--server-namespace", "loadgen-test", "--ops", "300",
		"--threads", "4", "--workers", "4", "--prune-rate", "0.5", "--keep", "3", "--fork-rate", "0.3", "--payload", "1KB")
	if code != 0 {
		t.Fatalf("verify failed:\n%s", out)
	}
	if res.Appends != 300 || !strings.HasPrefix(res.Store, "http ") {
		t.Errorf("appends %d on %q", res.Appends, res.Store)
	}
	// The data is in the server's namespace, not in its default one.
	if h, _ := o.Store.GetHead(context.Background(), "x"); h != "" {
		t.Errorf("the default namespace has a head")
	}
	ns, _, _ := o.Namespace("loadgen-test", ckptstore.Options{})
	if refs, err := ns.ListBlobReferences(context.Background()); err != nil || len(refs) == 0 {
		t.Errorf("the server's namespace holds %d blob keys, %v", len(refs), err)
	}
}

func TestHTTPUnreachable(t *testing.T) {
	cfg, err := parseFlags([]string{"--store", "http://127.0.0.1:1", "--ops", "1", "--quiet"}, &strings.Builder{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.interrupted = make(chan struct{})
	if _, err := load(context.Background(), cfg, &strings.Builder{}); err == nil || !strings.Contains(err.Error(), "ckptserver http://127.0.0.1:1") {
		t.Errorf("an unreachable server: %v", err)
	}
}
