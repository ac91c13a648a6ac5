package fdbstore

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore/fdbstore/kv"
	"github.com/ckptstore/ckptstore/fdbstore/kv/memkv"
	pdriver "github.com/ckptstore/ckptstore/persist/driver"
	"github.com/stretchr/testify/require"
)

func countSpace(t *testing.T, db *memkv.DB, k persistKeys, space string) int {
	t.Helper()
	p := k.space(space)
	var n int
	require.NoError(t, db.ReadTransact(context.Background(), func(tr kv.ReadTransaction) error {
		kvs, err := tr.GetRange(kv.KeyRange{Begin: p, End: kv.Strinc(p)}, kv.RangeOptions{}).Get()
		n = len(kvs)
		return err
	}))
	return n
}

// TestMarkersAreCleared: each marked call's marker is cleared by the next
// write, so a driver keeps one marker however many calls it made.
func TestMarkersAreCleared(t *testing.T) {
	ctx := context.Background()
	db := memkv.New()
	d, err := NewPersistence(db, PersistenceOptions{})
	require.NoError(t, err)
	_, err = d.CreateOrResumeRun(ctx, &pdriver.RunRecord{RunID: "r", ThreadID: "t", Status: pdriver.RunRunning})
	require.NoError(t, err)
	for i := range 20 {
		_, err := d.UpdateRun(ctx, "r", pdriver.RunPatch{DriverEpoch: pdriver.Set(int64(i))})
		require.NoError(t, err)
		require.Equal(t, 1, countSpace(t, db, d.k, spaceOp), "after %d updates", i+1)
	}
	// A marked call that fails keeps the markers it was to clear for the
	// next one.
	_, err = d.AcquireLock(ctx, pdriver.LockRequest{Key: "k", Token: "a", Lease: time.Minute})
	require.NoError(t, err)
	err = d.CommitInterrupts(ctx, []pdriver.InterruptCommitEntry{{InterruptID: "none", Status: pdriver.InterruptCancelled}}, 1, "")
	require.ErrorIs(t, err, pdriver.ErrNotFound)
	require.Equal(t, 1, countSpace(t, db, d.k, spaceOp))
	require.NoError(t, d.SetMetadata(ctx, "n", "k", json.RawMessage(`1`)))
	_, err = d.ReleaseLock(ctx, "k", "a")
	require.NoError(t, err)
	require.Equal(t, 1, countSpace(t, db, d.k, spaceOp))
}

// TestOpTokensExpire: a batch's op token answers a retry while it lives
// and is cleared by a batch two epochs later.
func TestOpTokensExpire(t *testing.T) {
	ctx := context.Background()
	db := memkv.New()
	now := time.UnixMilli(1_700_000_000_000)
	d, err := NewPersistence(db, PersistenceOptions{Now: func() time.Time { return now }})
	require.NoError(t, err)
	for _, id := range []string{"i1", "i2"} {
		require.NoError(t, d.CreateInterrupt(ctx, &pdriver.InterruptRecord{InterruptID: id, RunID: "r", ThreadID: "t", Status: pdriver.InterruptPending, Payload: json.RawMessage(`{}`)}))
	}
	one := []pdriver.InterruptCommitEntry{{InterruptID: "i1", Status: pdriver.InterruptResolved}}
	require.NoError(t, d.CommitInterrupts(ctx, one, 1, "tok"))
	now = now.Add(pdriver.OpTokenTTL - time.Millisecond)
	require.NoError(t, d.CommitInterrupts(ctx, one, 1, "tok"), "a retry within the TTL succeeds")
	now = now.Add(time.Millisecond)
	require.ErrorIs(t, d.CommitInterrupts(ctx, one, 1, "tok"), pdriver.ErrNotPending, "after the TTL the batch runs again")
	require.Equal(t, 1, countSpace(t, db, d.k, spaceIntOp))
	now = now.Add(2 * pdriver.OpTokenTTL)
	require.NoError(t, d.CommitInterrupts(ctx, []pdriver.InterruptCommitEntry{{InterruptID: "i2", Status: pdriver.InterruptCancelled}}, 2, "tok2"))
	require.Equal(t, 1, countSpace(t, db, d.k, spaceIntOp), "the old epoch's token was cleared")
}
