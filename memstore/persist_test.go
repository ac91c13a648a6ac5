package memstore_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/memstore"
	"github.com/ckptstore/ckptstore/persist/driver"
	"github.com/ckptstore/ckptstore/persist/persisttest"
)

// TestPersistRealTimeLocks runs the real-time lock cases too, on a
// stand-alone Persistence, so that both variants and both constructors
// are proven on the reference driver (TestEngine runs the synctest ones on
// the persistence of a checkpoint Driver's key space, the one storeurl
// serves).
func TestPersistRealTimeLocks(t *testing.T) {
	persisttest.RunRealTimeLocks(t, func(t *testing.T, now func() time.Time) driver.Driver {
		return memstore.NewPersistence(memstore.PersistenceOptions{Now: now})
	})
}

// TestOneClockAndOneOpTable: a key space's writer leases and lock leases
// are judged by its one clock, and a commit batch's op token is kept in
// the same table as the checkpoint writes' (a retry within the TTL is
// answered, a later one runs again).
func TestOneClockAndOneOpTable(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return now }
	d := memstore.NewDriver(ckptstore.Options{Now: clock, LeaseDuration: time.Minute, RenewAfter: 20 * time.Second})
	p := d.Persistence()
	if d.Persistence() != p {
		t.Fatal("Persistence returned a second driver for one key space")
	}
	st := ckptstore.New(d)
	lease, err := st.AcquireWriter(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	lock, err := p.AcquireLock(ctx, driver.LockRequest{Key: "k", Token: "a", Lease: time.Minute})
	if err != nil || !lock.Held || !lock.Now.Equal(now) || !lock.ExpiresAt.Equal(lease.ExpiresAt) {
		t.Fatalf("lock %+v, %v; the writer lease expires at %v", lock, err, lease.ExpiresAt)
	}
	now = now.Add(time.Minute) // both expire on the one clock
	if _, err := st.AcquireWriter(ctx, "t"); err != nil {
		t.Errorf("the writer lease outlived the key space's clock: %v", err)
	}
	if got, err := p.AcquireLock(ctx, driver.LockRequest{Key: "k", Token: "b", Lease: time.Minute}); err != nil || !got.Held {
		t.Errorf("the lock lease outlived the key space's clock: %+v, %v", got, err)
	}

	// A committed batch's token answers its retry, on the key space's clock.
	in := &driver.InterruptRecord{InterruptID: "i", RunID: "r", ThreadID: "t", Status: driver.InterruptPending, RequestedAt: 1, Payload: []byte(`{}`)}
	if err := p.CreateInterrupt(ctx, in); err != nil {
		t.Fatal(err)
	}
	batch := []driver.InterruptCommitEntry{{InterruptID: "i", Status: driver.InterruptResolved}}
	if err := p.CommitInterrupts(ctx, batch, 2, "tok"); err != nil {
		t.Fatal(err)
	}
	if err := p.CommitInterrupts(ctx, batch, 2, "tok"); err != nil {
		t.Errorf("a retry within the TTL: %v", err)
	}
	now = now.Add(10 * time.Minute)
	if err := p.CommitInterrupts(ctx, batch, 2, "tok"); !errors.Is(err, driver.ErrNotPending) {
		t.Errorf("a retry after the TTL runs again and finds the interrupt resolved: %v", err)
	}
}

// TestPersistDumpPages runs the export and import cases with Dump pages of
// two records, so that every resume and every piece crosses pages.
func TestPersistDumpPages(t *testing.T) {
	defer memstore.SetDumpPage(2)()
	persisttest.RunPort(t, func(t *testing.T, now func() time.Time) driver.Driver {
		return memstore.NewDriver(ckptstore.Options{Now: now}).Persistence()
	})
}

// TestActiveRunIndex: findActiveRun reads the index of running runs by
// thread; after every create, status update and load of a random sequence
// it is the newest running run that a scan of the thread's runs finds,
// on a store written call by call and on one loaded from its records.
func TestActiveRunIndex(t *testing.T) {
	ctx := context.Background()
	statuses := []driver.RunStatus{driver.RunRunning, driver.RunInterrupted, driver.RunCompleted, driver.RunFailed, driver.RunAborted}
	threads := []string{"a", "b", "c"}
	rng := rand.New(rand.NewPCG(1, 2))
	p := memstore.NewPersistence(memstore.PersistenceOptions{})
	scan := func(p *memstore.Persistence, thread string) *driver.RunRecord {
		all, err := p.ThreadRuns(ctx, thread, nil, 1000)
		if err != nil {
			t.Fatal(err)
		}
		var best *driver.RunRecord
		for _, r := range all {
			if r.Status == driver.RunRunning && (best == nil || driver.RunOrder(r, best) > 0) {
				best = r
			}
		}
		return best
	}
	check := func(p *memstore.Persistence, step int) {
		t.Helper()
		for _, th := range threads {
			got, err := p.ActiveRun(ctx, th)
			if err != nil {
				t.Fatal(err)
			}
			want := scan(p, th)
			if (got == nil) != (want == nil) || got != nil && got.RunID != want.RunID {
				t.Fatalf("step %d, thread %s: ActiveRun %+v, the scan finds %+v", step, th, got, want)
			}
		}
	}
	var ids []string
	running := 0
	for step := range 400 {
		if len(ids) == 0 || rng.IntN(3) == 0 {
			id := fmt.Sprintf("r%d", len(ids))
			ids = append(ids, id)
			st := statuses[rng.IntN(2)] // running or interrupted
			if _, err := p.CreateOrResumeRun(ctx, &driver.RunRecord{RunID: id, ThreadID: threads[rng.IntN(len(threads))], Status: st, StartedAt: int64(rng.IntN(50))}); err != nil {
				t.Fatal(err)
			}
		} else {
			st := statuses[rng.IntN(len(statuses))]
			if _, err := p.UpdateRun(ctx, ids[rng.IntN(len(ids))], driver.RunPatch{Status: driver.Set(st)}); err != nil {
				t.Fatal(err)
			}
		}
		check(p, step)
	}
	for _, th := range threads {
		if scan(p, th) != nil {
			running++
		}
	}
	if running == 0 {
		t.Fatal("no thread ends with a running run: the sequence proves little")
	}
	var recs []driver.Record
	for _, id := range ids {
		r, err := p.GetRun(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, driver.Record{Kind: driver.KindRun, Run: r})
	}
	loaded := memstore.NewPersistence(memstore.PersistenceOptions{})
	if _, err := loaded.Load(ctx, recs); err != nil {
		t.Fatal(err)
	}
	check(loaded, -1)
}
