package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"iter"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/internal/redistest"
	"github.com/ckptstore/ckptstore/internal/workload"
	"github.com/ckptstore/ckptstore/memstore"
	"github.com/ckptstore/ckptstore/storeurl"
)

func TestBadFlagsExit2(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--no-such-flag"}, "flag provided but not defined"},
		{[]string{"--threads", "0"}, "--threads must be at least 1"},
		{[]string{"--threads", "x"}, "invalid value"},
		{[]string{"--threads", "4", "--workers", "8"}, "must not exceed --threads"},
		{[]string{"--payload", "2XB"}, "--payload"},
		{[]string{"--payload", "50KB-2KB"}, "runs backwards"},
		{[]string{"--undo-rate", "1.5"}, "--undo-rate must be a probability"},
		{[]string{"--duration", "0"}, "give --duration or --ops"},
		{[]string{"--contend", "2"}, "--contend needs --namespace"},
		{[]string{"--renew-after", "10s", "--lease", "5s"}, "--renew-after"},
		{[]string{"--memkv-read-latency", "1ms"}, "applies only to --store memkv"},
		{[]string{"--op-timeout", "-1s"}, "--op-timeout must not be negative"},
		{[]string{"extra"}, "unexpected argument"},
		{[]string{"--store", "postgres://x"}, "the forms are"},
		{[]string{"--store", "redis://127.0.0.1:1/0?bogus=1", "--ops", "1"}, "--store"},
		{[]string{"--store", "redis+sentinel://127.0.0.1:1,127.0.0.1:2?bogus=1&master_name=m", "--ops", "1"}, "unexpected option: bogus"},
		{[]string{"--store", "rediss+cluster://127.0.0.1:1?min_replicas=-1", "--ops", "1"}, "min_replicas"},
		{[]string{"--blob-url", "ftp://x", "--ops", "1"}, "--blob-url"},
	} {
		var out, errb bytes.Buffer
		code := run(context.Background(), tc.args, &out, &errb, nil)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", tc.args, code, errb.String())
			continue
		}
		if !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: stderr %q does not mention %q", tc.args, errb.String(), tc.want)
		}
	}
}

func TestHelpExit0(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"-h"}, &out, &errb, nil); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if !strings.Contains(errb.String(), "--contend") && !strings.Contains(errb.String(), "-contend") {
		t.Fatalf("usage does not list the flags: %q", errb.String())
	}
}

// runJSON runs loadgen with --json and returns the decoded result.
func runJSON(t *testing.T, cfgHook func(*config), args ...string) (*result, int, string) {
	t.Helper()
	var out, errb bytes.Buffer
	cfg, err := parseFlags(append(args, "--json", "--quiet"), &errb)
	if err != nil {
		t.Fatalf("flags %v: %v", args, err)
	}
	if cfgHook != nil {
		cfgHook(cfg)
	}
	res, err := load(context.Background(), cfg, &errb)
	if err != nil {
		t.Fatalf("load: %v (stderr %s)", err, errb.String())
	}
	if err := writeJSON(&out, res); err != nil {
		t.Fatal(err)
	}
	var got result
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("json: %v\n%s", err, out.String())
	}
	code := 0
	if got.Verify != nil && !got.Verify.OK {
		code = 1
	}
	return &got, code, out.String()
}

func TestMemRunVerifies(t *testing.T) {
	res, code, out := runJSON(t, nil, "--ops", "3000", "--threads", "8", "--workers", "4",
		"--undo-rate", "0.2", "--prune-rate", "0.5", "--keep", "3", "--fork-rate", "0.3", "--payload", "1KB-4KB")
	if code != 0 {
		t.Fatalf("verify failed:\n%s", out)
	}
	if res.Appends != 3000 {
		t.Errorf("appends = %d, want exactly --ops 3000", res.Appends)
	}
	if res.Verify == nil || res.Verify.Acked < 3000 || res.Verify.Deleted == 0 {
		t.Errorf("verify saw too little: %+v", res.Verify)
	}
	if res.Swept == 0 {
		t.Errorf("the sweep deleted nothing, though pruning and undo freed blobs")
	}
	ops := map[string]workload.OpSummary{}
	for _, o := range res.Ops {
		ops[o.Op] = o
	}
	for _, op := range []string{"acquire", "head", "append", "undo", "prune", "fork", "release", "sweep"} {
		if ops[op].Count == 0 {
			t.Errorf("no %s recorded", op)
		}
	}
	if ops["append"].P99 < ops["append"].P50 || ops["append"].Max < ops["append"].P99 {
		t.Errorf("percentiles out of order: %+v", ops["append"])
	}
}

func TestTableOutput(t *testing.T) {
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"--ops", "200", "--threads", "2", "--workers", "2", "--payload", "2KB"}, &out, &errb, nil)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errb.String())
	}
	for _, want := range []string{"op", "p99", "append", "PASS", "verify"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}

// lossy is a driver that acknowledges every tenth append without storing
// it.
type lossy struct {
	driver.Store
	n atomic.Int64
}

func (l *lossy) Append(ctx context.Context, cp *ckptstore.Checkpoint, head string, w ckptstore.Writer, opToken string) error {
	if l.n.Add(1)%10 == 0 {
		return nil
	}
	return l.Store.Append(ctx, cp, head, w, opToken)
}

// miscount is a driver that reports one reference too many for every blob.
type miscount struct{ driver.Store }

func (m miscount) ListBlobReferences(ctx context.Context) iter.Seq2[ckptstore.BlobRef, error] {
	return func(yield func(ckptstore.BlobRef, error) bool) {
		for r, err := range m.Store.ListBlobReferences(ctx) {
			if err == nil {
				r.References++
			}
			if !yield(r, err) {
				return
			}
		}
	}
}

func openWith(s *ckptstore.Store) func(context.Context, string, storeurl.Options) (*storeurl.Opened, error) {
	return func(context.Context, string, storeurl.Options) (*storeurl.Opened, error) {
		return &storeurl.Opened{Tenant: storeurl.Tenant{Store: s}, Kind: "mem", Desc: "test", Close: func() error { return nil }}, nil
	}
}

func TestVerifyCatchesBrokenStores(t *testing.T) {
	for name, s := range map[string]*ckptstore.Store{
		"lost append": ckptstore.New(&lossy{Store: memstore.New(ckptstore.Options{}).Driver()}),
		"miscount":    ckptstore.New(miscount{memstore.New(ckptstore.Options{}).Driver()}),
	} {
		t.Run(name, func(t *testing.T) {
			res, code, out := runJSON(t, func(c *config) { c.open = openWith(s) },
				"--ops", "200", "--threads", "2", "--workers", "2", "--payload", "2KB", "--undo-rate", "0", "--prune-rate", "0")
			if code != 1 || res.Verify.OK || res.Verify.ProblemCount == 0 {
				t.Fatalf("verify passed a broken store:\n%s", out)
			}
		})
	}
}

// TestContention runs two loadgen processes against one store, as two
// processes run against one Redis: every run stalls past its lease once, so
// fencing must refuse appends, and the barrier must let both verify.
func TestContention(t *testing.T) {
	var (
		once   sync.Once
		shared *ckptstore.Store
	)
	open := func(_ context.Context, _ string, sc storeurl.Options) (*storeurl.Opened, error) {
		// Both processes pass the same lease options, so one store serves both.
		once.Do(func() { shared = memstore.New(sc.Lease) })
		return &storeurl.Opened{Tenant: storeurl.Tenant{Store: shared}, Kind: "mem", Desc: "shared", Close: func() error { return nil }}, nil
	}
	var wg sync.WaitGroup
	results := make([]*result, 2)
	codes := make([]int, 2)
	outs := make([]string, 2)
	for i := range 2 {
		wg.Go(func() {
			results[i], codes[i], outs[i] = runJSON(t, func(c *config) { c.open = open },
				"--contend", "2", "--namespace", "contend-test", "--ops", "60", "--threads", "4", "--workers", "2",
				"--lease", "100ms", "--max-clock-skew", "10ms", "--stall-rate", "1", "--payload", "2KB")
		})
	}
	wg.Wait()
	var fenced, conflicts int64
	for i, r := range results {
		if codes[i] != 0 {
			t.Errorf("process %d failed verify:\n%s", i, outs[i])
		}
		fenced += r.Fenced
		for _, o := range r.Ops {
			conflicts += o.Codes["SANDBOX_SNAPSHOT_WRITER_CONFLICT"]
		}
	}
	if fenced == 0 {
		t.Errorf("no stalled append was fenced off")
	}
	if results[0].Verify.Threads != results[1].Verify.Threads || results[0].Verify.Checkpoints != results[1].Verify.Checkpoints {
		t.Errorf("the processes verified different states: %+v vs %+v", results[0].Verify, results[1].Verify)
	}
	t.Logf("fenced %d, lease conflicts %d", fenced, conflicts)
}

// TestContentionRedis is the contention drill on a real redis-server: two
// runs with their own clients, as two loadgen processes, fight over one
// namespace's threads, stall past their leases, meet at the barrier and
// verify.
func TestContentionRedis(t *testing.T) {
	srv := redistest.Start(t) // skips with the reason without redis-server, fails under CI=true
	store := "redis://" + srv.Addr + "/0?prefix=loadgen-test"
	var wg sync.WaitGroup
	results := make([]*result, 2)
	codes := make([]int, 2)
	outs := make([]string, 2)
	for i := range 2 {
		wg.Go(func() {
			results[i], codes[i], outs[i] = runJSON(t, nil, "--store", store, "--verify",
				"--contend", "2", "--namespace", "redis-contend", "--ops", "300", "--threads", "8", "--workers", "4",
				"--lease", "300ms", "--stall-rate", "0.3", "--undo-rate", "0.2", "--prune-rate", "0.5", "--keep", "3",
				"--fork-rate", "0.2", "--payload", "2KB-8KB")
		})
	}
	wg.Wait()
	var fenced int64
	for i, r := range results {
		if codes[i] != 0 || r.Verify == nil || !r.Verify.OK {
			t.Errorf("process %d failed verify:\n%s", i, outs[i])
		}
		fenced += r.Fenced
	}
	if fenced == 0 {
		t.Errorf("no stalled append was fenced off")
	}
}

// TestInterruptReports: an interrupt ends an hour-long run at once, and
// the run still sweeps, verifies and reports.
func TestInterruptReports(t *testing.T) {
	interrupted := make(chan struct{})
	close(interrupted)
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"--duration", "1h", "--threads", "2", "--workers", "2", "--payload", "2KB"}, &out, &errb, interrupted)
	if code != 0 || !strings.Contains(out.String(), "PASS") {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errb.String())
	}
}

// TestGroup pins the thousands separators of the report's counts,
// negative numbers and the int64 extremes included.
func TestGroup(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0", 7: "7", 999: "999", 1000: "1,000", -1000: "-1,000", -999: "-999",
		123456: "123,456", -123456: "-123,456", 1234567: "1,234,567",
		9223372036854775807:  "9,223,372,036,854,775,807",
		-9223372036854775808: "-9,223,372,036,854,775,808",
	} {
		if got := group(n); got != want {
			t.Errorf("group(%d) = %q, want %q", n, got, want)
		}
	}
}

// refsDownOnce is a driver whose first ListBlobReferences fails as a
// refused connection does: the closing sweep's, since the load itself
// lists no references.
type refsDownOnce struct {
	driver.Store
	failed atomic.Bool
}

func (d *refsDownOnce) ListBlobReferences(ctx context.Context) iter.Seq2[ckptstore.BlobRef, error] {
	if d.failed.CompareAndSwap(false, true) {
		return func(yield func(ckptstore.BlobRef, error) bool) {
			yield(ckptstore.BlobRef{}, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED})
		}
	}
	return d.Store.ListBlobReferences(ctx)
}

// TestSweepFailureStillReports: a closing sweep that fails leaves the
// report printed, with the failure in it, and loadgen exits 1 naming it.
func TestSweepFailureStillReports(t *testing.T) {
	for _, format := range []string{"table", "json"} {
		t.Run(format, func(t *testing.T) {
			cfg, err := parseFlags([]string{"--ops", "200", "--threads", "2", "--workers", "2", "--payload", "2KB", "--quiet"}, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			cfg.json = format == "json"
			cfg.open = openWith(ckptstore.New(&refsDownOnce{Store: memstore.New(ckptstore.Options{}).Driver()}))
			res, err := load(context.Background(), cfg, io.Discard)
			if !errors.Is(err, syscall.ECONNREFUSED) {
				t.Fatalf("load error %v does not wrap the sweep's cause", err)
			}
			if res == nil || res.Appends != 200 || res.Verify == nil || !res.Verify.OK {
				t.Fatalf("no whole report beside the sweep's failure: %+v", res)
			}
			if !strings.Contains(res.SweepError, "connection refused") || res.Swept != 0 {
				t.Errorf("the report does not carry the sweep's failure: %q, swept %d", res.SweepError, res.Swept)
			}

			// The same through run: the report on stdout, the error on
			// stderr, exit 1.
			args := []string{"--ops", "200", "--threads", "2", "--workers", "2", "--payload", "2KB", "--quiet"}
			if cfg.json {
				args = append(args, "--json")
			}
			var out, errb bytes.Buffer
			code := runWith(context.Background(), args, &out, &errb, nil, func(c *config) {
				c.open = openWith(ckptstore.New(&refsDownOnce{Store: memstore.New(ckptstore.Options{}).Driver()}))
			})
			if code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
			if !strings.Contains(errb.String(), "sweep") || !strings.Contains(errb.String(), "connection refused") {
				t.Errorf("stderr does not report the sweep's failure: %q", errb.String())
			}
			want := "sweep       FAILED"
			if cfg.json {
				want = `"sweepError"`
			}
			if !strings.Contains(out.String(), want) || !strings.Contains(out.String(), "append") {
				t.Errorf("stdout lacks the report or %q:\n%s", want, out.String())
			}
		})
	}
}
