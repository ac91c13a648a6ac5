package persisttest

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore/persist"
	"github.com/ckptstore/ckptstore/persist/driver"
	"github.com/stretchr/testify/require"
)

// RunNetwork is Run for a driver whose waits involve the network (a Redis
// driver's lock subscription), which keeps a testing/synctest bubble's
// virtual time from advancing: every group of Run, with the real-time lock
// cases (RunRealTimeLocks) in place of the synctest ones.
//
// The groups run side by side, and so do the real-time lock cases (each on
// a store of its own), as in RunRemote: their seconds of leases are most of
// a network driver's run, and they mostly sleep.
func RunNetwork(t *testing.T, newDriver NewDriver) {
	runGroupsOpt(t, newDriver, suiteGroups(realTimeLockTests), true)
}

// RunRealTimeLocks runs the real-time lock cases only, for a driver that
// also runs Run's synctest ones (so that both variants are proven on it).
//
// The cases run on real time with leases of seconds, and assert what no
// scheduling delay can change: exclusion and the overlap check of the
// lock history by the store's clock, arrival order, lost leases, which
// token holds a lease, fences, and bounds on the number of driver calls.
// Where a case needs a time, it compares readings of the store's clock in
// the history (a grant comes no earlier than the dead holder's expiry),
// or allows a margin of a whole second. None of them moves the store's
// clock, so they also run on a driver that reads the server's own clock.
func RunRealTimeLocks(t *testing.T, newDriver NewDriver) {
	runGroupsOpt(t, newDriver, []group{{"Locks", realTimeLockTests}}, true)
}

var realTimeLockTests = []test{
	{"Exclusion", rtLockTest(testRTExclusion)},
	{"ArrivalOrder", rtLockTest(testRTArrivalOrder)},
	{"NoBusyPolling", rtLockTest(testRTNoBusyPolling)},
	{"RenewalKeepsLease", rtLockTest(func(t *testing.T, e *env) { testLockRenewal(t, e, 3) })},
	{"LostLeaseAborts", rtLockTest(testRTLost)},
	{"UnconfirmedRenewAbortsInTime", rtLockTest(func(t *testing.T, e *env) { testLockUnconfirmedRenew(t, e, nil) })},
	{"StaleReleaseKeepsSuccessor", rtLockTest(testRTStaleRelease)},
	{"DeadHolderExpires", rtLockTest(testRTDeadHolder)},
	{"ErrorReleases", rtLockTest(testRTError)},
	{"PanicReleases", rtLockTest(testRTPanic)},
	{"WaiterGivesUp", rtLockTest(testRTGiveUp)},
	{"DeadWaiterIsSkipped", rtLockTest(func(t *testing.T, e *env) { testLockDeadWaiter(t, e, nil) })},
	{"FencesGoUp", rtLockTest(testLockFencesRT)},
	{"KeysAreIndependent", rtLockTest(testRTKeys)},
	{"PortableSteps", rtLockTest(testRTPortableSteps)},
}

// The real-time lease: long enough that a loaded machine's scheduling
// delays (tens of ms) are small beside it, short enough that the cases
// take seconds. The holder aborts an unconfirmed lease at
// rtRenewAfter + (rtLease − rtRenewAfter)/2 = 2 s, a second before the
// store's lease can expire.
const (
	rtLease      = 3 * time.Second
	rtRenewAfter = time.Second
	// rtPatience bounds every wait for something that must happen, so a
	// broken driver fails the case instead of hanging the suite.
	rtPatience = 30 * time.Second
)

func rtLockTest(f func(t *testing.T, e *env)) func(*testing.T, NewDriver) {
	return func(t *testing.T, nd NewDriver) {
		t.Helper()
		// Unmoved and outside a bubble, both clocks read time.Now.
		e := makeEnv(t, nd, &clock{}, &clock{}, rtLease, rtRenewAfter)
		ctx, cancel := context.WithTimeout(context.Background(), 4*rtPatience)
		defer cancel()
		e.ctx = ctx
		e.settle = eventually
		f(t, e)
		checkNoOverlap(t, e.d.steps())
	}
}

// eventually polls cond every 5 ms until it holds, failing after
// rtPatience. Only used to learn that another goroutine reached a state
// (queued, holding), never to time anything.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(rtPatience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", rtPatience, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waiting returns the tokens queued on key (a "wait" step) that were never
// granted it, in the order they first queued.
func (r *recorder) waiting(key string) []string {
	granted := map[string]bool{}
	var out []string
	for _, s := range r.steps() {
		if s.key != key {
			continue
		}
		switch s.op {
		case "acquire":
			granted[s.token] = true
		case "wait":
			if !slices.Contains(out, s.token) {
				out = append(out, s.token)
			}
		}
	}
	return slices.DeleteFunc(out, func(tok string) bool { return granted[tok] })
}

// grant returns the last grant of key to a token other than those in
// not, or false.
func (r *recorder) grant(key string, not ...string) (lockStep, bool) {
	steps := r.steps()
	for i := len(steps) - 1; i >= 0; i-- {
		if s := steps[i]; s.op == "acquire" && s.key == key && !slices.Contains(not, s.token) {
			return s, true
		}
	}
	return lockStep{}, false
}

func testRTExclusion(t *testing.T, e *env) {
	var inside, most atomic.Int32
	var wg sync.WaitGroup
	for g := range 3 {
		wg.Go(func() {
			for i := range 3 {
				hold := 50 * time.Millisecond
				if g == 0 && i == 0 {
					hold = rtRenewAfter + 300*time.Millisecond // one hold across a renewal
				}
				err := e.s.Locks.WithLock(e.ctx, "k", func(ctx context.Context) error {
					n := inside.Add(1)
					for {
						m := most.Load()
						if n <= m || most.CompareAndSwap(m, n) {
							break
						}
					}
					time.Sleep(hold)
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
	require.EqualValues(t, 1, most.Load(), "two holders ran at once")
}

func testRTArrivalOrder(t *testing.T, e *env) {
	release := make(chan struct{})
	held, done := e.holdUntil("k", release)
	<-held
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			err := e.s.Locks.WithLock(e.ctx, "k", func(context.Context) error {
				mu.Lock()
				order = append(order, i)
				mu.Unlock()
				return nil
			})
			if err != nil {
				t.Error(err)
			}
		})
		eventually(t, "waiter queued", func() bool { return len(e.d.waiting("k")) == i+1 })
	}
	time.Sleep(rtLease + rtRenewAfter) // the waiters keep their places past a lease
	close(release)
	require.NoError(t, <-done)
	wg.Wait()
	require.Equal(t, []int{0, 1, 2, 3}, order)
}

// testRTNoBusyPolling: a waiter behind a holder of 2 leases asks a bounded
// number of times (a wait for a change or for its place's renewal, never a
// poll loop), and gets the lock only once the holder released it.
func testRTNoBusyPolling(t *testing.T, e *env) {
	const holdFor = 2 * rtLease
	var released atomic.Bool
	done := make(chan error, 1)
	go func() {
		done <- e.s.Locks.WithLock(e.ctx, "k", func(context.Context) error {
			time.Sleep(holdFor)
			released.Store(true)
			return nil
		})
	}()
	eventually(t, "holder granted", func() bool { _, ok := e.d.grant("k"); return ok })
	first, _ := e.d.grant("k")
	err := e.s.Locks.WithLock(e.ctx, "k", func(context.Context) error {
		require.True(t, released.Load(), "the waiter got the lock before the holder let go")
		return nil
	})
	require.NoError(t, err)
	require.NoError(t, <-done)
	g, ok := e.d.grant("k", first.token)
	require.True(t, ok)
	calls := e.d.acquireCalls(g.token)
	bound := int(holdFor/rtRenewAfter) + 3
	require.LessOrEqual(t, calls, bound, "a waiter asked %d times in %v; it should wait for a change, not poll", calls, holdFor)
}

// testRTLost takes the lease from under its holder (released by its own
// token, as a store whose lease ran out would give it away) and hands it
// to a successor: the holder's next renewal fails, fn's context is
// aborted with ErrLockLost, and the holder's release leaves the successor.
func testRTLost(t *testing.T, e *env) {
	var cause error
	err := e.s.Locks.WithLock(e.ctx, "k", func(ctx context.Context) error {
		g, ok := e.d.grant("k")
		require.True(t, ok)
		require.NoError(t, errOf(e.d.ReleaseLock(ctx, "k", g.token))) // recorded: the history shows the lease ending here
		st, err := e.d.AcquireLock(ctx, driver.LockRequest{Key: "k", Token: "successor", Lease: time.Hour})
		require.NoError(t, err)
		require.True(t, st.Held)
		<-ctx.Done()
		cause = context.Cause(ctx)
		return nil
	})
	require.ErrorIs(t, cause, persist.ErrLockLost)
	require.ErrorIs(t, err, persist.ErrLockLost, "fn returned nil, but its lease was lost: WithLock says so")
	st, err := e.d.RenewLock(e.ctx, "k", "successor", time.Hour)
	require.NoError(t, err, "the loser's release freed the successor")
	require.True(t, st.Held)
	_, err = e.d.ReleaseLock(e.ctx, "k", "successor")
	require.NoError(t, err)
}

func testRTStaleRelease(t *testing.T, e *env) {
	d := e.d
	a := must(d.AcquireLock(e.ctx, driver.LockRequest{Key: "k", Token: "a", Lease: 200 * time.Millisecond})).of(t)
	require.True(t, a.Held)
	eventually(t, "b granted after a's lease ran out", func() bool {
		st := must(d.AcquireLock(e.ctx, driver.LockRequest{Key: "k", Token: "b", Lease: time.Hour})).of(t)
		return st.Held
	})
	rel := must(d.ReleaseLock(e.ctx, "k", "a")).of(t)
	require.False(t, rel.Held)
	st, err := d.RenewLock(e.ctx, "k", "b", time.Hour)
	require.NoError(t, err, "a's stale release freed b's lease")
	require.True(t, st.Held)
	_, err = d.ReleaseLock(e.ctx, "k", "b")
	require.NoError(t, err)
}

func testRTDeadHolder(t *testing.T, e *env) {
	dead := must(e.d.AcquireLock(e.ctx, driver.LockRequest{Key: "k", Token: "crashed", Lease: rtLease})).of(t)
	require.True(t, dead.Held)
	require.NoError(t, e.s.Locks.WithLock(e.ctx, "k", func(context.Context) error { return nil }))
	g, ok := e.d.grant("k", "crashed")
	require.True(t, ok)
	require.False(t, g.st.Now.Before(dead.ExpiresAt), "the lock was taken from a live lease, by the store's clock")
	bound := int(rtLease/rtRenewAfter) + 3
	require.LessOrEqual(t, e.d.acquireCalls(g.token), bound, "a waiter for a dead holder polled")
}

// firstAsk asserts that the WithLock after a release got the lock at its
// first ask.
func (e *env) firstAsk(t *testing.T, prev string) {
	t.Helper()
	require.NoError(t, e.s.Locks.WithLock(e.ctx, "k", func(context.Context) error { return nil }))
	g, ok := e.d.grant("k", prev)
	require.True(t, ok)
	require.Equal(t, 1, e.d.acquireCalls(g.token), "the lock was still held")
}

func testRTError(t *testing.T, e *env) {
	require.ErrorIs(t, e.s.Locks.WithLock(e.ctx, "k", func(context.Context) error { return errBoom }), errBoom)
	g, _ := e.d.grant("k")
	e.firstAsk(t, g.token)
}

func testRTPanic(t *testing.T, e *env) {
	func() {
		defer func() { require.Equal(t, "fn panicked", recover()) }()
		_ = e.s.Locks.WithLock(e.ctx, "k", func(context.Context) error { panic("fn panicked") })
	}()
	g, _ := e.d.grant("k")
	e.firstAsk(t, g.token)
}

// testRTGiveUp: a waiter that gives up leaves the queue at once, so the
// waiter behind it is granted before the quitter's place would have run
// out (by the store's clock).
func testRTGiveUp(t *testing.T, e *env) {
	release := make(chan struct{})
	held, done := e.holdUntil("k", release)
	<-held
	ctx, cancel := context.WithCancel(e.ctx)
	gaveUp := make(chan error, 1)
	go func() {
		gaveUp <- e.s.Locks.WithLock(ctx, "k", func(context.Context) error { panic("fn ran after its caller gave up") })
	}()
	eventually(t, "first waiter queued", func() bool { return len(e.d.waiting("k")) == 1 })
	quitter := e.d.waiting("k")[0]
	got := make(chan error, 1)
	go func() { got <- e.s.Locks.WithLock(e.ctx, "k", func(context.Context) error { return nil }) }()
	eventually(t, "second waiter queued", func() bool { return len(e.d.waiting("k")) == 2 })
	cancel()
	require.ErrorIs(t, <-gaveUp, context.Canceled)
	var lastPlace time.Time
	for _, s := range e.d.steps() {
		if s.op == "wait" && s.token == quitter {
			lastPlace = s.st.Now.Add(rtLease)
		}
	}
	holder, _ := e.d.grant("k")
	close(release)
	require.NoError(t, <-done)
	require.NoError(t, <-got)
	g, ok := e.d.grant("k", holder.token)
	require.True(t, ok)
	require.True(t, g.st.Now.Before(lastPlace), "the waiter that gave up kept its place until it expired")
}

func testLockFencesRT(t *testing.T, e *env) { testLockFences(t, e, nil) }

func testRTKeys(t *testing.T, e *env) {
	release := make(chan struct{})
	held, done := e.holdUntil("k1", release)
	<-held
	require.NoError(t, e.s.Locks.WithLock(e.ctx, "k2", func(context.Context) error { return nil }))
	g, ok := e.d.grant("k2")
	require.True(t, ok)
	require.Equal(t, 1, e.d.acquireCalls(g.token), "a lock on k1 blocked k2")
	close(release)
	require.NoError(t, <-done)
}

func testRTPortableSteps(t *testing.T, e *env) {
	l := e.lockSteps()
	a := must(l.Acquire(e.ctx, "k", "remote-a", 0)).of(t)
	require.True(t, a.Held)
	b := must(l.Acquire(e.ctx, "k", "remote-b", 0)).of(t)
	require.False(t, b.Held)
	got := make(chan persist.LockStep, 1)
	go func() {
		st, err := l.Acquire(e.ctx, "k", "remote-b", rtPatience)
		if err != nil {
			t.Error(err)
		}
		got <- st
	}()
	eventually(t, "remote-b asked again", func() bool { return e.d.acquireCalls("remote-b") >= 2 })
	rel, err := l.Release(e.ctx, "k", "remote-a")
	require.NoError(t, err)
	require.True(t, rel.Held)
	b = <-got
	require.True(t, b.Held, "the waiting acquire was not granted after the release")
	require.Greater(t, b.Fence, a.Fence)
	_, err = l.Release(e.ctx, "k", "remote-b")
	require.NoError(t, err)
}
