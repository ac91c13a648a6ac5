package redisstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/internal/redistest"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

// leaseClockPair opens two stores on one prefix of c without a test
// clock, as two servers behind a balancer would: both judge leases by the
// Redis server's TIME.
func leaseClockPair(t *testing.T, c redis.UniversalClient, lease time.Duration) (a, b *Driver) {
	t.Helper()
	o := Options{Prefix: "clock", Options: ckptstore.Options{LeaseDuration: lease}}
	return newStore(t, c, o), newStore(t, c, o)
}

// wantLeaseLive checks that both stores see the lease of w on thread as
// live: neither can take the thread, and its holder can write.
func wantLeaseLive(t *testing.T, a, b *Driver, w ckptstore.Writer, id string) {
	t.Helper()
	ctx := context.Background()
	for i, s := range []*Driver{a, b} {
		if _, err := s.p().AcquireWriter(ctx, w.ThreadID); !errors.Is(err, ckptstore.ErrWriterConflict) {
			t.Fatalf("store %d took the live lease: %v, want ErrWriterConflict", i, err)
		}
	}
	head, err := a.GetHead(ctx, w.ThreadID)
	must(t, err)
	must(t, b.p().Append(ctx, testkit.Checkpoint(w.ThreadID, id, head, 1), head, w))
}

// wantLeaseExpired checks that both stores see the lease of w as expired:
// its holder can neither write nor renew, and the other store takes the
// thread.
func wantLeaseExpired(t *testing.T, a, b *Driver, w ckptstore.Writer) {
	t.Helper()
	ctx := context.Background()
	head, err := a.GetHead(ctx, w.ThreadID)
	must(t, err)
	if err := a.p().Append(ctx, testkit.Checkpoint(w.ThreadID, "late", head, 2), head, w); !errors.Is(err, ckptstore.ErrWriterLost) {
		t.Fatalf("append with the expired lease = %v, want ErrWriterLost", err)
	}
	if _, err := a.Renew(ctx, w); !errors.Is(err, ckptstore.ErrWriterLost) {
		t.Fatalf("renew of the expired lease = %v, want ErrWriterLost", err)
	}
	l, err := b.p().AcquireWriter(ctx, w.ThreadID)
	must(t, err)
	if l.Fence != w.Fence+1 {
		t.Fatalf("the takeover's fence is %d, want %d", l.Fence, w.Fence+1)
	}
}

// Writer leases are judged by the server's clock, not the processes':
// on a server whose clock is an hour behind this process's (miniredis,
// whose TIME the test sets), two stores agree that a lease taken by one
// is live for its whole duration on the server's clock, though by the
// process's clock it ended an hour ago, and agree that it has expired once
// the server's clock passes its expiry, though by the process's clock it
// has an hour to go. ExpiresAt is the server's time; RenewAfter, a
// duration, is the configured one.
func TestWriterLeaseServerClock(t *testing.T) {
	ctx := context.Background()
	m := miniredis.RunT(t)
	server := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	m.SetTime(server)
	const lease = time.Minute
	a, b := leaseClockPair(t, redistest.NewClient(t, m.Addr(), nil), lease)

	l, err := a.p().AcquireWriter(ctx, "t")
	must(t, err)
	if want := server.Add(lease); !l.ExpiresAt.Equal(want) {
		t.Fatalf("ExpiresAt = %v, want the server's time + the lease, %v", l.ExpiresAt, want)
	}
	if want := lease / 8 * 3; l.RenewAfter != want {
		t.Fatalf("RenewAfter = %v, want %v", l.RenewAfter, want)
	}
	wantLeaseLive(t, a, b, l.Writer, "c1")

	m.SetTime(server.Add(30 * time.Second))
	exp, err := l.Renew(ctx)
	must(t, err)
	if want := server.Add(30*time.Second + lease); !exp.Equal(want) {
		t.Fatalf("Renew = %v, want the server's time + the lease, %v", exp, want)
	}
	m.SetTime(exp.Add(-time.Millisecond))
	wantLeaseLive(t, a, b, l.Writer, "c2")

	m.SetTime(exp)
	wantLeaseExpired(t, a, b, l.Writer)
}

// On a real redis-server, two stores without a test clock agree on a
// short lease: live until the server's TIME reaches ExpiresAt, which is
// that TIME at the acquire plus the lease, then expired for both.
func TestWriterLeaseServerClockRedis(t *testing.T) {
	ctx := context.Background()
	c := redistest.Start(t).Client(t, nil)
	const lease = 2 * time.Second
	a, b := leaseClockPair(t, c, lease)

	before, err := c.Time(ctx).Result()
	must(t, err)
	l, err := a.p().AcquireWriter(ctx, "t")
	must(t, err)
	after, err := c.Time(ctx).Result()
	must(t, err)
	lo, hi := before.Truncate(time.Millisecond).Add(lease), after.Truncate(time.Millisecond).Add(lease)
	if l.ExpiresAt.Before(lo) || l.ExpiresAt.After(hi) {
		t.Fatalf("ExpiresAt = %v, want the server's TIME at the acquire + %v, in [%v, %v]", l.ExpiresAt, lease, lo, hi)
	}
	x, err := c.HGet(ctx, "{clock}:t:t", "x").Int64()
	must(t, err)
	if x != l.ExpiresAt.UnixMilli() {
		t.Fatalf("the stored expiry is %d ms, ExpiresAt %d ms", x, l.ExpiresAt.UnixMilli())
	}
	wantLeaseLive(t, a, b, l.Writer, "c1")

	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		now, err := c.Time(ctx).Result()
		must(t, err)
		if !now.Before(l.ExpiresAt) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server's TIME %v never reached the expiry %v", now, l.ExpiresAt)
		}
	}
	wantLeaseExpired(t, a, b, l.Writer)
}
