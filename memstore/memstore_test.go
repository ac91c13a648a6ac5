package memstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/conformance"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/memstore"
)

// TestEngine is memstore's one suite call: every contract's suite on
// tenants of the mem scheme, each a fresh engine handle (storeurl.Open),
// so the registration is proven with the stores; the stream suites'
// peer is another memstore tenant.
func TestEngine(t *testing.T) {
	conformance.RunEngine(t, conformance.OpenURL("mem"), conformance.EngineOptions{Streams: true})
}

func TestNewPanicsOnInvalidOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts ckptstore.Options
	}{
		{"negative lease", ckptstore.Options{LeaseDuration: -time.Second}},
		{"negative renew after", ckptstore.Options{RenewAfter: -time.Second}},
		{"renew after equals lease", ckptstore.Options{LeaseDuration: time.Second, RenewAfter: time.Second}},
		{"renew after above lease", ckptstore.Options{LeaseDuration: time.Second, RenewAfter: 2 * time.Second}},
		{"renew after above default lease", ckptstore.Options{RenewAfter: 121 * time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				err, ok := r.(error)
				if !ok || !errors.Is(err, driver.ErrInvalidOptions) {
					t.Errorf("New(%+v) panicked with %v, want an error wrapping ErrInvalidOptions", tc.opts, r)
				}
			}()
			memstore.New(tc.opts)
		})
	}
}

func TestNewAcceptsValidOptions(t *testing.T) {
	for _, opts := range []ckptstore.Options{
		{},
		{LeaseDuration: time.Millisecond},
		{LeaseDuration: 2 * time.Millisecond, RenewAfter: time.Millisecond},
		{RenewAfter: 119 * time.Second},
	} {
		if memstore.New(opts) == nil {
			t.Errorf("New(%+v) = nil", opts)
		}
	}
}

// The conformance suite cannot know how long a store remembers op tokens;
// memstore remembers them for opTokenTTL of its clock.
func TestOpTokenTTL(t *testing.T) {
	clock := conformance.NewClock(conformance.Start)
	s := memstore.New(ckptstore.Options{Now: clock.Now, LeaseDuration: time.Hour})
	ctx := ckptstore.WithOpToken(context.Background(), "ttl-token")
	bg := context.Background()
	l, err := s.AcquireWriter(bg, "t")
	if err != nil {
		t.Fatal(err)
	}
	a := &ckptstore.Checkpoint{ID: "a", ThreadID: "t", CreatedAt: 1, Reason: ckptstore.ReasonAutomatic}
	if err := s.Append(ctx, a, "", l.Writer); err != nil {
		t.Fatal(err)
	}
	b := &ckptstore.Checkpoint{ID: "b", ThreadID: "t", ParentCheckpointID: "a", CreatedAt: 2, Reason: ckptstore.ReasonAutomatic}
	if err := s.Append(bg, b, "a", l.Writer); err != nil {
		t.Fatal(err)
	}
	clock.Advance(10*time.Minute - time.Millisecond)
	if err := s.Append(ctx, a, "", l.Writer); err != nil {
		t.Errorf("repeat 1 ms before the TTL: %v, want the first call's success", err)
	}
	clock.Advance(time.Millisecond)
	if err := s.Append(ctx, a, "", l.Writer); !errors.Is(err, ckptstore.ErrDuplicateID) {
		t.Errorf("repeat at the TTL: %v, want ErrDuplicateID (the token is forgotten, the call runs again)", err)
	}
}

// A recorded token outlives later ones: recording forgets only the expired.
func TestOpTokensKeptWhileLive(t *testing.T) {
	clock := conformance.NewClock(conformance.Start)
	s := memstore.New(ckptstore.Options{Now: clock.Now, LeaseDuration: time.Hour})
	bg := context.Background()
	l, err := s.AcquireWriter(bg, "t")
	if err != nil {
		t.Fatal(err)
	}
	head := ""
	var ctxs []context.Context
	for i := range 5 {
		ctx := ckptstore.WithOpToken(bg, fmt.Sprintf("tok-%d", i))
		c := &ckptstore.Checkpoint{ID: fmt.Sprint(i), ThreadID: "t", ParentCheckpointID: head, CreatedAt: 1, Reason: ckptstore.ReasonAutomatic}
		if err := s.Append(ctx, c, head, l.Writer); err != nil {
			t.Fatal(err)
		}
		ctxs = append(ctxs, ctx)
		head = c.ID
		clock.Advance(time.Minute)
	}
	for i, ctx := range ctxs {
		c := &ckptstore.Checkpoint{ID: fmt.Sprint(i), ThreadID: "t", CreatedAt: 1, Reason: ckptstore.ReasonAutomatic}
		if err := s.Append(ctx, c, "", l.Writer); err != nil {
			t.Errorf("repeat of append %d: %v, want success", i, err)
		}
	}
}

func TestMalformedOpToken(t *testing.T) {
	s := memstore.New(ckptstore.Options{})
	for i, tok := range []string{"has space", "ü", strings.Repeat("x", driver.MaxOpTokenBytes+1), "a/b"} {
		ctx := ckptstore.WithOpToken(context.Background(), tok)
		thread := fmt.Sprint("u-", i) // not of the token: a long one is no valid id
		if _, err := s.AcquireWriter(ctx, "t"); !errors.Is(err, ckptstore.ErrInvalidEntry) {
			t.Errorf("AcquireWriter with op token %.40q: %v, want ErrInvalidEntry", tok, err)
		}
		l, err := s.AcquireWriter(context.Background(), thread)
		if err != nil {
			t.Fatal(err)
		}
		c := &ckptstore.Checkpoint{ID: fmt.Sprint("c-", i), ThreadID: thread, CreatedAt: 1, Reason: ckptstore.ReasonAutomatic}
		if err := s.Append(ctx, c, "", l.Writer); !errors.Is(err, ckptstore.ErrInvalidEntry) {
			t.Errorf("Append with op token %.40q: %v, want ErrInvalidEntry", tok, err)
		}
		if err := s.DeleteHead(ctx, thread, "x", l.Writer); !errors.Is(err, ckptstore.ErrInvalidEntry) {
			t.Errorf("DeleteHead with op token %.40q: %v, want ErrInvalidEntry", tok, err)
		}
		if _, err := s.ForkFromCheckpoint(ctx, ckptstore.ForkInput{SourceThreadID: "a", SourceCheckpointID: "b",
			DestinationThreadID: "c", DestinationCheckpointID: "d", Writer: ckptstore.Writer{ThreadID: "c"}}); !errors.Is(err, ckptstore.ErrInvalidEntry) {
			t.Errorf("ForkFromCheckpoint with op token %.40q: %v, want ErrInvalidEntry", tok, err)
		}
	}
}
