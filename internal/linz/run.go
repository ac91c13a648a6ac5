package linz

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/conformance"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

// Options size a run. The zero value is a run that fits a CI budget.
type Options struct {
	Threads          int           // threads written concurrently; 0 = 3
	WorkersPerThread int           // goroutines per thread; 0 = 3
	OpsPerWorker     int           // calls per goroutine; 0 = 60
	Lease            time.Duration // the store's lease duration; 0 = 20 ms of the test clock
	Seed             uint64        // seeds every worker's choices
	CheckTimeout     time.Duration // porcupine's budget per history; 0 = 30 s
}

func (o Options) withDefaults() Options {
	o.Threads = cmp.Or(o.Threads, 3)
	o.WorkersPerThread = cmp.Or(o.WorkersPerThread, 3)
	o.OpsPerWorker = cmp.Or(o.OpsPerWorker, 60)
	o.Lease = cmp.Or(o.Lease, 20*time.Millisecond)
	o.CheckTimeout = cmp.Or(o.CheckTimeout, 30*time.Second)
	return o
}

// StoreOptions are the ckptstore options a store under Run must be built
// with: the run's clock and lease.
func (o Options) StoreOptions(clock *testkit.Clock) ckptstore.Options {
	o = o.withDefaults()
	return ckptstore.Options{Now: clock.Now, LeaseDuration: o.Lease, RenewAfter: o.Lease / 4}
}

// Result counts what one run checked.
type Result struct {
	Operations int // calls recorded and checked
	Open       int // calls with an unknown outcome (faults)
	Conflicts  int // calls that failed with a contract error
}

// Run drives s, built with opt.StoreOptions(clock), from
// Threads×WorkersPerThread goroutines, and fails t unless the history is
// linearizable. On failure porcupine's visualization is written to
// t.ArtifactDir() and its path logged.
func Run(t *testing.T, s conformance.Store, clock *testkit.Clock, opt Options) Result {
	t.Helper()
	h := Record(s, clock, opt)
	verdict, visualize := h.Check()
	switch verdict {
	case porcupine.Ok:
	case porcupine.Illegal:
		path := filepath.Join(t.ArtifactDir(), "linearizability.html")
		if err := visualize(path); err != nil {
			t.Errorf("linz: writing the visualization: %v", err)
		}
		t.Errorf("linz: the history of %d operations is not linearizable; porcupine's visualization: %s\n%s", len(h.ops), path, h.Explain())
	default:
		t.Errorf("linz: porcupine could not decide %d operations within %v", len(h.ops), h.opt.CheckTimeout)
	}
	return h.Result
}

// History is a recorded run.
type History struct {
	Result
	ops []porcupine.Operation
	opt Options
}

// Record drives s as Run does and returns the history, unchecked.
func Record(s conformance.Store, clock *testkit.Clock, opt Options) *History {
	opt = opt.withDefaults()
	start := time.Now()
	var (
		mu      sync.Mutex
		history []porcupine.Operation
		wg      sync.WaitGroup
	)
	client := 0
	for th := range opt.Threads {
		thread := fmt.Sprintf("lz-%d-%d", opt.Seed, th)
		for wk := range opt.WorkersPerThread {
			w := &worker{
				s: s, clock: clock, thread: thread, start: start, client: client,
				rng: rand.New(rand.NewPCG(opt.Seed, uint64(client))),
				ids: fmt.Sprintf("%s-w%d", thread, wk),
			}
			client++
			wg.Go(func() {
				w.run(opt.OpsPerWorker)
				mu.Lock()
				history = append(history, w.ops...)
				mu.Unlock()
			})
		}
	}
	wg.Wait()

	h := &History{ops: history, opt: opt}
	end := time.Since(start).Nanoseconds()
	for i := range history {
		op := &history[i]
		switch op.Output.(output).code {
		case unknownCode:
			h.Open++
			op.Return = end + 1 + int64(i) // may take effect at any time after its call
		case "":
		default:
			h.Conflicts++
		}
	}
	h.Operations = len(history)
	return h
}

// Check runs porcupine on the history and returns its verdict and a
// function that writes the visualization to a file.
func (h *History) Check() (porcupine.CheckResult, func(path string) error) {
	model := porcupineModel(h.opt.Lease.Milliseconds())
	verdict, info := porcupine.CheckOperationsVerbose(model, h.ops, h.opt.CheckTimeout)
	return verdict, func(path string) error { return porcupine.VisualizePath(model, info, path) }
}

// worker is one goroutine writing one thread as a harness would, with the
// mistakes a harness makes: stale writers after an expiry, appends on a
// head that moved, ids used twice.
type worker struct {
	s      conformance.Store
	clock  *testkit.Clock
	thread string
	ids    string
	start  time.Time
	client int
	rng    *rand.Rand

	lease *ckptstore.Lease
	head  string   // the head this worker last saw
	seen  []string // ids this worker appended
	n     int
	ops   []porcupine.Operation
}

func (w *worker) run(ops int) {
	ctx := context.Background()
	for range ops {
		r := w.rng.IntN(100)
		switch {
		case w.lease == nil || r < 8:
			w.acquire(ctx)
		case r < 45:
			w.append(ctx)
		case r < 55 && w.head != "":
			w.call(input{kind: opDeleteHead, id: w.head, writer: w.lease.Writer}, func() (output, error) {
				return output{}, w.s.DeleteHead(ctx, w.thread, w.head, w.lease.Writer)
			})
		case r < 63:
			w.call(input{kind: opRenew, writer: w.lease.Writer}, func() (output, error) {
				exp, err := w.lease.Renew(ctx)
				return output{expiresAt: exp.UnixMilli()}, err
			})
		case r < 68:
			lw := w.lease.Writer
			w.call(input{kind: opRelease, writer: lw}, func() (output, error) {
				return output{}, w.lease.Release(ctx)
			})
			if w.rng.IntN(2) == 0 {
				w.lease = nil // else it writes on as a stale writer
			}
		case r < 80 && len(w.seen) > 0:
			id := w.seen[w.rng.IntN(len(w.seen))]
			w.call(input{kind: opGet, id: id}, func() (output, error) {
				cp, err := w.s.Get(ctx, id)
				if cp == nil {
					return output{}, err
				}
				return output{found: true, parent: cp.ParentCheckpointID}, err
			})
		default:
			w.readHead(ctx)
		}
		if w.rng.IntN(3) == 0 {
			w.clock.Advance(time.Duration(1+w.rng.IntN(3)) * time.Millisecond)
		}
	}
}

func (w *worker) acquire(ctx context.Context) {
	w.call(input{kind: opAcquire}, func() (output, error) {
		l, err := w.s.AcquireWriter(ctx, w.thread)
		if err != nil {
			return output{}, err
		}
		w.lease = l
		return output{fence: l.Fence, token: l.OwnerToken, expiresAt: l.ExpiresAt.UnixMilli()}, nil
	})
}

func (w *worker) readHead(ctx context.Context) {
	w.call(input{kind: opHead}, func() (output, error) {
		h, err := w.s.GetHead(ctx, w.thread)
		if err == nil {
			w.head = h
		}
		return output{head: h}, err
	})
}

func (w *worker) append(ctx context.Context) {
	id := fmt.Sprintf("%s-%d", w.ids, w.n)
	w.n++
	if len(w.seen) > 0 && w.rng.IntN(20) == 0 {
		id = w.seen[w.rng.IntN(len(w.seen))] // maybe still stored: ErrDuplicateID
	}
	parent := w.head
	if w.rng.IntN(20) == 0 {
		parent = id + "-not-the-head"
	}
	cp := &ckptstore.Checkpoint{ID: id, ThreadID: w.thread, ParentCheckpointID: parent,
		CreatedAt: float64(w.n), Reason: ckptstore.ReasonAutomatic,
		Files: []ckptstore.Entry{{Path: "f", Kind: ckptstore.KindFile, BlobKey: testkit.FileKey(w.rng.IntN(4)), Size: 1}}}
	expected := w.head
	w.call(input{kind: opAppend, id: id, expected: expected, parent: parent, writer: w.lease.Writer}, func() (output, error) {
		err := w.s.Append(ctx, cp, expected, w.lease.Writer)
		if err == nil {
			w.head = id
			w.seen = append(w.seen, id)
		}
		return output{}, err
	})
	if ckptstore.Code(w.lastErr()) == driver.CodeStaleHead {
		w.readHead(ctx)
	}
}

func (w *worker) lastErr() error {
	if len(w.ops) == 0 {
		return nil
	}
	if c := w.ops[len(w.ops)-1].Output.(output).code; c != "" && c != unknownCode {
		return driver.ErrorFor(c)
	}
	return nil
}

// call records one call of the history: its clock window, times and
// result.
func (w *worker) call(in input, do func() (output, error)) {
	in.thread = w.thread
	in.clockLo = w.clock.Now().UnixMilli()
	callAt := time.Since(w.start).Nanoseconds()
	out, err := do()
	retAt := time.Since(w.start).Nanoseconds()
	in.clockHi = w.clock.Now().UnixMilli()
	switch {
	case err == nil:
	case ckptstore.Code(err) != "":
		out = output{code: ckptstore.Code(err)}
	default:
		out = output{code: unknownCode}
	}
	w.ops = append(w.ops, porcupine.Operation{ClientId: w.client, Input: in, Call: callAt, Output: out, Return: retAt})
}

// Explain returns, for the first thread whose history is not
// linearizable, its operations in call order, one per line, then the end
// of porcupine's longest partial linearization and the operations it could
// not place: what a person reads beside the visualization.
func (h *History) Explain() string {
	m := porcupineModel(h.opt.Lease.Milliseconds())
	return ExplainFirstIllegal(m, h.ops, h.opt.CheckTimeout, func(op porcupine.Operation, _ int64) string {
		return fmt.Sprintf("[%d..%d] %s", op.Call/1000, op.Return/1000, m.DescribeOperation(op.Input, op.Output))
	})
}

// ExplainFirstIllegal returns, for the first partition of ops that m finds
// not linearizable, its operations in call order, then the end of
// porcupine's longest partial linearization and the first operations it
// could not place, each line "c<client> " and what describe says of the
// operation (t0 is the partition's first call time); "" when every
// partition is linearizable. The runs and lock checkers share it.
func ExplainFirstIllegal(m porcupine.Model, ops []porcupine.Operation, timeout time.Duration, describe func(op porcupine.Operation, t0 int64) string) string {
	for _, part := range m.Partition(ops) {
		verdict, info := porcupine.CheckOperationsVerbose(m, part, timeout)
		if verdict != porcupine.Illegal {
			continue
		}
		slices.SortFunc(part, func(a, b porcupine.Operation) int { return cmp.Compare(a.Call, b.Call) })
		t0 := part[0].Call
		var b strings.Builder
		line := func(op porcupine.Operation) { fmt.Fprintf(&b, "c%d %s\n", op.ClientId, describe(op, t0)) }
		for _, op := range part {
			line(op)
		}
		var longest []porcupine.Operation
		for _, parts := range info.PartialLinearizationsOperations() {
			for _, lin := range parts {
				if len(lin) > len(longest) {
					longest = lin
				}
			}
		}
		fmt.Fprintf(&b, "longest linearization: %d of %d operations; it ends with:\n", len(longest), len(part))
		for _, op := range longest[max(0, len(longest)-8):] {
			line(op)
		}
		placed := make(map[int64]bool, len(longest))
		for _, op := range longest {
			placed[op.Call] = true
		}
		b.WriteString("first operations it could not place:\n")
		n := 0
		for _, op := range part {
			if !placed[op.Call] && n < 6 {
				line(op)
				n++
			}
		}
		return b.String()
	}
	return ""
}
