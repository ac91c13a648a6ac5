package fdbstore

import (
	"context"

	"github.com/ckptstore/ckptstore/fdbstore/kv"
)

// created runs an insert-if-absent (createOrResume) as one marked call
// that returns the stored value, or nil when this call inserted.
//
// Why a marker. A retry after commit_unknown_result whose first attempt
// committed finds the record it stored; but an update may have committed
// in between, and answering with that updated record would return a state
// the caller's insert never produced (plinz's runs history found this:
// a create returned fields a concurrent patch set after it). So an attempt
// that inserts also writes a marker, read in the same round as the record:
// a retry that finds it knows the call inserted and answers with the
// caller's own record. An attempt that finds the record writes nothing,
// not even a marker, so a resume stays a read.
func (d *Persistence) created(ctx context.Context, key []byte, insert func(tr kv.Transaction)) ([]byte, error) {
	return marked(ctx, d, func(c *call) ([]byte, error) {
		b, done, err := c.get(key)
		if err != nil || done {
			return nil, err
		}
		if b != nil {
			c.readOnly = true
			return b, nil
		}
		insert(c.tr)
		return nil, nil
	})
}
