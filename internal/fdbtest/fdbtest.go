// Package fdbtest is what the fdb-tagged tests share to run on a real
// FoundationDB cluster: its cluster file, a random name for the run's
// keys, and their clearing when the test ends. A cluster is shared (with
// the other packages' tests and whatever else it holds), so a test keeps
// to keys under its run's random name and clears only those.
package fdbtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/ckptstore/ckptstore/fdbstore/kv"
)

// ClusterFile returns $FDB_CLUSTER_FILE, and skips t, saying why, when
// it is not set.
func ClusterFile(t testing.TB) string {
	t.Helper()
	cf := os.Getenv("FDB_CLUSTER_FILE")
	if cf == "" {
		t.Skip("FDB_CLUSTER_FILE is not set: no FoundationDB cluster to test against (see docker/README.md)")
	}
	return cf
}

// RandomHex returns 16 random hex digits, a run's name on the cluster.
func RandomHex() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ClearAtEnd clears r in db when t ends; a failure is an error of t
// ("clear what: err").
func ClearAtEnd(t testing.TB, db kv.DB, r kv.KeyRange, what string) {
	t.Cleanup(func() {
		err := db.Transact(context.Background(), func(tr kv.Transaction) error {
			tr.ClearRange(r)
			return nil
		})
		if err != nil {
			t.Errorf("clear %s: %v", what, err)
		}
	})
}
