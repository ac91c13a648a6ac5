package main

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ckptstore/ckptstore/httpstore"
	"github.com/ckptstore/ckptstore/storeurl"
	"github.com/ckptstore/ckptstore/streams"
	"github.com/ckptstore/ckptstore/streams/streamstest"
)

// TestServerStreams: with only a tenant's token, export through a
// ckptserver carries the tenant's streams (data, closure, TTL, forks,
// producers) and none of another tenant's; import through the server
// loads them into another tenant, where every stream reads back the same
// at the same offsets, and again loads nothing; copy server → server
// carries and verifies them, and one interrupted mid-way is finished by
// running it again; a stream the destination holds with other
// content is refused (exit 1) with its forks, and left as it is.
func TestServerStreams(t *testing.T) {
	t.Setenv(tokenEnv, "")
	ctx := context.Background()
	o, err := storeurl.Open(ctx, "mem", storeurl.Options{})
	must(t, err)
	tokens := map[string]string{}
	for _, ns := range []string{"a", "b", "c", "d", "e", "f"} {
		tokens["tok-"+ns] = ns
	}
	srv := httptest.NewServer(httpstore.NewHandler(o, httpstore.HandlerOptions{Tokens: tokens}))
	t.Cleanup(srv.Close)
	url := srv.URL
	driverOf := func(ns string) streams.Driver {
		d, err := o.Streams(ns)
		must(t, err)
		return d
	}
	streamstest.Populate(t, driverOf("a"))
	if _, _, err := driverOf("b").Create(ctx, "b-only", &streams.CreateRequest{Config: streams.Config{ContentType: "text/plain"}}, streamstest.Clock(0)); err != nil {
		t.Fatal(err)
	}

	h := newHarness(t)
	r := h.ok("export", "--store", url, "--token", "tok-a", "--progress", "0")
	if strings.Contains(r.stdout, "b-only") {
		t.Fatal("tenant a's export holds tenant b's stream")
	}
	if !strings.Contains(r.stderr, "15 streams") {
		t.Errorf("export does not count the 15 streams:\n%s", r.stderr)
	}
	h.stdin = r.stdout
	r = h.ok("import", "--store", url, "--token", "tok-c", "--progress", "0")
	if !strings.Contains(r.stdout, "streams: 15 streams in") {
		t.Errorf("import summary:\n%s", r.stdout)
	}
	streamstest.SameReads(t, driverOf("a"), driverOf("c"), streamstest.Clock(3))
	r = h.ok("import", "--store", url, "--token", "tok-c", "--progress", "0")
	if !strings.Contains(r.stdout, "records, 0 records loaded") {
		t.Errorf("a second import loaded records:\n%s", r.stdout)
	}

	// copy a → d, verified.
	r = h.ok("copy", "--from", url, "--from-token", "tok-a", "--to", url, "--to-token", "tok-d", "--verify", "--progress", "0")
	if !strings.Contains(r.stdout, "15 streams\n") {
		t.Errorf("copy --verify:\n%s", r.stdout)
	}
	streamstest.SameReads(t, driverOf("a"), driverOf("d"), streamstest.Clock(3))

	// copy a → f interrupted after a few batches, some stream left
	// pending; copy again finishes it, and verifies.
	cctx, cancel := context.WithCancel(ctx)
	batches := 0
	h.afterBatch = func() error {
		if batches++; batches == 3 {
			cancel()
		}
		return nil
	}
	r = h.runCtx(cctx, "copy", "--from", url, "--from-token", "tok-a", "--to", url, "--to-token", "tok-f", "--batch", "3", "--progress", "0")
	cancel()
	h.afterBatch = nil
	if r.code != 1 {
		t.Fatalf("interrupted copy: %v", r)
	}
	partial, err := streams.Check(ctx, driverOf("f").(streams.Porter))
	must(t, err)
	if len(partial) == 0 {
		t.Fatal("the interrupted copy left no stream pending")
	}
	h.ok("copy", "--from", url, "--from-token", "tok-a", "--to", url, "--to-token", "tok-f", "--batch", "3", "--verify", "--progress", "0")
	streamstest.SameReads(t, driverOf("a"), driverOf("f"), streamstest.Clock(3))
	if ps, err := streams.Check(ctx, driverOf("f").(streams.Porter)); err != nil || len(ps) != 0 {
		t.Fatalf("after the resumed copy: %v %v", ps, err)
	}

	// e holds another "src": refused, with its forks f1 and f2 (f2 forks
	// f1); everything else is copied.
	if _, _, err := driverOf("e").Create(ctx, "src", &streams.CreateRequest{Config: streams.Config{ContentType: "text/plain"},
		Body: &streams.Chunk{Data: []byte("mine")}}, streamstest.Clock(0)); err != nil {
		t.Fatal(err)
	}
	r = h.fails(1, `stream "src": refused`, "copy", "--from", url, "--from-token", "tok-a", "--to", url, "--to-token", "tok-e", "--progress", "0")
	for _, name := range []string{"f1", "f2"} {
		if !strings.Contains(r.stderr, `stream "`+name+`": refused`) {
			t.Errorf("the fork %s of the refused stream is not refused:\n%s", name, r.stderr)
		}
		if _, err := driverOf("e").Head(ctx, name, false, streamstest.Clock(3)); !strings.Contains(streams.Code(err), "NOT_FOUND") {
			t.Errorf("the fork %s of the refused stream was loaded: %v", name, err)
		}
	}
	rd, err := driverOf("e").Read(ctx, "src", 0, 100, streamstest.Clock(3))
	must(t, err)
	if len(rd.Chunks) != 1 || string(rd.Chunks[0].Data) != "mine" {
		t.Fatalf("the refused stream was changed: %+v", rd.Chunks)
	}
	if _, err := driverOf("e").Head(ctx, "bytes", false, streamstest.Clock(3)); err != nil {
		t.Fatalf("the other streams were not copied: %v", err)
	}
}
