package persisttest

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore/contract"
	"github.com/ckptstore/ckptstore/persist"
	"github.com/ckptstore/ckptstore/persist/driver"
	"github.com/stretchr/testify/require"
)

var validationTests = []test{
	{"InvalidInputsChangeNothing", onEnv(testInvalidInputs)},
	{"DoneContextReachesNoDriver", onEnv(testDoneContext)},
	{"EdgeValuesAreAccepted", onEnv(testEdgeValues)},
	{"PatchJSON", onEnv(testPatchJSON)},
	{"ValuesAtTheBounds", onEnv(testValuesAtTheBounds)},
}

// seed writes one record of every kind, for the "changes nothing" checks.
func (e *env) seed() {
	e.t.Helper()
	e.start("v-run", "v-thread", 1)
	e.update("v-run", persist.RunPatch{DetachedSince: persist.Set[int64](1), SandboxKey: persist.Set("sb")})
	require.NoError(e.t, errOf(e.s.GenerationRuns.CreateOrResume(e.ctx, genStart("v-gen", "v-thread", 1))))
	e.interrupt("v-int", "v-run", "v-thread", 1, `{"a":1}`)
	require.NoError(e.t, e.s.Metadata.Set(e.ctx, "v-ns", "v-key", raw(`{"m":1}`)))
	e.save(artifact("v-art", func(a *persist.ArtifactRecord) { a.RunID, a.ThreadID = "v-run", "v-thread" }))
	e.put("v-blob", []byte("bytes"), persist.BlobPutOptions{})
}

// dump reads everything seed wrote, as JSON.
func (e *env) dump() string {
	e.t.Helper()
	var parts []any
	add := func(v any, err error) {
		require.NoError(e.t, err)
		parts = append(parts, v)
	}
	add(e.s.Runs.ListByThread(e.ctx, "v-thread"))
	add(e.s.Runs.ListReclaimable(e.ctx, persist.ReclaimQuery{Now: 100, TTLMs: 0}))
	add(e.s.GenerationRuns.FindLatestForThread(e.ctx, "v-thread"))
	add(e.s.Interrupts.List(e.ctx, "v-thread"))
	add(e.s.Metadata.Get(e.ctx, "v-ns", "v-key"))
	add(e.s.Artifacts.ListForThread(e.ctx, "v-thread"))
	add(e.s.Blobs.List(e.ctx, persist.BlobListOptions{}))
	_, b := e.read("v-blob", nil)
	parts = append(parts, string(b), e.objects())
	out := must(json.Marshal(parts)).of(e.t)
	return string(out)
}

// invalid is one call that must fail with want. A call of the lock steps
// (named Lock…/…) runs on the server's store, which is the env's own store
// but for a remote one.
type invalid struct {
	name string
	want error
	call func(ctx context.Context, s *persist.Store) error
}

// steps makes a call of the server's lock steps.
func steps(f func(ctx context.Context, l *persist.DriverLockSteps) error) func(ctx context.Context, s *persist.Store) error {
	return func(ctx context.Context, s *persist.Store) error {
		return f(ctx, s.Locks.(*persist.Locks).Steps().(*persist.DriverLockSteps))
	}
}

var (
	badUTF8 = "a\xffb"
	tooLong = strings.Repeat("x", driver.MaxIDBytes+1)
	unsafe  = int64(driver.MaxSafeInteger + 1)
)

func invalidCalls() []invalid {
	ok := persist.RunStart{RunID: "x-run", ThreadID: "x-thread", StartedAt: 1}
	start := func(mod func(*persist.RunStart)) func(context.Context, *persist.Store) error {
		in := ok
		mod(&in)
		return func(ctx context.Context, s *persist.Store) error { return errOf(s.Runs.CreateOrResume(ctx, in)) }
	}
	update := func(p persist.RunPatch) func(context.Context, *persist.Store) error {
		return func(ctx context.Context, s *persist.Store) error { return s.Runs.Update(ctx, "v-run", p) }
	}
	gen := func(mod func(*persist.GenerationRunStart)) func(context.Context, *persist.Store) error {
		in := genStart("x-gen", "x-thread", 1)
		mod(&in)
		return func(ctx context.Context, s *persist.Store) error {
			return errOf(s.GenerationRuns.CreateOrResume(ctx, in))
		}
	}
	genUpdate := func(p persist.GenerationRunPatch) func(context.Context, *persist.Store) error {
		return func(ctx context.Context, s *persist.Store) error { return s.GenerationRuns.Update(ctx, "v-gen", p) }
	}
	create := func(mod func(*persist.NewInterrupt)) func(context.Context, *persist.Store) error {
		in := persist.NewInterrupt{InterruptID: "x-int", RunID: "v-run", ThreadID: "v-thread", RequestedAt: 1, Payload: raw(`{}`)}
		mod(&in)
		return func(ctx context.Context, s *persist.Store) error { return s.Interrupts.Create(ctx, in) }
	}
	save := func(mod func(*persist.ArtifactRecord)) func(context.Context, *persist.Store) error {
		a := artifact("v-art", func(a *persist.ArtifactRecord) { a.RunID, a.ThreadID = "v-run", "v-thread" })
		mod(a)
		return func(ctx context.Context, s *persist.Store) error { return s.Artifacts.Save(ctx, a) }
	}
	put := func(key string, opts persist.BlobPutOptions) func(context.Context, *persist.Store) error {
		return func(ctx context.Context, s *persist.Store) error {
			return errOf(s.Blobs.Put(ctx, key, bytes.NewReader([]byte("new")), opts))
		}
	}
	get := func(rng persist.BlobRange) func(context.Context, *persist.Store) error {
		return func(ctx context.Context, s *persist.Store) error { return errOf(s.Blobs.Get(ctx, "v-blob", &rng)) }
	}
	neg := -1
	return []invalid{
		// Runs.
		{"CreateOrResume/EmptyRunID", persist.ErrInvalidID, start(func(in *persist.RunStart) { in.RunID = "" })},
		{"CreateOrResume/BadUTF8RunID", persist.ErrInvalidID, start(func(in *persist.RunStart) { in.RunID = badUTF8 })},
		{"CreateOrResume/LongRunID", persist.ErrInvalidID, start(func(in *persist.RunStart) { in.RunID = tooLong })},
		{"CreateOrResume/EmptyThreadID", persist.ErrInvalidID, start(func(in *persist.RunStart) { in.ThreadID = "" })},
		{"CreateOrResume/UnsafeStartedAt", persist.ErrInvalidEntry, start(func(in *persist.RunStart) { in.StartedAt = unsafe })},
		{"CreateOrResume/BadStatus", persist.ErrInvalidEntry, start(func(in *persist.RunStart) { in.Status = "toString" })},
		{"CreateOrResume/IDBeforeStatus", persist.ErrInvalidID, start(func(in *persist.RunStart) { in.RunID, in.Status = "", "bad" })},
		{"Update/EmptyRunID", persist.ErrInvalidID, func(ctx context.Context, s *persist.Store) error {
			return s.Runs.Update(ctx, "", persist.RunPatch{Status: persist.Set[persist.RunStatus]("bad")})
		}},
		{"Update/ClearStatus", persist.ErrInvalidEntry, update(persist.RunPatch{Status: persist.Clear[persist.RunStatus](), DetachedSince: persist.Clear[int64]()})},
		{"Update/BadStatus", persist.ErrInvalidEntry, update(persist.RunPatch{Status: persist.Set[persist.RunStatus]("done"), DetachedSince: persist.Clear[int64]()})},
		{"Update/UnsafeFinishedAt", persist.ErrInvalidEntry, update(persist.RunPatch{FinishedAt: persist.Set(unsafe), DetachedSince: persist.Clear[int64]()})},
		{"Update/BadErrorMessage", persist.ErrInvalidEntry, update(persist.RunPatch{Error: persist.Set(persist.RunError{Message: badUTF8}), DetachedSince: persist.Clear[int64]()})},
		{"Update/UsageNotObject", persist.ErrInvalidEntry, update(persist.RunPatch{Usage: persist.Set(raw(`[1]`)), DetachedSince: persist.Clear[int64]()})},
		{"Update/UsageNotJSON", persist.ErrInvalidEntry, update(persist.RunPatch{Usage: persist.Set(raw(`{`)), DetachedSince: persist.Clear[int64]()})},
		{"Update/BadSandboxKey", persist.ErrInvalidEntry, update(persist.RunPatch{SandboxKey: persist.Set(badUTF8), DetachedSince: persist.Clear[int64]()})},
		{"Update/UnsafeDetachedSince", persist.ErrInvalidEntry, update(persist.RunPatch{DetachedSince: persist.Set(-unsafe), SandboxKey: persist.Clear[string]()})},
		{"Update/NegativeDriverEpoch", persist.ErrInvalidEntry, update(persist.RunPatch{DriverEpoch: persist.Set[int64](-1), DetachedSince: persist.Clear[int64]()})},
		{"Get/EmptyRunID", persist.ErrInvalidID, func(ctx context.Context, s *persist.Store) error { return errOf(s.Runs.Get(ctx, "")) }},
		{"FindActiveRun/BadThreadID", persist.ErrInvalidID, func(ctx context.Context, s *persist.Store) error { return errOf(s.Runs.FindActiveRun(ctx, badUTF8)) }},
		{"ListByThread/EmptyThreadID", persist.ErrInvalidID, func(ctx context.Context, s *persist.Store) error { return errOf(s.Runs.ListByThread(ctx, "")) }},
		{"ListReclaimable/NegativeTTL", persist.ErrInvalidEntry, func(ctx context.Context, s *persist.Store) error {
			return errOf(s.Runs.ListReclaimable(ctx, persist.ReclaimQuery{Now: 1, TTLMs: -1}))
		}},
		{"ListReclaimable/UnsafeNow", persist.ErrInvalidEntry, func(ctx context.Context, s *persist.Store) error {
			return errOf(s.Runs.ListReclaimable(ctx, persist.ReclaimQuery{Now: unsafe}))
		}},
		// Generation runs.
		{"GenerationCreate/EmptyThreadID", persist.ErrInvalidID, gen(func(in *persist.GenerationRunStart) { in.ThreadID = "" })},
		{"GenerationCreate/BadActivity", persist.ErrInvalidEntry, gen(func(in *persist.GenerationRunStart) { in.Activity = badUTF8 })},
		{"GenerationCreate/BadModel", persist.ErrInvalidEntry, gen(func(in *persist.GenerationRunStart) { in.Model = badUTF8 })},
		{"GenerationCreate/BadStatus", persist.ErrInvalidEntry, gen(func(in *persist.GenerationRunStart) { in.Status = "pending" })},
		{"GenerationUpdate/ClearStatus", persist.ErrInvalidEntry, genUpdate(persist.GenerationRunPatch{Status: persist.Clear[persist.RunStatus](), Result: persist.Set(raw(`1`))})},
		{"GenerationUpdate/ArtifactsNotArray", persist.ErrInvalidEntry, genUpdate(persist.GenerationRunPatch{Artifacts: persist.Set(raw(`{}`)), Result: persist.Set(raw(`1`))})},
		{"GenerationUpdate/ResultNotJSON", persist.ErrInvalidEntry, genUpdate(persist.GenerationRunPatch{Result: persist.Set(raw(`nope`))})},
		{"GenerationUpdate/ResultNil", persist.ErrInvalidEntry, genUpdate(persist.GenerationRunPatch{Result: persist.Set[json.RawMessage](nil)})},
		{"GenerationLatest/EmptyThreadID", persist.ErrInvalidID, func(ctx context.Context, s *persist.Store) error {
			return errOf(s.GenerationRuns.FindLatestForThread(ctx, ""))
		}},
		// Interrupts.
		{"InterruptCreate/EmptyID", persist.ErrInvalidID, create(func(in *persist.NewInterrupt) { in.InterruptID = "" })},
		{"InterruptCreate/BadRunID", persist.ErrInvalidID, create(func(in *persist.NewInterrupt) { in.RunID = badUTF8 })},
		{"InterruptCreate/EmptyThreadID", persist.ErrInvalidID, create(func(in *persist.NewInterrupt) { in.ThreadID = "" })},
		{"InterruptCreate/UnsafeRequestedAt", persist.ErrInvalidEntry, create(func(in *persist.NewInterrupt) { in.RequestedAt = unsafe })},
		{"InterruptCreate/NoPayload", persist.ErrInvalidEntry, create(func(in *persist.NewInterrupt) { in.Payload = nil })},
		{"InterruptCreate/PayloadNotObject", persist.ErrInvalidEntry, create(func(in *persist.NewInterrupt) { in.Payload = raw(`"x"`) })},
		{"InterruptCreate/BadResponse", persist.ErrInvalidEntry, create(func(in *persist.NewInterrupt) { in.Response = raw(`{`) })},
		{"Resolve/EmptyID", persist.ErrInvalidID, func(ctx context.Context, s *persist.Store) error { return s.Interrupts.Resolve(ctx, "", raw(`{`)) }},
		{"Resolve/BadResponse", persist.ErrInvalidEntry, func(ctx context.Context, s *persist.Store) error { return s.Interrupts.Resolve(ctx, "v-int", raw(`{`)) }},
		{"Cancel/EmptyID", persist.ErrInvalidID, func(ctx context.Context, s *persist.Store) error { return s.Interrupts.Cancel(ctx, "") }},
		{"ListByRun/EmptyRunID", persist.ErrInvalidID, func(ctx context.Context, s *persist.Store) error { return errOf(s.Interrupts.ListByRun(ctx, "")) }},
		{"ListPending/EmptyThreadID", persist.ErrInvalidID, func(ctx context.Context, s *persist.Store) error { return errOf(s.Interrupts.ListPending(ctx, "")) }},
		// Metadata.
		{"MetadataSet/EmptyNamespace", persist.ErrInvalidID, func(ctx context.Context, s *persist.Store) error { return s.Metadata.Set(ctx, "", "k", raw(`1`)) }},
		{"MetadataSet/BadKey", persist.ErrInvalidID, func(ctx context.Context, s *persist.Store) error {
			return s.Metadata.Set(ctx, "v-ns", badUTF8, raw(`1`))
		}},
		{"MetadataSet/NotJSON", persist.ErrInvalidEntry, func(ctx context.Context, s *persist.Store) error {
			return s.Metadata.Set(ctx, "v-ns", "v-key", raw(`{"m":`))
		}},
		{"MetadataSet/OverValueBound", persist.ErrInvalidEntry, func(ctx context.Context, s *persist.Store) error {
			return s.Metadata.Set(ctx, "v-ns", "v-key", sizedJSON('"', persist.MaxValueBytes+1))
		}},
		{"MetadataSet/TooDeep", persist.ErrInvalidEntry, func(ctx context.Context, s *persist.Store) error {
			return s.Metadata.Set(ctx, "v-ns", "v-key", deepJSON(contract.MaxJSONDepth+1))
		}},
		{"MetadataSet/NoValue", persist.ErrInvalidEntry, func(ctx context.Context, s *persist.Store) error { return s.Metadata.Set(ctx, "v-ns", "v-key", nil) }},
		{"InterruptCreate/PayloadOverValueBound", persist.ErrInvalidEntry, func(ctx context.Context, s *persist.Store) error {
			return s.Interrupts.Create(ctx, persist.NewInterrupt{InterruptID: "x-int", RunID: "v-run", ThreadID: "v-thread", RequestedAt: 1, Payload: sizedJSON('{', persist.MaxValueBytes+1)})
		}},
		{"InterruptResolve/ResponseTooDeep", persist.ErrInvalidEntry, func(ctx context.Context, s *persist.Store) error {
			return s.Interrupts.Resolve(ctx, "v-int", deepJSON(contract.MaxJSONDepth+1))
		}},
		{"CommitBatch/ResponseOverValueBound", persist.ErrInvalidEntry, func(ctx context.Context, s *persist.Store) error {
			return s.Interrupts.CommitBatch(ctx, []persist.InterruptCommitEntry{{InterruptID: "v-int", Status: persist.InterruptResolved, Response: sizedJSON('[', persist.MaxValueBytes+1)}})
		}},
		{"Update/UsageOverValueBound", persist.ErrInvalidEntry, func(ctx context.Context, s *persist.Store) error {
			return s.Runs.Update(ctx, "v-run", persist.RunPatch{Usage: persist.Set(sizedJSON('{', persist.MaxValueBytes+1))})
		}},
		{"Update/ErrorMessageOverValueBound", persist.ErrInvalidEntry, func(ctx context.Context, s *persist.Store) error {
			return s.Runs.Update(ctx, "v-run", persist.RunPatch{Error: persist.Set(persist.RunError{Message: maxText(false) + "x"})})
		}},
		{"Update/SandboxKeyEscapesOverValueBound", persist.ErrInvalidEntry, func(ctx context.Context, s *persist.Store) error {
			return s.Runs.Update(ctx, "v-run", persist.RunPatch{SandboxKey: persist.Set(maxText(true) + "&")})
		}},
		{"GenerationStart/ModelOverValueBound", persist.ErrInvalidEntry, func(ctx context.Context, s *persist.Store) error {
			st := genStart("x-gen", "v-thread", 1)
			st.Model = maxText(false) + "x"
			return errOf(s.GenerationRuns.CreateOrResume(ctx, st))
		}},
		{"GenerationUpdate/ResultOverValueBound", persist.ErrInvalidEntry, func(ctx context.Context, s *persist.Store) error {
			return s.GenerationRuns.Update(ctx, "v-gen", persist.GenerationRunPatch{Result: persist.Set(sizedJSON('"', persist.MaxValueBytes+1))})
		}},
		{"ArtifactSave/NameOverValueBound", persist.ErrInvalidEntry, save(func(a *persist.ArtifactRecord) { a.Name = maxText(false) + "x" })},
		{"MetadataDelete/LongKey", persist.ErrInvalidID, func(ctx context.Context, s *persist.Store) error { return s.Metadata.Delete(ctx, "v-ns", tooLong) }},
		// Artifacts.
		{"ArtifactSave/EmptyID", persist.ErrInvalidID, save(func(a *persist.ArtifactRecord) { a.ArtifactID = "" })},
		{"ArtifactSave/EmptyRunID", persist.ErrInvalidID, save(func(a *persist.ArtifactRecord) { a.RunID = "" })},
		{"ArtifactSave/EmptyBlobKey", persist.ErrInvalidID, save(func(a *persist.ArtifactRecord) { a.BlobKey = str("") })},
		{"ArtifactSave/BadName", persist.ErrInvalidEntry, save(func(a *persist.ArtifactRecord) { a.Name = badUTF8 })},
		{"ArtifactSave/BadSourceURL", persist.ErrInvalidEntry, save(func(a *persist.ArtifactRecord) { a.SourceURL = str(badUTF8) })},
		{"ArtifactSave/NegativeSize", persist.ErrInvalidEntry, save(func(a *persist.ArtifactRecord) { a.Size = -1 })},
		{"ArtifactSave/UnsafeCreatedAt", persist.ErrInvalidEntry, save(func(a *persist.ArtifactRecord) { a.CreatedAt = unsafe })},
		{"ArtifactSave/IDBeforeSize", persist.ErrInvalidID, save(func(a *persist.ArtifactRecord) { a.ThreadID, a.Size = "", -1 })},
		{"ArtifactDeleteForRun/EmptyRunID", persist.ErrInvalidID, func(ctx context.Context, s *persist.Store) error { return s.Artifacts.DeleteForRun(ctx, "") }},
		{"ArtifactDelete/BadID", persist.ErrInvalidID, func(ctx context.Context, s *persist.Store) error { return s.Artifacts.Delete(ctx, badUTF8) }},
		// Blobs.
		{"BlobPut/EmptyKey", persist.ErrInvalidID, put("", persist.BlobPutOptions{})},
		{"BlobPut/BadKey", persist.ErrInvalidID, put(badUTF8, persist.BlobPutOptions{})},
		{"BlobPut/BadContentType", persist.ErrInvalidEntry, put("v-blob", persist.BlobPutOptions{ContentType: str(badUTF8)})},
		{"BlobPut/BadMetadataValue", persist.ErrInvalidEntry, put("v-blob", persist.BlobPutOptions{CustomMetadata: map[string]string{"k": badUTF8}})},
		{"BlobPut/MetadataTooLarge", persist.ErrInvalidEntry, put(LargestBlobMeta(1))},
		{"BlobPut/ContentTypeTooLarge", persist.ErrInvalidEntry, put("v-blob", persist.BlobPutOptions{ContentType: str(strings.Repeat("a", persist.MaxBlobMetaBytes))})},
		{"BlobPut/NegativeExpectedLength", persist.ErrInvalidEntry, put("v-blob", persist.BlobPutOptions{ExpectedLength: i64(-1)})},
		{"BlobGet/NegativeOffset", persist.ErrInvalidEntry, get(persist.BlobRange{Offset: -1})},
		{"BlobGet/NegativeLength", persist.ErrInvalidEntry, get(persist.BlobRange{Offset: 0, Length: i64(-1)})},
		{"BlobGet/OffsetPastEnd", persist.ErrRangeNotSatisfiable, get(persist.BlobRange{Offset: 5})},
		{"BlobDelete/EmptyKey", persist.ErrInvalidID, func(ctx context.Context, s *persist.Store) error { return s.Blobs.Delete(ctx, "") }},
		{"BlobHead/LongKey", persist.ErrInvalidID, func(ctx context.Context, s *persist.Store) error { return errOf(s.Blobs.Head(ctx, tooLong)) }},
		{"BlobList/NegativeLimit", persist.ErrInvalidEntry, func(ctx context.Context, s *persist.Store) error {
			return errOf(s.Blobs.List(ctx, persist.BlobListOptions{Limit: &neg}))
		}},
		{"BlobList/BadPrefix", persist.ErrInvalidEntry, func(ctx context.Context, s *persist.Store) error {
			return errOf(s.Blobs.List(ctx, persist.BlobListOptions{Prefix: badUTF8}))
		}},
		// Locks.
		{"WithLock/EmptyKey", persist.ErrInvalidID, func(ctx context.Context, s *persist.Store) error {
			return s.Locks.WithLock(ctx, "", func(context.Context) error { panic("fn ran") })
		}},
		{"WithLock/LongKey", persist.ErrInvalidID, func(ctx context.Context, s *persist.Store) error {
			return s.Locks.WithLock(ctx, tooLong, func(context.Context) error { panic("fn ran") })
		}},
		{"LockAcquire/EmptyToken", persist.ErrInvalidID, steps(func(ctx context.Context, l *persist.DriverLockSteps) error {
			return errOf(l.Acquire(ctx, "k", "", time.Second))
		})},
		{"LockAcquire/NegativeWait", persist.ErrInvalidEntry, steps(func(ctx context.Context, l *persist.DriverLockSteps) error {
			return errOf(l.Acquire(ctx, "k", "t", -time.Millisecond))
		})},
		{"LockRenew/LongToken", persist.ErrInvalidID, steps(func(ctx context.Context, l *persist.DriverLockSteps) error { return errOf(l.Renew(ctx, "k", tooLong)) })},
		{"LockRelease/BadKey", persist.ErrInvalidID, steps(func(ctx context.Context, l *persist.DriverLockSteps) error {
			return errOf(l.Release(ctx, badUTF8, "t"))
		})},
	}
}

// testInvalidInputs runs every invalid call against a seeded store: each
// fails with its typed error and leaves every record as it was.
func testInvalidInputs(t *testing.T, e *env) {
	e.seed()
	before := e.dump()
	for _, c := range invalidCalls() {
		s := e.s
		if strings.HasPrefix(c.name, "Lock") {
			s = e.server
		}
		err := c.call(e.ctx, s)
		require.ErrorIs(t, err, c.want, c.name)
		require.NotEmpty(t, persist.Code(err), "%s: a contract error has a wire code", c.name)
		require.Equal(t, before, e.dump(), "%s changed something", c.name)
	}
}

// testDoneContext: with a cancelled context every method fails with the
// context's error before any driver call, so nothing changes.
func testDoneContext(t *testing.T, e *env) {
	e.seed()
	before := e.dump()
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	valid := []func(context.Context, *persist.Store) error{
		func(ctx context.Context, s *persist.Store) error {
			return errOf(s.Runs.CreateOrResume(ctx, persist.RunStart{RunID: "c", ThreadID: "v-thread", StartedAt: 1}))
		},
		func(ctx context.Context, s *persist.Store) error {
			return s.Runs.Update(ctx, "v-run", persist.RunPatch{Status: persist.Set(persist.RunFailed)})
		},
		func(ctx context.Context, s *persist.Store) error { return errOf(s.Runs.Get(ctx, "v-run")) },
		func(ctx context.Context, s *persist.Store) error { return errOf(s.Runs.ListByThread(ctx, "v-thread")) },
		func(ctx context.Context, s *persist.Store) error { return s.Interrupts.Cancel(ctx, "v-int") },
		func(ctx context.Context, s *persist.Store) error {
			return s.Interrupts.CommitBatch(ctx, []persist.InterruptCommitEntry{{InterruptID: "v-int", Status: persist.InterruptCancelled}})
		},
		func(ctx context.Context, s *persist.Store) error { return s.Metadata.Delete(ctx, "v-ns", "v-key") },
		func(ctx context.Context, s *persist.Store) error { return s.Artifacts.DeleteForRun(ctx, "v-run") },
		func(ctx context.Context, s *persist.Store) error { return s.Blobs.Delete(ctx, "v-blob") },
		func(ctx context.Context, s *persist.Store) error {
			return errOf(s.Blobs.Put(ctx, "v-blob", strings.NewReader("x"), persist.BlobPutOptions{}))
		},
		func(ctx context.Context, s *persist.Store) error {
			return s.Locks.WithLock(ctx, "k", func(context.Context) error { panic("fn ran") })
		},
	}
	calls := e.d.Calls()
	for i, call := range valid {
		require.ErrorIs(t, call(ctx, e.s), context.Canceled, "call %d", i)
	}
	require.Equal(t, calls, e.d.Calls(), "a done context reached the driver")
	require.Equal(t, before, e.dump())
}

// testEdgeValues: the valid extremes are accepted and come back exactly.
func testEdgeValues(t *testing.T, e *env) {
	long := strings.Repeat("é", driver.MaxIDBytes/2) // exactly MaxIDBytes bytes
	const max = driver.MaxSafeInteger
	r := must(e.s.Runs.CreateOrResume(e.ctx, persist.RunStart{RunID: long, ThreadID: "😀 thread", StartedAt: -max})).of(t)
	require.Equal(t, long, r.RunID)
	e.update(long, persist.RunPatch{FinishedAt: persist.Set[int64](max), DriverEpoch: persist.Set[int64](max), DetachedSince: persist.Set[int64](-max),
		SandboxKey: persist.Set(""), Usage: persist.Set(raw(` {} `))})
	got := e.run(long)
	require.Equal(t, int64(max), *got.FinishedAt)
	require.Equal(t, int64(max), *got.DriverEpoch)
	require.Equal(t, "", *got.SandboxKey, "an empty sandboxKey is a value, not absence")
	require.Equal(t, ` {} `, string(got.Usage), "JSON is kept byte for byte")
	rs := must(e.s.Runs.ListReclaimable(e.ctx, persist.ReclaimQuery{Now: -max, TTLMs: 0})).of(t)
	require.Equal(t, []string{long}, runIDs(rs))
	e.put(long, []byte("x"), persist.BlobPutOptions{ContentType: str(""), CustomMetadata: map[string]string{"": ""}})
	o, b := e.read(long, nil)
	require.Equal(t, "x", string(b))
	require.Equal(t, "", *o.ContentType)
	require.Equal(t, map[string]string{"": ""}, o.CustomMetadata)
	e.save(artifact("edge", func(a *persist.ArtifactRecord) { a.Size, a.CreatedAt, a.Name, a.MimeType = max, -max, "", "" }))
	a := must(e.s.Artifacts.Get(e.ctx, "edge")).of(t)
	require.Equal(t, int64(max), a.Size)
}

// testPatchJSON: the wire form of a patch. An absent member leaves a field,
// null clears it, a value sets it, and the driver sees exactly that.
func testPatchJSON(t *testing.T, e *env) {
	e.start("pj", "pj-t", 1)
	var p persist.RunPatch
	require.NoError(t, json.Unmarshal([]byte(`{"sandboxKey":"sb","detachedSince":5,"cancelRequested":false,"driverEpoch":2,"usage":{"t":1},"error":{"message":"m"}}`), &p))
	e.update("pj", p)
	jsonEq(t, map[string]any{"runId": "pj", "threadId": "pj-t", "status": "running", "startedAt": 1, "sandboxKey": "sb",
		"detachedSince": 5, "cancelRequested": false, "driverEpoch": 2, "usage": map[string]any{"t": 1}, "error": map[string]any{"message": "m"}}, e.run("pj"))
	require.NoError(t, json.Unmarshal([]byte(`{"detachedSince":null,"usage":null,"status":"completed"}`), &p))
	out := must(json.Marshal(p)).of(t)
	require.JSONEq(t, `{"detachedSince":null,"usage":null,"status":"completed"}`, string(out))
	e.update("pj", p)
	jsonEq(t, map[string]any{"runId": "pj", "threadId": "pj-t", "status": "completed", "startedAt": 1, "sandboxKey": "sb",
		"cancelRequested": false, "driverEpoch": 2, "error": map[string]any{"message": "m"}}, e.run("pj"))
	for _, bad := range []string{`{"unknown":1}`, `{"detachedSince":"5"}`, `{"detachedSince":1.5}`, `[]`, `null`} {
		require.ErrorIs(t, json.Unmarshal([]byte(bad), &p), persist.ErrInvalidEntry, bad)
	}
	var g persist.GenerationRunPatch
	require.NoError(t, json.Unmarshal([]byte(`{"result":null,"artifacts":[]}`), &g))
	require.True(t, g.Result.IsClear())
	require.Equal(t, "[]", string(g.Artifacts.Value()))
}

// sizedJSON is a JSON value of n bytes (n ≥ 8): a string ('"'), an object
// ('{') or an array ('[') holding one string.
func sizedJSON(kind byte, n int) json.RawMessage {
	switch kind {
	case '{':
		return raw(`{"s":"` + strings.Repeat("x", n-8) + `"}`)
	case '[':
		return raw(`["` + strings.Repeat("x", n-4) + `"]`)
	}
	return raw(`"` + strings.Repeat("x", n-2) + `"`)
}

// deepJSON is an array nested depth levels.
func deepJSON(depth int) json.RawMessage {
	return raw(strings.Repeat("[", depth) + strings.Repeat("]", depth))
}

// maxText is a text of exactly MaxValueBytes as a stored JSON string
// (driver.TextSize): plain ASCII, or control characters and '<' that a
// stored record escapes to six bytes each (the most a byte can take).
func maxText(escaped bool) string {
	if escaped {
		n := (persist.MaxValueBytes - 2) / 6
		return strings.Repeat("\x01", n/2) + strings.Repeat("<", n-n/2)
	}
	return strings.Repeat("t", persist.MaxValueBytes-2)
}

// testValuesAtTheBounds: records whose every id, text and JSON value is at
// its bound, in the form that takes the most room stored (ids and texts of
// control characters, JSON escapes of six bytes a byte), are stored and
// read back exactly on every engine, by id and through every list that
// reads an index copy; so is a value nested contract.MaxJSONDepth deep.
// One byte more is refused (InvalidInputsChangeNothing). This is where
// fdbstore shows that its largest stored form fits one FoundationDB value.
func testValuesAtTheBounds(t *testing.T, e *env) {
	require.Equal(t, persist.MaxValueBytes, driver.TextSize(maxText(true)), "an escaped text at the bound")
	require.Equal(t, persist.MaxValueBytes, driver.TextSize(maxText(false)), "a plain text at the bound")
	// Ids of control characters and '<', six bytes each stored.
	id := func(c byte) string {
		return strings.Repeat(string(rune(c)), driver.MaxIDBytes/2) + strings.Repeat("<", driver.MaxIDBytes/2)
	}
	thread := id(2)
	code := maxText(true)
	rerr := persist.RunError{Message: maxText(false), Code: &code}

	// A generation run: two ids, five texts, three JSON values.
	g := persist.GenerationRunStart{RunID: id(1), ThreadID: thread, Activity: maxText(true), Provider: maxText(true), Model: maxText(false), StartedAt: 1}
	require.NoError(t, errOf(e.s.GenerationRuns.CreateOrResume(e.ctx, g)))
	require.NoError(t, e.s.GenerationRuns.Update(e.ctx, g.RunID, persist.GenerationRunPatch{Status: persist.Set(persist.RunFailed), Error: persist.Set(rerr),
		Result: persist.Set(sizedJSON('"', persist.MaxValueBytes)), Artifacts: persist.Set(sizedJSON('[', persist.MaxValueBytes)), Usage: persist.Set(sizedJSON('{', persist.MaxValueBytes))}))
	gr := must(e.s.GenerationRuns.Get(e.ctx, g.RunID)).of(t)
	require.NotNil(t, gr)
	require.Equal(t, g.Activity, gr.Activity)
	require.Equal(t, rerr, *gr.Error)
	require.Equal(t, string(sizedJSON('[', persist.MaxValueBytes)), string(gr.Artifacts))
	jsonEq(t, gr, must(e.s.GenerationRuns.FindLatestForThread(e.ctx, thread)).of(t), "the index copy")

	// A run: two ids, three texts, one JSON value.
	r := must(e.s.Runs.CreateOrResume(e.ctx, persist.RunStart{RunID: id(3), ThreadID: thread, StartedAt: 1})).of(t)
	e.update(r.RunID, persist.RunPatch{Error: persist.Set(rerr), SandboxKey: persist.Set(maxText(true)), Usage: persist.Set(sizedJSON('{', persist.MaxValueBytes)), DetachedSince: persist.Set[int64](1)})
	got := e.run(r.RunID)
	require.Equal(t, maxText(true), *got.SandboxKey)
	require.Equal(t, string(sizedJSON('{', persist.MaxValueBytes)), string(got.Usage))
	jsonEq(t, []*persist.RunRecord{got}, must(e.s.Runs.ListByThread(e.ctx, thread)).of(t), "the index copy")

	// An interrupt: three ids, two JSON values; one nested to the bound.
	in := persist.NewInterrupt{InterruptID: id(4), RunID: id(5), ThreadID: thread, RequestedAt: 1, Payload: sizedJSON('{', persist.MaxValueBytes)}
	require.NoError(t, e.s.Interrupts.Create(e.ctx, in))
	deep := deepJSON(contract.MaxJSONDepth)
	require.NoError(t, e.s.Interrupts.Resolve(e.ctx, in.InterruptID, sizedJSON('"', persist.MaxValueBytes)))
	ir := e.getInterrupt(in.InterruptID)
	require.Equal(t, string(in.Payload), string(ir.Payload))
	require.Equal(t, string(sizedJSON('"', persist.MaxValueBytes)), string(ir.Response))
	jsonEq(t, []*persist.InterruptRecord{ir}, must(e.s.Interrupts.List(e.ctx, thread)).of(t), "the index copy")
	e.interrupt("deep", "deep-run", "deep-thread", 1, `{"d":`+string(deep[1:len(deep)-1])+`}`)
	require.NoError(t, e.s.Interrupts.Resolve(e.ctx, "deep", deep))
	require.Equal(t, string(deep), string(e.getInterrupt("deep").Response))

	// Metadata, at the size bound and at the depth bound.
	require.NoError(t, e.s.Metadata.Set(e.ctx, id(6), id(7), sizedJSON('"', persist.MaxValueBytes)))
	require.Equal(t, string(sizedJSON('"', persist.MaxValueBytes)), string(must(e.s.Metadata.Get(e.ctx, id(6), id(7))).of(t)))
	require.NoError(t, e.s.Metadata.Set(e.ctx, "deep", "k", deep))
	require.Equal(t, string(deep), string(must(e.s.Metadata.Get(e.ctx, "deep", "k")).of(t)))

	// An artifact: four ids, three texts.
	blobKey := id(8)
	e.save(artifact(id(9), func(a *persist.ArtifactRecord) {
		a.RunID, a.ThreadID, a.BlobKey, a.Name, a.MimeType, a.SourceURL = id(10), thread, &blobKey, maxText(true), maxText(false), str(maxText(true))
	}))
	a := must(e.s.Artifacts.Get(e.ctx, id(9))).of(t)
	require.Equal(t, maxText(true), a.Name)
	jsonEq(t, []*persist.ArtifactRecord{a}, must(e.s.Artifacts.ListForThread(e.ctx, thread)).of(t), "the index copy")
}
