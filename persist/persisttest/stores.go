package persisttest

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/ckptstore/ckptstore/persist"
	"github.com/ckptstore/ckptstore/persist/driver"
	"github.com/stretchr/testify/require"
)

var generationRunTests = []test{
	{"CreateResumeUpdateGet", onEnv(testGenerationLifecycle)},
	{"NeverResurrects", onEnv(testGenerationNeverResurrects)},
	{"FindLatestForThread", onEnv(testFindLatest)},
}

var metadataTests = []test{
	{"NamespacesWithoutCollisions", onEnv(testMetadata)},
	{"StoredNullReadsAbsent", onEnv(testMetadataNull)},
}

var artifactTests = []test{
	{"SaveUpsertsGetList", onEnv(testArtifactSave)},
	{"ListForThreadOrder", onEnv(testArtifactThreadOrder)},
	{"UTF8ByteOrder", onEnv(testArtifactUTF8)},
	{"UpsertMovesBetweenRuns", onEnv(testArtifactMove)},
	{"DeleteAndDeleteForRun", onEnv(testArtifactDelete)},
	{"DeleteForRunManyPages", onEnv(testArtifactDeleteMany)},
}

func genStart(id, thread string, at int64) persist.GenerationRunStart {
	return persist.GenerationRunStart{RunID: id, ThreadID: thread, Activity: "image", Provider: "openai", Model: "gpt-image-1", StartedAt: at}
}

func testGenerationLifecycle(t *testing.T, e *env) {
	g := e.s.GenerationRuns
	r := must(g.Get(e.ctx, "gen-missing")).of(t)
	require.Nil(t, r)
	created := must(g.CreateOrResume(e.ctx, genStart("gen-1", "gen-thread-1", 1000))).of(t)
	jsonEq(t, map[string]any{"runId": "gen-1", "threadId": "gen-thread-1", "activity": "image", "provider": "openai",
		"model": "gpt-image-1", "status": "running", "startedAt": 1000}, created)
	resumed, err := g.CreateOrResume(e.ctx, persist.GenerationRunStart{RunID: "gen-1", ThreadID: "thread-late", Activity: "video",
		Provider: "google", Model: "veo-3", StartedAt: 9999})
	require.NoError(t, err)
	jsonEq(t, created, resumed)

	artifacts := `[{"role":"output","artifactId":"art-1","runId":"gen-1","threadId":"thread-gen","name":"a.png","mimeType":"image/png","size":3,"createdAt":"2024-01-01T00:00:00.000Z","source":{"activity":"image","path":"images.0","provider":"openai","model":"gpt-image-1"}}]`
	require.NoError(t, g.Update(e.ctx, "gen-1", persist.GenerationRunPatch{
		Status: persist.Set(persist.RunCompleted), FinishedAt: persist.Set[int64](2000),
		Result:    persist.Set(raw(`{"images":[{"url":"https://example.com/a.png"}]}`)),
		Artifacts: persist.Set(raw(artifacts)), Usage: persist.Set(raw(`{"promptTokens":1,"completionTokens":2,"totalTokens":3}`)),
	}))
	done := must(g.Get(e.ctx, "gen-1")).of(t)
	require.Equal(t, persist.RunCompleted, done.Status)
	require.JSONEq(t, artifacts, string(done.Artifacts))
	require.JSONEq(t, `{"images":[{"url":"https://example.com/a.png"}]}`, string(done.Result))

	require.NoError(t, g.Update(e.ctx, "gen-1", persist.GenerationRunPatch{Status: persist.Set(persist.RunFailed),
		Error: persist.Set(persist.RunError{Message: "boom", Code: str("provider_error")}), Result: persist.Clear[json.RawMessage]()}))
	failed, err := g.Get(e.ctx, "gen-1")
	require.NoError(t, err)
	require.Equal(t, persist.RunFailed, failed.Status)
	jsonEq(t, map[string]any{"message": "boom", "code": "provider_error"}, failed.Error)
	require.Nil(t, failed.Result)
	require.JSONEq(t, artifacts, string(failed.Artifacts), "a field the patch does not name keeps its value")

	require.NoError(t, g.Update(e.ctx, "gen-absent", persist.GenerationRunPatch{Status: persist.Set(persist.RunCompleted)}))
	r, err = g.Get(e.ctx, "gen-absent")
	require.NoError(t, err)
	require.Nil(t, r)
}

func testGenerationNeverResurrects(t *testing.T, e *env) {
	g := e.s.GenerationRuns
	require.NoError(t, errOf(g.CreateOrResume(e.ctx, genStart("gn-1", "gn-t", 10))))
	require.NoError(t, g.Update(e.ctx, "gn-1", persist.GenerationRunPatch{Status: persist.Set(persist.RunAborted)}))
	in := genStart("gn-1", "gn-t", 99)
	in.Status = persist.RunRunning
	r := must(g.CreateOrResume(e.ctx, in)).of(t)
	require.Equal(t, persist.RunAborted, r.Status)
	require.EqualValues(t, 10, r.StartedAt)
}

func testFindLatest(t *testing.T, e *env) {
	g := e.s.GenerationRuns
	latest := func(thread string) *persist.GenerationRunRecord {
		r := must(g.FindLatestForThread(e.ctx, thread)).of(t)
		return r
	}
	const th = "thread-gen-latest"
	require.Nil(t, latest(th))
	for _, s := range []persist.GenerationRunStart{genStart("gen-late", th, 3000), genStart("gen-early", th, 1000), genStart("gen-other", "thread-gen-other", 9000)} {
		require.NoError(t, errOf(g.CreateOrResume(e.ctx, s)))
	}
	require.Equal(t, "gen-late", latest(th).RunID)
	require.NoError(t, g.Update(e.ctx, "gen-late", persist.GenerationRunPatch{Status: persist.Set(persist.RunCompleted), FinishedAt: persist.Set[int64](3500)}))
	r := latest(th)
	require.Equal(t, "gen-late", r.RunID, "a terminal run still counts: latest, not active")
	require.Equal(t, persist.RunCompleted, r.Status)
	require.Nil(t, latest("thread-unlinked"))
	for _, id := range []string{"tie-b", "tie-c", "tie-a"} {
		require.NoError(t, errOf(g.CreateOrResume(e.ctx, genStart(id, "thread-tie", 5))))
	}
	require.Equal(t, "tie-c", latest("thread-tie").RunID, "ties go to the greatest runId")
}

func testMetadata(t *testing.T, e *env) {
	m := e.s.Metadata
	get := func(ns, key string) string {
		v := must(m.Get(e.ctx, ns, key)).of(t)
		if v == nil {
			return "<absent>"
		}
		return string(v)
	}
	require.Equal(t, "<absent>", get("scope-a", "k"))
	require.NoError(t, m.Set(e.ctx, "scope-a", "k", raw(`{"n":1}`)))
	require.NoError(t, m.Set(e.ctx, "scope-b", "k", raw(`{"n":2}`)))
	require.Equal(t, `{"n":1}`, get("scope-a", "k"))
	require.Equal(t, `{"n":2}`, get("scope-b", "k"))
	require.NoError(t, m.Set(e.ctx, "scope-a", "k", raw(`{"n":3}`)))
	require.Equal(t, `{"n":3}`, get("scope-a", "k"))
	require.NoError(t, m.Delete(e.ctx, "scope-a", "k"))
	require.Equal(t, "<absent>", get("scope-a", "k"))
	require.Equal(t, `{"n":2}`, get("scope-b", "k"))
	require.NoError(t, m.Delete(e.ctx, "scope-a", "k"), "deleting an absent value is a no-op")

	require.NoError(t, m.Set(e.ctx, "a:b", "c", raw(`"left"`)))
	require.NoError(t, m.Set(e.ctx, "a", "b:c", raw(`"right"`)))
	require.NoError(t, m.Set(e.ctx, "a\x00b", "c", raw(`"nul-left"`)))
	require.NoError(t, m.Set(e.ctx, "a", "b\x00c", raw(`"nul-right"`)))
	require.Equal(t, `"left"`, get("a:b", "c"))
	require.Equal(t, `"right"`, get("a", "b:c"))
	require.Equal(t, `"nul-left"`, get("a\x00b", "c"))
	require.Equal(t, `"nul-right"`, get("a", "b\x00c"))
	require.NoError(t, m.Delete(e.ctx, "a:b", "c"))
	require.Equal(t, "<absent>", get("a:b", "c"))
	require.Equal(t, `"right"`, get("a", "b:c"))
	for _, v := range []string{`0`, `false`, `""`, `[]`, `{}`, `"x"`, ` [1, 2] `} {
		require.NoError(t, m.Set(e.ctx, "kinds", "v", raw(v)))
		require.Equal(t, v, get("kinds", "v"), "every JSON value is kept byte for byte")
	}
}

func testMetadataNull(t *testing.T, e *env) {
	require.NoError(t, e.s.Metadata.Set(e.ctx, "ns", "k", raw(`{"a":1}`)))
	require.NoError(t, e.s.Metadata.Set(e.ctx, "ns", "k", raw(`null`)))
	v := must(e.s.Metadata.Get(e.ctx, "ns", "k")).of(t)
	require.Nil(t, v)
}

func artifact(id string, mod func(*persist.ArtifactRecord)) *persist.ArtifactRecord {
	a := &persist.ArtifactRecord{ArtifactID: id, RunID: "run-art", ThreadID: "thread-art", Name: "image.png", MimeType: "image/png", Size: 3, CreatedAt: 100}
	if mod != nil {
		mod(a)
	}
	return a
}

func (e *env) save(a *persist.ArtifactRecord) {
	e.t.Helper()
	require.NoError(e.t, e.s.Artifacts.Save(e.ctx, a))
}

func artifactIDs(rs []*persist.ArtifactRecord) []string {
	return ids(rs, func(r *persist.ArtifactRecord) string { return r.ArtifactID })
}

func (e *env) artifactList(run string) []string {
	e.t.Helper()
	rs := must(e.s.Artifacts.List(e.ctx, run)).of(e.t)
	require.NotNil(e.t, rs)
	return artifactIDs(rs)
}

func (e *env) artifactThread(thread string) []string {
	e.t.Helper()
	rs := must(e.s.Artifacts.ListForThread(e.ctx, thread)).of(e.t)
	require.NotNil(e.t, rs)
	return artifactIDs(rs)
}

func testArtifactSave(t *testing.T, e *env) {
	r := must(e.s.Artifacts.Get(e.ctx, "art-missing")).of(t)
	require.Nil(t, r)
	require.Equal(t, []string{}, e.artifactList("run-unknown"))
	e.save(artifact("\U00010000", func(a *persist.ArtifactRecord) { a.BlobKey = str("artifacts/run-art/art-a") }))
	e.save(artifact("\ue000", func(a *persist.ArtifactRecord) { a.SourceURL = str("https://provider.example/expiring.png") }))
	e.save(artifact("art-c", func(a *persist.ArtifactRecord) { a.RunID = "run-art-other" }))
	got, err := e.s.Artifacts.Get(e.ctx, "\U00010000")
	require.NoError(t, err)
	jsonEq(t, map[string]any{"artifactId": "\U00010000", "runId": "run-art", "threadId": "thread-art", "blobKey": "artifacts/run-art/art-a",
		"name": "image.png", "mimeType": "image/png", "size": 3, "createdAt": 100}, got)
	require.Equal(t, []string{"\ue000", "\U00010000"}, e.artifactList("run-art"))

	e.save(artifact("\U00010000", func(a *persist.ArtifactRecord) { a.Name, a.Size = "renamed.png", 9 }))
	got, err = e.s.Artifacts.Get(e.ctx, "\U00010000")
	require.NoError(t, err)
	require.Equal(t, "renamed.png", got.Name)
	require.EqualValues(t, 9, got.Size)
	require.Nil(t, got.BlobKey, "save overwrites the whole record")
	require.Equal(t, []string{"\ue000", "\U00010000"}, e.artifactList("run-art"))
}

func testArtifactThreadOrder(t *testing.T, e *env) {
	e.save(artifact("thread-b", func(a *persist.ArtifactRecord) { a.ThreadID, a.CreatedAt = "thread-order", 2 }))
	e.save(artifact("thread-a", func(a *persist.ArtifactRecord) { a.ThreadID, a.CreatedAt = "thread-order", 2 }))
	e.save(artifact("thread-early", func(a *persist.ArtifactRecord) { a.ThreadID, a.CreatedAt = "thread-order", 1 }))
	e.save(artifact("other", func(a *persist.ArtifactRecord) { a.ThreadID, a.CreatedAt = "thread-other", 0 }))
	require.Equal(t, []string{"thread-early", "thread-a", "thread-b"}, e.artifactThread("thread-order"))
}

func testArtifactUTF8(t *testing.T, e *env) {
	for _, id := range []string{"\U00010000", "\ue000", "a", "ab", "B"} {
		e.save(artifact(id, func(a *persist.ArtifactRecord) { a.ThreadID, a.CreatedAt = "thread-utf8", 1 }))
	}
	require.Equal(t, []string{"B", "a", "ab", "\ue000", "\U00010000"}, e.artifactThread("thread-utf8"),
		"unsigned UTF-8 bytes, shorter equal prefixes first (not UTF-16 order)")
}

func testArtifactMove(t *testing.T, e *env) {
	e.save(artifact("mv", nil))
	e.save(artifact("mv", func(a *persist.ArtifactRecord) { a.RunID, a.ThreadID, a.CreatedAt = "run-new", "thread-new", 5 }))
	require.Equal(t, []string{}, e.artifactList("run-art"))
	require.Equal(t, []string{}, e.artifactThread("thread-art"))
	require.Equal(t, []string{"mv"}, e.artifactList("run-new"))
	require.Equal(t, []string{"mv"}, e.artifactThread("thread-new"))
}

func testArtifactDelete(t *testing.T, e *env) {
	e.save(artifact("art-d1", func(a *persist.ArtifactRecord) { a.RunID = "run-del" }))
	e.save(artifact("art-d2", func(a *persist.ArtifactRecord) { a.RunID = "run-del" }))
	e.save(artifact("art-keep", func(a *persist.ArtifactRecord) { a.RunID = "run-keep" }))
	require.NoError(t, e.s.Artifacts.Delete(e.ctx, "art-d1"))
	r := must(e.s.Artifacts.Get(e.ctx, "art-d1")).of(t)
	require.Nil(t, r)
	require.Equal(t, []string{"art-d2"}, e.artifactList("run-del"))
	require.NoError(t, e.s.Artifacts.Delete(e.ctx, "art-d1"), "deleting an absent id is a no-op")
	require.NoError(t, e.s.Artifacts.DeleteForRun(e.ctx, "run-del"))
	require.Equal(t, []string{}, e.artifactList("run-del"))
	require.Equal(t, []string{"art-keep"}, e.artifactList("run-keep"))
	require.Equal(t, []string{"art-keep"}, e.artifactThread("thread-art"), "the thread index forgets deleted records")
	require.NoError(t, e.s.Artifacts.DeleteForRun(e.ctx, "run-del"), "a run with none is a no-op")
}

func testArtifactDeleteMany(t *testing.T, e *env) {
	n := 2*driver.MaxListLimit + 3
	for i := range n {
		e.save(artifact(fmt.Sprintf("many-%05d", i), func(a *persist.ArtifactRecord) { a.RunID, a.CreatedAt = "run-many", int64(i) }))
	}
	e.save(artifact("survivor", nil))
	require.Len(t, e.artifactList("run-many"), n)
	require.NoError(t, e.s.Artifacts.DeleteForRun(e.ctx, "run-many"))
	require.Equal(t, []string{}, e.artifactList("run-many"))
	require.Equal(t, []string{"survivor"}, e.artifactThread("thread-art"))
}
