//go:build fdb

package fdbkv

import (
	"context"

	"github.com/apple/foundationdb/bindings/go/src/fdb"

	"github.com/ckptstore/ckptstore/fdbstore/kv"
)

var _ kv.Watcher = (*DB)(nil)

// Watch implements kv.Watcher with the binding's watch: set in a
// transaction that commits before Watch returns, so a later change fires
// it; cancelled when ctx ends. The channel closes when the watch fires,
// fails (too_many_watches included) or is cancelled.
func (d *DB) Watch(ctx context.Context, key []byte) (<-chan struct{}, error) {
	f, err := d.db.Transact(func(tr fdb.Transaction) (any, error) {
		return tr.Watch(fdb.Key(key)), nil
	})
	if err != nil {
		return nil, err
	}
	w := f.(fdb.FutureNil)
	ch := make(chan struct{})
	stop := context.AfterFunc(ctx, w.Cancel)
	go func() {
		_ = w.Get()
		stop()
		close(ch)
	}()
	return ch, nil
}
