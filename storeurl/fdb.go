//go:build fdb

package storeurl

import (
	"context"
	"fmt"

	"github.com/ckptstore/ckptstore/fdbstore/kv/fdbkv"
)

// FDBAvailable reports whether this build can open fdb: stores.
const FDBAvailable = true

// openFDB opens fdbstore on the FoundationDB cluster of clusterFile ("" =
// the client's default cluster file).
func openFDB(_ context.Context, clusterFile string, opts Options) (*Opened, error) {
	db, err := fdbkv.Open(clusterFile)
	if err != nil {
		return nil, fmt.Errorf("fdb %s: %w", clusterFile, err)
	}
	o, err := openFDBStore(db, opts)
	if err != nil {
		db.Close()
		return nil, err
	}
	o.Kind = "fdb"
	o.Desc = fmt.Sprintf("fdb %s (fdbstore on FoundationDB)", clusterFile)
	o.Close = func() error { db.Close(); return nil }
	return o, nil
}
