package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/fdbstore/kv/memkv"
	"github.com/ckptstore/ckptstore/internal/workload"
	"github.com/ckptstore/ckptstore/memstore"
	"github.com/ckptstore/ckptstore/storeurl"
)

// TestOpTimeoutStallOnMemkv is a write outage on fdbstore over memkv: for
// one second every commit takes two (memkv's commit latency, which
// honours the caller's context), so with --op-timeout 50ms every write
// then fails at its deadline. The run must count those failures as
// DEADLINE_EXCEEDED, report a stall at least about as long as the outage,
// and verify: nothing acknowledged lost, nothing doubled. Faults of
// commit_unknown_result run throughout, so a write may be retried into
// the outage after an attempt that was applied: a timed-out write that is
// stored (TestOpTimeoutMaybeCommitted makes that case certain).
func TestOpTimeoutStallOnMemkv(t *testing.T) {
	const outageAfter, outage = 400 * time.Millisecond, time.Second
	var wg sync.WaitGroup
	defer wg.Wait()
	open := func(ctx context.Context, spec string, opts storeurl.Options) (*storeurl.Opened, error) {
		o, err := storeurl.Open(ctx, spec, opts)
		if err != nil {
			return nil, err
		}
		db, ok := o.Handle.(*memkv.DB)
		if !ok {
			t.Errorf("memkv store without a memkv engine: %T", o.Handle)
			return o, nil
		}
		half := opts.MemkvUnknownResultRate / 2
		normal := memkv.Faults{UnknownResultAppliedRate: half, UnknownResultNotAppliedRate: half}
		down := normal
		down.CommitLatency = 2 * outage // far above --op-timeout; bounded, so a run without deadlines ends too
		wg.Go(func() {
			time.Sleep(outageAfter)
			if err := db.SetFaults(down); err != nil {
				t.Error(err)
			}
			time.Sleep(outage)
			if err := db.SetFaults(normal); err != nil {
				t.Error(err)
			}
		})
		return o, nil
	}
	res, code, out := runJSON(t, func(c *config) { c.open = open },
		"--store", "memkv", "--duration", "3s", "--op-timeout", "50ms", "--memkv-unknown-result-rate", "0.05",
		"--threads", "16", "--workers", "4", "--payload", "2KB", "--lease", "5s")
	if code != 0 || res.Verify == nil || !res.Verify.OK {
		t.Fatalf("verify failed:\n%s", out)
	}
	var deadline int64
	for _, o := range res.Ops {
		deadline += o.Codes[workload.CodeDeadline]
		if n := o.Codes[workload.CodeOther] + o.Codes[workload.CodeCanceled]; n > 0 {
			t.Errorf("%s: %d errors counted as OTHER or CANCELED, not DEADLINE_EXCEEDED: %v", o.Op, n, o.Samples)
		}
	}
	if deadline == 0 {
		t.Errorf("no store call was counted as DEADLINE_EXCEEDED during the outage:\n%s", out)
	}
	st := res.LongestStall
	if st.Duration < outage/2 || st.Start < 0 || st.Start+st.Duration > res.Elapsed || st.Start > outageAfter+outage {
		t.Errorf("longest stall %v from %v (run %v): want one of about the %v outage, beginning before it ends", st.Duration, st.Start, res.Elapsed, outage)
	}
	if res.Appends == 0 {
		t.Errorf("no append acknowledged")
	}
	var table bytes.Buffer
	writeTable(&table, res)
	for _, want := range []string{"longest gap without an acknowledged append: " + dur(st.Duration), workload.CodeDeadline, "PASS"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, table.String())
		}
	}
	t.Logf("stall %v from %v, %d calls past the deadline, %d appends", st.Duration, st.Start, deadline, res.Appends)
}

// lateStore is a driver that answers every tenth append only at the call's deadline: the
// odd ones are stored first (the commit landed, its answer did not), the
// even ones never. It refuses a call without a deadline, so a run without
// --op-timeout's context cannot hang on it.
type lateStore struct {
	driver.Store
	n              atomic.Int64
	deadlined      atomic.Int64 // appends answered with the context's deadline error, late or not
	mu             sync.Mutex
	stored, absent []string // ids answered late, by outcome
}

func (s *lateStore) Append(ctx context.Context, cp *ckptstore.Checkpoint, head string, w ckptstore.Writer, opToken string) error {
	err := s.append(ctx, cp, head, w, opToken)
	if errors.Is(err, context.DeadlineExceeded) {
		s.deadlined.Add(1)
	}
	return err
}

func (s *lateStore) append(ctx context.Context, cp *ckptstore.Checkpoint, head string, w ckptstore.Writer, opToken string) error {
	k := s.n.Add(1)
	if k%10 != 0 {
		return s.Store.Append(ctx, cp, head, w, opToken) // on a loaded machine it too may meet the deadline
	}
	if _, ok := ctx.Deadline(); !ok {
		return errors.New("lateStore: an append without a deadline")
	}
	applied := k%20 == 10
	if applied {
		if err := s.Store.Append(context.WithoutCancel(ctx), cp, head, w, opToken); err != nil {
			return err
		}
	}
	<-ctx.Done()
	s.mu.Lock()
	if applied {
		s.stored = append(s.stored, cp.ID)
	} else {
		s.absent = append(s.absent, cp.ID)
	}
	s.mu.Unlock()
	return ctx.Err()
}

// TestOpTimeoutMaybeCommitted: appends that time out are "maybe stored".
// Whether the write landed or not, --verify must pass: an absent one was
// never acknowledged, so it is not lost, and a stored one is the head the
// next run reads and extends, so no chain forks and nothing is doubled.
func TestOpTimeoutMaybeCommitted(t *testing.T) {
	s := &lateStore{Store: memstore.New(ckptstore.Options{}).Driver()}
	res, code, out := runJSON(t, func(c *config) { c.open = openWith(ckptstore.New(s)) },
		"--ops", "300", "--op-timeout", "50ms", "--threads", "4", "--workers", "2", "--payload", "2KB",
		"--undo-rate", "0", "--prune-rate", "0", "--fork-rate", "0")
	if code != 0 || res.Verify == nil || !res.Verify.OK {
		t.Fatalf("verify failed:\n%s", out)
	}
	if len(s.stored) == 0 || len(s.absent) == 0 {
		t.Fatalf("the store answered %d stored and %d absent appends late, want some of each", len(s.stored), len(s.absent))
	}
	var appendDeadline int64
	for _, o := range res.Ops {
		if o.Op == "append" {
			appendDeadline = o.Codes[workload.CodeDeadline]
		}
	}
	if late := int64(len(s.stored) + len(s.absent)); appendDeadline != s.deadlined.Load() || appendDeadline < late {
		t.Errorf("appends counted DEADLINE_EXCEEDED: %d, want the %d the store answered with the deadline's error (%d of them late on purpose)", appendDeadline, s.deadlined.Load(), late)
	}
	ctx := context.Background()
	for _, id := range s.stored {
		if cp, err := s.Get(ctx, id); cp == nil || err != nil {
			t.Errorf("timed-out append %s that was stored: Get = %v, %v", id, cp, err)
		}
	}
	for _, id := range s.absent {
		if cp, err := s.Get(ctx, id); cp != nil || err != nil {
			t.Errorf("timed-out append %s that was not stored: Get = %v, %v, want none", id, cp, err)
		}
	}
	if res.Verify.Acked != res.Appends || res.Appends+int64(len(s.stored)) > int64(res.Verify.Checkpoints) {
		t.Errorf("%d acknowledged, %d appends, %d stored late, %d checkpoints: the timed-out appends were counted", res.Verify.Acked, res.Appends, len(s.stored), res.Verify.Checkpoints)
	}
}

// TestOpTimeoutOffByDefault: without --op-timeout no call has a deadline
// (lateStore refuses one without), so every append it gets succeeds or
// fails for another reason, never at a deadline.
func TestOpTimeoutOffByDefault(t *testing.T) {
	cfg, err := parseFlags([]string{"--ops", "1"}, &bytes.Buffer{})
	if err != nil || cfg.opTimeout != 0 {
		t.Fatalf("--op-timeout default = %v (%v), want 0", cfg.opTimeout, err)
	}
	s := &lateStore{Store: memstore.New(ckptstore.Options{}).Driver()}
	res, _, out := runJSON(t, func(c *config) { c.open = openWith(ckptstore.New(s)) },
		"--ops", "30", "--threads", "2", "--workers", "2", "--payload", "2KB", "--undo-rate", "0", "--prune-rate", "0", "--fork-rate", "0")
	for _, o := range res.Ops {
		if o.Codes[workload.CodeDeadline] > 0 {
			t.Errorf("%s: %d deadline errors without --op-timeout:\n%s", o.Op, o.Codes[workload.CodeDeadline], out)
		}
		if o.Op == "append" && o.Codes[workload.CodeOther] == 0 {
			t.Errorf("lateStore saw no append without a deadline:\n%s", out)
		}
	}
}
