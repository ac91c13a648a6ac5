package memstore_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/memstore"
)

// scriptedClock returns the readings of next one by one, then after for
// every later reading: a clock that jumps between two readings of one call,
// as a real clock may while a call waits for the lock or is preempted.
type scriptedClock struct {
	mu    sync.Mutex
	next  []time.Time
	after time.Time
}

func (c *scriptedClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.next) > 0 {
		t := c.next[0]
		c.next = c.next[1:]
		return t
	}
	return c.after
}

// set scripts the next readings: first, then later for all the rest.
func (c *scriptedClock) set(first, later time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.next, c.after = []time.Time{first}, later
}

var t0 = time.UnixMilli(1_700_000_000_000)

// A renew checked live at one instant extends from that instant, not from
// a later reading at which the lease may already have expired.
func TestRenewExtendsFromTheInstantItChecked(t *testing.T) {
	const d = time.Minute
	clock := &scriptedClock{after: t0}
	s := memstore.New(ckptstore.Options{Now: clock.Now, LeaseDuration: d})
	ctx := context.Background()
	l, err := s.AcquireWriter(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	expiry := t0.Add(d)
	checked := expiry.Add(-time.Millisecond)  // still live
	clock.set(checked, expiry.Add(time.Hour)) // any second reading is long past the expiry
	got, err := s.Renew(ctx, l.Writer)
	if err != nil {
		t.Fatalf("RenewWriter 1 ms before the expiry: %v", err)
	}
	if want := checked.Add(d); !got.Equal(want) {
		t.Errorf("RenewWriter = %v, want %v (the lease duration from the instant the lease was checked live)", got, want)
	}
}

// An op token is remembered for the TTL from the instant its write was
// decided, whatever the clock reads later in the call.
func TestOpTokenTTLFromTheInstantOfTheWrite(t *testing.T) {
	clock := &scriptedClock{after: t0}
	s := memstore.New(ckptstore.Options{Now: clock.Now, LeaseDuration: time.Hour})
	bg := context.Background()
	l, err := s.AcquireWriter(bg, "t")
	if err != nil {
		t.Fatal(err)
	}
	ctx := ckptstore.WithOpToken(bg, "tok")
	a := &ckptstore.Checkpoint{ID: "a", ThreadID: "t", CreatedAt: 1, Reason: ckptstore.ReasonAutomatic}
	clock.set(t0, t0.Add(5*time.Minute))
	if err := s.Append(ctx, a, "", l.Writer); err != nil {
		t.Fatal(err)
	}
	clock.set(t0.Add(10*time.Minute), t0.Add(10*time.Minute)) // the TTL after the write's instant
	if err := s.Append(ctx, a, "", l.Writer); !errors.Is(err, ckptstore.ErrDuplicateID) {
		t.Errorf("repeat at the TTL from the write: %v, want ErrDuplicateID (the token is forgotten, the call runs again)", err)
	}
}
