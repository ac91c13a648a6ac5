package persisttest

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"github.com/ckptstore/ckptstore/persist"
	"github.com/stretchr/testify/require"
)

// The concurrency cases: calls that race on one record must each be one
// atomic step, as a driver's read-then-write in separate rounds is not.

var concurrencyTests = []test{
	{"CreateOrResumeRace", onEnv(testCreateRace)},
	{"UpdatesLoseNothing", onEnv(testUpdateRace)},
	{"InterruptCreateRace", onEnv(testInterruptCreateRace)},
	{"CommitBatchRace", onEnv(testCommitBatchRace)},
	{"BlobPutRace", onEnv(testBlobPutRace)},
}

const racers = 8

func race(f func(i int)) {
	var wg sync.WaitGroup
	for i := range racers {
		wg.Go(func() { f(i) })
	}
	wg.Wait()
}

func testCreateRace(t *testing.T, e *env) {
	got := make([]*persist.RunRecord, racers)
	race(func(i int) {
		r := must(e.s.Runs.CreateOrResume(e.ctx, persist.RunStart{RunID: "race", ThreadID: fmt.Sprint("t", i), StartedAt: int64(i)})).of(t)
		got[i] = r
	})
	stored := e.run("race")
	for _, r := range got {
		jsonEq(t, stored, r, "every racer gets the one stored run")
	}
	rs := must(e.s.Runs.ListByThread(e.ctx, stored.ThreadID)).of(t)
	require.Len(t, rs, 1)
}

func testUpdateRace(t *testing.T, e *env) {
	e.start("upd", "upd-t", 1)
	race(func(i int) {
		var p persist.RunPatch
		switch i % 4 {
		case 0:
			p.SandboxKey = persist.Set("sb")
		case 1:
			p.DetachedSince = persist.Set[int64](7)
		case 2:
			p.CancelRequested = persist.Set(true)
		case 3:
			p.DriverEpoch = persist.Set[int64](9)
		}
		require.NoError(t, e.s.Runs.Update(e.ctx, "upd", p))
	})
	jsonEq(t, map[string]any{"runId": "upd", "threadId": "upd-t", "status": "running", "startedAt": 1,
		"sandboxKey": "sb", "detachedSince": 7, "cancelRequested": true, "driverEpoch": 9}, e.run("upd"), "an update was lost")
}

func testInterruptCreateRace(t *testing.T, e *env) {
	race(func(i int) {
		require.NoError(t, e.s.Interrupts.Create(e.ctx, persist.NewInterrupt{InterruptID: "ic", RunID: "r", ThreadID: "t",
			RequestedAt: int64(i), Payload: raw(fmt.Sprintf(`{"i":%d}`, i))}))
	})
	r := e.getInterrupt("ic")
	require.JSONEq(t, fmt.Sprintf(`{"i":%d}`, r.RequestedAt), string(r.Payload), "the stored interrupt is one racer's, whole")
	require.Len(t, e.lists("t", "r")[0], 1)
}

func testCommitBatchRace(t *testing.T, e *env) {
	e.interrupt("cb-1", "r", "t", 1, `{}`)
	e.interrupt("cb-2", "r", "t", 2, `{}`)
	errs := make([]error, racers)
	race(func(i int) {
		errs[i] = e.s.Interrupts.CommitBatch(e.ctx, []persist.InterruptCommitEntry{
			{InterruptID: "cb-1", Status: persist.InterruptResolved, Response: raw(fmt.Sprint(i))},
			{InterruptID: "cb-2", Status: persist.InterruptResolved, Response: raw(fmt.Sprint(i))},
		})
	})
	winner := -1
	for i, err := range errs {
		if err == nil {
			require.Equal(t, -1, winner, "two batches committed over the same pending interrupts")
			winner = i
		} else {
			require.ErrorIs(t, err, persist.ErrNotPending)
		}
	}
	require.NotEqual(t, -1, winner)
	require.Equal(t, fmt.Sprint(winner), string(e.getInterrupt("cb-1").Response))
	require.Equal(t, fmt.Sprint(winner), string(e.getInterrupt("cb-2").Response), "the batch was applied whole")
}

func testBlobPutRace(t *testing.T, e *env) {
	race(func(i int) {
		require.NoError(t, errOf(e.s.Blobs.Put(e.ctx, "hot", bytes.NewReader(bytes.Repeat([]byte{byte('a' + i)}, 100+i)), persist.BlobPutOptions{})))
	})
	o, b := e.read("hot", nil)
	i := int(b[0] - 'a')
	require.Equal(t, bytes.Repeat([]byte{byte('a' + i)}, 100+i), b)
	require.Equal(t, sum(b), o.ETag)
	require.Equal(t, 1, e.objects(), "a racing put left its bytes behind")
}
