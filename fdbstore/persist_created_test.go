package fdbstore_test

import (
	"context"
	"github.com/ckptstore/ckptstore/fdbstore"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ckptstore/ckptstore/fdbstore/kv"
	"github.com/ckptstore/ckptstore/fdbstore/kv/memkv"
	pdriver "github.com/ckptstore/ckptstore/persist/driver"
)

// unknownOnce commits the next transaction, runs between, then runs the
// transaction again, as kv.Transact does after a commit_unknown_result
// whose commit was applied.
type unknownOnce struct {
	kv.DB
	armed   atomic.Bool
	between func()
}

func (u *unknownOnce) Transact(ctx context.Context, fn func(tr kv.Transaction) error) error {
	if !u.armed.CompareAndSwap(true, false) {
		return u.DB.Transact(ctx, fn)
	}
	if err := u.DB.Transact(ctx, fn); err != nil {
		return err
	}
	u.between()
	return u.DB.Transact(ctx, fn)
}

// TestCreateRetryAnswersItsInsert: a createOrResume whose commit was
// applied but reported unknown, with an update of the run committed before
// the retry, answers with the record it inserted, not the updated one
// (the answer a resume would give, from a state the insert never had).
func TestCreateRetryAnswersItsInsert(t *testing.T) {
	ctx := context.Background()
	db := memkv.New()
	other, err := fdbstore.NewPersistence(db, fdbstore.PersistenceOptions{})
	require.NoError(t, err)
	for _, gen := range []bool{false, true} {
		u := &unknownOnce{DB: db}
		d, err := fdbstore.NewPersistence(u, fdbstore.PersistenceOptions{})
		require.NoError(t, err)
		u.armed.Store(true)
		if gen {
			u.between = func() {
				_, err := other.UpdateGenerationRun(ctx, "g", pdriver.GenerationRunPatch{Status: pdriver.Set(pdriver.RunCompleted)})
				require.NoError(t, err)
			}
			got, err := d.CreateOrResumeGenerationRun(ctx, &pdriver.GenerationRunRecord{RunID: "g", ThreadID: "t", Status: pdriver.RunRunning, StartedAt: 1})
			require.NoError(t, err)
			require.Equal(t, pdriver.RunRunning, got.Status, "the retry answered with the update's state")
		} else {
			u.between = func() {
				_, err := other.UpdateRun(ctx, "r", pdriver.RunPatch{Status: pdriver.Set(pdriver.RunCompleted)})
				require.NoError(t, err)
			}
			got, err := d.CreateOrResumeRun(ctx, &pdriver.RunRecord{RunID: "r", ThreadID: "t", Status: pdriver.RunRunning, StartedAt: 1})
			require.NoError(t, err)
			require.Equal(t, pdriver.RunRunning, got.Status, "the retry answered with the update's state")
		}
		// A later resume answers with the stored, updated run.
		got, err := d.CreateOrResumeRun(ctx, &pdriver.RunRecord{RunID: "r", ThreadID: "t", Status: pdriver.RunRunning, StartedAt: 2})
		require.NoError(t, err)
		require.Equal(t, pdriver.RunCompleted, got.Status)
		checkedPersist(t, d)
	}
}
