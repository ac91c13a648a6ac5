package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/ckptstore/ckptstore/internal/workload"
)

// result is a run's outcome, as the table and --json show it.
type result struct {
	Store      string        `json:"store"`
	Kind       string        `json:"kind"`
	Namespace  string        `json:"namespace"`
	Proc       string        `json:"process"`
	Threads    int           `json:"threads"`
	Workers    int           `json:"workers"`
	Contend    int           `json:"contend,omitempty"`
	Payload    string        `json:"payload"`
	Lease      time.Duration `json:"leaseNs"`
	RenewAfter time.Duration `json:"renewAfterNs"`

	Elapsed       time.Duration `json:"elapsedNs"`
	Appends       int64         `json:"appends"`
	AppendsPerSec float64       `json:"appendsPerSec"`
	Sessions      int64         `json:"runs"`
	// LongestStall is the longest gap with no acknowledged append (the
	// start and the end of the load count as acknowledgements), and when
	// it began: what a fault cost the writers.
	LongestStall stall `json:"longestStall"`
	// ReadRounds is memkv's count of read round trips during the load.
	ReadRounds          *int64   `json:"readRounds,omitempty"`
	ReadRoundsPerAppend *float64 `json:"readRoundsPerAppend,omitempty"`
	Fenced              int64    `json:"fencedAppends"`
	Swept               int      `json:"sweptBlobs"`
	// SweepError is why the closing sweep failed ("" when it did not):
	// the report still comes, and loadgen exits 1.
	SweepError string `json:"sweepError,omitempty"`

	// HotRange is memkv's shard-model summary ("hottest range: X % of
	// writes ...") and HotRangeShare that fraction, of the last full
	// window of the load (hotrange.go).
	HotRange      string   `json:"hottestRange,omitempty"`
	HotRangeShare *float64 `json:"hottestRangeShare,omitempty"`

	Ops    []workload.OpSummary `json:"ops"`
	Verify *verifyResult        `json:"verify,omitempty"`
}

// verifyResult is the closing invariant check.
type verifyResult struct {
	OK           bool     `json:"ok"`
	Threads      int      `json:"threads"`
	Checkpoints  int      `json:"checkpoints"`
	BlobKeys     int      `json:"blobKeys"`
	Acked        int64    `json:"acknowledgedAppends"`
	Deleted      int64    `json:"deletedByUndoOrPrune"`
	Unchecked    int64    `json:"uncheckedUnknownOutcome"`
	Fenced       int64    `json:"fencedAppends"`
	ProblemCount int      `json:"problemCount"`
	Problems     []string `json:"problems,omitempty"`
}

func (r *result) finish() {
	if r.Elapsed > 0 {
		r.AppendsPerSec = float64(r.Appends) / r.Elapsed.Seconds()
	}
	if r.ReadRounds != nil && r.Appends > 0 {
		v := float64(*r.ReadRounds) / float64(r.Appends)
		r.ReadRoundsPerAppend = &v
	}
}

func writeJSON(w io.Writer, r *result) error {
	r.finish()
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func writeTable(out io.Writer, r *result) {
	r.finish()
	fmt.Fprintf(out, "store       %s\n", r.Store)
	contend := ""
	if r.Contend > 0 {
		contend = fmt.Sprintf(", contending with %d processes", r.Contend)
	}
	fmt.Fprintf(out, "namespace   %s (process %s%s), %d threads, %d workers, payload %s, lease %v (renew after %v)\n",
		r.Namespace, r.Proc, contend, r.Threads, r.Workers, r.Payload, r.Lease, r.RenewAfter)
	fmt.Fprintf(out, "load        %s: %s appends (%s/s) in %s harness runs\n",
		r.Elapsed.Round(time.Millisecond), group(r.Appends), group(int64(r.AppendsPerSec)), group(r.Sessions))
	st := r.LongestStall
	fmt.Fprintf(out, "stall       longest gap without an acknowledged append: %s, from %s to %s after the start\n",
		dur(st.Duration), dur(st.Start), dur(st.Start+st.Duration))
	if r.ReadRoundsPerAppend != nil {
		fmt.Fprintf(out, "memkv       %s read rounds during the load, %.2f per append (all operations counted)\n", group(*r.ReadRounds), *r.ReadRoundsPerAppend)
	}
	if r.HotRange != "" {
		fmt.Fprintf(out, "shards      %s\n", r.HotRange)
	}
	fmt.Fprintln(out)

	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "op\tcount\tops/s\tmean\tp50\tp90\tp99\tmax\terrors\t")
	for _, o := range r.Ops {
		rate := "-"
		if o.PerSec > 0 {
			rate = group(int64(o.PerSec + 0.5))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", o.Op, group(o.Count), rate,
			dur(o.Mean), dur(o.P50), dur(o.P90), dur(o.P99), dur(o.Max), group(o.Errors))
	}
	_ = tw.Flush()

	var lines []string
	for _, o := range r.Ops {
		for code, n := range o.Codes {
			lines = append(lines, fmt.Sprintf("  %-8s %-44s %8s   %s", o.Op, code, group(n), clip(o.Samples[code], 100)))
		}
	}
	if len(lines) > 0 {
		sort.Strings(lines)
		fmt.Fprintln(out, "\nerrors by code (op, code, count, first message):")
		for _, l := range lines {
			fmt.Fprintln(out, l)
		}
	}
	if r.Fenced > 0 || r.Swept > 0 || r.SweepError != "" {
		fmt.Fprintln(out)
	}
	if r.Fenced > 0 {
		fmt.Fprintf(out, "fencing     %s appends by stalled writers refused with WRITER_LOST, as they must be\n", group(r.Fenced))
	}
	if r.Swept > 0 {
		fmt.Fprintf(out, "sweep       deleted %s unreferenced blobs\n", group(int64(r.Swept)))
	}
	if r.SweepError != "" {
		fmt.Fprintf(out, "sweep       FAILED: %s\n", r.SweepError)
	}
	v := r.Verify
	if v == nil {
		return
	}
	fmt.Fprintf(out, "\nverify      %s threads, %s checkpoints, %s blob keys: chains linear, reference counts equal a recount,\n",
		group(int64(v.Threads)), group(int64(v.Checkpoints)), group(int64(v.BlobKeys)))
	fmt.Fprintf(out, "            %s acknowledged appends all present or deleted by undo/prune (%s deleted",
		group(v.Acked), group(v.Deleted))
	if v.Unchecked > 0 {
		fmt.Fprintf(out, ", %s unchecked: a delete on their thread had an unknown outcome", group(v.Unchecked))
	}
	fmt.Fprintln(out, "), the sweep deleted no blob in use, fencing held")
	if v.OK {
		fmt.Fprintln(out, "PASS")
		return
	}
	fmt.Fprintf(out, "FAIL: %d violations\n", v.ProblemCount)
	for _, p := range v.Problems {
		fmt.Fprintf(out, "  - %s\n", p)
	}
	if v.ProblemCount > len(v.Problems) {
		fmt.Fprintf(out, "  - … and %d more\n", v.ProblemCount-len(v.Problems))
	}
}

// progress prints one line a second until done is closed: on a terminal
// it rewrites one line, elsewhere it appends lines.
func (r *runner) progress(ctx context.Context, start time.Time, done <-chan struct{}, out io.Writer) {
	if r.cfg.quiet {
		return
	}
	tty := false
	if f, ok := out.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var lastAppends, lastRuns int64
	last := start
	for {
		select {
		case <-done:
			if tty {
				fmt.Fprintln(out)
			}
			return
		case <-ctx.Done():
			return
		case now := <-tick.C:
			a, s := r.appends.Load(), r.sessions.Load()
			secs := now.Sub(last).Seconds()
			line := fmt.Sprintf("[%4.0fs] appends %9s/s (total %s)  runs %7s/s  errors %s",
				now.Sub(start).Seconds(), group(int64(float64(a-lastAppends)/secs)), group(a),
				group(int64(float64(s-lastRuns)/secs)), group(r.errs.Load()))
			if tty {
				fmt.Fprintf(out, "\r%-90s", line)
			} else {
				fmt.Fprintln(out, line)
			}
			lastAppends, lastRuns, last = a, s, now
		}
	}
}

// group formats n with thousands separators.
func group(n int64) string {
	s := strconv.FormatInt(n, 10)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// dur formats d with three significant digits.
func dur(d time.Duration) string {
	switch {
	case d <= 0:
		return "0"
	case d < time.Microsecond:
		return fmt.Sprintf("%dns", d)
	case d < time.Millisecond:
		return sig(float64(d)/1e3) + "µs"
	case d < time.Second:
		return sig(float64(d)/1e6) + "ms"
	}
	return sig(d.Seconds()) + "s"
}

func sig(v float64) string {
	switch {
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 2, 64)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
