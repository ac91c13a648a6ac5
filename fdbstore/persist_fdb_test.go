//go:build fdb

package fdbstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"github.com/ckptstore/ckptstore/fdbstore"
	"os"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore/fdbstore/kv"
	"github.com/ckptstore/ckptstore/fdbstore/kv/fdbkv"
	pdriver "github.com/ckptstore/ckptstore/persist/driver"
	"github.com/ckptstore/ckptstore/persist/persisttest"
)

// TestPersistConformanceOnCluster runs the suite on the cluster of
// $FDB_CLUSTER_FILE, each case under its own prefix, cleared at its end.
// A driver waiting on a network cluster keeps a testing/synctest bubble's
// virtual time from advancing, so the lock cases are persisttest's
// real-time ones (RunNetwork): leases of seconds on the real clock, with
// assertions on order, exclusion and the store clock's readings in the
// history, never on timings. memkv runs the synctest ones.
func TestPersistConformanceOnCluster(t *testing.T) {
	cf := os.Getenv("FDB_CLUSTER_FILE")
	if cf == "" {
		t.Skip("FDB_CLUSTER_FILE is not set: no FoundationDB cluster to test against (see docker/README.md)")
	}
	db, err := fdbkv.Open(cf)
	if err != nil {
		t.Fatalf("open %s: %v", cf, err)
	}
	t.Cleanup(db.Close)
	persisttest.RunNetwork(t, func(t *testing.T, now func() time.Time) pdriver.Driver {
		var b [8]byte
		_, _ = rand.Read(b[:])
		p := "ckptstore-test/" + hex.EncodeToString(b[:]) + "/"
		t.Cleanup(func() {
			err := db.Transact(context.Background(), func(tr kv.Transaction) error {
				tr.ClearRange(kv.PrefixRange([]byte(p)))
				return nil
			})
			if err != nil {
				t.Errorf("clear test prefix %q: %v", p, err)
			}
		})
		d, err := fdbstore.NewPersistence(db, fdbstore.PersistenceOptions{Prefix: p, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		return checkedPersist(t, d)
	})
}
