package workload

// The store opener moved to package storeurl, which loadgen, the benchmarks
// and ckptserver share; these names keep the workload's tests and any
// caller of the old spelling working.

import (
	"context"

	"github.com/ckptstore/ckptstore/storeurl"
)

// ErrBadSpec is storeurl.ErrBadURL.
var ErrBadSpec = storeurl.ErrBadURL

// StoreConfig is storeurl.Options.
type StoreConfig = storeurl.Options

// Opened is storeurl.Opened.
type Opened = storeurl.Opened

// Specs is storeurl.Forms.
func Specs() string { return storeurl.Forms() }

// Open is storeurl.Open.
func Open(ctx context.Context, spec string, cfg StoreConfig) (*Opened, error) {
	return storeurl.Open(ctx, spec, cfg)
}
