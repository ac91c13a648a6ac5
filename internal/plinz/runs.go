// Package plinz checks concurrent histories of the persistence stores
// (package persist) the way package internal/linz checks the checkpoint
// store's: runs against a sequential model with porcupine, and lock
// histories against the lease rules.
//
// # Runs
//
// RecordRuns drives persist.Runs from many goroutines over one or more
// Store values (and, through the JSON form of a history, from other
// processes) on a small pool of ids, so that creates, resumes, patches and
// reads of one run race. The history partitions exactly: each partition has
// its own threads and runs, and a run is only ever created under one of its
// partition's threads. The sequential model (runsModel) is the contract of
// docs/persistence.md, written apart from every driver:
//
//   - createOrResume inserts when the id is unknown and otherwise returns
//     the stored run unchanged, whatever the call's thread, time or status:
//     a finished run is never resurrected;
//   - update applies a patch (each field kept, set or cleared; status set
//     only) and is a no-op for an unknown run;
//   - get returns the run or nothing;
//   - findActiveRun returns the thread's running run with the greatest
//     startedAt, ties by the greatest runId in byte order.
//
// No call of the history may fail with a contract error: every input is
// valid. A call that fails otherwise (a lost reply, commit_unknown_result)
// may or may not have taken effect, even after the history ends: Check
// gives it a response time after every other event and the model branches.
//
// Times are wall-clock nanoseconds, so histories recorded by processes on
// one host merge into one.
package plinz

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"github.com/ckptstore/ckptstore/internal/linz"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/ckptstore/ckptstore/persist"
	"github.com/ckptstore/ckptstore/persist/driver"
)

// The run calls of a history.
const (
	RunCreate = "create"
	RunUpdate = "update"
	RunGet    = "get"
	RunActive = "active"
)

// The pool of one partition. Small, so that collisions are common.
const (
	runsPerPart    = 4
	threadsPerPart = 2
	maxStartedAt   = 3 // startedAt is drawn from 0..maxStartedAt: ties are common
)

func runID(part, slot int) string      { return fmt.Sprintf("p%d-r%d", part, slot) }
func threadID(part, thread int) string { return fmt.Sprintf("p%d-t%d", part, thread) }

// Edit is one optional field of a patch: Op 0 keeps it, 1 sets it to V, 2
// clears it.
type Edit struct {
	Op int8  `json:"op,omitempty"`
	V  int64 `json:"v,omitempty"`
}

// PatchSpec is the part of a run patch the history uses. SandboxKey's V n
// stands for the string "sb<n>".
type PatchSpec struct {
	Status        driver.RunStatus `json:"status,omitempty"` // "" keeps it
	FinishedAt    Edit             `json:"finishedAt,omitzero"`
	DetachedSince Edit             `json:"detachedSince,omitzero"`
	DriverEpoch   Edit             `json:"driverEpoch,omitzero"`
	SandboxKey    Edit             `json:"sandboxKey,omitzero"`
}

func field[T any](e Edit, v T) persist.Field[T] {
	switch e.Op {
	case 1:
		return persist.Set(v)
	case 2:
		return persist.Clear[T]()
	}
	return persist.Field[T]{}
}

// RunPatch is the persist patch the spec stands for.
func (p PatchSpec) RunPatch() persist.RunPatch {
	var rp persist.RunPatch
	if p.Status != "" {
		rp.Status = persist.Set(p.Status)
	}
	rp.FinishedAt = field(p.FinishedAt, p.FinishedAt.V)
	rp.DetachedSince = field(p.DetachedSince, p.DetachedSince.V)
	rp.DriverEpoch = field(p.DriverEpoch, p.DriverEpoch.V)
	rp.SandboxKey = field(p.SandboxKey, fmt.Sprintf("sb%d", p.SandboxKey.V))
	return rp
}

// RunCall is a call's input.
type RunCall struct {
	Kind      string           `json:"kind"`
	Part      int              `json:"part"`
	Slot      int              `json:"slot"`             // the run: runID(Part, Slot)
	Thread    int              `json:"thread,omitempty"` // create, active: threadID(Part, Thread)
	StartedAt int64            `json:"startedAt,omitempty"`
	Status    driver.RunStatus `json:"status,omitempty"` // create; "" = the default
	Patch     PatchSpec        `json:"patch,omitzero"`
}

// RunReturn is a call's result. Rec is the returned record as JSON, ""
// for none.
type RunReturn struct {
	Unknown bool   `json:"unknown,omitempty"` // failed without a contract error
	Code    string `json:"code,omitempty"`    // a contract error's code
	Rec     string `json:"rec,omitempty"`
}

// RunOp is one recorded call.
type RunOp struct {
	Client int       `json:"client"`
	Call   int64     `json:"call"`   // wall clock, ns
	Return int64     `json:"return"` // wall clock, ns
	In     RunCall   `json:"in"`
	Out    RunReturn `json:"out"`
}

// RunsHistory is a recorded history, in the JSON form a child process
// hands its parent.
type RunsHistory struct {
	Ops []RunOp `json:"ops"`
}

// RunsOptions size a recording. The zero value fits a CI budget.
type RunsOptions struct {
	Clients      int    // goroutines; 0 = 6
	OpsPerClient int    // calls per goroutine; 0 = 80
	Parts        int    // partitions (independent id pools); 0 = 2
	Seed         uint64 // seeds every client's choices
	FirstClient  int    // the first client number, so that processes' clients differ
}

func (o RunsOptions) withDefaults() RunsOptions {
	o.Clients = cmp.Or(o.Clients, 6)
	o.OpsPerClient = cmp.Or(o.OpsPerClient, 80)
	o.Parts = cmp.Or(o.Parts, 2)
	return o
}

// RecordRuns drives the stores' Runs from opt.Clients goroutines, client i
// on stores[i % len(stores)], and returns the history, unchecked.
func RecordRuns(stores []*persist.Store, opt RunsOptions) *RunsHistory {
	opt = opt.withDefaults()
	var (
		mu sync.Mutex
		h  RunsHistory
		wg sync.WaitGroup
	)
	for c := range opt.Clients {
		client := opt.FirstClient + c
		rs := stores[c%len(stores)].Runs
		rng := rand.New(rand.NewPCG(opt.Seed, uint64(client)))
		wg.Go(func() {
			ops := runClient(rs, rng, client, opt)
			mu.Lock()
			h.Ops = append(h.Ops, ops...)
			mu.Unlock()
		})
	}
	wg.Wait()
	return &h
}

var runStatuses = []driver.RunStatus{driver.RunRunning, driver.RunInterrupted, driver.RunCompleted, driver.RunFailed, driver.RunAborted}

func randomEdit(rng *rand.Rand) Edit {
	switch rng.IntN(4) {
	case 1:
		return Edit{Op: 1, V: rng.Int64N(4)}
	case 2:
		return Edit{Op: 2}
	}
	return Edit{}
}

func runClient(rs persist.RunStore, rng *rand.Rand, client int, opt RunsOptions) []RunOp {
	ctx := context.Background()
	ops := make([]RunOp, 0, opt.OpsPerClient)
	for range opt.OpsPerClient {
		in := RunCall{Part: rng.IntN(opt.Parts), Slot: rng.IntN(runsPerPart), Thread: rng.IntN(threadsPerPart)}
		var do func() (*persist.RunRecord, error)
		switch r := rng.IntN(100); {
		case r < 30:
			in.Kind, in.StartedAt = RunCreate, rng.Int64N(maxStartedAt+1)
			if rng.IntN(3) == 0 {
				in.Status = runStatuses[rng.IntN(len(runStatuses))]
			}
			do = func() (*persist.RunRecord, error) {
				return rs.CreateOrResume(ctx, persist.RunStart{RunID: runID(in.Part, in.Slot), ThreadID: threadID(in.Part, in.Thread), StartedAt: in.StartedAt, Status: in.Status})
			}
		case r < 60:
			in.Kind = RunUpdate
			p := &in.Patch
			if rng.IntN(2) == 0 {
				// Running often, so that finished runs come back to life
				// by a patch (allowed) while creates must not revive them.
				p.Status = runStatuses[rng.IntN(len(runStatuses))]
			}
			p.FinishedAt, p.DetachedSince, p.DriverEpoch, p.SandboxKey = randomEdit(rng), randomEdit(rng), randomEdit(rng), randomEdit(rng)
			do = func() (*persist.RunRecord, error) {
				return nil, rs.Update(ctx, runID(in.Part, in.Slot), in.Patch.RunPatch())
			}
		case r < 80:
			in.Kind = RunGet
			do = func() (*persist.RunRecord, error) { return rs.Get(ctx, runID(in.Part, in.Slot)) }
		default:
			in.Kind, in.Slot = RunActive, 0
			do = func() (*persist.RunRecord, error) { return rs.FindActiveRun(ctx, threadID(in.Part, in.Thread)) }
		}
		call := time.Now().UnixNano()
		rec, err := do()
		ret := time.Now().UnixNano()
		out := RunReturn{Rec: encodeRun(rec)}
		switch {
		case err == nil:
		case persist.Code(err) != "":
			out = RunReturn{Code: persist.Code(err)}
		default:
			out = RunReturn{Unknown: true}
		}
		ops = append(ops, RunOp{Client: client, Call: call, Return: ret, In: in, Out: out})
	}
	return ops
}

// encodeRun is the record's JSON, the form results are compared in.
func encodeRun(r *driver.RunRecord) string {
	if r == nil {
		return ""
	}
	b, err := json.Marshal(r)
	if err != nil {
		panic(err) // a RunRecord always marshals
	}
	return string(b)
}

// RunsStats count what a history holds.
type RunsStats struct {
	Operations, Unknown, Errors int
}

// Stats counts the history's calls.
func (h *RunsHistory) Stats() RunsStats {
	s := RunsStats{Operations: len(h.Ops)}
	for _, op := range h.Ops {
		switch {
		case op.Out.Unknown:
			s.Unknown++
		case op.Out.Code != "":
			s.Errors++
		}
	}
	return s
}

// Merge adds another process's history.
func (h *RunsHistory) Merge(o *RunsHistory) { h.Ops = append(h.Ops, o.Ops...) }

// operations returns the history as porcupine's, an unknown call ending
// after every other event.
func (h *RunsHistory) operations() []porcupine.Operation {
	var end int64
	for _, op := range h.Ops {
		if !op.Out.Unknown {
			end = max(end, op.Return)
		}
	}
	ops := make([]porcupine.Operation, len(h.Ops))
	for i, op := range h.Ops {
		ret := op.Return
		if op.Out.Unknown {
			ret = max(end, op.Return) + 1 + int64(i)
		}
		ops[i] = porcupine.Operation{ClientId: op.Client, Input: op.In, Call: op.Call, Output: op.Out, Return: ret}
	}
	return ops
}

// Check runs porcupine on the history within timeout and returns its
// verdict and a function that writes the visualization to a file.
func (h *RunsHistory) Check(timeout time.Duration) (porcupine.CheckResult, func(path string) error) {
	m := RunsModel()
	verdict, info := porcupine.CheckOperationsVerbose(m, h.operations(), timeout)
	return verdict, func(path string) error { return porcupine.VisualizePath(m, info, path) }
}

// ---- the sequential model ----

// opt is an optional integer field of the model's run.
type opt struct {
	set bool
	v   int64
}

func (o opt) ptr() *int64 {
	if !o.set {
		return nil
	}
	v := o.v
	return &v
}

func (o opt) edit(e Edit) opt {
	switch e.Op {
	case 1:
		return opt{true, e.V}
	case 2:
		return opt{}
	}
	return o
}

// mrun is one run of the model.
type mrun struct {
	present                                            bool
	thread                                             int
	status                                             driver.RunStatus
	startedAt                                          int64
	finishedAt, detachedSince, driverEpoch, sandboxKey opt
}

// runsState is one partition's runs, by slot. It is comparable, so
// porcupine can merge equal states.
type runsState [runsPerPart]mrun

func (r mrun) record(part, slot int) *driver.RunRecord {
	if !r.present {
		return nil
	}
	rec := &driver.RunRecord{RunID: runID(part, slot), ThreadID: threadID(part, r.thread), Status: r.status, StartedAt: r.startedAt,
		FinishedAt: r.finishedAt.ptr(), DetachedSince: r.detachedSince.ptr(), DriverEpoch: r.driverEpoch.ptr()}
	if r.sandboxKey.set {
		k := fmt.Sprintf("sb%d", r.sandboxKey.v)
		rec.SandboxKey = &k
	}
	return rec
}

// apply runs the call on s and returns the new state and the result the
// contract gives.
func (s runsState) apply(in RunCall) (runsState, RunReturn) {
	switch in.Kind {
	case RunCreate:
		if !s[in.Slot].present {
			s[in.Slot] = mrun{present: true, thread: in.Thread, status: cmp.Or(in.Status, driver.RunRunning), startedAt: in.StartedAt}
		}
		return s, RunReturn{Rec: encodeRun(s[in.Slot].record(in.Part, in.Slot))}
	case RunUpdate:
		r := s[in.Slot]
		if r.present {
			if in.Patch.Status != "" {
				r.status = in.Patch.Status
			}
			r.finishedAt = r.finishedAt.edit(in.Patch.FinishedAt)
			r.detachedSince = r.detachedSince.edit(in.Patch.DetachedSince)
			r.driverEpoch = r.driverEpoch.edit(in.Patch.DriverEpoch)
			r.sandboxKey = r.sandboxKey.edit(in.Patch.SandboxKey)
			s[in.Slot] = r
		}
		return s, RunReturn{}
	case RunGet:
		return s, RunReturn{Rec: encodeRun(s[in.Slot].record(in.Part, in.Slot))}
	case RunActive:
		best := -1
		for i, r := range s {
			if !r.present || r.thread != in.Thread || r.status != driver.RunRunning {
				continue
			}
			// Slots order as their run ids do (one digit), so the tie
			// break by runId bytes is the greater slot.
			if best < 0 || r.startedAt > s[best].startedAt || r.startedAt == s[best].startedAt && runID(in.Part, i) > runID(in.Part, best) {
				best = i
			}
		}
		if best < 0 {
			return s, RunReturn{}
		}
		return s, RunReturn{Rec: encodeRun(s[best].record(in.Part, best))}
	}
	panic("plinz: unknown run call " + in.Kind)
}

// runsStep returns the states the call can leave when it returned out:
// none when out is impossible, both outcomes when it is unknown.
func runsStep(s runsState, in RunCall, out RunReturn) []runsState {
	next, want := s.apply(in)
	switch {
	case out.Unknown:
		if next == s {
			return []runsState{s}
		}
		return []runsState{s, next}
	case out == want:
		return []runsState{next}
	}
	return nil
}

// RunsModel is the runs contract as porcupine's model, partitioned by the
// calls' Part.
func RunsModel() porcupine.Model {
	nm := porcupine.NondeterministicModel{
		Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
			byPart := map[int][]porcupine.Operation{}
			for _, op := range history {
				p := op.Input.(RunCall).Part
				byPart[p] = append(byPart[p], op)
			}
			parts := make([][]porcupine.Operation, 0, len(byPart))
			for _, p := range slices.Sorted(maps.Keys(byPart)) {
				parts = append(parts, byPart[p])
			}
			return parts
		},
		Init: func() []any { return []any{runsState{}} },
		Step: func(st, in, out any) []any {
			next := runsStep(st.(runsState), in.(RunCall), out.(RunReturn))
			res := make([]any, len(next))
			for i, n := range next {
				res[i] = n
			}
			return res
		},
		Equal: func(a, b any) bool { return a.(runsState) == b.(runsState) },
		DescribeOperation: func(in, out any) string {
			i, o := in.(RunCall), out.(RunReturn)
			res := o.Rec
			switch {
			case o.Unknown:
				res = "?"
			case o.Code != "":
				res = o.Code
			case res == "":
				res = "nil"
			}
			switch i.Kind {
			case RunCreate:
				return fmt.Sprintf("create(%s, %s, at=%d, %q) → %s", runID(i.Part, i.Slot), threadID(i.Part, i.Thread), i.StartedAt, i.Status, res)
			case RunUpdate:
				p, _ := json.Marshal(i.Patch)
				return fmt.Sprintf("update(%s, %s) → %s", runID(i.Part, i.Slot), p, res)
			case RunGet:
				return fmt.Sprintf("get(%s) → %s", runID(i.Part, i.Slot), res)
			}
			return fmt.Sprintf("findActiveRun(%s) → %s", threadID(i.Part, i.Thread), res)
		},
		DescribeState: func(st any) string {
			var b strings.Builder
			for i, r := range st.(runsState) {
				if r.present {
					fmt.Fprintf(&b, "%s ", encodeRun(r.record(0, i)))
				}
			}
			return b.String()
		},
	}
	return nm.ToModel()
}

// Soak is the factor PLINZ_SOAK sets (default 1): the driver tests run
// that many times their CI number of histories, for a long local run.
func Soak() int {
	if n, err := strconv.Atoi(os.Getenv("PLINZ_SOAK")); err == nil && n > 0 {
		return n
	}
	return 1
}

// Explain returns, for the first partition that is not linearizable, its
// calls in call order (times in µs from the first), then the end of
// porcupine's longest partial linearization and the first calls it could
// not place: what a person reads beside the visualization.
func (h *RunsHistory) Explain(timeout time.Duration) string {
	m := RunsModel()
	return linz.ExplainFirstIllegal(m, h.operations(), timeout, func(op porcupine.Operation, t0 int64) string {
		ret := fmt.Sprint((op.Return - t0) / 1000)
		if op.Output.(RunReturn).Unknown {
			ret = "∞"
		}
		return fmt.Sprintf("[%d..%s] %s", (op.Call-t0)/1000, ret, m.DescribeOperation(op.Input, op.Output))
	})
}
