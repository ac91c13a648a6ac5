//go:build fdb

package fdbkv_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"testing"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/conformance"
	"github.com/ckptstore/ckptstore/fdbstore"
	"github.com/ckptstore/ckptstore/fdbstore/internal/storetest"
	"github.com/ckptstore/ckptstore/fdbstore/kv"
	"github.com/ckptstore/ckptstore/fdbstore/kv/fdbkv"
	"github.com/ckptstore/ckptstore/fdbstore/kv/kvtest"
)

// openCluster opens the cluster of $FDB_CLUSTER_FILE, or skips the test
// when it is not set.
func openCluster(t *testing.T) *fdbkv.DB {
	t.Helper()
	cf := os.Getenv("FDB_CLUSTER_FILE")
	if cf == "" {
		t.Skip("FDB_CLUSTER_FILE is not set: no FoundationDB cluster to test against (see docker/README.md)")
	}
	db, err := fdbkv.Open(cf)
	if err != nil {
		t.Fatalf("open %s: %v", cf, err)
	}
	t.Cleanup(db.Close)
	return db
}

// testPrefix returns a fresh key prefix for one test and clears everything
// under it when the test ends, so tests never see each other's data and
// leave nothing behind.
func testPrefix(t *testing.T, db *fdbkv.DB) []byte {
	t.Helper()
	var b [8]byte
	_, _ = rand.Read(b[:])
	p := []byte("ckptstore-test/" + hex.EncodeToString(b[:]) + "/")
	t.Cleanup(func() {
		err := db.Transact(context.Background(), func(tr kv.Transaction) error {
			tr.ClearRange(kv.PrefixRange(p))
			return nil
		})
		if err != nil {
			t.Errorf("clear test prefix %q: %v", p, err)
		}
	})
	return p
}

// TestKV holds the adapter to the same kv semantics suite as memkv.
func TestKV(t *testing.T) {
	db := openCluster(t)
	kvtest.Run(t, func(t *testing.T) kvtest.Env { return kvtest.Env{DB: db, Prefix: string(testPrefix(t, db))} })
}

// TestConformance runs the store suites against the real cluster, each
// store in its own prefix.
func TestConformance(t *testing.T) {
	db := openCluster(t)
	conformance.RunStore(t, func(t *testing.T, opts ckptstore.Options) conformance.Store {
		s, err := fdbstore.New(db, fdbstore.Options{Options: opts, Prefix: string(testPrefix(t, db))})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
	conformance.RunInstanceStore(t, func(t *testing.T) conformance.InstanceStore {
		return fdbstore.NewInstanceStore(db, string(testPrefix(t, db)))
	})
}

// TestConformanceSmallBatches runs the store suite again with prunes and
// ListBlobReferences spread over many small transactions.
func TestConformanceSmallBatches(t *testing.T) {
	db := openCluster(t)
	conformance.RunStoreWith(t, func(t *testing.T, opts ckptstore.Options) conformance.Store {
		s, err := fdbstore.New(db, fdbstore.Options{Options: opts, Prefix: string(testPrefix(t, db)), PruneBatch: 2, BlobPage: 3})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}, conformance.Options{ModelChecks: 30})
}

// TestStore runs fdbstore's engine-independent tests on the cluster; its
// TooLarge case checks the store's transaction-size estimates against
// FoundationDB's own 10 MB limit.
func TestStore(t *testing.T) {
	db := openCluster(t)
	storetest.Run(t, func(t *testing.T) storetest.Env {
		return storetest.Env{DB: db, Prefix: string(testPrefix(t, db))}
	})
}

// TestOpenShares: two DBs of one cluster file share the binding's handle;
// closing one leaves the other usable, and the closed one refuses
// transactions with ErrClosed (it crashed in C before).
func TestOpenShares(t *testing.T) {
	a := openCluster(t)
	b, err := fdbkv.Open(os.Getenv("FDB_CLUSTER_FILE"))
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
	b.Close() // idempotent
	if err := b.ReadTransact(context.Background(), func(kv.ReadTransaction) error { return nil }); !errors.Is(err, fdbkv.ErrClosed) {
		t.Fatalf("a transaction on a closed DB: %v, want ErrClosed", err)
	}
	p := testPrefix(t, a)
	err = a.Transact(context.Background(), func(tr kv.Transaction) error {
		tr.Set(append(p, 'k'), []byte("v"))
		return nil
	})
	if err != nil {
		t.Fatalf("the first DB stopped working after the second was closed: %v", err)
	}
}
