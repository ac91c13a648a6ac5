package memkv

// Watches, as FoundationDB has them: a watch fires after a commit that
// writes its key (a write that leaves the value unchanged fires it too:
// spurious fires are allowed), is set before Watch returns (so no later
// commit is missed), ends with its context, and at most MaxWatches are
// outstanding at once.

import (
	"context"
	"sync"

	"github.com/ckptstore/ckptstore/fdbstore/kv"
)

var _ kv.Watcher = (*DB)(nil)

// watchSet holds a DB's outstanding watches.
type watchSet struct {
	mu    sync.Mutex
	byKey map[string][]chan struct{}
	n     int
	max   int
	fired []string // keys written by the commits applied and not yet published
}

// Watch implements kv.Watcher.
func (db *DB) Watch(ctx context.Context, key []byte) (<-chan struct{}, error) {
	w := &db.watch
	w.mu.Lock()
	max := w.max
	if max == 0 {
		max = kv.DefaultMaxWatches
	}
	if w.n >= max {
		w.mu.Unlock()
		return nil, kv.NewError(kv.CodeTooManyWatches)
	}
	if w.byKey == nil {
		w.byKey = map[string][]chan struct{}{}
	}
	ch := make(chan struct{})
	k := string(key)
	w.byKey[k] = append(w.byKey[k], ch)
	w.n++
	w.mu.Unlock()
	context.AfterFunc(ctx, func() { w.drop(k, ch) })
	return ch, nil
}

// SetMaxWatches sets the limit of outstanding watches (0: the default).
func (db *DB) SetMaxWatches(n int) {
	db.watch.mu.Lock()
	db.watch.max = n
	db.watch.mu.Unlock()
}

// drop ends the watch ch of k, if it is still outstanding.
func (w *watchSet) drop(k string, ch chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	chs := w.byKey[k]
	for i, c := range chs {
		if c == ch {
			close(c)
			w.byKey[k] = append(chs[:i], chs[i+1:]...)
			if len(w.byKey[k]) == 0 {
				delete(w.byKey, k)
			}
			w.n--
			return
		}
	}
}

// noteWrites records the keys of a commit being applied whose watches
// must fire once it is published. Called with db.mu held.
func (w *watchSet) noteWrites(p *commitPlan) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n == 0 {
		return
	}
	for _, e := range p.entries {
		if _, ok := w.byKey[string(e.key)]; ok {
			w.fired = append(w.fired, string(e.key))
		}
	}
	for _, c := range p.clears {
		for k := range w.byKey {
			if k >= string(c.Begin) && k < string(c.End) {
				w.fired = append(w.fired, k)
			}
		}
	}
}

// fire fires the watches of the keys noted, now that their commits are
// visible to new transactions. Called with db.mu held, after publish.
func (w *watchSet) fire() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, k := range w.fired {
		for _, ch := range w.byKey[k] {
			close(ch)
			w.n--
		}
		delete(w.byKey, k)
	}
	w.fired = w.fired[:0]
}
