package httpstore_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/ckptstore/ckptstore/fdbstore"
	"github.com/ckptstore/ckptstore/httpstore"
	"github.com/ckptstore/ckptstore/internal/redistest"
	"github.com/ckptstore/ckptstore/storeurl"
)

// traced is a --dev server over url whose handler and engine trace into
// an in-memory exporter, behind a real loopback listener, and a client of
// a fresh namespace with the client's own transport (its fast path).
type traced struct {
	exp     *tracetest.InMemoryExporter
	tp      *sdktrace.TracerProvider
	srv     *httptest.Server
	client  *httpstore.Client
	ns      string
	mu      sync.Mutex
	headers []http.Header // the headers of each request the server got
}

func startTraced(t *testing.T, url string, handlerTracing bool) *traced {
	t.Helper()
	tr := &traced{exp: tracetest.NewInMemoryExporter()}
	tr.tp = sdktrace.NewTracerProvider(sdktrace.WithSyncer(tr.exp))
	t.Cleanup(func() { _ = tr.tp.Shutdown(context.Background()) })
	so := storeurl.Options{}
	ho := httpstore.HandlerOptions{Dev: true}
	if handlerTracing {
		so.TracerProvider, ho.TracerProvider = tr.tp, tr.tp
	}
	o, err := storeurl.Open(context.Background(), url, so)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.Close() })
	h := httpstore.NewHandler(o, ho)
	tr.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tr.mu.Lock()
		tr.headers = append(tr.headers, r.Header.Clone())
		tr.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(tr.srv.Close)
	tr.ns = "t-" + rand.Text()
	if tr.client, err = httpstore.NewClient(tr.srv.URL, httpstore.ClientOptions{Namespace: tr.ns}); err != nil {
		t.Fatal(err)
	}
	return tr
}

// spans returns the spans ended so far, after every request has been
// served: Close waits for the handlers, which end their spans after the
// reply is written.
func (tr *traced) spans() tracetest.SpanStubs {
	tr.srv.Close()
	return tr.exp.GetSpans()
}

func attr(s tracetest.SpanStub, key string) (attribute.Value, bool) {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

func wantAttr(t *testing.T, s tracetest.SpanStub, key string, want any) {
	t.Helper()
	v, ok := attr(s, key)
	if !ok {
		t.Errorf("span %s has no attribute %s", s.Name, key)
		return
	}
	if got := v.AsInterface(); got != want {
		t.Errorf("span %s: %s = %v (%T), want %v (%T)", s.Name, key, got, got, want, want)
	}
}

func named(spans tracetest.SpanStubs, name string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

func one(t *testing.T, spans tracetest.SpanStubs, name string) tracetest.SpanStub {
	t.Helper()
	got := named(spans, name)
	if len(got) != 1 {
		var names []string
		for _, s := range spans {
			names = append(names, s.Name)
		}
		t.Fatalf("%d spans named %s, want 1; the spans: %q", len(got), name, names)
	}
	return got[0]
}

// childrenOf returns the spans whose parent is p.
func childrenOf(spans tracetest.SpanStubs, p tracetest.SpanStub) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range spans {
		if s.Parent.SpanID() == p.SpanContext.SpanID() && s.SpanContext.TraceID() == p.SpanContext.TraceID() {
			out = append(out, s)
		}
	}
	return out
}

// checkRequestTree checks the spans of one getHead through the handler:
// the server span a child of the caller's span by traceparent, the store
// call's span beneath it; and returns the store call's span.
func checkRequestTree(t *testing.T, tr *traced, spans tracetest.SpanStubs, caller trace.SpanContext) tracetest.SpanStub {
	t.Helper()
	srv := one(t, spans, "POST /v1/getHead")
	if srv.SpanKind != trace.SpanKindServer {
		t.Errorf("the server span's kind is %v", srv.SpanKind)
	}
	if srv.SpanContext.TraceID() != caller.TraceID() || srv.Parent.SpanID() != caller.SpanID() || !srv.Parent.IsRemote() {
		t.Errorf("the server span's parent is %v (trace %v), want the caller's remote span %v (trace %v)",
			srv.Parent.SpanID(), srv.SpanContext.TraceID(), caller.SpanID(), caller.TraceID())
	}
	wantAttr(t, srv, "rpc.method", "getHead")
	wantAttr(t, srv, "http.route", "/v1/getHead")
	wantAttr(t, srv, "http.response.status_code", int64(200))
	wantAttr(t, srv, httpstore.AttrTenant, tr.ns)
	if _, ok := attr(srv, httpstore.AttrCode); ok {
		t.Error("a success's server span has a wire code")
	}
	store := one(t, spans, "ckptstore.getHead")
	if store.Parent.SpanID() != srv.SpanContext.SpanID() || store.SpanContext.TraceID() != caller.TraceID() {
		t.Errorf("the store call's span is not the server span's child")
	}
	return store
}

func callerSpan(tp trace.TracerProvider) (context.Context, trace.Span) {
	return tp.Tracer("test").Start(context.Background(), "caller")
}

// tracedGetHead sends one getHead under a caller's span, checks the
// request's server and store-call spans (checkRequestTree), and returns
// every span exported and the store call's.
func tracedGetHead(t *testing.T, tr *traced) (tracetest.SpanStubs, tracetest.SpanStub) {
	t.Helper()
	ctx, caller := callerSpan(tr.tp)
	if _, err := tr.client.GetHead(ctx, "thread-1"); err != nil {
		t.Fatal(err)
	}
	caller.End()
	spans := tr.spans()
	return spans, checkRequestTree(t, tr, spans, caller.SpanContext())
}

// TestTracingMem: one request through the client and the handler to
// memstore, which has no engine spans of its own.
func TestTracingMem(t *testing.T) {
	tr := startTraced(t, "mem", true)
	spans, store := tracedGetHead(t, tr)
	if got := childrenOf(spans, store); len(got) != 0 {
		t.Errorf("memstore's store call has %d child spans, want none", len(got))
	}
	if len(spans) != 3 {
		t.Errorf("%d spans, want 3 (caller, server, store call)", len(spans))
	}
}

// TestTracingMemkv: the same request to fdbstore on memkv, whose
// transaction attempt is the store call's child.
func TestTracingMemkv(t *testing.T) {
	tr := startTraced(t, "memkv", true)
	spans, store := tracedGetHead(t, tr)
	kids := childrenOf(spans, store)
	if len(kids) == 0 {
		t.Fatal("the store call has no transaction span beneath it")
	}
	for _, k := range kids {
		if k.Name != fdbstore.SpanReadTransact {
			t.Errorf("a child span %s of a read, want %s", k.Name, fdbstore.SpanReadTransact)
		}
		wantAttr(t, k, fdbstore.AttrRetry, int64(0))
		wantAttr(t, k, "db.system.name", "foundationdb")
	}
}

// TestTracingRedis: the same request to redisstore on a real
// redis-server, with go-redis's own spans (redisotel) beneath the store
// call.
func TestTracingRedis(t *testing.T) {
	rs := redistest.Start(t)
	tr := startTraced(t, "redis://"+rs.Addr, true)
	spans, store := tracedGetHead(t, tr)
	kids := childrenOf(spans, store)
	if len(kids) == 0 {
		t.Fatal("the store call has no go-redis span beneath it")
	}
	for _, k := range kids {
		if k.SpanKind != trace.SpanKindClient {
			t.Errorf("go-redis's span %s has kind %v, want client", k.Name, k.SpanKind)
		}
		if _, ok := attr(k, "db.statement"); ok {
			t.Errorf("go-redis's span %s records the statement, which may hold a tenant's checkpoint", k.Name)
		}
	}
}

// TestTracingFailure: a request that fails, sent with a traceparent of
// its own, carries its status and wire code on the server span and the
// store call's; a client's mistake (4xx) is not the server's error.
func TestTracingFailure(t *testing.T) {
	tr := startTraced(t, "mem", true)
	const traceID, parentID = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	req, err := http.NewRequest(http.MethodPost, tr.srv.URL+"/v1/get", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Traceparent", "00-"+traceID+"-"+parentID+"-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("get without an id: status %d, want 400", resp.StatusCode)
	}
	spans := tr.spans()
	srv := one(t, spans, "POST /v1/get")
	if srv.SpanContext.TraceID().String() != traceID || srv.Parent.SpanID().String() != parentID {
		t.Errorf("the server span is in trace %v under %v, want the traceparent's", srv.SpanContext.TraceID(), srv.Parent.SpanID())
	}
	wantAttr(t, srv, "http.response.status_code", int64(400))
	code, ok := attr(srv, httpstore.AttrCode)
	if !ok || code.AsString() == "" {
		t.Fatal("the failure's server span has no wire code")
	}
	if srv.Status.Code == codes.Error {
		t.Error("a 400 marks the server span as an error")
	}
	store := one(t, spans, "ckptstore.get")
	wantAttr(t, store, httpstore.AttrCode, code.AsString())
}

// TestTracingOff: without a TracerProvider the handler makes no span,
// and the client sends traceparent only from a context that has a span.
func TestTracingOff(t *testing.T) {
	tr := startTraced(t, "memkv", false)
	if _, err := tr.client.GetHead(context.Background(), "thread-1"); err != nil {
		t.Fatal(err)
	}
	ctx, caller := callerSpan(tr.tp)
	head, err := tr.client.GetHead(ctx, "thread-1")
	if err != nil || head != "" {
		t.Fatalf("GetHead with a span in the context: %q, %v", head, err)
	}
	caller.End()
	spans := tr.spans()
	if len(spans) != 1 || spans[0].Name != "caller" {
		t.Errorf("with tracing off the server made spans: %d spans, want only the caller's", len(spans))
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.headers) != 2 {
		t.Fatalf("the server got %d requests, want 2", len(tr.headers))
	}
	if got := tr.headers[0].Get("Traceparent"); got != "" {
		t.Errorf("a call without a span sent traceparent %q", got)
	}
	want := "00-" + caller.SpanContext().TraceID().String() + "-" + caller.SpanContext().SpanID().String() + "-01"
	if got := tr.headers[1].Get("Traceparent"); got != want {
		t.Errorf("traceparent %q, want %q", got, want)
	}
}

// TestTracingBadTraceparent: a malformed traceparent is ignored, never
// refused: the request succeeds and its server span starts a trace.
func TestTracingBadTraceparent(t *testing.T) {
	tr := startTraced(t, "mem", true)
	req, err := http.NewRequest(http.MethodPost, tr.srv.URL+"/v1/getHead", strings.NewReader(`{"threadId":"t"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Traceparent", "00-not-a-trace-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("getHead with a bad traceparent: status %d, want 200", resp.StatusCode)
	}
	srv := one(t, tr.spans(), "POST /v1/getHead")
	if srv.Parent.IsValid() || !srv.SpanContext.IsValid() {
		t.Errorf("the server span's parent is %v, want none (a new trace)", srv.Parent)
	}
}

// TestTracingLogIDs: with tracing on, a request's log record carries the
// trace and span ids of its server span, so its trace can be found from
// its log line; with tracing off it carries none.
func TestTracingLogIDs(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	for _, on := range []bool{true, false} {
		o, err := storeurl.Open(context.Background(), "mem", storeurl.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var logs bytes.Buffer
		ho := httpstore.HandlerOptions{Dev: true, Logger: slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
		if on {
			ho.TracerProvider = tp
		}
		req := httptest.NewRequest(http.MethodPost, "/v1/getHead", strings.NewReader(`{"threadId":"t"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
		rec := httptest.NewRecorder()
		httpstore.NewHandler(o, ho).ServeHTTP(rec, req)
		_ = o.Close()
		if rec.Code != http.StatusOK {
			t.Fatalf("status %d", rec.Code)
		}
		var rec1 struct {
			TraceID string `json:"trace_id"`
			SpanID  string `json:"span_id"`
		}
		if err := json.Unmarshal(logs.Bytes(), &rec1); err != nil {
			t.Fatalf("the log %q: %v", logs.String(), err)
		}
		if !on {
			if rec1.TraceID != "" || rec1.SpanID != "" {
				t.Errorf("tracing off: the log has trace ids: %s", logs.String())
			}
			continue
		}
		srv := one(t, exp.GetSpans(), "POST /v1/getHead")
		if rec1.TraceID != "4bf92f3577b34da6a3ce929d0e0e4736" || rec1.SpanID != srv.SpanContext.SpanID().String() {
			t.Errorf("the log's trace %q span %q, want the traceparent's trace and the server span %s", rec1.TraceID, rec1.SpanID, srv.SpanContext.SpanID())
		}
	}
}
