package redisstore

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ckptstore/ckptstore/persist/driver"
)

// The lock scripts share KEYS lock (hash: o holder, x expiry ms, f fence,
// s arrival counter, t the last step's now), queue (sorted set: waiter tokens by arrival), waits
// (hash: waiter token → expiry of its place, ms), op; and ARGV now ("":
// the server's TIME), lease ms, token, op ttl, channel, the lock's key.
// A step's now is never before the key's previous step's (t): clock
// readings taken by clients before they send a step, or a server clock
// that steps back, would otherwise let a grant carry an earlier time than
// the release it follows, and the lock's history would lie about the
// order of leases. Each step then drops the waiters whose place expired. Every step that
// changes the holder or the queue publishes the lock's key on the
// driver's channel, which is what WatchLock listens to.
const lockLib = `
local now = now_ms(ARGV[1])
local last = tonumber(redis.call('HGET', KEYS[1], 't') or '0')
if now < last then now = last end
redis.call('HSET', KEYS[1], 't', now)
local changed = false
for _, t in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
  if now >= tonumber(redis.call('HGET', KEYS[3], t) or '0') then
    redis.call('ZREM', KEYS[2], t)
    redis.call('HDEL', KEYS[3], t)
    changed = true
  end
end
local l = redis.call('HMGET', KEYS[1], 'o', 'x', 'f')
local fence = tonumber(l[3] or '0')
local live = l[1] and now < tonumber(l[2])
local function publish() redis.call('PUBLISH', ARGV[5], ARGV[6]) end
`

// lockAcquireScript grants or queues. It needs no op key: a resend after a
// grant finds its token holding the live lease and is granted again with
// the same fence and expiry; a resend after queueing keeps its place.
var lockAcquireScript = newPersistScript(lockLib + `
if live and l[1] == ARGV[3] then
  if changed then publish() end
  return {1, fence, now, tonumber(l[2]), 0}
end
local rank = redis.call('ZRANK', KEYS[2], ARGV[3])
if not live and (rank == 0 or redis.call('ZCARD', KEYS[2]) == 0) then
  if rank == 0 then
    redis.call('ZREM', KEYS[2], ARGV[3])
    redis.call('HDEL', KEYS[3], ARGV[3])
  end
  fence = redis.call('HINCRBY', KEYS[1], 'f', 1)
  local exp = now + tonumber(ARGV[2])
  redis.call('HSET', KEYS[1], 'o', ARGV[3], 'x', exp)
  publish()
  return {1, fence, now, exp, 0}
end
if not rank then
  redis.call('ZADD', KEYS[2], redis.call('HINCRBY', KEYS[1], 's', 1), ARGV[3])
  rank = redis.call('ZCARD', KEYS[2]) - 1
end
redis.call('HSET', KEYS[3], ARGV[3], now + tonumber(ARGV[2]))
if changed then publish() end
local hx = 0
if live then hx = tonumber(l[2]) end
return {0, fence, now, hx, rank}
`)

// lockRenewScript extends the holder's live lease. Recorded: a resend that
// came after the lease changed hands must still report the renewal that
// happened, not a false ErrLockLost.
var lockRenewScript = newPersistScript(lockLib + `
local r = replay(KEYS[4])
if r then return r end
if changed then publish() end
if l[1] ~= ARGV[3] or not live then return {'LOST', fence, now} end
local exp = now + tonumber(ARGV[2])
redis.call('HSET', KEYS[1], 'x', exp)
return record(KEYS[4], ARGV[4], {1, fence, now, exp, 0})
`)

// lockReleaseScript ends the token's lease or its place. Recorded: a resend
// would find the lease gone and report that the token did not hold it.
var lockReleaseScript = newPersistScript(lockLib + `
local r = replay(KEYS[4])
if r then return r end
local held = 0
if l[1] == ARGV[3] then
  if live then held = 1 end
  redis.call('HDEL', KEYS[1], 'o', 'x')
  changed = true
elseif redis.call('ZSCORE', KEYS[2], ARGV[3]) then
  redis.call('ZREM', KEYS[2], ARGV[3])
  redis.call('HDEL', KEYS[3], ARGV[3])
  changed = true
end
if changed then publish() end
return record(KEYS[4], ARGV[4], {held, fence, now, 0, 0})
`)

func (d *Persistence) lockStep(ctx context.Context, sc *redis.Script, kind byte, key, token string, lease time.Duration) ([]any, error) {
	keys := []string{d.k.lock(key), d.k.lockQueue(key), d.k.lockWaits(key), d.k.opKey(kind, newToken())}
	args := []any{d.nowArg(), ceilMillis(lease), token, d.opTTL, d.k.channel(), key}
	return d.eval(ctx, sc, keys, args)
}

func lockState(res []any) (driver.LockState, error) {
	if len(res) != 5 {
		return driver.LockState{}, fmt.Errorf("%w: lock reply %v", driver.ErrCorrupt, res)
	}
	var n [5]int64
	for i, v := range res {
		x, ok := v.(int64)
		if !ok {
			return driver.LockState{}, fmt.Errorf("%w: lock reply %v", driver.ErrCorrupt, res)
		}
		n[i] = x
	}
	st := driver.LockState{Held: n[0] == 1, Fence: n[1], Now: time.UnixMilli(n[2]), Ahead: int(n[4])}
	if n[3] != 0 {
		st.ExpiresAt = time.UnixMilli(n[3])
	}
	return st, nil
}

// AcquireLock implements driver.Locks.
func (d *Persistence) AcquireLock(ctx context.Context, req driver.LockRequest) (driver.LockState, error) {
	res, err := d.lockStep(ctx, lockAcquireScript, opLockAcquire, req.Key, req.Token, req.Lease)
	if err != nil {
		return driver.LockState{}, fmt.Errorf("redisstore: acquire %q: %w", req.Key, err)
	}
	return lockState(res)
}

// RenewLock implements driver.Locks.
func (d *Persistence) RenewLock(ctx context.Context, key, token string, lease time.Duration) (driver.LockState, error) {
	res, err := d.lockStep(ctx, lockRenewScript, opLockRenew, key, token, lease)
	if err != nil {
		return driver.LockState{}, fmt.Errorf("redisstore: renew %q: %w", key, err)
	}
	if len(res) == 3 && res[0] == "LOST" {
		f, _ := res[1].(int64)
		now, _ := res[2].(int64)
		return driver.LockState{Fence: f, Now: time.UnixMilli(now)}, fmt.Errorf("%w: %q", driver.ErrLockLost, key)
	}
	return lockState(res)
}

// ReleaseLock implements driver.Locks.
func (d *Persistence) ReleaseLock(ctx context.Context, key, token string) (driver.LockState, error) {
	res, err := d.lockStep(ctx, lockReleaseScript, opLockRelease, key, token, 0)
	if err != nil {
		return driver.LockState{}, fmt.Errorf("redisstore: release %q: %w", key, err)
	}
	return lockState(res)
}

// WatchLock implements driver.Locks with one subscription per Driver to
// the channel the lock scripts publish on: the returned channel closes
// when a step publishes key, and also (spuriously) whenever the
// subscription breaks, since a message may have been lost in the gap.
// WatchLock returns only while the subscription is confirmed, so a change
// that commits after it returns is never missed.
func (d *Persistence) WatchLock(ctx context.Context, key string) (<-chan struct{}, error) {
	return d.hub.watch(ctx, key)
}

// hub fans one Pub/Sub channel out to its watchers, by message: the
// persistence driver's lock keys, and the stream driver's wake ids.
type hub struct {
	c       redis.UniversalClient
	channel string

	start sync.Once
	ps    *redis.PubSub
	done  chan struct{} // closed when the receive loop has ended

	mu     sync.Mutex
	live   bool
	ready  chan struct{} // closed when live becomes true
	waits  map[string]chan struct{}
	closed bool
}

func newHub(c redis.UniversalClient, channel string) *hub {
	return &hub{c: c, channel: channel, ready: make(chan struct{}), waits: map[string]chan struct{}{}, done: make(chan struct{})}
}

func (h *hub) watch(ctx context.Context, key string) (<-chan struct{}, error) {
	h.start.Do(func() {
		h.ps = h.c.Subscribe(context.Background(), h.channel)
		go h.loop()
	})
	for {
		h.mu.Lock()
		if h.closed {
			h.mu.Unlock()
			return nil, fmt.Errorf("redisstore: watch %q: %w", key, redis.ErrClosed)
		}
		if h.live {
			ch := h.waits[key]
			if ch == nil {
				ch = make(chan struct{})
				h.waits[key] = ch
			}
			h.mu.Unlock()
			return ch, nil
		}
		ready := h.ready
		h.mu.Unlock()
		select {
		case <-ready:
		case <-ctx.Done():
			return nil, fmt.Errorf("redisstore: watch %q: %w", key, context.Cause(ctx))
		}
	}
}

// loop reads the subscription until the hub is closed. go-redis
// reconnects and subscribes again after an error; the confirmation of
// that subscription makes the hub live again.
func (h *hub) loop() {
	defer close(h.done)
	for {
		msg, err := h.ps.Receive(context.Background())
		h.mu.Lock()
		if h.closed {
			h.mu.Unlock()
			return
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" && !h.live {
				h.live = true
				close(h.ready)
			}
		case *redis.Message:
			if ch := h.waits[m.Payload]; ch != nil {
				close(ch)
				delete(h.waits, m.Payload)
			}
		}
		if err != nil {
			h.lost()
		}
		h.mu.Unlock()
		if err != nil {
			time.Sleep(10 * time.Millisecond) // the reconnect's own backoff is go-redis's; this only keeps a dead server from spinning the loop
		}
	}
}

// lost wakes every watcher (a message may be gone) and waits for the
// next confirmation. h.mu is held.
func (h *hub) lost() {
	for k, ch := range h.waits {
		close(ch)
		delete(h.waits, k)
	}
	if h.live {
		h.live = false
		h.ready = make(chan struct{})
	}
}

// close ends the hub; a second close does nothing.
func (h *hub) close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	h.lost()
	h.mu.Unlock()
	var err error
	started := false
	h.start.Do(func() {}) // a hub never started stays so
	if h.ps != nil {
		started = true
		err = h.ps.Close()
	}
	if started {
		<-h.done
	}
	return err
}
