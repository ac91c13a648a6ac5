package redisstore

// Tests that kill mutants of internal/mutation (mutants_redis.go) which
// the rest of the suite let through. Each names its mutant.

import (
	"context"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/internal/redistest"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

// TestAcquireWriterRepeatReturnsTheLiveLease: AcquireWriter repeated with
// the caller's op token while its lease holds returns that lease as it is
// now (acquireScript finds its own token in place): with the expiry a
// Renew moved, and still once the op key expired, as it does for a lease
// kept alive by renewals for longer than Options.OpTTL. Without the
// own-token check (mutant rs-acquire-same-token) the repeat reports the op
// record's older expiry, and after OpTTL a conflict with its own lease.
func TestAcquireWriterRepeatReturnsTheLiveLease(t *testing.T) {
	ctx := context.Background()
	m := miniredis.RunT(t)
	clock := testkit.NewClock(time.UnixMilli(1_700_000_000_000))
	s := newStore(t, redistest.NewClient(t, m.Addr(), nil), Options{OpTTL: time.Second,
		Options: ckptstore.Options{Now: clock.Now, LeaseDuration: time.Minute}})
	tok := ckptstore.WithOpToken(ctx, "acquire-live")
	first, err := s.AcquireWriter(tok, "t")
	must(t, err)
	clock.Advance(10 * time.Second)
	renewed, err := s.RenewWriter(ctx, first.Writer)
	must(t, err)

	again, err := s.AcquireWriter(tok, "t")
	must(t, err)
	if again.Writer != first.Writer || !again.ExpiresAt.Equal(renewed) {
		t.Fatalf("the repeat returned %+v until %v, want the live lease %+v until %v (renewed)", again.Writer, again.ExpiresAt, first.Writer, renewed)
	}

	m.FastForward(2 * time.Second) // the op key expires; the lease holds
	late, err := s.AcquireWriter(tok, "t")
	if err != nil {
		t.Fatalf("the repeat after OpTTL: %v, want the live lease", err)
	}
	if late.Writer != first.Writer || !late.ExpiresAt.Equal(renewed) {
		t.Fatalf("the repeat after OpTTL returned %+v until %v, want %+v until %v", late.Writer, late.ExpiresAt, first.Writer, renewed)
	}
	must(t, s.Append(ctx, testkit.Checkpoint("t", "a", "", 1), "", late.Writer))
	checkStore(t, s)
}
