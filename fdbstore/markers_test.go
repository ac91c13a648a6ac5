package fdbstore

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/fdbstore/kv"
	"github.com/ckptstore/ckptstore/fdbstore/kv/memkv"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

// countRange is the number of keys in r.
func countRange(t *testing.T, db kv.DB, r kv.KeyRange) int {
	t.Helper()
	var n int
	testkit.Must(t, db.ReadTransact(context.Background(), func(tr kv.ReadTransaction) error {
		kvs, err := tr.GetRange(r, kv.RangeOptions{}).Get()
		n = len(kvs)
		return err
	}))
	return n
}

// TestMarkersExpirePerThread: each write leaves one marker under its
// thread, and the thread's writes clear, blind, the markers of the epochs
// before the last two; another thread's writes clear none.
func TestMarkersExpirePerThread(t *testing.T) {
	ctx := context.Background()
	clock := testkit.NewClock(time.UnixMilli(1_800_000_000_000 / markerTTL.Milliseconds() * markerTTL.Milliseconds()))
	db := memkv.New()
	s, err := NewDriver(db, Options{wallClock: clock.Now, Options: ckptstore.Options{LeaseDuration: time.Hour}})
	testkit.Must(t, err)
	markers := func() int { return countRange(t, db, rangeOf(s.k.threadKey("t", threadOps, 0))) }
	lease, err := s.p().AcquireWriter(ctx, "t")
	testkit.Must(t, err)
	head := ""
	appendN := func(n int) {
		for range n {
			id := fmt.Sprintf("c%d", clock.Now().UnixNano())
			testkit.Must(t, s.p().Append(ctx, testkit.Checkpoint("t", id, head, 1), head, lease.Writer))
			head = id
			clock.Advance(time.Millisecond)
		}
	}
	appendN(9) // epoch e
	if m := markers(); m != 10 {
		t.Fatalf("after 10 writes: %d markers, want 10", m)
	}
	clock.Advance(markerTTL) // epoch e+1: the markers of e stay
	appendN(3)
	if m := markers(); m != 13 {
		t.Fatalf("one epoch later: %d markers, want 13", m)
	}
	other, err := s.p().AcquireWriter(ctx, "u")
	testkit.Must(t, err)
	clock.Advance(markerTTL) // epoch e+2: e goes with t's next write, not u's
	testkit.Must(t, s.p().Append(ctx, testkit.Checkpoint("u", "u1", "", 1), "", other.Writer))
	if m := markers(); m != 13 {
		t.Fatalf("after another thread's write: %d markers, want 13", m)
	}
	appendN(1)
	if m := markers(); m != 4 {
		t.Fatalf("two epochs later: %d markers, want the 3 of e+1 and the new one", m)
	}
}

// TestCallerTokenWindow: a caller's op token is recognised while its
// marker lives, and a repeat after the marker expired runs as a new write.
func TestCallerTokenWindow(t *testing.T) {
	ctx := context.Background()
	clock := testkit.NewClock(time.Unix(1_800_000_000, 0))
	s, err := NewDriver(memkv.New(), Options{wallClock: clock.Now, Options: ckptstore.Options{LeaseDuration: time.Hour}})
	testkit.Must(t, err)
	lease, err := s.p().AcquireWriter(ctx, "t")
	testkit.Must(t, err)
	tok := ckptstore.WithOpToken(ctx, "append-a")
	cp := testkit.Checkpoint("t", "a", "", 1)
	testkit.Must(t, s.p().Append(tok, cp, "", lease.Writer))
	// Recognised for at least markerTTL, across an epoch boundary too,
	// whatever other writes of the thread did meanwhile.
	for range 4 {
		clock.Advance(markerTTL/4 - time.Second)
		testkit.Must(t, s.p().Append(tok, cp, "", lease.Writer))
	}
	testkit.Must(t, s.p().Append(ctx, testkit.Checkpoint("t", "b", "a", 2), "a", lease.Writer))
	testkit.Must(t, s.p().Append(tok, cp, "", lease.Writer))
	clock.Advance(2 * markerTTL)
	testkit.Must(t, s.p().Append(ctx, testkit.Checkpoint("t", "c", "b", 3), "b", lease.Writer)) // clears the marker
	if err := s.p().Append(tok, cp, "", lease.Writer); !errors.Is(err, ckptstore.ErrDuplicateID) {
		t.Fatalf("repeat after the marker expired: %v, want ErrDuplicateID (a new write)", err)
	}
	if err := s.p().Append(ckptstore.WithOpToken(ctx, "not a token"), cp, "", lease.Writer); !errors.Is(err, ckptstore.ErrInvalidEntry) {
		t.Fatalf("a malformed op token: %v, want ErrInvalidEntry", err)
	}
}

// TestTokenReusedForAnotherWrite: a caller token reused for another kind
// of write runs that write, rather than reporting the first one's result.
func TestTokenReusedForAnotherWrite(t *testing.T) {
	ctx := context.Background()
	s, err := NewDriver(memkv.New(), Options{})
	testkit.Must(t, err)
	tok := ckptstore.WithOpToken(ctx, "reused")
	lease, err := s.p().AcquireWriter(tok, "t")
	testkit.Must(t, err)
	testkit.Must(t, s.p().Append(tok, testkit.Checkpoint("t", "a", "", 1), "", lease.Writer))
	if head, _ := s.p().GetHead(ctx, "t"); head != "a" {
		t.Fatalf("head = %q: the Append under a token of AcquireWriter did not run", head)
	}
	if err := s.p().DeleteHead(tok, "t", "b", lease.Writer); !errors.Is(err, ckptstore.ErrNotHead) {
		t.Fatalf("DeleteHead of a non-head under a token of Append: %v, want ErrNotHead", err)
	}
}

// TestCallerRepeatInTheNextMarkerEpoch: a caller's repeat that comes in
// the marker epoch after its first call's (here one second later, across
// the boundary) finds the marker in the epoch before. Without that second
// lookup the repeat runs as a new write
// and fails with ErrDuplicateID.
func TestCallerRepeatInTheNextMarkerEpoch(t *testing.T) {
	ctx := context.Background()
	boundary := time.UnixMilli(1_800_000_000_000 / markerTTL.Milliseconds() * markerTTL.Milliseconds())
	clock := testkit.NewClock(boundary.Add(-time.Second))
	s, err := New(memkv.New(), Options{wallClock: clock.Now, Options: ckptstore.Options{LeaseDuration: time.Hour}})
	testkit.Must(t, err)
	lease, err := s.AcquireWriter(ctx, "t")
	testkit.Must(t, err)
	tok := ckptstore.WithOpToken(ctx, "append-across-epochs")
	cp := testkit.Checkpoint("t", "a", "", 1)
	testkit.Must(t, s.Append(tok, cp, "", lease.Writer))
	clock.Advance(2 * time.Second)
	if epochOf(clock.Now()) != epochOf(boundary.Add(-time.Second))+1 {
		t.Fatalf("the clock did not cross a marker epoch")
	}
	if err := s.Append(tok, cp, "", lease.Writer); err != nil {
		t.Fatalf("the repeat in the next epoch: %v, want the first call's success", err)
	}
	cps, err := s.List(ctx, "t")
	testkit.Must(t, err)
	if len(cps) != 1 {
		t.Fatalf("%d checkpoints after the repeat, want 1", len(cps))
	}
}

// TestWriteGivesUpAfterHalfTheMarkerLifetime: a write whose commits keep
// failing stops retrying once it has retried for markerTTL/2 (errGaveUp),
// while its marker would still be found. The wall clock here moves a third
// of markerTTL per reading, so the second attempt gives up. Without the
// check the write retries until its context ends.
func TestWriteGivesUpAfterHalfTheMarkerLifetime(t *testing.T) {
	db := memkv.New()
	var (
		now      = time.Unix(1_800_000_000, 0)
		ticking  bool
		readings int
	)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	wall := func() time.Time {
		if ticking {
			readings++
			now = now.Add(markerTTL / 3)
			if readings == 12 { // far past the second attempt: stop a write that does not give up
				cancel()
			}
		}
		return now
	}
	s, err := NewDriver(db, Options{wallClock: wall, Options: ckptstore.Options{LeaseDuration: 1000 * time.Hour}})
	testkit.Must(t, err)
	lease, err := s.p().AcquireWriter(ctx, "t")
	testkit.Must(t, err)
	testkit.Must(t, db.SetFaults(memkv.Faults{NotCommittedRate: 1}))
	ticking = true
	err = s.p().Append(ctx, testkit.Checkpoint("t", "a", "", 1), "", lease.Writer)
	if !errors.Is(err, errGaveUp) {
		t.Fatalf("Append whose commits all fail: %v, want errGaveUp", err)
	}
	ticking = false
	testkit.Must(t, db.SetFaults(memkv.Faults{}))
	if h, err := s.p().GetHead(context.Background(), "t"); err != nil || h != "" {
		t.Fatalf("head %q (error %v) after the write gave up, want none", h, err)
	}
}
