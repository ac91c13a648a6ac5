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

	"github.com/ckptstore/ckptstore"
)

const raceWorkers = 16

func (s *suite) testConcurrency(t *testing.T) {
	t.Run("OneThread", func(t *testing.T) { s.race(t, 1) })
	t.Run("ManyThreads", func(t *testing.T) { s.race(t, 5) })
}

func (s *suite) race(t *testing.T, nThreads int) {
	e := s.env(t)
	per := s.opts.ConcurrentAppends
	// Enough tries that a worker is not starved by chance; each refused
	// AcquireWriter costs one call.
	maxTries := per * raceWorkers * 200
	threads := make([]string, nThreads)
	for i := range threads {
		threads[i] = fmt.Sprintf("race-%d", i)
	}
	e.track(threads)
	holders := make([]atomic.Int32, nThreads)
	appended := make([]atomic.Int64, nThreads)
	var refused atomic.Int64
	var (
		mu     sync.Mutex
		fences = map[string][]int64{}
	)
	var wg sync.WaitGroup
	start := make(chan struct{}) // all workers begin together, to race
	for g := 0; g < raceWorkers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			done := 0
			for try := 0; done < per && try < maxTries; try++ {
				ti := (g + try) % nThreads
				th := threads[ti]
				l, err := e.s.AcquireWriter(e.ctx, th)
				if errors.Is(err, ckptstore.ErrWriterConflict) {
					refused.Add(1)
					runtime.Gosched()
					continue
				}
				if err != nil || l == nil {
					t.Errorf("worker %d: AcquireWriter(%q): %v", g, th, err)
					return
				}
				if n := holders[ti].Add(1); n != 1 {
					t.Errorf("worker %d: %d goroutines hold the lease of %q at once", g, n, th)
				}
				mu.Lock()
				fences[th] = append(fences[th], l.Fence)
				mu.Unlock()
				head, err := e.s.Head(e.ctx, th)
				if err != nil {
					t.Errorf("worker %d: Head(%q): %v", g, th, err)
				}
				c := cp(fmt.Sprintf("w%d-%d", g, done), th, head)
				c.CreatedAt = float64(done) // not ordered across workers on purpose
				c.Files = []ckptstore.Entry{file("own", 1000+g*per+done, 1), file("shared", done%3, 1)}
				c.Artifacts = []ckptstore.Artifact{artifact("a", g%4)}
				if err := e.s.Append(e.ctx, c, head, l.Writer); err != nil {
					t.Errorf("worker %d: Append(%q on %q) under the lease: %v", g, c.ID, head, err)
				} else {
					done++
					appended[ti].Add(1)
				}
				if _, err := e.s.List(e.ctx, th); err != nil {
					t.Errorf("worker %d: List(%q): %v", g, th, err)
				}
				holders[ti].Add(-1)
				l.Release(e.ctx)
			}
			if done < per {
				t.Logf("worker %d appended %d of %d in %d tries", g, done, per, maxTries)
			}
		}()
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		return
	}
	var total int64
	for i, th := range threads {
		n := appended[i].Load()
		total += n
		list := e.list(th)
		if int64(len(list)) != n {
			t.Errorf("List(%q) has %d checkpoints, %d appends succeeded", th, len(list), n)
		}
		checkLinear(t, th, e.head(th), list)
		f := fences[th]
		slices.Sort(f)
		if len(slices.Compact(f)) != len(fences[th]) {
			t.Errorf("thread %q issued a fence twice: %v", th, fences[th])
		}
	}
	if total == 0 {
		t.Fatal("no append succeeded")
	}
	t.Logf("%d goroutines appended %d checkpoints to %d threads; %d AcquireWriter calls were refused", raceWorkers, total, nThreads, refused.Load())
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
