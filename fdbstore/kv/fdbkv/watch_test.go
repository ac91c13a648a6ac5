//go:build fdb

package fdbkv_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ckptstore/ckptstore/fdbstore/kv/fdbkv"
	"github.com/ckptstore/ckptstore/fdbstore/kv/kvtest"
)

// secondHandle opens another database connection to the cluster of
// $FDB_CLUSTER_FILE, as another server would have: the binding keeps one
// handle per cluster file path, so it opens a copy of the file. Its watch
// limit is its own.
func secondHandle(t *testing.T) *fdbkv.DB {
	t.Helper()
	b, err := os.ReadFile(os.Getenv("FDB_CLUSTER_FILE"))
	if err != nil {
		t.Fatal(err)
	}
	cf := filepath.Join(t.TempDir(), "fdb.cluster")
	if err := os.WriteFile(cf, b, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := fdbkv.Open(cf)
	if err != nil {
		t.Fatalf("open a second handle: %v", err)
	}
	t.Cleanup(db.Close)
	return db
}

// TestWatch holds the binding's watches to the suite memkv passes: a
// commit through one handle fires a watch set through another, a
// cancelled context ends it, and the per-handle limit fails a watch past
// it at once and frees a place when a watch fires or is cancelled.
func TestWatch(t *testing.T) {
	db := openCluster(t)
	other := secondHandle(t)
	kvtest.RunWatch(t, kvtest.WatchEnv{
		DB: db, Watcher: other, SetMaxWatches: other.SetMaxWatches,
		Prefix: string(testPrefix(t, db)),
	})
}
