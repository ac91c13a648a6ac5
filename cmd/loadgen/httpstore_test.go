package main

import (
	"context"
	"encoding/pem"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
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
	ns, err := o.Namespace("loadgen-test", ckptstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if refs, err := ns.Store.ListBlobReferences(context.Background()); err != nil || len(refs) == 0 {
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

// TestHTTPSCAFile: --ca-file trusts the CA of an https:// server's
// certificate; without it the run stops at its first call with the
// certificate error; a --ca-file that cannot work is a usage error.
func TestHTTPSCAFile(t *testing.T) {
	o, err := storeurl.Open(context.Background(), "mem", storeurl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(httpstore.NewHandler(o, httpstore.HandlerOptions{Dev: true}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is the point
	srv.StartTLS()
	defer srv.Close()
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	res, code, out := runJSON(t, nil, "--store", srv.URL, "--ca-file", caFile, "--server-namespace", "loadgen-tls", "--ops", "20",
		"--threads", "2", "--workers", "2", "--payload", "1KB")
	if code != 0 || res.Appends != 20 {
		t.Fatalf("with --ca-file: exit %d, %d appends:\n%s", code, res.Appends, out)
	}

	var stderr strings.Builder
	if code := run(context.Background(), []string{"--store", srv.URL, "--ops", "1", "--quiet"}, io.Discard, &stderr, make(chan struct{})); code != 1 || !strings.Contains(stderr.String(), "certificate") {
		t.Errorf("without --ca-file: exit %d, %q; want 1 and the certificate error", code, stderr.String())
	}
	empty := filepath.Join(dir, "empty.pem")
	_ = os.WriteFile(empty, []byte("no certificate here\n"), 0o600)
	for _, args := range [][]string{
		{"--store", srv.URL, "--ca-file", filepath.Join(dir, "missing.pem")},
		{"--store", srv.URL, "--ca-file", empty},
		{"--store", "mem", "--ca-file", caFile},
	} {
		var stderr strings.Builder
		if code := run(context.Background(), args, io.Discard, &stderr, make(chan struct{})); code != 2 || !strings.Contains(stderr.String(), "--ca-file") {
			t.Errorf("loadgen %q: exit %d, %q; want 2 naming --ca-file", args, code, stderr.String())
		}
	}
}
