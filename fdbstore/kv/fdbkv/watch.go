//go:build fdb

package fdbkv

// Watches. The client library counts a handle's outstanding watches and
// fails one past its limit (max_watches) with too_many_watches, but it
// does so on its network thread after the watch's transaction has
// committed: on a cluster the commit returns first and the watch future
// fails a moment later (a few times in twenty at a limit of 2, in this
// package's tests). A caller would read that as a change, read again and
// watch again, and so poll the cluster for as long as the handle stays at
// its limit. So fdbkv keeps the count itself, per shared handle, and
// fails a watch past the limit at once, as memkv does; a watch frees its
// place when its future is done (fired, failed or cancelled), before its
// channel closes. The library's own limit is set to twice fdbkv's, so a
// watch whose end the library has not yet counted does not make it fail
// first; if it ever does, the channel closes, which the kv.Watcher
// contract allows (a spurious fire).

import (
	"context"
	"fmt"
	"sync"

	"github.com/apple/foundationdb/bindings/go/src/fdb"

	"github.com/ckptstore/ckptstore/fdbstore/kv"
)

var _ kv.Watcher = (*DB)(nil)

// MaxMaxWatches is the largest limit SetMaxWatches takes: half the client
// library's own ceiling (1,000,000), whose limit is set to twice fdbkv's.
const MaxMaxWatches = 500_000

// watchCount is a handle's outstanding watches and their limit.
type watchCount struct {
	mu  sync.Mutex
	n   int
	max int
}

// setMax sets the limit (0: kv.DefaultMaxWatches), and the library's to
// twice it.
func (c *watchCount) setMax(db fdb.Database, n int) error {
	if n < 0 || n > MaxMaxWatches {
		return fmt.Errorf("fdbkv: a watch limit of %d: want 0 (the default) to %d", n, MaxMaxWatches)
	}
	if n == 0 {
		n = kv.DefaultMaxWatches
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := db.Options().SetMaxWatches(int64(2 * n)); err != nil {
		return fmt.Errorf("fdbkv: set max_watches %d: %w", 2*n, mapError(err))
	}
	c.max = n
	return nil
}

// take counts one more watch, or fails with too_many_watches at the limit.
func (c *watchCount) take() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n >= c.max {
		return fmt.Errorf("fdbkv: watch: %w", kv.NewError(kv.CodeTooManyWatches))
	}
	c.n++
	return nil
}

func (c *watchCount) done() {
	c.mu.Lock()
	c.n--
	c.mu.Unlock()
}

// Watch implements kv.Watcher with the binding's watch, set in a
// transaction that commits before Watch returns (Transact's loop, so ctx
// bounds it), so a later change fires it; cancelled when ctx ends. The
// channel closes when the watch fires, fails or is cancelled. Past the
// handle's limit (SetMaxWatches) it fails at once with too_many_watches.
func (d *DB) Watch(ctx context.Context, key []byte) (<-chan struct{}, error) {
	if err := d.watches.take(); err != nil {
		return nil, err
	}
	var w fdb.FutureNil
	if err := d.Transact(ctx, func(tr kv.Transaction) error {
		w = tr.(*transaction).tr.Watch(fdb.Key(key))
		return nil
	}); err != nil {
		if w != nil {
			w.Cancel()
		}
		d.watches.done()
		return nil, err
	}
	ch := make(chan struct{})
	stop := context.AfterFunc(ctx, w.Cancel)
	go func() {
		_ = w.Get()
		stop()
		d.watches.done() // before the close: a caller woken by it finds the place free
		close(ch)
	}()
	return ch, nil
}

// SetMaxWatches sets the limit of outstanding watches of the database
// handle (0: kv.DefaultMaxWatches, FoundationDB's default; at most
// MaxMaxWatches). The handle is shared by every DB of the same cluster
// file (see Open), so the limit and the count are theirs too. Lowering
// it ends no outstanding watch.
func (d *DB) SetMaxWatches(n int) error {
	return d.watches.setMax(d.db, n)
}
