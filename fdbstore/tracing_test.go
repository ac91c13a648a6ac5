package fdbstore_test

import (
	"context"
	"errors"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/ckptstore/ckptstore/fdbstore"
	"github.com/ckptstore/ckptstore/fdbstore/kv"
	"github.com/ckptstore/ckptstore/fdbstore/kv/memkv"
)

// TestTraceDBRetries: a transaction whose first two attempts fail
// retryably makes three attempt spans under the caller's, numbered by
// their retry count, the first two marked retried, the last holding the
// commit; a transaction that fails for good marks its last span an error.
func TestTraceDBRetries(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	db := fdbstore.TraceDB(memkv.New(), tp)
	ctx, parent := tp.Tracer("test").Start(context.Background(), "caller")
	runs := 0
	err := db.Transact(ctx, func(tr kv.Transaction) error {
		runs++
		if runs <= 2 {
			return kv.NewError(kv.CodeNotCommitted)
		}
		tr.Set([]byte("k"), []byte("v"))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	parent.End()
	var attempts tracetest.SpanStubs
	for _, s := range exp.GetSpans() {
		if s.Name == fdbstore.SpanTransact {
			attempts = append(attempts, s)
		}
	}
	if runs != 3 || len(attempts) != 3 {
		t.Fatalf("%d runs, %d attempt spans, want 3 and 3", runs, len(attempts))
	}
	for i, s := range attempts {
		if s.Parent.SpanID() != parent.SpanContext().SpanID() {
			t.Errorf("attempt %d is not the caller's child", i)
		}
		retried := false
		for _, a := range s.Attributes {
			switch string(a.Key) {
			case fdbstore.AttrRetry:
				if a.Value.AsInt64() != int64(i) {
					t.Errorf("attempt %d: %s = %d", i, fdbstore.AttrRetry, a.Value.AsInt64())
				}
			case fdbstore.AttrRetried:
				retried = a.Value.AsBool()
			}
		}
		if retried != (i < 2) {
			t.Errorf("attempt %d: retried = %v", i, retried)
		}
		if s.Status.Code == codes.Error {
			t.Errorf("attempt %d of a transaction that committed is an error", i)
		}
	}

	exp.Reset()
	ctx, parent = tp.Tracer("test").Start(context.Background(), "caller")
	defer parent.End()
	bad := errors.New("not retryable")
	if err := db.ReadTransact(ctx, func(kv.ReadTransaction) error { return bad }); !errors.Is(err, bad) {
		t.Fatalf("ReadTransact: %v, want %v", err, bad)
	}
	spans := exp.GetSpans()
	if len(spans) != 1 || spans[0].Name != fdbstore.SpanReadTransact || spans[0].Status.Code != codes.Error {
		t.Fatalf("a failed read: spans %v, want one %s with an error status", spans, fdbstore.SpanReadTransact)
	}
}

// TestTraceDBOff: without a tracer provider the engine is returned
// unchanged, so tracing off costs nothing.
func TestTraceDBOff(t *testing.T) {
	db := memkv.New()
	if got := fdbstore.TraceDB(db, nil); got != kv.DB(db) {
		t.Fatalf("TraceDB(db, nil) = %T, want db itself", got)
	}
}

// TestTraceDBUnsampled: beneath a span whose trace is not sampled the
// attempts make no spans, even under a sampler that would take them, and
// the transaction runs as ever.
func TestTraceDBUnsampled(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	db := fdbstore.TraceDB(memkv.New(), tp)
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{1}}) // flags 0: not sampled
	ctx := trace.ContextWithSpanContext(context.Background(), sc)
	ran := false
	if err := db.Transact(ctx, func(tr kv.Transaction) error { ran = true; tr.Set([]byte("k"), []byte("v")); return nil }); err != nil || !ran {
		t.Fatalf("Transact: ran %v, err %v", ran, err)
	}
	if got := exp.GetSpans(); len(got) != 0 {
		t.Fatalf("%d spans beneath an unsampled trace, want 0", len(got))
	}
	// The same provider traces a sampled caller's transaction.
	ctx, parent := tp.Tracer("test").Start(context.Background(), "caller")
	if err := db.ReadTransact(ctx, func(kv.ReadTransaction) error { return nil }); err != nil {
		t.Fatal(err)
	}
	parent.End()
	if got := exp.GetSpans(); len(got) != 2 {
		t.Fatalf("%d spans beneath a sampled caller, want 2 (the caller's and the attempt's)", len(got))
	}
}
