//go:build fdb

package fdbstore_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckptstore/ckptstore/fdbstore"
	"github.com/ckptstore/ckptstore/fdbstore/kv"
	"github.com/ckptstore/ckptstore/fdbstore/kv/fdbkv"
	"github.com/ckptstore/ckptstore/internal/fdbtest"
	"github.com/ckptstore/ckptstore/streams"
	"github.com/ckptstore/ckptstore/streams/streamstest"
)

// TestStreamsDriverOnCluster runs the stream driver suite on the cluster
// of $FDB_CLUSTER_FILE, each case under its own prefix, cleared at its
// end.
func TestStreamsDriverOnCluster(t *testing.T) {
	db := openTestCluster(t)
	streamstest.Run(t, func(t *testing.T) streams.Driver {
		return fdbstore.NewStreams(db, clusterTestPrefix(t, db, "ckptstore-test/streams/"))
	})
}

// TestStreamsWaitOnCluster: two stream drivers on the cluster of
// $FDB_CLUSTER_FILE, each on its own database connection as two servers
// would be; a reader waiting on one wakes, by its watch alone, when the
// other appends and when it closes the stream.
func TestStreamsWaitOnCluster(t *testing.T) {
	db := openTestCluster(t)
	b, err := os.ReadFile(fdbtest.ClusterFile(t))
	if err != nil {
		t.Fatal(err)
	}
	// The binding keeps one connection per cluster file path: a copy of
	// the file is another connection.
	cf2 := filepath.Join(t.TempDir(), "fdb.cluster")
	if err := os.WriteFile(cf2, b, 0o600); err != nil {
		t.Fatal(err)
	}
	db2, err := fdbkv.Open(cf2)
	if err != nil {
		t.Fatalf("open %s: %v", cf2, err)
	}
	t.Cleanup(db2.Close)
	p := clusterTestPrefix(t, db, "ckptstore-test/")
	waitAcrossDrivers(t, fdbstore.NewStreams(db, p), fdbstore.NewStreams(db2, p))
}

// openTestCluster opens the cluster of $FDB_CLUSTER_FILE, or skips the
// test when it is not set.
func openTestCluster(t *testing.T) *fdbkv.DB {
	t.Helper()
	cf := fdbtest.ClusterFile(t)
	db, err := fdbkv.Open(cf)
	if err != nil {
		t.Fatalf("open %s: %v", cf, err)
	}
	t.Cleanup(db.Close)
	return db
}

// clusterTestPrefix returns a fresh key prefix under base for one test
// and clears it when the test ends.
func clusterTestPrefix(t *testing.T, db kv.DB, base string) string {
	p := base + fdbtest.RandomHex() + "/"
	fdbtest.ClearAtEnd(t, db, kv.PrefixRange([]byte(p)), fmt.Sprintf("test prefix %q", p))
	return p
}
