package conformance_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/conformance"
	"github.com/ckptstore/ckptstore/memstore"
)

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
