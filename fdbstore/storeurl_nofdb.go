//go:build !fdb

package fdbstore

import (
	"context"

	"github.com/ckptstore/ckptstore/storeurl"
)

// HasClient reports whether this build has the FoundationDB client
// (-tags fdb), so that storeurl's fdb: URLs open.
const HasClient = false

// openFDBURL fails: the FoundationDB binding needs cgo and libfdb_c, so it
// is compiled only with -tags fdb.
func openFDBURL(context.Context, string, storeurl.Options) (*storeurl.Opened, error) {
	return nil, storeurl.BadURL("fdb: stores need a build with -tags fdb (and the foundationdb-clients package), e.g. go run -tags fdb ./cmd/ckptserver")
}
