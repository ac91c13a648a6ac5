package httpstore

// Tracing of the Durable Streams routes (/streams/…), as tracing.go traces
// the /v1/ routes: a server span per request and a span per call of the
// stream driver beneath it, with the engine's own spans (a FoundationDB
// transaction attempt, a go-redis command) beneath those. A stream's name
// and its data are a tenant's content: no attribute carries them (the
// route is the template /streams/{name}). A long-poll's or an SSE
// reader's server span ends when its reply ends; each of its reads and
// waits is a span of its own.

import (
	"context"
	"errors"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/ckptstore/ckptstore/streams"
)

// StreamsRoute is the http.route of every /streams/ request's server span:
// the mount and a placeholder for the stream's name.
const StreamsRoute = StreamsPrefix + "{name}"

// The names of the spans of the stream driver's calls.
const (
	SpanStreamCreate = "ckptstore.streams.create"
	SpanStreamAppend = "ckptstore.streams.append"
	SpanStreamDelete = "ckptstore.streams.delete"
	SpanStreamHead   = "ckptstore.streams.head"
	SpanStreamRead   = "ckptstore.streams.read"
	SpanStreamWait   = "ckptstore.streams.wait"
)

// streamSpanNames are the server span names by method, made once.
var streamSpanNames = func() map[string]string {
	m := map[string]string{}
	for _, method := range []string{http.MethodGet, http.MethodHead, http.MethodPut, http.MethodPost, http.MethodDelete, http.MethodOptions} {
		m[method] = method + " " + StreamsRoute
	}
	return m
}()

// startStreams starts the server span of a /streams/ request r of route
// (its name in metrics: streams/read, streams/longPoll, …), a child of the
// trace context r carries, and returns r with the span in its context.
func (t *tracing) startStreams(r *http.Request, route string) (*http.Request, trace.Span) {
	ctx := t.prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
	name, method := streamSpanNames[r.Method], r.Method
	if name == "" { // a method the protocol has not: bounded names
		name, method = "HTTP "+StreamsRoute, "_OTHER"
	}
	ctx, span := t.tracer.Start(ctx, name,
		trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(
			attribute.String("http.request.method", method),
			attribute.String("http.route", StreamsRoute),
			attribute.String("rpc.method", route),
		))
	return r.WithContext(ctx), span
}

// tracedStreams is a stream driver whose every call is a span, a child of
// the span in the call's context.
type tracedStreams struct {
	d      streams.Driver
	tracer trace.Tracer
}

func (t *tracedStreams) start(ctx context.Context, name string) (context.Context, trace.Span) {
	return t.tracer.Start(ctx, name)
}

// endStreamCall ends a driver call's span with err's wire code, if any. A
// protocol outcome (streams.Error: not found, conflict, stale epoch, …)
// is the client's, never the span's error; another failure is when its
// wire status is a 5xx, as on the /v1/ routes.
func endStreamCall(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		var se *streams.Error
		if errors.As(err, &se) {
			span.SetAttributes(attribute.String(AttrCode, se.Code))
		} else {
			code := errorCode(err)
			span.SetAttributes(attribute.String(AttrCode, code))
			if statusOf(code) >= 500 {
				span.SetStatus(codes.Error, clipMessage(err.Error()))
			}
		}
	}
	span.End()
}

func (t *tracedStreams) Create(ctx context.Context, name string, req *streams.CreateRequest, now time.Time) (streams.Info, bool, error) {
	ctx, span := t.start(ctx, SpanStreamCreate)
	info, created, err := t.d.Create(ctx, name, req, now)
	if err == nil && span.IsRecording() {
		span.SetAttributes(attribute.Bool("ckptstore.streams.created", created))
	}
	endStreamCall(span, err)
	return info, created, err
}

func (t *tracedStreams) Append(ctx context.Context, name string, req *streams.AppendRequest, now time.Time) (streams.AppendResult, error) {
	ctx, span := t.start(ctx, SpanStreamAppend)
	res, err := t.d.Append(ctx, name, req, now)
	endStreamCall(span, err)
	return res, err
}

func (t *tracedStreams) Delete(ctx context.Context, name string, now time.Time) error {
	ctx, span := t.start(ctx, SpanStreamDelete)
	err := t.d.Delete(ctx, name, now)
	endStreamCall(span, err)
	return err
}

func (t *tracedStreams) Head(ctx context.Context, name string, touch bool, now time.Time) (streams.Info, error) {
	ctx, span := t.start(ctx, SpanStreamHead)
	info, err := t.d.Head(ctx, name, touch, now)
	endStreamCall(span, err)
	return info, err
}

func (t *tracedStreams) Read(ctx context.Context, name string, from streams.Pos, max int, now time.Time) (streams.ReadResult, error) {
	ctx, span := t.start(ctx, SpanStreamRead)
	rd, err := t.d.Read(ctx, name, from, max, now)
	endStreamCall(span, err)
	return rd, err
}

// Wait ends its span without an error when its context ends: a long-poll
// that times out, or a reader that goes away, is a wait's normal end.
func (t *tracedStreams) Wait(ctx context.Context, name string, tail streams.Pos) error {
	wctx, span := t.start(ctx, SpanStreamWait)
	err := t.d.Wait(wctx, name, tail)
	if err != nil && ctx.Err() != nil {
		span.End()
		return err
	}
	endStreamCall(span, err)
	return err
}
