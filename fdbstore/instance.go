package fdbstore

// The instance store: one key per record, (P, "n", key) → tuple(provider,
// providerSandboxId, threadId, latestSnapshotId, latestRunId, updatedAt).
// Upsert is a blind Set and Delete a blind Clear, so both are idempotent
// under retries and never conflict; a record is one value, at most
// kv.MaxValueSize bytes.

import (
	"context"
	"fmt"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/fdbstore/internal/tuple"
	"github.com/ckptstore/ckptstore/fdbstore/kv"
)

// instances is the FoundationDB driver.InstanceStore. It is safe for
// concurrent use.
type instances struct {
	db kv.DB
	k  keys
}

// NewInstances returns the InstanceStore that goes with New(db, opts):
// its keys under opts.Prefix (a Store may share the prefix; their keys do
// not overlap). It checks opts as New does, so one Options value serves
// both; an error wraps driver.ErrInvalidOptions. Only the prefix
// matters to the records: the lease and batch options are checked but
// unused.
func NewInstances(db kv.DB, opts Options) (*ckptstore.InstanceStore, error) {
	st, err := NewDriver(db, opts) // the one place that checks Options
	if err != nil {
		return nil, err
	}
	return ckptstore.NewInstanceStore(&instances{db: db, k: st.k}), nil
}

// NewInstanceStore is the shorthand of NewInstances(db,
// Options{Prefix: prefix}) ("" = DefaultPrefix). Unlike NewInstances it
// panics, as on a programming error, when prefix starts with 0xff or is
// longer than MaxPrefixBytes, or db is nil; use NewInstances for a prefix
// that comes from configuration.
func NewInstanceStore(db kv.DB, prefix string) *ckptstore.InstanceStore {
	s, err := NewInstances(db, Options{Prefix: prefix})
	if err != nil {
		panic(err)
	}
	return s
}

// Get implements driver.InstanceStore.
func (s *instances) Get(ctx context.Context, key string) (*ckptstore.InstanceRecord, error) {
	if len(key) > MaxIDBytes {
		return nil, nil // never stored: Upsert rejects it
	}
	var raw []byte
	err := s.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		var err error
		raw, err = tr.Get(s.k.instance(key)).Get()
		return err
	})
	if err != nil || raw == nil {
		return nil, err
	}
	return decodeInstance(key, raw)
}

// Upsert implements driver.InstanceStore. A record whose encoding is
// larger than kv.MaxValueSize fails with ErrInvalidEntry.
func (s *instances) Upsert(ctx context.Context, rec *ckptstore.InstanceRecord) error {
	if rec != nil {
		if err := checkIDLengths(named("instance key", rec.Key)); err != nil {
			return err
		}
	}
	v := tuple.Pack(rec.Provider, rec.ProviderSandboxID, rec.ThreadID, rec.LatestSnapshotID, rec.LatestRunID, rec.UpdatedAt)
	if len(v) > kv.MaxValueSize {
		return fmt.Errorf("%w: instance record %s is %d bytes encoded, more than %d", ckptstore.ErrInvalidEntry, driver.QuoteShort(rec.Key), len(v), kv.MaxValueSize)
	}
	k := s.k.instance(rec.Key)
	return s.db.Transact(ctx, func(tr kv.Transaction) error {
		tr.Set(k, v)
		return nil
	})
}

// Delete implements driver.InstanceStore.
func (s *instances) Delete(ctx context.Context, key string) error {
	if len(key) > MaxIDBytes {
		return nil // never stored
	}
	k := s.k.instance(key)
	return s.db.Transact(ctx, func(tr kv.Transaction) error {
		tr.Clear(k)
		return nil
	})
}

func decodeInstance(key string, raw []byte) (*ckptstore.InstanceRecord, error) {
	t, err := tuple.Unpack(raw)
	if err == nil && len(t) == 6 {
		var r ckptstore.InstanceRecord
		var ok [6]bool
		r.Provider, ok[0] = t[0].(string)
		r.ProviderSandboxID, ok[1] = t[1].(string)
		r.ThreadID, ok[2] = t[2].(string)
		r.LatestSnapshotID, ok[3] = t[3].(string)
		r.LatestRunID, ok[4] = t[4].(string)
		r.UpdatedAt, ok[5] = t[5].(int64)
		if ok == [6]bool{true, true, true, true, true, true} {
			r.Key = key
			return &r, nil
		}
	}
	return nil, fmt.Errorf("%w: instance record %q", ErrCorrupt, key)
}
