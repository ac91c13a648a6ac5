package memstore_test

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ckptstore/ckptstore/internal/plinz"
	"github.com/ckptstore/ckptstore/memstore"
	"github.com/ckptstore/ckptstore/persist"
)

// TestPersistRunsLinearizable checks concurrent histories of the runs store,
// six clients over three Store values on one driver, against plinz's
// sequential model. PLINZ_SOAK multiplies the number of histories.
func TestPersistRunsLinearizable(t *testing.T) {
	start := time.Now()
	runs := 8 * plinz.Soak()
	var total plinz.RunsStats
	for seed := range uint64(runs) {
		stores := plinz.OpenStores(t, memstore.NewPersistence(memstore.PersistenceOptions{}), 3, persist.Options{})
		h := plinz.RecordRuns(stores, plinz.RunsOptions{Seed: seed})
		total.Add(plinz.RequireLinearizable(t, h, fmt.Sprintf("seed %d", seed)))
	}
	t.Logf("%d histories, %d operations checked, 0 violations, %v", runs, total.Operations, time.Since(start).Round(time.Millisecond))
}

// TestPersistLockHistories runs holders of WithLock in virtual time on two keys
// over three Store values whose clocks are skewed from the store's (an
// hour off, 10 % fast or slow), with
// injected step faults (cut requests, lost replies, delays up to a lease)
// and holders that stall past their lease, and checks each history's
// fences, leases and aborts by the store's clock.
func TestPersistLockHistories(t *testing.T) {
	start := time.Now()
	runs := 8 * plinz.Soak()
	const lease, renew = 100 * time.Millisecond, 25 * time.Millisecond
	var sum plinz.Totals
	for seed := range uint64(runs) {
		synctest.Test(t, func(t *testing.T) {
			stacks, err := plinz.Stacks(memstore.NewPersistence(memstore.PersistenceOptions{}), time.Now, plinz.StackOptions{
				Lease: lease, RenewAfter: renew,
				Skews:  []plinz.Skew{{}, {Offset: time.Hour, Rate: 1.1}, {Offset: -time.Hour, Rate: 0.9}},
				Faults: plinz.StepFaults{Seed: seed, CutRate: 0.01, LostRate: 0.01, DelayRate: 0.05, MaxDelay: lease},
			})
			if err != nil {
				t.Fatal(err)
			}
			h := plinz.RecordLocks(stacks, plinz.LockOptions{Holders: 8, Sections: 10, Lease: lease, StallRate: 0.1, ImpatientRate: 0.1, Seed: seed, StoreClock: time.Now})
			r := plinz.CheckLocks(h, 0)
			for _, v := range r.Violations {
				t.Errorf("seed %d: %s", seed, v)
			}
			sum.Add(h, r)
		})
	}
	if sum.Overran == 0 || sum.Aborted == 0 {
		t.Errorf("%d sections overran a successor's grant, %d aborted: the abort rule was not exercised", sum.Overran, sum.Aborted)
	}
	t.Logf("%v; %v", sum, time.Since(start).Round(time.Millisecond))
}
