package conformance

// The instance store rules of docs/contract.md: one record per key, Upsert replaces
// the whole record (optional fields left out are cleared, never merged),
// the last write wins, no other record changes, Delete of a missing key is
// no error, bad keys fail with ErrInvalidID, and reads and writes copy.

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ckptstore/ckptstore"
)

func fullRecord(key string, n int) *ckptstore.InstanceRecord {
	return &ckptstore.InstanceRecord{Key: key, Provider: fmt.Sprintf("provider-%d", n),
		ProviderSandboxID: fmt.Sprintf("sandbox-%d", n), ThreadID: fmt.Sprintf("thread-%d", n),
		LatestSnapshotID: fmt.Sprintf("snap-%d", n), LatestRunID: fmt.Sprintf("run-%d", n),
		UpdatedAt: 1_700_000_000_000 + int64(n)}
}

// istore wraps an instance store under test with assertions.
type istore struct {
	t   *testing.T
	ctx context.Context
	s   InstanceStore
}

func (s istore) upsert(r *ckptstore.InstanceRecord) {
	s.t.Helper()
	require.NoError(s.t, s.s.Upsert(s.ctx, r), "Upsert(%q)", r.Key)
}

func (s istore) want(key string, want *ckptstore.InstanceRecord) {
	s.t.Helper()
	got, err := s.s.Get(s.ctx, key)
	require.NoError(s.t, err, "Get(%q)", key)
	assert.Equal(s.t, want, got, "Get(%q)", key)
}

// kept upserts r and checks that Get returns r as it was before the
// Upsert.
func (s istore) kept(r *ckptstore.InstanceRecord) {
	s.t.Helper()
	want := *r
	s.upsert(r)
	s.want(r.Key, &want)
}

// instanceFactory makes a fresh instance store for each subtest of
// runInstanceStore.
type instanceFactory func(*testing.T) InstanceStore

// fresh returns a new, empty instance store wrapped with assertions.
func (f instanceFactory) fresh(t *testing.T) istore {
	t.Helper()
	s := f(t)
	if s == nil {
		t.Fatal("newStore returned nil")
	}
	return istore{t: t, ctx: context.Background(), s: s}
}

func runInstanceStore(t *testing.T, newStore func(*testing.T) InstanceStore) {
	f := instanceFactory(newStore)
	t.Run("Empty", f.instanceStoreEmpty)
	t.Run("RoundTrip", f.instanceStoreRoundTrip)
	t.Run("FullReplaceClearsOptional", f.instanceStoreFullReplaceClearsOptional)
	t.Run("LastWriteWins", f.instanceStoreLastWriteWins)
	t.Run("OtherRecordsUnchanged", f.instanceStoreOtherRecordsUnchanged)
	t.Run("Delete", f.instanceStoreDelete)
	t.Run("InvalidKey", f.instanceStoreInvalidKey)
	t.Run("Copies", f.instanceStoreCopies)
	t.Run("Concurrent", f.instanceStoreConcurrent)
	t.Run("Context", f.instanceStoreContext)
}

func (f instanceFactory) instanceStoreEmpty(t *testing.T) {
	s := f.fresh(t)
	s.want("missing", nil)
	require.NoError(t, s.s.Delete(s.ctx, "missing"), "Delete(missing)")
	s.want("missing", nil)
}

func (f instanceFactory) instanceStoreRoundTrip(t *testing.T) {
	s := f.fresh(t)
	s.kept(fullRecord("full", 1))
	s.kept(&ckptstore.InstanceRecord{Key: "minimal", Provider: "p", ProviderSandboxID: "s", ThreadID: "t"})
	for i, key := range unusualIDs {
		s.kept(fullRecord(key, i))
	}
	for _, at := range []int64{0, -1, maxSize, -maxSize} {
		r := fullRecord("time", 0)
		r.UpdatedAt = at
		s.kept(r)
	}
}

func (f instanceFactory) instanceStoreFullReplaceClearsOptional(t *testing.T) {
	s := f.fresh(t)
	s.upsert(fullRecord("k", 1))
	next := &ckptstore.InstanceRecord{Key: "k", Provider: "p2", ProviderSandboxID: "s2", ThreadID: "t2", UpdatedAt: 5}
	s.kept(next)
	only := *next
	only.LatestRunID = "run-only"
	s.kept(&only)
}

func (f instanceFactory) instanceStoreLastWriteWins(t *testing.T) {
	s := f.fresh(t)
	for i := 0; i < 5; i++ {
		s.upsert(fullRecord("k", i))
	}
	s.want("k", fullRecord("k", 4))
	s.kept(fullRecord("k", 0)) // an older updatedAt still replaces: last write, not newest time
}

func (f instanceFactory) instanceStoreOtherRecordsUnchanged(t *testing.T) {
	s := f.fresh(t)
	keys := []string{"a", "a:b", "a\x00", "a*", "b", "ab"}
	for i, k := range keys {
		s.upsert(fullRecord(k, i))
	}
	s.upsert(fullRecord("a", 99))
	require.NoError(t, s.s.Delete(s.ctx, "a:b"), "Delete(a:b)")
	s.want("a", fullRecord("a", 99))
	s.want("a:b", nil)
	for i, k := range keys[2:] {
		s.want(k, fullRecord(k, i+2))
	}
}

func (f instanceFactory) instanceStoreDelete(t *testing.T) {
	s := f.fresh(t)
	s.upsert(fullRecord("k", 1))
	require.NoError(t, s.s.Delete(s.ctx, "k"), "Delete(k)")
	s.want("k", nil)
	require.NoError(t, s.s.Delete(s.ctx, "k"), "Delete(k) again")
	s.kept(&ckptstore.InstanceRecord{Key: "k", Provider: "p", ProviderSandboxID: "s", ThreadID: "t"})
}

func (f instanceFactory) instanceStoreInvalidKey(t *testing.T) {
	s := f.fresh(t)
	s.upsert(fullRecord("k", 1))
	for _, bad := range invalidIDs {
		wantErr(t, "Get("+bad.name+")", errOf(s.s.Get(s.ctx, bad.id)), ckptstore.ErrInvalidID)
		wantErr(t, "Upsert("+bad.name+")", s.s.Upsert(s.ctx, fullRecord(bad.id, 2)), ckptstore.ErrInvalidID)
		wantErr(t, "Delete("+bad.name+")", s.s.Delete(s.ctx, bad.id), ckptstore.ErrInvalidID)
	}
	s.want("k", fullRecord("k", 1))
}

func (f instanceFactory) instanceStoreCopies(t *testing.T) {
	s := f.fresh(t)
	r := fullRecord("k", 1)
	s.upsert(r)
	r.Provider, r.LatestRunID, r.UpdatedAt = "changed", "", 0
	s.want("k", fullRecord("k", 1))
	got, err := s.s.Get(s.ctx, "k")
	require.NoError(t, err, "Get(k)")
	got.Provider, got.Key, got.LatestSnapshotID = "changed", "other", ""
	s.want("k", fullRecord("k", 1))
}

func (f instanceFactory) instanceStoreConcurrent(t *testing.T) {
	s := f.fresh(t)
	var wg sync.WaitGroup
	for g := 0; g < raceWorkers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 4; i++ {
				if err := s.s.Upsert(s.ctx, fullRecord(fmt.Sprintf("own-%d", g), i)); err != nil {
					t.Errorf("Upsert(own-%d): %v", g, err)
				}
				if err := s.s.Upsert(s.ctx, fullRecord("shared", g*10+i)); err != nil {
					t.Errorf("Upsert(shared): %v", err)
				}
			}
		}()
	}
	wg.Wait()
	for g := 0; g < raceWorkers; g++ {
		s.want(fmt.Sprintf("own-%d", g), fullRecord(fmt.Sprintf("own-%d", g), 3))
	}
	got, err := s.s.Get(s.ctx, "shared")
	require.NoError(t, err, "Get(shared)")
	ok := false
	for n := 0; got != nil && n < raceWorkers*10; n++ {
		ok = ok || *got == *fullRecord("shared", n)
	}
	if !ok {
		t.Errorf("Get(shared) = %+v: not one of the records written (a merge?)", got)
	}
}

func (f instanceFactory) instanceStoreContext(t *testing.T) {
	s := f.fresh(t)
	s.upsert(fullRecord("k", 1))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	wantCanceled(t, "Get", errOf(s.s.Get(ctx, "k")))
	wantCanceled(t, "Upsert", s.s.Upsert(ctx, fullRecord("k", 2)))
	wantCanceled(t, "Delete", s.s.Delete(ctx, "k"))
	s.want("k", fullRecord("k", 1))
}

// wantCanceled expects an error that wraps context.Canceled and is no
// contract error.
func wantCanceled(t tb, what string, err error) {
	t.Helper()
	if assert.ErrorIs(t, err, context.Canceled, "%s with a cancelled context", what) {
		assert.Empty(t, ckptstore.Code(err), "%s with a cancelled context: the contract code of %q", what, err)
	}
}
