package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/internal/redistest"
	"github.com/ckptstore/ckptstore/internal/workload"
	_ "github.com/ckptstore/ckptstore/redisstore" // redis+sentinel://
	"github.com/ckptstore/ckptstore/storeurl"
)

// TestSentinelFailover runs the harness workload against a primary with
// two replicas under three Sentinels (quorum 2, down-after 1 s), through
// the redis+sentinel:// URL, and SIGKILLs the primary mid-run. Sentinel
// promotes a replica and the workload carries on against it.
//
// With min_replicas=1 every acknowledged append waited for a replica, and
// Sentinel promotes the replica with the most data, so the test asserts
// that nothing acknowledged was lost: loadgen's --verify passes (each
// acknowledged append present or deleted by undo or prune, counts equal a
// recount) and Check is clean. With min_replicas=0 an append is
// acknowledged once the primary has it, and Redis promises nothing about
// the ones the replicas had not received; the test asserts only that the
// store stays consistent (Check clean) and that every problem --verify
// reports is a loss or its consequence, and logs what was lost.
func TestSentinelFailover(t *testing.T) {
	redistest.Binary(t)
	for _, minReplicas := range []int{1, 0} {
		t.Run(fmt.Sprintf("min_replicas=%d", minReplicas), func(t *testing.T) { failover(t, minReplicas) })
	}
}

func failover(t *testing.T, minReplicas int) {
	g := redistest.StartGroup(t, redistest.GroupOptions{Replicas: 2, Sentinels: 3, Quorum: 2, DownAfter: time.Second})
	url := g.URL(fmt.Sprintf("prefix=failover&min_replicas=%d&replica_timeout=500ms", minReplicas))
	old := g.Primary.Addr

	ts := &ackStore{acked: map[string]string{}, deleted: map[string]bool{}, uncertain: map[string]bool{}, errs: map[string]int{}}
	hook := func(cfg *config) {
		cfg.open = func(ctx context.Context, u string, opts storeurl.Options) (*storeurl.Opened, error) {
			o, err := storeurl.Open(ctx, u, opts)
			if err != nil {
				return nil, err
			}
			ts.Store = o.Store.Driver()
			o.Store = ckptstore.New(ts)
			return o, nil
		}
	}

	// The killer: once the workload has written for a while, SIGKILL the
	// primary, then time Sentinel's switch (a Sentinel names another
	// primary) and the workload's (its first acknowledged append after
	// the kill).
	var promoted time.Duration
	newPrimary := ""
	var wg sync.WaitGroup
	wg.Go(func() {
		for ts.appends.Load() < 300 {
			time.Sleep(10 * time.Millisecond)
		}
		ts.kill(g.Primary.Kill)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for ctx.Err() == nil {
			if a, err := g.Master(ctx); err == nil && a != old {
				promoted, newPrimary = time.Since(ts.killedAt), a
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
	res, code, out := runJSON(t, hook, "--store", url, "--duration", "8s", "--threads", "16", "--workers", "4",
		"--lease", "2s", "--verify", "--undo-rate", "0.1", "--prune-rate", "0.2", "--keep", "4", "--fork-rate", "0.05")
	wg.Wait()
	if ts.killedAt.IsZero() {
		t.Fatalf("the primary was never killed: %d appends in the whole run", ts.appends.Load())
	}
	if newPrimary == "" || newPrimary == old {
		t.Fatalf("Sentinel promoted no replica within 30 s of the kill")
	}
	outage, resumed := ts.outage()
	if !resumed {
		t.Fatalf("no append succeeded once the primary was down: the workload did not carry on (errors %v)", ts.errsAfterKill())
	}

	// Every acknowledged append (and fork), against a fresh client of
	// the new primary: present, deleted by an undo or prune that
	// succeeded, or on a thread where a delete's outcome is unknown.
	ctx := context.Background()
	o, err := storeurl.Open(ctx, url, storeurl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	var lost []string
	present, deleted, unknown := 0, 0, 0
	for id, thread := range ts.acked {
		switch {
		case ts.deleted[id]:
			deleted++
		case ts.uncertain[thread]:
			unknown++
		default:
			cp, err := o.Store.Get(ctx, id)
			if err != nil {
				t.Fatalf("Get %q: %v", id, err)
			}
			if cp == nil || cp.ThreadID != thread {
				lost = append(lost, id)
			} else {
				present++
			}
		}
	}
	problems, err := o.Store.Driver().(driver.Checker).Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	appendOps := opSummary(res, "append")
	t.Logf("min_replicas=%d: primary %s killed after %d acknowledged appends; Sentinel named %s after %v; no append was acknowledged for %v (the longest gap after the kill)",
		minReplicas, old, ts.appendsAtKill, newPrimary, promoted.Round(time.Millisecond), outage.Round(time.Millisecond))
	t.Logf("min_replicas=%d: %d acknowledged appends and forks: %d present, %d deleted by undo or prune, %d on threads with a delete of unknown outcome, %d LOST (first %v)",
		minReplicas, len(ts.acked), present, deleted, unknown, len(lost), lost[:min(len(lost), 5)])
	t.Logf("min_replicas=%d: errors after the kill by kind %v; loadgen's append errors by code %v; run: %d appends in %v",
		minReplicas, ts.errsAfterKill(), appendOps.Codes, res.Appends, res.Elapsed.Round(time.Millisecond))
	if len(problems) > 0 {
		t.Errorf("Check after the failover: %v", problems)
	}
	if minReplicas > 0 {
		if len(lost) > 0 {
			t.Errorf("%d acknowledged appends lost with min_replicas=%d: %v", len(lost), minReplicas, lost)
		}
		if code != 0 {
			t.Errorf("--verify failed after the failover:\n%s", out)
		}
		return
	}
	// min_replicas=0: a lost write can also show as a contract error
	// under a live lease (the head or the lease went back with it); any
	// other problem is a bug.
	for _, p := range res.Verify.Problems {
		if !strings.Contains(p, "lost acknowledged append") && !strings.Contains(p, "under a live lease") && !strings.Contains(p, "lost the lease") {
			t.Errorf("--verify: a problem that no lost write explains: %s", p)
		}
	}
	if len(lost) > 0 || !res.Verify.OK {
		t.Logf("min_replicas=0 lost %d acknowledged appends (--verify: %d problems, first %q)", len(lost), res.Verify.ProblemCount, res.Verify.Problems[:min(len(res.Verify.Problems), 3)])
	}
}

func opSummary(res *result, op string) workload.OpSummary {
	for _, o := range res.Ops {
		if o.Op == op {
			return o
		}
	}
	return workload.OpSummary{}
}

// ackStore is the driver the failover workload writes through: it records
// what was acknowledged, what was deleted (surely, or maybe), and when
// each append succeeded, to judge the failover with no help from loadgen.
type ackStore struct {
	driver.Store
	appends atomic.Int64

	mu            sync.Mutex
	acked         map[string]string // id -> thread of every acknowledged append and fork
	deleted       map[string]bool   // ids an undo or prune surely deleted
	uncertain     map[string]bool   // threads where a delete's outcome is unknown
	killedAt      time.Time
	appendsAtKill int64
	okAfter       []time.Time    // the appends acknowledged after the kill
	errs          map[string]int // errors after the kill, by kind
}

func (s *ackStore) kill(kill func()) {
	s.mu.Lock()
	s.killedAt, s.appendsAtKill = time.Now(), s.appends.Load()
	s.mu.Unlock()
	kill()
}

// outage is the workload's view of the switch: the longest time between
// two acknowledged appends from the kill on (an append in flight at the
// kill may still be acknowledged by the dying primary, so the first
// success after the kill is no measure). resumed is false when no append
// succeeded after that gap began, or none after the kill at all.
func (s *ackStore) outage() (gap time.Duration, resumed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ts := append([]time.Time{s.killedAt}, s.okAfter...)
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	for i := 1; i < len(ts); i++ {
		if d := ts[i].Sub(ts[i-1]); d > gap {
			gap = d
		}
	}
	return gap, len(ts) > 1 && gap < time.Since(s.killedAt)
}

func (s *ackStore) errsAfterKill() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.errs)
}

// note records the outcome of one call.
func (s *ackStore) note(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil && !s.killedAt.IsZero() {
		s.errs[errorKind(err)]++
	}
}

// errorKind names the kind of a failover error, finer than loadgen's
// codes: which of the things a client meets while the primary changes.
func errorKind(err error) string {
	msg := err.Error()
	switch {
	case errors.Is(err, ckptstore.ErrNotReplicated):
		return "NOT_REPLICATED"
	case ckptstore.Code(err) != "":
		return ckptstore.Code(err)
	case strings.Contains(msg, "READONLY"):
		return "READONLY (a demoted or not yet promoted server)"
	case strings.Contains(msg, "connection refused"):
		return "connection refused"
	case strings.Contains(msg, "EOF"), strings.Contains(msg, "reset by peer"), strings.Contains(msg, "broken pipe"):
		return "connection lost"
	case strings.Contains(msg, "i/o timeout"):
		return "timeout"
	}
	return "other: " + msg
}

func (s *ackStore) Append(ctx context.Context, cp *ckptstore.Checkpoint, expected string, w ckptstore.Writer, opToken string) error {
	err := s.Store.Append(ctx, cp, expected, w, opToken)
	s.note(err)
	if err == nil {
		s.appends.Add(1)
		s.mu.Lock()
		s.acked[cp.ID] = cp.ThreadID
		if !s.killedAt.IsZero() {
			s.okAfter = append(s.okAfter, time.Now())
		}
		s.mu.Unlock()
	}
	return err
}

func (s *ackStore) ForkFromCheckpoint(ctx context.Context, in driver.Fork) (*ckptstore.Checkpoint, error) {
	cp, err := s.Store.ForkFromCheckpoint(ctx, in)
	s.note(err)
	if err == nil {
		s.mu.Lock()
		s.acked[in.DestinationCheckpointID] = in.DestinationThreadID
		s.mu.Unlock()
	}
	return cp, err
}

func (s *ackStore) DeleteHead(ctx context.Context, thread, id string, w ckptstore.Writer, opToken string) error {
	err := s.Store.DeleteHead(ctx, thread, id, w, opToken)
	s.note(err)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err == nil:
		s.deleted[id] = true
	case ckptstore.Code(err) == "":
		s.uncertain[thread] = true
	}
	return err
}

func (s *ackStore) DeleteCheckpoints(ctx context.Context, thread string, keep int, w ckptstore.Writer) ([]string, error) {
	ids, err := s.Store.DeleteCheckpoints(ctx, thread, keep, w)
	s.note(err)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case err == nil:
		for _, id := range ids {
			s.deleted[id] = true
		}
	case ckptstore.Code(err) == "":
		s.uncertain[thread] = true
	}
	return ids, err
}

// TestClusterRun runs the workload, with --verify, on a three-master
// Redis Cluster (no replicas) through its redis+cluster:// URL: the
// threads' writes, each store in one slot, must verify as on one server.
func TestClusterRun(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	url := "redis+cluster://" + strings.Join(cl.Addrs, ",") + "?prefix=lg"
	res, code, out := runJSON(t, nil, "--store", url, "--ops", "400", "--threads", "8", "--workers", "4", "--verify",
		"--undo-rate", "0.1", "--prune-rate", "0.3", "--keep", "3", "--fork-rate", "0.1")
	if code != 0 || res.Appends != 400 {
		t.Fatalf("loadgen on the cluster: exit %d, %d appends:\n%s", code, res.Appends, out)
	}
	if !strings.Contains(res.Store, "redis+cluster://") {
		t.Errorf("the run names its store %q", res.Store)
	}
}
