package fdbstore

import (
	"context"
	"errors"

	"github.com/ckptstore/ckptstore/fdbstore/kv"
)

// Watch forwards kv.Watcher to the traced database, so TraceDB keeps the
// watches of the database it wraps.
func (d *tracedDB) Watch(ctx context.Context, key []byte) (<-chan struct{}, error) {
	w, ok := d.db.(kv.Watcher)
	if !ok {
		return nil, errNoWatches
	}
	return w.Watch(ctx, key)
}

var errNoWatches = errors.New("fdbstore: the database has no watches")
