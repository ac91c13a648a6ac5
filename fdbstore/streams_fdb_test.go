//go:build fdb

package fdbstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/ckptstore/ckptstore/fdbstore"
	"github.com/ckptstore/ckptstore/fdbstore/kv"
	"github.com/ckptstore/ckptstore/fdbstore/kv/fdbkv"
)

// TestStreamsWaitOnCluster: two stream drivers on the cluster of
// $FDB_CLUSTER_FILE, each on its own database connection as two servers
// would be; a reader waiting on one wakes, by its watch alone, when the
// other appends and when it closes the stream.
func TestStreamsWaitOnCluster(t *testing.T) {
	cf := os.Getenv("FDB_CLUSTER_FILE")
	if cf == "" {
		t.Skip("FDB_CLUSTER_FILE is not set: no FoundationDB cluster to test against (see docker/README.md)")
	}
	b, err := os.ReadFile(cf)
	if err != nil {
		t.Fatal(err)
	}
	// The binding keeps one connection per cluster file path: a copy of
	// the file is another connection.
	cf2 := filepath.Join(t.TempDir(), "fdb.cluster")
	if err := os.WriteFile(cf2, b, 0o600); err != nil {
		t.Fatal(err)
	}
	var dbs [2]*fdbkv.DB
	for i, f := range []string{cf, cf2} {
		if dbs[i], err = fdbkv.Open(f); err != nil {
			t.Fatalf("open %s: %v", f, err)
		}
		t.Cleanup(dbs[i].Close)
	}
	var r [8]byte
	_, _ = rand.Read(r[:])
	p := "ckptstore-test/" + hex.EncodeToString(r[:]) + "/"
	t.Cleanup(func() {
		if err := dbs[0].Transact(context.Background(), func(tr kv.Transaction) error {
			tr.ClearRange(kv.PrefixRange([]byte(p)))
			return nil
		}); err != nil {
			t.Errorf("clear test prefix %q: %v", p, err)
		}
	})
	waitAcrossDrivers(t, fdbstore.NewStreams(dbs[0], p), fdbstore.NewStreams(dbs[1], p))
}
