package httpstore_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/ckptstore/ckptstore/fdbstore"
	"github.com/ckptstore/ckptstore/httpstore"
)

// The stream name and the data of the tracing tests: no span may carry
// either, as they are a tenant's content.
const (
	tracedStream = "runs/secret-stream-name"
	tracedData   = "secret-stream-data"
)

// streamReq sends one /streams/ request of the traced server's namespace,
// with extra headers, and returns the reply with its body read whole.
func (tr *traced) streamReq(t *testing.T, ctx context.Context, method, query, body string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	resp, b, err := tr.streamDo(ctx, method, query, body, hdr)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// streamDo is streamReq for a goroutine of a test: it returns the error.
func (tr *traced) streamDo(ctx context.Context, method, query, body string, hdr map[string]string) (*http.Response, string, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, tr.srv.URL+"/streams/"+tracedStream+query, rd)
	if err != nil {
		return nil, "", err
	}
	req.Header.Set(httpstore.HeaderNamespace, tr.ns)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

// streamServerSpans returns the server spans of route (rpc.method).
func streamServerSpans(spans tracetest.SpanStubs, route string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range spans {
		if v, ok := attr(s, "rpc.method"); ok && v.AsString() == route && s.SpanKind == trace.SpanKindServer {
			out = append(out, s)
		}
	}
	return out
}

func oneStreamServerSpan(t *testing.T, spans tracetest.SpanStubs, route string) tracetest.SpanStub {
	t.Helper()
	got := streamServerSpans(spans, route)
	if len(got) != 1 {
		t.Fatalf("%d server spans of %s, want 1", len(got), route)
	}
	return got[0]
}

// noContent fails when any span's name or attribute holds the stream's
// name or its data.
func noContent(t *testing.T, spans tracetest.SpanStubs) {
	t.Helper()
	for _, s := range spans {
		for _, kv := range s.Attributes {
			v := kv.Value.String()
			if strings.Contains(v, "secret-stream") {
				t.Errorf("span %s: attribute %s = %q holds the stream's name or data", s.Name, kv.Key, v)
			}
		}
		if strings.Contains(s.Name, "secret-stream") {
			t.Errorf("span %s is named after the stream", s.Name)
		}
	}
}

// TestStreamsTracing: each /streams/ request under a caller's trace
// context is a server span of the template route with the tenant, the
// status and the request id; each driver call is a span beneath it, and
// memkv's transactions beneath those; a client's mistake carries its
// wire code and is not the span's error; no span holds the stream's name
// or data.
func TestStreamsTracing(t *testing.T) {
	tr := startTraced(t, "memkv", true)
	ctx, caller := callerSpan(tr.tp)
	tp := map[string]string{}
	// The client side of the trace context, as a traced HTTP client sends it.
	sc := caller.SpanContext()
	tp["Traceparent"] = "00-" + sc.TraceID().String() + "-" + sc.SpanID().String() + "-01"
	tp["Content-Type"] = "text/plain"
	if resp, _ := tr.streamReq(t, ctx, http.MethodPut, "", "", tp); resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d", resp.StatusCode)
	}
	if resp, _ := tr.streamReq(t, ctx, http.MethodPost, "", tracedData, tp); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("append: %d", resp.StatusCode)
	}
	if resp, body := tr.streamReq(t, ctx, http.MethodGet, "?offset=-1", "", tp); resp.StatusCode != http.StatusOK || body != tracedData {
		t.Fatalf("read: %d %q", resp.StatusCode, body)
	}
	resp, _ := tr.streamReq(t, ctx, http.MethodHead, "-missing", "", tp)
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("head of a missing stream: %d", resp.StatusCode)
	}
	caller.End()
	spans := tr.spans()
	noContent(t, spans)

	for _, c := range []struct {
		route, name string
		status      int64
	}{
		{"streams/create", "PUT /streams/{name}", 201},
		{"streams/append", "POST /streams/{name}", 204},
		{"streams/read", "GET /streams/{name}", 200},
		{"streams/head", "HEAD /streams/{name}", 404},
	} {
		srv := oneStreamServerSpan(t, spans, c.route)
		if srv.Name != c.name {
			t.Errorf("%s: server span %q, want %q", c.route, srv.Name, c.name)
		}
		if srv.SpanContext.TraceID() != sc.TraceID() || srv.Parent.SpanID() != sc.SpanID() || !srv.Parent.IsRemote() {
			t.Errorf("%s: the server span is not the caller's remote child", c.route)
		}
		wantAttr(t, srv, "http.route", httpstore.StreamsRoute)
		wantAttr(t, srv, "http.response.status_code", c.status)
		wantAttr(t, srv, httpstore.AttrTenant, tr.ns)
		if v, ok := attr(srv, httpstore.AttrRequestID); !ok || v.AsString() == "" {
			t.Errorf("%s: the server span has no request id", c.route)
		}
		if srv.Status.Code == codes.Error {
			t.Errorf("%s: a %d marks the server span as an error", c.route, c.status)
		}
		kids := childrenOf(spans, srv)
		if len(kids) == 0 {
			t.Fatalf("%s: no driver call beneath the server span", c.route)
		}
		engine := 0
		for _, k := range kids {
			if !strings.HasPrefix(k.Name, "ckptstore.streams.") {
				t.Errorf("%s: a child span %s, want the driver's calls", c.route, k.Name)
			}
			for _, e := range childrenOf(spans, k) {
				if e.Name == fdbstore.SpanTransact || e.Name == fdbstore.SpanReadTransact {
					engine++
				}
			}
		}
		if engine == 0 {
			t.Errorf("%s: no memkv transaction beneath the driver's calls", c.route)
		}
	}
	head := oneStreamServerSpan(t, spans, "streams/head")
	code, ok := attr(head, httpstore.AttrCode)
	if !ok || code.AsString() == "" {
		t.Fatal("the 404's server span has no wire code")
	}
	call := one(t, childrenOf(spans, head), httpstore.SpanStreamHead)
	wantAttr(t, call, httpstore.AttrCode, code.AsString())
	if call.Status.Code == codes.Error {
		t.Error("a missing stream marks the driver call's span as an error")
	}
}

// TestStreamsTracingLive: a long-poll's server span is open while the
// reader waits and ends with its reply, after the append that answered
// it, with its reads and its wait beneath it; an SSE reader's ends when
// its reply does (here the stream's close ends it).
func TestStreamsTracingLive(t *testing.T) {
	tr := startTraced(t, "mem", true)
	ctx := context.Background()
	plain := map[string]string{"Content-Type": "text/plain"}
	resp, _ := tr.streamReq(t, ctx, http.MethodPut, "", "", plain)
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d", resp.StatusCode)
	}
	tail := resp.Header.Get("Stream-Next-Offset")
	type reply struct {
		status int
		body   string
		err    error
	}
	done := make(chan reply, 1)
	go func() {
		resp, body, err := tr.streamDo(ctx, http.MethodGet, "?live=long-poll&offset="+tail, "", nil)
		if err != nil {
			done <- reply{err: err}
			return
		}
		done <- reply{resp.StatusCode, body, nil}
	}()
	// The long-poll has read the stream and waits: its read's span is out,
	// its server span is not.
	deadline := time.Now().Add(30 * time.Second)
	for len(named(tr.exp.GetSpans(), httpstore.SpanStreamRead)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the long-poll never read the stream")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if got := streamServerSpans(tr.exp.GetSpans(), "streams/longPoll"); len(got) != 0 {
		t.Fatal("the long-poll's server span ended before its reply")
	}
	if resp, _ := tr.streamReq(t, ctx, http.MethodPost, "", tracedData, plain); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("append: %d", resp.StatusCode)
	}
	if r := <-done; r.err != nil || r.status != http.StatusOK || r.body != tracedData {
		t.Fatalf("the long-poll answered %d %q, %v", r.status, r.body, r.err)
	}
	// Closed: an SSE reader from the start gets everything and its reply ends.
	closing := map[string]string{"Content-Type": "text/plain", "Stream-Closed": "true"}
	if resp, _ := tr.streamReq(t, ctx, http.MethodPost, "", "", closing); resp.StatusCode != http.StatusNoContent {
		t.Fatalf("close: %d", resp.StatusCode)
	}
	if resp, body := tr.streamReq(t, ctx, http.MethodGet, "?live=sse&offset=-1", "", nil); resp.StatusCode != http.StatusOK || !strings.Contains(body, tracedData) {
		t.Fatalf("sse: %d %q", resp.StatusCode, body)
	}
	spans := tr.spans()
	noContent(t, spans)
	lp := oneStreamServerSpan(t, spans, "streams/longPoll")
	appends := streamServerSpans(spans, "streams/append") // the data's, then the close's
	if len(appends) != 2 {
		t.Fatalf("%d append spans, want 2", len(appends))
	}
	appendSpan := appends[0]
	if appends[1].StartTime.Before(appendSpan.StartTime) {
		appendSpan = appends[1]
	}
	if lp.EndTime.Before(appendSpan.StartTime) {
		t.Errorf("the long-poll's span ended at %v, before the append that answered it began (%v)", lp.EndTime, appendSpan.StartTime)
	}
	kids := childrenOf(spans, lp)
	if len(named(kids, httpstore.SpanStreamWait)) != 1 || len(named(kids, httpstore.SpanStreamRead)) < 2 {
		var names []string
		for _, k := range kids {
			names = append(names, k.Name)
		}
		t.Errorf("the long-poll's calls %q, want its reads around one wait", names)
	}
	for _, k := range kids {
		if k.EndTime.After(lp.EndTime) {
			t.Errorf("the long-poll's %s ended after its server span", k.Name)
		}
	}
	wantAttr(t, lp, "http.response.status_code", int64(200))
	wantAttr(t, lp, httpstore.AttrTenant, tr.ns)
	sse := oneStreamServerSpan(t, spans, "streams/sse")
	wantAttr(t, sse, "http.response.status_code", int64(200))
	if len(named(childrenOf(spans, sse), httpstore.SpanStreamRead)) == 0 {
		t.Error("the SSE reader's span has no read beneath it")
	}
}

// TestStreamsTracingOff: without a TracerProvider a stream request makes
// no span.
func TestStreamsTracingOff(t *testing.T) {
	tr := startTraced(t, "memkv", false)
	if resp, _ := tr.streamReq(t, context.Background(), http.MethodPut, "", "", map[string]string{"Content-Type": "text/plain"}); resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d", resp.StatusCode)
	}
	if spans := tr.spans(); len(spans) != 0 {
		t.Errorf("with tracing off a stream request made %d spans", len(spans))
	}
}
