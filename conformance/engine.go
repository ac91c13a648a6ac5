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
	"github.com/ckptstore/ckptstore/streams"
	"github.com/ckptstore/ckptstore/streams/streamstest"
)

// OpenTenant returns a fresh, empty tenant of the engine under test: every
// contract's store of one key space, opened with lease, whose Now is the
// suite's clock and so the tenant's one lease clock (checkpoint writer
// leases and lock leases alike). An engine's test usually opens it through
// the engine's storeurl registration (storeurl.Open, then
// Opened.Namespace with a name no other call uses), which proves the
// registration too; a namespace's tenant, not the URL's own, since
// streams live in namespaces (Tenant.Streams). It may register cleanups
// on t; it is called once per case, for the lock cases of the
// persistence suite inside a testing/synctest bubble.
type OpenTenant func(t *testing.T, lease ckptstore.Options) *storeurl.Tenant

// OpenURL is the OpenTenant of an engine that each storeurl.Open of url
// gives fresh and empty (mem, memkv): every call opens url anew, closes
// it when the case ends, and returns its namespace "conformance" with
// lease, so that the registration is proven with the stores. An engine
// whose URL names shared state (a server) opens it once and hands out a
// fresh namespace per call instead.
func OpenURL(url string) OpenTenant {
	return func(t *testing.T, lease ckptstore.Options) *storeurl.Tenant {
		t.Helper()
		o, err := storeurl.Open(context.Background(), url, storeurl.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if o.Close != nil {
			t.Cleanup(func() { _ = o.Close() })
		}
		ten, err := o.Namespace("conformance", lease)
		if err != nil {
			t.Fatal(err)
		}
		return ten
	}
}

// EngineOptions tune RunEngine. The zero value suits an engine in
// process that keeps no streams.
type EngineOptions struct {
	// Store tunes the checkpoint store suite (RunStoreWith).
	Store Options
	// Network says that the engine's persistence waits on the network (a
	// Redis lock subscription), which a synctest bubble's virtual time
	// cannot include: the persistence suite runs persisttest.RunNetwork,
	// whose lock cases run on real time, instead of persisttest.Run.
	Network bool
	// Streams says that the engine keeps Durable Streams: every tenant
	// must carry a stream driver (Tenant.Streams), and the stream suites
	// run on it. An engine that must keep streams and hands a tenant
	// without them fails, as does one that hands a stream driver while
	// Streams is false (its streams would go untested).
	Streams bool
	// StreamsPeer opens a driver of another engine, the other side of
	// the export and import suite (streamstest.RunPort's peer), so that
	// dumps are proven to move between engines; nil: another tenant of
	// the engine under test.
	StreamsPeer streamstest.Open
}

// RunEngine runs every contract's suite on the tenants open makes: the
// checkpoint store suite (RunStoreWith on Tenant.Store), the instance
// store suite (RunInstanceStore on Tenant.Instances, subtest
// InstanceStore), the persistence driver suite of persist/persisttest on
// Tenant.Persistence (subtest Persistence; a tenant without one fails it)
// and, when EngineOptions.Streams says the engine keeps streams, the
// stream driver suite (streamstest.Run, subtest Streams) and the export
// and import suite (streamstest.RunPort, subtest StreamsPort) on
// Tenant.Streams. When a tenant's checkpoint driver is a driver.Checker,
// the engine's one Check, which walks the persistence keys of the key
// space too, runs when each case ends and fails it on any problem: an
// engine that passes the suites but breaks an invariant of its key space
// fails too. Streams are checked through their streams.Porter instead:
// after each stream case streams.Check runs on every stream driver the
// case used, the peer's included, and fails it on any problem.
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
		switch {
		case o.Streams && ten.Streams == nil:
			t.Fatal("the tenant has no stream driver, and EngineOptions.Streams says the engine keeps streams: open a namespace's tenant (Opened.Namespace), not the URL's own")
		case !o.Streams && ten.Streams != nil:
			t.Fatalf("the tenant has a stream driver (%T), and EngineOptions.Streams is false: set it, so that the stream suites run", ten.Streams)
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
	if !o.Streams {
		return
	}
	openStreams := func(t *testing.T) streams.Driver {
		d := tenant(t, ckptstore.Options{}).Streams
		t.Cleanup(func() { checkStreams(t, "", d) })
		return d
	}
	peer := openStreams
	if o.StreamsPeer != nil {
		peer = func(t *testing.T) streams.Driver {
			d := o.StreamsPeer(t)
			t.Cleanup(func() { checkStreams(t, "the peer's ", d) })
			return d
		}
	}
	t.Run("Streams", func(t *testing.T) { streamstest.Run(t, openStreams) })
	t.Run("StreamsPort", func(t *testing.T) { streamstest.RunPort(t, openStreams, peer) })
}

// checkStreams runs streams.Check on a stream driver at the end of a
// case: every driver is a streams.Porter, through which Check walks it.
func checkStreams(t *testing.T, whose string, d streams.Driver) {
	t.Helper()
	p, ok := d.(streams.Porter)
	if !ok {
		t.Errorf("%sstream driver %T is not a streams.Porter", whose, d)
		return
	}
	problems, err := streams.Check(context.Background(), p)
	if err != nil {
		t.Errorf("%sstreams.Check: %v", whose, err)
	}
	for _, pr := range problems {
		t.Errorf("%sstreams.Check: %s: %s", whose, pr.Stream, pr.What)
	}
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
