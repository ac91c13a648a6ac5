package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// collector is an OTLP/HTTP trace receiver: what a collector is to the
// server, decoded with OTLP's own protobuf types.
type collector struct {
	srv   *httptest.Server
	mu    sync.Mutex
	spans []*tracepb.Span
	names []string // service.name of each span's resource
}

func startCollector(t *testing.T) *collector {
	c := &collector{}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" {
			http.Error(w, "no such path", http.StatusNotFound)
			return
		}
		b, err := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(b, &req)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		for _, rs := range req.ResourceSpans {
			service := ""
			for _, a := range rs.GetResource().GetAttributes() {
				if a.Key == "service.name" {
					service = a.GetValue().GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					c.spans = append(c.spans, s)
					c.names = append(c.names, service)
				}
			}
		}
		c.mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

// TestTracesOTLP: with OTEL_TRACES_EXPORTER=otlp a request that carries a
// traceparent is exported, at shutdown at the latest, to the OTLP
// endpoint: the server span in the caller's trace, the store call's span
// beneath it and memkv's transaction attempt beneath that, under the
// OTEL_SERVICE_NAME.
func TestTracesOTLP(t *testing.T) {
	col := startCollector(t)
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", col.srv.URL)
	t.Setenv("OTEL_SERVICE_NAME", "ckpt-traces-test")
	s := start(t, "--dev", "--listen", "127.0.0.1:0", "--store", "memkv")
	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	code, body := post(t, http.DefaultClient, s.url+"/v1/getHead", `{"threadId":"t"}`,
		"Traceparent", "00-"+traceID+"-"+parentID+"-01")
	if code != http.StatusOK {
		t.Fatalf("getHead: %d %s", code, body)
	}
	s.stop()
	exit := <-s.code
	s.code <- exit // for the cleanup's wait
	if exit != 0 {
		t.Fatalf("exit %d; log:\n%s", exit, s.errs)
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	byName := map[string]*tracepb.Span{}
	for i, sp := range col.spans {
		byName[sp.Name] = sp
		if col.names[i] != "ckpt-traces-test" {
			t.Errorf("span %s of service %q, want OTEL_SERVICE_NAME's", sp.Name, col.names[i])
		}
	}
	srv, store, tx := byName["POST /v1/getHead"], byName["ckptstore.getHead"], byName["fdb.read_transact"]
	if srv == nil || store == nil || tx == nil {
		var names []string
		for _, sp := range col.spans {
			names = append(names, sp.Name)
		}
		t.Fatalf("exported spans %q, want the server's, the store call's and the transaction's", names)
	}
	hex := func(b []byte) string {
		const digits = "0123456789abcdef"
		var sb strings.Builder
		for _, c := range b {
			sb.WriteByte(digits[c>>4])
			sb.WriteByte(digits[c&15])
		}
		return sb.String()
	}
	if hex(srv.TraceId) != traceID || hex(srv.ParentSpanId) != parentID || srv.Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("server span in trace %s under %s (kind %v), want the traceparent's", hex(srv.TraceId), hex(srv.ParentSpanId), srv.Kind)
	}
	if hex(store.ParentSpanId) != hex(srv.SpanId) || hex(tx.ParentSpanId) != hex(store.SpanId) {
		t.Error("the spans are not nested server > store call > transaction")
	}
}

// TestTracesOff: without OTEL_* variables no tracer is made; a value the
// server cannot honour is a usage error.
func TestTracesOff(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	ctx := context.Background()
	for _, e := range [][]string{
		nil,
		{"OTEL_TRACES_EXPORTER", "none"},
		{"OTEL_SDK_DISABLED", "true", "OTEL_TRACES_EXPORTER", "otlp"},
	} {
		tp, stop, err := newTracerProvider(ctx, env(e...))
		if tp != nil || err != nil || stop(ctx) != nil {
			t.Errorf("%q: tracer %v, err %v; want none", e, tp, err)
		}
	}
	for _, e := range [][]string{
		{"OTEL_TRACES_EXPORTER", "zipkin"},
		{"OTEL_TRACES_EXPORTER", "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"},
	} {
		if _, _, err := newTracerProvider(ctx, env(e...)); err == nil || !strings.Contains(err.Error(), e[len(e)-2]) {
			t.Errorf("%q: err %v, want a usage error naming %s", e, err, e[len(e)-2])
		}
	}
	tp, stop, err := newTracerProvider(ctx, env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1"))
	if tp == nil || err != nil {
		t.Errorf("an OTLP endpoint alone: tracer %v, err %v; want otlp", tp, err)
	} else {
		_ = stop(ctx)
	}
}
