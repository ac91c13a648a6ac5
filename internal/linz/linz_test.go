package linz

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/conformance"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/internal/testkit"
	"github.com/ckptstore/ckptstore/memstore"
)

// staleWins lets a stale writer's append report success: the bug a store
// without its lease check in the atomic step has.
type staleWins struct{ *ckptstore.Store }

func (s staleWins) Append(ctx context.Context, cp *ckptstore.Checkpoint, head string, w ckptstore.Writer) error {
	if err := s.Store.Append(ctx, cp, head, w); !errors.Is(err, ckptstore.ErrWriterLost) {
		return err
	}
	return nil
}

// cachedHead answers Head from a cache that an append does not update:
// a stale read.
type cachedHead struct {
	*ckptstore.Store
	mu    sync.Mutex
	cache map[string]string
}

func (s *cachedHead) GetHead(ctx context.Context, thread string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h, ok := s.cache[thread]; ok {
		return h, nil
	}
	h, err := s.Store.GetHead(ctx, thread)
	if err == nil && h != "" {
		s.cache[thread] = h
	}
	return h, err
}

// lostRenew reports a renew as failed after it extended the lease.
type lostRenew struct{ *ckptstore.Store }

func (s lostRenew) AcquireWriter(ctx context.Context, thread string) (*ckptstore.Lease, error) {
	l, err := s.Store.AcquireWriter(ctx, thread)
	if err != nil {
		return nil, err
	}
	return driver.NewLease(l.Writer, l.ExpiresAt, l.RenewAfter, s), nil
}

func (s lostRenew) Renew(ctx context.Context, w ckptstore.Writer) (time.Time, error) {
	if _, err := s.Store.Renew(ctx, w); err != nil {
		return time.Time{}, err
	}
	return time.Time{}, ckptstore.ErrWriterLost
}

func newStore(clock *testkit.Clock, opt Options) *ckptstore.Store {
	return memstore.New(opt.StoreOptions(clock))
}

// TestCatchesBrokenStores shows that each broken store fails the check in
// at least one of a few histories, while memstore passes all of them.
func TestCatchesBrokenStores(t *testing.T) {
	for name, wrap := range map[string]func(*ckptstore.Store) conformance.Store{
		"memstore":   func(s *ckptstore.Store) conformance.Store { return s },
		"stale wins": func(s *ckptstore.Store) conformance.Store { return staleWins{s} },
		"cached head": func(s *ckptstore.Store) conformance.Store {
			return &cachedHead{Store: s, cache: map[string]string{}}
		},
		"lost renew": func(s *ckptstore.Store) conformance.Store { return lostRenew{s} },
	} {
		t.Run(name, func(t *testing.T) {
			illegal := 0
			for seed := range uint64(4) {
				clock := testkit.NewClock(time.UnixMilli(1_700_000_000_000))
				opt := Options{Seed: seed}
				h := Record(wrap(newStore(clock, opt)), clock, opt)
				verdict, _ := h.Check()
				if verdict == porcupine.Illegal {
					illegal++
				} else if verdict != porcupine.Ok {
					t.Fatalf("seed %d: verdict %v", seed, verdict)
				}
			}
			if broken := name != "memstore"; broken != (illegal > 0) {
				t.Errorf("%d of 4 histories illegal; want %v", illegal, map[bool]string{true: "some", false: "none"}[broken])
			}
		})
	}
}

// TestOpenOutcomes: a call whose result is unknown may or may not have
// happened; both must be accepted.
func TestOpenOutcomes(t *testing.T) {
	m := model{dur: 10}
	s := state{}
	in := input{kind: opAcquire, thread: "t", clockLo: 5, clockHi: 5}
	next := m.stepAcquire(s, in, output{code: unknownCode})
	if len(next) != 2 {
		t.Fatalf("an open acquire leaves %d states, want 2 (taken or not)", len(next))
	}
	ok := m.stepAcquire(s, in, output{fence: 1, token: "x", expiresAt: 15})
	if len(ok) != 1 || ok[0].leaseToken != "x" || ok[0].leaseFence != 1 {
		t.Fatalf("acquire: %+v", ok)
	}
	if bad := m.stepAcquire(s, in, output{fence: 1, token: "x", expiresAt: 16}); len(bad) != 0 {
		t.Error("an expiry the window cannot explain must be refused")
	}
	if bad := m.stepAcquire(ok[0], in, output{fence: 2, token: "y", expiresAt: 15}); len(bad) != 0 {
		t.Error("a second acquire while the lease is live must be refused")
	}
	late := in
	late.clockLo, late.clockHi = 14, 15 // the lease expires at 15
	if got := m.stepAcquire(ok[0], late, output{code: driver.CodeWriterConflict}); len(got) != 1 {
		t.Error("a conflict explained by clock 14 must be accepted")
	}
	if got := m.stepAcquire(ok[0], late, output{fence: 2, token: "y", expiresAt: 25}); len(got) != 1 {
		t.Error("a takeover explained by clock 15 must be accepted")
	}
}
