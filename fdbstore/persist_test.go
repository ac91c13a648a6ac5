package fdbdriver_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore/fdbstore/kv/memkv"
	"github.com/ckptstore/ckptstore/persist/driver"
	"github.com/ckptstore/ckptstore/persist/fdbdriver"
	"github.com/ckptstore/ckptstore/persist/persisttest"
)

func newDriver(t *testing.T, db *memkv.DB, opts fdbdriver.Options) *fdbdriver.Driver {
	t.Helper()
	d, err := fdbdriver.New(db, opts)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestConformance(t *testing.T) {
	persisttest.Run(t, func(t *testing.T, now func() time.Time) driver.Driver {
		return checked(t, newDriver(t, memkv.New(), fdbdriver.Options{Now: now}))
	})
}

// TestConformanceWithFaults runs the whole suite with 20 % not_committed
// and 10 % commit_unknown_result (half of those applied) on every write
// commit, as fdbstore's fault suite does: a retried call whose first
// attempt committed must neither double nor falsely fail.
func TestConformanceWithFaults(t *testing.T) {
	var (
		mu   sync.Mutex
		seed int64
		dbs  []*memkv.DB
	)
	persisttest.Run(t, func(t *testing.T, now func() time.Time) driver.Driver {
		// The lock cases assert exact virtual times ("the waiter took the
		// lock the instant it was released"), and a retry's backoff is
		// virtual time too: they run fault-free here, and
		// TestLocksWithFaults runs the lock steps through faults.
		if strings.Contains(t.Name(), "/Locks/") {
			return checked(t, newDriver(t, memkv.New(), fdbdriver.Options{Now: now}))
		}
		mu.Lock()
		seed++
		db, err := memkv.NewWithOptions(memkv.Options{
			Faults:      faults(seed),
			BackoffBase: 10 * time.Microsecond,
			BackoffMax:  100 * time.Microsecond,
		})
		if err == nil {
			dbs = append(dbs, db)
		}
		mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
		return checked(t, newDriver(t, db, fdbdriver.Options{Now: now}))
	})
	var st memkv.Stats
	for _, db := range dbs {
		s := db.Stats()
		st.Commits += s.Commits
		st.InjectedFaults += s.InjectedFaults
		st.Retries += s.Retries
	}
	t.Logf("%d engines: %d commits applied, %d injected faults, %d retries", len(dbs), st.Commits, st.InjectedFaults, st.Retries)
	if st.InjectedFaults < st.Commits/10 {
		t.Fatalf("only %d injected faults for %d commits: the suite did not run through faults", st.InjectedFaults, st.Commits)
	}
}

// checked runs Check when the test ends: a driver that passes the suite
// but leaves its indexes out of step with its records fails too.
func checked(t *testing.T, d *fdbdriver.Driver) *fdbdriver.Driver {
	t.Cleanup(func() {
		problems, err := d.Check(context.Background())
		if err != nil {
			t.Errorf("Check: %v", err)
		}
		for _, p := range problems {
			t.Errorf("Check: %v", p)
		}
	})
	return d
}

// faults is fdbstore's fault mix: 20 % not_committed and 10 %
// commit_unknown_result, half of those applied.
func faults(seed int64) memkv.Faults {
	return memkv.Faults{
		Seed:                        seed,
		NotCommittedRate:            0.20,
		UnknownResultAppliedRate:    0.05,
		UnknownResultNotAppliedRate: 0.05,
	}
}
