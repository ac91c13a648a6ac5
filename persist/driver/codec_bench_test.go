package driver_test

import (
	"encoding/json"
	"testing"

	"github.com/ckptstore/ckptstore/persist/driver"
)

// benchRun is a run as a finished chat turn leaves it.
func benchRun() *driver.RunRecord {
	at, f, code := int64(1_700_000_000_123), false, "rate_limit"
	key := "sandbox/user-42/thread-7"
	return &driver.RunRecord{RunID: "run-0123456789abcdef", ThreadID: "thread-0123456789", Status: driver.RunFailed,
		StartedAt: at, FinishedAt: &at, Error: &driver.RunError{Message: "provider said: slow down", Code: &code},
		Usage: json.RawMessage(`{"promptTokens":1234,"completionTokens":567,"totalTokens":1801}`), SandboxKey: &key,
		DetachedSince: &at, CancelRequested: &f}
}

// BenchmarkCodec encodes and decodes records through encoding/json's entry
// points (json.Marshal, json.Unmarshal, a patch's and an export line's
// MarshalJSON), which route through the records' codec.
func BenchmarkCodec(b *testing.B) {
	run := benchRun()
	enc, _ := json.Marshal(run)
	b.Run("run/marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(run); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("run/unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var r driver.RunRecord
			if err := json.Unmarshal(enc, &r); err != nil {
				b.Fatal(err)
			}
		}
	})
	p := driver.RunPatch{Status: driver.Set(driver.RunCompleted), FinishedAt: driver.Set[int64](5),
		Usage: driver.Set(json.RawMessage(`{"totalTokens":1801}`)), DetachedSince: driver.Clear[int64]()}
	pb, _ := p.MarshalJSON()
	b.Run("patch/marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := p.MarshalJSON(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("patch/unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var q driver.RunPatch
			if err := q.UnmarshalJSON(pb); err != nil {
				b.Fatal(err)
			}
		}
	})
	rec := driver.Record{Kind: driver.KindRun, Run: run}
	line, _ := rec.MarshalJSON()
	b.Run("export/marshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := rec.MarshalJSON(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("export/unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var r driver.Record
			if err := r.UnmarshalJSON(line); err != nil {
				b.Fatal(err)
			}
		}
	})
}
