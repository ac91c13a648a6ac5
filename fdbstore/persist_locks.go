package fdbstore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	pdriver "github.com/ckptstore/ckptstore/persist/driver"
)

// lockValue is the value at (Q, "lk", key): the lease, the fence, the
// queue of waiters and the change counter watchers poll. A key's value is
// never cleared: it keeps the fence, which must never go back. The queue
// lives in the value, so each step is one point read; it bounds a key's
// queue to what fits in 100 kB (about 1,500 waiters with 32-byte tokens).
type lockValue struct {
	Holder  string   `json:"h,omitempty"`
	Expires int64    `json:"e,omitempty"` // unix ns
	Fence   int64    `json:"f"`
	Version int64    `json:"v"` // goes up on each grant, release and queue removal
	Queue   []waiter `json:"q,omitempty"`
}

type waiter struct {
	Token   string `json:"t"`
	Expires int64  `json:"e"` // unix ns
}

func (l *lockValue) live(now time.Time) bool {
	return l.Holder != "" && now.UnixNano() < l.Expires
}

func (l *lockValue) place(token string) int {
	return slices.IndexFunc(l.Queue, func(w waiter) bool { return w.Token == token })
}

// lockResult is a lock step's marked result: the state and whether the
// step changed what waiters wait for.
type lockResult struct {
	St      pdriver.LockState `json:"st"`
	Changed bool              `json:"changed"`
}

// lockStep runs step on key's lock as one marked transaction, stores the
// value when step changed it, and wakes this process's watchers when the
// step says waiters should look again.
func (d *Persistence) lockStep(ctx context.Context, key string, step func(l *lockValue, now time.Time) (lockResult, error)) (pdriver.LockState, error) {
	k := d.k.lock(key)
	res, err := marked(ctx, d, func(c *call) (lockResult, error) {
		b, done, err := c.get(k)
		if err != nil || done {
			return lockResult{}, err
		}
		l, err := decode[lockValue](k, b)
		if err != nil {
			return lockResult{}, err
		}
		if l == nil {
			l = &lockValue{}
		}
		before, _ := json.Marshal(l)
		now := d.now()
		// Waiters whose place expired are dropped first.
		live := l.Queue[:0]
		for _, w := range l.Queue {
			if now.UnixNano() < w.Expires {
				live = append(live, w)
			}
		}
		dropped := len(live) != len(l.Queue)
		l.Queue = live
		res, err := step(l, now)
		if err != nil {
			return lockResult{}, err
		}
		res.Changed = res.Changed || dropped
		if res.Changed {
			l.Version++
		}
		val, err := encode("lock", l)
		if err != nil {
			return lockResult{}, err
		}
		if string(val) != string(before) {
			c.tr.Set(k, val)
		}
		return res, nil
	})
	if err != nil {
		return res.St, err
	}
	if res.Changed {
		d.notify(key)
	}
	return res.St, nil
}

// AcquireLock implements pdriver.Locks, step for step as memstore.Persistence.
func (d *Persistence) AcquireLock(ctx context.Context, req pdriver.LockRequest) (pdriver.LockState, error) {
	return d.lockStep(ctx, req.Key, func(l *lockValue, now time.Time) (lockResult, error) {
		st := pdriver.LockState{Now: now, Fence: l.Fence}
		if l.live(now) {
			if l.Holder == req.Token {
				st.Held, st.ExpiresAt = true, time.Unix(0, l.Expires)
				return lockResult{St: st}, nil
			}
			st.ExpiresAt = time.Unix(0, l.Expires)
		}
		exp := now.Add(req.Lease).UnixNano()
		i := l.place(req.Token)
		if !l.live(now) && (len(l.Queue) == 0 || i == 0) {
			if i == 0 {
				l.Queue = slices.Delete(l.Queue, 0, 1)
			}
			l.Holder, l.Expires = req.Token, exp
			l.Fence++
			st.Held, st.Fence, st.ExpiresAt = true, l.Fence, time.Unix(0, exp)
			return lockResult{St: st, Changed: true}, nil
		}
		if i < 0 {
			l.Queue = append(l.Queue, waiter{req.Token, exp})
			i = len(l.Queue) - 1
		} else {
			l.Queue[i].Expires = exp
		}
		st.Ahead = i
		return lockResult{St: st}, nil
	})
}

// RenewLock implements pdriver.Locks.
func (d *Persistence) RenewLock(ctx context.Context, key, token string, lease time.Duration) (pdriver.LockState, error) {
	st, err := d.lockStep(ctx, key, func(l *lockValue, now time.Time) (lockResult, error) {
		if l.Holder != token || !l.live(now) {
			// Not an error inside the transaction: expired waiters may
			// still have been dropped, and that is stored.
			return lockResult{St: pdriver.LockState{Now: now, Fence: l.Fence}}, nil
		}
		l.Expires = now.Add(lease).UnixNano()
		return lockResult{St: pdriver.LockState{Held: true, Fence: l.Fence, Now: now, ExpiresAt: time.Unix(0, l.Expires)}}, nil
	})
	if err == nil && !st.Held {
		return st, fmt.Errorf("%w: %q", pdriver.ErrLockLost, key)
	}
	return st, err
}

// ReleaseLock implements pdriver.Locks.
func (d *Persistence) ReleaseLock(ctx context.Context, key, token string) (pdriver.LockState, error) {
	return d.lockStep(ctx, key, func(l *lockValue, now time.Time) (lockResult, error) {
		st := pdriver.LockState{Now: now, Fence: l.Fence}
		if l.Holder == token {
			st.Held = l.live(now)
			l.Holder, l.Expires = "", 0
			return lockResult{St: st, Changed: true}, nil
		}
		if i := l.place(token); i >= 0 {
			l.Queue = slices.Delete(l.Queue, i, i+1)
			return lockResult{St: st, Changed: true}, nil
		}
		return lockResult{St: st}, nil
	})
}

// watch is one WatchLock channel.
type watch struct {
	ch   chan struct{}
	once sync.Once
}

func (w *watch) fire() { w.once.Do(func() { close(w.ch) }) }

// notify wakes this process's watchers of key.
func (d *Persistence) notify(key string) {
	d.mu.Lock()
	ws := d.watchers[key]
	delete(d.watchers, key)
	d.mu.Unlock()
	for _, w := range ws {
		w.fire()
	}
}

func (d *Persistence) unwatch(key string, w *watch) {
	d.mu.Lock()
	defer d.mu.Unlock()
	ws := slices.DeleteFunc(d.watchers[key], func(x *watch) bool { return x == w })
	if len(ws) == 0 {
		delete(d.watchers, key)
	} else {
		d.watchers[key] = ws
	}
}

// version reads key's change counter.
func (d *Persistence) version(ctx context.Context, key string) (int64, error) {
	l, err := getRecord[lockValue](ctx, d, d.k.lock(key))
	if err != nil || l == nil {
		return 0, err
	}
	return l.Version, nil
}

// WatchLock implements pdriver.Locks (see the package doc). It reads the
// lock's change counter once, so that a change by another process that
// commits after WatchLock returns is seen by the poll.
func (d *Persistence) WatchLock(ctx context.Context, key string) (<-chan struct{}, error) {
	w := &watch{ch: make(chan struct{})}
	d.mu.Lock()
	d.watchers[key] = append(d.watchers[key], w)
	d.mu.Unlock()
	if d.poll < 0 {
		context.AfterFunc(ctx, func() { d.unwatch(key, w) })
		return w.ch, nil
	}
	v0, err := d.version(ctx, key)
	if err != nil {
		d.unwatch(key, w)
		return nil, err
	}
	go d.pollLock(ctx, key, w, v0)
	return w.ch, nil
}

// pollLock fires w when key's change counter moves from v0, until ctx
// ends or w fires.
func (d *Persistence) pollLock(ctx context.Context, key string, w *watch, v0 int64) {
	defer d.unwatch(key, w)
	t := time.NewTimer(d.poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.ch:
			return
		case <-t.C:
		}
		v, err := d.version(ctx, key)
		if err != nil || v != v0 {
			// A failed read may have hidden a change: a spurious wake is
			// allowed, a missed one is not.
			w.fire()
			return
		}
		t.Reset(d.poll)
	}
}
