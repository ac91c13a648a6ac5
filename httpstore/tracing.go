package httpstore

// OpenTelemetry tracing of the handler and the client. Tracing is off
// unless HandlerOptions.TracerProvider (or ClientOptions.TracerProvider)
// is set: with it off, a request pays one nil check and nothing else, so
// the hot path is as cheap as it was without tracing.

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// TracerName is the instrumentation scope of the spans this package makes.
const TracerName = "github.com/ckptstore/ckptstore/httpstore"

// The span attributes beyond OpenTelemetry's semantic conventions.
const (
	AttrTenant    = "ckptstore.tenant"     // the namespace a request used
	AttrRequestID = "ckptstore.request_id" // the reply's X-Request-Id
	AttrCode      = "ckptstore.code"       // the wire code of a failure
)

// tracing is the handler's tracer and propagator; nil when tracing is off.
type tracing struct {
	tracer trace.Tracer
	prop   propagation.TextMapPropagator
}

func newTracing(tp trace.TracerProvider, prop propagation.TextMapPropagator) *tracing {
	if tp == nil {
		return nil
	}
	if prop == nil {
		prop = propagation.TraceContext{}
	}
	return &tracing{tracer: tp.Tracer(TracerName), prop: prop}
}

// spanNames are the span names and route of an rpc, made once so that a
// traced request does not build them.
type spanNames struct{ server, route, store string }

var spanNamesOf = map[string]*spanNames{}

func init() {
	for name := range routes {
		spanNamesOf[name] = newSpanNames(name)
	}
	spanNamesOf["unknown"] = newSpanNames("unknown")
}

func newSpanNames(rpc string) *spanNames {
	return &spanNames{server: "POST /v1/" + rpc, route: "/v1/" + rpc, store: "ckptstore." + rpc}
}

func namesOf(rpc string) *spanNames {
	if n := spanNamesOf[rpc]; n != nil {
		return n
	}
	return newSpanNames(rpc)
}

// startServer starts the server span of r, a child of the trace context
// r carries (traceparent), and returns r with the span in its context.
func (t *tracing) startServer(r *http.Request, rpc string) (*http.Request, trace.Span) {
	ctx := t.prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	n := namesOf(rpc)
	name := n.server
	if r.Method != http.MethodPost {
		name = r.Method + " " + n.route
	}
	ctx, span := t.tracer.Start(ctx, name,
		trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(
			attribute.String("http.request.method", r.Method),
			attribute.String("http.route", n.route),
			attribute.String("rpc.method", rpc),
		))
	return r.WithContext(ctx), span
}

// endServer ends the server span of a request answered with status and,
// for a failure, the wire code. Only a server-side failure (5xx) marks the
// span as an error, as OpenTelemetry's HTTP conventions ask: a client's
// mistake is the client's span's error.
func endServer(span trace.Span, c *call, status int, code string) {
	if !span.IsRecording() { // not sampled: skip building the attributes
		span.End()
		return
	}
	tenant := ""
	if c.ns != nil {
		tenant = c.ns.name
	}
	span.SetAttributes(
		attribute.Int("http.response.status_code", status),
		attribute.String(AttrTenant, tenant),
		attribute.String(AttrRequestID, c.id[0]),
	)
	if code != "" {
		span.SetAttributes(attribute.String(AttrCode, code), attribute.String("error.type", code))
	}
	if status >= 500 {
		msg := code
		if c.err != nil {
			msg = clipMessage(c.err.Error())
		}
		span.SetStatus(codes.Error, msg)
	}
	span.End()
}

// startStore starts the span of a route's store call, a child of the
// server span in ctx.
func (t *tracing) startStore(ctx context.Context, rpc string) (context.Context, trace.Span) {
	return t.tracer.Start(ctx, namesOf(rpc).store, trace.WithAttributes(attribute.String("rpc.method", rpc)))
}

// endStore ends a store call's span with err's wire code, if any; as on
// the server span, only a server-side failure is the span's error.
func endStore(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		code := errorCode(err)
		span.SetAttributes(attribute.String(AttrCode, code))
		if statusOf(code) >= 500 {
			span.SetStatus(codes.Error, clipMessage(err.Error()))
		}
	}
	span.End()
}
