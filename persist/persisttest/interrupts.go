package persisttest

import (
	"testing"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/persist"
	"github.com/stretchr/testify/require"
)

var interruptTests = []test{
	{"CreateResolveCancelList", onEnv(testInterruptLifecycle)},
	{"CreateIsInsertIfAbsent", onEnv(testInterruptInsertIfAbsent)},
	{"ListsByRequestedAt", onEnv(testInterruptOrder)},
	{"ResolveAndCancelUnknownAreNoOps", onEnv(testInterruptUnknown)},
	{"ResolveWithoutResponse", onEnv(testInterruptResolveNoResponse)},
	{"CommitBatch", onEnv(testCommitBatch)},
	{"CommitBatchAllOrNothing", onEnv(testCommitBatchRejects)},
	{"CommitBatchOpTokenRetry", onEnv(testCommitBatchRetry)},
}

func (e *env) interrupt(id, runID, threadID string, at int64, payload string) {
	e.t.Helper()
	require.NoError(e.t, e.s.Interrupts.Create(e.ctx, persist.NewInterrupt{
		InterruptID: id, RunID: runID, ThreadID: threadID, RequestedAt: at, Payload: raw(payload),
	}))
}

func (e *env) getInterrupt(id string) *persist.InterruptRecord {
	e.t.Helper()
	r := must(e.s.Interrupts.Get(e.ctx, id)).of(e.t)
	return r
}

func interruptIDs(rs []*persist.InterruptRecord) []string {
	return ids(rs, func(r *persist.InterruptRecord) string { return r.InterruptID })
}

// lists returns the four lists of a thread and a run.
func (e *env) lists(thread, run string) [4][]string {
	e.t.Helper()
	var out [4][]string
	for i, f := range []func() ([]*persist.InterruptRecord, error){
		func() ([]*persist.InterruptRecord, error) { return e.s.Interrupts.List(e.ctx, thread) },
		func() ([]*persist.InterruptRecord, error) { return e.s.Interrupts.ListPending(e.ctx, thread) },
		func() ([]*persist.InterruptRecord, error) { return e.s.Interrupts.ListByRun(e.ctx, run) },
		func() ([]*persist.InterruptRecord, error) { return e.s.Interrupts.ListPendingByRun(e.ctx, run) },
	} {
		rs := must(f()).of(e.t)
		require.NotNil(e.t, rs)
		out[i] = interruptIDs(rs)
	}
	return out
}

func testInterruptLifecycle(t *testing.T, e *env) {
	require.Nil(t, e.getInterrupt("int-missing"))
	e.interrupt("int-1", "run-i", "thread-i", 10, `{"tool":"search","args":{"q":"x"}}`)
	e.interrupt("int-2", "run-i", "thread-i", 20, `{"tool":"write"}`)
	e.interrupt("int-3", "run-other", "thread-i", 30, `{}`)
	jsonEq(t, map[string]any{"interruptId": "int-1", "runId": "run-i", "threadId": "thread-i", "status": "pending",
		"requestedAt": 10, "payload": map[string]any{"tool": "search", "args": map[string]any{"q": "x"}}}, e.getInterrupt("int-1"))
	all := []string{"int-1", "int-2", "int-3"}
	require.Equal(t, [4][]string{all, all, {"int-1", "int-2"}, {"int-1", "int-2"}}, e.lists("thread-i", "run-i"))

	require.NoError(t, e.s.Interrupts.Resolve(e.ctx, "int-1", raw(`{"ok":true}`)))
	e.clock.Add(time.Second)
	require.NoError(t, e.s.Interrupts.Cancel(e.ctx, "int-2"))
	jsonEq(t, map[string]any{"interruptId": "int-1", "runId": "run-i", "threadId": "thread-i", "status": "resolved",
		"requestedAt": 10, "resolvedAt": epoch.UnixMilli(), "response": map[string]any{"ok": true},
		"payload": map[string]any{"tool": "search", "args": map[string]any{"q": "x"}}}, e.getInterrupt("int-1"))
	c := e.getInterrupt("int-2")
	require.Equal(t, persist.InterruptCancelled, c.Status)
	require.Equal(t, epoch.UnixMilli()+1000, *c.ResolvedAt, "resolvedAt is the process clock's")
	require.Equal(t, [4][]string{all, {"int-3"}, {"int-1", "int-2"}, {}}, e.lists("thread-i", "run-i"))
}

func testInterruptInsertIfAbsent(t *testing.T, e *env) {
	e.interrupt("int-dup", "run-dup", "thread-dup", 100, `{"attempt":1}`)
	require.NoError(t, e.s.Interrupts.Resolve(e.ctx, "int-dup", raw(`{"answer":42}`)))
	before := e.getInterrupt("int-dup")
	e.interrupt("int-dup", "run-other", "thread-other", 200, `{"attempt":2}`)
	jsonEq(t, before, e.getInterrupt("int-dup"), "a repeated create changes nothing")
	require.Equal(t, [4][]string{{}, {}, {}, {}}, e.lists("thread-other", "run-other"))
}

func testInterruptOrder(t *testing.T, e *env) {
	e.interrupt("int-late", "run-order", "thread-order", 300, `{}`)
	e.interrupt("int-early", "run-order", "thread-order", 100, `{}`)
	e.interrupt("int-mid-b", "run-order", "thread-order", 200, `{}`)
	e.interrupt("int-mid-a", "run-order", "thread-order", 200, `{}`)
	want := []string{"int-early", "int-mid-a", "int-mid-b", "int-late"}
	require.Equal(t, [4][]string{want, want, want, want}, e.lists("thread-order", "run-order"))
}

func testInterruptUnknown(t *testing.T, e *env) {
	require.NoError(t, e.s.Interrupts.Resolve(e.ctx, "nobody", raw(`1`)))
	require.NoError(t, e.s.Interrupts.Cancel(e.ctx, "nobody"))
	require.Nil(t, e.getInterrupt("nobody"))
}

func testInterruptResolveNoResponse(t *testing.T, e *env) {
	e.interrupt("int-n", "r", "t", 1, `{}`)
	require.NoError(t, e.s.Interrupts.Resolve(e.ctx, "int-n", raw(`null`)))
	require.Equal(t, "null", string(e.getInterrupt("int-n").Response), "a JSON null response is kept as null")
	require.NoError(t, e.s.Interrupts.Resolve(e.ctx, "int-n", nil))
	r := e.getInterrupt("int-n")
	require.Nil(t, r.Response, "resolve without a response leaves none")
	require.Equal(t, persist.InterruptResolved, r.Status)
	// Cancel keeps the response a resolve stored.
	require.NoError(t, e.s.Interrupts.Resolve(e.ctx, "int-n", raw(`"yes"`)))
	require.NoError(t, e.s.Interrupts.Cancel(e.ctx, "int-n"))
	r = e.getInterrupt("int-n")
	require.Equal(t, persist.InterruptCancelled, r.Status)
	require.Equal(t, `"yes"`, string(r.Response))
}

func testCommitBatch(t *testing.T, e *env) {
	e.interrupt("b-1", "run-b", "thread-b", 1, `{}`)
	e.interrupt("b-2", "run-b", "thread-b", 2, `{}`)
	e.interrupt("b-3", "run-b", "thread-b", 3, `{}`)
	e.clock.Add(5 * time.Millisecond)
	require.NoError(t, e.s.Interrupts.CommitBatch(e.ctx, []persist.InterruptCommitEntry{
		{InterruptID: "b-2", Status: persist.InterruptResolved, Response: raw(`{"approved":true}`)},
		{InterruptID: "b-1", Status: persist.InterruptCancelled},
	}))
	at := epoch.UnixMilli() + 5
	jsonEq(t, map[string]any{"interruptId": "b-2", "runId": "run-b", "threadId": "thread-b", "status": "resolved",
		"requestedAt": 2, "resolvedAt": at, "payload": map[string]any{}, "response": map[string]any{"approved": true}}, e.getInterrupt("b-2"))
	jsonEq(t, map[string]any{"interruptId": "b-1", "runId": "run-b", "threadId": "thread-b", "status": "cancelled",
		"requestedAt": 1, "resolvedAt": at, "payload": map[string]any{}}, e.getInterrupt("b-1"))
	require.Equal(t, []string{"b-3"}, e.lists("thread-b", "run-b")[1])
	require.NoError(t, e.s.Interrupts.CommitBatch(e.ctx, nil), "an empty batch does nothing")
}

func testCommitBatchRejects(t *testing.T, e *env) {
	e.interrupt("p-1", "run-p", "thread-p", 1, `{}`)
	e.interrupt("p-2", "run-p", "thread-p", 2, `{}`)
	e.interrupt("done", "run-p", "thread-p", 3, `{}`)
	require.NoError(t, e.s.Interrupts.Cancel(e.ctx, "done"))
	res := func(id string) persist.InterruptCommitEntry {
		return persist.InterruptCommitEntry{InterruptID: id, Status: persist.InterruptResolved, Response: raw(`1`)}
	}
	cases := []struct {
		name  string
		batch []persist.InterruptCommitEntry
		want  error
		// words: what the message must contain, TanStack's wording of the
		// same rejection (its harness tests match on it).
		words string
	}{
		{"Duplicate", []persist.InterruptCommitEntry{res("p-1"), res("p-2"), {InterruptID: "p-1", Status: persist.InterruptCancelled}}, persist.ErrDuplicateEntry, "duplicate id: p-1"},
		{"Missing", []persist.InterruptCommitEntry{res("p-1"), res("p-2"), res("absent")}, persist.ErrNotFound, "missing id: absent"},
		{"NotPending", []persist.InterruptCommitEntry{res("p-1"), res("done"), res("p-2")}, persist.ErrNotPending, "non-pending id: done is cancelled"},
		{"MissingBeforeNotPending", []persist.InterruptCommitEntry{res("absent"), res("done")}, persist.ErrNotFound, "missing id: absent"},
		{"NotPendingBeforeMissing", []persist.InterruptCommitEntry{res("done"), res("absent")}, persist.ErrNotPending, "non-pending id: done is cancelled"},
		{"DuplicateBeforeMissing", []persist.InterruptCommitEntry{res("absent"), res("absent")}, persist.ErrDuplicateEntry, "duplicate id: absent"},
		{"MissingQuoted", []persist.InterruptCommitEntry{res("new\nline")}, persist.ErrNotFound, `missing id: "new\nline"`},
		{"CancelledWithResponse", []persist.InterruptCommitEntry{res("p-1"), {InterruptID: "p-2", Status: persist.InterruptCancelled, Response: raw(`1`)}}, persist.ErrInvalidEntry, ""},
		{"PendingStatus", []persist.InterruptCommitEntry{{InterruptID: "p-1", Status: persist.InterruptPending}}, persist.ErrInvalidEntry, ""},
		{"EmptyID", []persist.InterruptCommitEntry{res("p-1"), res("")}, persist.ErrInvalidID, ""},
		{"BadResponse", []persist.InterruptCommitEntry{{InterruptID: "p-1", Status: persist.InterruptResolved, Response: raw(`{`)}}, persist.ErrInvalidEntry, ""},
	}
	before := []*persist.InterruptRecord{e.getInterrupt("p-1"), e.getInterrupt("p-2"), e.getInterrupt("done")}
	e.clock.Add(time.Second) // a partial write would stamp a new resolvedAt
	for _, c := range cases {
		err := e.s.Interrupts.CommitBatch(e.ctx, c.batch)
		require.ErrorIs(t, err, c.want, c.name)
		if c.words != "" {
			require.ErrorContains(t, err, c.words, c.name)
		}
		jsonEq(t, before, []*persist.InterruptRecord{e.getInterrupt("p-1"), e.getInterrupt("p-2"), e.getInterrupt("done")}, "%s changed something", c.name)
	}
}

func testCommitBatchRetry(t *testing.T, e *env) {
	e.interrupt("r-1", "run-r", "thread-r", 1, `{}`)
	e.interrupt("r-2", "run-r", "thread-r", 2, `{}`)
	batch := []persist.InterruptCommitEntry{{InterruptID: "r-1", Status: persist.InterruptResolved, Response: raw(`"a"`)}}
	tctx := ckptstore.WithOpToken(e.ctx, "batch-token-1")
	require.NoError(t, e.s.Interrupts.CommitBatch(tctx, batch))
	after := e.getInterrupt("r-1")
	e.clock.Add(time.Second)
	require.NoError(t, e.s.Interrupts.CommitBatch(tctx, batch), "a retry with the same op token reports the first call's success")
	jsonEq(t, after, e.getInterrupt("r-1"), "and writes nothing")
	require.ErrorIs(t, e.s.Interrupts.CommitBatch(e.ctx, batch), persist.ErrNotPending, "without the token the repeat is a new batch")
	require.ErrorIs(t, e.s.Interrupts.CommitBatch(ckptstore.WithOpToken(e.ctx, "bad token!"), batch), persist.ErrInvalidEntry)
	require.NoError(t, e.s.Interrupts.CommitBatch(ckptstore.WithOpToken(e.ctx, "batch-token-2"),
		[]persist.InterruptCommitEntry{{InterruptID: "r-2", Status: persist.InterruptCancelled}}))
	require.Equal(t, persist.InterruptCancelled, e.getInterrupt("r-2").Status)
}
