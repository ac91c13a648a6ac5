//go:build !fdb

package storeurl

import "context"

// FDBAvailable reports whether this build can open fdb: stores.
const FDBAvailable = false

// openFDB fails: the FoundationDB binding needs cgo and libfdb_c, so it is
// compiled only with -tags fdb.
func openFDB(context.Context, string, Options) (*Opened, error) {
	return nil, badURL("fdb: stores need a build with -tags fdb (and the foundationdb-clients package), e.g. go run -tags fdb ./cmd/ckptserver")
}
