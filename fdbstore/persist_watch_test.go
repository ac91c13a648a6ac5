package fdbstore_test

import (
	"context"
	"github.com/ckptstore/ckptstore/fdbstore"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ckptstore/ckptstore/fdbstore/kv/memkv"
	pdriver "github.com/ckptstore/ckptstore/persist/driver"
	"github.com/stretchr/testify/require"
)

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestWatchAcrossDrivers: two Driver values on one engine stand for two
// processes. A release through one wakes a watcher of the other within
// WatchPoll, never before a change; a waiter renewing its place is not a
// change; a release through the watcher's own Driver wakes it at once;
// cancelling the watch ends its poll.
func TestWatchAcrossDrivers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := memkv.New()
		opts := fdbstore.PersistenceOptions{WatchPoll: time.Second}
		d1, err := fdbstore.NewPersistence(db, opts)
		require.NoError(t, err)
		d2, err := fdbstore.NewPersistence(db, opts)
		require.NoError(t, err)
		req := func(tok string) pdriver.LockRequest {
			return pdriver.LockRequest{Key: "k", Token: tok, Lease: time.Hour}
		}
		st, err := d2.AcquireLock(ctx, req("holder"))
		require.NoError(t, err)
		require.True(t, st.Held)
		st, err = d1.AcquireLock(ctx, req("waiter"))
		require.NoError(t, err)
		require.False(t, st.Held)

		wctx, stop := context.WithCancel(ctx)
		ch, err := d1.WatchLock(wctx, "k")
		require.NoError(t, err)
		require.NotNil(t, ch)
		// The waiter keeps its place: no change for waiters.
		_, err = d1.AcquireLock(ctx, req("waiter"))
		require.NoError(t, err)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		require.False(t, closed(ch), "the watch fired with no change")

		_, err = d2.ReleaseLock(ctx, "k", "holder")
		require.NoError(t, err)
		released := time.Now()
		<-ch
		require.LessOrEqual(t, time.Since(released), opts.WatchPoll, "another process's release was seen within WatchPoll")
		stop()

		// In one process the release wakes at once.
		st, err = d1.AcquireLock(ctx, req("waiter"))
		require.NoError(t, err)
		require.True(t, st.Held)
		wctx, stop = context.WithCancel(ctx)
		defer stop()
		ch, err = d1.WatchLock(wctx, "k")
		require.NoError(t, err)
		_, err = d1.ReleaseLock(ctx, "k", "waiter")
		require.NoError(t, err)
		require.True(t, closed(ch), "a release through the same Driver fired the watch at once")
	})
}

// TestWatchWithoutPoll: WatchPoll < 0 keeps no goroutine and reads
// nothing; the watch fires on a change through the same Driver.
func TestWatchWithoutPoll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		db := memkv.New()
		d, err := fdbstore.NewPersistence(db, fdbstore.PersistenceOptions{WatchPoll: -1})
		require.NoError(t, err)
		wctx, stop := context.WithCancel(ctx)
		defer stop()
		db.ResetStats()
		ch, err := d.WatchLock(wctx, "k")
		require.NoError(t, err)
		require.Zero(t, db.Stats().Reads)
		_, err = d.AcquireLock(ctx, pdriver.LockRequest{Key: "k", Token: "a", Lease: time.Minute})
		require.NoError(t, err)
		require.True(t, closed(ch))
	})
}
