package fdbdriver

import (
	"context"
	"crypto/rand"
	"encoding/json"

	"github.com/ckptstore/ckptstore/fdbstore/kv"
)

// created runs an insert-if-absent (createOrResume) as one transaction
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
// so a resume stays a read.
func (d *Driver) created(ctx context.Context, key []byte, insert func(tr kv.Transaction)) ([]byte, error) {
	mk := d.k.op(rand.Text())
	clears := d.takeRetired()
	var stored []byte
	wrote, tried := false, false
	err := d.db.Transact(ctx, func(tr kv.Transaction) error {
		m, f := tr.Get(mk), tr.Get(key)
		prev, err := m.Get()
		if err != nil {
			return err
		}
		b, err := f.Get()
		if err != nil {
			return err
		}
		stored, wrote = nil, false
		switch {
		case prev != nil: // an earlier attempt inserted
			return nil
		case b != nil:
			stored = b
			return nil
		}
		v, err := json.Marshal(markerValue{At: d.now().UnixMilli(), Result: json.RawMessage("null")})
		if err != nil {
			return err
		}
		for _, k := range clears {
			tr.Clear(k)
		}
		insert(tr)
		tr.Set(mk, v)
		wrote, tried = true, true
		return nil
	})
	d.mu.Lock()
	defer d.mu.Unlock()
	if tried {
		d.retired = append(d.retired, mk)
	}
	if err != nil || !wrote {
		d.retired = append(d.retired, clears...)
	}
	return stored, err
}
