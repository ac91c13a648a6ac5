package ckptstore

import (
	"context"
	"time"

	"github.com/ckptstore/ckptstore/driver"
)

// LeaseKeeper is the part of a store that backs a Lease: stores implement
// it and hand it to NewLease. Users call Lease.Renew and Lease.Release.
type LeaseKeeper interface {
	// Renew extends w's lease to now + lease duration and returns the
	// new expiry, or fails with ErrWriterLost when w is no longer the
	// thread's live lease.
	Renew(ctx context.Context, w Writer) (time.Time, error)
	// Release ends w's lease when it is still the thread's lease, and
	// does nothing otherwise. An error means the store could not be reached;
	// the lease then simply expires.
	Release(ctx context.Context, w Writer) error
}

// Lease is a thread's writer lease, as AcquireWriter returns it. Its Writer
// goes with every write. A Lease is not safe for concurrent use: renew it
// from the goroutine that writes, or guard it.
type Lease struct {
	// Lease holds the Writer, ExpiresAt (which Renew updates) and
	// RenewAfter, and the lease's JSON.
	driver.Lease

	keeper LeaseKeeper
}

// NewLease returns the Lease for w, backed by the store k. Stores call it
// from AcquireWriter.
func NewLease(w Writer, expiresAt time.Time, renewAfter time.Duration, k LeaseKeeper) *Lease {
	return &Lease{Lease: driver.Lease{Writer: w, ExpiresAt: expiresAt, RenewAfter: renewAfter}, keeper: k}
}

// Renew extends the lease to now + the store's lease duration and returns
// the new expiry. A lease that expired, was released or was replaced fails
// with ErrWriterLost.
func (l *Lease) Renew(ctx context.Context) (time.Time, error) {
	t, err := l.keeper.Renew(ctx, l.Writer)
	if err != nil {
		return time.Time{}, err
	}
	l.ExpiresAt = t
	return t, nil
}

// Release ends the lease. It does nothing when a newer lease replaced it,
// and never fails the contract: an error only says the store could not be
// reached (for callers that log it), and the lease then expires on its own
// at ExpiresAt. Callers that need not know (defer lease.Release(ctx)) drop
// it.
func (l *Lease) Release(ctx context.Context) error {
	return l.keeper.Release(ctx, l.Writer)
}
