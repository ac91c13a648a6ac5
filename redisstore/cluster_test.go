package redisstore

import (
	"context"
	"errors"
	"testing"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/conformance"
	"github.com/ckptstore/ckptstore/internal/redistest"
	"github.com/ckptstore/ckptstore/internal/testkit"
	"github.com/ckptstore/ckptstore/streams"
	"github.com/ckptstore/ckptstore/streams/streamstest"
)

// TestCluster runs the suite on a three-master Redis Cluster through a
// ClusterClient. Each store's prefix hashes to its own slot, so the stores
// land on different masters, and every script stays inside its slot.
func TestCluster(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	c := cl.Client(t)
	t.Run("Conformance", func(t *testing.T) {
		conformance.RunStoreWith(t, func(t *testing.T, opts ckptstore.Options) conformance.Store {
			return checkedStore(t, c, Options{Options: opts}).p()
		}, conformance.Options{ModelChecks: 20})
		conformance.RunInstanceStore(t, func(t *testing.T) conformance.InstanceStore {
			return NewInstanceStore(c, "inst")
		})
	})
	t.Run("Streams", func(t *testing.T) {
		// The stream driver's scripts build a stream's keys from the
		// namespace's hash tag: in a cluster they stay in the slot of the
		// key they declare.
		streamstest.Run(t, func(t *testing.T) streams.Driver {
			d := NewStreams(c, "streams-cluster-"+t.Name())
			t.Cleanup(func() { _ = d.Close() })
			return d
		})
	})
	t.Run("StoresOnEveryMaster", func(t *testing.T) {
		// Stores spread over the masters; each keeps its own keys.
		ctx := context.Background()
		masters := map[string]bool{}
		for i := 0; len(masters) < 3 && i < 64; i++ {
			s := newStore(t, c, Options{})
			w := acquire(t, s, "t")
			must(t, s.p().Append(ctx, testkit.Checkpoint("t", "a", "", 1, 1), "", w))
			testkit.CheckRefs(t, s.p(), "t")
			m, err := c.MasterForKey(ctx, s.keys.refs)
			must(t, err)
			masters[m.Options().Addr] = true
		}
		if len(masters) != 3 {
			t.Fatalf("64 stores used %d masters, want 3", len(masters))
		}
	})
	t.Run("MinReplicas", func(t *testing.T) {
		// The script and WAIT go to the key's master in one pipeline;
		// these masters have no replicas.
		ctx := context.Background()
		s := newStore(t, c, Options{MinReplicas: 1})
		w := acquire(t, newStore(t, c, Options{Prefix: s.opts.Prefix}), "t") // a lease waits too: take it without
		if err := s.p().Append(ctx, testkit.Checkpoint("t", "a", "", 1), "", w); !errors.Is(err, ErrNotReplicated) {
			t.Fatalf("Append = %v, want ErrNotReplicated", err)
		}
		if h, err := s.p().GetHead(ctx, "t"); err != nil || h != "a" {
			t.Fatalf("head %q, %v; the master should have the write", h, err)
		}
	})
}
