package redisdriver_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ckptstore/ckptstore/internal/redistest"
	"github.com/ckptstore/ckptstore/persist/driver"
	"github.com/ckptstore/ckptstore/persist/persisttest"
	"github.com/ckptstore/ckptstore/persist/redisdriver"
)

var prefixes atomic.Int64

// newDriver returns a driver on c under a prefix no other test uses, so
// each test starts from an empty store on a shared server.
func newDriver(t *testing.T, c redis.UniversalClient, now func() time.Time) *redisdriver.Driver {
	t.Helper()
	d, err := redisdriver.New(redisdriver.Options{Client: c, Prefix: fmt.Sprintf("t%d", prefixes.Add(1)), Now: now})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	return d
}

// TestConformance runs the suite on a real redis-server, the store's
// clock the suite's (passed to the scripts), with the real-time lock
// cases: the lock subscription waits on the network, which the synctest
// cases' virtual time cannot include.
func TestConformance(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client(t, nil)
	persisttest.RunNetwork(t, func(t *testing.T, now func() time.Time) driver.Driver {
		return newDriver(t, c, now)
	})
}

// TestServerClockLocks runs the real-time lock cases with the server's
// own clock (Options.Now nil: TIME inside the scripts), the setting for
// several processes sharing a store; none of the cases moves the clock.
func TestServerClockLocks(t *testing.T) {
	srv := redistest.Start(t)
	c := srv.Client(t, nil)
	persisttest.RunRealTimeLocks(t, func(t *testing.T, _ func() time.Time) driver.Driver {
		return newDriver(t, c, nil)
	})
}

// TestMiniredis runs the suite on miniredis, which runs the scripts
// (gopher-lua, with cjson) and delivers PUBLISH from a script to
// subscribers.
func TestMiniredis(t *testing.T) {
	m := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	persisttest.RunNetwork(t, func(t *testing.T, now func() time.Time) driver.Driver {
		return newDriver(t, c, now)
	})
}
