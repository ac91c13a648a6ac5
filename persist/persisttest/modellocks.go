package persisttest

// The model-based case of the lock steps. A plain model of driver.Locks —
// per key a holder with its expiry, a fence, and a queue of waiters each
// with the expiry of its place — runs beside the store under random
// sequences of acquire, renew and release (persist's lock steps, the ones
// a remote holder drives) and moves of the store's clock, drawn by rapid
// from two keys, three tokens and leases of a few milliseconds, so that
// expiries, requeues, stale holders and stale releases are common. Every
// step's error and state (held, fence, expiry, place in the queue, the
// store's now) must match the model's.

import (
	"slices"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore/persist"
	"github.com/ckptstore/ckptstore/persist/driver"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

type mwaiter struct {
	token   string
	expires time.Time
}

// mlock is the model of one key's lock.
type mlock struct {
	holder  string
	expires time.Time
	fence   int64
	queue   []mwaiter
}

func (l *mlock) live(now time.Time) bool { return l.holder != "" && now.Before(l.expires) }

// dropExpired removes the waiters whose place has expired at now.
func (l *mlock) dropExpired(now time.Time) {
	l.queue = slices.DeleteFunc(l.queue, func(w mwaiter) bool { return !now.Before(w.expires) })
}

func (l *mlock) place(token string) int {
	return slices.IndexFunc(l.queue, func(w mwaiter) bool { return w.token == token })
}

func (l *mlock) acquire(token string, lease time.Duration, now time.Time) driver.LockState {
	l.dropExpired(now)
	if l.live(now) && l.holder == token {
		return driver.LockState{Held: true, Fence: l.fence, Now: now, ExpiresAt: l.expires}
	}
	i := l.place(token)
	if !l.live(now) && (len(l.queue) == 0 || i == 0) {
		if i == 0 {
			l.queue = l.queue[1:]
		}
		l.fence++
		l.holder, l.expires = token, now.Add(lease)
		return driver.LockState{Held: true, Fence: l.fence, Now: now, ExpiresAt: l.expires}
	}
	if i < 0 {
		l.queue = append(l.queue, mwaiter{token, now.Add(lease)})
		i = len(l.queue) - 1
	} else {
		l.queue[i].expires = now.Add(lease)
	}
	st := driver.LockState{Now: now, Ahead: i}
	if l.live(now) {
		st.ExpiresAt = l.expires
	}
	return st
}

func (l *mlock) renew(token string, lease time.Duration, now time.Time) (driver.LockState, bool) {
	l.dropExpired(now)
	if !l.live(now) || l.holder != token {
		return driver.LockState{}, false
	}
	l.expires = now.Add(lease)
	return driver.LockState{Held: true, Fence: l.fence, Now: now, ExpiresAt: l.expires}, true
}

func (l *mlock) release(token string, now time.Time) bool {
	l.dropExpired(now)
	if l.holder == token {
		held := l.live(now)
		l.holder, l.expires = "", time.Time{}
		return held
	}
	if i := l.place(token); i >= 0 {
		l.queue = slices.Delete(l.queue, i, i+1)
	}
	return false
}

// sameLockState compares what the contract fixes of a step's state: held,
// the store's now, and for a holder its fence and expiry, for a waiter its
// place and the holder's expiry.
func sameLockState(t require.TestingT, want, got driver.LockState, step string) {
	require.Equal(t, want.Held, got.Held, "%s: held", step)
	require.True(t, want.Now.Equal(got.Now), "%s: now %v, want %v", step, got.Now, want.Now)
	require.True(t, want.ExpiresAt.Equal(got.ExpiresAt), "%s: expiresAt %v, want %v", step, got.ExpiresAt, want.ExpiresAt)
	if want.Held {
		require.Equal(t, want.Fence, got.Fence, "%s: fence", step)
	} else {
		require.Equal(t, want.Ahead, got.Ahead, "%s: ahead", step)
	}
}

func testModelLocks(t *testing.T, nd NewDriver) {
	rapid.Check(t, func(rt *rapid.T) {
		store := &clock{fixed: epoch}
		e := makeEnv(t, nd, &clock{fixed: epoch}, store, testLease, testRenewAfter)
		m := map[string]*mlock{"k0": {}, "k1": {}}
		key := rapid.SampledFrom([]string{"k0", "k1"})
		token := rapid.SampledFrom([]string{"a", "b", "c"})
		lease := rapid.SampledFrom([]time.Duration{time.Millisecond, 2 * time.Millisecond, 5 * time.Millisecond})
		// The steps carry their lease, so each lease the model draws has
		// its own steps over the one driver.
		steps := func(d time.Duration) *persist.DriverLockSteps {
			return persist.NewDriverLockSteps(e.d, e.clock.Now, d, d/2)
		}
		rt.Repeat(map[string]func(*rapid.T){
			"Acquire": func(rt *rapid.T) {
				k, tok, d := key.Draw(rt, "key"), token.Draw(rt, "token"), lease.Draw(rt, "lease")
				got := must(steps(d).Acquire(e.ctx, k, tok, 0)).of(rt)
				sameLockState(rt, m[k].acquire(tok, d, store.Now()), got.LockState, "acquire "+k+" "+tok)
			},
			"Renew": func(rt *rapid.T) {
				k, tok, d := key.Draw(rt, "key"), token.Draw(rt, "token"), lease.Draw(rt, "lease")
				got, err := steps(d).Renew(e.ctx, k, tok)
				want, ok := m[k].renew(tok, d, store.Now())
				if !ok {
					require.ErrorIs(rt, err, persist.ErrLockLost, "renew %s %s", k, tok)
					return
				}
				require.NoError(rt, err)
				sameLockState(rt, want, got.LockState, "renew "+k+" "+tok)
			},
			"Release": func(rt *rapid.T) {
				k, tok := key.Draw(rt, "key"), token.Draw(rt, "token")
				got := must(steps(time.Millisecond).Release(e.ctx, k, tok)).of(rt)
				require.Equal(rt, m[k].release(tok, store.Now()), got.Held, "release %s %s: held", k, tok)
			},
			"TickStore": func(rt *rapid.T) {
				store.Add(time.Duration(rapid.IntRange(0, 3).Draw(rt, "ms")) * time.Millisecond)
			},
		})
	})
}
