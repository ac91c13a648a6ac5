package redisstore_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	ckptdriver "github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/internal/redistest"
	"github.com/ckptstore/ckptstore/persist/driver"
	"github.com/ckptstore/ckptstore/persist/persisttest"
	"github.com/ckptstore/ckptstore/redisstore"
)

var prefixes atomic.Int64

// newDriver returns a driver on c under a prefix no other test uses, so
// each test starts from an empty store on a shared server.
func newDriver(t *testing.T, c redis.UniversalClient, now func() time.Time) *redisstore.Persistence {
	t.Helper()
	prefix := fmt.Sprintf("t%d", prefixes.Add(1))
	d, err := redisstore.NewPersistence(redisstore.PersistenceOptions{Client: c, Prefix: prefix, Now: now})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	t.Cleanup(func() { // runs before Close: every case ends with a consistent store
		require.Empty(t, engineCheck(t, c, prefix), "Check after the case")
	})
	return d
}

// engineCheck runs the engine's one Check (the checkpoint Driver's, which
// reads the persistence keys too) on prefix.
func engineCheck(t testing.TB, c redis.UniversalClient, prefix string) []ckptdriver.Problem {
	t.Helper()
	s, err := redisstore.NewDriver(c, redisstore.Options{Prefix: prefix})
	require.NoError(t, err)
	problems, err := s.Check(context.Background())
	require.NoError(t, err)
	return problems
}

// suiteDriver is the suite's NewDriver on c.
func suiteDriver(c redis.UniversalClient) persisttest.NewDriver {
	return func(t *testing.T, now func() time.Time) driver.Driver { return newDriver(t, c, now) }
}

// TestServerClockLocks runs the real-time lock cases with the server's
// own clock (Options.Now nil: TIME inside the scripts), the setting for
// several processes sharing a store; none of the cases moves the clock.
func TestServerClockLocks(t *testing.T) {
	t.Parallel() // a server of its own; the lock cases mostly sleep
	srv := redistest.Start(t)
	c := srv.Client(t, nil)
	persisttest.RunRealTimeLocks(t, func(t *testing.T, _ func() time.Time) driver.Driver {
		return newDriver(t, c, nil)
	})
}

// TestPersistCluster runs the suite on a three-master Redis Cluster through a
// ClusterClient: every key of a store is in its prefix's slot, so each
// script stays inside one slot, and the lock scripts' PUBLISH reaches the
// subscription whichever node it is on.
func TestPersistCluster(t *testing.T) {
	t.Parallel() // a server of its own; the lock cases mostly sleep
	cl := redistest.StartCluster(t, 3)
	persisttest.RunNetwork(t, suiteDriver(cl.Client(t)))
}

// TestWatchAcrossReconnect: a watcher waiting while the server restarts is
// woken (a message may have been lost while the subscription was down),
// and a watch taken after the restart sees the next release, so no change
// is missed across the reconnect.
func TestWatchAcrossReconnect(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	c := srv.Client(t, &redis.Options{MaxRetries: 20, MinRetryBackoff: 10 * time.Millisecond, MaxRetryBackoff: 100 * time.Millisecond})
	d := newDriver(t, c, nil)
	before, err := d.WatchLock(ctx, "k")
	require.NoError(t, err)
	srv.Kill()
	srv.Restart(t)
	select {
	case <-before:
	case <-time.After(30 * time.Second):
		t.Fatal("a watcher was not woken when the subscription broke")
	}
	st, err := d.AcquireLock(ctx, driver.LockRequest{Key: "k", Token: "a", Lease: time.Minute})
	require.NoError(t, err)
	require.True(t, st.Held)
	after, err := d.WatchLock(ctx, "k")
	require.NoError(t, err)
	_, err = d.ReleaseLock(ctx, "k", "a")
	require.NoError(t, err)
	select {
	case <-after:
	case <-time.After(30 * time.Second):
		t.Fatal("a release after the reconnect did not fire the watch")
	}
}

// TestPersistDumpWindows runs the export and import cases on a real
// redis-server with SCAN windows of two keys, so that every resume and
// every piece takes several passes.
func TestPersistDumpWindows(t *testing.T) {
	defer redisstore.SetDumpWindow(2)()
	srv := redistest.Start(t)
	persisttest.RunPort(t, suiteDriver(srv.Client(t, nil)))
}
