package workload

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/ckptstore/ckptstore"
)

// Histogram geometry: 1 ns to 1 minute at 3 significant digits (values are
// exact to 0.1 %), about 220 KB per histogram.
const (
	histLowest  = 1
	histHighest = int64(time.Minute)
	histDigits  = 3
)

// NewHistogram returns an empty latency histogram in nanoseconds.
func NewHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(histLowest, histHighest, histDigits)
}

// RecordDuration records d in h, clamped to h's range, so that one
// pathological stall cannot make the record fail silently.
func RecordDuration(h *hdrhistogram.Histogram, d time.Duration) {
	_ = h.RecordValue(min(max(int64(d), histLowest), histHighest))
}

// Codes for errors that are not contract errors (ckptstore.Code is "").
const (
	CodeCanceled      = "CANCELED"          // the run's context was cancelled
	CodeDeadline      = "DEADLINE_EXCEEDED" // the operation's deadline passed: its outcome is unknown
	CodeNotReplicated = "NOT_REPLICATED"    // ckptstore.ErrNotReplicated: applied, not on enough replicas
	CodeOther         = "OTHER"             // network, server or store-internal error
)

// ErrorCode returns the SANDBOX_SNAPSHOT_* code of err, CodeDeadline for
// an error that wraps context.DeadlineExceeded, CodeCanceled for one that
// wraps context.Canceled, CodeNotReplicated for ckptstore.ErrNotReplicated,
// or CodeOther; "" for nil.
func ErrorCode(err error) string {
	switch {
	case err == nil:
		return ""
	case ckptstore.Code(err) != "":
		return ckptstore.Code(err)
	case errors.Is(err, context.DeadlineExceeded):
		return CodeDeadline
	case errors.Is(err, context.Canceled):
		return CodeCanceled
	case errors.Is(err, ckptstore.ErrNotReplicated):
		return CodeNotReplicated
	}
	return CodeOther
}

// Latencies collects the latency of every operation of a run, by
// operation name, and counts errors by code. It is safe for concurrent
// use; one lock guards it because a record is ~20 ns, far below the
// latency of any store operation it measures.
type Latencies struct {
	mu  sync.Mutex
	ops map[string]*opStats
}

type opStats struct {
	hist   *hdrhistogram.Histogram
	errors map[string]int64
	sample map[string]string // first message per code, for the report
}

// NewLatencies returns an empty collector.
func NewLatencies() *Latencies { return &Latencies{ops: make(map[string]*opStats)} }

// Record adds one operation that took d and ended with err (nil = success).
func (l *Latencies) Record(op string, d time.Duration, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.ops[op]
	if s == nil {
		s = &opStats{hist: NewHistogram(), errors: map[string]int64{}, sample: map[string]string{}}
		l.ops[op] = s
	}
	RecordDuration(s.hist, d)
	if err != nil {
		code := ErrorCode(err)
		s.errors[code]++
		if _, ok := s.sample[code]; !ok {
			s.sample[code] = err.Error()
		}
	}
}

// Count returns how many operations named op were recorded.
func (l *Latencies) Count(op string) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if s := l.ops[op]; s != nil {
		return s.hist.TotalCount()
	}
	return 0
}

// OpSummary is the latency distribution of one operation.
type OpSummary struct {
	Op     string           `json:"op"`
	Count  int64            `json:"count"`
	Errors int64            `json:"errors"`
	PerSec float64          `json:"opsPerSec"`
	Mean   time.Duration    `json:"meanNs"`
	P50    time.Duration    `json:"p50Ns"`
	P90    time.Duration    `json:"p90Ns"`
	P99    time.Duration    `json:"p99Ns"`
	Max    time.Duration    `json:"maxNs"`
	Codes  map[string]int64 `json:"errorCodes,omitempty"`
	// Samples holds the first error message seen for each code.
	Samples map[string]string `json:"errorSamples,omitempty"`
}

// Summary returns one OpSummary per operation recorded, in the order of
// order first (names not recorded are skipped) and then by name; PerSec
// divides by elapsed.
func (l *Latencies) Summary(elapsed time.Duration, order ...string) []OpSummary {
	l.mu.Lock()
	defer l.mu.Unlock()
	rank := func(n string) int {
		if i := slices.Index(order, n); i >= 0 {
			return i
		}
		return len(order)
	}
	names := slices.SortedFunc(maps.Keys(l.ops), func(a, b string) int {
		return cmp.Or(rank(a)-rank(b), strings.Compare(a, b))
	})
	out := make([]OpSummary, 0, len(names))
	for _, n := range names {
		s := l.ops[n]
		h := s.hist
		sum := OpSummary{
			Op:    n,
			Count: h.TotalCount(),
			Mean:  time.Duration(h.Mean()),
			P50:   time.Duration(h.ValueAtQuantile(50)),
			P90:   time.Duration(h.ValueAtQuantile(90)),
			P99:   time.Duration(h.ValueAtQuantile(99)),
			Max:   time.Duration(h.Max()),
		}
		if elapsed > 0 {
			sum.PerSec = float64(sum.Count) / elapsed.Seconds()
		}
		if len(s.errors) > 0 {
			sum.Codes, sum.Samples = map[string]int64{}, map[string]string{}
			for c, k := range s.errors {
				sum.Codes[c] = k
				sum.Errors += k
				sum.Samples[c] = s.sample[c]
			}
		}
		out = append(out, sum)
	}
	return out
}
