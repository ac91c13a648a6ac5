package storeurl_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/contract"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/fdbstore"
	_ "github.com/ckptstore/ckptstore/memstore"
	"github.com/ckptstore/ckptstore/redisstore"
	"github.com/ckptstore/ckptstore/storeurl"
)

func TestOpenForms(t *testing.T) {
	ctx := context.Background()
	for _, url := range []string{"mem", "mem://", "memkv", "memkv://"} {
		o, err := storeurl.Open(ctx, url, storeurl.Options{})
		if err != nil {
			t.Fatalf("Open(%q): %v", url, err)
		}
		if o.Store == nil || o.Instances == nil || o.Close == nil {
			t.Errorf("%s: incomplete Opened %+v", url, o)
		}
		if want := strings.TrimSuffix(url, "://"); o.Kind != want {
			t.Errorf("%s: kind %q, want %q", url, o.Kind, want)
		}
		if (o.Handle != nil) != (o.Kind == "memkv") || (o.ReadRounds != nil) != (o.Kind == "memkv") {
			t.Errorf("%s: memkv hooks wrong", url)
		}
		if err := o.Ping(ctx); err != nil {
			t.Errorf("%s: ping: %v", url, err)
		}
		_ = o.Close()
	}
}

func TestOpenRefuses(t *testing.T) {
	ctx := context.Background()
	for _, url := range []string{"", "memory", "postgres://x", "mem://host", "memkv://?faults=1", "mem?x",
		"redis://[::1", "redis://127.0.0.1:1/0?bogus=1", "unix:///tmp/x.sock?nope=2"} {
		_, err := storeurl.Open(ctx, url, storeurl.Options{})
		if !errors.Is(err, storeurl.ErrBadURL) {
			t.Errorf("Open(%q) = %v, want ErrBadURL", url, err)
			continue
		}
		if !strings.Contains(err.Error(), storeurl.Forms()) {
			t.Errorf("Open(%q): the error does not name the forms: %v", url, err)
		}
	}
	bad := storeurl.Options{Lease: ckptstore.Options{LeaseDuration: time.Second, RenewAfter: 2 * time.Second}}
	if _, err := storeurl.Open(ctx, "mem", bad); !errors.Is(err, storeurl.ErrBadURL) {
		t.Errorf("bad lease options: %v", err)
	}
	if !fdbstore.HasClient {
		if _, err := storeurl.Open(ctx, "fdb:/etc/foundationdb/fdb.cluster", storeurl.Options{}); !errors.Is(err, storeurl.ErrBadURL) || !strings.Contains(err.Error(), "-tags fdb") {
			t.Errorf("fdb without the tag: %v", err)
		}
	}
}

// TestRegistry: each driver package linked in registered its form, and a
// second registration of a scheme panics.
func TestRegistry(t *testing.T) {
	forms := storeurl.Forms()
	for _, f := range []string{"mem | mem://", "memkv | memkv://", "fdb:<cluster file>", "redis://", "unix://"} {
		if !strings.Contains(forms, f) {
			t.Errorf("Forms() = %q, without %q", forms, f)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("registering mem again did not panic")
		}
	}()
	storeurl.Register("mem again", func(context.Context, string, storeurl.Options) (*storeurl.Opened, error) { return nil, nil }, "mem")
}

// TestRedisDefaultPrefix: a namespace under the default base ("") is the
// one under redisstore's DefaultPrefix, which storeurl writes out rather
// than import the backend.
func TestRedisDefaultPrefix(t *testing.T) {
	if a, b := redisstore.NamespacePrefix("", "a"), redisstore.NamespacePrefix(redisstore.DefaultPrefix, "a"); a != b {
		t.Errorf("NamespacePrefix(\"\", \"a\") = %q, under DefaultPrefix %q", a, b)
	}
}

// hostile are namespace names built to collide: NUL, braces, glob
// characters, byte-prefixes of each other, the escape character, and names
// that spell another name's encoded prefix.
var hostile = []string{
	"a", "a\x00", "a\x00\x00", "a\x00\x7f", "ab", "a}", "a{b}", "{a}", "a{", "a*", "a?", "a[b]", "a\\",
	"a=00", "a=7D", "=", "a/ns/b", "a:b", "é", "a\xc3\xa9",
	redisstore.NamespacePrefix("", "a"), "ckptstore/ns/a=00",
	fdbstore.NamespacePrefix("a"), "\x02a\x00\x00", "ckptstore.ns",
}

// TestNamespacePrefixesInjectiveAndPrefixFree checks both maps on every
// pair of hostile names: different names give different prefixes and no
// prefix starts another. For Redis the key base is "{prefix}:" as
// redisstore builds it, which no '}' inside the tag can end early, since
// the encoded name has none.
func TestNamespacePrefixesInjectiveAndPrefixFree(t *testing.T) {
	maps := map[string]func(string) string{
		"fdb":   fdbstore.NamespacePrefix,
		"redis": func(n string) string { return "{" + redisstore.NamespacePrefix("", n) + "}:" },
	}
	for kind, prefix := range maps {
		for _, a := range hostile {
			pa := prefix(a)
			if kind == "redis" && strings.ContainsAny(pa[1:len(pa)-2], "{}*?[]\\%") {
				t.Errorf("redis: %q encodes to %q, with a brace or glob character", a, pa)
			}
			for _, b := range hostile {
				if a == b {
					continue
				}
				if pb := prefix(b); strings.HasPrefix(pb, pa) {
					t.Errorf("%s: the prefix of %q (%q) starts the prefix of %q (%q)", kind, a, pa, b, pb)
				}
			}
		}
	}
	// The tenants' subspace is apart from the default store's.
	if strings.HasPrefix(fdbstore.NamespacePrefix("a"), "\x02ckptstore\x00") {
		t.Error("fdb: namespaces live under the default store's prefix")
	}
}

func TestNamespaces(t *testing.T) {
	ctx := context.Background()
	for _, url := range []string{"mem", "memkv"} {
		o, err := storeurl.Open(ctx, url, storeurl.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"", strings.Repeat("n", storeurl.MaxNamespaceBytes+1), "\xff"} {
			if _, err := o.Namespace(name, ckptstore.Options{}); !errors.Is(err, storeurl.ErrBadURL) || !errors.Is(err, contract.ErrInvalidNamespace) {
				t.Errorf("%s: Namespace(%q) = %v, want ErrBadURL", url, name, err)
			}
		}
		// The limit is the one of every id (1024 bytes, once 256): a name
		// at it opens, and its error for one past it stays short.
		// (A name of NUL bytes has fdbstore's longest prefix: each packs to two.)
		if storeurl.MaxNamespaceBytes != 1024 {
			t.Errorf("MaxNamespaceBytes = %d, want the id limit 1024", storeurl.MaxNamespaceBytes)
		}
		for _, long := range []string{strings.Repeat("é", storeurl.MaxNamespaceBytes/2), strings.Repeat("\x00", storeurl.MaxNamespaceBytes)} {
			if ls, err := o.Namespace(long, ckptstore.Options{}); err != nil {
				t.Errorf("%s: a %d-byte namespace: %v", url, len(long), err)
			} else if _, err := ls.Store.AcquireWriter(ctx, strings.Repeat("t", storeurl.MaxNamespaceBytes)); err != nil {
				t.Errorf("%s: a %d-byte namespace's store: %v", url, len(long), err)
			}
		}
		if _, err := o.Namespace(strings.Repeat("n", 1<<20), ckptstore.Options{}); err == nil || len(err.Error()) > 1000 {
			t.Errorf("%s: a 1 MiB namespace: %d-byte error %.200v", url, len(fmt.Sprint(err)), err)
		}
		if _, err := o.Namespace("x", ckptstore.Options{LeaseDuration: -1}); !errors.Is(err, driver.ErrInvalidOptions) {
			t.Errorf("%s: bad lease: %v", url, err)
		}
		// A lease taken in one namespace leaves the same thread free in
		// every other, and in the default store; the same name reaches it
		// again.
		a, err := o.Namespace("a", ckptstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := a.Store.AcquireWriter(ctx, "t"); err != nil {
			t.Fatal(err)
		}
		if err := a.Instances.Upsert(ctx, &ckptstore.InstanceRecord{Key: "k", Provider: "p", ProviderSandboxID: "s", ThreadID: "t", UpdatedAt: 1}); err != nil {
			t.Fatal(err)
		}
		for _, name := range hostile[1:] {
			s, err := o.Namespace(name, ckptstore.Options{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Store.AcquireWriter(ctx, "t"); err != nil {
				t.Errorf("%s: namespace %q sees the lease of \"a\": %v", url, name, err)
			}
			if r, err := s.Instances.Get(ctx, "k"); err != nil || r != nil {
				t.Errorf("%s: namespace %q sees the record of \"a\": %v, %v", url, name, r, err)
			}
		}
		if _, err := o.Store.AcquireWriter(ctx, "t"); err != nil {
			t.Errorf("%s: the default store sees the lease of \"a\": %v", url, err)
		}
		again, err := o.Namespace("a", ckptstore.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := again.Store.AcquireWriter(ctx, "t"); !errors.Is(err, ckptstore.ErrWriterConflict) {
			t.Errorf("%s: namespace \"a\" reopened lost its lease: %v", url, err)
		}
	}
}
