package persist

// Invariants: the lock protocol (waiting, renewal, the holder's own abort
// deadline, release in a finally) is written once, in Locks, over
// LockSteps; a LockSteps only performs steps. DriverLockSteps is the one
// over a driver (a server's, or a process's own); a remote client
// (httpstore) has its own over the wire. Every step reports the holder's
// send time, and the holder counts its safety from the send time of the
// last confirmed step, never from the store's clock.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ckptstore/ckptstore/persist/driver"
)

// LockStore is TanStack's LockStore: run fn while holding a key's lock.
type LockStore interface {
	// WithLock runs fn while holding key's lock and returns fn's error;
	// see Locks.WithLock.
	WithLock(ctx context.Context, key string, fn func(ctx context.Context) error) error
}

// LockStep is the outcome of one lock step.
type LockStep struct {
	driver.LockState
	// Sent is when, by the holder's clock, the request that produced the
	// state was sent: the holder counts its lease from it.
	Sent time.Time
	// Lease and RenewAfter are the timing of the store's leases: how long
	// a lease (or a waiter's place) lives after a step, and when the
	// holder renews.
	Lease, RenewAfter time.Duration
}

// LockSteps are the three steps of the lock protocol. Locks runs the
// protocol over them; each step is atomic in the store.
type LockSteps interface {
	// Acquire asks for key's lease for token: granted (Held), or queued
	// (token keeps or takes its place). When not granted and wait > 0 it
	// waits up to wait for the key's lock to change, never by
	// busy-polling, and asks again, until granted or wait has passed; it
	// then returns the last state. A done ctx ends it with ctx's error. It
	// never gives up token's place: the caller releases.
	Acquire(ctx context.Context, key, token string, wait time.Duration) (LockStep, error)
	// Renew extends token's live lease, or fails with ErrLockLost.
	Renew(ctx context.Context, key, token string) (LockStep, error)
	// Release ends token's lease or its place in the queue; a token that
	// holds neither changes nothing. Held says whether token held the
	// live lease.
	Release(ctx context.Context, key, token string) (LockStep, error)
}

// Locks is the lock protocol of TanStack's LockStore over LockSteps: a
// lease per key in the store, renewed while the critical section runs.
//
// Lease expiry is judged by the store's clock. The holder judges its own
// safety by its own clock: it counts from the moment it sent the acquire
// or renew that the store last confirmed, and aborts the critical
// section's context when a renewal has not been confirmed by RenewAfter +
// (Lease − RenewAfter)/2 after that moment. The store's lease runs Lease
// from a moment no earlier, so the holder stops before the store can give
// the key to anyone else, as long as the two clocks run at about the same
// rate.
type Locks struct {
	steps LockSteps
	now   func() time.Time
	wait  time.Duration
}

// NewLocks returns the protocol over steps. now is the holder's clock (nil:
// time.Now); wait is how long one Acquire step may wait (≤ 0: without
// limit), which a remote store bounds so that a request does not outlive
// its proxies.
func NewLocks(steps LockSteps, now func() time.Time, wait time.Duration) *Locks {
	if now == nil {
		now = time.Now
	}
	return &Locks{steps: steps, now: now, wait: wait}
}

// Steps returns the steps the protocol runs over.
func (l *Locks) Steps() LockSteps { return l.steps }

// minPoll and maxPoll bound the backoff of a waiter whose driver cannot
// notify (WatchLock returns a nil channel), and of a renewal's retries.
const (
	minPoll = 10 * time.Millisecond
	maxPoll = time.Second
)

// forever is the wait of an Acquire step without limit.
const forever = time.Duration(1<<63 - 1)

type fenceKey struct{}

// LockFence returns the fence of the lock whose critical section ctx
// belongs to: a number that goes up with every new holder of the key, for
// fencing writes the section makes elsewhere.
func LockFence(ctx context.Context) (int64, bool) {
	f, ok := ctx.Value(fenceKey{}).(int64)
	return f, ok
}

// WithLock runs fn while holding key's lock and returns fn's error. It
// waits while another holder has the lock, in arrival order as far as the
// store's queue keeps it, and gives up with ctx's error when ctx is done
// first. fn's context is cancelled with a cause wrapping ErrLockLost when
// the lease is lost or a renewal is not confirmed in time (see Locks); fn
// must then stop changing anything outside. When fn returns nil after such
// a loss, WithLock returns that cause, since fn's work may have overlapped
// a successor's. However fn ends (nil, an error, a panic), the lock is
// released; a release never frees a successor's lease. Check order: ctx,
// key (ErrInvalidID).
func (l *Locks) WithLock(ctx context.Context, key string, fn func(ctx context.Context) error) error {
	if err := beginID(ctx, "key", key); err != nil {
		return err
	}
	token := randomID()
	wait := l.wait
	if wait <= 0 {
		wait = forever
	}
	for {
		st, err := l.steps.Acquire(ctx, key, token, wait)
		if err == nil && !st.Held {
			err = ctx.Err()
		}
		if err != nil {
			l.release(ctx, key, token) // give up our place in the queue
			return err
		}
		if st.Held {
			return l.hold(ctx, key, token, st, fn)
		}
	}
}

// abortAfter is how long after the last confirmed acquire or renew was sent
// the holder gives up.
func abortAfter(st LockStep) time.Duration { return st.RenewAfter + (st.Lease-st.RenewAfter)/2 }

// until is the time from the holder's now to sent+d.
func (l *Locks) until(sent time.Time, d time.Duration) time.Duration {
	return max(0, sent.Add(d).Sub(l.now()))
}

// hold runs fn with the lease kept alive, then releases it.
func (l *Locks) hold(ctx context.Context, key, token string, st LockStep, fn func(context.Context) error) error {
	fctx, abort := context.WithCancelCause(context.WithValue(ctx, fenceKey{}, st.Fence))
	defer abort(nil)
	kctx, stopKeeping := context.WithCancel(fctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		l.keep(kctx, abort, key, token, st)
	}()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			stopKeeping()
			wg.Wait()
		}
	}
	defer func() {
		stop()
		l.release(ctx, key, token)
	}()
	err := fn(fctx)
	stop()
	if err != nil {
		return err
	}
	if cause := context.Cause(fctx); errors.Is(cause, ErrLockLost) {
		return cause
	}
	return nil
}

// keep renews the lease every RenewAfter until ctx is done, and aborts the
// critical section when the store says the lease is lost or when no renewal
// is confirmed by the holder's deadline.
func (l *Locks) keep(ctx context.Context, abort context.CancelCauseFunc, key, token string, last LockStep) {
	// The timer's func runs on its own goroutine: it reads the window it
	// reports from window, never from last, which this loop rewrites.
	var window atomic.Int64
	window.Store(int64(abortAfter(last)))
	deadline := time.AfterFunc(l.until(last.Sent, abortAfter(last)), func() {
		abort(fmt.Errorf("%w: no renewal of %q was confirmed within %v", ErrLockLost, key, time.Duration(window.Load())))
	})
	defer deadline.Stop()
	for {
		if !sleep(ctx, l.until(last.Sent, last.RenewAfter)) {
			return
		}
		backoff := minPoll
		for {
			st, err := l.steps.Renew(ctx, key, token)
			if err == nil {
				if st.Lease <= 0 { // a step that does not say keeps the grant's timing
					st.Lease, st.RenewAfter = last.Lease, last.RenewAfter
				}
				last = st
				window.Store(int64(abortAfter(last)))
				deadline.Reset(l.until(last.Sent, abortAfter(last)))
				break
			}
			if errors.Is(err, ErrLockLost) {
				abort(fmt.Errorf("%w: %q: the store no longer holds this lease", ErrLockLost, key))
				return
			}
			// A transport failure: try again until the deadline aborts.
			if !sleep(ctx, backoff) {
				return
			}
			backoff = min(2*backoff, maxPoll)
		}
	}
}

// sleep waits d or until ctx is done, and reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// releaseTimeout bounds a release: one that cannot reach the store in that
// time leaves the lease to expire on its own.
const releaseTimeout = 10 * time.Second

// release gives up token's lease or its place in the queue. It runs even
// when ctx is done (that is often why it runs) and its failure is not
// reported: an unreleased lease expires.
func (l *Locks) release(ctx context.Context, key, token string) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	_, _ = l.steps.Release(rctx, key, token)
}

// DriverLockSteps are the lock steps over a driver, with the lease timing
// of one store: the steps of a process's own Locks, and what a server runs
// for a remote holder (httpstore's /v1/locks/* routes). Every step checks
// ctx, key and token (ErrInvalidID) and, for Acquire, wait not negative
// (ErrInvalidEntry), before it reaches the driver.
type DriverLockSteps struct {
	d                 driver.Driver
	now               func() time.Time
	lease, renewAfter time.Duration
}

// NewDriverLockSteps returns the steps over d with the given timing; now
// stamps Sent (nil: time.Now). The timing is not checked here: New checks
// it for a Store's own steps.
func NewDriverLockSteps(d driver.Driver, now func() time.Time, lease, renewAfter time.Duration) *DriverLockSteps {
	if now == nil {
		now = time.Now
	}
	return &DriverLockSteps{d: d, now: now, lease: lease, renewAfter: renewAfter}
}

// Timing returns the lease duration and the renew-after of the steps.
func (s *DriverLockSteps) Timing() (lease, renewAfter time.Duration) { return s.lease, s.renewAfter }

func (s *DriverLockSteps) step(st driver.LockState, sent time.Time) LockStep {
	return LockStep{LockState: st, Sent: sent, Lease: s.lease, RenewAfter: s.renewAfter}
}

// Acquire implements LockSteps: a WatchLock before each AcquireLock, so
// that a change that commits after the ask cannot go unnoticed, then a
// wait for the change, for the holder's lease to run out (a holder that
// died never releases), in time to keep the place, or for wait to pass.
func (s *DriverLockSteps) Acquire(ctx context.Context, key, token string, wait time.Duration) (LockStep, error) {
	if err := s.check(ctx, key, token); err != nil {
		return LockStep{}, err
	}
	if wait < 0 {
		return LockStep{}, fmt.Errorf("%w: wait %v is negative", ErrInvalidEntry, wait)
	}
	var expired <-chan time.Time
	if wait > 0 && wait < forever {
		t := time.NewTimer(wait)
		defer t.Stop()
		expired = t.C
	}
	backoff := minPoll
	for {
		var changed <-chan struct{}
		wctx, unwatch := context.WithCancel(ctx)
		if wait > 0 {
			var err error
			if changed, err = s.d.WatchLock(wctx, key); err != nil {
				unwatch()
				return LockStep{}, err
			}
		}
		sent := s.now()
		st, err := s.d.AcquireLock(ctx, driver.LockRequest{Key: key, Token: token, Lease: s.lease})
		if err != nil || st.Held || wait == 0 {
			unwatch()
			return s.step(st, sent), err
		}
		next := s.renewAfter
		if !st.ExpiresAt.IsZero() {
			if d := st.ExpiresAt.Sub(st.Now) + time.Millisecond; d < next {
				next = d
			}
		}
		if changed == nil {
			next = min(next, backoff)
			backoff = min(2*backoff, maxPoll)
		}
		t := time.NewTimer(next)
		select {
		case <-changed:
		case <-t.C:
		case <-ctx.Done():
		case <-expired:
			t.Stop()
			unwatch()
			return s.step(st, sent), nil
		}
		t.Stop()
		unwatch()
		if err := ctx.Err(); err != nil {
			return LockStep{}, err
		}
	}
}

// Renew implements LockSteps.
func (s *DriverLockSteps) Renew(ctx context.Context, key, token string) (LockStep, error) {
	if err := s.check(ctx, key, token); err != nil {
		return LockStep{}, err
	}
	sent := s.now()
	st, err := s.d.RenewLock(ctx, key, token, s.lease)
	return s.step(st, sent), err
}

// Release implements LockSteps.
func (s *DriverLockSteps) Release(ctx context.Context, key, token string) (LockStep, error) {
	if err := s.check(ctx, key, token); err != nil {
		return LockStep{}, err
	}
	sent := s.now()
	st, err := s.d.ReleaseLock(ctx, key, token)
	return s.step(st, sent), err
}

func (s *DriverLockSteps) check(ctx context.Context, key, token string) error {
	if err := beginID(ctx, "key", key); err != nil {
		return err
	}
	return checkID("token", token)
}
