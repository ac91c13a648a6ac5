package memstore_test

import (
	"context"
	"errors"
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
