package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
	pdriver "github.com/ckptstore/ckptstore/persist/driver"
	"github.com/ckptstore/ckptstore/persist/persisttest"
	"github.com/ckptstore/ckptstore/storeurl"
)

// OpenTenant returns a fresh, empty tenant of the engine under test: every
// contract's store of one key space, opened with lease, whose Now is the
// suite's clock and so the tenant's one lease clock (checkpoint writer
// leases and lock leases alike). An engine's test usually opens it through
// the engine's storeurl registration (storeurl.Open, then
// Opened.Namespace with a name no other call uses), which proves the
// registration too. It may register cleanups on t; it is called once per
// case, for the lock cases of the persistence suite inside a
// testing/synctest bubble.
type OpenTenant func(t *testing.T, lease ckptstore.Options) *storeurl.Tenant

// EngineOptions tune RunEngine. The zero value suits an engine in
// process.
type EngineOptions struct {
	// Store tunes the checkpoint store suite (RunStoreWith).
	Store Options
	// Network says that the engine's persistence waits on the network (a
	// Redis lock subscription), which a synctest bubble's virtual time
	// cannot include: the persistence suite runs persisttest.RunNetwork,
	// whose lock cases run on real time, instead of persisttest.Run.
	Network bool
}

// RunEngine runs every contract's suite on the tenants open makes: the
// checkpoint store suite (RunStoreWith on Tenant.Store), the instance
// store suite (RunInstanceStore on Tenant.Instances, subtest
// InstanceStore) and the persistence driver suite of persist/persisttest
// on Tenant.Persistence (subtest Persistence; a tenant without one fails
// it). When a tenant's checkpoint driver is a driver.Checker, the engine's
// one Check, which walks the persistence keys of the key space too, runs
// when each case ends and fails it on any problem: an engine that passes
// the suites but breaks an invariant of its key space fails too.
//
// This is the one suite call of an engine's test (docs/contract.md,
// "Writing a driver"); variants (faults, single-copy layouts, clusters)
// still call the per-contract suites with their own factories.
func RunEngine(t *testing.T, open OpenTenant, o EngineOptions) {
	t.Helper()
	tenant := func(t *testing.T, lease ckptstore.Options) *storeurl.Tenant {
		t.Helper()
		ten := open(t, lease)
		if ten == nil || ten.Store == nil || ten.Instances == nil {
			t.Fatalf("OpenTenant returned %+v: a tenant needs a Store and Instances", ten)
		}
		if c, ok := ten.Store.Driver().(driver.Checker); ok {
			t.Cleanup(func() { checkTenant(t, c) })
		}
		return ten
	}
	t.Run("Checkpoints", func(t *testing.T) {
		RunStoreWith(t, func(t *testing.T, lease ckptstore.Options) Store {
			return tenant(t, lease).Store
		}, o.Store)
	})
	RunInstanceStore(t, func(t *testing.T) InstanceStore {
		return tenant(t, ckptstore.Options{}).Instances
	})
	newDriver := func(t *testing.T, now func() time.Time) pdriver.Driver {
		ten := tenant(t, ckptstore.Options{Now: now})
		if ten.Persistence == nil {
			t.Fatal("the tenant has no persistence driver: every engine keeps the persistence contract")
		}
		return ten.Persistence
	}
	t.Run("Persistence", func(t *testing.T) {
		if o.Network {
			persisttest.RunNetwork(t, newDriver)
		} else {
			persisttest.Run(t, newDriver)
		}
	})
}

// checkTenant runs the engine's Check on a tenant at the end of a case.
func checkTenant(t *testing.T, c driver.Checker) {
	t.Helper()
	problems, err := c.Check(context.Background())
	if err != nil {
		t.Errorf("Check: %v", err)
	}
	for _, p := range problems {
		t.Errorf("Check: %v", p)
	}
}
