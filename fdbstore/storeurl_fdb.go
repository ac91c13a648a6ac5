//go:build fdb

package fdbstore

import (
	"context"
	"fmt"
	"strings"

	"github.com/ckptstore/ckptstore/fdbstore/kv/fdbkv"
	"github.com/ckptstore/ckptstore/storeurl"
)

// HasClient reports whether this build has the FoundationDB client
// (-tags fdb), so that storeurl's fdb: URLs open.
const HasClient = true

// openFDBURL opens fdbstore on the FoundationDB cluster of the URL's
// cluster file ("fdb:" alone = the client's default cluster file).
func openFDBURL(_ context.Context, url string, opts storeurl.Options) (*storeurl.Opened, error) {
	clusterFile := strings.TrimPrefix(url, "fdb:")
	db, err := fdbkv.Open(clusterFile)
	if err != nil {
		return nil, fmt.Errorf("fdb %s: %w", clusterFile, err)
	}
	o, err := openedOn(db, opts)
	if err != nil {
		db.Close()
		return nil, err
	}
	o.Kind = "fdb"
	o.Desc = fmt.Sprintf("fdb %s (fdbstore on FoundationDB)", clusterFile)
	o.Close = func() error { db.Close(); return nil }
	return o, nil
}
