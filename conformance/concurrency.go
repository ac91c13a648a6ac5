package conformance

// Concurrency: 16 goroutines race to take a thread's lease and append on
// its head, on one thread and spread over many. The clock stands still, so
// no lease expires: the lease alone must keep writers apart. Every loop is
// bounded by a count.

import (
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

const raceWorkers = 16

func (s *suite) testConcurrency(t *testing.T) {
	t.Run("OneThread", func(t *testing.T) { s.race(t, 1) })
	t.Run("ManyThreads", func(t *testing.T) { s.race(t, 5) })
}

// racer is one run of race: the store, the threads the workers share, and
// what the workers saw.
type racer struct {
	t        *testing.T
	e        *env
	per      int // appends each worker aims for
	maxTries int // turns each worker gets at most
	threads  []string
	holders  []atomic.Int32 // goroutines holding each thread's lease now
	appended []atomic.Int64 // appends that succeeded, per thread
	refused  atomic.Int64   // AcquireWriter calls refused with ErrWriterConflict

	mu     sync.Mutex
	fences map[string][]int64 // every fence issued, per thread
}

func (s *suite) race(t *testing.T, nThreads int) {
	e := s.env(t)
	per := s.opts.ConcurrentAppends
	r := &racer{t: t, e: e, per: per,
		// Enough tries that a worker is not starved by chance; each
		// refused AcquireWriter costs one call.
		maxTries: per * raceWorkers * 200,
		threads:  make([]string, nThreads),
		holders:  make([]atomic.Int32, nThreads),
		appended: make([]atomic.Int64, nThreads),
		fences:   map[string][]int64{},
	}
	for i := range r.threads {
		r.threads[i] = fmt.Sprintf("race-%d", i)
	}
	e.track(r.threads)
	var wg sync.WaitGroup
	start := make(chan struct{}) // all workers begin together, to race
	for g := range raceWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			r.worker(g)
		}()
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		return
	}
	r.check()
}

// worker takes turns over the threads until it has appended per
// checkpoints or run out of tries.
func (r *racer) worker(g int) {
	done := 0
	for try := 0; done < r.per && try < r.maxTries; try++ {
		ok, stop := r.turn(g, (g+try)%len(r.threads), done)
		if stop {
			return
		}
		if ok {
			done++
		}
	}
	if done < r.per {
		r.t.Logf("worker %d appended %d of %d in %d tries", g, done, r.per, r.maxTries)
	}
}

// turn takes the lease of thread ti, appends on its head under it, reads
// the list and releases: ok when the append succeeded, stop on an error
// that ends the worker. done is how many the worker has appended so far.
func (r *racer) turn(g, ti, done int) (ok, stop bool) {
	th := r.threads[ti]
	l, err := r.e.s.AcquireWriter(r.e.ctx, th)
	if errors.Is(err, ckptstore.ErrWriterConflict) {
		r.refused.Add(1)
		runtime.Gosched()
		return false, false
	}
	if err != nil || l == nil {
		r.t.Errorf("worker %d: AcquireWriter(%q): %v", g, th, err)
		return false, true
	}
	if n := r.holders[ti].Add(1); n != 1 {
		r.t.Errorf("worker %d: %d goroutines hold the lease of %q at once", g, n, th)
	}
	r.mu.Lock()
	r.fences[th] = append(r.fences[th], l.Fence)
	r.mu.Unlock()
	if ok = r.appendOnHead(g, th, done, l.Writer); ok {
		r.appended[ti].Add(1)
	}
	if _, err := r.e.s.List(r.e.ctx, th); err != nil {
		r.t.Errorf("worker %d: List(%q): %v", g, th, err)
	}
	r.holders[ti].Add(-1)
	l.Release(r.e.ctx)
	return ok, false
}

// appendOnHead appends worker g's next checkpoint on the head of th with
// w, and reports whether it succeeded. Its files are the worker's own blob
// and one of three shared ones.
func (r *racer) appendOnHead(g int, th string, done int, w ckptstore.Writer) bool {
	head, err := r.e.s.GetHead(r.e.ctx, th)
	if err != nil {
		r.t.Errorf("worker %d: Head(%q): %v", g, th, err)
	}
	// createdAt is not ordered across workers, on purpose.
	c := testkit.Checkpoint(th, fmt.Sprintf("w%d-%d", g, done), head, float64(done))
	c.Files = []ckptstore.Entry{testkit.File("own", 1000+g*r.per+done, 1), testkit.File("shared", done%3, 1)}
	c.Artifacts = []ckptstore.Artifact{testkit.Artifact("a", g%4)}
	if err := r.e.s.Append(r.e.ctx, c, head, w); err != nil {
		r.t.Errorf("worker %d: Append(%q on %q) under the lease: %v", g, c.ID, head, err)
		return false
	}
	return true
}

// check proves, after the workers are done, that every thread holds
// exactly the appends that succeeded, in one linear chain, that no fence
// was issued twice, and that the counts equal a recount.
func (r *racer) check() {
	t, e := r.t, r.e
	var total int64
	for i, th := range r.threads {
		n := r.appended[i].Load()
		total += n
		list := e.list(th)
		assert.Len(t, list, int(n), "List(%q) against the appends that succeeded", th)
		checkLinear(t, th, e.head(th), list)
		f := slices.Clone(r.fences[th])
		slices.Sort(f)
		assert.Len(t, slices.Compact(f), len(r.fences[th]), "thread %q issued a fence twice: %v", th, r.fences[th])
	}
	require.NotZero(t, total, "no append succeeded")
	t.Logf("%d goroutines appended %d checkpoints to %d threads; %d AcquireWriter calls were refused", raceWorkers, total, len(r.threads), r.refused.Load())
	e.wantRecount()
}

// checkLinear checks that the walk from head through parents visits every
// checkpoint of list exactly once and ends at no parent.
func checkLinear(t tb, thread, head string, list []*ckptstore.Checkpoint) {
	t.Helper()
	byID := map[string]*ckptstore.Checkpoint{}
	for _, c := range list {
		byID[c.ID] = c
	}
	seen := map[string]bool{}
	id := head
	for id != "" {
		c, ok := byID[id]
		if !ok {
			t.Errorf("thread %q: the chain reaches %q, which List does not have", thread, id)
			return
		}
		if seen[id] {
			t.Errorf("thread %q: the chain loops at %q", thread, id)
			return
		}
		seen[id] = true
		id = c.ParentCheckpointID
	}
	if len(seen) != len(list) {
		t.Errorf("thread %q: the chain from head %q covers %d of %d checkpoints: not linear", thread, head, len(seen), len(list))
	}
}
