package fdbstore_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/fdbstore"
	"github.com/ckptstore/ckptstore/fdbstore/internal/storetest"
	"github.com/ckptstore/ckptstore/fdbstore/kv/memkv"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

// TestCapabilitiesIdempotentAfterUnknownResult runs the capability writes
// with commits that are applied but reported as commit_unknown_result:
// each reports what its committed attempt did (counts included), once.
func TestCapabilitiesIdempotentAfterUnknownResult(t *testing.T) {
	s, db := newMemStore(t, fdbstore.Options{PruneBatch: 2}, memkv.Options{})
	lease, err := s.AcquireWriter(ctx, "t")
	must(t, err)
	w := lease.Writer
	ids := storetest.Chain(t, s, w, "t", 5)
	importOnceAfterUnknown(t, s, db)

	// SaveThread is a blind write, idempotent by itself (it repeats to the
	// same state; under every commit reporting an unknown result it would
	// retry forever, like Renew, so it runs under the fault mix below).
	must(t, s.SaveThread(ctx, "t", []byte(`["saved"]`)))
	if got, err := s.LoadThread(ctx, "t"); err != nil || string(got) != `["saved"]` {
		t.Fatalf("LoadThread = %s, %v", got, err)
	}

	deleteThreadOnceAfterUnknown(t, s, db, w, len(ids))
	opTokensAfterUnknown(t, s, db)
}

// importOnceAfterUnknown: Import reports the count of the attempt that
// committed, not 0, and its repeat writes nothing.
func importOnceAfterUnknown(t *testing.T, s *ckptstore.Store, db *memkv.DB) {
	il, err := s.AcquireWriter(ctx, "imp")
	must(t, err)
	batch := ckptstore.ImportBatch{ThreadID: "imp", Writer: il.Writer, SetHead: true, Head: "i1",
		Checkpoints: []*ckptstore.Checkpoint{testkit.Checkpoint("imp", "i0", "", 1, 0, 7), testkit.Checkpoint("imp", "i1", "i0", 2, 7)},
		Transcript:  []byte(`[{"role":"user"}]`)}
	restore := unknownApplied(t, db)
	n, err := s.Import(ctx, batch)
	restore()
	must(t, err)
	if n != 2 {
		t.Fatalf("Import after an unknown result = %d, want 2", n)
	}
	if n, err := s.Import(ctx, batch); err != nil || n != 0 {
		t.Fatalf("the repeated Import = %d, %v; want 0, nil", n, err)
	}
	testkit.CheckRefs(t, s, "t", "imp")
}

// deleteThreadOnceAfterUnknown: DeleteThread of t (its n checkpoints) in
// batches of 2 counts every batch once; the lease stays.
func deleteThreadOnceAfterUnknown(t *testing.T, s *ckptstore.Store, db *memkv.DB, w ckptstore.Writer, want int) {
	restore := unknownApplied(t, db)
	n, err := s.DeleteThread(ctx, "t", w)
	restore()
	must(t, err)
	if n != want {
		t.Fatalf("DeleteThread after unknown results = %d, want %d", n, want)
	}
	if got, _ := s.LoadThread(ctx, "t"); string(got) != "[]" {
		t.Fatalf("transcript after DeleteThread = %s", got)
	}
	testkit.CheckRefs(t, s, "t", "imp")
	if threads, _, err := s.Threads(ctx, "", 0); err != nil || !slices.Equal(threads, []string{"imp"}) {
		t.Fatalf("Threads = %v, %v; want [imp]", threads, err)
	}
	// The lease stays: the thread can be written again.
	must(t, s.Append(ctx, testkit.Checkpoint("t", "again", "", 1), "", w))
}

// opTokensAfterUnknown: caller op tokens across calls, with unknown results
// inside the first call too: the repeated AcquireWriter returns the same
// lease, the repeated fork the same root.
func opTokensAfterUnknown(t *testing.T, s *ckptstore.Store, db *memkv.DB) {
	tok := ckptstore.WithOpToken(ctx, "caller-token-1")
	restore := unknownApplied(t, db)
	fl, err := s.AcquireWriter(tok, "fork")
	restore()
	must(t, err)
	again, err := s.AcquireWriter(tok, "fork")
	must(t, err)
	if again.Writer != fl.Writer || fl.OwnerToken != "caller-token-1" || !again.ExpiresAt.Equal(fl.ExpiresAt) {
		t.Fatalf("repeated AcquireWriter = %+v, want %+v with the op token as owner token", again.Writer, fl.Writer)
	}
	in := ckptstore.ForkInput{SourceThreadID: "imp", SourceCheckpointID: "i1", DestinationThreadID: "fork",
		DestinationCheckpointID: "root", CreatedAt: 3, Writer: fl.Writer}
	ftok := ckptstore.WithOpToken(ctx, "caller-fork-1")
	restore = unknownApplied(t, db)
	root, err := s.ForkFromCheckpoint(ftok, in)
	restore()
	must(t, err)
	root2, err := s.ForkFromCheckpoint(ftok, in)
	must(t, err)
	if !driver.EqualCheckpoints(root, root2) || root.ID != "root" {
		t.Fatalf("repeated fork returned %+v, want %+v", root2, root)
	}
	if _, err := s.ForkFromCheckpoint(ctx, in); !errors.Is(err, ckptstore.ErrForkDestinationNotEmpty) {
		t.Fatalf("the fork without its token: %v, want ErrForkDestinationNotEmpty", err)
	}
	if got, _ := s.LoadThread(ctx, "fork"); string(got) != string(root.Conversation) {
		t.Fatalf("the fork's transcript = %s, want %s", got, root.Conversation)
	}
	testkit.CheckRefs(t, s, "t", "imp", "fork")
}

// TestCapabilitiesUnderFaults drives the capability writes and reads
// through the fault mix and compares the outcome with what they
// must do: every checkpoint once, counts equal to a recount.
func TestCapabilitiesUnderFaults(t *testing.T) {
	for seed := int64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			s, _ := newMemStore(t, fdbstore.Options{PruneBatch: 2},
				memkv.Options{Faults: faults(seed), BackoffBase: time.Microsecond, BackoffMax: 10 * time.Microsecond})
			lease, err := s.AcquireWriter(ctx, "src")
			must(t, err)
			ids := storetest.Chain(t, s, lease.Writer, "src", 9)
			must(t, s.SaveThread(ctx, "src", []byte(`["x"]`)))
			// Copy src into dst page by page, as ckptctl copy does.
			dl, err := s.AcquireWriter(ctx, "dst")
			must(t, err)
			cursor, copied := "", 0
			for {
				page, next, err := s.ListPage(ctx, "src", ckptstore.ListOptions{After: cursor, Limit: 4})
				must(t, err)
				var cps []*ckptstore.Checkpoint
				for _, cp := range page {
					c := cp.Clone()
					c.ThreadID, c.ID = "dst", "dst-"+cp.ID
					if c.ParentCheckpointID != "" {
						c.ParentCheckpointID = "dst-" + c.ParentCheckpointID
					}
					cps = append(cps, c)
				}
				b := ckptstore.ImportBatch{ThreadID: "dst", Checkpoints: cps, Writer: dl.Writer}
				if next == "" {
					b.SetHead, b.Head, b.Transcript = true, "dst-"+ids[len(ids)-1], []byte(`["x"]`)
				}
				n, err := s.Import(ctx, b)
				must(t, err)
				copied += n
				if cursor = next; cursor == "" {
					break
				}
			}
			if copied != len(ids) {
				t.Fatalf("imported %d checkpoints, want %d", copied, len(ids))
			}
			testkit.CheckRefs(t, s, "src", "dst")
			deleted, err := s.DeleteThread(ctx, "src", lease.Writer)
			must(t, err)
			if deleted != len(ids) {
				t.Fatalf("DeleteThread = %d, want %d", deleted, len(ids))
			}
			threads, _, err := s.Threads(ctx, "", 0)
			must(t, err)
			if !slices.Equal(threads, []string{"dst"}) {
				t.Fatalf("Threads = %v, want [dst]", threads)
			}
			head, cp, err := fdbDriver(s).Restore(ctx, "dst")
			must(t, err)
			if head != "dst-"+ids[len(ids)-1] || cp == nil || cp.ID != head {
				t.Fatalf("Restore(dst) = %q, %v", head, cp)
			}
			testkit.CheckRefs(t, s, "src", "dst")
		})
	}
}

// TestRenewReportsTheCommittedRenewal: a Renew whose commit was applied
// but reported unknown returns the expiry it committed, and does not renew
// a second time on a later clock reading.
func TestRenewReportsTheCommittedRenewal(t *testing.T) {
	clock := testkit.NewClock(time.UnixMilli(1_700_000_000_000))
	tick := func() time.Time { return clock.Tick(time.Millisecond) } // every reading is 1 ms later
	s, db := newMemStore(t, fdbstore.Options{Options: ckptstore.Options{Now: tick, LeaseDuration: time.Minute}}, memkv.Options{})
	lease, err := s.AcquireWriter(ctx, "t")
	must(t, err)
	restore := unknownApplied(t, db)
	db.ResetStats()
	exp, err := lease.Renew(ctx)
	st := db.Stats()
	restore()
	must(t, err)
	// One renewal applied: a retry that renewed again would have moved the
	// expiry a second time, after other clients saw the first one.
	if st.Commits != 1 || st.Retries == 0 {
		t.Fatalf("Renew: %d commits applied, %d retries; want 1 and at least 1", st.Commits, st.Retries)
	}
	if !exp.Equal(lease.ExpiresAt) {
		t.Fatalf("Renew returned %v but the lease records %v", exp, lease.ExpiresAt)
	}
	if _, err := s.AcquireWriter(ctx, "t"); !errors.Is(err, ckptstore.ErrWriterConflict) {
		t.Fatalf("AcquireWriter after the renewal: %v, want ErrWriterConflict", err)
	}
}
