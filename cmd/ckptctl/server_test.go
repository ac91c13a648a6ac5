package main

import (
	"context"
	"encoding/pem"
	"github.com/ckptstore/ckptstore/fdbstore"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/fdbstore/kv"
	"github.com/ckptstore/ckptstore/httpstore"
	"github.com/ckptstore/ckptstore/storeurl"
)

// tenantServer is a ckptserver's handler over a memstore backend with two
// tenants, token "tok-a" for namespace "a" and "tok-b" for "b", and the
// store of tenant a as the backend holds it.
func tenantServer(t *testing.T) (url string, a, b *ckptstore.Store) {
	t.Helper()
	o, err := storeurl.Open(context.Background(), "mem", storeurl.Options{})
	must(t, err)
	srv := httptest.NewServer(httpstore.NewHandler(o, httpstore.HandlerOptions{Tokens: map[string]string{"tok-a": "a", "tok-b": "b"}}))
	t.Cleanup(srv.Close)
	ta, err := o.Namespace("a", ckptstore.Options{})
	must(t, err)
	tb, err := o.Namespace("b", ckptstore.Options{})
	must(t, err)
	return srv.URL, ta.Store, tb.Store
}

// TestServerTenant: with only a tenant's token, every read command and
// export go through the server and print what the same command prints on
// the backend's store of that tenant; copy from the server verifies; the
// token of another tenant reaches none of it.
func TestServerTenant(t *testing.T) {
	t.Setenv(tokenEnv, "") // the token each command names, none else
	url, a, b := tenantServer(t)
	threads, cps := seed(t, a, 300)
	h := newHarness(t)
	direct := h.add("a", a)

	for _, args := range [][]string{
		{"threads"}, {"head", "chain"}, {"get", "o-c"}, {"list", "--json", "odd"}, {"refs"},
		{"export", "--progress", "0"},
	} {
		want := h.ok(append(args, "--store", direct)...)
		got := h.ok(append(args, "--store", url, "--token", "tok-a")...)
		if got.stdout != want.stdout {
			t.Errorf("ckptctl %v through the server printed\n%.300s\nthe backend's store\n%.300s", args, got.stdout, want.stdout)
		}
		if got.stdout == "" {
			t.Errorf("ckptctl %v printed nothing", args)
		}
	}

	// copy from the server's namespace into a memstore, verified.
	dst := newMem()
	r := h.ok("copy", "--from", url, "--token", "tok-a", "--to", h.add("dst", dst), "--verify", "--progress", "0")
	if !strings.Contains(r.stdout, "verify: equal") {
		t.Errorf("copy --verify: %v", r)
	}
	if n := countAll(t, dst, threads); n != cps {
		t.Errorf("the copy holds %d checkpoints, want %d", n, cps)
	}

	// Tenant b's token sees b's namespace only: empty, and no read of a's
	// checkpoint.
	if r := h.ok("threads", "--store", url, "--token", "tok-b"); r.stdout != "" {
		t.Errorf("tenant b lists threads %q", r.stdout)
	}
	if r := h.ok("head", "--store", url, "--token", "tok-b", "chain"); r.stdout != "" {
		t.Errorf("tenant b reads a's head %q", r.stdout)
	}
	h.fails(1, `no checkpoint "o-c"`, "get", "--store", url, "--token", "tok-b", "o-c")
	h.fails(1, "401 UNAUTHORIZED", "threads", "--store", url, "--token", "nobody")
	h.fails(1, "401 UNAUTHORIZED", "threads", "--store", url)
	// $CKPT_TOKEN is --token's default, and -h does not show it.
	t.Setenv(tokenEnv, "tok-a")
	if r := h.ok("threads", "--store", url); r.stdout == "" {
		t.Errorf("threads with $%s: nothing", tokenEnv)
	}
	if r := h.ok("threads", "-h"); strings.Contains(r.stderr, "tok-a") {
		t.Errorf("-h shows the token:\n%s", r.stderr)
	}
	t.Setenv(tokenEnv, "")

	// import through the server: tenant b takes a's export, and the
	// backend holds it in b's namespace, equal to a's.
	h.stdin = h.ok("export", "--store", direct, "--progress", "0").stdout
	h.ok("import", "--store", url, "--token", "tok-b", "--progress", "0")
	h.ok("copy", "--from", direct, "--to", h.add("b", b), "--verify", "--progress", "0")
	if r := h.ok("threads", "--store", direct); r.stdout != h.ok("threads", "--store", url, "--token", "tok-b").stdout {
		t.Errorf("tenant b's threads after the import differ from a's")
	}
	// The writes of a tenant: prune and delete-thread, in b's namespace
	// only.
	h.ok("prune", "--store", url, "--token", "tok-b", "--keep", "2", "chain")
	h.ok("delete-thread", "--store", url, "--token", "tok-b", "odd")
	if n, m := countAll(t, b, []string{"chain", "odd"}), countAll(t, a, []string{"chain", "odd"}); n != 2 || m != 12+5 {
		t.Errorf("after prune and delete-thread through b's token, b holds %d checkpoints of chain and odd (want 2), a %d (want 17)", n, m)
	}
}

// TestServerToServer: copy from one tenant's namespace into another's,
// both through the server, each with its own token, verified; a
// --from-token for a URL that is not a server's is bad input.
func TestServerToServer(t *testing.T) {
	url, a, b := tenantServer(t)
	threads, cps := seed(t, a, 100)
	h := newHarness(t)
	r := h.ok("copy", "--from", url, "--from-token", "tok-a", "--to", url, "--to-token", "tok-b", "--verify", "--progress", "0")
	if !strings.Contains(r.stdout, "verify: equal") {
		t.Errorf("copy --verify: %v", r)
	}
	if n := countAll(t, b, threads); n != cps {
		t.Errorf("tenant b holds %d checkpoints after the copy, want %d", n, cps)
	}
	h.fails(2, "--from-token is for an http", "copy", "--from", h.add("a", a), "--from-token", "tok-a", "--to", url, "--token", "tok-b")
}

// TestServerUnsupported: check of a store without a checker (memstore)
// and sweep cannot go through a server; each says so with its exit code
// and changes nothing.
func TestServerUnsupported(t *testing.T) {
	url, _, b := tenantServer(t)
	h := newHarness(t)
	r := h.fails(1, "UNSUPPORTED", "check", "--store", url, "--token", "tok-a")
	if r.stdout != "" {
		t.Errorf("check of a memstore server printed %q", r.stdout)
	}
	if got := h.ok("threads", "--store", h.add("b", b)).stdout; got != "" {
		t.Errorf("the refused check wrote threads %q", got)
	}
	h.fails(2, "sweep with the backend's store URL", "sweep", "--store", url, "--token", "tok-a", "--bucket", "mem://", "--older-than", "1h")
	h.fails(2, "--ca-file", "threads", "--store", "https://127.0.0.1:1", "--ca-file", "/nonexistent/ca.pem")
	h.fails(2, "not an http", "threads", "--store", "http://", "--token", "tok-a")
}

// TestServerTLSDev: an https:// --dev server, its certificate trusted
// with --ca-file, and --namespace naming the namespace: a copy into the
// server lands in that namespace of the backend, and nowhere else.
// Without --ca-file the certificate is refused (exit 1); a --ca-file
// without a certificate is bad input (exit 2).
func TestServerTLSDev(t *testing.T) {
	o, err := storeurl.Open(context.Background(), "mem", storeurl.Options{})
	must(t, err)
	srv := httptest.NewUnstartedServer(httpstore.NewHandler(o, httpstore.HandlerOptions{Dev: true}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake is the point
	srv.StartTLS()
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	caFile := filepath.Join(dir, "ca.pem")
	must(t, os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600))

	h := newHarness(t)
	src := newMem()
	threads, cps := seed(t, src, 50)
	h.ok("copy", "--from", h.add("src", src), "--to", srv.URL, "--ca-file", caFile, "--namespace", "tenant-x", "--verify", "--progress", "0")
	ns, err := o.Namespace("tenant-x", ckptstore.Options{})
	must(t, err)
	if n := countAll(t, ns.Store, threads); n != cps {
		t.Errorf("the server's namespace holds %d checkpoints, want %d", n, cps)
	}
	if r := h.ok("threads", "--store", srv.URL, "--ca-file", caFile); r.stdout != "" {
		t.Errorf("the default namespace lists %q", r.stdout)
	}
	h.fails(1, "certificate", "threads", "--store", srv.URL, "--namespace", "tenant-x")
	empty := filepath.Join(dir, "empty.pem")
	must(t, os.WriteFile(empty, []byte("no certificate here\n"), 0o600))
	h.fails(2, "--ca-file", "threads", "--store", srv.URL, "--ca-file", empty)
}

// TestServerCheck: check through a server over fdbstore on memkv reports
// the keys planted broken in tenant a's namespace to tenant a, and tenant
// b, whose namespace is consistent, hears of none of them.
func TestServerCheck(t *testing.T) {
	t.Setenv(tokenEnv, "")
	ctx := context.Background()
	o, err := storeurl.Open(ctx, "memkv", storeurl.Options{})
	must(t, err)
	t.Cleanup(func() { _ = o.Close() })
	srv := httptest.NewServer(httpstore.NewHandler(o, httpstore.HandlerOptions{Tokens: map[string]string{"tok-a": "a", "tok-b": "b"}}))
	t.Cleanup(srv.Close)
	for _, ns := range []string{"a", "b"} {
		s, err := o.Namespace(ns, ckptstore.Options{})
		must(t, err)
		seed(t, s.Store, 20)
	}
	h := newHarness(t)
	for _, tok := range []string{"tok-a", "tok-b"} {
		if r := h.ok("check", "--store", srv.URL, "--token", tok); !strings.Contains(r.stdout, "no broken invariant") {
			t.Fatalf("check of a consistent namespace printed %q", r.stdout)
		}
	}
	prefix := fdbstore.NamespacePrefix("a")
	must(t, o.Handle.(kv.DB).Transact(ctx, func(tr kv.Transaction) error {
		tr.Set([]byte(prefix+"\x01stray"), []byte("junk"))
		return nil
	}))
	r := h.fails(1, "1 broken invariants", "check", "--store", srv.URL, "--token", "tok-a")
	if !strings.Contains(r.stdout, "stray") {
		t.Errorf("check printed %q, want the planted key", r.stdout)
	}
	if r := h.ok("check", "--store", srv.URL, "--token", "tok-b"); !strings.Contains(r.stdout, "no broken invariant") {
		t.Errorf("tenant b's check printed %q", r.stdout)
	}
	// More problems than one reply lists: the rest are counted.
	must(t, o.Handle.(kv.DB).Transact(ctx, func(tr kv.Transaction) error {
		for i := range httpstore.MaxCheckProblems + 4 {
			tr.Set([]byte(prefix+"\x01stray-"+strconv.Itoa(i)), []byte("junk"))
		}
		return nil
	}))
	r = h.fails(1, strconv.Itoa(httpstore.MaxCheckProblems+5)+" broken invariants", "check", "--store", srv.URL, "--token", "tok-a")
	lines := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n")
	if len(lines) != httpstore.MaxCheckProblems+1 || lines[len(lines)-1] != "… and 5 more (the server lists the first 1000)" {
		t.Errorf("check printed %d lines ending %q, want %d problems and the count of the rest", len(lines), lines[len(lines)-1], httpstore.MaxCheckProblems)
	}
}
