package persist

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ckptstore/ckptstore/persist/driver"
)

// Locks is TanStack's LockStore on a driver: a lease per key in the store,
// renewed while the critical section runs. Everything but the atomic steps
// is here, once for every driver: waiting (on the driver's notification,
// never by busy-polling), renewal, and the abort signal.
//
// Lease expiry is judged by the store's clock (the driver's). The holder
// judges its own safety by its own clock (Options.Now): it counts from the
// moment it sent the acquire or renew that the store last confirmed, and
// aborts the critical section's context when a renewal has not been
// confirmed by RenewAfter + (LeaseDuration − RenewAfter)/2 after that
// moment. The store's lease runs LeaseDuration from a moment no earlier, so
// the holder stops before the store can give the key to anyone else, as
// long as the two clocks run at about the same rate.
type Locks struct {
	*core
	lease, renewAfter time.Duration
}

// minPoll and maxPoll bound the backoff of a waiter whose driver cannot
// notify (WatchLock returns a nil channel).
const (
	minPoll = 10 * time.Millisecond
	maxPoll = time.Second
)

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
// driver's queue keeps it, and gives up with ctx's error when ctx is done
// first. fn's context is cancelled with a cause wrapping ErrLockLost when
// the lease is lost or a renewal is not confirmed in time (see Locks); fn
// must then stop changing anything outside. When fn returns nil after such
// a loss, WithLock returns that cause, since fn's work may have overlapped
// a successor's. However fn ends (nil, an error, a panic), the lock is
// released; a release never frees a successor's lease. Check order: ctx,
// key (ErrInvalidID).
func (l *Locks) WithLock(ctx context.Context, key string, fn func(ctx context.Context) error) error {
	if err := begin(ctx); err != nil {
		return err
	}
	if err := checkID("key", key); err != nil {
		return err
	}
	token := randomID()
	sent, st, err := l.acquire(ctx, key, token)
	if err != nil {
		return err
	}
	return l.hold(ctx, key, token, sent, st, fn)
}

// acquire waits until token holds key's lease and returns when the grant
// was asked for by the holder's clock.
func (l *Locks) acquire(ctx context.Context, key, token string) (time.Time, driver.LockState, error) {
	backoff := minPoll
	for {
		// Watch before asking, so that a release that commits after the
		// ask cannot go unnoticed.
		wctx, unwatch := context.WithCancel(ctx)
		changed, err := l.d.WatchLock(wctx, key)
		if err != nil {
			unwatch()
			l.release(ctx, key, token)
			return time.Time{}, driver.LockState{}, err
		}
		sent := l.now()
		st, err := l.d.AcquireLock(ctx, driver.LockRequest{Key: key, Token: token, Lease: l.lease})
		if err != nil || st.Held {
			unwatch()
			if err != nil {
				l.release(ctx, key, token)
			}
			return sent, st, err
		}
		// Wake for a change, for the holder's lease to run out (a holder
		// that died never releases), or in time to keep our place.
		wait := l.renewAfter
		if !st.ExpiresAt.IsZero() {
			if d := st.ExpiresAt.Sub(st.Now) + time.Millisecond; d < wait {
				wait = d
			}
		}
		if changed == nil {
			wait = min(wait, backoff)
			backoff = min(2*backoff, maxPoll)
		}
		t := time.NewTimer(wait)
		select {
		case <-changed:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
		unwatch()
		if err := ctx.Err(); err != nil {
			l.release(ctx, key, token) // give up our place in the queue
			return time.Time{}, driver.LockState{}, err
		}
	}
}

// abortAfter is how long after the last confirmed acquire or renew was sent
// the holder gives up.
func (l *Locks) abortAfter() time.Duration { return l.renewAfter + (l.lease-l.renewAfter)/2 }

// until is the time from the holder's now to sent+d.
func (l *Locks) until(sent time.Time, d time.Duration) time.Duration {
	return max(0, sent.Add(d).Sub(l.now()))
}

// hold runs fn with the lease kept alive, then releases it.
func (l *Locks) hold(ctx context.Context, key, token string, sent time.Time, st driver.LockState, fn func(context.Context) error) error {
	fctx, abort := context.WithCancelCause(context.WithValue(ctx, fenceKey{}, st.Fence))
	defer abort(nil)
	kctx, stopKeeping := context.WithCancel(fctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		l.keep(kctx, abort, key, token, sent)
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
func (l *Locks) keep(ctx context.Context, abort context.CancelCauseFunc, key, token string, sent time.Time) {
	deadline := time.AfterFunc(l.until(sent, l.abortAfter()), func() {
		abort(fmt.Errorf("%w: no renewal of %q was confirmed within %v", ErrLockLost, key, l.abortAfter()))
	})
	defer deadline.Stop()
	for {
		if !sleep(ctx, l.until(sent, l.renewAfter)) {
			return
		}
		backoff := minPoll
		for {
			s := l.now()
			_, err := l.d.RenewLock(ctx, key, token, l.lease)
			if err == nil {
				sent = s
				deadline.Reset(l.until(sent, l.abortAfter()))
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
	_, _ = l.d.ReleaseLock(rctx, key, token)
}

// MaxLockLease is the longest lease a caller of the lock steps may ask for.
const MaxLockLease = 24 * time.Hour

// The lock steps, for a server that lets a remote holder run the protocol
// of WithLock itself (the holder's clock is then the remote one): each is
// one driver step after the pure checks. Check order of each: ctx, key,
// token (ErrInvalidID), lease 1 ms to MaxLockLease (ErrInvalidEntry).

// Acquire grants key's lease to token, or queues token; see
// driver.Locks.AcquireLock.
func (l *Locks) Acquire(ctx context.Context, key, token string, lease time.Duration) (driver.LockState, error) {
	if err := l.checkStep(ctx, key, token, lease); err != nil {
		return driver.LockState{}, err
	}
	return l.d.AcquireLock(ctx, driver.LockRequest{Key: key, Token: token, Lease: lease})
}

// Renew extends token's live lease, or fails with ErrLockLost.
func (l *Locks) Renew(ctx context.Context, key, token string, lease time.Duration) (driver.LockState, error) {
	if err := l.checkStep(ctx, key, token, lease); err != nil {
		return driver.LockState{}, err
	}
	return l.d.RenewLock(ctx, key, token, lease)
}

// Release ends token's lease or its place in the queue; a token that holds
// neither changes nothing.
func (l *Locks) Release(ctx context.Context, key, token string) (driver.LockState, error) {
	if err := l.checkStep(ctx, key, token, time.Millisecond); err != nil {
		return driver.LockState{}, err
	}
	return l.d.ReleaseLock(ctx, key, token)
}

// Watch returns the driver's change notification for key (nil when the
// driver has none); cancel ctx to stop watching.
func (l *Locks) Watch(ctx context.Context, key string) (<-chan struct{}, error) {
	if err := begin(ctx); err != nil {
		return nil, err
	}
	if err := checkID("key", key); err != nil {
		return nil, err
	}
	return l.d.WatchLock(ctx, key)
}

func (l *Locks) checkStep(ctx context.Context, key, token string, lease time.Duration) error {
	if err := begin(ctx); err != nil {
		return err
	}
	if err := checkID("key", key); err != nil {
		return err
	}
	if err := checkID("token", token); err != nil {
		return err
	}
	if lease < time.Millisecond || lease > MaxLockLease {
		return fmt.Errorf("%w: lease %v is not 1ms to %v", ErrInvalidEntry, lease, MaxLockLease)
	}
	return nil
}
