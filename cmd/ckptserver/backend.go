package main

// The store behind the server may be down when it starts (Redis restarting
// beside it). A command line that cannot work (a bad URL) still exits 2 at
// once; a store that does not answer does not stop the server: it listens,
// answers /readyz and /v1/ with 503 UNAVAILABLE, and retries opening the
// store with backoff until it opens or the server shuts down.
//
// Invariant: backend.opened goes from nil to one *storeurl.Opened once and
// never changes after; whoever opens a store either hands it to the backend
// or closes it, so none outlives the server.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/storeurl"
)

// The backoff between attempts to open the store: the first waits about
// openBackoffMin, each next one twice the last, up to openBackoffMax, each
// drawn at random from its upper half so that servers restarted together
// do not reconnect in step. The cap keeps a store that comes back from
// waiting long for the server, and the log at 4 lines a minute.
const (
	openBackoffMin = 250 * time.Millisecond
	openBackoffMax = 15 * time.Second
	// openTimeout bounds one attempt (a store address that drops packets).
	openTimeout = 30 * time.Second
	// firstOpenTimeout bounds the attempt before the server listens, so
	// that a store that drops packets keeps /healthz and /readyz silent
	// for no longer than this (a liveness probe would restart the server).
	firstOpenTimeout = 10 * time.Second
)

// errNotOpen is the failure of a request that comes before the store is
// open; the handler answers it 503 UNAVAILABLE, which clients retry.
var errNotOpen = errors.New("the store is not open yet: the server is connecting to it and retries (its /readyz tells why)")

// backend is the httpstore.Backend of the store
// once open, and errNotOpen before.
type backend struct {
	opened atomic.Pointer[storeurl.Opened]

	mu      sync.Mutex
	lastErr error // the last attempt's failure, while not open
	closed  bool  // the server is done: an opened store is closed at once
}

// Namespace implements httpstore.Backend.
func (b *backend) Namespace(name string, lease ckptstore.Options) (*storeurl.Tenant, error) {
	o := b.opened.Load()
	if o == nil {
		return nil, errNotOpen
	}
	return o.Namespace(name, lease)
}

// set makes o the store; after close it closes o instead and reports false.
func (b *backend) set(o *storeurl.Opened) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		_ = o.Close()
		return false
	}
	b.opened.Store(o)
	b.lastErr = nil
	return true
}

func (b *backend) failed(err error) {
	b.mu.Lock()
	b.lastErr = err
	b.mu.Unlock()
}

// notReady is why the store is not open, for /readyz; "" once it is.
func (b *backend) notReady() string {
	if b.opened.Load() != nil {
		return ""
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.lastErr == nil {
		return "the store is not open yet"
	}
	return fmt.Sprintf("the store is not open yet (retrying): %v", b.lastErr)
}

// close closes the store, if open, and any store opened after.
func (b *backend) close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	if o := b.opened.Load(); o != nil {
		return o.Close()
	}
	return nil
}

// open is one attempt to open the store of the command line, for at most
// timeout.
func (s *setup) open(ctx context.Context, timeout time.Duration) (*storeurl.Opened, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return storeurl.Open(ctx, s.c.store, storeurl.Options{Lease: s.lease, TracerProvider: s.tp})
}

// retryOpen retries opening the store, whose first attempt failed with
// err, with backoff until it opens (then b serves it) or ctx ends. Each
// failure is a warning with the attempt's number and the wait before the
// next, in seconds.
func (s *setup) retryOpen(ctx context.Context, b *backend, err error) {
	wait := openBackoffMin
	for attempt := 1; ; attempt++ {
		d := wait/2 + rand.N(wait/2+1)
		s.log.Warn("the store cannot be opened; not ready, retrying", "store", redact(s.c.store), "attempt", attempt, "retry_in", d.Seconds(), "err", err)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		var o *storeurl.Opened
		if o, err = s.open(ctx, openTimeout); err == nil {
			if b.set(o) {
				s.log.Info("the store is open: ready", "store", o.Desc, "attempts", attempt+1)
			}
			return
		}
		if ctx.Err() != nil {
			return
		}
		b.failed(err)
		wait = min(2*wait, openBackoffMax)
	}
}
