package conformance_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/conformance"
	"github.com/ckptstore/ckptstore/memstore"
	"github.com/ckptstore/ckptstore/storeurl"
)

func ExampleRunEngine() {
	// An engine's _test.go file makes one suite call: every contract's
	// suite on fresh tenants, opened through the engine's storeurl
	// registration with the lease options given (their Now is the suite's
	// clock, the tenant's one lease clock). The tenants are namespaces',
	// which carry the stream driver the stream suites run on. OpenURL is
	// that factory for an engine whose every Open gives a fresh, empty
	// store.
	testEngine := func(t *testing.T) {
		conformance.RunEngine(t, conformance.OpenURL("mem"), conformance.EngineOptions{Streams: true})
	}
	_ = testEngine // as func TestEngine(t *testing.T) in memstore_test.go

	// A tenant holds every contract's store of its key space.
	o, _ := storeurl.Open(context.Background(), "mem", storeurl.Options{})
	ten, _ := o.Namespace("tenant", ckptstore.Options{})
	fmt.Println(ten.Store != nil, ten.Instances != nil, ten.Persistence != nil, ten.Streams != nil)
	// Output: true true true true
}

func ExampleRunStore() {
	// A store's _test.go file runs the suite from a test function, with a
	// factory that returns a fresh, empty store using the options given:
	testConformance := func(t *testing.T) {
		conformance.RunStore(t, func(t *testing.T, opts ckptstore.Options) conformance.Store {
			return memstore.New(opts)
		})
		conformance.RunInstanceStore(t, func(t *testing.T) conformance.InstanceStore {
			return memstore.NewInstanceStore()
		})
	}
	_ = testConformance // as func TestConformance(t *testing.T) in memstore_test.go

	// The store sees time only through opts.Now, the suite's Clock, which
	// moves when the suite says so. At now == ExpiresAt a lease has expired.
	ctx := context.Background()
	clock := conformance.NewClock(conformance.Start)
	store := memstore.New(ckptstore.Options{Now: clock.Now,
		LeaseDuration: conformance.LeaseDuration, RenewAfter: conformance.RenewAfter})
	lease, _ := store.AcquireWriter(ctx, "thread")
	clock.Advance(conformance.LeaseDuration)
	_, err := lease.Renew(ctx)
	fmt.Println(lease.ExpiresAt.Equal(clock.Now()), errors.Is(err, ckptstore.ErrWriterLost))
	// Output: true true
}
