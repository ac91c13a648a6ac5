package httpstore_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore/httpstore"
	"github.com/ckptstore/ckptstore/internal/redistest"
	_ "github.com/ckptstore/ckptstore/redisstore"
	"github.com/ckptstore/ckptstore/storeurl"
	"github.com/prometheus/client_golang/prometheus"
)

// streamServers starts n servers (handlers) over one mem store, as n
// ckptservers over one backend.
func streamServers(t *testing.T, n int, opts httpstore.HandlerOptions) []string {
	t.Helper()
	o, err := storeurl.Open(context.Background(), "mem", storeurl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var urls []string
	for range n {
		srv := httptest.NewServer(httpstore.NewHandler(o, opts))
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL)
	}
	return urls
}

type sreq struct {
	method, url, body string
	hd                map[string]string
}

func sdo(t *testing.T, r sreq) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(r.method, r.url, strings.NewReader(r.body))
	if err != nil {
		t.Fatal(err)
	}
	if r.body == "" {
		req.Body, req.ContentLength = nil, 0
	}
	for k, v := range r.hd {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, string(b)
}

func wantStatus(t *testing.T, res *http.Response, body string, want int) {
	t.Helper()
	if res.StatusCode != want {
		t.Fatalf("%s %s: %d %s, want %d", res.Request.Method, res.Request.URL, res.StatusCode, body, want)
	}
}

var textPlain = map[string]string{"Content-Type": "text/plain"}

func TestStreamsNames(t *testing.T) {
	u := streamServers(t, 1, httpstore.HandlerOptions{Dev: true})[0]
	res, body := sdo(t, sreq{"PUT", u + "/streams/run%2F42", "a", textPlain})
	wantStatus(t, res, body, http.StatusCreated)
	// A raw slash and %2F are one name; no path is cleaned or redirected.
	res, body = sdo(t, sreq{"GET", u + "/streams/run/42", "", nil})
	wantStatus(t, res, body, http.StatusOK)
	if body != "a" {
		t.Fatalf("read %q", body)
	}
	res, body = sdo(t, sreq{"PUT", u + "/streams/run/42", "", textPlain})
	wantStatus(t, res, body, http.StatusOK)
	res, body = sdo(t, sreq{"GET", u + "/streams/x/../run/42", "", nil})
	wantStatus(t, res, body, http.StatusNotFound)
	res, body = sdo(t, sreq{"PUT", u + "/streams//run//42/", "", textPlain})
	wantStatus(t, res, body, http.StatusCreated)
	res, body = sdo(t, sreq{"PUT", u + "/streams/", "", textPlain})
	wantStatus(t, res, body, http.StatusBadRequest)
	res, body = sdo(t, sreq{"GET", u + "/streams/__ds/subscriptions/s", "", nil})
	wantStatus(t, res, body, http.StatusNotFound)
}

func TestStreamsNamespaces(t *testing.T) {
	u := streamServers(t, 1, httpstore.HandlerOptions{Dev: true})[0]
	ns := func(n string) map[string]string {
		return map[string]string{"Content-Type": "text/plain", httpstore.HeaderNamespace: n}
	}
	for _, n := range []string{"a", "b"} {
		res, body := sdo(t, sreq{"PUT", u + "/streams/s", n, ns(n)})
		wantStatus(t, res, body, http.StatusCreated)
	}
	// No header: the default namespace, which holds no s yet.
	res, body := sdo(t, sreq{"GET", u + "/streams/s", "", nil})
	wantStatus(t, res, body, http.StatusNotFound)
	_, body = sdo(t, sreq{"GET", u + "/streams/s", "", ns("b")})
	if body != "b" {
		t.Fatalf("namespace b reads %q", body)
	}
	res, body = sdo(t, sreq{"PUT", u + "/streams/s", "", ns(httpstore.DefaultNamespace)})
	wantStatus(t, res, body, http.StatusCreated)

	// Outside Dev, the token names the namespace.
	u = streamServers(t, 1, httpstore.HandlerOptions{Tokens: map[string]string{"tok-a": "a", "tok-b": "b"}})[0]
	bearer := func(tok string) map[string]string {
		return map[string]string{"Content-Type": "text/plain", "Authorization": "Bearer " + tok}
	}
	res, body = sdo(t, sreq{"PUT", u + "/streams/s", "A", bearer("tok-a")})
	wantStatus(t, res, body, http.StatusCreated)
	res, body = sdo(t, sreq{"GET", u + "/streams/s", "", bearer("tok-b")})
	wantStatus(t, res, body, http.StatusNotFound)
	res, body = sdo(t, sreq{"GET", u + "/streams/s", "", nil})
	wantStatus(t, res, body, http.StatusUnauthorized)
	// A preflight carries no token.
	res, body = sdo(t, sreq{"OPTIONS", u + "/streams/s", "", map[string]string{"Origin": "https://x", "Access-Control-Request-Headers": "if-none-match"}})
	wantStatus(t, res, body, http.StatusNoContent)
	if !strings.Contains(strings.ToLower(res.Header.Get("Access-Control-Allow-Headers")), "if-none-match") {
		t.Fatalf("preflight allows %q", res.Header.Get("Access-Control-Allow-Headers"))
	}
}

func TestStreamsForkedFrom(t *testing.T) {
	u := streamServers(t, 1, httpstore.HandlerOptions{Dev: true})[0]
	res, body := sdo(t, sreq{"PUT", u + "/streams/v1/src", "data", textPlain})
	wantStatus(t, res, body, http.StatusCreated)
	// Relative to the mount, under it, or a whole URL: one source.
	for i, from := range []string{"/v1/src", "/streams/v1/src", "/streams/v1%2Fsrc", u + "/streams/v1/src"} {
		name := u + "/streams/fork" + string(rune('a'+i))
		res, body = sdo(t, sreq{"PUT", name, "", map[string]string{"Stream-Forked-From": from}})
		wantStatus(t, res, body, http.StatusCreated)
		if res.Header.Get("Stream-Forked-From") != "" {
			t.Fatal("a fork's reply names its source")
		}
		if _, body = sdo(t, sreq{"GET", name, "", nil}); body != "data" {
			t.Fatalf("fork of %q reads %q", from, body)
		}
	}
}

// streamServersOn starts n servers over the store url, each with a store
// (and a Redis client and subscription) of its own, as n ckptservers.
func streamServersOn(t *testing.T, url string, n int, opts httpstore.HandlerOptions) []string {
	t.Helper()
	var urls []string
	for range n {
		o, err := storeurl.Open(context.Background(), url, storeurl.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = o.Close() })
		srv := httptest.NewServer(httpstore.NewHandler(o, opts))
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL)
	}
	return urls
}

// TestStreamsLiveAcrossServers: a long-poll and an SSE reader on one
// server wake when another server on the same backend appends and
// closes: two handlers over one memstore, and two ckptservers' worth of
// stores (clients, subscriptions) over one redis-server.
func TestStreamsLiveAcrossServers(t *testing.T) {
	opts := httpstore.HandlerOptions{Dev: true, Streams: httpstore.StreamsOptions{LongPollTimeout: time.Minute}}
	t.Run("mem", func(t *testing.T) { liveAcross(t, streamServers(t, 2, opts)) })
	t.Run("redis", func(t *testing.T) {
		url := "redis://" + redistest.Start(t).Addr
		liveAcross(t, streamServersOn(t, url, 2, opts))
	})
}

func liveAcross(t *testing.T, us []string) {
	a, b := us[0], us[1]
	res, body := sdo(t, sreq{"PUT", a + "/streams/live", "", textPlain})
	wantStatus(t, res, body, http.StatusCreated)
	tail := res.Header.Get("Stream-Next-Offset")

	sse, err := http.Get(b + "/streams/live?offset=-1&live=sse")
	if err != nil {
		t.Fatal(err)
	}
	defer sse.Body.Close()
	if ct := sse.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("SSE content type %q", ct)
	}
	type poll struct {
		res  *http.Response
		body string
	}
	done := make(chan poll, 1)
	go func() {
		res, body := sdo(t, sreq{"GET", b + "/streams/live?offset=" + tail + "&live=long-poll", "", nil})
		done <- poll{res, body}
	}()
	time.Sleep(50 * time.Millisecond) // let the readers wait; they must wake either way
	res, body = sdo(t, sreq{"POST", a + "/streams/live", "hello\nworld", textPlain})
	wantStatus(t, res, body, http.StatusNoContent)
	p := <-done
	wantStatus(t, p.res, p.body, http.StatusOK)
	if p.body != "hello\nworld" || p.res.Header.Get("Stream-Cursor") == "" {
		t.Fatalf("long-poll got %q, cursor %q", p.body, p.res.Header.Get("Stream-Cursor"))
	}
	res, body = sdo(t, sreq{"POST", a + "/streams/live", "", map[string]string{"Stream-Closed": "true"}})
	wantStatus(t, res, body, http.StatusNoContent)

	// Every data event is followed by its control event; the last control
	// event closes the stream and the reply ends.
	var events []string
	sc := bufio.NewScanner(sse.Body)
	var ev strings.Builder
	for sc.Scan() {
		if line := sc.Text(); line != "" {
			ev.WriteString(line + "|")
			continue
		}
		events = append(events, ev.String())
		ev.Reset()
	}
	want := []string{
		`event: control|data:{"streamNextOffset":"0000000000000000_0000000000000000","streamCursor":"*","upToDate":true}|`,
		`event: data|data:hello|data:world|`,
		`event: control|data:{"streamNextOffset":"0000000000000000_0000000000000011","streamCursor":"*","upToDate":true}|`,
		`event: control|data:{"streamNextOffset":"0000000000000000_0000000000000011","streamClosed":true,"upToDate":true}|`,
	}
	if len(events) != len(want) {
		t.Fatalf("SSE events %q, want %q", events, want)
	}
	for i := range want {
		pre, post, _ := strings.Cut(want[i], "*")
		if !strings.HasPrefix(events[i], pre) || !strings.HasSuffix(events[i], post) {
			t.Fatalf("SSE event %d: %q, want %q", i, events[i], want[i])
		}
	}
}

func TestStreamsLimits(t *testing.T) {
	reg := prometheus.NewRegistry()
	u := streamServers(t, 1, httpstore.HandlerOptions{Dev: true, Registerer: reg, Streams: httpstore.StreamsOptions{
		MaxAppendBytes: 10, MaxLiveReaders: 1, LongPollTimeout: time.Minute}})[0]
	res, body := sdo(t, sreq{"PUT", u + "/streams/s", "", textPlain})
	wantStatus(t, res, body, http.StatusCreated)
	res, body = sdo(t, sreq{"POST", u + "/streams/s", "0123456789x", textPlain})
	wantStatus(t, res, body, http.StatusRequestEntityTooLarge)
	res, body = sdo(t, sreq{"POST", u + "/streams/s", "0123456789", textPlain})
	wantStatus(t, res, body, http.StatusNoContent)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", u+"/streams/s?offset=now&live=sse", nil)
	sse, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer sse.Body.Close()
	res, body = sdo(t, sreq{"GET", u + "/streams/s?offset=now&live=long-poll", "", nil})
	wantStatus(t, res, body, http.StatusTooManyRequests)
	if got := requests(t, reg, "streams/append", "413"); got != 1 {
		t.Fatalf("requests_total{rpc=streams/append,status=413} = %v", got)
	}
}

func requests(t *testing.T, reg *prometheus.Registry, rpc, status string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "ckptstore_http_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			var r, s string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "rpc":
					r = l.GetValue()
				case "status":
					s = l.GetValue()
				}
			}
			if r == rpc && s == status {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no requests_total{rpc=%s,status=%s}", rpc, status)
	return 0
}

func TestStreamsEpochFence(t *testing.T) {
	u := streamServers(t, 1, httpstore.HandlerOptions{Dev: true})[0]
	res, body := sdo(t, sreq{"PUT", u + "/streams/f", "", textPlain})
	wantStatus(t, res, body, http.StatusCreated)
	prod := func(id, epoch string, fence bool) map[string]string {
		h := map[string]string{"Content-Type": "text/plain", "Producer-Id": id, "Producer-Epoch": epoch, "Producer-Seq": "0"}
		if fence {
			h[httpstore.HeaderEpochFence] = "stream"
		}
		return h
	}
	res, body = sdo(t, sreq{"POST", u + "/streams/f", "new", prod("host-b", "5", true)})
	wantStatus(t, res, body, http.StatusOK)
	// A zombie with its own random Producer-Id passes the protocol's
	// per-producer fence, and not the per-stream one.
	res, body = sdo(t, sreq{"POST", u + "/streams/f", "zombie", prod("host-a", "4", true)})
	wantStatus(t, res, body, http.StatusForbidden)
	if res.Header.Get("Producer-Epoch") != "5" {
		t.Fatalf("403 with Producer-Epoch %q, want 5", res.Header.Get("Producer-Epoch"))
	}
	res, body = sdo(t, sreq{"POST", u + "/streams/f", "allowed", prod("host-c", "4", false)})
	wantStatus(t, res, body, http.StatusOK)
	if _, body = sdo(t, sreq{"GET", u + "/streams/f", "", nil}); body != "newallowed" {
		t.Fatalf("read %q", body)
	}
}

func TestStreamsExpectOffset(t *testing.T) {
	u := streamServers(t, 1, httpstore.HandlerOptions{Dev: true})[0]
	res, body := sdo(t, sreq{"PUT", u + "/streams/e", "", textPlain})
	wantStatus(t, res, body, http.StatusCreated)
	tail0 := res.Header.Get("Stream-Next-Offset")
	at := func(off string, extra ...string) map[string]string {
		h := map[string]string{"Content-Type": "text/plain", httpstore.HeaderExpectOffset: off}
		for i := 0; i+1 < len(extra); i += 2 {
			h[extra[i]] = extra[i+1]
		}
		return h
	}
	res, body = sdo(t, sreq{"POST", u + "/streams/e", "ab", at("-1")})
	wantStatus(t, res, body, http.StatusNoContent)
	tail2 := res.Header.Get("Stream-Next-Offset")
	// Another writer's tail: 409 with the tail, and nothing written.
	res, body = sdo(t, sreq{"POST", u + "/streams/e", "X", at(tail0)})
	wantStatus(t, res, body, http.StatusConflict)
	if !strings.Contains(body, "STREAM_TAIL_MISMATCH") || res.Header.Get("Stream-Next-Offset") != tail2 {
		t.Fatalf("mismatch: %s, Stream-Next-Offset %q, want %q", body, res.Header.Get("Stream-Next-Offset"), tail2)
	}
	for _, bad := range []string{"", "now", "2", "0000000000000001_0000000000000002"} {
		res, body = sdo(t, sreq{"POST", u + "/streams/e", "X", at(bad)})
		wantStatus(t, res, body, http.StatusBadRequest)
	}
	// As a producer: 200, and the retry after a lost reply 204.
	prod := at(tail2, "Producer-Id", "p", "Producer-Epoch", "0", "Producer-Seq", "0")
	for _, want := range []int{http.StatusOK, http.StatusNoContent} {
		res, body = sdo(t, sreq{"POST", u + "/streams/e", "cd", prod})
		wantStatus(t, res, body, want)
	}
	if _, body = sdo(t, sreq{"GET", u + "/streams/e", "", nil}); body != "abcd" {
		t.Fatalf("read %q, want abcd", body)
	}
	res, _ = sdo(t, sreq{"OPTIONS", u + "/streams/e", "", nil})
	if !strings.Contains(res.Header.Get("Access-Control-Allow-Headers"), httpstore.HeaderExpectOffset) {
		t.Fatalf("preflight allows %q", res.Header.Get("Access-Control-Allow-Headers"))
	}
}

func TestStreamsSweep(t *testing.T) {
	reg := prometheus.NewRegistry()
	o, err := storeurl.Open(context.Background(), "mem", storeurl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := httpstore.NewHandler(o, httpstore.HandlerOptions{Dev: true, Registerer: reg})
	srv := httptest.NewServer(h)
	defer srv.Close()
	exp := time.Now().Add(200 * time.Millisecond).UTC().Format(time.RFC3339Nano)
	for _, name := range []string{"a", "b"} {
		res, body := sdo(t, sreq{"PUT", srv.URL + "/streams/" + name, "", map[string]string{"Stream-Expires-At": exp}})
		wantStatus(t, res, body, http.StatusCreated)
	}
	res, body := sdo(t, sreq{"PUT", srv.URL + "/streams/kept", "", nil})
	wantStatus(t, res, body, http.StatusCreated)
	time.Sleep(300 * time.Millisecond) // past the expiry
	n, err := h.(httpstore.StreamsSweeper).SweepStreams(context.Background(), 1000)
	if err != nil || n != 2 {
		t.Fatalf("swept %d, %v; want the 2 expired", n, err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, mf := range mfs {
		if mf.GetName() == "ckptstore_streams_swept_total" {
			found = mf.GetMetric()[0].GetCounter().GetValue() == 2
		}
	}
	if !found {
		t.Fatal("ckptstore_streams_swept_total is not 2")
	}
	res, body = sdo(t, sreq{"HEAD", srv.URL + "/streams/kept", "", nil})
	wantStatus(t, res, body, http.StatusOK)
}

// TestStreamsStopLiveReads: a server shutting down ends its live reads
// at once: a long-poll answers 204 with its offset, an SSE reply ends.
func TestStreamsStopLiveReads(t *testing.T) {
	o, err := storeurl.Open(context.Background(), "mem", storeurl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := httpstore.NewHandler(o, httpstore.HandlerOptions{Dev: true, Streams: httpstore.StreamsOptions{LongPollTimeout: time.Hour, SSEDuration: time.Hour}})
	srv := httptest.NewServer(h)
	defer srv.Close()
	res, body := sdo(t, sreq{"PUT", srv.URL + "/streams/s", "", textPlain})
	wantStatus(t, res, body, http.StatusCreated)
	sse, err := http.Get(srv.URL + "/streams/s?offset=now&live=sse")
	if err != nil {
		t.Fatal(err)
	}
	defer sse.Body.Close()
	done := make(chan *http.Response, 1)
	go func() {
		res, _ := sdo(t, sreq{"GET", srv.URL + "/streams/s?offset=now&live=long-poll", "", nil})
		done <- res
	}()
	time.Sleep(50 * time.Millisecond) // both readers wait
	h.(httpstore.LiveReadsStopper).StopLiveReads()
	res = <-done
	if res.StatusCode != http.StatusNoContent || res.Header.Get("Stream-Next-Offset") == "" {
		t.Fatalf("long-poll after stop: %d, offset %q", res.StatusCode, res.Header.Get("Stream-Next-Offset"))
	}
	if _, err := io.ReadAll(sse.Body); err != nil {
		t.Fatalf("the SSE reply did not end cleanly: %v", err)
	}
}

// TestStreamsChunkedBody: a body without a Content-Length is read as it
// comes and refused once past the limit.
func TestStreamsChunkedBody(t *testing.T) {
	u := streamServers(t, 1, httpstore.HandlerOptions{Dev: true, Streams: httpstore.StreamsOptions{MaxAppendBytes: 10}})[0]
	res, body := sdo(t, sreq{"PUT", u + "/streams/c", "", textPlain})
	wantStatus(t, res, body, http.StatusCreated)
	for _, tc := range []struct {
		body string
		want int
	}{{"0123456789", http.StatusNoContent}, {"0123456789x", http.StatusRequestEntityTooLarge}} {
		req, err := http.NewRequest("POST", u+"/streams/c", io.MultiReader(strings.NewReader(tc.body)))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "text/plain")
		req.ContentLength = -1 // chunked
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != tc.want {
			t.Fatalf("chunked body of %d bytes: %d, want %d", len(tc.body), res.StatusCode, tc.want)
		}
	}
	if _, body = sdo(t, sreq{"GET", u + "/streams/c", "", nil}); body != "0123456789" {
		t.Fatalf("read %q", body)
	}
}

// TestStreamsCatchUpReplies: a catch-up read of a byte stream carries up
// to 16 reads of MaxReadBytes in one reply, read from the store one read
// at a time, a fork's across its fork point; a JSON stream's reply stays
// one read; reading on from each reply's Stream-Next-Offset returns the
// stream whole, in order. On memstore, fdbstore over memkv and Redis.
func TestStreamsCatchUpReplies(t *testing.T) {
	for _, store := range []string{"mem", "memkv", "redis"} {
		t.Run(store, func(t *testing.T) {
			url := store
			if store == "redis" {
				url = "redis://" + redistest.Start(t).Addr
			}
			testCatchUpReplies(t, url)
		})
	}
}

func testCatchUpReplies(t *testing.T, url string) {
	const max = 1000
	base := streamServersOn(t, url, 1, httpstore.HandlerOptions{Dev: true, Streams: httpstore.StreamsOptions{MaxReadBytes: max}})[0] + "/streams/"
	var want strings.Builder
	res, body := sdo(t, sreq{"PUT", base + "b", "", textPlain})
	wantStatus(t, res, body, http.StatusCreated)
	for i := range 50 {
		piece := strings.Repeat(string(rune('a'+i%26)), 999)
		want.WriteString(piece)
		res, body := sdo(t, sreq{"POST", base + "b", piece, textPlain})
		wantStatus(t, res, body, http.StatusNoContent)
	}
	readAll := func(name string) (string, []int) {
		t.Helper()
		var got strings.Builder
		var sizes []int
		for off := "-1"; ; {
			res, body := sdo(t, sreq{"GET", base + name + "?offset=" + off, "", nil})
			wantStatus(t, res, body, http.StatusOK)
			if res.ContentLength != int64(len(body)) {
				t.Fatalf("Content-Length %d, body %d bytes", res.ContentLength, len(body))
			}
			got.WriteString(body)
			sizes = append(sizes, len(body))
			off = res.Header.Get("Stream-Next-Offset")
			if res.Header.Get("Stream-Up-To-Date") == "true" {
				return got.String(), sizes
			}
		}
	}
	got, sizes := readAll("b")
	if got != want.String() {
		t.Fatalf("read %d bytes that differ from the %d appended", len(got), want.Len())
	}
	// 49,950 bytes: three replies of 16 reads' worth, then the rest.
	if len(sizes) != 4 || sizes[0] != 16*max || sizes[3] != 49_950-3*16*max {
		t.Fatalf("reply sizes %v, want 3 of %d and one of %d", sizes, 16*max, 49_950-3*16*max)
	}

	// A fork's replies run across its fork point.
	res, body = sdo(t, sreq{"PUT", base + "f", "", map[string]string{"Stream-Forked-From": "/b"}})
	wantStatus(t, res, body, http.StatusCreated)
	for range 20 {
		piece := strings.Repeat("F", 999)
		want.WriteString(piece)
		res, body := sdo(t, sreq{"POST", base + "f", piece, textPlain})
		wantStatus(t, res, body, http.StatusNoContent)
	}
	got, sizes = readAll("f")
	if got != want.String() {
		t.Fatalf("the fork read %d bytes that differ from the %d of its source and its own", len(got), want.Len())
	}
	if len(sizes) != 5 || sizes[3] != 16*max {
		t.Fatalf("the fork's reply sizes %v, want 4 of %d and the rest", sizes, 16*max)
	}

	res, body = sdo(t, sreq{"PUT", base + "j", "", map[string]string{"Content-Type": "application/json"}})
	wantStatus(t, res, body, http.StatusCreated)
	for range 10 {
		res, body := sdo(t, sreq{"POST", base + "j", `"` + strings.Repeat("j", 400) + `"`, map[string]string{"Content-Type": "application/json"}})
		wantStatus(t, res, body, http.StatusNoContent)
	}
	res, body = sdo(t, sreq{"GET", base + "j?offset=-1", "", nil})
	wantStatus(t, res, body, http.StatusOK)
	if res.Header.Get("Stream-Up-To-Date") == "true" || len(body) > 2*max {
		t.Fatalf("a JSON reply of %d bytes, up to date %q: want one read's worth", len(body), res.Header.Get("Stream-Up-To-Date"))
	}
}
