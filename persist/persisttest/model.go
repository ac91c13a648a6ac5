package persisttest

// The model-based case. A plain model of docs/persistence.md — maps, sorted
// when listed, sharing no code with any driver — runs beside the store under
// random sequences of the state stores' operations (runs, interrupts with
// commit batches, artifacts, metadata, clock moves) drawn by
// pgregory.net/rapid from small pools of ids, so that collisions, ties and
// repeats are common. Every result and every error must match the model's,
// and after each sequence every list must equal the model's.

import (
	"cmp"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore/persist"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

var modelTests = []test{{"Model", testModel}, {"ModelLocks", testModelLocks}} // ModelLocks: modellocks.go

type model struct {
	runs       map[string]persist.RunRecord
	interrupts map[string]persist.InterruptRecord
	artifacts  map[string]persist.ArtifactRecord
	metadata   map[[2]string]string
}

var (
	poolRuns    = []string{"r0", "r1", "r2", "r3", "r4"}
	poolThreads = []string{"t0", "t1", "t2"}
	poolInts    = []string{"i0", "i1", "i2", "i3", "i4"}
	poolArts    = []string{"a0", "a1", "a2", "\ue000", "\U00010000"}
	poolNS      = []string{"n:0", "n", "0"}
	statuses    = []persist.RunStatus{persist.RunRunning, persist.RunInterrupted, persist.RunCompleted, persist.RunFailed, persist.RunAborted}
)

func byKey[T any](m map[string]T, keep func(T) bool, key func(T) (int64, string)) []T {
	out := []T{}
	for _, v := range m {
		if keep(v) {
			out = append(out, v)
		}
	}
	slices.SortFunc(out, func(a, b T) int {
		ta, ia := key(a)
		tb, ib := key(b)
		return cmp.Or(cmp.Compare(ta, tb), cmp.Compare(ia, ib))
	})
	return out
}

func testModel(t *testing.T, nd NewDriver) {
	rapid.Check(t, func(rt *rapid.T) {
		e := newEnv(t, nd)
		m := &model{runs: map[string]persist.RunRecord{}, interrupts: map[string]persist.InterruptRecord{},
			artifacts: map[string]persist.ArtifactRecord{}, metadata: map[[2]string]string{}}
		small := rapid.Int64Range(0, 5)
		optInt := func(name string) persist.Field[int64] {
			switch rapid.IntRange(0, 2).Draw(rt, name) {
			case 1:
				return persist.Set(small.Draw(rt, name+"v"))
			case 2:
				return persist.Clear[int64]()
			}
			return persist.Field[int64]{}
		}
		rt.Repeat(map[string]func(*rapid.T){
			"CreateRun": func(rt *rapid.T) {
				in := persist.RunStart{RunID: rapid.SampledFrom(poolRuns).Draw(rt, "run"), ThreadID: rapid.SampledFrom(poolThreads).Draw(rt, "thread"),
					StartedAt: small.Draw(rt, "at"), Status: rapid.SampledFrom(append([]persist.RunStatus{""}, statuses...)).Draw(rt, "status")}
				got := must(e.s.Runs.CreateOrResume(e.ctx, in)).of(rt)
				want, ok := m.runs[in.RunID]
				if !ok {
					want = persist.RunRecord{RunID: in.RunID, ThreadID: in.ThreadID, StartedAt: in.StartedAt, Status: cmp.Or(in.Status, persist.RunRunning)}
					m.runs[in.RunID] = want
				}
				jsonEq(rt, want, got)
			},
			"UpdateRun": func(rt *rapid.T) {
				id := rapid.SampledFrom(poolRuns).Draw(rt, "run")
				var p persist.RunPatch
				if rapid.Bool().Draw(rt, "setStatus") {
					p.Status = persist.Set(rapid.SampledFrom(statuses).Draw(rt, "status"))
				}
				p.FinishedAt, p.DetachedSince, p.DriverEpoch = optInt("finishedAt"), optInt("detachedSince"), optInt("driverEpoch")
				switch rapid.IntRange(0, 3).Draw(rt, "cancel") {
				case 1:
					p.CancelRequested = persist.Set(false)
				case 2:
					p.CancelRequested = persist.Set(true)
				case 3:
					p.CancelRequested = persist.Clear[bool]()
				}
				require.NoError(rt, e.s.Runs.Update(e.ctx, id, p))
				r, ok := m.runs[id]
				if !ok {
					return
				}
				if p.Status.IsSet() {
					r.Status = p.Status.Value()
				}
				set := func(f persist.Field[int64], cur *int64) *int64 {
					if f.IsSet() {
						v := f.Value()
						return &v
					}
					if f.IsClear() {
						return nil
					}
					return cur
				}
				r.FinishedAt, r.DetachedSince, r.DriverEpoch = set(p.FinishedAt, r.FinishedAt), set(p.DetachedSince, r.DetachedSince), set(p.DriverEpoch, r.DriverEpoch)
				if p.CancelRequested.IsSet() {
					v := p.CancelRequested.Value()
					r.CancelRequested = &v
				} else if p.CancelRequested.IsClear() {
					r.CancelRequested = nil
				}
				m.runs[id] = r
			},
			"FindActiveRun": func(rt *rapid.T) {
				th := rapid.SampledFrom(poolThreads).Draw(rt, "thread")
				got := must(e.s.Runs.FindActiveRun(e.ctx, th)).of(rt)
				running := byKey(m.runs, func(r persist.RunRecord) bool { return r.ThreadID == th && r.Status == persist.RunRunning },
					func(r persist.RunRecord) (int64, string) { return r.StartedAt, r.RunID })
				if len(running) == 0 {
					require.Nil(rt, got)
					return
				}
				jsonEq(rt, running[len(running)-1], got)
			},
			"ListReclaimable": func(rt *rapid.T) {
				now, ttl := rapid.Int64Range(0, 8).Draw(rt, "now"), small.Draw(rt, "ttl")
				got := must(e.s.Runs.ListReclaimable(e.ctx, persist.ReclaimQuery{Now: now, TTLMs: ttl})).of(rt)
				jsonEq(rt, byKey(m.runs, func(r persist.RunRecord) bool {
					return r.Status == persist.RunRunning && r.DetachedSince != nil && *r.DetachedSince <= now-ttl
				}, func(r persist.RunRecord) (int64, string) { return *r.DetachedSince, r.RunID }), got)
			},
			"CreateInterrupt": func(rt *rapid.T) {
				in := persist.NewInterrupt{InterruptID: rapid.SampledFrom(poolInts).Draw(rt, "int"), RunID: rapid.SampledFrom(poolRuns).Draw(rt, "run"),
					ThreadID: rapid.SampledFrom(poolThreads).Draw(rt, "thread"), RequestedAt: small.Draw(rt, "at"), Payload: raw(`{"p":1}`)}
				require.NoError(rt, e.s.Interrupts.Create(e.ctx, in))
				if _, ok := m.interrupts[in.InterruptID]; !ok {
					m.interrupts[in.InterruptID] = persist.InterruptRecord{InterruptID: in.InterruptID, RunID: in.RunID, ThreadID: in.ThreadID,
						Status: persist.InterruptPending, RequestedAt: in.RequestedAt, Payload: in.Payload}
				}
			},
			"ResolveOrCancel": func(rt *rapid.T) {
				id := rapid.SampledFrom(poolInts).Draw(rt, "int")
				at := e.clock.Now().UnixMilli()
				r, ok := m.interrupts[id]
				if rapid.Bool().Draw(rt, "resolve") {
					require.NoError(rt, e.s.Interrupts.Resolve(e.ctx, id, raw(`"ok"`)))
					r.Status, r.Response = persist.InterruptResolved, raw(`"ok"`)
				} else {
					require.NoError(rt, e.s.Interrupts.Cancel(e.ctx, id))
					r.Status = persist.InterruptCancelled
				}
				if ok {
					r.ResolvedAt = &at
					m.interrupts[id] = r
				}
			},
			"CommitBatch": func(rt *rapid.T) {
				n := rapid.IntRange(1, 3).Draw(rt, "n")
				var batch []persist.InterruptCommitEntry
				for i := range n {
					en := persist.InterruptCommitEntry{InterruptID: rapid.SampledFrom(poolInts).Draw(rt, fmt.Sprint("id", i)), Status: persist.InterruptCancelled}
					if rapid.Bool().Draw(rt, fmt.Sprint("resolve", i)) {
						en.Status, en.Response = persist.InterruptResolved, raw(`1`)
					}
					batch = append(batch, en)
				}
				var want error
				seen := map[string]bool{}
				for _, en := range batch {
					if seen[en.InterruptID] {
						want = persist.ErrDuplicateEntry
						break
					}
					seen[en.InterruptID] = true
				}
				if want == nil {
					for _, en := range batch {
						r, ok := m.interrupts[en.InterruptID]
						if !ok {
							want = persist.ErrNotFound
							break
						}
						if r.Status != persist.InterruptPending {
							want = persist.ErrNotPending
							break
						}
					}
				}
				err := e.s.Interrupts.CommitBatch(e.ctx, batch)
				if want != nil {
					require.ErrorIs(rt, err, want)
					return
				}
				require.NoError(rt, err)
				at := e.clock.Now().UnixMilli()
				for _, en := range batch {
					r := m.interrupts[en.InterruptID]
					r.Status, r.ResolvedAt = en.Status, &at
					if en.Status == persist.InterruptResolved {
						r.Response = en.Response
					}
					m.interrupts[en.InterruptID] = r
				}
			},
			"SaveArtifact": func(rt *rapid.T) {
				a := persist.ArtifactRecord{ArtifactID: rapid.SampledFrom(poolArts).Draw(rt, "art"), RunID: rapid.SampledFrom(poolRuns).Draw(rt, "run"),
					ThreadID: rapid.SampledFrom(poolThreads).Draw(rt, "thread"), Name: "n", MimeType: "m", Size: small.Draw(rt, "size"), CreatedAt: small.Draw(rt, "at")}
				require.NoError(rt, e.s.Artifacts.Save(e.ctx, &a))
				m.artifacts[a.ArtifactID] = a
			},
			"DeleteArtifacts": func(rt *rapid.T) {
				if rapid.Bool().Draw(rt, "forRun") {
					run := rapid.SampledFrom(poolRuns).Draw(rt, "run")
					require.NoError(rt, e.s.Artifacts.DeleteForRun(e.ctx, run))
					for id, a := range m.artifacts {
						if a.RunID == run {
							delete(m.artifacts, id)
						}
					}
					return
				}
				id := rapid.SampledFrom(poolArts).Draw(rt, "art")
				require.NoError(rt, e.s.Artifacts.Delete(e.ctx, id))
				delete(m.artifacts, id)
			},
			"Metadata": func(rt *rapid.T) {
				k := [2]string{rapid.SampledFrom(poolNS).Draw(rt, "ns"), rapid.SampledFrom(poolNS).Draw(rt, "key")}
				switch rapid.IntRange(0, 2).Draw(rt, "op") {
				case 0:
					v := fmt.Sprint(small.Draw(rt, "v"))
					require.NoError(rt, e.s.Metadata.Set(e.ctx, k[0], k[1], raw(v)))
					m.metadata[k] = v
				case 1:
					require.NoError(rt, e.s.Metadata.Delete(e.ctx, k[0], k[1]))
					delete(m.metadata, k)
				default:
					got := must(e.s.Metadata.Get(e.ctx, k[0], k[1])).of(rt)
					if v, ok := m.metadata[k]; ok {
						require.Equal(rt, v, string(got))
					} else {
						require.Nil(rt, got)
					}
				}
			},
			"Tick": func(rt *rapid.T) { e.clock.Add(time.Duration(small.Draw(rt, "ms")) * time.Millisecond) },
			"":     func(rt *rapid.T) { m.check(rt, e) },
		})
	})
}

// check compares every list and get of the store with the model.
func (m *model) check(rt *rapid.T, e *env) {
	for _, id := range poolRuns {
		got := must(e.s.Runs.Get(e.ctx, id)).of(rt)
		if want, ok := m.runs[id]; ok {
			jsonEq(rt, want, got)
		} else {
			require.Nil(rt, got)
		}
	}
	for _, th := range poolThreads {
		got := must(e.s.Runs.ListByThread(e.ctx, th)).of(rt)
		jsonEq(rt, byKey(m.runs, func(r persist.RunRecord) bool { return r.ThreadID == th },
			func(r persist.RunRecord) (int64, string) { return r.StartedAt, r.RunID }), got)
		for _, pending := range []bool{false, true} {
			keep := func(r persist.InterruptRecord) bool {
				return r.ThreadID == th && (!pending || r.Status == persist.InterruptPending)
			}
			list := e.s.Interrupts.List
			if pending {
				list = e.s.Interrupts.ListPending
			}
			got := must(list(e.ctx, th)).of(rt)
			jsonEq(rt, byKey(m.interrupts, keep, func(r persist.InterruptRecord) (int64, string) { return r.RequestedAt, r.InterruptID }), got)
		}
		arts := must(e.s.Artifacts.ListForThread(e.ctx, th)).of(rt)
		jsonEq(rt, byKey(m.artifacts, func(a persist.ArtifactRecord) bool { return a.ThreadID == th },
			func(a persist.ArtifactRecord) (int64, string) { return a.CreatedAt, a.ArtifactID }), arts)
	}
	for _, run := range poolRuns {
		got := must(e.s.Interrupts.ListPendingByRun(e.ctx, run)).of(rt)
		jsonEq(rt, byKey(m.interrupts, func(r persist.InterruptRecord) bool { return r.RunID == run && r.Status == persist.InterruptPending },
			func(r persist.InterruptRecord) (int64, string) { return r.RequestedAt, r.InterruptID }), got)
		arts := must(e.s.Artifacts.List(e.ctx, run)).of(rt)
		jsonEq(rt, byKey(m.artifacts, func(a persist.ArtifactRecord) bool { return a.RunID == run },
			func(a persist.ArtifactRecord) (int64, string) { return a.CreatedAt, a.ArtifactID }), arts)
	}
}
