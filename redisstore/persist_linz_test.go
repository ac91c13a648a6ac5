package redisstore_test

// Linearizability of runs and lock histories on a real redis-server, from
// two processes: the test re-runs its own binary as a child
// (TestPlinzChild) that drives the same store through its own connections
// and hands its history back as JSON; wall-clock times on one host merge
// the two histories into one.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ckptstore/ckptstore/internal/plinz"
	"github.com/ckptstore/ckptstore/internal/redistest"
	"github.com/ckptstore/ckptstore/persist"
	"github.com/ckptstore/ckptstore/redisstore"
)

// The child's settings, passed in its environment.
const (
	envChild  = "PLINZ_CHILD" // "runs" or "locks"
	envAddr   = "PLINZ_ADDR"
	envPrefix = "PLINZ_PREFIX"
	envSeed   = "PLINZ_SEED"
	envOut    = "PLINZ_OUT"
)

// The lock histories' lease: long enough that the holder's abort (3/8 of
// a lease before expiry) is far above a loaded machine's scheduling
// delays, short enough that a stall costs little.
const (
	rlLease = 400 * time.Millisecond
	rlRenew = 100 * time.Millisecond
)

// faultyClient is a client through the fault proxy that resends at most
// twice, so some calls end with their outcome unknown.
// startLoaded starts a redis-server and loads every script on it through
// the direct client it returns, so that EVALSHA finds them: one round per
// call, and a resend is a resend of the script itself.
func startLoaded(t *testing.T) (*redistest.Server, *redis.Client) {
	t.Helper()
	srv := redistest.Start(t)
	direct := srv.Client(t, nil)
	for _, sc := range redisstore.PersistenceScripts() {
		if err := sc.Load(context.Background(), direct).Err(); err != nil {
			t.Fatal(err)
		}
	}
	return srv, direct
}

func faultyClient(t testing.TB, addr string) *redis.Client {
	return redistest.NewClient(t, addr, &redis.Options{MaxRetries: 2, MinRetryBackoff: time.Millisecond, MaxRetryBackoff: 2 * time.Millisecond})
}

func openDriver(t testing.TB, c redis.UniversalClient, prefix string) *redisstore.Persistence {
	t.Helper()
	d, err := redisstore.NewPersistence(redisstore.PersistenceOptions{Client: c, Prefix: prefix}) // the server's clock
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// checkKeyspace runs Check on the prefix through a direct connection: a
// history must leave the indexes in step with the records.
func checkKeyspace(t *testing.T, direct redis.UniversalClient, prefix string) {
	t.Helper()
	for _, p := range engineCheck(t, direct, prefix) {
		t.Errorf("Check %s: %v", prefix, p)
	}
}

func openStores(t testing.TB, d *redisstore.Persistence, n int) []*persist.Store {
	t.Helper()
	return plinz.OpenStores(t, d, n, persist.Options{LeaseDuration: rlLease, RenewAfter: rlRenew})
}

// TestPlinzChild is the child process of the two-process tests; run
// directly it has nothing to do.
func TestPlinzChild(t *testing.T) {
	kind := os.Getenv(envChild)
	if kind == "" {
		t.Skip("the child of TestRunsLinearizableTwoProcesses and TestLockHistoriesTwoProcesses; it runs only when they start it")
	}
	seed, _ := strconv.ParseUint(os.Getenv(envSeed), 10, 64)
	c := faultyClient(t, os.Getenv(envAddr))
	var out any
	switch kind {
	case "runs":
		var stores []*persist.Store
		for range 2 {
			stores = append(stores, openStores(t, openDriver(t, c, os.Getenv(envPrefix)), 1)...)
		}
		out = plinz.RecordRuns(stores, plinz.RunsOptions{Clients: 4, Seed: seed + 1000, FirstClient: 1000})
	case "locks":
		out = recordRedisLocks(t, c, os.Getenv(envPrefix), seed+1000, "child/", 4)
	default:
		t.Fatalf("unknown %s=%q", envChild, kind)
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(os.Getenv(envOut), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// startChild runs TestPlinzChild in another process; wait returns its
// history in out.
func startChild(t *testing.T, kind, addr, prefix string, seed uint64) (wait func(out any)) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "history.json")
	cmd := exec.Command(os.Args[0], "-test.run=^TestPlinzChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), envChild+"="+kind, envAddr+"="+addr, envPrefix+"="+prefix, envSeed+"="+fmt.Sprint(seed), envOut+"="+path)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return func(out any) {
		t.Helper()
		if err := cmd.Wait(); err != nil {
			t.Fatalf("the child process: %v\n%s", err, log.Bytes())
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRunsLinearizableTwoProcesses checks concurrent histories of the runs
// store on a real redis-server against plinz's sequential model: this
// process drives six clients over a driver through the fault proxy (3 %
// of replies lost after the script ran, 3 % of requests cut before it
// did, two resends) and one on a direct connection, and a child process
// four more through the proxy; Check after each history. PLINZ_SOAK
// multiplies the histories.
func TestRunsLinearizableTwoProcesses(t *testing.T) {
	start := time.Now()
	srv, direct := startLoaded(t)
	p := redistest.NewProxy(t, srv.Addr)
	p.SetFaults(5, 0.03, 0.03)
	c := faultyClient(t, p.Addr)
	runs := 2 * plinz.Soak()
	var total plinz.RunsStats
	for seed := range uint64(runs) {
		prefix := fmt.Sprintf("plinz-runs-%d", seed)
		wait := startChild(t, "runs", p.Addr, prefix, seed)
		stores := append(openStores(t, openDriver(t, c, prefix), 2), openStores(t, openDriver(t, direct, prefix), 1)...)
		h := plinz.RecordRuns(stores, plinz.RunsOptions{Seed: seed})
		var child plinz.RunsHistory
		wait(&child)
		h.Merge(&child)
		checkKeyspace(t, direct, prefix)
		total.Add(plinz.RequireLinearizable(t, h, fmt.Sprintf("seed %d (%d operations from the child)", seed, len(child.Ops))))
	}
	if p.DroppedReplies() == 0 || p.DroppedRequests() == 0 {
		t.Fatalf("the proxy lost %d replies and cut %d requests: the run proves nothing about faults", p.DroppedReplies(), p.DroppedRequests())
	}
	t.Logf("%d histories of two processes, %d operations checked (%d with unknown outcome, %d contract errors); %d replies lost, %d requests cut; 0 violations; %v",
		runs, total.Operations, total.Unknown, total.Errors, p.DroppedReplies(), p.DroppedRequests(), time.Since(start).Round(time.Millisecond))
}

// recordRedisLocks runs holders on c under prefix: two drivers (two
// connections' subscriptions), each with its Recorder and Store values,
// the store's clock the server's (read here as the host's clock, which
// redis-server's TIME is).
func recordRedisLocks(t testing.TB, c redis.UniversalClient, prefix string, seed uint64, name string, holders int) *plinz.LockHistory {
	var stacks []plinz.LockStack
	for i := range 2 {
		st, err := plinz.Stacks(openDriver(t, c, prefix), time.Now, plinz.StackOptions{
			Stores: 2, Lease: rlLease, RenewAfter: rlRenew,
			Skews:  []plinz.Skew{{Offset: time.Duration(i) * time.Hour, Rate: 1.05}, {Offset: -time.Minute, Rate: 0.95}},
			Faults: plinz.StepFaults{Seed: seed*10 + uint64(i), CutRate: 0.01, LostRate: 0.01, DelayRate: 0.05, MaxDelay: rlLease / 2},
		})
		if err != nil {
			t.Fatal(err)
		}
		stacks = append(stacks, st...)
	}
	return plinz.RecordLocks(stacks, plinz.LockOptions{Holders: holders, Sections: 6, Lease: rlLease, MaxWork: rlLease / 4,
		StallRate: 0.1, ImpatientRate: 0.1, Seed: seed, Name: name, StoreClock: time.Now})
}

// TestLockHistoriesTwoProcesses runs holders of WithLock on two keys from
// this process and a child, each through two drivers and the fault proxy
// (3 % of replies lost, 3 % of requests cut, two resends) on one
// redis-server judging leases by its own clock, with skewed holder
// clocks, injected step faults and stalls, and checks the merged history
// by the server's clock (milliseconds: a slack of 1 ms); Check after
// each history.
func TestLockHistoriesTwoProcesses(t *testing.T) {
	start := time.Now()
	srv, direct := startLoaded(t)
	p := redistest.NewProxy(t, srv.Addr)
	p.SetFaults(9, 0.03, 0.03)
	c := faultyClient(t, p.Addr)
	var sum plinz.Totals
	unknown := 0
	for seed := range uint64(plinz.Soak()) {
		prefix := fmt.Sprintf("plinz-locks-%d", seed)
		wait := startChild(t, "locks", p.Addr, prefix, seed)
		h := recordRedisLocks(t, c, prefix, seed, "parent/", 6)
		var child plinz.LockHistory
		wait(&child)
		h.Merge(&child)
		checkKeyspace(t, direct, prefix)
		r := plinz.CheckLocks(h, time.Millisecond)
		for _, v := range r.Violations {
			t.Errorf("seed %d: %s", seed, v)
		}
		for _, s := range h.Steps {
			if s.Err == "?" {
				unknown++
			}
		}
		sum.Add(h, r)
	}
	if sum.Sections == 0 || sum.Stalled == 0 {
		t.Errorf("%d sections, %d stalled: the run proves too little", sum.Sections, sum.Stalled)
	}
	t.Logf("%v (two processes; max waiting sums their peaks); %d lock steps ended with their outcome unknown; %d replies lost, %d requests cut; %v",
		sum, unknown, p.DroppedReplies(), p.DroppedRequests(), time.Since(start).Round(time.Millisecond))
}
