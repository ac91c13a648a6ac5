package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/blobs"
	"github.com/ckptstore/ckptstore/internal/workload"
)

// Operation names, in the order the report lists them.
var opOrder = []string{"acquire", "head", "get", "upload", "append", "renew", "undo", "prune", "fork", "release", "sweep"}

// runner is the load phase: the workers, what they share, and the
// counters the progress line reads.
type runner struct {
	cfg        *config
	st         *ckptstore.Store
	bucket     blobs.Bucket
	lat        *workload.Latencies
	ns         string
	threads    []string
	leaseDur   time.Duration
	renewAfter time.Duration
	gen        workload.GenOptions // every worker's generator's

	stop     atomic.Bool  // set at the deadline: workers end their run and leave
	budget   atomic.Int64 // appends left when cfg.ops > 0
	appends  atomic.Int64 // acknowledged appends
	sessions atomic.Int64 // harness runs that held a lease
	errs     atomic.Int64 // operations that failed

	mu       sync.Mutex
	problems workload.Problems // invariant violations seen during the load

	gaps gapWatch // the longest time without an acknowledged append
}

// gapWatch keeps the longest gap between two acknowledged appends, the
// start and the end of the load counting as acknowledgements: what a fault
// cost the writers, as one figure. Times are taken under the lock, so they
// are in acknowledgement order and no gap is measured backwards.
type gapWatch struct {
	mu      sync.Mutex
	start   time.Time // of the load
	last    time.Time // latest acknowledgement (or the start)
	halted  time.Time // when the load was told to end; zero before
	longest stall
}

// stall is a gap in the acknowledged appends.
type stall struct {
	Start    time.Duration `json:"startNs"`    // after the start of the load
	Duration time.Duration `json:"durationNs"` // until the next acknowledgement or the end of the load
}

func (g *gapWatch) begin(t time.Time) {
	g.mu.Lock()
	g.start, g.last, g.halted, g.longest = t, t, time.Time{}, stall{}
	g.mu.Unlock()
}

// halt records when the load was told to end: no append is attempted after
// it, so the runs still finishing then are no stall.
func (g *gapWatch) halt(t time.Time) {
	g.mu.Lock()
	g.halted = t
	g.mu.Unlock()
}

// ack records an acknowledged append.
func (g *gapWatch) ack() { g.mark(time.Time{}) }

// mark closes the gap that ends at at (zero: now, read under the lock) and
// returns the longest so far.
func (g *gapWatch) mark(at time.Time) stall {
	g.mu.Lock()
	defer g.mu.Unlock()
	if at.IsZero() {
		at = time.Now()
	}
	if d := at.Sub(g.last); d > g.longest.Duration {
		g.longest = stall{Start: g.last.Sub(g.start), Duration: d}
	}
	g.last = at
	return g.longest
}

// end closes the last gap when the load was halted (or at t, the end of
// the load, when nothing halted it), and returns the longest.
func (g *gapWatch) end(t time.Time) stall {
	g.mu.Lock()
	if !g.halted.IsZero() {
		t = g.halted
	}
	if t.Before(g.last) { // appends in flight at the halt were acknowledged after it
		t = g.last
	}
	g.mu.Unlock()
	return g.mark(t)
}

// worker is one harness process: it owns threads[i] for i % workers ==
// its number and writes only those (and the forks it makes), so within
// one loadgen process no two workers ever contend.
type worker struct {
	r       *runner
	gen     *workload.Gen
	rng     *rand.Rand
	threads []string

	// What this worker knows happened, for --verify.
	// acked holds the acknowledged checkpoints (id -> thread) that this
	// worker has not deleted itself; deleting one removes it here, which
	// keeps the map as small as the live data.
	acked     map[string]string
	ackedN    int64           // acknowledged appends and forks
	deletedN  int64           // of those, deleted again by this worker
	pruned    []string        // ids this worker's prunes removed (contention mode: published)
	forks     []string        // fork destination threads attempted
	uncertain map[string]bool // threads where a delete's outcome is unknown
	fenced    int64           // stalled appends refused with WRITER_LOST, as they must be
}

func (r *runner) problemf(format string, args ...any) {
	r.mu.Lock()
	r.problems.Addf(format, args...)
	r.mu.Unlock()
}

// halt ends the load: workers finish the run in flight, appending no
// more.
func (r *runner) halt() {
	if r.stop.CompareAndSwap(false, true) {
		r.gaps.halt(time.Now())
	}
}

// takeBudget reserves one append, reporting false when the run is over.
func (r *runner) takeBudget() bool {
	if r.stop.Load() {
		return false
	}
	if r.cfg.ops > 0 && r.budget.Add(-1) < 0 {
		r.halt()
		return false
	}
	return true
}

// do runs one timed operation.
func (w *worker) do(op string, f func() error) error {
	t := time.Now()
	err := f()
	w.r.lat.Record(op, time.Since(t), err)
	if err != nil {
		w.r.errs.Add(1)
	}
	return err
}

// call runs one timed store call, under a deadline of --op-timeout when
// it is set. A call that fails once its deadline has passed, with an
// error that is not a contract error, counts as DEADLINE_EXCEEDED even
// when the store's client did not wrap the context's error (a network
// time-out, say): its outcome is unknown either way, and the caller treats
// it as it treats any other failure with an unknown outcome.
func (w *worker) call(ctx context.Context, op string, f func(ctx context.Context) error) error {
	if d := w.r.cfg.opTimeout; d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	return w.do(op, func() error {
		err := f(ctx)
		if err != nil && ckptstore.Code(err) == "" && !errors.Is(err, context.DeadlineExceeded) &&
			errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("%w (--op-timeout %v): %w", context.DeadlineExceeded, w.r.cfg.opTimeout, err)
		}
		return err
	})
}

// run is the worker's loop: one harness run after another on its threads,
// round robin, until the deadline or the op budget.
func (w *worker) run(ctx context.Context) {
	for i := 0; !w.r.stop.Load() && ctx.Err() == nil; i++ {
		w.session(ctx, w.threads[i%len(w.threads)])
	}
}

// leaseState is the worker's view of the lease it holds.
type leaseState struct {
	lease *ckptstore.Lease
	// lastRenew is when the latest successful acquire or renew was sent:
	// the store's expiry is at least lastRenew + lease duration (same clock).
	lastRenew time.Time
}

// liveAt reports whether the lease was certainly live at t, allowing for
// the store's clock being off by up to max-clock-skew.
func (w *worker) liveAt(ls *leaseState, t time.Time) bool {
	return t.Before(ls.lastRenew.Add(w.r.leaseDur - w.r.cfg.maxClockSkew - time.Millisecond))
}

// failed judges an error of op, taken while holding ls (nil for none). A
// contract error other than WRITER_CONFLICT or WRITER_LOST, or a
// WRITER_LOST while the lease was certainly live, breaks the contract for
// this workload: the worker holds the thread's lease, so nobody else can
// move its head, and it never reuses an id.
func (w *worker) failed(op string, err error, ls *leaseState, at time.Time) {
	code := ckptstore.Code(err)
	switch {
	case code == "":
	case errors.Is(err, ckptstore.ErrWriterConflict):
	case ls == nil || !w.liveAt(ls, at):
	case errors.Is(err, ckptstore.ErrWriterLost):
		w.r.problemf("%s lost the lease %v after it was taken or renewed, before it could expire: %v", op, at.Sub(ls.lastRenew).Round(time.Millisecond), err)
	default:
		w.r.problemf("%s failed under a live lease: %v", op, err)
	}
}

// session is one harness run on thread.
func (w *worker) session(ctx context.Context, thread string) {
	ls, err := w.acquire(ctx, thread)
	if err != nil {
		if errors.Is(err, ckptstore.ErrWriterConflict) {
			sleep(ctx, time.Duration(w.rng.Int64N(int64(time.Millisecond)))) // another process runs it: back off a little
		}
		return
	}
	w.r.sessions.Add(1)
	defer w.release(ctx, ls)
	head, prev, ok := w.readHead(ctx, thread, ls)
	if !ok {
		return
	}
	sr := &sessionRun{thread: thread, ls: ls, head: head, prev: prev}
	if !w.appendRun(ctx, sr) || ctx.Err() != nil {
		return
	}
	if w.rng.Float64() < w.r.cfg.pruneRate {
		w.prune(ctx, thread, ls)
	}
	if w.rng.Float64() < w.r.cfg.forkRate && sr.prev != nil {
		w.fork(ctx, thread, sr.head, ls)
	}
}

// sessionRun is a harness run in progress: its thread, the lease it holds
// and the head it has written up to.
type sessionRun struct {
	thread string
	ls     *leaseState
	head   string
	prev   *ckptstore.Checkpoint // the head's checkpoint, nil for none
}

// acquire takes thread's lease; a failure is judged (failed) here.
func (w *worker) acquire(ctx context.Context, thread string) (*leaseState, error) {
	ls := &leaseState{lastRenew: time.Now()}
	err := w.call(ctx, "acquire", func(ctx context.Context) (err error) { ls.lease, err = w.r.st.AcquireWriter(ctx, thread); return err })
	if err != nil {
		w.failed("acquire", err, nil, time.Now())
		return nil, err
	}
	return ls, nil
}

// release ends ls, also when ctx was cancelled.
func (w *worker) release(ctx context.Context, ls *leaseState) {
	_ = w.call(context.WithoutCancel(ctx), "release", func(ctx context.Context) error { return ls.lease.Release(ctx) })
}

// readHead reads thread's head and its checkpoint (nil for none), the
// state a harness run starts from; false when a read failed.
func (w *worker) readHead(ctx context.Context, thread string, ls *leaseState) (string, *ckptstore.Checkpoint, bool) {
	st := w.r.st
	var head string
	if err := w.call(ctx, "head", func(ctx context.Context) (err error) { head, err = st.GetHead(ctx, thread); return err }); err != nil {
		w.failed("head", err, ls, time.Now())
		return "", nil, false
	}
	var prev *ckptstore.Checkpoint
	if head != "" {
		if err := w.call(ctx, "get", func(ctx context.Context) (err error) { prev, err = st.Get(ctx, head); return err }); err != nil {
			w.failed("get", err, ls, time.Now())
			return "", nil, false
		}
	}
	return head, prev, true
}

// appendRun is a run's appends from sr's head: up to appends-per-lease,
// one of them maybe stalled past the lease, each maybe undone, moving sr's
// head; false when the run ended at a failure or a fenced stall, which
// ends the session.
func (w *worker) appendRun(ctx context.Context, sr *sessionRun) bool {
	r := w.r
	stallAt := -1
	if w.rng.Float64() < r.cfg.stallRate {
		stallAt = w.rng.IntN(r.cfg.appendsPerLease)
	}
	for i := 0; i < r.cfg.appendsPerLease && ctx.Err() == nil; i++ {
		if !r.takeBudget() {
			break
		}
		if r.cfg.think > 0 && i > 0 {
			sleep(ctx, r.cfg.think)
		}
		id, cp, ok := w.appendOne(ctx, sr, i == stallAt)
		if !ok {
			return false
		}
		if w.rng.Float64() < r.cfg.undoRate {
			if !w.undo(ctx, sr, id) {
				return false
			}
			continue // the head is the parent again
		}
		sr.head, sr.prev = id, cp
	}
	return true
}

// appendOne captures and appends one checkpoint on sr's head, after a
// pause past the lease when stalled; false when the session must end.
func (w *worker) appendOne(ctx context.Context, sr *sessionRun, stalled bool) (string, *ckptstore.Checkpoint, bool) {
	r, st, thread, ls := w.r, w.r.st, sr.thread, sr.ls
	if stalled {
		// A paused harness: wake after the lease is certainly over,
		// even if the clock that granted it and the one that judges
		// this append are max-clock-skew apart in either direction.
		sleep(ctx, r.leaseDur+2*r.cfg.maxClockSkew+10*time.Millisecond)
	} else if !w.keepLease(ctx, ls) {
		return "", nil, false
	}
	id := w.gen.NewID()
	cp, fresh := w.gen.Next(thread, id, sr.head, sr.prev)
	for _, k := range fresh { // a capture uploads its blobs before it appends
		if err := w.do("upload", func() error { return r.bucket.Put(ctx, k, bytes.NewReader(blobBody)) }); err != nil {
			return "", nil, false
		}
	}
	// A failed append may still be stored (commit_unknown_result, a
	// deadline): it is not acknowledged, so --verify never misses it, and
	// the run ends, so the next run re-reads the head whichever way it went.
	err := w.call(ctx, "append", func(ctx context.Context) error { return st.Append(ctx, cp, sr.head, ls.lease.Writer) })
	done := time.Now()
	switch {
	case stalled && err == nil:
		r.problemf("fencing: an append by a writer that stalled past its lease (%v) succeeded (thread %q, checkpoint %q)", r.leaseDur, thread, id)
	case stalled && errors.Is(err, ckptstore.ErrWriterLost):
		w.fenced++
		return "", nil, false
	case err != nil:
		w.failed("append", err, ls, done)
		return "", nil, false
	}
	w.acked[id] = thread
	w.ackedN++
	r.appends.Add(1)
	r.gaps.ack()
	return id, cp, true
}

// undo deletes id, the checkpoint just appended on sr's head, as a user
// undoing a turn does; false when the session must end.
func (w *worker) undo(ctx context.Context, sr *sessionRun, id string) bool {
	thread, ls := sr.thread, sr.ls
	if !w.keepLease(ctx, ls) {
		return false
	}
	err := w.call(ctx, "undo", func(ctx context.Context) error { return w.r.st.DeleteHead(ctx, thread, id, ls.lease.Writer) })
	if err != nil {
		if ckptstore.Code(err) == "" {
			w.uncertain[thread] = true
		}
		w.failed("undo", err, ls, time.Now())
		return false
	}
	delete(w.acked, id)
	w.deletedN++
	return true
}

// keepLease renews the lease when RenewAfter has passed since it was taken
// or last renewed, as a harness does; false when the lease is gone.
func (w *worker) keepLease(ctx context.Context, ls *leaseState) bool {
	if time.Since(ls.lastRenew) < w.r.renewAfter {
		return true
	}
	sent := time.Now()
	err := w.call(ctx, "renew", func(ctx context.Context) error { _, err := ls.lease.Renew(ctx); return err })
	if err != nil {
		w.failed("renew", err, ls, time.Now())
		return false
	}
	ls.lastRenew = sent
	return true
}

func (w *worker) prune(ctx context.Context, thread string, ls *leaseState) {
	if !w.keepLease(ctx, ls) {
		return
	}
	var deleted []string
	err := w.call(ctx, "prune", func(ctx context.Context) (err error) {
		deleted, err = w.r.st.DeleteCheckpoints(ctx, thread, w.r.cfg.keep, ls.lease.Writer)
		return err
	})
	if err != nil {
		if ckptstore.Code(err) == "" {
			w.uncertain[thread] = true
		}
		w.failed("prune", err, ls, time.Now())
		return
	}
	for _, id := range deleted {
		if _, ok := w.acked[id]; ok {
			delete(w.acked, id)
			w.deletedN++
		}
	}
	if w.r.cfg.contend > 0 { // others may have acknowledged them
		w.pruned = append(w.pruned, deleted...)
	}
}

// fork copies head, which the worker's live lease on thread protects, into
// a new thread, as a user branching a conversation does.
func (w *worker) fork(ctx context.Context, thread, head string, ls *leaseState) {
	if !w.keepLease(ctx, ls) {
		return
	}
	destCP := w.gen.NewID()
	dest := forkThread(w.r.ns, destCP)
	w.forks = append(w.forks, dest)
	dl, err := w.acquire(ctx, dest)
	if err != nil {
		return
	}
	defer w.release(ctx, dl)
	err = w.call(ctx, "fork", func(ctx context.Context) error {
		_, err := w.r.st.ForkFromCheckpoint(ctx, ckptstore.ForkInput{
			SourceThreadID: thread, SourceCheckpointID: head,
			DestinationThreadID: dest, DestinationCheckpointID: destCP,
			CreatedAt: float64(time.Now().UnixMilli()), Writer: dl.lease.Writer,
		})
		return err
	})
	if err != nil {
		// Both leases must be live for a contract error to be a violation.
		at := time.Now()
		if w.liveAt(ls, at) {
			w.failed("fork", err, dl, at)
		}
		return
	}
	w.acked[destCP] = dest
	w.ackedN++
}

// blobBody is the bytes uploaded for every blob: the store never reads
// them, and the sweep only lists keys.
var blobBody = []byte("ckptstore loadgen blob\n")

func threadName(ns string, i int) string { return fmt.Sprintf("lg/%s/t%04d", ns, i) }

func forkThread(ns, destCP string) string { return "lg/" + ns + "/f/" + destCP }

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
