package fdbstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore/fdbstore"
	"github.com/ckptstore/ckptstore/fdbstore/kv/memkv"
	pdriver "github.com/ckptstore/ckptstore/persist/driver"
	"github.com/ckptstore/ckptstore/persist/persisttest"
)

func newDriver(t *testing.T, db *memkv.DB, opts fdbstore.PersistenceOptions) *fdbstore.Persistence {
	t.Helper()
	d, err := fdbstore.NewPersistence(db, opts)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestConformanceWithFaults runs the whole suite with 20 % not_committed
// and 10 % commit_unknown_result (half of those applied) on every write
// commit, as fdbstore's fault suite does: a retried call whose first
// attempt committed must neither double nor falsely fail.
func TestPersistConformanceWithFaults(t *testing.T) {
	var engines faultyEngines
	persisttest.Run(t, func(t *testing.T, now func() time.Time) pdriver.Driver {
		// The lock cases assert exact virtual times ("the waiter took the
		// lock the instant it was released"), and a retry's backoff is
		// virtual time too: they run fault-free here, and
		// TestLocksWithFaults runs the lock steps through faults.
		if strings.Contains(t.Name(), "/Locks/") {
			return checkedPersist(t, newDriver(t, memkv.New(), fdbstore.PersistenceOptions{Now: now}))
		}
		return checkedPersist(t, newDriver(t, engines.open(t), fdbstore.PersistenceOptions{Now: now}))
	})
	engines.requireFaults(t)
}

// checked runs Check when the test ends: a driver that passes the suite
// but leaves its indexes out of step with its records fails too.
func checkedPersist(t *testing.T, d *fdbstore.Persistence) *fdbstore.Persistence {
	t.Cleanup(func() {
		problems, err := fdbstore.PersistCheck(d, context.Background())
		if err != nil {
			t.Errorf("Check: %v", err)
		}
		for _, p := range problems {
			t.Errorf("Check: %v", p)
		}
	})
	return d
}

// TestPersistDumpPages runs the export and import cases with Dump pages of
// two keys, so that every resume and every piece crosses pages.
func TestPersistDumpPages(t *testing.T) {
	defer fdbstore.SetDumpPage(2)()
	persisttest.RunPort(t, func(t *testing.T, now func() time.Time) pdriver.Driver {
		return checkedPersist(t, newDriver(t, memkv.New(), fdbstore.PersistenceOptions{Now: now}))
	})
}
