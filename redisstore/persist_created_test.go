package redisstore_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ckptstore/ckptstore/persist/driver"
)

// resendOnce sends the next script, runs between, then sends it again, as
// go-redis does after a reply lost once the script ran.
type resendOnce struct {
	armed   atomic.Bool
	between func()
}

func (h *resendOnce) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *resendOnce) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func (h *resendOnce) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() != "evalsha" || !h.armed.CompareAndSwap(true, false) {
			return next(ctx, cmd)
		}
		if err := next(ctx, cmd); err != nil {
			return err
		}
		h.between()
		return next(ctx, cmd)
	}
}

// TestCreateResendAnswersItsInsert: a createOrResume resent after its
// script ran, with an update of the run in between, answers with the record
// it inserted, not the updated one.
func TestCreateResendAnswersItsInsert(t *testing.T) {
	ctx := context.Background()
	srv, direct := startLoaded(t)
	hooked := srv.Client(t, nil)
	h := &resendOnce{}
	hooked.AddHook(h)
	d := openDriver(t, hooked, "resend-create")
	other := openDriver(t, direct, "resend-create")

	h.between = func() {
		_, err := other.UpdateRun(ctx, "r", driver.RunPatch{Status: driver.Set(driver.RunCompleted)})
		require.NoError(t, err)
	}
	h.armed.Store(true)
	got, err := d.CreateOrResumeRun(ctx, &driver.RunRecord{RunID: "r", ThreadID: "t", Status: driver.RunRunning, StartedAt: 1})
	require.NoError(t, err)
	require.Equal(t, driver.RunRunning, got.Status, "the resend answered with the update's state")

	h.between = func() {
		_, err := other.UpdateGenerationRun(ctx, "g", driver.GenerationRunPatch{Status: driver.Set(driver.RunCompleted)})
		require.NoError(t, err)
	}
	h.armed.Store(true)
	gen, err := d.CreateOrResumeGenerationRun(ctx, &driver.GenerationRunRecord{RunID: "g", ThreadID: "t", Status: driver.RunRunning, StartedAt: 1})
	require.NoError(t, err)
	require.Equal(t, driver.RunRunning, gen.Status, "the resend answered with the update's state")

	// A later resume answers with the stored, updated run.
	got, err = d.CreateOrResumeRun(ctx, &driver.RunRecord{RunID: "r", ThreadID: "t", Status: driver.RunRunning, StartedAt: 2})
	require.NoError(t, err)
	require.Equal(t, driver.RunCompleted, got.Status)
	checkKeyspace(t, direct, "resend-create")
}
