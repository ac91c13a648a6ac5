package driver

// A thread's writer lease, the record a driver's AcquireWriter returns and
// the handle a harness renews and releases. Invariant: a Lease that a
// harness holds (from ckptstore.Store.AcquireWriter, or made by NewLease)
// has a keeper, the store that renews and releases it; a driver's value has
// none and is only read, by the portable store, which makes the harness's
// Lease from it.

import (
	"context"
	"errors"
	"time"
)

// Lease is a thread's writer lease: the Writer that goes with every write,
// when it expires unless renewed, and how long after taking or renewing it
// the holder should renew it. A driver's AcquireWriter returns it as a
// value, without a keeper; the portable store hands the harness one backed
// by itself (NewLease). A Lease is not safe for concurrent use: renew it
// from the goroutine that writes, or guard it.
type Lease struct {
	Writer
	ExpiresAt  time.Time
	RenewAfter time.Duration

	keeper LeaseKeeper
}

// LeaseKeeper is the part of a store that backs a Lease: the portable store
// implements it, and so does a test's wrapper of a store that builds its
// own leases with NewLease. Harnesses call Lease.Renew and Lease.Release.
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

// NewLease returns the Lease for w, backed by k.
func NewLease(w Writer, expiresAt time.Time, renewAfter time.Duration, k LeaseKeeper) *Lease {
	return &Lease{Writer: w, ExpiresAt: expiresAt, RenewAfter: renewAfter, keeper: k}
}

// errNoKeeper is what Renew and Release return for a lease no store backs:
// a driver's value used as a harness's lease, a programming error.
var errNoKeeper = errors.New("ckptstore: the lease has no store behind it (it did not come from a store's AcquireWriter or NewLease)")

// Renew extends the lease to now + the store's lease duration and returns
// the new expiry. A lease that expired, was released or was replaced fails
// with ErrWriterLost.
func (l *Lease) Renew(ctx context.Context) (time.Time, error) {
	if l.keeper == nil {
		return time.Time{}, errNoKeeper
	}
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
	if l.keeper == nil {
		return errNoKeeper
	}
	return l.keeper.Release(ctx, l.Writer)
}
