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

// TestLongPruneStopsOnACycleAcrossStretches: a long prune walks the chain
// in stretches of BatchSize, each script knowing only its own stretch, so a
// parent cycle that closes into an earlier stretch shows in Go as an id
// walked twice, where the chain must end. Without that check (mutant
// rs-go-prune-cycle) the repeated id counts again and the prune deletes
// checkpoints it must keep.
func TestLongPruneStopsOnACycleAcrossStretches(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, miniClient(t), Options{BatchSize: 2})
	w := acquire(t, s, "t")
	head := ""
	for i, id := range []string{"c1", "c2", "c3", "c4"} {
		must(t, s.p().Append(ctx, testkit.Checkpoint("t", id, head, float64(i), i), head, w))
		head = id
	}
	if _, err := s.p().DeleteCheckpoints(ctx, "t", 1, w); err != nil {
		t.Fatal(err)
	}
	// c4's parent link names c3; storing c3 again with parent c4 closes
	// the cycle c3 → c4 → c3, and c2 on top makes the chain from the head
	// c2, c3, c4: the first stretch walks c2, c3, the second c4, c3.
	must(t, s.p().Append(ctx, testkit.Checkpoint("t", "c3", "c4", 5, 5), "c4", w))
	must(t, s.p().Append(ctx, testkit.Checkpoint("t", "c2", "c3", 6, 6), "c3", w))

	ids, err := s.p().DeleteCheckpoints(ctx, "t", 3, w)
	must(t, err)
	if len(ids) != 0 {
		t.Fatalf("keep 3 of the chain c2, c3, c4 deleted %v, want none", ids)
	}
	ids, err = s.p().DeleteCheckpoints(ctx, "t", 2, w)
	must(t, err)
	if len(ids) != 1 || ids[0] != "c4" {
		t.Fatalf("keep 2 of the chain c2, c3, c4 deleted %v, want [c4]", ids)
	}
	cps, err := s.p().List(ctx, "t")
	must(t, err)
	if len(cps) != 2 {
		t.Fatalf("%d checkpoints left, want c3 and c2", len(cps))
	}
	checkStore(t, s)
}
