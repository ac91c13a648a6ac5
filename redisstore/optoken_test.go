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

// An AcquireWriter repeated with the caller's op token after its lease
// ended reports that lease again (which writes no longer accept) instead
// of taking a second lease with the same owner token; a malformed token is
// refused before anything is written.
func TestAcquireWriterOpTokenAfterRelease(t *testing.T) {
	backends(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := ckptstore.WithOpToken(context.Background(), "acquire-once")
		s := newStore(t, c, Options{})
		l, err := s.p().AcquireWriter(ctx, "t")
		must(t, err)
		l.Release(context.Background())
		again, err := s.p().AcquireWriter(ctx, "t")
		must(t, err)
		if again.Writer != l.Writer || !again.ExpiresAt.Equal(l.ExpiresAt) {
			t.Fatalf("the repeat returned %+v, want the first lease %+v", again.Writer, l.Writer)
		}
		if err := s.p().Append(context.Background(), testkit.Checkpoint("t", "a", "", 1), "", again.Writer); !errors.Is(err, ckptstore.ErrWriterLost) {
			t.Fatalf("Append with the released lease = %v, want ErrWriterLost", err)
		}
		fresh, err := s.p().AcquireWriter(context.Background(), "t")
		must(t, err)
		if fresh.Fence != l.Fence+1 {
			t.Fatalf("the next lease has fence %d, want %d: the repeat took a lease", fresh.Fence, l.Fence+1)
		}
		before := keyspace(t, c, s)
		bad := ckptstore.WithOpToken(context.Background(), "not a token")
		if _, err := s.p().AcquireWriter(bad, "u"); !errors.Is(err, ckptstore.ErrInvalidEntry) {
			t.Fatalf("AcquireWriter with a malformed op token = %v, want ErrInvalidEntry", err)
		}
		if err := s.p().Append(bad, testkit.Checkpoint("t", "a", "", 1), "", fresh.Writer); !errors.Is(err, ckptstore.ErrInvalidEntry) {
			t.Fatalf("Append with a malformed op token = %v, want ErrInvalidEntry", err)
		}
		if after := keyspace(t, c, s); len(after) != len(before) {
			t.Fatalf("refused calls wrote keys: %d before, %d after", len(before), len(after))
		}
		checkStore(t, s)
	})
}

// TestAcquireWriterRepeatReturnsTheLiveLease: AcquireWriter repeated with
// the caller's op token while its lease holds returns that lease as it is
// now (acquireScript finds its own token in place): with the expiry a
// Renew moved, and still once the op key expired, as it does for a lease
// kept alive by renewals for longer than Options.OpTTL. Without the
// own-token check the repeat reports the op
// record's older expiry, and after OpTTL a conflict with its own lease.
func TestAcquireWriterRepeatReturnsTheLiveLease(t *testing.T) {
	ctx := context.Background()
	m := miniredis.RunT(t)
	clock := testkit.NewClock(time.UnixMilli(1_700_000_000_000))
	s := newStore(t, redistest.NewClient(t, m.Addr(), nil), Options{OpTTL: time.Second,
		Options: ckptstore.Options{Now: clock.Now, LeaseDuration: time.Minute}})
	tok := ckptstore.WithOpToken(ctx, "acquire-live")
	first, err := s.p().AcquireWriter(tok, "t")
	must(t, err)
	clock.Advance(10 * time.Second)
	renewed, err := s.p().Renew(ctx, first.Writer)
	must(t, err)

	again, err := s.p().AcquireWriter(tok, "t")
	must(t, err)
	if again.Writer != first.Writer || !again.ExpiresAt.Equal(renewed) {
		t.Fatalf("the repeat returned %+v until %v, want the live lease %+v until %v (renewed)", again.Writer, again.ExpiresAt, first.Writer, renewed)
	}

	m.FastForward(2 * time.Second) // the op key expires; the lease holds
	late, err := s.p().AcquireWriter(tok, "t")
	if err != nil {
		t.Fatalf("the repeat after OpTTL: %v, want the live lease", err)
	}
	if late.Writer != first.Writer || !late.ExpiresAt.Equal(renewed) {
		t.Fatalf("the repeat after OpTTL returned %+v until %v, want %+v until %v", late.Writer, late.ExpiresAt, first.Writer, renewed)
	}
	must(t, s.p().Append(ctx, testkit.Checkpoint("t", "a", "", 1), "", late.Writer))
	checkStore(t, s)
}
