//go:build fdb

package fdbdriver_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore/fdbstore/kv"
	"github.com/ckptstore/ckptstore/fdbstore/kv/fdbkv"
	"github.com/ckptstore/ckptstore/persist/driver"
	"github.com/ckptstore/ckptstore/persist/fdbdriver"
	"github.com/ckptstore/ckptstore/persist/persisttest"
)

// TestConformanceOnCluster runs the suite on the cluster of
// $FDB_CLUSTER_FILE, each case under its own prefix, cleared at its end.
// The lock cases are skipped there: they run in a testing/synctest bubble
// and assert exact virtual times, which a driver waiting on a network
// cluster cannot keep (see persisttest's package doc); memkv runs them.
func TestConformanceOnCluster(t *testing.T) {
	cf := os.Getenv("FDB_CLUSTER_FILE")
	if cf == "" {
		t.Skip("FDB_CLUSTER_FILE is not set: no FoundationDB cluster to test against (see docker/README.md)")
	}
	db, err := fdbkv.Open(cf)
	if err != nil {
		t.Fatalf("open %s: %v", cf, err)
	}
	t.Cleanup(db.Close)
	persisttest.Run(t, func(t *testing.T, now func() time.Time) driver.Driver {
		if strings.Contains(t.Name(), "/Locks/") {
			t.Skip("the lock cases assert virtual times in a synctest bubble; they run on memkv")
		}
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
		d, err := fdbdriver.New(db, fdbdriver.Options{Prefix: p, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		return checked(t, d)
	})
}
