package persist

import (
	"bytes"
	"context"
	"encoding/json"
)

// Metadata is TanStack's MetadataStore: app-owned JSON values under
// (namespace, key). Namespace and key are two fields of the identity, so
// ("a:b", "c") and ("a", "b:c") never meet.
type Metadata struct{ c *core }

// Get returns the stored value, or nil when none is stored. A stored JSON
// null reads as nil too: TanStack's get cannot tell the two apart, and
// neither can this. Check order: ctx, namespace, key (ErrInvalidID).
func (s *Metadata) Get(ctx context.Context, namespace, key string) (json.RawMessage, error) {
	if err := s.check(ctx, namespace, key); err != nil {
		return nil, err
	}
	v, err := s.c.d.GetMetadata(ctx, namespace, key)
	if err != nil || v == nil || string(bytes.TrimSpace(v)) == "null" {
		return nil, err
	}
	return rawClone(v), nil
}

// Set stores value under (namespace, key), replacing any value there.
// Check order: ctx, namespace, key (ErrInvalidID), value present and valid
// JSON (ErrInvalidEntry).
func (s *Metadata) Set(ctx context.Context, namespace, key string, value json.RawMessage) error {
	if err := s.check(ctx, namespace, key); err != nil {
		return err
	}
	if err := CheckMetadataValue(value); err != nil {
		return err
	}
	return s.c.d.SetMetadata(ctx, namespace, key, rawClone(value))
}

// Delete removes (namespace, key); an absent one is a no-op, and other
// namespaces are untouched. Check order: ctx, namespace, key.
func (s *Metadata) Delete(ctx context.Context, namespace, key string) error {
	if err := s.check(ctx, namespace, key); err != nil {
		return err
	}
	return s.c.d.DeleteMetadata(ctx, namespace, key)
}

func (s *Metadata) check(ctx context.Context, namespace, key string) error {
	if err := begin(ctx); err != nil {
		return err
	}
	return CheckMetadataKey(namespace, key)
}
