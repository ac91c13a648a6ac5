package plinz

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ckptstore/ckptstore/memstore"
	"github.com/ckptstore/ckptstore/persist/driver"
)

var t0 = time.UnixMilli(1_700_000_000_000)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func acq(tok string, fence int64, now, exp int) StepRecord {
	return StepRecord{Kind: StepAcquire, Key: "k", Token: tok, Held: true, Fence: fence, Before: at(now), Now: at(now), ExpiresAt: at(exp)}
}

// TestLocksCheckerRejects checks hand-written histories: the right one
// passes, and each wrong one is refused with the violation it has.
func TestLocksCheckerRejects(t *testing.T) {
	ok := func() *LockHistory {
		return &LockHistory{
			Steps: []StepRecord{
				acq("a", 1, 0, 100),
				{Kind: StepRenew, Key: "k", Token: "a", Held: true, Fence: 1, Now: at(25), ExpiresAt: at(125)},
				{Kind: StepRelease, Key: "k", Token: "a", Held: true, Fence: 1, Now: at(40)},
				acq("b", 2, 40, 140),
				// c's acquire reply was lost; its release found it live.
				{Kind: StepRelease, Key: "k", Token: "c", Held: true, Fence: 3, Now: at(300)},
				acq("d", 4, 300, 400),
			},
			Sections: []Section{
				{Key: "k", Fence: 1, Holder: "a", Start: at(0), LastActive: at(39)},
				// b stalls past its lease (140); d's grant at 300 comes
				// after b's abort at 90.
				{Key: "k", Fence: 2, Holder: "b", Start: at(40), LastActive: at(350), Cancelled: true, CancelAt: at(90), LockLost: true, Stalled: true, Result: driver.CodeLockLost},
				{Key: "k", Fence: 4, Holder: "d", Start: at(300), LastActive: at(310)},
			},
		}
	}
	for _, c := range []struct {
		name, want string
		edit       func(h *LockHistory)
	}{
		{"right", "", func(*LockHistory) {}},
		{"leases overlap", "past fence 2's grant", func(h *LockHistory) { h.Steps[2].Now = at(60) }},
		{"a renewal after the successor's grant", "past fence 2's grant", func(h *LockHistory) {
			h.Steps = append(h.Steps, StepRecord{Kind: StepRenew, Key: "k", Token: "a", Held: true, Fence: 1, Now: at(45), ExpiresAt: at(145)})
		}},
		{"a stale release freed the successor", "past fence 4's grant", func(h *LockHistory) {
			h.Steps = append(h.Steps, StepRecord{Kind: StepRelease, Key: "k", Token: "b", Held: true, Fence: 2, Now: at(350)})
			h.Steps[5].Now, h.Steps[5].ExpiresAt = at(320), at(420)
		}},
		{"fences out of grant order", "before fence", func(h *LockHistory) { h.Steps[0].Now = at(50) }},
		{"one fence twice", "granted to two tokens", func(h *LockHistory) { h.Steps[3].Fence = 1 }},
		{"overran without a cancel", "never cancelled", func(h *LockHistory) { h.Sections[1].Cancelled, h.Sections[1].LockLost = false, false }},
		{"cancelled after the successor's grant", "cancelled only at", func(h *LockHistory) { h.Sections[1].CancelAt = at(301) }},
		{"lost lease, WithLock said nil", "returned nil", func(h *LockHistory) { h.Sections[1].Result = "" }},
		{"a section without a grant", "no recorded acquire", func(h *LockHistory) { h.Sections[2].Fence = 3 }},
		{"two sections, one fence", "two sections", func(h *LockHistory) { h.Sections[2].Fence = 2 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := ok()
			c.edit(h)
			r := CheckLocks(h, 0)
			if c.want == "" {
				if len(r.Violations) > 0 || r.Overran != 1 || r.Ghosts != 1 {
					t.Errorf("violations %q, %d overran, %d ghosts; want none, 1, 1", r.Violations, r.Overran, r.Ghosts)
				}
				return
			}
			if !strings.Contains(strings.Join(r.Violations, "\n"), c.want) {
				t.Errorf("violations %q; want one saying %q", r.Violations, c.want)
			}
		})
	}
}

// halfLease enforces half the lease it reports: its leases overlap by the
// clock it reports.
type halfLease struct{ *memstore.Persistence }

func (d halfLease) AcquireLock(ctx context.Context, req driver.LockRequest) (driver.LockState, error) {
	req.Lease /= 2
	st, err := d.Persistence.AcquireLock(ctx, req)
	if st.Held {
		st.ExpiresAt = st.Now.Add(2 * req.Lease)
	}
	return st, err
}

func (d halfLease) RenewLock(ctx context.Context, key, token string, lease time.Duration) (driver.LockState, error) {
	st, err := d.Persistence.RenewLock(ctx, key, token, lease/2)
	if err == nil {
		st.ExpiresAt = st.Now.Add(lease)
	}
	return st, err
}

// fakeRenew reports a renewal as done without doing it.
type fakeRenew struct{ *memstore.Persistence }

func (d fakeRenew) RenewLock(_ context.Context, _, _ string, _ time.Duration) (driver.LockState, error) {
	return driver.LockState{Held: true, Now: time.Now()}, nil
}

const (
	testLease = 100 * time.Millisecond
	testRenew = 25 * time.Millisecond
)

func record(t *testing.T, d driver.Driver, skews []Skew, seed uint64) (*LockHistory, LockReport) {
	t.Helper()
	return recordWith(t, d, skews, StepFaults{Seed: seed, CutRate: 0.02, LostRate: 0.02, DelayRate: 0.05, MaxDelay: testLease}, 0.15, seed)
}

func recordWith(t *testing.T, d driver.Driver, skews []Skew, f StepFaults, stalls float64, seed uint64) (*LockHistory, LockReport) {
	t.Helper()
	stacks, err := Stacks(d, time.Now, StackOptions{Lease: testLease, RenewAfter: testRenew, Skews: skews, Faults: f})
	if err != nil {
		t.Fatal(err)
	}
	h := RecordLocks(stacks, LockOptions{Lease: testLease, StallRate: stalls, ImpatientRate: 0.1, Seed: seed, StoreClock: time.Now})
	return h, CheckLocks(h, 0)
}

// TestLocksOnMemstore runs the protocol in virtual time on memstore's Persistence with
// step faults, stalls and skewed holder clocks (off by up to an hour,
// drifting up to 10 %): no violation, and the stalls did overrun their
// successors' grants, so the abort rule was exercised.
func TestLocksOnMemstore(t *testing.T) {
	skews := []Skew{{}, {Offset: time.Hour, Rate: 1.1}, {Offset: -time.Hour, Rate: 0.9}}
	var overran, sections int
	for seed := range uint64(3) {
		synctest.Test(t, func(t *testing.T) {
			h, r := record(t, memstore.NewPersistence(memstore.PersistenceOptions{}), skews, seed)
			for _, v := range r.Violations {
				t.Error(v)
			}
			overran += r.Overran
			sections += r.Sections
			t.Logf("seed %d: %d sections, %d steps, %d stalled, %d overran, %d aborted, %d gave up, %d failed, max %d waiting",
				seed, r.Sections, r.Steps, r.Stalled, r.Overran, r.Aborted, h.GaveUp, h.Failed, h.MaxWaiting)
		})
	}
	if sections == 0 || overran == 0 {
		t.Errorf("%d sections, %d overran a successor's grant: the abort rule was not exercised", sections, overran)
	}
}

// TestLocksCatchesBrokenSetups: the checker finds violations in real
// histories when the driver enforces half the lease it reports, and when a
// renewal reports success and renews nothing (the holder then runs on
// past its successor's grant, never aborted).
func TestLocksCatchesBrokenSetups(t *testing.T) {
	for _, c := range []struct {
		name, want string
		d          func() driver.Driver
	}{
		{"half lease", "past fence", func() driver.Driver { return halfLease{memstore.NewPersistence(memstore.PersistenceOptions{})} }},
		{"renewal reports success, renews nothing", "never cancelled", func() driver.Driver { return fakeRenew{memstore.NewPersistence(memstore.PersistenceOptions{})} }},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				_, r := record(t, c.d(), nil, 1)
				if !strings.Contains(strings.Join(r.Violations, "\n"), c.want) {
					t.Fatalf("violations %q in %d sections; want one saying %q", r.Violations, r.Sections, c.want)
				}
				t.Logf("%d violations in %d sections, e.g. %s", len(r.Violations), r.Sections, r.Violations[0])
			})
		})
	}
}

// TestLocksCatchesSteppingClock: a holder clock that steps back while a
// renewal is in flight (slow renewals, a step of half a lease every
// quarter lease) makes persist arm its abort deadline late by the step:
// WithLock reads the holder's clock before it sends a renewal and again
// when it re-arms the deadline after the reply. The checker finds the
// late aborts. The protocol assumes clocks that run at about the store's
// rate; a step is not that, so this documents a limit rather than a bug.
func TestLocksCatchesSteppingClock(t *testing.T) {
	var found []string
	sections := 0
	for seed := uint64(0); seed < 10 && len(found) == 0; seed++ {
		synctest.Test(t, func(t *testing.T) {
			_, r := recordWith(t, memstore.NewPersistence(memstore.PersistenceOptions{}), []Skew{{Every: testLease / 4, Back: testLease / 2}},
				StepFaults{Seed: seed, DelayRate: 0.6, MaxDelay: testLease / 2}, 0.5, seed)
			sections += r.Sections
			for _, v := range r.Violations {
				if strings.Contains(v, "cancelled only at") {
					found = append(found, v)
				}
			}
		})
	}
	if len(found) == 0 {
		t.Fatalf("no late abort in %d sections", sections)
	}
	t.Logf("%d late aborts in %d sections, e.g. %s", len(found), sections, found[0])
}
