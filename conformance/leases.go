package conformance

// Writer leases: taken without waiting, one live lease per thread, expiry
// at exactly expiresAt, renew = now + duration, fences that only grow, and
// a writer that is not the live lease fails every write and changes
// nothing. Time moves only through the suite's Clock.

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

// checkLease checks a lease AcquireWriter just returned at the clock's now.
func (e *env) checkLease(l *ckptstore.Lease, thread string, dur, renewAfter time.Duration) {
	e.t.Helper()
	assert.Equal(e.t, thread, l.ThreadID, "lease ThreadID")
	assert.NotEmpty(e.t, l.OwnerToken, "lease OwnerToken of %q", thread)
	assert.WithinDuration(e.t, e.clock.Now().Add(dur), l.ExpiresAt, 0, "lease ExpiresAt, now + %v", dur)
	assert.Equal(e.t, renewAfter, l.RenewAfter, "lease RenewAfter")
}

// conflict expects AcquireWriter(thread) to fail with ErrWriterConflict.
func (e *env) conflict(what, thread string) {
	e.t.Helper()
	e.fails(what, ckptstore.ErrWriterConflict, func() error {
		l, err := e.s.AcquireWriter(e.ctx, thread)
		if err == nil && l == nil {
			return fmt.Errorf("nil lease and nil error")
		}
		return err
	})
}

// writerLost checks that w fails every write to thread with ErrWriterLost
// and changes nothing: Append, DeleteHead, DeleteCheckpoints and
// ForkFromCheckpoint (into thread, from the thread "fork-source", which
// this creates when needed).
func (e *env) writerLost(what string, w ckptstore.Writer, thread string) {
	e.t.Helper()
	head := e.head(thread)
	c := testkit.Checkpoint(thread, fmt.Sprintf("lost-%d", len(e.ids)), head, 1000)
	c.Files = []ckptstore.Entry{testkit.File("f", 77, 1)}
	e.appendFails(what+": Append", c, head, w, ckptstore.ErrWriterLost)
	if head != "" {
		e.fails(what+": DeleteHead", ckptstore.ErrWriterLost, func() error { return e.s.DeleteHead(e.ctx, thread, head, w) })
	}
	e.fails(what+": DeleteCheckpoints", ckptstore.ErrWriterLost, func() error { return e.pruneErr(thread, 1, w) })
	if e.head("fork-source") == "" {
		// A lease on the source thread, left to expire with the others.
		e.append(testkit.Checkpoint("fork-source", "fork-source-cp", "", 1000), e.acquire("fork-source").Writer)
	}
	e.track(nil, "lost-fork")
	e.fails(what+": ForkFromCheckpoint", ckptstore.ErrWriterLost, func() error {
		return e.forkErr(forkInput("fork-source", "fork-source-cp", thread, "lost-fork", 1, w))
	})
}

// fenceAbove checks that the lease l, taken after old, has a higher fence.
func (e *env) fenceAbove(what string, l, old *ckptstore.Lease) {
	e.t.Helper()
	assert.Greater(e.t, l.Fence, old.Fence, "%s: the new lease's fence is not above the old one's", what)
}

// namedWriter is a writer a test tries, with its name for messages.
type namedWriter struct {
	name string
	w    ckptstore.Writer
}

// misses are the writers that fail every write to the thread of live, its
// live lease, with ErrWriterLost: another owner token, the fence one off
// either way, other (another thread's live lease), live's token and fence
// under other's thread id, and the zero writer.
func misses(live, other ckptstore.Writer) []namedWriter {
	up, down, swapped := live, live, live
	up.Fence++
	down.Fence--
	swapped.ThreadID = other.ThreadID
	return []namedWriter{{"forged token", forged(live)}, {"fence+1", up}, {"fence-1", down},
		{"other thread's writer", other}, {"thread id swapped", swapped}, {"zero writer", ckptstore.Writer{ThreadID: live.ThreadID}}}
}

// holds checks that w still holds thread's lease: AcquireWriter fails
// with ErrWriterConflict, and w can write.
func (e *env) holds(what string, w ckptstore.Writer, thread string) {
	e.t.Helper()
	e.conflict(what, thread)
	e.works(what, w, thread)
}

// works checks that w can still write to thread by appending a checkpoint.
func (e *env) works(what string, w ckptstore.Writer, thread string) {
	e.t.Helper()
	c := testkit.Checkpoint(thread, fmt.Sprintf("ok-%d", len(e.ids)), "", 1000)
	e.track(nil, c.ID)
	head := e.head(thread)
	c.ParentCheckpointID = head
	if err := e.s.Append(e.ctx, c, head, w); err != nil {
		e.t.Errorf("%s: Append with the live writer failed: %v", what, err)
	}
}

func (s *suite) testLeases(t *testing.T) {
	t.Run("AcquireFields", s.leasesAcquireFields)
	t.Run("OnePerThread", s.leasesOnePerThread)
	t.Run("ThreadsIndependent", s.leasesThreadsIndependent)
	t.Run("ExpiryBoundary", s.leasesExpiryBoundary)
	t.Run("Renew", s.leasesRenew)
	t.Run("RenewKeepsAlive", s.leasesRenewKeepsAlive)
	t.Run("RenewLost", s.leasesRenewLost)
	t.Run("Release", s.leasesRelease)
	t.Run("StaleReleaseKeepsReplacement", s.leasesStaleReleaseKeepsReplacement)
	t.Run("FencesGrowTokensDiffer", s.leasesFencesGrowTokensDiffer)
	t.Run("WrongThreadWriter", s.leasesWrongThreadWriter)
	t.Run("ForgedWriter", s.leasesForgedWriter)
	t.Run("ForgedReleaseAndRenew", s.leasesForgedReleaseAndRenew)
	t.Run("Defaults", s.leasesDefaults)
}

func (s *suite) leasesAcquireFields(t *testing.T) {
	e, l := s.withLease(t, "t")
	e.checkLease(l, "t", LeaseDuration, RenewAfter)
}

func (s *suite) leasesOnePerThread(t *testing.T) {
	e, l := s.withLease(t, "t")
	e.holds("second AcquireWriter", l.Writer, "t")
}

func (s *suite) leasesThreadsIndependent(t *testing.T) {
	e, lt := s.withLease(t, "t")
	lu := e.acquire("u") // no waiting, though t is leased
	e.checkLease(lu, "u", LeaseDuration, RenewAfter)
	e.works("t", lt.Writer, "t")
	e.works("u", lu.Writer, "u")
	lt.Release(e.ctx)
	e.holds("u after t released", lu.Writer, "u")
}

func (s *suite) leasesExpiryBoundary(t *testing.T) {
	e, l := s.withLease(t, "t")
	e.works("fresh", l.Writer, "t")
	e.clock.Advance(LeaseDuration - time.Millisecond)
	e.holds("at expiresAt-1ms", l.Writer, "t")
	e.clock.Advance(time.Millisecond) // now == expiresAt: expired
	e.writerLost("expired writer at expiresAt", l.Writer, "t")
	if _, err := l.Renew(e.ctx); !wantErr(t, "Renew at expiresAt", err, ckptstore.ErrWriterLost) {
		return
	}
	l2 := e.acquire("t")
	e.checkLease(l2, "t", LeaseDuration, RenewAfter)
	e.fenceAbove("takeover", l2, l)
	if l2.OwnerToken == l.OwnerToken {
		t.Errorf("takeover reused owner token %q", l.OwnerToken)
	}
	e.writerLost("replaced writer", l.Writer, "t")
	e.works("the new writer", l2.Writer, "t")
}

func (s *suite) leasesRenew(t *testing.T) {
	e := s.env(t)
	first := e.clock.Now().Add(LeaseDuration)
	l := e.acquire("t")
	e.clock.Advance(30 * time.Millisecond)
	exp, err := l.Renew(e.ctx)
	require.NoError(t, err, "Renew")
	want := e.clock.Now().Add(LeaseDuration)
	if !exp.Equal(want) || !l.ExpiresAt.Equal(want) {
		t.Errorf("Renew returned %v and set ExpiresAt %v, want now + duration = %v", exp, l.ExpiresAt, want)
	}
	e.clock.Set(first) // the old expiry no longer ends it
	e.holds("at the old expiry", l.Writer, "t")
	e.clock.Set(want.Add(-time.Millisecond))
	e.conflict("at the new expiry-1ms", "t")
	e.clock.Set(want)
	if _, err := l.Renew(e.ctx); !wantErr(t, "Renew at the new expiry", err, ckptstore.ErrWriterLost) {
		return
	}
	e.writerLost("expired after renew", l.Writer, "t")
	e.fenceAbove("after expiry", e.acquire("t"), l) // the failed Renew did not revive it
}

func (s *suite) leasesRenewKeepsAlive(t *testing.T) {
	e, l := s.withLease(t, "t")
	for i := 0; i < 12; i++ {
		e.clock.Advance(RenewAfter)
		require.NoError(t, errOf(l.Renew(e.ctx)), "Renew %d", i)
	}
	e.holds("after 12 renewals", l.Writer, "t")
}

func (s *suite) leasesRenewLost(t *testing.T) {
	e, released := s.withLease(t, "t")
	released.Release(e.ctx)
	wantErr(t, "Renew after Release", errOf(released.Renew(e.ctx)), ckptstore.ErrWriterLost)
	l := e.acquire("t") // the failed Renew took nothing back
	e.clock.Advance(LeaseDuration)
	replacement := e.acquire("t")
	wantErr(t, "Renew of a replaced lease", errOf(l.Renew(e.ctx)), ckptstore.ErrWriterLost)
	e.holds("after a replaced lease's Renew", replacement.Writer, "t")
}

func (s *suite) leasesRelease(t *testing.T) {
	e, l := s.withLease(t, "t")
	e.works("before release", l.Writer, "t")
	l.Release(e.ctx)
	l.Release(e.ctx) // twice: no effect, no panic
	e.writerLost("released writer", l.Writer, "t")
	l2 := e.acquire("t") // at once, without moving the clock
	e.checkLease(l2, "t", LeaseDuration, RenewAfter)
	e.fenceAbove("after release", l2, l)
	e.writerLost("released writer after a new lease", l.Writer, "t")
	e.works("new lease", l2.Writer, "t")
}

func (s *suite) leasesStaleReleaseKeepsReplacement(t *testing.T) {
	e, l1 := s.withLease(t, "t")
	e.clock.Advance(LeaseDuration)
	l2 := e.acquire("t")
	l1.Release(e.ctx)
	e.holds("after the stale Release", l2.Writer, "t")
	// A released lease's holder releasing again after a third lease.
	l2.Release(e.ctx)
	l3 := e.acquire("t")
	l2.Release(e.ctx)
	l1.Release(e.ctx)
	e.holds("after two stale Releases", l3.Writer, "t")
}

func (s *suite) leasesFencesGrowTokensDiffer(t *testing.T) {
	e := s.env(t)
	var last int64
	tokens := map[string]bool{}
	for i := 0; i < 8; i++ {
		l := e.acquire("t")
		if i > 0 && l.Fence <= last {
			t.Errorf("lease %d has fence %d, not above %d", i, l.Fence, last)
		}
		if tokens[l.OwnerToken] {
			t.Errorf("lease %d reused owner token %q", i, l.OwnerToken)
		}
		last, tokens[l.OwnerToken] = l.Fence, true
		if i%2 == 0 {
			l.Release(e.ctx)
		} else {
			e.clock.Advance(LeaseDuration + time.Duration(i)*time.Millisecond)
		}
	}
}

func (s *suite) leasesWrongThreadWriter(t *testing.T) {
	e, lt := s.withLease(t, "t")
	lu := e.acquire("u")
	e.works("t", lt.Writer, "t")
	e.writerLost("u's writer on t", lu.Writer, "t")
	swapped := lt.Writer
	swapped.ThreadID = "u"
	e.writerLost("t's token under u's name on t", swapped, "t")
	e.writerLost("t's token under u's name on u", swapped, "u")
}

func (s *suite) leasesForgedWriter(t *testing.T) {
	e, l := s.withLease(t, "t")
	e.works("t", l.Writer, "t")
	e.writerLost("forged token", forged(l.Writer), "t")
	w := l.Writer
	w.Fence++
	e.writerLost("fence+1", w, "t")
	w.Fence -= 2
	e.writerLost("fence-1", w, "t")
	e.writerLost("zero writer", ckptstore.Writer{ThreadID: "t"}, "t")
	e.writerLost("no lease at all", ckptstore.Writer{ThreadID: "never-leased", OwnerToken: l.OwnerToken, Fence: l.Fence}, "never-leased")
}

func (s *suite) leasesForgedReleaseAndRenew(t *testing.T) {
	// A Release with a forged token or a fence one off changes
	// nothing, and a Renew with them fails and extends nothing.
	e, l := s.withLease(t, "t")
	e.works("t", l.Writer, "t")
	forge := func(f func(w *ckptstore.Writer)) *ckptstore.Lease {
		x := *l // the same keeper (the store), another writer
		f(&x.Writer)
		return &x
	}
	for _, x := range []struct {
		name  string
		lease *ckptstore.Lease
	}{
		{"forged token", forge(func(w *ckptstore.Writer) { *w = forged(*w) })},
		{"fence+1", forge(func(w *ckptstore.Writer) { w.Fence++ })},
		{"fence-1", forge(func(w *ckptstore.Writer) { w.Fence-- })},
		{"empty token", forge(func(w *ckptstore.Writer) { w.OwnerToken = "" })},
		{"another thread", forge(func(w *ckptstore.Writer) { w.ThreadID = "u" })},
	} {
		x.lease.Release(e.ctx)
		e.holds("after a Release with "+x.name, l.Writer, "t")
		e.clock.Advance(time.Millisecond)
		wantErr(t, "Renew with "+x.name, errOf(x.lease.Renew(e.ctx)), ckptstore.ErrWriterLost)
	}
	// No Renew extended the lease: it ends when it always would.
	e.clock.Set(l.ExpiresAt.Add(-time.Millisecond))
	e.conflict("at expiresAt-1ms", "t")
	e.clock.Set(l.ExpiresAt)
	e.writerLost("the lease at its first expiry", l.Writer, "t")
	e.acquire("t")
}

func (s *suite) leasesDefaults(t *testing.T) {
	for _, tc := range []struct {
		name            string
		dur, renewAfter time.Duration
		wantDur, wantRA time.Duration
	}{
		{"zero", 0, 0, 120 * time.Second, 45 * time.Second},
		{"only LeaseDuration", 80 * time.Millisecond, 0, 80 * time.Millisecond, 30 * time.Millisecond},
		{"only RenewAfter", 0, 10 * time.Second, 120 * time.Second, 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewClock(Start)
			st := s.newStore(t, ckptstore.Options{Now: c.Now, LeaseDuration: tc.dur, RenewAfter: tc.renewAfter})
			e := newEnv(t, st, c)
			l := e.acquire("t")
			e.checkLease(l, "t", tc.wantDur, tc.wantRA)
			c.Advance(tc.wantDur - time.Millisecond)
			e.conflict("at expiresAt-1ms", "t")
			c.Advance(time.Millisecond)
			e.acquire("t")
		})
	}
}
