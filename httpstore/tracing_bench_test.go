package httpstore_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/ckptstore/ckptstore/httpstore"
	"github.com/ckptstore/ckptstore/storeurl"
)

// tracingCase is one tracer provider the tracing benchmarks compare.
type tracingCase struct {
	name string
	tp   trace.TracerProvider
}

// tracingCases are tracing off, on with every span sampled (exported to a
// no-op exporter) and on with none sampled.
func tracingCases() []tracingCase {
	return []tracingCase{
		{"off", nil},
		{"sampled", sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewNoopExporter()))},
		{"unsampled", sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample()))},
	}
}

// tracedHandler is a --dev handler over memkv in process, both traced by
// tp; the store closes when the benchmark ends.
func tracedHandler(b *testing.B, tp trace.TracerProvider) http.Handler {
	o, err := storeurl.Open(context.Background(), "memkv", storeurl.Options{TracerProvider: tp})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = o.Close() })
	return httpstore.NewHandler(o, httpstore.HandlerOptions{Dev: true, TracerProvider: tp})
}

// BenchmarkTracing serves getHead through the handler over memkv in
// process, with tracing off, on with every span sampled (exported to a
// no-op exporter) and on with none sampled: what tracing costs a request,
// in allocations and time.
func BenchmarkTracing(b *testing.B) {
	for _, c := range tracingCases() {
		b.Run(c.name, func(b *testing.B) {
			h := tracedHandler(b, c.tp)
			body := `{"threadId":"t"}`
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodPost, "/v1/getHead", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("status %d: %s", rec.Code, rec.Body)
				}
			}
		})
	}
}

// BenchmarkTracingStreams is BenchmarkTracing for the /streams/ routes:
// an append of 200 bytes and a HEAD of one stream, over memkv in
// process.
func BenchmarkTracingStreams(b *testing.B) {
	for _, c := range tracingCases() {
		for _, op := range []struct {
			method string
			want   int
		}{{http.MethodPost, http.StatusNoContent}, {http.MethodHead, http.StatusOK}} {
			b.Run("tracing="+c.name+"/op="+op.method, func(b *testing.B) {
				h := tracedHandler(b, c.tp)
				do := func(method, body string, want int) {
					req := httptest.NewRequest(method, "/streams/bench", strings.NewReader(body))
					req.Header.Set("Content-Type", "text/plain")
					req.Header.Set("Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, req)
					if rec.Code != want {
						b.Fatalf("%s: status %d: %s", method, rec.Code, rec.Body)
					}
				}
				do(http.MethodPut, "", http.StatusCreated)
				body := strings.Repeat("x", 200)
				if op.method == http.MethodHead {
					body = ""
				}
				b.ReportAllocs()
				for b.Loop() {
					do(op.method, body, op.want)
				}
			})
		}
	}
}
