package plinz

// Lock histories.
//
// RecordLocks runs many holders of persist's Locks.WithLock on a few keys,
// over several Store values (each with its own clock, skewed from the
// store's), and records two things: every lock step as the driver answered
// it (a Recorder sits right above the driver, below any injected fault, so
// it sees what the store decided), and every critical section (its key and
// fence, when it last ran and when its context was cancelled, by the
// store's clock). CheckLocks then checks, per key:
//
//   - fences are distinct and go up with the store's grant times;
//   - no lease overlaps its successor's by the store's clock: a lease ends
//     at its last confirmed expiry or at the store's now of a release that
//     found it live, and it must have ended by every later grant;
//   - the abort rule: a section that still ran after its successor's grant
//     had its context cancelled, by the store's clock, no later than that
//     grant; a section whose lease was lost while fn returned nil made
//     WithLock return the loss; a section whose renewals were cut off (a
//     stall) was aborted.
//
// The times a checker cannot know are bounded so that a verdict of
// violation is sound: a section's last activity is read while fn still
// runs (a lower bound of its end), its cancel time after the cancel (an
// upper bound), and a release whose outcome is unknown ends its lease no
// later than the store's clock just before it was sent. A renewal whose
// reply was lost only makes the recorded expiry earlier than the true one,
// which can hide an overlap but never invent one. Slack widens every
// comparison by the store clock's granularity (redisstore reports
// milliseconds).

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ckptstore/ckptstore/blobs"
	"github.com/ckptstore/ckptstore/persist"
	"github.com/ckptstore/ckptstore/persist/driver"
)

// The lock steps of a history.
const (
	StepAcquire = "acquire"
	StepRenew   = "renew"
	StepRelease = "release"
)

// unknownErr marks a step or call that failed without a contract error.
const unknownErr = "?"

// StepRecord is one lock step as the driver answered it.
type StepRecord struct {
	Kind      string    `json:"kind"`
	Key       string    `json:"key"`
	Token     string    `json:"token"`
	Before    time.Time `json:"before"` // the store's clock just before the call
	Held      bool      `json:"held,omitempty"`
	Fence     int64     `json:"fence,omitempty"`
	Now       time.Time `json:"now,omitzero"`
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
	Err       string    `json:"err,omitempty"` // "" ok, a contract error's code, or "?"
}

func errCode(err error) string {
	if err == nil {
		return ""
	}
	if c := driver.Code(err); c != "" {
		return c
	}
	return unknownErr
}

// Recorder is a driver that records the lock steps of the driver it wraps
// and changes nothing. Put it directly above the driver, below any fault.
type Recorder struct {
	driver.Driver
	clock func() time.Time

	mu     sync.Mutex
	steps  []StepRecord
	tokens map[string]string // key + "\x00" + fence → the token granted it
}

// NewRecorder wraps d; clock reads the store's clock (the one d judges
// leases by).
func NewRecorder(d driver.Driver, clock func() time.Time) *Recorder {
	return &Recorder{Driver: d, clock: clock, tokens: map[string]string{}}
}

func grantKey(key string, fence int64) string { return fmt.Sprintf("%s\x00%d", key, fence) }

func (r *Recorder) add(kind, key, token string, before time.Time, st driver.LockState, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.steps = append(r.steps, StepRecord{Kind: kind, Key: key, Token: token, Before: before,
		Held: st.Held, Fence: st.Fence, Now: st.Now, ExpiresAt: st.ExpiresAt, Err: errCode(err)})
	if kind == StepAcquire && err == nil && st.Held {
		r.tokens[grantKey(key, st.Fence)] = token
	}
}

// AcquireLock implements driver.Locks.
func (r *Recorder) AcquireLock(ctx context.Context, req driver.LockRequest) (driver.LockState, error) {
	before := r.clock()
	st, err := r.Driver.AcquireLock(ctx, req)
	r.add(StepAcquire, req.Key, req.Token, before, st, err)
	return st, err
}

// RenewLock implements driver.Locks.
func (r *Recorder) RenewLock(ctx context.Context, key, token string, lease time.Duration) (driver.LockState, error) {
	before := r.clock()
	st, err := r.Driver.RenewLock(ctx, key, token, lease)
	r.add(StepRenew, key, token, before, st, err)
	return st, err
}

// ReleaseLock implements driver.Locks.
func (r *Recorder) ReleaseLock(ctx context.Context, key, token string) (driver.LockState, error) {
	before := r.clock()
	st, err := r.Driver.ReleaseLock(ctx, key, token)
	r.add(StepRelease, key, token, before, st, err)
	return st, err
}

// Token returns the token the driver granted key's lease with fence to,
// or "".
func (r *Recorder) Token(key string, fence int64) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.tokens[grantKey(key, fence)]
}

// Steps returns a copy of the steps recorded so far.
func (r *Recorder) Steps() []StepRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.steps)
}

// ErrInjected is the error of a step an injected fault failed.
var ErrInjected = errors.New("plinz: injected fault")

// StepFaults are faults injected into lock steps. Rates are probabilities
// per step; each step draws once.
type StepFaults struct {
	Seed uint64
	// CutRate: the step fails before it reaches the driver.
	CutRate float64
	// LostRate: the step runs, then fails as if its reply were lost (the
	// caller sees what commit_unknown_result tells it).
	LostRate float64
	// DelayRate: the step waits up to MaxDelay (while its context lives)
	// before it runs, as a slow network or a paused process would.
	DelayRate float64
	MaxDelay  time.Duration
}

// Faulty is a driver that injects StepFaults into the lock steps of the
// driver it wraps; every other method passes through.
type Faulty struct {
	driver.Driver
	f StepFaults

	mu       sync.Mutex
	rng      *rand.Rand
	isolated map[string]bool

	// Cut, Lost and Delayed count the faults injected.
	Cut, Lost, Delayed atomic.Int64
}

// NewFaulty wraps d.
func NewFaulty(d driver.Driver, f StepFaults) *Faulty {
	return &Faulty{Driver: d, f: f, rng: rand.New(rand.NewPCG(f.Seed, 0x6c6f636b)), isolated: map[string]bool{}}
}

// Isolate cuts every later renewal of token off the store: its holder
// stalls, as one behind a partition would.
func (f *Faulty) Isolate(token string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.isolated[token] = true
}

// draw draws the step's fault; it returns the delay to wait, whether to
// cut the step, and whether to lose its reply.
func (f *Faulty) draw(token string, renew bool) (time.Duration, bool, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if renew && f.isolated[token] {
		return 0, true, false
	}
	x := f.rng.Float64()
	switch {
	case x < f.f.CutRate:
		return 0, true, false
	case x < f.f.CutRate+f.f.LostRate:
		return 0, false, true
	case x < f.f.CutRate+f.f.LostRate+f.f.DelayRate && f.f.MaxDelay > 0:
		return time.Duration(f.rng.Int64N(int64(f.f.MaxDelay))) + 1, false, false
	}
	return 0, false, false
}

func (f *Faulty) step(ctx context.Context, token string, renew bool, do func() (driver.LockState, error)) (driver.LockState, error) {
	delay, cut, lost := f.draw(token, renew)
	if delay > 0 {
		f.Delayed.Add(1)
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return driver.LockState{}, ctx.Err()
		}
	}
	if cut {
		f.Cut.Add(1)
		return driver.LockState{}, fmt.Errorf("%w: the request was cut", ErrInjected)
	}
	st, err := do()
	if lost && err == nil {
		f.Lost.Add(1)
		return driver.LockState{}, fmt.Errorf("%w: the reply was lost", ErrInjected)
	}
	return st, err
}

// AcquireLock implements driver.Locks.
func (f *Faulty) AcquireLock(ctx context.Context, req driver.LockRequest) (driver.LockState, error) {
	return f.step(ctx, req.Token, false, func() (driver.LockState, error) { return f.Driver.AcquireLock(ctx, req) })
}

// RenewLock implements driver.Locks.
func (f *Faulty) RenewLock(ctx context.Context, key, token string, lease time.Duration) (driver.LockState, error) {
	return f.step(ctx, token, true, func() (driver.LockState, error) { return f.Driver.RenewLock(ctx, key, token, lease) })
}

// ReleaseLock implements driver.Locks.
func (f *Faulty) ReleaseLock(ctx context.Context, key, token string) (driver.LockState, error) {
	return f.step(ctx, token, false, func() (driver.LockState, error) { return f.Driver.ReleaseLock(ctx, key, token) })
}

// Section is one critical section WithLock ran.
type Section struct {
	Key        string    `json:"key"`
	Fence      int64     `json:"fence"`
	Holder     string    `json:"holder"`
	Start      time.Time `json:"start"`      // the store's clock as fn began
	LastActive time.Time `json:"lastActive"` // the store's clock read just before fn returned
	Cancelled  bool      `json:"cancelled,omitempty"`
	CancelAt   time.Time `json:"cancelAt,omitzero"`  // the store's clock read after the cancel
	LockLost   bool      `json:"lockLost,omitempty"` // the cancel's cause wraps ErrLockLost
	Stalled    bool      `json:"stalled,omitempty"`  // renewals cut and fn ran past the lease
	Result     string    `json:"result,omitempty"`   // WithLock's error: "" nil, a code, "?"
}

// LockHistory is a recorded lock history, in the JSON form a child
// process hands its parent.
type LockHistory struct {
	Steps    []StepRecord `json:"steps"`
	Sections []Section    `json:"sections"`
	// Holders is the number of goroutines that held; Attempts their
	// WithLock calls; GaveUp the calls whose context ended while waiting
	// (impatient waiters); MaxWaiting the most calls waiting at once.
	Holders, Attempts, GaveUp, Failed, MaxWaiting int
}

// Merge adds another process's history.
func (h *LockHistory) Merge(o *LockHistory) {
	h.Steps = append(h.Steps, o.Steps...)
	h.Sections = append(h.Sections, o.Sections...)
	h.Holders += o.Holders
	h.Attempts += o.Attempts
	h.GaveUp += o.GaveUp
	h.Failed += o.Failed
	h.MaxWaiting += o.MaxWaiting // an upper bound: the processes' peaks need not coincide
}

// LockStack is one Store a holder uses, with the Recorder under it and the
// Faulty (nil: none) between the two.
type LockStack struct {
	Store    *persist.Store
	Recorder *Recorder
	Faulty   *Faulty
}

// LockOptions size a recording.
type LockOptions struct {
	Keys     int           // keys locked; 0 = 2
	Holders  int           // goroutines; 0 = 6
	Sections int           // WithLock calls per goroutine; 0 = 8
	Lease    time.Duration // the stores' LeaseDuration; required
	MaxWork  time.Duration // the longest section that does not stall; 0 = 1.5 leases
	// StallRate is the share of sections that cut their renewals off and
	// run 1.5 leases ignoring their context: a holder that stalls past its
	// lease. It needs a Faulty in every stack.
	StallRate float64
	// ImpatientRate is the share of calls that give up after waiting half
	// a lease.
	ImpatientRate float64
	Seed          uint64
	Name          string           // prefixes holder names (a process's)
	StoreClock    func() time.Time // reads the store's clock
}

// RecordLocks runs opt.Holders goroutines, holder i on stacks[i %
// len(stacks)], each making opt.Sections WithLock calls, and returns the
// history, unchecked.
func RecordLocks(stacks []LockStack, opt LockOptions) *LockHistory {
	opt.Keys = cmp.Or(opt.Keys, 2)
	opt.Holders = cmp.Or(opt.Holders, 6)
	opt.Sections = cmp.Or(opt.Sections, 8)
	var (
		h              = &LockHistory{Holders: opt.Holders}
		wg             sync.WaitGroup
		waiting, peak  atomic.Int64
		gaveUp, failed atomic.Int64
		attempts       atomic.Int64
		recorders      []*Recorder
		sections       [][]Section
	)
	sections = make([][]Section, opt.Holders)
	for i := range opt.Holders {
		st := stacks[i%len(stacks)]
		rng := rand.New(rand.NewPCG(opt.Seed, uint64(i)))
		name := fmt.Sprintf("%sh%d", opt.Name, i)
		wg.Go(func() {
			for range opt.Sections {
				key := fmt.Sprintf("k%d", rng.IntN(opt.Keys))
				stall := st.Faulty != nil && rng.Float64() < opt.StallRate
				work := time.Duration(rng.Int64N(int64(cmp.Or(opt.MaxWork, opt.Lease*3/2)))) + time.Millisecond
				ctx, cancel := context.WithCancel(context.Background())
				var entered atomic.Bool
				impatient := time.AfterFunc(time.Hour, func() {})
				impatient.Stop()
				if rng.Float64() < opt.ImpatientRate {
					impatient = time.AfterFunc(opt.Lease/2, func() {
						if !entered.Load() {
							cancel()
						}
					})
				}
				n := waiting.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				attempts.Add(1)
				var sec *Section
				err := st.Store.Locks.WithLock(ctx, key, func(ctx context.Context) error {
					entered.Store(true)
					waiting.Add(-1)
					sec = hold(ctx, st, key, name, stall, work, opt)
					return nil
				})
				if !entered.Load() {
					waiting.Add(-1)
					if ctx.Err() != nil {
						gaveUp.Add(1)
					} else {
						failed.Add(1) // a fault failed the acquire
					}
				}
				impatient.Stop()
				cancel()
				if sec != nil {
					sec.Result = errCode(err)
					sections[i] = append(sections[i], *sec)
				}
			}
		})
	}
	wg.Wait()
	for _, st := range stacks {
		if !slices.Contains(recorders, st.Recorder) {
			recorders = append(recorders, st.Recorder)
			h.Steps = append(h.Steps, st.Recorder.Steps()...)
		}
	}
	for _, s := range sections {
		h.Sections = append(h.Sections, s...)
	}
	h.Attempts, h.GaveUp, h.Failed, h.MaxWaiting = int(attempts.Load()), int(gaveUp.Load()), int(failed.Load()), int(peak.Load())
	return h
}

// hold is one critical section: it works for work (until ctx is done,
// unless it stalls) and records what happened by the store's clock.
func hold(ctx context.Context, st LockStack, key, name string, stall bool, work time.Duration, opt LockOptions) *Section {
	fence, _ := persist.LockFence(ctx)
	sec := &Section{Key: key, Fence: fence, Holder: name, Start: opt.StoreClock()}
	stall = stall && st.Recorder.Token(key, fence) != "" // a grant the Recorder saw: its token can be cut off
	sec.Stalled = stall
	var cancelAt time.Time
	var lost bool
	fired := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		cancelAt = opt.StoreClock()
		lost = errors.Is(context.Cause(ctx), persist.ErrLockLost)
		close(fired)
	})
	if stall {
		st.Faulty.Isolate(st.Recorder.Token(key, fence))
		time.Sleep(opt.Lease * 3 / 2) // ignoring ctx: the stall
	} else {
		t := time.NewTimer(work)
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	sec.LastActive = opt.StoreClock()
	if !stop() {
		<-fired
		sec.Cancelled, sec.CancelAt, sec.LockLost = true, cancelAt, lost
	}
	return sec
}

// LockReport is what CheckLocks found.
type LockReport struct {
	Steps, Grants, Sections int
	// Ghosts are grants known only from a release that found them live
	// (the acquire's reply was lost).
	Ghosts int
	// Overran counts sections that still ran after their successor's
	// grant (each must have been aborted before it); Aborted, sections
	// whose context was cancelled because the lease was lost.
	Overran, Aborted, Stalled int
	Violations                []string
}

type grant struct {
	token    string
	fence    int64
	at, exp  time.Time
	end      time.Time // zero: no release ended it
	lastHeld time.Time // the store's latest now at which a step found it live
	ghost    bool
}

func (g *grant) leaseEnd() time.Time {
	if !g.end.IsZero() && (g.exp.IsZero() || g.end.Before(g.exp)) {
		return g.end
	}
	return g.exp
}

// CheckLocks checks h (see the top of this file); slack is the store
// clock's granularity.
func CheckLocks(h *LockHistory, slack time.Duration) LockReport {
	r := LockReport{Steps: len(h.Steps), Sections: len(h.Sections)}
	bad := func(format string, args ...any) { r.Violations = append(r.Violations, fmt.Sprintf(format, args...)) }
	grants := map[string]map[string]*grant{} // key → token → grant
	for _, s := range h.Steps {
		if s.Kind != StepAcquire || s.Err != "" || !s.Held {
			continue
		}
		byTok := grants[s.Key]
		if byTok == nil {
			byTok = map[string]*grant{}
			grants[s.Key] = byTok
		}
		if g := byTok[s.Token]; g != nil {
			if g.fence != s.Fence {
				bad("%s: token %s granted twice, fences %d and %d", s.Key, s.Token, g.fence, s.Fence)
			}
			g.exp = maxTime(g.exp, s.ExpiresAt)
			continue
		}
		byTok[s.Token] = &grant{token: s.Token, fence: s.Fence, at: s.Now, exp: s.ExpiresAt}
	}
	for _, s := range h.Steps {
		g := grants[s.Key][s.Token]
		switch {
		case s.Kind == StepRenew && s.Err == "" && g != nil:
			g.exp = maxTime(g.exp, s.ExpiresAt)
			g.lastHeld = maxTime(g.lastHeld, s.Now)
		case s.Kind == StepRelease && s.Err == "" && s.Held:
			if g == nil {
				g = &grant{token: s.Token, fence: s.Fence, ghost: true}
				if grants[s.Key] == nil {
					grants[s.Key] = map[string]*grant{}
				}
				grants[s.Key][s.Token] = g
			}
			g.end = minTime(g.end, s.Now)
			g.lastHeld = maxTime(g.lastHeld, s.Now)
		case s.Kind == StepRelease && s.Err == unknownErr && g != nil:
			g.end = minTime(g.end, s.Before)
		}
	}
	byFence := map[string]map[int64]*grant{}
	for key, byTok := range grants {
		list := make([]*grant, 0, len(byTok))
		for _, g := range byTok {
			list = append(list, g)
			r.Grants++
			if g.ghost {
				r.Ghosts++
			}
		}
		slices.SortFunc(list, func(a, b *grant) int { return cmp.Compare(a.fence, b.fence) })
		byFence[key] = map[int64]*grant{}
		for i, b := range list {
			if prev := byFence[key][b.fence]; prev != nil {
				bad("%s: fence %d granted to two tokens", key, b.fence)
			}
			byFence[key][b.fence] = b
			if b.ghost {
				continue
			}
			for _, a := range list[:i] {
				if a.fence == b.fence {
					continue
				}
				if !a.ghost && b.at.Before(a.at) {
					bad("%s: fence %d granted at %v, before fence %d at %v", key, b.fence, ms(b.at), a.fence, ms(a.at))
				}
				if end := a.leaseEnd(); end.After(b.at) {
					bad("%s: the lease of fence %d lasted to %v, past fence %d's grant at %v", key, a.fence, ms(end), b.fence, ms(b.at))
				}
				if a.lastHeld.After(b.at) {
					bad("%s: a step found fence %d live at %v, past fence %d's grant at %v", key, a.fence, ms(a.lastHeld), b.fence, ms(b.at))
				}
			}
		}
	}
	seen := map[string]bool{}
	for _, s := range h.Sections {
		if s.Stalled {
			r.Stalled++
		}
		if s.LockLost {
			r.Aborted++
		}
		id := grantKey(s.Key, s.Fence)
		if seen[id] {
			bad("%s: two sections ran with fence %d", s.Key, s.Fence)
		}
		seen[id] = true
		if g := byFence[s.Key][s.Fence]; g == nil || g.ghost {
			bad("%s: section of %s ran with fence %d, which no recorded acquire granted", s.Key, s.Holder, s.Fence)
		}
		if s.LockLost && s.Result == "" {
			bad("%s: fence %d's lease was lost while fn ran, yet WithLock returned nil", s.Key, s.Fence)
		}
		if s.Stalled && !s.LockLost {
			bad("%s: fence %d stopped renewing and overran its lease without an abort", s.Key, s.Fence)
		}
		// The successor: the next grant with a known time.
		var next *grant
		for _, g := range byFence[s.Key] {
			if g.fence > s.Fence && !g.ghost && (next == nil || g.fence < next.fence) {
				next = g
			}
		}
		if next == nil || !s.LastActive.After(next.at.Add(slack)) {
			continue
		}
		r.Overran++
		if !s.Cancelled || s.CancelAt.After(next.at.Add(slack)) {
			bad("%s: fence %d (%s) ran until %v, past fence %d's grant at %v, and its context was %s", s.Key, s.Fence, s.Holder,
				ms(s.LastActive), next.fence, ms(next.at), map[bool]string{true: "cancelled only at " + ms(s.CancelAt), false: "never cancelled"}[s.Cancelled])
		}
	}
	return r
}

func ms(t time.Time) string { return t.Format("15:04:05.000000") }

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// minTime is the earlier of a and b, a zero a meaning none yet.
func minTime(a, b time.Time) time.Time {
	if a.IsZero() || b.Before(a) {
		return b
	}
	return a
}

// SkewedClock returns a holder's clock: base shifted by sk.Offset and,
// from the call on, running at sk.Rate times base's speed; with sk.Every
// set it also steps back by sk.Back every sk.Every of base's time (an NTP
// step, a VM resumed with a stale clock).
func SkewedClock(base func() time.Time, sk Skew) func() time.Time {
	t0 := base()
	rate := cmp.Or(sk.Rate, 1)
	return func() time.Time {
		el := base().Sub(t0)
		r := t0.Add(sk.Offset + time.Duration(float64(el)*rate))
		if sk.Every > 0 {
			r = r.Add(-sk.Back * time.Duration(el/sk.Every))
		}
		return r
	}
}

// StackOptions build LockStacks.
type StackOptions struct {
	Stores            int           // Store values; 0 = 3
	Lease, RenewAfter time.Duration // the stores' lease timing
	Faults            StepFaults    // injected between each Store and the Recorder
	// Skews are the holders' clocks (offset, rate), store i taking
	// Skews[i % len]; none: the store's clock.
	Skews []Skew
}

// Skew is how a holder's clock differs from the store's: see
// SkewedClock. The zero value is none.
type Skew struct {
	Offset      time.Duration
	Rate        float64 // 0 = 1
	Every, Back time.Duration
}

// Stacks returns opt.Stores LockStacks over d, which judges leases by
// storeClock, sharing one Recorder (one process's view of d).
func Stacks(d driver.Driver, storeClock func() time.Time, opt StackOptions) ([]LockStack, error) {
	rec := NewRecorder(d, storeClock)
	n := cmp.Or(opt.Stores, 3)
	out := make([]LockStack, 0, n)
	for i := range n {
		clock := storeClock
		if len(opt.Skews) > 0 {
			clock = SkewedClock(storeClock, opt.Skews[i%len(opt.Skews)])
		}
		f := opt.Faults
		f.Seed += uint64(i)
		fy := NewFaulty(rec, f)
		s, err := persist.New(fy, persist.Options{Bucket: blobs.NewMem(blobs.MemOptions{}), Now: clock, LeaseDuration: opt.Lease, RenewAfter: opt.RenewAfter})
		if err != nil {
			return nil, err
		}
		out = append(out, LockStack{Store: s, Recorder: rec, Faulty: fy})
	}
	return out, nil
}

// Add sums o into r.
func (r *LockReport) Add(o LockReport) {
	r.Steps += o.Steps
	r.Grants += o.Grants
	r.Sections += o.Sections
	r.Ghosts += o.Ghosts
	r.Overran += o.Overran
	r.Aborted += o.Aborted
	r.Stalled += o.Stalled
	r.Violations = append(r.Violations, o.Violations...)
}

// Totals sums what several histories and their reports hold, for a
// test's figures.
type Totals struct {
	Histories, Holders, Attempts, GaveUp, Failed, MaxWaiting int
	LockReport
}

// Add counts one checked history.
func (t *Totals) Add(h *LockHistory, r LockReport) {
	t.Histories++
	t.Holders += h.Holders
	t.Attempts += h.Attempts
	t.GaveUp += h.GaveUp
	t.Failed += h.Failed
	t.MaxWaiting = max(t.MaxWaiting, h.MaxWaiting)
	t.LockReport.Add(r)
}

// String is the figures, one line.
func (t Totals) String() string {
	return fmt.Sprintf("%d histories: %d holders, %d WithLock calls (%d gave up waiting, %d failed by faults), %d sections, %d lock steps, %d grants (%d known only by their release); max %d waiting at once; %d stalled, %d aborted, %d overran a successor's grant; %d violations",
		t.Histories, t.Holders, t.Attempts, t.GaveUp, t.Failed, t.Sections, t.Steps, t.Grants, t.Ghosts, t.MaxWaiting, t.Stalled, t.Aborted, t.Overran, len(t.Violations))
}
