package persisttest

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ckptstore/ckptstore/persist"
	"github.com/ckptstore/ckptstore/persist/driver"
	"github.com/stretchr/testify/require"
)

var lockTests = []test{
	{"Exclusion", lockTest(testLockExclusion)},
	{"ArrivalOrder", lockTest(testLockArrivalOrder)},
	{"ReleaseWakesWaiter", lockTest(testLockWake)},
	{"NoBusyPolling", lockTest(testLockNoBusyPolling)},
	{"RenewalKeepsLease", lockTest(func(t *testing.T, e *env, _ *clock) { testLockRenewal(t, e, 5) })},
	{"LostLeaseAborts", lockTest(testLockLost)},
	{"UnconfirmedRenewAbortsInTime", lockTest(testLockUnconfirmedRenew)},
	{"StaleReleaseKeepsSuccessor", lockTest(testLockStaleRelease)},
	{"DeadHolderExpires", lockTest(testLockDeadHolder)},
	{"ErrorReleases", lockTest(testLockError)},
	{"PanicReleases", lockTest(testLockPanic)},
	{"WaiterGivesUp", lockTest(testLockGiveUp)},
	{"DeadWaiterIsSkipped", lockTest(testLockDeadWaiter)},
	{"FencesGoUp", lockTest(testLockFences)},
	{"KeysAreIndependent", lockTest(testLockKeys)},
	{"DriverSteps", lockTest(testLockDriverSteps)},
	{"PortableSteps", lockTest(testLockPortableSteps)},
}

// lockTest runs a lock test in a synctest bubble: time is virtual, so
// leases of seconds pass at once and "no time passed" is exact.
func lockTest(f func(t *testing.T, e *env, store *clock)) func(*testing.T, NewDriver) {
	return func(t *testing.T, nd NewDriver) {
		synctest.Test(t, func(t *testing.T) {
			e, store := newLockEnv(t, nd)
			f(t, e, store)
			checkNoOverlap(t, e.d.steps())
		})
	}
}

// checkNoOverlap checks the lock history: for each key, by the store's
// clock, every lease ends (its release, or its last expiry) no later than
// the next lease of that key begins.
func checkNoOverlap(t *testing.T, steps []lockStep) {
	t.Helper()
	type lease struct {
		token      string
		start, end time.Time
	}
	type id struct {
		key   string
		fence int64
	}
	leases := map[id]*lease{}
	var order []id
	for _, s := range steps {
		k := id{s.key, s.st.Fence}
		l := leases[k]
		switch {
		case s.op == "acquire" && l == nil:
			leases[k] = &lease{token: s.token, start: s.st.Now, end: s.st.ExpiresAt}
			order = append(order, k)
		case (s.op == "acquire" || s.op == "renew") && l != nil:
			l.end = s.st.ExpiresAt // a renewal, or a repeated grant to the holder
		case s.op == "release" && s.st.Held && l != nil && s.st.Now.Before(l.end):
			l.end = s.st.Now
		}
	}
	byKey := map[string][]*lease{}
	for _, k := range order {
		byKey[k.key] = append(byKey[k.key], leases[k])
	}
	for key, ls := range byKey {
		slices.SortFunc(ls, func(a, b *lease) int { return a.start.Compare(b.start) })
		for i := 1; i < len(ls); i++ {
			require.False(t, ls[i].start.Before(ls[i-1].end), "key %q: %s's lease [%v, %v] overlaps %s's from %v",
				key, ls[i-1].token, ls[i-1].start, ls[i-1].end, ls[i].token, ls[i].start)
		}
	}
}

// holdUntil starts a WithLock on key whose fn signals it holds the lock
// and returns when release is closed; done receives WithLock's result.
func (e *env) holdUntil(key string, release <-chan struct{}) (held <-chan struct{}, done <-chan error) {
	h, d := make(chan struct{}), make(chan error, 1)
	go func() {
		d <- e.s.Locks.WithLock(e.ctx, key, func(ctx context.Context) error {
			close(h)
			select {
			case <-release:
			case <-ctx.Done():
			}
			return nil
		})
	}()
	return h, d
}

func testLockExclusion(t *testing.T, e *env, _ *clock) {
	var inside, max atomic.Int32
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 5 {
				err := e.s.Locks.WithLock(e.ctx, "k", func(ctx context.Context) error {
					n := inside.Add(1)
					if n > max.Load() {
						max.Store(n)
					}
					time.Sleep(3 * time.Second) // past a renewal now and then
					inside.Add(-1)
					return ctx.Err()
				})
				if err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	require.EqualValues(t, 1, max.Load(), "two holders ran at once")
}

func testLockArrivalOrder(t *testing.T, e *env, _ *clock) {
	release := make(chan struct{})
	held, done := e.holdUntil("k", release)
	<-held
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	for i := range 5 {
		wg.Go(func() {
			err := e.s.Locks.WithLock(e.ctx, "k", func(context.Context) error {
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				time.Sleep(time.Second)
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		})
		synctest.Wait() // waiter i is queued before i+1 arrives
	}
	time.Sleep(3 * testLease) // the waiters keep their places through a long wait
	close(release)
	require.NoError(t, <-done)
	wg.Wait()
	require.Equal(t, []int{0, 1, 2, 3, 4}, order)
}

func testLockWake(t *testing.T, e *env, _ *clock) {
	release := make(chan struct{})
	held, done := e.holdUntil("k", release)
	<-held
	got := make(chan time.Time, 1)
	go func() {
		_ = e.s.Locks.WithLock(e.ctx, "k", func(context.Context) error { got <- time.Now(); return nil })
	}()
	synctest.Wait()
	released := time.Now()
	close(release)
	require.NoError(t, <-done)
	require.WithinDuration(t, released, <-got, retrySlack, "the waiter took the lock without waiting for a timer")
}

func testLockNoBusyPolling(t *testing.T, e *env, _ *clock) {
	const holdFor = 10 * time.Minute
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = e.s.Locks.WithLock(e.ctx, "k", func(context.Context) error { time.Sleep(holdFor); return nil })
	}()
	synctest.Wait()
	var token string
	err := e.s.Locks.WithLock(e.ctx, "k", func(context.Context) error {
		steps := e.d.steps()
		token = steps[len(steps)-1].token
		return nil
	})
	require.NoError(t, err)
	<-done
	require.InDelta(t, float64(holdFor), float64(time.Since(start)), float64(retrySlack), "the waiter got the lock when it was released")
	calls := e.d.acquireCalls(token)
	bound := int(holdFor/testRenewAfter) + 3
	require.LessOrEqual(t, calls, bound, "a waiter asked %d times in %v; it should wait for a change, not poll", calls, holdFor)
}

// testLockRenewal: through rounds leases, an intruder never finds the
// lease its holder renews lapsed.
func testLockRenewal(t *testing.T, e *env, rounds int) {
	err := e.s.Locks.WithLock(e.ctx, "k", func(ctx context.Context) error {
		for range rounds {
			time.Sleep(e.lease)
			st, err := e.d.Driver.AcquireLock(ctx, driver.LockRequest{Key: "k", Token: "intruder", Lease: e.lease})
			require.NoError(t, err)
			require.False(t, st.Held, "the lease lapsed while its holder renewed it")
			_, err = e.d.Driver.ReleaseLock(ctx, "k", "intruder")
			require.NoError(t, err)
		}
		return ctx.Err()
	})
	require.NoError(t, err)
}

func testLockLost(t *testing.T, e *env, store *clock) {
	var cause error
	err := e.s.Locks.WithLock(e.ctx, "k", func(ctx context.Context) error {
		store.Add(testLease + time.Second) // the store's clock runs ahead: the lease expires there
		st, err := e.d.AcquireLock(ctx, driver.LockRequest{Key: "k", Token: "successor", Lease: time.Hour})
		require.NoError(t, err)
		require.True(t, st.Held, "the store gives an expired lease away")
		<-ctx.Done()
		cause = context.Cause(ctx)
		return nil
	})
	require.ErrorIs(t, cause, persist.ErrLockLost)
	require.ErrorIs(t, err, persist.ErrLockLost, "fn returned nil, but its lease was lost: WithLock says so")
	st, err := e.d.RenewLock(e.ctx, "k", "successor", time.Hour)
	require.NoError(t, err, "the loser's release did not free the successor")
	require.True(t, st.Held)
}

// testLockUnconfirmedRenew: with every renewal hanging, fn is aborted
// after a renewal was due and before the store's lease expires. The
// holder's and the store's clocks are one here (the bubble's, or one
// machine's).
func testLockUnconfirmedRenew(t *testing.T, e *env, _ *clock) {
	var aborted time.Time
	var cause error
	err := e.s.Locks.WithLock(e.ctx, "k", func(ctx context.Context) error {
		e.d.setStallRenew(true) // every renewal now hangs, as in a partition
		<-ctx.Done()
		aborted, cause = time.Now(), context.Cause(ctx)
		return nil
	})
	e.d.setStallRenew(false)
	require.ErrorIs(t, err, persist.ErrLockLost)
	require.ErrorIs(t, cause, persist.ErrLockLost)
	grant, ok := e.d.grant("k")
	require.True(t, ok)
	require.True(t, aborted.Before(grant.st.ExpiresAt), "fn was aborted at %v, not before the store's lease expired at %v", aborted, grant.st.ExpiresAt)
	require.True(t, aborted.After(grant.st.Now.Add(e.renewAfter)), "fn was aborted before a renewal was even due")
}

func testLockStaleRelease(t *testing.T, e *env, store *clock) {
	release := make(chan struct{})
	heldA, doneA := e.holdUntil("k", release)
	<-heldA
	store.Add(testLease) // A's lease expires by the store's clock
	releaseB := make(chan struct{})
	heldB, doneB := e.holdUntil("k", releaseB)
	<-heldB
	close(release) // A, unaware, finishes and releases
	<-doneA
	st, err := e.d.Driver.AcquireLock(e.ctx, driver.LockRequest{Key: "k", Token: "third", Lease: testLease})
	require.NoError(t, err)
	require.False(t, st.Held, "A's stale release freed B's lease")
	_, err = e.d.Driver.ReleaseLock(e.ctx, "k", "third")
	require.NoError(t, err)
	close(releaseB)
	require.NoError(t, <-doneB)
}

func testLockDeadHolder(t *testing.T, e *env, _ *clock) {
	st := must(e.d.AcquireLock(e.ctx, driver.LockRequest{Key: "k", Token: "crashed", Lease: testLease})).of(t)
	require.True(t, st.Held)
	start := time.Now()
	require.NoError(t, e.s.Locks.WithLock(e.ctx, "k", func(context.Context) error { return nil }))
	waited := time.Since(start)
	require.GreaterOrEqual(t, waited, testLease, "the lock was taken from a live lease")
	require.Less(t, waited, testLease+testRenewAfter, "a dead holder's lease blocked longer than its expiry")
}

var errBoom = errors.New("boom")

func testLockError(t *testing.T, e *env, _ *clock) {
	err := e.s.Locks.WithLock(e.ctx, "k", func(context.Context) error { return errBoom })
	require.ErrorIs(t, err, errBoom)
	start := time.Now()
	require.NoError(t, e.s.Locks.WithLock(e.ctx, "k", func(context.Context) error { return nil }))
	require.Zero(t, time.Since(start), "a failing fn released the lock")
}

func testLockPanic(t *testing.T, e *env, _ *clock) {
	func() {
		defer func() { require.Equal(t, "fn panicked", recover()) }()
		_ = e.s.Locks.WithLock(e.ctx, "k", func(context.Context) error { panic("fn panicked") })
	}()
	start := time.Now()
	require.NoError(t, e.s.Locks.WithLock(e.ctx, "k", func(context.Context) error { return nil }))
	require.Zero(t, time.Since(start), "a panicking fn released the lock")
}

func testLockGiveUp(t *testing.T, e *env, _ *clock) {
	release := make(chan struct{})
	held, done := e.holdUntil("k", release)
	<-held
	ctx, cancel := context.WithCancel(e.ctx)
	gaveUp := make(chan error, 1)
	go func() {
		gaveUp <- e.s.Locks.WithLock(ctx, "k", func(context.Context) error { panic("fn ran after its caller gave up") })
	}()
	synctest.Wait()
	got := make(chan time.Time, 1)
	go func() {
		_ = e.s.Locks.WithLock(e.ctx, "k", func(context.Context) error { got <- time.Now(); return nil })
	}()
	synctest.Wait()
	cancel()
	require.ErrorIs(t, <-gaveUp, context.Canceled)
	released := time.Now()
	close(release)
	require.NoError(t, <-done)
	// The quitter's release and the holder's may conflict (retrySlack); a
	// place still held would cost the successor far more.
	require.WithinDuration(t, released, <-got, retrySlack, "the waiter that gave up still held a place in the queue")
}

// retrySlack is how much virtual time a case allows a driver's retries of
// conflicting transactions where steps of two callers race (memkv backs
// off up to 1 ms, doubling: three retries stay under 7 ms). It is below the
// portable layer's first poll (minPoll, 10 ms) and far below testRenewAfter
// and testLease, so a wake-up by a timer instead of the release, or a
// place kept in the queue, still fails.
const retrySlack = 5 * time.Millisecond

func testLockFences(t *testing.T, e *env, _ *clock) {
	var fences []int64
	for range 3 {
		require.NoError(t, e.s.Locks.WithLock(e.ctx, "k", func(ctx context.Context) error {
			f, ok := persist.LockFence(ctx)
			require.True(t, ok)
			fences = append(fences, f)
			return nil
		}))
	}
	require.Less(t, fences[0], fences[1])
	require.Less(t, fences[1], fences[2])
}

func testLockKeys(t *testing.T, e *env, _ *clock) {
	release := make(chan struct{})
	held, done := e.holdUntil("k1", release)
	<-held
	start := time.Now()
	require.NoError(t, e.s.Locks.WithLock(e.ctx, "k2", func(context.Context) error { return nil }))
	require.Less(t, time.Since(start), retrySlack, "a lock on k1 blocked k2")
	close(release)
	require.NoError(t, <-done)
}

// testLockDriverSteps checks the driver's lock steps one by one, by the
// store's clock: grant, re-grant to the holder, queueing, expiry, renewal,
// release by a non-holder.
func testLockDriverSteps(t *testing.T, e *env, store *clock) {
	d := e.d
	req := func(token string) driver.LockRequest {
		return driver.LockRequest{Key: "k", Token: token, Lease: testLease}
	}
	a := must(d.AcquireLock(e.ctx, req("a"))).of(t)
	require.True(t, a.Held)
	require.Equal(t, a.Now.Add(testLease), a.ExpiresAt)
	again := must(d.AcquireLock(e.ctx, req("a"))).of(t)
	require.True(t, again.Held)
	require.Equal(t, a.Fence, again.Fence, "a re-grant to the holder is not a new holder")
	b := must(d.AcquireLock(e.ctx, req("b"))).of(t)
	require.False(t, b.Held)
	require.Equal(t, a.ExpiresAt, b.ExpiresAt, "a waiter learns when the holder's lease expires")
	c, err := d.AcquireLock(e.ctx, req("c"))
	require.NoError(t, err)
	require.Equal(t, 1, c.Ahead)
	_, err = d.RenewLock(e.ctx, "k", "b", testLease)
	require.ErrorIs(t, err, persist.ErrLockLost, "a waiter cannot renew")
	rel := must(d.ReleaseLock(e.ctx, "k", "nobody")).of(t)
	require.False(t, rel.Held)
	still, err := d.RenewLock(e.ctx, "k", "a", testLease)
	require.NoError(t, err, "a release by a non-holder freed the lease")
	require.True(t, still.Held)

	store.Add(testLease / 2)
	for _, w := range []string{"b", "c"} { // keep the waiters' places
		st, err := d.AcquireLock(e.ctx, req(w))
		require.NoError(t, err)
		require.False(t, st.Held)
	}
	store.Add(testLease / 2) // the store's now is a's expiry: an expired lease is not live
	_, err = d.RenewLock(e.ctx, "k", "a", testLease)
	require.ErrorIs(t, err, persist.ErrLockLost)
	cEarly := must(d.AcquireLock(e.ctx, req("c"))).of(t)
	require.False(t, cEarly.Held, "c jumped the queue ahead of b")
	bNow := must(d.AcquireLock(e.ctx, req("b"))).of(t)
	require.True(t, bNow.Held)
	require.Greater(t, bNow.Fence, a.Fence)
	relA := must(d.ReleaseLock(e.ctx, "k", "a")).of(t)
	require.False(t, relA.Held)
	relB := must(d.ReleaseLock(e.ctx, "k", "b")).of(t)
	require.True(t, relB.Held)
	cNow, err := d.AcquireLock(e.ctx, req("c"))
	require.NoError(t, err)
	require.True(t, cNow.Held)
	_, err = d.ReleaseLock(e.ctx, "k", "c")
	require.NoError(t, err)
}

// testLockDeadWaiter: a waiter that stops asking (its process died) loses
// its place once the place expires, so it cannot block the queue forever.
func testLockDeadWaiter(t *testing.T, e *env, _ *clock) {
	release := make(chan struct{})
	held, done := e.holdUntil("k", release)
	<-held
	st := must(e.d.AcquireLock(e.ctx, driver.LockRequest{Key: "k", Token: "ghost", Lease: e.lease})).of(t)
	require.False(t, st.Held)
	got := make(chan error, 1)
	ctx, cancel := context.WithTimeout(e.ctx, 5*e.lease)
	defer cancel()
	go func() { got <- e.s.Locks.WithLock(ctx, "k", func(context.Context) error { return nil }) }()
	e.settle(t, "live waiter queued", func() bool { return len(e.d.waiting("k")) == 2 })
	close(release)
	require.NoError(t, <-done)
	require.NoError(t, <-got, "a dead waiter kept the lock from the live one")
}

// testLockPortableSteps runs the protocol through the server's lock steps,
// as a remote holder does: a grant, a waiter, an acquire that waits and is
// woken by the release (no timer), a renewal, a lost renewal, fences.
func testLockPortableSteps(t *testing.T, e *env, _ *clock) {
	l := e.lockSteps()
	a := must(l.Acquire(e.ctx, "k", "remote-a", 0)).of(t)
	require.True(t, a.Held)
	require.Equal(t, testLease, a.Lease)
	require.Equal(t, testRenewAfter, a.RenewAfter)
	b := must(l.Acquire(e.ctx, "k", "remote-b", 0)).of(t)
	require.False(t, b.Held)
	r, err := l.Renew(e.ctx, "k", "remote-a")
	require.NoError(t, err)
	require.True(t, r.Held)
	_, err = l.Renew(e.ctx, "k", "remote-b")
	require.ErrorIs(t, err, persist.ErrLockLost)
	got := make(chan persist.LockStep, 1)
	go func() {
		st := must(l.Acquire(e.ctx, "k", "remote-b", time.Hour)).of(t)
		got <- st
	}()
	synctest.Wait()
	start := time.Now()
	rel := must(l.Release(e.ctx, "k", "remote-a")).of(t)
	require.True(t, rel.Held)
	b = <-got
	require.True(t, b.Held)
	require.WithinDuration(t, start, time.Now(), retrySlack, "the waiting acquire was not woken by the release")
	require.Greater(t, b.Fence, a.Fence)
	timed, err := l.Acquire(e.ctx, "k", "remote-c", testLease/4)
	require.NoError(t, err)
	require.False(t, timed.Held, "a wait that passed answers the last state")
	_, err = l.Release(e.ctx, "k", "remote-c")
	require.NoError(t, err)
	_, err = l.Release(e.ctx, "k", "remote-b")
	require.NoError(t, err)
}

// lockSteps returns the lock steps of the server's store (the env's own
// store, or the one behind a remote client).
func (e *env) lockSteps() *persist.DriverLockSteps {
	return e.server.Locks.(*persist.Locks).Steps().(*persist.DriverLockSteps)
}
