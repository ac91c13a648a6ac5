//go:build fdb

package storeurl_test

import (
	"context"
	"strings"
	"testing"

	"github.com/ckptstore/ckptstore/fdbstore"
	"github.com/ckptstore/ckptstore/fdbstore/kv"
	"github.com/ckptstore/ckptstore/internal/fdbtest"
	"github.com/ckptstore/ckptstore/storeurl"
)

// TestPersistenceFDB is TestPersistenceMemkv on the cluster of
// $FDB_CLUSTER_FILE, through the fdb: form. A cluster is shared (with
// the other packages' tests, and with whatever else it holds), so the
// namespaces are the hostile names behind a random run prefix: the keys
// read and cleared are those of the run's namespaces only, and the
// default store's key space is left alone.
func TestPersistenceFDB(t *testing.T) {
	cf := fdbtest.ClusterFile(t)
	o, err := storeurl.Open(context.Background(), "fdb:"+cf, storeurl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.Close() }) // after the clear below: cleanups run last first
	db := o.Handle.(kv.DB)
	run := "test-" + fdbtest.RandomHex() + "-"
	names := make([]string, len(persistNames))
	for i, n := range persistNames {
		names[i] = run + n
	}
	// Every name starts with run and holds no NUL there, so every key of
	// the run's namespaces starts with the tuple string's opening bytes.
	space := kv.PrefixRange([]byte(strings.TrimSuffix(fdbstore.NamespacePrefix(run), "\x00\x00")))
	fdbtest.ClearAtEnd(t, db, space, "the test's namespaces")
	persistIsolation(t, o, names, kvKeys(db, space), func(name, key string) bool {
		return strings.HasPrefix(key, fdbstore.NamespacePrefix(name)) || strings.HasPrefix(key, fdbstore.PersistNamespacePrefix(name))
	})
}
