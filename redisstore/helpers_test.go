package redisstore

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/internal/redistest"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

// backends runs f against miniredis and against a real redis-server (when
// one is installed; see redistest.Start), each with a fresh server.
func backends(t *testing.T, f func(t *testing.T, c redis.UniversalClient)) {
	t.Run("miniredis", func(t *testing.T) { f(t, miniClient(t)) })
	t.Run("redis-server", func(t *testing.T) { f(t, redistest.Start(t).Client(t, nil)) })
}

func miniClient(t testing.TB) *redis.Client {
	m := miniredis.RunT(t)
	return redistest.NewClient(t, m.Addr(), nil)
}

// newClock returns a settable lease clock.
func newClock() *testkit.Clock { return testkit.NewClock(time.UnixMilli(1_700_000_000_000)) }

var prefixSeq atomic.Int64

// newStore returns a store under a prefix no other store of the test run
// uses.
func newStore(t testing.TB, c redis.UniversalClient, o Options) *Driver {
	t.Helper()
	if o.Prefix == "" {
		o.Prefix = fmt.Sprintf("test%d", prefixSeq.Add(1))
	}
	s, err := NewDriver(c, o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var must = testkit.Must

func acquire(t testing.TB, s *Driver, thread string) ckptstore.Writer {
	t.Helper()
	l, err := s.p().AcquireWriter(context.Background(), thread)
	must(t, err)
	return l.Writer
}
