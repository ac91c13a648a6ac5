//go:build fdb

package fdbkv

import (
	"context"
	"fmt"

	"github.com/apple/foundationdb/bindings/go/src/fdb"

	"github.com/ckptstore/ckptstore/fdbstore/kv"
)

var _ kv.Watcher = (*DB)(nil)

// Watch implements kv.Watcher with the binding's watch, set in a
// transaction that commits before Watch returns (Transact's loop, so ctx
// bounds it), so a later change fires it; cancelled when ctx ends. The
// channel closes when the watch fires, fails or is cancelled.
//
// Past the handle's limit the binding does not fail the transaction: the
// watch future is ready with too_many_watches once the commit returns.
// Watch reports that as its error, as memkv does, so a caller falls back
// to another wait instead of reading a closed channel as a change (which
// would make a waiting loop spin).
func (d *DB) Watch(ctx context.Context, key []byte) (<-chan struct{}, error) {
	var w fdb.FutureNil
	if err := d.Transact(ctx, func(tr kv.Transaction) error {
		w = tr.(*transaction).tr.Watch(fdb.Key(key))
		return nil
	}); err != nil {
		if w != nil {
			w.Cancel()
		}
		return nil, err
	}
	if w.IsReady() {
		if err := mapError(w.Get()); kv.ErrorCode(err) == kv.CodeTooManyWatches {
			return nil, fmt.Errorf("fdbkv: watch: %w", err)
		}
	}
	ch := make(chan struct{})
	stop := context.AfterFunc(ctx, w.Cancel)
	go func() {
		_ = w.Get()
		stop()
		close(ch)
	}()
	return ch, nil
}

// SetMaxWatches sets the limit of outstanding watches of the database
// handle (FoundationDB's max_watches option; the binding's default is
// kv.DefaultMaxWatches). The handle is shared by every DB of the same
// cluster file (see Open), so the limit is theirs too. Lowering it ends
// no outstanding watch.
func (d *DB) SetMaxWatches(n int) error {
	if err := d.db.Options().SetMaxWatches(int64(n)); err != nil {
		return fmt.Errorf("fdbkv: set max_watches %d: %w", n, mapError(err))
	}
	return nil
}
