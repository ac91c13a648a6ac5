//go:build fdb

package fdbstore_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore/fdbstore"
	"github.com/ckptstore/ckptstore/fdbstore/kv"
	"github.com/ckptstore/ckptstore/fdbstore/kv/fdbkv"
	"github.com/ckptstore/ckptstore/internal/fdbtest"
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
	cf := fdbtest.ClusterFile(t)
	db, err := fdbkv.Open(cf)
	if err != nil {
		t.Fatalf("open %s: %v", cf, err)
	}
	t.Cleanup(db.Close)
	persisttest.RunNetwork(t, func(t *testing.T, now func() time.Time) pdriver.Driver {
		p := "ckptstore-test/" + fdbtest.RandomHex() + "/"
		fdbtest.ClearAtEnd(t, db, kv.PrefixRange([]byte(p)), fmt.Sprintf("test prefix %q", p))
		d, err := fdbstore.NewPersistence(db, fdbstore.PersistenceOptions{Prefix: p, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		return checkedPersist(t, d)
	})
}
