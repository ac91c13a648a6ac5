package memstore_test

import (
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/ckptstore/ckptstore/blobs"
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
		d := memstore.NewPersistence(memstore.PersistenceOptions{})
		var stores []*persist.Store
		for range 3 {
			s, err := persist.New(d, persist.Options{Bucket: blobs.NewMem(blobs.MemOptions{})})
			if err != nil {
				t.Fatal(err)
			}
			stores = append(stores, s)
		}
		h := plinz.RecordRuns(stores, plinz.RunsOptions{Seed: seed})
		st := h.Stats()
		total.Operations += st.Operations
		if v, vis := h.Check(30 * time.Second); v != porcupine.Ok {
			path := filepath.Join(t.ArtifactDir(), "runs.html")
			_ = vis(path)
			t.Fatalf("seed %d: verdict %v for %d operations; visualization %s\n%s", seed, v, st.Operations, path, h.Explain(30*time.Second))
		}
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
