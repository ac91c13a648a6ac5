package fdbstore_test

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ckptstore/ckptstore/fdbstore"
	"github.com/ckptstore/ckptstore/internal/plinz"
	"github.com/ckptstore/ckptstore/persist"
)

// TestRunsLinearizableWithFaults checks concurrent histories of the runs
// store against plinz's sequential model: two Driver values on one faulty
// engine (two processes), three Store values on each, six clients; with
// two retries a call's commit_unknown_result often reaches the client, an
// outcome the model leaves open. PLINZ_SOAK multiplies the histories.
func TestRunsLinearizableWithFaults(t *testing.T) {
	start := time.Now()
	runs := 8 * plinz.Soak()
	var total plinz.RunsStats
	var injected int64
	for seed := range uint64(runs) {
		db := faultyEngine(t, int64(seed)+500, 2)
		var stores []*persist.Store
		for range 2 {
			d := checkedPersist(t, newDriver(t, db, fdbstore.PersistenceOptions{}))
			stores = append(stores, plinz.OpenStores(t, d, 3, persist.Options{})...)
		}
		h := plinz.RecordRuns(stores, plinz.RunsOptions{Seed: seed})
		injected += db.Stats().InjectedFaults
		total.Add(plinz.RequireLinearizable(t, h, fmt.Sprintf("seed %d", seed)))
	}
	if injected == 0 || total.Unknown == 0 {
		t.Fatalf("%d faults injected, %d outcomes unknown: the run proves nothing about faults", injected, total.Unknown)
	}
	t.Logf("%d histories, %d operations checked (%d with unknown outcome, %d contract errors), %d injected faults, 0 violations, %v",
		runs, total.Operations, total.Unknown, total.Errors, injected, time.Since(start).Round(time.Millisecond))
}

// TestLockHistoriesWithFaults runs holders of WithLock in virtual time on
// two Driver values over one engine with fdbstore's fault mix and at most
// three retries (so a lock step sometimes ends in commit_unknown_result),
// three Store values on each with skewed clocks, injected step cuts,
// lost replies and delays, and holders that stall past their lease; then
// checks fences, leases and aborts by the store's clock.
func TestLockHistoriesWithFaults(t *testing.T) {
	start := time.Now()
	runs := 4 * plinz.Soak()
	const lease, renew = 100 * time.Millisecond, 25 * time.Millisecond
	var sum plinz.Totals
	var injected, unknown int64
	for seed := range uint64(runs) {
		synctest.Test(t, func(t *testing.T) {
			db := faultyEngine(t, int64(seed)+900, 3)
			var stacks []plinz.LockStack
			for p := range 2 {
				d := checkedPersist(t, newDriver(t, db, fdbstore.PersistenceOptions{WatchPoll: 20 * time.Millisecond}))
				st, err := plinz.Stacks(d, time.Now, plinz.StackOptions{
					Lease: lease, RenewAfter: renew,
					Skews:  []plinz.Skew{{Offset: time.Duration(p) * time.Minute}, {Offset: time.Hour, Rate: 1.1}, {Offset: -time.Hour, Rate: 0.9}},
					Faults: plinz.StepFaults{Seed: seed*10 + uint64(p), CutRate: 0.01, LostRate: 0.01, DelayRate: 0.05, MaxDelay: lease},
				})
				if err != nil {
					t.Fatal(err)
				}
				stacks = append(stacks, st...)
			}
			h := plinz.RecordLocks(stacks, plinz.LockOptions{Holders: 8, Sections: 8, Lease: lease, StallRate: 0.1, ImpatientRate: 0.1, Seed: seed, StoreClock: time.Now})
			r := plinz.CheckLocks(h, 0)
			for _, v := range r.Violations {
				t.Errorf("seed %d: %s", seed, v)
			}
			for _, s := range h.Steps {
				if s.Err == "?" {
					unknown++
				}
			}
			injected += db.Stats().InjectedFaults
			sum.Add(h, r)
		})
	}
	if sum.Overran == 0 || sum.Aborted == 0 || injected == 0 {
		t.Errorf("%d sections overran a successor's grant, %d aborted, %d engine faults: the run proves too little", sum.Overran, sum.Aborted, injected)
	}
	t.Logf("%v; %d engine faults injected, %d lock steps ended with their outcome unknown; %v", sum, injected, unknown, time.Since(start).Round(time.Millisecond))
}
