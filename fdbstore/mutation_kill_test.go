package fdbstore

// Tests that kill mutants of internal/mutation (mutants_fdb.go) which the
// rest of the suite let through. Each names its mutant.

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/fdbstore/kv"
	"github.com/ckptstore/ckptstore/fdbstore/kv/memkv"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

// TestDeleteHeadConflictsWithADeleteThreadBatch: a DeleteThread batch that
// deletes a thread's head without being its last batch (the head is the
// thread's oldest checkpoint in List order, and more follow) touches
// neither the head key nor the lease. So the only read of DeleteHead that
// such a batch changes is the head checkpoint by id: read as a snapshot
// (mutant fdb-dh-snapshot-index), DeleteHead commits the removal of a
// checkpoint already removed, and its blob counts drop twice.
func TestDeleteHeadConflictsWithADeleteThreadBatch(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	db, err := memkv.NewWithOptions(memkv.Options{Now: func() time.Time { return start }})
	if err != nil {
		t.Fatal(err)
	}
	clock := testkit.NewClock(start)
	s, err := NewDriver(db, Options{Options: ckptstore.Options{Now: clock.Now, LeaseDuration: time.Minute}, PruneBatch: 1})
	if err != nil {
		t.Fatal(err)
	}
	l, err := s.p().AcquireWriter(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	w := l.Writer
	// The root a-1 (createdAt 1), then the head a-0 (createdAt 0): the
	// head is first in List order, so DeleteThread's first batch of one
	// deletes it and leaves a-1. Both use blob 7, so a count dropped twice
	// shows.
	if err := s.p().Append(ctx, testkit.Checkpoint("a", "a-1", "", 1, 7), "", w); err != nil {
		t.Fatal(err)
	}
	if err := s.p().Append(ctx, testkit.Checkpoint("a", "a-0", "a-1", 0, 7), "a-1", w); err != nil {
		t.Fatal(err)
	}

	ran := false
	remove := db.BeforeCommit(func(*memkv.Tx) {
		if ran {
			return
		}
		ran = true
		n, more, err := s.deleteThreadBatch(ctx, "a", w)
		if err != nil || n != 1 || !more {
			t.Errorf("the DeleteThread batch: %d deleted, more %v, error %v; want 1, true, nil", n, more, err)
		}
	})
	before := db.Stats()
	err = s.p().DeleteHead(ctx, "a", "a-0", w)
	remove()
	if !ran {
		t.Fatalf("DeleteHead committed nothing, so nothing was interleaved (error %v)", err)
	}
	if c := db.Stats().Conflicts - before.Conflicts; c != 1 {
		t.Errorf("DeleteHead's commit conflicted %d times with the DeleteThread batch, want 1 (its read of the checkpoint must take a read conflict)", c)
	}
	// In the order the batch committed first, a-0 is gone while the head
	// still names it: DeleteHead finds no head checkpoint to delete.
	if !errors.Is(err, ckptstore.ErrNotHead) {
		t.Fatalf("DeleteHead after the batch deleted the head checkpoint: error %v, want ErrNotHead", err)
	}
	if h, err := s.p().GetHead(ctx, "a"); err != nil || h != "a-0" {
		t.Errorf("head %q (error %v), want a-0: the failed DeleteHead changed it", h, err)
	}
	refs, err := s.p().ListBlobReferences(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != 1 || refs[0].References != 1 {
		t.Errorf("blob references %v, want blob 7 once (a-1)", refs)
	}
	problems, err := s.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("Check: %v", p)
	}
}

// TestCallerRepeatInTheNextMarkerEpoch: a caller's repeat that comes in
// the marker epoch after its first call's (here one second later, across
// the boundary) finds the marker in the epoch before. Without that second
// lookup (mutant fdb-marker-no-prev-epoch) the repeat runs as a new write
// and fails with ErrDuplicateID.
func TestCallerRepeatInTheNextMarkerEpoch(t *testing.T) {
	ctx := context.Background()
	boundary := time.UnixMilli(1_800_000_000_000 / markerTTL.Milliseconds() * markerTTL.Milliseconds())
	clock := testkit.NewClock(boundary.Add(-time.Second))
	s, err := NewDriver(memkv.New(), Options{wallClock: clock.Now, Options: ckptstore.Options{LeaseDuration: time.Hour}})
	testkit.Must(t, err)
	lease, err := s.p().AcquireWriter(ctx, "t")
	testkit.Must(t, err)
	tok := ckptstore.WithOpToken(ctx, "append-across-epochs")
	cp := testkit.Checkpoint("t", "a", "", 1)
	testkit.Must(t, s.p().Append(tok, cp, "", lease.Writer))
	clock.Advance(2 * time.Second)
	if epochOf(clock.Now()) != epochOf(boundary.Add(-time.Second))+1 {
		t.Fatalf("the clock did not cross a marker epoch")
	}
	if err := s.p().Append(tok, cp, "", lease.Writer); err != nil {
		t.Fatalf("the repeat in the next epoch: %v, want the first call's success", err)
	}
	cps, err := s.p().List(ctx, "t")
	testkit.Must(t, err)
	if len(cps) != 1 {
		t.Fatalf("%d checkpoints after the repeat, want 1", len(cps))
	}
}

// TestWriteGivesUpAfterHalfTheMarkerLifetime: a write whose commits keep
// failing stops retrying once it has retried for markerTTL/2 (errGaveUp),
// while its marker would still be found. The wall clock here moves a third
// of markerTTL per reading, so the second attempt gives up. Without the
// check (mutant fdb-no-give-up) the write retries until its context ends.
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

// TestCheckFindsALeakedZeroCount: a blob count left at 0 for a blob that no
// checkpoint uses, the leak a missing CompareAndClear leaves (ListBlobReferences
// hides it), is a problem of its own. Its recount is 0 too, so only the
// count-at-0 rule finds it (mutant fdb-check-zero-count).
func TestCheckFindsALeakedZeroCount(t *testing.T) {
	ctx := context.Background()
	db := memkv.New()
	s, err := NewDriver(db, Options{})
	testkit.Must(t, err)
	key := s.k.ref("sandbox-files/sha256/" + strings.Repeat("0", 64))
	testkit.Must(t, db.Transact(ctx, func(tr kv.Transaction) error {
		tr.Set(key, kv.EncodeInt64(0))
		return nil
	}))
	problems, err := s.Check(ctx)
	testkit.Must(t, err)
	if len(problems) != 1 || problems[0].Key != string(key) {
		t.Fatalf("Check found %v, want one problem at the zero count %q", problems, key)
	}
}
