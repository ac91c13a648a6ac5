//go:build !fdb

package workload

import (
	"context"
	"fmt"
)

// FDBAvailable reports whether this build can open fdb: stores.
const FDBAvailable = false

// openFDB fails: the FoundationDB binding needs cgo and libfdb_c, so it is
// compiled only with -tags fdb.
func openFDB(context.Context, string, StoreConfig) (*Opened, error) {
	return nil, fmt.Errorf("%w: fdb: stores need a build with -tags fdb (and the foundationdb-clients package): go run -tags fdb ./cmd/loadgen", ErrBadSpec)
}
