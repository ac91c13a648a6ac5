package memstore

import (
	"context"
	"sync"

	"github.com/ckptstore/ckptstore"
)

// instances is the in-memory driver.InstanceStore. It is safe for
// concurrent use; records are stored and returned as copies.
type instances struct {
	mu      sync.Mutex
	records map[string]ckptstore.InstanceRecord
}

// NewInstanceStore returns an empty instance store.
func NewInstanceStore() *ckptstore.InstanceStore {
	return ckptstore.NewInstanceStore(&instances{records: make(map[string]ckptstore.InstanceRecord)})
}

// Get implements driver.InstanceStore.
func (s *instances) Get(ctx context.Context, key string) (*ckptstore.InstanceRecord, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.records[key]
	if !ok {
		return nil, nil
	}
	return &r, nil
}

// Upsert implements driver.InstanceStore.
func (s *instances) Upsert(ctx context.Context, rec *ckptstore.InstanceRecord) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records[rec.Key] = *rec
	return nil
}

// Delete implements driver.InstanceStore.
func (s *instances) Delete(ctx context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.records, key)
	return nil
}
