package fdbstore_test

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore/fdbstore"
	"github.com/ckptstore/ckptstore/internal/linz"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

// TestLinearizableWithFaults checks concurrent histories of fdbstore on
// memkv, with 20 % not_committed and 5 % + 5 % commit_unknown_result on
// every commit, against the contract's sequential model. LINZ_RUNS sets the
// number of histories (default 4).
func TestLinearizableWithFaults(t *testing.T) {
	runs := 4
	if n, err := strconv.Atoi(os.Getenv("LINZ_RUNS")); err == nil && n > 0 {
		runs = n
	}
	var total linz.Result
	var injected int64
	for seed := range uint64(runs) {
		db := faultyEngine(t, int64(seed)+1000, 0)
		clock := testkit.NewClock(time.UnixMilli(1_700_000_000_000))
		opt := linz.Options{Seed: seed}
		s, err := fdbstore.New(db, fdbstore.Options{Options: opt.StoreOptions(clock)})
		if err != nil {
			t.Fatal(err)
		}
		checked(t, s)
		r := linz.Run(t, s, clock, opt)
		total.Operations += r.Operations
		total.Open += r.Open
		injected += db.Stats().InjectedFaults
	}
	if injected == 0 {
		t.Fatal("no fault was injected: the run proves nothing about faults")
	}
	t.Logf("%d histories, %d operations checked, %d open outcomes, %d injected faults", runs, total.Operations, total.Open, injected)
}
