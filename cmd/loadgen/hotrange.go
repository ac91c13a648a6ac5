package main

// The hot-range measurement of memkv runs: memkv's shard model (see
// memkv.DB.Shards) shows where a FoundationDB cluster's write load would
// land. The load starts on a nearly empty store, whose keys say little
// about the shards it will have, so the model is cut again every window
// from the keys stored by then, and the report is the last full window's.

import (
	"sync"
	"time"

	"github.com/ckptstore/ckptstore/fdbstore/kv/memkv"
)

// Shape of the measurement.
const (
	hotRanges = 64              // ranges of the shard model
	hotWindow = 2 * time.Second // how long one cut is counted
)

// shardWatch re-cuts a memkv engine's shard model every hotWindow during
// the load and keeps the report of the last full window.
type shardWatch struct {
	db   *memkv.DB
	stop chan struct{}
	wg   sync.WaitGroup
	mu   sync.Mutex
	last *memkv.ShardReport // the last full window with at least two ranges
}

// startShardWatch starts watching a store's engine (storeurl's
// Opened.Handle); nil (which finish accepts) when it is not a memkv engine.
func startShardWatch(handle any) *shardWatch {
	m, ok := handle.(*memkv.DB)
	if !ok {
		return nil
	}
	w := &shardWatch{db: m, stop: make(chan struct{})}
	m.Shards(hotRanges)
	w.wg.Go(func() {
		t := time.NewTicker(hotWindow)
		defer t.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-t.C:
				w.cut()
			}
		}
	})
	return w
}

// cut closes a window and starts the next from the current keys.
func (w *shardWatch) cut() {
	r := w.db.ShardStats()
	if len(r.Shards) >= 2 && r.Mutations > 0 {
		w.mu.Lock()
		w.last = &r
		w.mu.Unlock()
	}
	w.db.Shards(hotRanges)
}

// finish stops the watch and returns the last full window's report, or
// the partial last window's when the load was shorter than one window;
// nil when nothing was counted.
func (w *shardWatch) finish() *memkv.ShardReport {
	if w == nil {
		return nil
	}
	close(w.stop)
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.last != nil {
		return w.last
	}
	if r := w.db.ShardStats(); r.Mutations > 0 {
		return &r
	}
	return nil
}
