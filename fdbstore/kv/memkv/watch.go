package memkv

// Watches, as FoundationDB has them: a watch remembers its key's value
// when it is set and fires after a commit that leaves the key with another
// value (or makes it exist or not); a write of the same value does not
// fire it, nor does a batch of commits that changes the value and changes
// it back (FoundationDB "might not report" that either). It is set under
// the commit lock before Watch returns, so no commit published after
// Watch returns is missed. It ends with its context, and at most
// MaxWatches are outstanding at once: one past the limit fails at once
// with too_many_watches, and a fired or cancelled watch frees its place
// at once, as on a FoundationDB database handle (fdbkv's cluster tests
// check the same cases there).

import (
	"bytes"
	"context"
	"sync"

	"github.com/ckptstore/ckptstore/fdbstore/kv"
)

var _ kv.Watcher = (*DB)(nil)

// watchSet holds a DB's outstanding watches.
type watchSet struct {
	mu    sync.Mutex
	byKey map[string][]*watch
	n     int
	max   int
	noted []string // keys written by the commits applied and not yet published
}

// watch is one outstanding watch: the value its key had when it was set.
type watch struct {
	ch      chan struct{}
	value   []byte
	present bool
}

// Watch implements kv.Watcher.
func (db *DB) Watch(ctx context.Context, key []byte) (<-chan struct{}, error) {
	// Under db.mu no commit is half applied: master is the published
	// state, and every later commit notes its keys after the watch is in.
	db.mu.Lock()
	defer db.mu.Unlock()
	w := &db.watch
	w.mu.Lock()
	defer w.mu.Unlock()
	max := w.max
	if max == 0 {
		max = kv.DefaultMaxWatches
	}
	if w.n >= max {
		return nil, kv.NewError(kv.CodeTooManyWatches)
	}
	if w.byKey == nil {
		w.byKey = map[string][]*watch{}
	}
	k := string(key)
	wt := &watch{ch: make(chan struct{})}
	wt.value, wt.present = db.lookup(key)
	w.byKey[k] = append(w.byKey[k], wt)
	w.n++
	context.AfterFunc(ctx, func() { w.drop(k, wt) })
	return wt.ch, nil
}

// lookup returns key's value in master. Called with db.mu held.
func (db *DB) lookup(key []byte) ([]byte, bool) {
	it, ok := db.master.Get(&item{key: key})
	if !ok {
		return nil, false
	}
	return it.value, true
}

// SetMaxWatches sets the limit of outstanding watches (0: the default),
// as FoundationDB's max_watches database option does: lowering it ends no
// outstanding watch.
func (db *DB) SetMaxWatches(n int) {
	db.watch.mu.Lock()
	db.watch.max = n
	db.watch.mu.Unlock()
}

// drop ends the watch wt of k, if it is still outstanding.
func (w *watchSet) drop(k string, wt *watch) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ws := w.byKey[k]
	for i, c := range ws {
		if c == wt {
			close(c.ch)
			w.byKey[k] = append(ws[:i], ws[i+1:]...)
			if len(w.byKey[k]) == 0 {
				delete(w.byKey, k)
			}
			w.n--
			return
		}
	}
}

// noteWrites records the watched keys a commit being applied writes, to
// be compared once the batch is published. Called with db.mu held.
func (w *watchSet) noteWrites(p *commitPlan) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n == 0 {
		return
	}
	for _, e := range p.entries {
		if _, ok := w.byKey[string(e.key)]; ok {
			w.noted = append(w.noted, string(e.key))
		}
	}
	for _, c := range p.clears {
		for k := range w.byKey {
			if k >= string(c.Begin) && k < string(c.End) {
				w.noted = append(w.noted, k)
			}
		}
	}
}

// fireWatches fires the watches of the keys noted whose value now differs from
// the one they were set with, now that the commits are visible to new
// transactions. Called with db.mu held, after publish.
func (db *DB) fireWatches() {
	w := &db.watch
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, k := range w.noted {
		ws := w.byKey[k]
		if len(ws) == 0 {
			continue // fired by an earlier note of k
		}
		v, present := db.lookup([]byte(k))
		kept := ws[:0]
		for _, wt := range ws {
			if wt.present == present && bytes.Equal(wt.value, v) {
				kept = append(kept, wt)
				continue
			}
			close(wt.ch)
			w.n--
		}
		clear(ws[len(kept):])
		if len(kept) == 0 {
			delete(w.byKey, k)
		} else {
			w.byKey[k] = kept
		}
	}
	clear(w.noted)
	w.noted = w.noted[:0]
}
