package plinz

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/ckptstore/ckptstore/blobs"
	"github.com/ckptstore/ckptstore/memstore"
	"github.com/ckptstore/ckptstore/persist"
	"github.com/ckptstore/ckptstore/persist/driver"
)

func newStores(t *testing.T, d driver.Driver, n int) []*persist.Store {
	t.Helper()
	var out []*persist.Store
	for range n {
		s, err := persist.New(d, persist.Options{Bucket: blobs.NewMem(blobs.MemOptions{})})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// resurrecting stores a running run over a finished one on createOrResume:
// the bug the contract's "resuming never resurrects" rules out.
type resurrecting struct{ *memstore.Persistence }

func (d resurrecting) CreateOrResumeRun(ctx context.Context, rec *driver.RunRecord) (*driver.RunRecord, error) {
	got, err := d.Persistence.CreateOrResumeRun(ctx, rec)
	if err != nil || !got.Status.Terminal() {
		return got, err
	}
	if _, err := d.UpdateRun(ctx, rec.RunID, driver.RunPatch{Status: driver.Set(driver.RunRunning)}); err != nil {
		return nil, err
	}
	return d.GetRun(ctx, rec.RunID)
}

// oldestActive answers findActiveRun with the thread's oldest running run.
type oldestActive struct{ *memstore.Persistence }

func (d oldestActive) ActiveRun(ctx context.Context, threadID string) (*driver.RunRecord, error) {
	runs, err := d.ThreadRuns(ctx, threadID, nil, driver.MaxListLimit)
	for _, r := range runs {
		if r.Status == driver.RunRunning {
			return r, err
		}
	}
	return nil, err
}

// clearingPatch drops a patch's clears: a patch that can only set.
type clearingPatch struct{ *memstore.Persistence }

func (d clearingPatch) UpdateRun(ctx context.Context, id string, p driver.RunPatch) (bool, error) {
	if p.FinishedAt.IsClear() {
		p.FinishedAt = driver.RunPatch{}.FinishedAt
	}
	return d.Persistence.UpdateRun(ctx, id, p)
}

// TestRunsCatchesBrokenDrivers: histories of memstore's Persistence are linearizable;
// each broken driver fails the check in at least one of four histories.
func TestRunsCatchesBrokenDrivers(t *testing.T) {
	for _, c := range []struct {
		name   string
		d      func() driver.Driver
		broken bool
	}{
		{"memstore", func() driver.Driver { return memstore.NewPersistence(memstore.PersistenceOptions{}) }, false},
		{"resurrecting", func() driver.Driver { return resurrecting{memstore.NewPersistence(memstore.PersistenceOptions{})} }, true},
		{"oldest active", func() driver.Driver { return oldestActive{memstore.NewPersistence(memstore.PersistenceOptions{})} }, true},
		{"patch cannot clear", func() driver.Driver { return clearingPatch{memstore.NewPersistence(memstore.PersistenceOptions{})} }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			illegal, ops := 0, 0
			for seed := range uint64(4) {
				h := RecordRuns(newStores(t, c.d(), 2), RunsOptions{Seed: seed})
				ops += len(h.Ops)
				switch v, _ := h.Check(30 * time.Second); v {
				case porcupine.Illegal:
					illegal++
				case porcupine.Ok:
				default:
					t.Fatalf("seed %d: verdict %v", seed, v)
				}
			}
			if c.broken != (illegal > 0) {
				t.Errorf("%d of 4 histories illegal (%d operations); broken = %v", illegal, ops, c.broken)
			}
			t.Logf("%d of 4 histories illegal, %d operations", illegal, ops)
		})
	}
}

func rec(t *testing.T, r driver.RunRecord) string {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestRunsModelRejects checks hand-written histories: each wrong one is
// refused, its right twin accepted, and an unknown outcome may go either
// way.
func TestRunsModelRejects(t *testing.T) {
	done := driver.RunRecord{RunID: "p0-r0", ThreadID: "p0-t0", Status: driver.RunCompleted, StartedAt: 1}
	running := done
	running.Status = driver.RunRunning
	newer := driver.RunRecord{RunID: "p0-r1", ThreadID: "p0-t0", Status: driver.RunRunning, StartedAt: 2}
	tie := driver.RunRecord{RunID: "p0-r2", ThreadID: "p0-t0", Status: driver.RunRunning, StartedAt: 2}
	create := func(slot int, at int64, st driver.RunStatus, out string) RunOp {
		return RunOp{In: RunCall{Kind: RunCreate, Slot: slot, StartedAt: at, Status: st}, Out: RunReturn{Rec: out}}
	}
	seq := func(ops ...RunOp) *RunsHistory {
		for i := range ops {
			ops[i].Call, ops[i].Return = int64(10*i), int64(10*i+5)
		}
		return &RunsHistory{Ops: ops}
	}
	for _, c := range []struct {
		name string
		h    *RunsHistory
		ok   bool
	}{
		{"resume keeps a finished run", seq(create(0, 1, driver.RunCompleted, rec(t, done)), create(0, 3, "", rec(t, done))), true},
		{"resume resurrects", seq(create(0, 1, driver.RunCompleted, rec(t, done)), create(0, 3, "", rec(t, running))), false},
		{"update then get", seq(create(0, 1, driver.RunCompleted, rec(t, done)),
			RunOp{In: RunCall{Kind: RunUpdate, Patch: PatchSpec{Status: driver.RunRunning}}},
			RunOp{In: RunCall{Kind: RunGet}, Out: RunReturn{Rec: rec(t, running)}}), true},
		{"stale get after update", seq(create(0, 1, driver.RunCompleted, rec(t, done)),
			RunOp{In: RunCall{Kind: RunUpdate, Patch: PatchSpec{Status: driver.RunRunning}}},
			RunOp{In: RunCall{Kind: RunGet}, Out: RunReturn{Rec: rec(t, done)}}), false},
		{"update of an unknown run creates nothing", seq(RunOp{In: RunCall{Kind: RunUpdate, Patch: PatchSpec{Status: driver.RunRunning}}},
			RunOp{In: RunCall{Kind: RunGet}, Out: RunReturn{}}), true},
		{"active is the newest running, ties by id", seq(create(0, 1, "", rec(t, running)), create(1, 2, "", rec(t, newer)), create(2, 2, "", rec(t, tie)),
			RunOp{In: RunCall{Kind: RunActive}, Out: RunReturn{Rec: rec(t, tie)}}), true},
		{"active is not the smaller id of a tie", seq(create(0, 1, "", rec(t, running)), create(1, 2, "", rec(t, newer)), create(2, 2, "", rec(t, tie)),
			RunOp{In: RunCall{Kind: RunActive}, Out: RunReturn{Rec: rec(t, newer)}}), false},
		{"a contract error is never right", seq(RunOp{In: RunCall{Kind: RunGet}, Out: RunReturn{Code: driver.CodeInvalidID}}), false},
		{"an unknown create may have happened", seq(RunOp{In: RunCall{Kind: RunCreate, Slot: 0, StartedAt: 1}, Out: RunReturn{Unknown: true}},
			RunOp{In: RunCall{Kind: RunGet}, Out: RunReturn{Rec: rec(t, running)}}), true},
		{"an unknown create may not have happened", seq(RunOp{In: RunCall{Kind: RunCreate, Slot: 0, StartedAt: 1}, Out: RunReturn{Unknown: true}},
			RunOp{In: RunCall{Kind: RunGet}, Out: RunReturn{}}), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			v, _ := c.h.Check(10 * time.Second)
			if want := map[bool]porcupine.CheckResult{true: porcupine.Ok, false: porcupine.Illegal}[c.ok]; v != want {
				t.Errorf("verdict %v, want %v", v, want)
			}
			// Explain speaks of an illegal history only, and then names
			// every call and what it could not place.
			ex := c.h.Explain(10 * time.Second)
			if c.ok != (ex == "") {
				t.Errorf("Explain of a history whose verdict is %v: %q", v, ex)
			}
			if !c.ok && (strings.Count(ex, "\n") < len(c.h.Ops)+2 || !strings.Contains(ex, "could not place")) {
				t.Errorf("Explain leaves out calls or the unplaced ones:\n%s", ex)
			}
		})
	}
}

// TestRunsHistoryJSON: a history survives the JSON a child process hands
// its parent.
func TestRunsHistoryJSON(t *testing.T) {
	h := RecordRuns(newStores(t, memstore.NewPersistence(memstore.PersistenceOptions{}), 1), RunsOptions{Clients: 2, OpsPerClient: 30})
	b, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	var back RunsHistory
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Ops) != len(h.Ops) {
		t.Fatalf("%d ops back, want %d", len(back.Ops), len(h.Ops))
	}
	for i := range h.Ops {
		if back.Ops[i] != h.Ops[i] {
			t.Fatalf("op %d: %+v, want %+v", i, back.Ops[i], h.Ops[i])
		}
	}
	if v, _ := back.Check(10 * time.Second); v != porcupine.Ok {
		t.Errorf("verdict %v", v)
	}
}
