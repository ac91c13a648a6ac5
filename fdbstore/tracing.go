package fdbstore

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/ckptstore/ckptstore/fdbstore/kv"
)

// TracerName is the instrumentation scope of the transaction spans.
const TracerName = "github.com/ckptstore/ckptstore/fdbstore"

// Span names and attributes of a transaction attempt.
const (
	SpanTransact     = "fdb.transact"      // an attempt of kv.DB.Transact
	SpanReadTransact = "fdb.read_transact" // an attempt of kv.DB.ReadTransact
	AttrRetry        = "fdb.retry"         // retries before this attempt: 0 for the first
	AttrRetried      = "fdb.retried"       // true: the attempt failed retryably and was run again
)

// TraceDB returns db with an OpenTelemetry span per transaction attempt,
// each a child of the span in the transaction's context and carrying its
// retry count (AttrRetry). An attempt runs from the call of the
// transaction's function to the next attempt (AttrRetried) or to the end
// of Transact, so the last one holds the commit and any error. The retry
// loop is db's own (fdbkv's or memkv's), so the spans show exactly the
// attempts it made. A nil tp returns db unchanged: tracing off costs
// nothing.
func TraceDB(db kv.DB, tp trace.TracerProvider) kv.DB {
	if tp == nil {
		return db
	}
	return &tracedDB{db: db, tracer: tp.Tracer(TracerName)}
}

type tracedDB struct {
	db     kv.DB
	tracer trace.Tracer
}

// unsampled reports whether ctx carries a span that is not recorded (its
// trace is not sampled): then the attempts are not traced either, at no
// cost, as a parent-based sampler would decide.
func unsampled(ctx context.Context) bool {
	sp := trace.SpanFromContext(ctx)
	return sp.SpanContext().IsValid() && !sp.IsRecording()
}

func (d *tracedDB) Transact(ctx context.Context, fn func(tr kv.Transaction) error) error {
	if unsampled(ctx) {
		return d.db.Transact(ctx, fn)
	}
	a := attempts{tracer: d.tracer, ctx: ctx, name: SpanTransact}
	err := d.db.Transact(ctx, func(tr kv.Transaction) error { return a.next(func() error { return fn(tr) }) })
	a.end(err)
	return err
}

func (d *tracedDB) ReadTransact(ctx context.Context, fn func(tr kv.ReadTransaction) error) error {
	if unsampled(ctx) {
		return d.db.ReadTransact(ctx, fn)
	}
	a := attempts{tracer: d.tracer, ctx: ctx, name: SpanReadTransact, readOnly: true}
	err := d.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error { return a.next(func() error { return fn(tr) }) })
	a.end(err)
	return err
}

// attempts spans the attempts of one transaction. The retry loop calls
// the function of one attempt at a time, so it needs no lock.
type attempts struct {
	tracer   trace.Tracer
	ctx      context.Context
	name     string
	readOnly bool
	n        int
	span     trace.Span // the attempt running, nil before the first
}

// next ends the previous attempt's span as retried and runs run in a new
// one.
func (a *attempts) next(run func() error) error {
	if a.span != nil {
		a.span.SetAttributes(attribute.Bool(AttrRetried, true))
		a.span.End()
	}
	_, a.span = a.tracer.Start(a.ctx, a.name, trace.WithAttributes(
		attribute.String("db.system.name", "foundationdb"),
		attribute.Int(AttrRetry, a.n),
		attribute.Bool("fdb.read_only", a.readOnly),
	))
	a.n++
	err := run()
	if err != nil {
		a.span.RecordError(err)
	}
	return err
}

// end ends the last attempt's span with the transaction's outcome.
func (a *attempts) end(err error) {
	if a.span == nil {
		return // the transaction never ran an attempt (ctx ended first)
	}
	if err != nil {
		a.span.SetStatus(codes.Error, err.Error())
	}
	a.span.End()
}
