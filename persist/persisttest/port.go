package persisttest

// The export and import cases (driver.Porter): dump → load into an empty
// driver → every store reads the same; loading twice changes nothing; a
// differing record fails typed and writes nothing; op tokens and locks do
// not travel.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ckptstore/ckptstore/persist/driver"
)

var portTests = []test{
	{"RoundTrip", testPortRoundTrip},
	{"LoadTwice", testPortLoadTwice},
	{"Conflict", testPortConflict},
	{"Invalid", testPortInvalid},
	{"Resume", testPortResume},
}

// porter returns the driver under test as a Porter, or skips (saying why)
// for a driver without the capability.
func porter(t *testing.T, d driver.Driver) driver.Porter {
	t.Helper()
	p, ok := d.(driver.Porter)
	if !ok {
		t.Skipf("%T does not implement driver.Porter (Dump and Load): no export or import to test", d)
	}
	return p
}

// fillAll writes a state into d that covers every record shape: runs
// running, detached (reclaimable) and finished with an error and raw usage
// kept byte for byte; generation runs with results; interrupts pending,
// resolved (with a response, with a null response, with none) and
// cancelled through a batch with an op token; metadata in two namespaces
// with a JSON null; artifacts of two runs; blob rows with content types and
// custom metadata; and a held lock. It returns the number of records.
func fillAll(t *testing.T, d driver.Driver) int {
	t.Helper()
	ctx := context.Background()
	n := 0
	for i := range 5 {
		id := fmt.Sprintf("run-%d", i)
		require.NoError(t, errOf(d.CreateOrResumeRun(ctx, &driver.RunRecord{RunID: id, ThreadID: fmt.Sprintf("th-%d", i%2), Status: driver.RunRunning, StartedAt: int64(100 + i%3)})))
		n++
	}
	_, err := d.UpdateRun(ctx, "run-1", driver.RunPatch{DetachedSince: driver.Set[int64](150), SandboxKey: driver.Set("sb\x00é"), DriverEpoch: driver.Set[int64](driver.MaxSafeInteger)})
	require.NoError(t, err)
	_, err = d.UpdateRun(ctx, "run-2", driver.RunPatch{Status: driver.Set(driver.RunFailed), FinishedAt: driver.Set[int64](200),
		Error: driver.Set(driver.RunError{Message: "boom", Code: str("E1")}), Usage: driver.Set(raw("{ \"tokens\" : 1.50e3 ,\n \"x\":[ ] }")),
		CancelRequested: driver.Set(false)})
	require.NoError(t, err)
	_, err = d.UpdateRun(ctx, "run-3", driver.RunPatch{DetachedSince: driver.Set[int64](10), Status: driver.Set(driver.RunCompleted)})
	require.NoError(t, err)
	for i := range 3 {
		id := fmt.Sprintf("gen-%d", i)
		_, err := d.CreateOrResumeGenerationRun(ctx, &driver.GenerationRunRecord{RunID: id, ThreadID: "slot", Activity: "image", Provider: "p", Model: "m", Status: driver.RunRunning, StartedAt: int64(i)})
		require.NoError(t, err)
		n++
	}
	_, err = d.UpdateGenerationRun(ctx, "gen-1", driver.GenerationRunPatch{Status: driver.Set(driver.RunCompleted), Result: driver.Set(raw(`{"id" : "x"}`)), Artifacts: driver.Set(raw(`[ {"a":1} ]`)), Usage: driver.Set(raw(`7`))})
	require.NoError(t, err)
	for i := range 6 {
		id := fmt.Sprintf("int-%d", i)
		require.NoError(t, d.CreateInterrupt(ctx, &driver.InterruptRecord{InterruptID: id, RunID: fmt.Sprintf("run-%d", i%2), ThreadID: "th-0", Status: driver.InterruptPending, RequestedAt: int64(i % 4), Payload: raw(fmt.Sprintf(`{ "q": %d }`, i))}))
		n++
	}
	_, err = d.ResolveInterrupt(ctx, "int-1", 300, raw(`{ "ok" : true }`))
	require.NoError(t, err)
	_, err = d.ResolveInterrupt(ctx, "int-2", 301, raw(`null`))
	require.NoError(t, err)
	_, err = d.ResolveInterrupt(ctx, "int-3", 302, nil)
	require.NoError(t, err)
	require.NoError(t, d.CommitInterrupts(ctx, []driver.InterruptCommitEntry{{InterruptID: "int-4", Status: driver.InterruptCancelled}}, 303, "port-token"))
	for _, m := range []struct{ ns, k, v string }{{"a", "b", `{"x": 1}`}, {"ab", "", `2`}, {"a", "bc", `null`}, {"z", "k", `"s"`}} {
		if m.k == "" {
			continue
		}
		require.NoError(t, d.SetMetadata(ctx, m.ns, m.k, raw(m.v)))
		n++
	}
	for i := range 4 {
		require.NoError(t, d.SaveArtifact(ctx, &driver.ArtifactRecord{ArtifactID: fmt.Sprintf("art-%d", i), RunID: fmt.Sprintf("run-%d", i%2), ThreadID: "th-0",
			BlobKey: str(fmt.Sprintf("artifacts/%d", i)), Name: "n", MimeType: "image/png", Size: int64(i), SourceURL: str("https://x"), CreatedAt: int64(i % 2)}))
		n++
	}
	for i := range 3 {
		_, _, err := d.PutBlob(ctx, &driver.BlobMeta{Object: fmt.Sprintf("obj-%d", i), BlobRecord: driver.BlobRecord{
			Key: fmt.Sprintf("k/%d", i), Size: int64(i), ETag: fmt.Sprintf("%064d", i), ContentType: str("text/plain"),
			CustomMetadata: map[string]string{"a": "1", "b": "é"}, CreatedAt: int64(10 + i), UpdatedAt: int64(20 + i)}})
		require.NoError(t, err)
		n++
	}
	st := must(d.AcquireLock(ctx, driver.LockRequest{Key: "lk", Token: "holder", Lease: time.Hour})).of(t)
	require.True(t, st.Held)
	return n
}

// dumpAll collects a Dump, failing on its error.
func dumpAll(t *testing.T, p driver.Porter) []driver.Record {
	t.Helper()
	var out []driver.Record
	for r, err := range p.Dump(context.Background(), driver.DumpPosition{}) {
		require.NoError(t, err)
		out = append(out, r)
	}
	return out
}

// dumpJSON is a dump as sorted JSON lines, to compare two drivers' dumps
// whatever their orders.
func dumpJSON(t *testing.T, recs []driver.Record) []string {
	t.Helper()
	out := make([]string, len(recs))
	for i, r := range recs {
		b := must(r.MarshalJSON()).of(t)
		out[i] = string(b)
	}
	slices.Sort(out)
	return out
}

// sameReads asserts that every read of every store answers the same on a
// and b (JSON of the records, raw values compared as bytes by the dump).
func sameReads(t *testing.T, a, b driver.Driver) {
	t.Helper()
	ctx := context.Background()
	both := func(what string, f func(d driver.Driver) (any, error)) {
		t.Helper()
		x, err := f(a)
		require.NoError(t, err, what)
		y, err := f(b)
		require.NoError(t, err, what)
		jsonEq(t, x, y, what)
	}
	for i := range 5 {
		id := fmt.Sprintf("run-%d", i)
		both("run "+id, func(d driver.Driver) (any, error) { return d.GetRun(ctx, id) })
	}
	for _, th := range []string{"th-0", "th-1"} {
		both("active run", func(d driver.Driver) (any, error) { return d.ActiveRun(ctx, th) })
		both("thread runs", func(d driver.Driver) (any, error) { return d.ThreadRuns(ctx, th, nil, 100) })
		both("thread runs page", func(d driver.Driver) (any, error) {
			return d.ThreadRuns(ctx, th, &driver.Position{At: 100, ID: "run-0"}, 1)
		})
	}
	both("reclaimable", func(d driver.Driver) (any, error) { return d.ReclaimableRuns(ctx, 1000, nil, 100) })
	for i := range 3 {
		id := fmt.Sprintf("gen-%d", i)
		both("generation run", func(d driver.Driver) (any, error) { return d.GetGenerationRun(ctx, id) })
	}
	both("latest generation run", func(d driver.Driver) (any, error) { return d.LatestGenerationRun(ctx, "slot") })
	for i := range 6 {
		id := fmt.Sprintf("int-%d", i)
		both("interrupt", func(d driver.Driver) (any, error) { return d.GetInterrupt(ctx, id) })
	}
	for _, sc := range []driver.InterruptScope{{ThreadID: "th-0"}, {ThreadID: "th-0", PendingOnly: true}, {RunID: "run-0"}, {RunID: "run-1", PendingOnly: true}} {
		both(fmt.Sprintf("interrupts %+v", sc), func(d driver.Driver) (any, error) { return d.ListInterrupts(ctx, sc, nil, 100) })
	}
	for _, m := range [][2]string{{"a", "b"}, {"a", "bc"}, {"z", "k"}, {"ab", ""}} {
		both("metadata", func(d driver.Driver) (any, error) {
			if m[1] == "" {
				return d.GetMetadata(ctx, m[0], "x")
			}
			v, err := d.GetMetadata(ctx, m[0], m[1])
			return string(v), err
		})
	}
	for _, sc := range []driver.ArtifactScope{{RunID: "run-0"}, {RunID: "run-1"}, {ThreadID: "th-0"}} {
		both(fmt.Sprintf("artifacts %+v", sc), func(d driver.Driver) (any, error) { return d.ListArtifacts(ctx, sc, nil, 100) })
	}
	both("blobs", func(d driver.Driver) (any, error) {
		bs, err := d.ListBlobs(ctx, "k/", "", 100)
		var objs []string
		for _, m := range bs {
			objs = append(objs, m.Object)
		}
		return []any{bs, objs}, err
	})
}

func testPortRoundTrip(t *testing.T, newDriver NewDriver) {
	ctx := context.Background()
	c := &clock{fixed: epoch}
	a := newDriver(t, c.Now)
	pa := porter(t, a)
	n := fillAll(t, a)
	recs := dumpAll(t, pa)
	require.Len(t, recs, n, "one record per run, generation run, interrupt, metadata value, artifact and blob row")
	kinds := map[driver.RecordKind]int{}
	for _, r := range recs {
		kinds[r.Kind]++
	}
	require.Equal(t, map[driver.RecordKind]int{driver.KindRun: 5, driver.KindGenerationRun: 3, driver.KindInterrupt: 6,
		driver.KindMetadata: 3, driver.KindArtifact: 4, driver.KindBlob: 3}, kinds)

	b := newDriver(t, c.Now)
	pb := porter(t, b)
	stored := must(pb.Load(ctx, recs)).of(t)
	require.Equal(t, n, stored)
	require.Equal(t, dumpJSON(t, recs), dumpJSON(t, dumpAll(t, pb)), "the loaded driver dumps the same records, byte for byte")
	sameReads(t, a, b)

	// Locks and op tokens stay behind: the destination's lock is free, and
	// the source's batch token does not replay there.
	st := must(b.AcquireLock(ctx, driver.LockRequest{Key: "lk", Token: "other", Lease: time.Minute})).of(t)
	require.True(t, st.Held, "a lock lease was copied")
	require.NoError(t, b.CommitInterrupts(ctx, []driver.InterruptCommitEntry{{InterruptID: "int-0", Status: driver.InterruptCancelled}}, 400, "port-token"))
	got := must(b.GetInterrupt(ctx, "int-0")).of(t)
	require.Equal(t, driver.InterruptCancelled, got.Status, "the op token was copied: the batch replayed instead of committing")
}

func testPortLoadTwice(t *testing.T, newDriver NewDriver) {
	ctx := context.Background()
	c := &clock{fixed: epoch}
	a := newDriver(t, c.Now)
	pa := porter(t, a)
	fillAll(t, a)
	recs := dumpAll(t, pa)
	b := newDriver(t, c.Now)
	pb := porter(t, b)
	require.NoError(t, errOf(pb.Load(ctx, recs[:len(recs)/2]))) // a load killed halfway
	stored, err := pb.Load(ctx, recs)
	require.NoError(t, err)
	require.Equal(t, len(recs)-len(recs)/2, stored, "the rerun stores only what the first load lacked")
	stored, err = pb.Load(ctx, recs)
	require.NoError(t, err)
	require.Zero(t, stored, "a second load stores nothing")
	require.Equal(t, dumpJSON(t, recs), dumpJSON(t, dumpAll(t, pb)))
	sameReads(t, a, b)
}

func testPortConflict(t *testing.T, newDriver NewDriver) {
	ctx := context.Background()
	c := &clock{fixed: epoch}
	b := newDriver(t, c.Now)
	pb := porter(t, b)
	fillAll(t, b)
	before := dumpJSON(t, dumpAll(t, pb))
	fresh := driver.Record{Kind: driver.KindRun, Run: &driver.RunRecord{RunID: "run-new", ThreadID: "th-9", Status: driver.RunRunning, StartedAt: 1}}
	cases := []driver.Record{
		{Kind: driver.KindRun, Run: &driver.RunRecord{RunID: "run-0", ThreadID: "th-0", Status: driver.RunCompleted, StartedAt: 100}},
		{Kind: driver.KindInterrupt, Interrupt: &driver.InterruptRecord{InterruptID: "int-1", RunID: "run-1", ThreadID: "th-0", Status: driver.InterruptResolved, RequestedAt: 1, ResolvedAt: i64(300), Payload: raw(`{"q":1}`), Response: raw(`{ "ok" : true }`)}},
		{Kind: driver.KindMetadata, Metadata: &driver.MetadataEntry{Namespace: "a", Key: "b", Value: raw(`{"x":1}`)}},
		{Kind: driver.KindBlob, Blob: &driver.BlobMeta{Object: "another", BlobRecord: driver.BlobRecord{Key: "k/0", Size: 0, ETag: fmt.Sprintf("%064d", 0), ContentType: str("text/plain"), CustomMetadata: map[string]string{"a": "1", "b": "é"}, CreatedAt: 10, UpdatedAt: 20}}},
	}
	for _, bad := range cases {
		_, err := pb.Load(ctx, []driver.Record{fresh, bad})
		require.ErrorIs(t, err, driver.ErrRecordConflict, "%s %q", bad.Kind, bad.ID())
		require.Equal(t, before, dumpJSON(t, dumpAll(t, pb)), "a refused load wrote something")
	}
	_, err := pb.Load(ctx, []driver.Record{fresh, {Kind: driver.KindRun, Run: &driver.RunRecord{RunID: "run-new", ThreadID: "th-8", Status: driver.RunRunning, StartedAt: 1}}})
	require.ErrorIs(t, err, driver.ErrRecordConflict, "one batch naming a run twice with different content")
	// Every driver checks the batch and its repeats before the stored
	// content: a repeat is what it reports, though a stored conflict
	// comes first, and an invalid record beats a repeat before it.
	_, err = pb.Load(ctx, []driver.Record{cases[0], fresh, {Kind: driver.KindRun, Run: &driver.RunRecord{RunID: "run-new", ThreadID: "th-8", Status: driver.RunRunning, StartedAt: 1}}})
	require.ErrorContains(t, err, "comes twice", "the repeat, not run-0's stored conflict")
	_, err = pb.Load(ctx, []driver.Record{cases[0], {Kind: driver.KindRun}})
	require.False(t, errors.Is(err, driver.ErrRecordConflict), "an invalid record, not run-0's stored conflict: %v", err)
	require.NotEmpty(t, driver.Code(err), "untyped error %v", err)
	require.Equal(t, before, dumpJSON(t, dumpAll(t, pb)), "a refused load wrote something")
}

func testPortInvalid(t *testing.T, newDriver NewDriver) {
	ctx := context.Background()
	b := newDriver(t, (&clock{fixed: epoch}).Now)
	pb := porter(t, b)
	for _, bad := range []driver.Record{
		{Kind: "lock", Run: &driver.RunRecord{RunID: "r"}},
		{Kind: driver.KindRun},
		{Kind: driver.KindRun, Run: &driver.RunRecord{RunID: "r"}, Blob: &driver.BlobMeta{}},
		{Kind: driver.KindBlob, Blob: &driver.BlobMeta{BlobRecord: driver.BlobRecord{Key: "k"}}},
		{Kind: driver.KindMetadata, Metadata: &driver.MetadataEntry{Namespace: "a", Key: "b", Value: raw(`{`)}},
	} {
		_, err := pb.Load(ctx, []driver.Record{bad})
		require.Error(t, err)
		require.NotEmpty(t, driver.Code(err), "untyped error %v", err)
	}
	require.Empty(t, dumpAll(t, pb))
	// A record's JSON reads back as the same record, raw bytes kept.
	r := driver.Record{Kind: driver.KindInterrupt, Interrupt: &driver.InterruptRecord{InterruptID: "i", RunID: "r", ThreadID: "t", Status: driver.InterruptResolved,
		RequestedAt: 1, ResolvedAt: i64(2), Payload: raw("{ \"a\" :\n 1 }"), Response: raw("null")}}
	js := must(r.MarshalJSON()).of(t)
	var back driver.Record
	require.NoError(t, json.Unmarshal(js, &back))
	require.Contains(t, string(js), "{ \"a\" :\n 1 }")
	require.True(t, driver.Equal(r, back), "%s", js)
	require.Equal(t, "null", string(back.Interrupt.Response))
}

// dumpAfter collects a Dump resumed after at, failing on its error.
func dumpAfter(t *testing.T, p driver.Porter, at driver.DumpPosition) []driver.Record {
	t.Helper()
	var out []driver.Record
	for r, err := range p.Dump(context.Background(), at) {
		require.NoError(t, err)
		out = append(out, r)
	}
	return out
}

// testPortResume: a Dump resumed at the position of any record it yielded
// (through its cursor) yields exactly the rest; a dump taken in pieces of
// every size, each resumed where the last stopped, is the one dump; a
// position of a kind with no key starts that kind; and a bad cursor or
// position fails typed.
func testPortResume(t *testing.T, newDriver NewDriver) {
	c := &clock{fixed: epoch}
	a := newDriver(t, c.Now)
	pa := porter(t, a)
	n := fillAll(t, a)
	all := dumpAll(t, pa)
	require.Len(t, all, n)
	want := dumpLines(t, all)
	for i, r := range all {
		at := pa.PositionOf(r)
		require.Equal(t, r.Kind, at.Kind)
		back, err := driver.ParseCursor(at.Cursor())
		require.NoError(t, err)
		require.Equal(t, at, back, "the cursor of %s %q reads back", r.Kind, r.ID())
		require.Equal(t, want[i+1:], dumpLines(t, dumpAfter(t, pa, back)), "resumed after record %d (%s %q)", i, r.Kind, r.ID())
	}
	for size := 1; size <= n; size++ {
		var got []driver.Record
		at := driver.DumpPosition{}
		for {
			var piece []driver.Record
			for r, err := range pa.Dump(context.Background(), at) {
				require.NoError(t, err)
				piece = append(piece, r)
				if len(piece) == size {
					break
				}
			}
			got = append(got, piece...)
			if len(piece) < size {
				break
			}
			at = pa.PositionOf(piece[len(piece)-1])
			require.LessOrEqual(t, len(got), n, "pieces of %d repeat records", size)
		}
		require.Equal(t, want, dumpLines(t, got), "a dump in pieces of %d is the one dump", size)
	}
	for k, kind := range driver.Kinds {
		var rest []string
		for i, r := range all {
			if slices.Index(driver.Kinds, r.Kind) >= k {
				rest = want[i:]
				break
			}
		}
		require.Equal(t, rest, dumpLines(t, dumpAfter(t, pa, driver.DumpPosition{Kind: kind})), "a position of kind %s with no key starts that kind", kind)
	}
	for _, bad := range []driver.DumpPosition{{Kind: "lock"}, {Key: "x"}} {
		var errs []error
		for _, err := range pa.Dump(context.Background(), bad) {
			errs = append(errs, err)
		}
		require.Len(t, errs, 1, "%+v", bad)
		require.ErrorIs(t, errs[0], driver.ErrInvalidEntry, "%+v", bad)
	}
	for _, bad := range []string{"%%%", "eA", driver.DumpPosition{Kind: "lock", Key: "k"}.Cursor()} {
		_, err := driver.ParseCursor(bad)
		require.ErrorIs(t, err, driver.ErrInvalidEntry, "cursor %q", bad)
	}
}

// dumpLines is a dump as JSON lines in its order.
func dumpLines(t *testing.T, recs []driver.Record) []string {
	t.Helper()
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = string(must(r.MarshalJSON()).of(t))
	}
	return out
}

// RunPort runs the export and import cases alone, for a driver whose
// dump pages are made small by its own test, so that resuming crosses
// page boundaries.
func RunPort(t *testing.T, newDriver NewDriver) {
	runGroups(t, newDriver, []group{{"Port", portTests}})
}
