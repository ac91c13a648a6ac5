package memstore

import (
	"context"
	"sync"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/precheck"
)

// InstanceStore is the in-memory ckptstore.InstanceStore. It is safe for
// concurrent use; records are stored and returned as copies.
type InstanceStore struct {
	mu      sync.Mutex
	records map[string]ckptstore.InstanceRecord
}

var _ ckptstore.InstanceStore = (*InstanceStore)(nil)

// NewInstanceStore returns an empty instance store.
func NewInstanceStore() *InstanceStore {
	return &InstanceStore{records: make(map[string]ckptstore.InstanceRecord)}
}

// Get implements ckptstore.InstanceStore.
func (s *InstanceStore) Get(ctx context.Context, key string) (*ckptstore.InstanceRecord, error) {
	if err := precheck.InstanceKey(ctx, key); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.records[key]
	if !ok {
		return nil, nil
	}
	return &r, nil
}

// Upsert implements ckptstore.InstanceStore.
func (s *InstanceStore) Upsert(ctx context.Context, rec *ckptstore.InstanceRecord) error {
	if err := precheck.InstanceUpsert(ctx, rec); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records[rec.Key] = *rec
	return nil
}

// Delete implements ckptstore.InstanceStore.
func (s *InstanceStore) Delete(ctx context.Context, key string) error {
	if err := precheck.InstanceKey(ctx, key); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.records, key)
	return nil
}
