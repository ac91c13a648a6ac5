package persisttest

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/ckptstore/ckptstore/persist"
	"github.com/ckptstore/ckptstore/persist/driver"
	"github.com/stretchr/testify/require"
)

var runTests = []test{
	{"CreateResumeUpdateGet", onEnv(testRunLifecycle)},
	{"NeverResurrects", onEnv(testRunNeverResurrects)},
	{"ExplicitStatus", onEnv(testRunExplicitStatus)},
	{"UpdateUnknownIsNoOp", onEnv(testRunUpdateUnknown)},
	{"UpdateClearsOptionalFields", onEnv(testRunUpdateClears)},
	{"FindActiveRun", onEnv(testFindActiveRun)},
	{"ListByThread", onEnv(testListByThread)},
	{"ListReclaimable", onEnv(testListReclaimable)},
	{"DurableFields", onEnv(testDurableFields)},
	{"LongLists", onEnv(testRunLongLists)},
	{"Immutability", onEnv(testRunImmutability)},
}

func ids[T any](recs []*T, id func(*T) string) []string {
	out := []string{}
	for _, r := range recs {
		out = append(out, id(r))
	}
	return out
}

func runIDs(recs []*persist.RunRecord) []string {
	return ids(recs, func(r *persist.RunRecord) string { return r.RunID })
}

func (e *env) start(runID, threadID string, startedAt int64) *persist.RunRecord {
	e.t.Helper()
	r := must(e.s.Runs.CreateOrResume(e.ctx, persist.RunStart{RunID: runID, ThreadID: threadID, StartedAt: startedAt})).of(e.t)
	return r
}

func (e *env) update(runID string, p persist.RunPatch) {
	e.t.Helper()
	require.NoError(e.t, e.s.Runs.Update(e.ctx, runID, p))
}

func (e *env) run(runID string) *persist.RunRecord {
	e.t.Helper()
	r := must(e.s.Runs.Get(e.ctx, runID)).of(e.t)
	return r
}

func testRunLifecycle(t *testing.T, e *env) {
	require.Nil(t, e.run("run-missing"))

	created := e.start("run-1", "thread-1", 1000)
	jsonEq(t, map[string]any{"runId": "run-1", "threadId": "thread-1", "status": "running", "startedAt": 1000}, created)

	resumed := e.start("run-1", "thread-different", 9999)
	jsonEq(t, created, resumed, "a resume returns the stored run unchanged")

	e.update("run-1", persist.RunPatch{
		Status: persist.Set(persist.RunCompleted), FinishedAt: persist.Set[int64](2000),
		Usage: persist.Set(raw(`{"promptTokens":3,"completionTokens":4,"totalTokens":7}`)),
		Error: persist.Set(persist.RunError{Message: "boom", Code: str("provider_error")}),
	})
	jsonEq(t, map[string]any{
		"runId": "run-1", "threadId": "thread-1", "status": "completed", "startedAt": 1000, "finishedAt": 2000,
		"usage": map[string]any{"promptTokens": 3, "completionTokens": 4, "totalTokens": 7},
		"error": map[string]any{"message": "boom", "code": "provider_error"},
	}, e.run("run-1"))
}

func testRunNeverResurrects(t *testing.T, e *env) {
	e.start("nc-1", "nc-t", 10)
	e.update("nc-1", persist.RunPatch{Status: persist.Set(persist.RunCompleted), FinishedAt: persist.Set[int64](20)})
	for _, status := range []persist.RunStatus{"", persist.RunRunning, persist.RunInterrupted} {
		r := must(e.s.Runs.CreateOrResume(e.ctx, persist.RunStart{RunID: "nc-1", ThreadID: "nc-t", StartedAt: 999, Status: status})).of(t)
		require.Equal(t, persist.RunCompleted, r.Status)
		require.EqualValues(t, 10, r.StartedAt)
		require.Equal(t, int64(20), *r.FinishedAt)
	}
	r := e.run("nc-1")
	require.Equal(t, persist.RunCompleted, r.Status)
	require.Equal(t, int64(20), *r.FinishedAt)
	active := must(e.s.Runs.FindActiveRun(e.ctx, "nc-t")).of(t)
	require.Nil(t, active, "a resumed finished run must not look active")
}

func testRunExplicitStatus(t *testing.T, e *env) {
	r := must(e.s.Runs.CreateOrResume(e.ctx, persist.RunStart{RunID: "st-1", ThreadID: "st-t", StartedAt: 1, Status: persist.RunInterrupted})).of(t)
	require.Equal(t, persist.RunInterrupted, r.Status)
	require.Equal(t, persist.RunInterrupted, e.run("st-1").Status)
}

func testRunUpdateUnknown(t *testing.T, e *env) {
	e.update("run-absent", persist.RunPatch{Status: persist.Set(persist.RunCompleted), DetachedSince: persist.Set[int64](1)})
	require.Nil(t, e.run("run-absent"))
	list := must(e.s.Runs.ListReclaimable(e.ctx, persist.ReclaimQuery{Now: 10, TTLMs: 0})).of(t)
	require.Empty(t, list)
}

func testRunUpdateClears(t *testing.T, e *env) {
	e.start("cl-1", "cl-t", 1)
	e.update("cl-1", persist.RunPatch{
		Status: persist.Set(persist.RunFailed), FinishedAt: persist.Set[int64](5),
		Error: persist.Set(persist.RunError{Message: "x"}), Usage: persist.Set(raw(`{"totalTokens":1}`)),
	})
	e.update("cl-1", persist.RunPatch{FinishedAt: persist.Clear[int64](), Error: persist.Clear[persist.RunError]()})
	r := e.run("cl-1")
	require.Nil(t, r.FinishedAt)
	require.Nil(t, r.Error)
	require.JSONEq(t, `{"totalTokens":1}`, string(r.Usage), "a field the patch does not name keeps its value")
	require.Equal(t, persist.RunFailed, r.Status)
	e.update("cl-1", persist.RunPatch{Usage: persist.Clear[json.RawMessage]()})
	require.Nil(t, e.run("cl-1").Usage)
}

func testFindActiveRun(t *testing.T, e *env) {
	find := func(thread string) *persist.RunRecord {
		r := must(e.s.Runs.FindActiveRun(e.ctx, thread)).of(t)
		return r
	}
	const th = "thread-active"
	require.Nil(t, find(th))
	e.start("active-1", th, 1000)
	e.start("active-2", th, 2000)
	require.Equal(t, "active-2", find(th).RunID)
	e.start("other-1", "thread-other", 3000)
	require.Equal(t, "active-2", find(th).RunID, "another thread's run is not this thread's")
	e.start("active-3", th, 2500)
	e.update("active-3", persist.RunPatch{Status: persist.Set(persist.RunInterrupted)})
	require.Equal(t, "active-2", find(th).RunID, "an interrupted run is not running")
	e.update("active-2", persist.RunPatch{Status: persist.Set(persist.RunCompleted), FinishedAt: persist.Set[int64](2500)})
	require.Equal(t, "active-1", find(th).RunID)
	e.update("active-1", persist.RunPatch{Status: persist.Set(persist.RunCompleted)})
	require.Nil(t, find(th))

	// Equal startedAt: the greatest runId wins, whatever the insert order.
	e.start("tie-b", "thread-tie", 7)
	e.start("tie-c", "thread-tie", 7)
	e.start("tie-a", "thread-tie", 7)
	require.Equal(t, "tie-c", find("thread-tie").RunID)
}

func testListByThread(t *testing.T, e *env) {
	list := func(thread string) []string {
		rs := must(e.s.Runs.ListByThread(e.ctx, thread)).of(t)
		require.NotNil(t, rs, "an empty list is [], not null")
		return runIDs(rs)
	}
	require.Equal(t, []string{}, list("lt"))
	e.start("lt-b", "lt", 2)
	e.start("lt-a", "lt", 1)
	e.start("lt-d", "lt", 3)
	e.start("lt-c", "lt", 3)
	e.start("lt-x", "lt-other", 0)
	e.update("lt-a", persist.RunPatch{Status: persist.Set(persist.RunCompleted)})
	require.Equal(t, []string{"lt-a", "lt-b", "lt-c", "lt-d"}, list("lt"))
}

func testListReclaimable(t *testing.T, e *env) {
	const now, ttl = 10_000, 5_000
	const cutoff = now - ttl
	reclaim := func(now, ttl int64) []string {
		rs := must(e.s.Runs.ListReclaimable(e.ctx, persist.ReclaimQuery{Now: now, TTLMs: ttl})).of(t)
		for _, r := range rs {
			require.Equal(t, persist.RunRunning, r.Status)
		}
		return runIDs(rs)
	}
	seed := func(id string, p persist.RunPatch) {
		e.start(id, "rc-t", 1)
		e.update(id, p)
	}
	seed("rc-included", persist.RunPatch{DetachedSince: persist.Set[int64](1_000)})
	seed("rc-boundary", persist.RunPatch{DetachedSince: persist.Set[int64](cutoff)})
	seed("rc-too-recent", persist.RunPatch{DetachedSince: persist.Set[int64](cutoff + 1)})
	seed("rc-completed", persist.RunPatch{DetachedSince: persist.Set[int64](1_000), Status: persist.Set(persist.RunCompleted)})
	seed("rc-failed", persist.RunPatch{DetachedSince: persist.Set[int64](1_000), Status: persist.Set(persist.RunFailed)})
	seed("rc-aborted", persist.RunPatch{DetachedSince: persist.Set[int64](1_000), Status: persist.Set(persist.RunAborted)})
	seed("rc-interrupted", persist.RunPatch{DetachedSince: persist.Set[int64](1_000), Status: persist.Set(persist.RunInterrupted)})
	seed("rc-never-detached", persist.RunPatch{})
	seed("rc-negative", persist.RunPatch{DetachedSince: persist.Set[int64](-5)})
	require.Equal(t, []string{"rc-negative", "rc-included", "rc-boundary"}, reclaim(now, ttl), "by detachedSince, inclusive cutoff")

	// ttlMs 0: a run detached at exactly now is reclaimable.
	seed("rc-zero", persist.RunPatch{DetachedSince: persist.Set[int64](now)})
	require.Contains(t, reclaim(now, 0), "rc-zero")
	require.NotContains(t, reclaim(now-1, 0), "rc-zero")

	// Re-attaching clears detachedSince and drops the run from the list.
	e.update("rc-included", persist.RunPatch{DetachedSince: persist.Clear[int64]()})
	require.Equal(t, []string{"rc-negative", "rc-boundary"}, reclaim(now, ttl))
}

func testDurableFields(t *testing.T, e *env) {
	e.start("fc-1", "fc-t", 1)
	fresh := e.run("fc-1")
	require.Nil(t, fresh.SandboxKey)
	require.Nil(t, fresh.DetachedSince)
	require.Nil(t, fresh.CancelRequested)
	require.Nil(t, fresh.DriverEpoch)

	e.update("fc-1", persist.RunPatch{
		SandboxKey: persist.Set("sandbox-abc"), DetachedSince: persist.Set[int64](500),
		CancelRequested: persist.Set(true), DriverEpoch: persist.Set[int64](1),
	})
	jsonEq(t, map[string]any{"runId": "fc-1", "threadId": "fc-t", "status": "running", "startedAt": 1,
		"sandboxKey": "sandbox-abc", "detachedSince": 500, "cancelRequested": true, "driverEpoch": 1}, e.run("fc-1"))

	e.update("fc-1", persist.RunPatch{DriverEpoch: persist.Set[int64](2)})
	r := e.run("fc-1")
	require.Equal(t, int64(2), *r.DriverEpoch, "an epoch bump overwrites")
	require.Equal(t, "sandbox-abc", *r.SandboxKey)
	require.True(t, *r.CancelRequested)

	e.update("fc-1", persist.RunPatch{DetachedSince: persist.Clear[int64]()})
	r = e.run("fc-1")
	require.Nil(t, r.DetachedSince)
	require.Equal(t, "sandbox-abc", *r.SandboxKey)
	require.Equal(t, int64(2), *r.DriverEpoch)

	e.update("fc-1", persist.RunPatch{CancelRequested: persist.Set(false)})
	r = e.run("fc-1")
	require.NotNil(t, r.CancelRequested, "an explicit false is not absent")
	require.False(t, *r.CancelRequested)

	// Each field clears on its own, and the others stay.
	clears := []persist.RunPatch{
		{SandboxKey: persist.Clear[string]()}, {DetachedSince: persist.Clear[int64]()},
		{CancelRequested: persist.Clear[bool]()}, {DriverEpoch: persist.Clear[int64]()},
	}
	for i, c := range clears {
		e.update("fc-1", persist.RunPatch{SandboxKey: persist.Set("sandbox-xyz"), DetachedSince: persist.Set[int64](900),
			CancelRequested: persist.Set(true), DriverEpoch: persist.Set[int64](3)})
		e.update("fc-1", c)
		r = e.run("fc-1")
		got := []bool{r.SandboxKey == nil, r.DetachedSince == nil, r.CancelRequested == nil, r.DriverEpoch == nil}
		want := []bool{false, false, false, false}
		want[i] = true
		require.Equal(t, want, got, "clear %d", i)
	}
	e.update("fc-1", persist.RunPatch{SandboxKey: persist.Clear[string](), DetachedSince: persist.Clear[int64](),
		CancelRequested: persist.Clear[bool](), DriverEpoch: persist.Clear[int64]()})
	jsonEq(t, map[string]any{"runId": "fc-1", "threadId": "fc-t", "status": "running", "startedAt": 1}, e.run("fc-1"))
}

// testRunLongLists makes lists longer than one driver page: the portable
// layer must page through them whole and in order.
func testRunLongLists(t *testing.T, e *env) {
	n := driver.MaxListLimit + 7
	var want []string
	for i := range n {
		id := fmt.Sprintf("long-%05d", i)
		e.start(id, "long-t", int64(i/3)) // ties every three, broken by id
		e.update(id, persist.RunPatch{DetachedSince: persist.Set(int64(i % 2))})
		want = append(want, id)
	}
	rs, err := e.s.Runs.ListByThread(e.ctx, "long-t")
	require.NoError(t, err)
	require.Equal(t, want, runIDs(rs))
	rs, err = e.s.Runs.ListReclaimable(e.ctx, persist.ReclaimQuery{Now: 1, TTLMs: 0})
	require.NoError(t, err)
	slices.SortStableFunc(want, func(a, b string) int {
		var x, y int
		fmt.Sscanf(a, "long-%d", &x)
		fmt.Sscanf(b, "long-%d", &y)
		return x%2 - y%2
	})
	require.Equal(t, want, runIDs(rs))
}

func testRunImmutability(t *testing.T, e *env) {
	r := e.start("im-1", "im-t", 1)
	r.Status, r.ThreadID = persist.RunFailed, "other"
	patch := persist.RunPatch{Usage: persist.Set(raw(`{"totalTokens":1}`)), Error: persist.Set(persist.RunError{Message: "m", Code: str("c")})}
	e.update("im-1", patch)
	u := patch.Usage.Value()
	u[2] = 'X'
	*patch.Error.Value().Code = "changed"
	got := e.run("im-1")
	require.Equal(t, persist.RunRunning, got.Status)
	require.JSONEq(t, `{"totalTokens":1}`, string(got.Usage))
	require.Equal(t, "c", *got.Error.Code)
	got.Usage[2] = 'Y'
	*got.Error.Code = "mutated"
	again := e.run("im-1")
	require.JSONEq(t, `{"totalTokens":1}`, string(again.Usage))
	require.Equal(t, "c", *again.Error.Code)
}
