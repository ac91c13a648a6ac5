//go:build fdb

package workload

import (
	"context"
	"fmt"

	"github.com/ckptstore/ckptstore/fdbstore"
	"github.com/ckptstore/ckptstore/fdbstore/kv/fdbkv"
)

// FDBAvailable reports whether this build can open fdb: stores.
const FDBAvailable = true

// openFDB opens fdbstore on the FoundationDB cluster of clusterFile ("" =
// the client's default cluster file).
func openFDB(_ context.Context, clusterFile string, cfg StoreConfig) (*Opened, error) {
	db, err := fdbkv.Open(clusterFile)
	if err != nil {
		return nil, fmt.Errorf("fdb %s: %w", clusterFile, err)
	}
	st, err := fdbstore.New(db, fdbstore.Options{Options: cfg.Lease})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("%w: %v", ErrBadSpec, err)
	}
	return &Opened{
		Store: st,
		Kind:  "fdb",
		Desc:  fmt.Sprintf("fdb %s (fdbstore on FoundationDB)", clusterFile),
		Close: func() error { db.Close(); return nil },
	}, nil
}
