package ckptstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/memstore"
)

func TestLeaseRenew(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	start := clk.Now()
	s := memstore.New(ckptstore.Options{Now: clk.Now, LeaseDuration: 100 * time.Second, RenewAfter: 25 * time.Second})
	lease, err := s.AcquireWriter(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if !lease.ExpiresAt.Equal(start.Add(100*time.Second)) || lease.RenewAfter != 25*time.Second {
		t.Fatalf("lease expires %v, renew after %v; want %v, 25s", lease.ExpiresAt, lease.RenewAfter, start.Add(100*time.Second))
	}

	clk.Advance(30 * time.Second)
	got, err := lease.Renew(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := start.Add(130 * time.Second)
	if !got.Equal(want) || !lease.ExpiresAt.Equal(want) {
		t.Fatalf("Renew = %v, ExpiresAt = %v; want both %v", got, lease.ExpiresAt, want)
	}
	// The renewed lease is what the store enforces: one instant before the
	// new expiry the lease still writes, at the expiry it has expired.
	clk.Advance(100*time.Second - time.Millisecond)
	if _, err := lease.Renew(ctx); err != nil {
		t.Fatalf("Renew just before expiry: %v", err)
	}
	clk.Advance(100 * time.Second)
	before := lease.ExpiresAt
	if _, err := lease.Renew(ctx); !errors.Is(err, ckptstore.ErrWriterLost) {
		t.Fatalf("Renew at expiry error = %v, want ErrWriterLost", err)
	}
	if !lease.ExpiresAt.Equal(before) {
		t.Fatalf("a failed Renew changed ExpiresAt from %v to %v", before, lease.ExpiresAt)
	}
}

func TestLeaseRenewAfterRelease(t *testing.T) {
	ctx := context.Background()
	s := memstore.New(ckptstore.Options{Now: newClock().Now})
	lease, err := s.AcquireWriter(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	lease.Release(ctx)
	if _, err := lease.Renew(ctx); !errors.Is(err, ckptstore.ErrWriterLost) {
		t.Fatalf("Renew after Release error = %v, want ErrWriterLost", err)
	}
	lease.Release(ctx) // twice: still nothing, never a panic
	if err := lease.Release(ctx); err != nil {
		t.Fatalf("Release of a released lease = %v, want nil", err)
	}
}

func TestLeaseReleaseReplaced(t *testing.T) {
	ctx := context.Background()
	clk := newClock()
	s := memstore.New(ckptstore.Options{Now: clk.Now})
	old, err := s.AcquireWriter(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(driver.DefaultLeaseDuration) // the old lease expires now
	cur, err := s.AcquireWriter(ctx, "t")
	if err != nil {
		t.Fatalf("taking over an expired lease: %v", err)
	}
	if cur.Fence <= old.Fence || cur.OwnerToken == old.OwnerToken {
		t.Fatalf("new lease %+v does not supersede %+v", cur.Writer, old.Writer)
	}

	old.Release(ctx) // must not end the newer lease
	if _, err := s.AcquireWriter(ctx, "t"); !errors.Is(err, ckptstore.ErrWriterConflict) {
		t.Fatalf("after releasing the replaced lease, AcquireWriter error = %v, want ErrWriterConflict", err)
	}
	if _, err := cur.Renew(ctx); err != nil {
		t.Fatalf("current lease lost after the old one's Release: %v", err)
	}
	if _, err := old.Renew(ctx); !errors.Is(err, ckptstore.ErrWriterLost) {
		t.Fatalf("Renew of the replaced lease error = %v, want ErrWriterLost", err)
	}
	cp := &ckptstore.Checkpoint{ID: "c", ThreadID: "t", Reason: ckptstore.ReasonAutomatic}
	if err := s.Append(ctx, cp, "", old.Writer); !errors.Is(err, ckptstore.ErrWriterLost) {
		t.Fatalf("Append with the replaced lease error = %v, want ErrWriterLost", err)
	}
	if err := s.Append(ctx, cp, "", cur.Writer); err != nil {
		t.Fatalf("Append with the current lease: %v", err)
	}
}

// failingKeeper is a store that cannot be reached.
type failingKeeper struct{ err error }

func (k failingKeeper) Renew(context.Context, ckptstore.Writer) (time.Time, error) {
	return time.Time{}, k.err
}
func (k failingKeeper) Release(context.Context, ckptstore.Writer) error { return k.err }

func TestLeaseUnreachableStore(t *testing.T) {
	down := errors.New("connection refused")
	exp := time.Date(2025, 1, 1, 0, 2, 0, 0, time.UTC)
	l := driver.NewLease(ckptstore.Writer{ThreadID: "t", OwnerToken: "x", Fence: 1}, exp, time.Second, failingKeeper{down})
	l.Release(context.Background()) // never fails, never panics
	if err := l.Release(context.Background()); !errors.Is(err, down) {
		t.Fatalf("Release = %v, want the store's error", err)
	}
	if _, err := l.Renew(context.Background()); !errors.Is(err, down) {
		t.Fatalf("Renew = %v, want the store's error", err)
	}
	if !l.ExpiresAt.Equal(exp) {
		t.Fatalf("failed Renew changed ExpiresAt to %v", l.ExpiresAt)
	}
}
