package fdbstore_test

import (
	"context"
	"testing"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/conformance"
	"github.com/ckptstore/ckptstore/fdbstore"
	"github.com/ckptstore/ckptstore/fdbstore/kv/memkv"
	"github.com/ckptstore/ckptstore/memstore"
	"github.com/ckptstore/ckptstore/streams"
)

// TestEngine is fdbstore's one suite call: every contract's suite on
// tenants of the memkv scheme, each on a fresh engine (storeurl.Open), so
// the registration is proven with the stores. The engine's one Check (the
// checkpoint store's, which walks the tenant's persistence keys too) runs
// after every case. The stream suites' peer, which dumps move to and from,
// is memstore.
func TestEngine(t *testing.T) {
	conformance.RunEngine(t, conformance.OpenURL("memkv"), conformance.EngineOptions{Streams: true, StreamsPeer: memStreams})
}

// memStreams is the stream suites' peer: a memstore driver.
func memStreams(*testing.T) streams.Driver { return memstore.NewStreams() }

// TestConformanceSingleCopy runs the store suite on stores that keep no
// copy under the index, so that every read takes the by-thread path.
func TestConformanceSingleCopy(t *testing.T) {
	conformance.RunStore(t, func(t *testing.T, opts ckptstore.Options) conformance.Store {
		s, _ := newMemStore(t, fdbstore.Options{Options: opts, SingleCopy: true}, memkv.Options{})
		return checked(t, s)
	})
}

// TestConformanceWithFaults runs the whole suite with faults on every
// write transaction; the suite's model and concurrency tests compare the
// reference counts with a recount. Small batch and page sizes make prunes
// and ListBlobReferences span several transactions too.
func TestConformanceWithFaults(t *testing.T) {
	var engines faultyEngines
	conformance.RunStore(t, func(t *testing.T, opts ckptstore.Options) conformance.Store {
		s, err := fdbstore.New(engines.open(t), fdbstore.Options{Options: opts, PruneBatch: 2, BlobPage: 3})
		if err != nil {
			t.Fatal(err)
		}
		return checked(t, s)
	})
	conformance.RunInstanceStore(t, func(t *testing.T) conformance.InstanceStore {
		return fdbstore.NewInstanceStore(engines.open(t), "")
	})
	engines.requireFaults(t)
}

// checked runs Check on s when the test ends: a store that passes the
// suite but breaks an invariant of its keyspace fails too.
func checked(t *testing.T, s *ckptstore.Store) *ckptstore.Store {
	t.Cleanup(func() {
		problems, err := fdbDriver(s).Check(context.Background())
		if err != nil {
			t.Errorf("Check: %v", err)
		}
		for _, p := range problems {
			t.Errorf("Check: %v", p)
		}
	})
	return s
}
