package main

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ckptstore/ckptstore/httpstore"
	"github.com/ckptstore/ckptstore/internal/redistest"
	"github.com/ckptstore/ckptstore/storeurl"
	"github.com/ckptstore/ckptstore/streams"
	"github.com/ckptstore/ckptstore/streams/streamstest"
)

// TestRedisStreams: on engine URLs, --namespace names the tenant whose
// streams move. copy redis → redis carries and verifies them, check finds
// nothing wrong in either and reports a leaked stream; export from Redis
// and import through a ckptserver on memstore reads back the same, at
// the same offsets.
func TestRedisStreams(t *testing.T) {
	t.Setenv(tokenEnv, "")
	ctx := context.Background()
	srv := redistest.Start(t)
	srcURL := "redis://" + srv.Addr + "/0?prefix=ssrc"
	dstURL := "redis://" + srv.Addr + "/0?prefix=sdst"
	open := func(url string) streams.Driver {
		o, err := storeurl.Open(ctx, url, storeurl.Options{})
		must(t, err)
		t.Cleanup(func() { _ = o.Close() })
		d, err := o.Streams("t")
		must(t, err)
		return d
	}
	src := open(srcURL)
	streamstest.Populate(t, src)

	h := newHarness(t)
	// Without --namespace an engine URL has no streams to move.
	r := h.ok("copy", "--from", srcURL, "--to", dstURL, "--progress", "0")
	if strings.Contains(r.stdout, "streams:") {
		t.Fatalf("copy without --namespace moved streams:\n%s", r.stdout)
	}
	r = h.ok("copy", "--from", srcURL, "--to", dstURL, "--namespace", "t", "--verify", "--progress", "0")
	if !strings.Contains(r.stdout, "streams: 15 streams in") || !strings.Contains(r.stdout, "15 streams\n") {
		t.Fatalf("copy --verify:\n%s", r.stdout)
	}
	dst := open(dstURL)
	streamstest.SameReads(t, src, dst, streamstest.Clock(3))
	for _, url := range []string{srcURL, dstURL} {
		r = h.ok("check", "--store", url, "--namespace", "t", "--progress", "0")
		if !strings.Contains(r.stdout, "no broken invariant") {
			t.Fatalf("check %s:\n%s", url, r.stdout)
		}
	}
	leak := streams.Record{Stream: &streams.StreamRecord{Name: streams.NamelessPrefix + "99", ContentType: "text/plain", Deleted: true}}
	_, err := streams.Load(ctx, dst.(streams.Porter), []streams.Record{leak})
	must(t, err)
	r = h.fails(1, "1 broken invariants", "check", "--store", dstURL, "--namespace", "t", "--progress", "0")
	if !strings.Contains(r.stdout, `streams: "`+streams.NamelessPrefix+`99": soft-deleted, and no fork reads it`) {
		t.Fatalf("check does not report the leaked stream:\n%s", r.stdout)
	}

	// Redis → a ckptserver on memstore, by export and import.
	o, err := storeurl.Open(ctx, "mem", storeurl.Options{})
	must(t, err)
	hs := httptest.NewServer(httpstore.NewHandler(o, httpstore.HandlerOptions{Tokens: map[string]string{"tok": "m"}}))
	t.Cleanup(hs.Close)
	r = h.ok("export", "--store", srcURL, "--namespace", "t", "--progress", "0")
	h.stdin = r.stdout
	h.ok("import", "--store", hs.URL, "--token", "tok", "--progress", "0")
	m, err := o.Streams("m")
	must(t, err)
	streamstest.SameReads(t, src, m, streamstest.Clock(3))
}

// TestServerCheckStreams: check through a ckptserver on Redis reports
// the tenant's stream problems beside its keys'.
func TestServerCheckStreams(t *testing.T) {
	t.Setenv(tokenEnv, "")
	ctx := context.Background()
	srv := redistest.Start(t)
	o, err := storeurl.Open(ctx, "redis://"+srv.Addr+"/0?prefix=schk", storeurl.Options{})
	must(t, err)
	t.Cleanup(func() { _ = o.Close() })
	hs := httptest.NewServer(httpstore.NewHandler(o, httpstore.HandlerOptions{Tokens: map[string]string{"tok": "n"}}))
	t.Cleanup(hs.Close)
	d, err := o.Streams("n")
	must(t, err)
	streamstest.Populate(t, d)
	h := newHarness(t)
	r := h.ok("check", "--store", hs.URL, "--token", "tok")
	if !strings.Contains(r.stdout, "no broken invariant") {
		t.Fatalf("check:\n%s", r.stdout)
	}
	leak := streams.Record{Stream: &streams.StreamRecord{Name: streams.NamelessPrefix + "7", ContentType: "text/plain", Deleted: true}}
	_, err = streams.Load(ctx, d.(streams.Porter), []streams.Record{leak})
	must(t, err)
	r = h.fails(1, "broken invariants", "check", "--store", hs.URL, "--token", "tok")
	if !strings.Contains(r.stdout, "streams: ") || !strings.Contains(r.stdout, "no fork reads it") {
		t.Fatalf("check through the server does not report the leaked stream:\n%s", r.stdout)
	}
}
