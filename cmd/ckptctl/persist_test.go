package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/blobs"
	"github.com/ckptstore/ckptstore/fdbstore"
	"github.com/ckptstore/ckptstore/fdbstore/kv"
	"github.com/ckptstore/ckptstore/fdbstore/kv/memkv"
	"github.com/ckptstore/ckptstore/internal/redistest"
	"github.com/ckptstore/ckptstore/persist"
	pdriver "github.com/ckptstore/ckptstore/persist/driver"
	"github.com/ckptstore/ckptstore/redisstore"
	"github.com/ckptstore/ckptstore/storeurl"
)

// fillPersist writes a tenant's persistence state through the portable
// stores on d and bucket: runs (running, detached, finished with an error
// and raw usage), generation runs, interrupts pending, resolved, cancelled
// and committed in a batch, metadata, artifacts, blobs with bytes, and a
// held lock. It returns the number of records.
func fillPersist(t testing.TB, d pdriver.Driver, bucket blobs.Bucket) int {
	t.Helper()
	ctx := context.Background()
	s, err := persist.New(d, persist.Options{Bucket: bucket, Now: func() time.Time { return time.UnixMilli(1_700_000_000_000) }})
	must(t, err)
	n := 0
	for i := range 12 {
		_, err := s.Runs.CreateOrResume(ctx, persist.RunStart{RunID: fmt.Sprintf("run-%02d", i), ThreadID: fmt.Sprintf("chat-%d", i%3), StartedAt: int64(1000 + i)})
		must(t, err)
		n++
	}
	must(t, s.Runs.Update(ctx, "run-01", persist.RunPatch{DetachedSince: persist.Set[int64](1500), SandboxKey: persist.Set("sb/1")}))
	must(t, s.Runs.Update(ctx, "run-02", persist.RunPatch{Status: persist.Set(persist.RunFailed), FinishedAt: persist.Set[int64](2000),
		Error: persist.Set(persist.RunError{Message: "boom"}), Usage: persist.Set(json.RawMessage("{ \"tokens\" :\n 12 }"))}))
	for i := range 3 {
		_, err := s.GenerationRuns.CreateOrResume(ctx, persist.GenerationRunStart{RunID: fmt.Sprintf("gen-%d", i), ThreadID: "slot", Activity: "image", Provider: "p", Model: "m", StartedAt: int64(i)})
		must(t, err)
		n++
	}
	must(t, s.GenerationRuns.Update(ctx, "gen-1", persist.GenerationRunPatch{Status: persist.Set(persist.RunCompleted), Result: persist.Set(json.RawMessage(`{"id": "x"}`))}))
	for i := range 8 {
		must(t, s.Interrupts.Create(ctx, persist.NewInterrupt{InterruptID: fmt.Sprintf("int-%d", i), RunID: fmt.Sprintf("run-%02d", i%2), ThreadID: "chat-0", RequestedAt: int64(i), Payload: json.RawMessage(`{"tool": "approve"}`)}))
		n++
	}
	must(t, s.Interrupts.Resolve(ctx, "int-1", json.RawMessage(`{"approved": true}`)))
	must(t, s.Interrupts.Cancel(ctx, "int-2"))
	must(t, s.Interrupts.CommitBatch(ctx, []persist.InterruptCommitEntry{{InterruptID: "int-3", Status: persist.InterruptResolved, Response: json.RawMessage(`null`)}, {InterruptID: "int-4", Status: persist.InterruptCancelled}}))
	for i := range 5 {
		must(t, s.Metadata.Set(ctx, fmt.Sprintf("ns-%d", i%2), fmt.Sprintf("key-%d", i), json.RawMessage(fmt.Sprintf(`{"v": %d}`, i))))
		n++
	}
	for i := range 4 {
		must(t, s.Artifacts.Save(ctx, &persist.ArtifactRecord{ArtifactID: fmt.Sprintf("art-%d", i), RunID: "run-00", ThreadID: "chat-0", Name: "a.png", MimeType: "image/png", Size: 3, CreatedAt: int64(i)}))
		n++
	}
	for i := range 4 {
		_, err := s.Blobs.Put(ctx, fmt.Sprintf("artifacts/run-00/art-%d", i), strings.NewReader(strings.Repeat(fmt.Sprint(i), 1000*(i+1))), persist.BlobPutOptions{ContentType: ptrTo("image/png"), CustomMetadata: map[string]string{"i": fmt.Sprint(i)}})
		must(t, err)
		n++
	}
	st, err := d.AcquireLock(ctx, pdriver.LockRequest{Key: "sandbox/1", Token: "live-holder", Lease: time.Hour})
	must(t, err)
	if !st.Held {
		t.Fatal("the lock was not granted")
	}
	return n
}

func ptrTo[T any](v T) *T { return &v }

// dumpLines is d's records as sorted JSON lines.
func dumpLines(t testing.TB, d pdriver.Driver) []string {
	t.Helper()
	var out []string
	for r, err := range d.(pdriver.Porter).Dump(context.Background(), pdriver.DumpPosition{}) {
		must(t, err)
		b, err := r.MarshalJSON()
		must(t, err)
		out = append(out, string(b))
	}
	slices.Sort(out)
	return out
}

// blobBytes reads every blob of d through the portable layer on bucket.
func blobBytes(t testing.TB, d pdriver.Driver, bucket blobs.Bucket) map[string]string {
	t.Helper()
	ctx := context.Background()
	s, err := persist.New(d, persist.Options{Bucket: bucket})
	must(t, err)
	page, err := s.Blobs.List(ctx, persist.BlobListOptions{})
	must(t, err)
	out := map[string]string{}
	for _, r := range page.Objects {
		o, err := s.Blobs.Get(ctx, r.Key, nil)
		must(t, err)
		b, err := io.ReadAll(o.Body)
		must(t, err)
		o.Body.Close()
		out[r.Key] = string(b)
	}
	return out
}

var persistSummaryRE = regexp.MustCompile(`persistence: (\d+) records, (\d+) loaded, (\d+) already present, (\d+) refused(?:; blob bytes: (\d+) objects copied \((\d+) bytes\), (\d+) already there)?`)

// persistSummary is the numbers of the persistence summary line.
func persistSummary(t testing.TB, out string) []int {
	t.Helper()
	m := persistSummaryRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no persistence summary in %q", out)
	}
	var n []int
	for _, s := range m[1:] {
		v, _ := strconv.Atoi(s)
		n = append(n, v)
	}
	return n
}

// TestCopyPersistenceRedisToMemkvAndBack moves a tenant's whole state —
// checkpoints and every persistence store, blob bytes included — from
// Redis into fdbstore and fdbstore on a memkv engine that injects commit
// faults, interrupted after two persistence batches and resumed, then back
// into Redis under another prefix; each copy verifies, the checkers are
// clean on every side, and the bytes read back the same.
func TestCopyPersistenceRedisToMemkvAndBack(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	srcURL := "redis://" + srv.Addr + "/0?prefix=src"
	backURL := "redis://" + srv.Addr + "/0?prefix=back"
	so, err := storeurl.Open(ctx, srcURL, storeurl.Options{})
	must(t, err)
	t.Cleanup(func() { _ = so.Close() })
	seed(t, so.Store, 20)
	srcP := so.Persistence
	h := newHarness(t)
	srcBucket, mkBucket, backBucket := blobs.NewMem(blobs.MemOptions{}), blobs.NewMem(blobs.MemOptions{}), blobs.NewMem(blobs.MemOptions{})
	h.buckets["mem://src"], h.buckets["mem://mk"], h.buckets["mem://back"] = srcBucket, mkBucket, backBucket
	n := fillPersist(t, srcP, srcBucket)
	want := dumpLines(t, srcP)
	if len(want) != n {
		t.Fatalf("the source dumps %d records, want %d", len(want), n)
	}

	mk, db := newMemkvStore(t, faults(7))
	mkP, err := fdbstore.NewPersistence(db, fdbstore.PersistenceOptions{})
	must(t, err)
	mkURL := h.add("memkv", mk)
	h.persists["memkv"] = mkP

	// Interrupted after the second persistence batch (batches of 4).
	cctx, cancel := context.WithCancel(ctx)
	batches := 0
	h.afterBatch = func() error {
		if len(dumpLines(t, mkP)) > 0 { // a persistence batch
			if batches++; batches == 2 {
				cancel()
			}
		}
		return nil
	}
	r := h.runCtx(cctx, "copy", "--from", srcURL, "--to", mkURL, "--batch", "4", "--bucket", "mem://src", "--to-bucket", "mem://mk")
	cancel()
	h.afterBatch = nil
	if r.code != 1 || !strings.Contains(r.stderr, "interrupted") {
		t.Fatalf("interrupted copy: %v", r)
	}
	part := len(dumpLines(t, mkP))
	if part == 0 || part >= n {
		t.Fatalf("the interrupted copy left %d of %d records", part, n)
	}
	r = h.ok("copy", "--from", srcURL, "--to", mkURL, "--batch", "4", "--bucket", "mem://src", "--to-bucket", "mem://mk", "--verify")
	if s := persistSummary(t, r.stdout); s[0] != n || s[1]+s[2] != n || s[2] < part || s[3] != 0 || s[4]+s[6] != 4 {
		t.Errorf("resumed copy: %v\n%v", s, r)
	}
	if !strings.Contains(r.stdout, fmt.Sprintf("%d persistence records", n)) {
		t.Errorf("verify: %v", r)
	}
	if got := dumpLines(t, mkP); !slices.Equal(got, want) {
		t.Errorf("memkv holds other records:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if db.Stats().InjectedFaults == 0 {
		t.Error("memkv injected no fault")
	}
	must(t, db.SetFaults(memkv.Faults{}))
	h.ok("check", "--store", mkURL)

	// Rerun: nothing to do.
	r = h.ok("copy", "--from", srcURL, "--to", mkURL, "--batch", "4", "--bucket", "mem://src", "--to-bucket", "mem://mk")
	if s := persistSummary(t, r.stdout); s[1] != 0 || s[2] != n || s[4] != 0 || s[6] != 4 {
		t.Errorf("a second copy wrote: %v", s)
	}

	// And back into Redis.
	r = h.ok("copy", "--from", mkURL, "--to", backURL, "--bucket", "mem://mk", "--to-bucket", "mem://back", "--verify")
	if s := persistSummary(t, r.stdout); s[1] != n || s[4] != 4 {
		t.Errorf("copy back: %v", s)
	}
	bo, err := storeurl.Open(ctx, backURL, storeurl.Options{})
	must(t, err)
	t.Cleanup(func() { _ = bo.Close() })
	backP := bo.Persistence
	if got := dumpLines(t, backP); !slices.Equal(got, want) {
		t.Errorf("the copy back holds other records")
	}
	equalStores(t, so.Store, bo.Store)
	wantBytes := blobBytes(t, srcP, srcBucket)
	if len(wantBytes) != 4 {
		t.Fatalf("the source reads %d blobs", len(wantBytes))
	}
	for name, got := range map[string]map[string]string{"memkv": blobBytes(t, mkP, mkBucket), "back": blobBytes(t, backP, backBucket)} {
		if fmt.Sprint(got) != fmt.Sprint(wantBytes) {
			t.Errorf("%s reads other blob bytes", name)
		}
	}
	for _, url := range []string{srcURL, backURL} {
		if r := h.ok("check", "--store", url); !strings.Contains(r.stdout, "no broken invariant") {
			t.Errorf("check %s: %v", url, r)
		}
	}
	// The live lock stayed behind: the copy's lock is free.
	st, err := backP.AcquireLock(ctx, pdriver.LockRequest{Key: "sandbox/1", Token: "new-holder", Lease: time.Minute})
	must(t, err)
	if !st.Held {
		t.Error("a lock lease was copied")
	}

	// check sees a broken persistence key through the same interface.
	must(t, db.Transact(ctx, func(tr kv.Transaction) error {
		tr.Set([]byte(fdbstore.DefaultPersistPrefix+"\x02stray\x00"), []byte("x"))
		return nil
	}))
	if r := h.fails(1, "1 broken invariants", "check", "--store", mkURL); !strings.Contains(r.stdout, "persistence: ") {
		t.Errorf("check did not report the persistence key: %v", r)
	}
}

// TestExportImportPersistence: export writes the persistence records after
// the threads, import loads them (twice: the second loads nothing), a
// differing destination record is refused and left, and a malformed record
// line exits 2.
func TestExportImportPersistence(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	srcP := newMemPersist()
	dstP := newMemPersist()
	srcURL, dstURL := h.add("src", newMem()), h.add("dst", newMem())
	h.persists["src"], h.persists["dst"] = srcP, dstP
	seed(t, h.stores["src"], 3)
	n := fillPersist(t, srcP, blobs.NewMem(blobs.MemOptions{}))
	out := filepath.Join(t.TempDir(), "x.jsonl")
	r := h.ok("export", "--store", srcURL, "--out", out)
	if !strings.Contains(r.stderr, fmt.Sprintf("%d persistence records", n)) {
		t.Errorf("export: %v", r)
	}
	b, err := os.ReadFile(out)
	must(t, err)
	recs := 0
	for _, err := range streamRecords(bytes.NewReader(b)) {
		must(t, err)
		recs++
	}
	if recs != n || !bytes.Contains(b, []byte("{ \"tokens\" :\n 12 }")) {
		t.Fatalf("the stream holds %d records (want %d), raw bytes kept: %v", recs, n, bytes.Contains(b, []byte("\"tokens\" :\n")))
	}
	r = h.ok("import", "--store", dstURL, "--in", out)
	if s := persistSummary(t, r.stdout); s[1] != n {
		t.Errorf("import: %v", s)
	}
	if got, want := dumpLines(t, dstP), dumpLines(t, srcP); !slices.Equal(got, want) {
		t.Errorf("the import holds other records")
	}
	equalStores(t, h.stores["src"], h.stores["dst"])
	r = h.ok("import", "--store", dstURL, "--in", out)
	if s := persistSummary(t, r.stdout); s[1] != 0 || s[2] != n {
		t.Errorf("second import: %v", s)
	}

	// A destination whose metadata value differs: that record is refused
	// and kept, the others load.
	other := newMemPersist()
	h.add("other", newMem())
	h.persists["other"] = other
	must(t, other.SetMetadata(ctx, "ns-0", "key-0", json.RawMessage(`"mine"`)))
	r = h.fails(1, "refused", "import", "--store", "test:other", "--in", out)
	if s := persistSummary(t, r.stdout); s[1] != n-1 || s[3] != 1 {
		t.Errorf("import over a differing record: %v\n%v", s, r)
	}
	if v, _ := other.GetMetadata(ctx, "ns-0", "key-0"); string(v) != `"mine"` {
		t.Errorf("the differing record was overwritten: %s", v)
	}
	// A malformed record is bad input.
	h.stdin = `{"persist":"run","record":{"runId":"r"}}` + "\n"
	h.fails(2, "INVALID", "import", "--store", dstURL)
	h.stdin = `{"persist":"lock","record":{}}` + "\n"
	h.fails(2, "unknown record kind", "import", "--store", dstURL)
}

// TestCopyBucketFlags: --bucket and --to-bucket go together.
func TestCopyBucketFlags(t *testing.T) {
	h := newHarness(t)
	a, b := h.add("a", newMem()), h.add("b", newMem())
	h.fails(2, "go together", "copy", "--from", a, "--to", b, "--bucket", "mem://")
	h.fails(2, "same bucket", "copy", "--from", a, "--to", b, "--bucket", "mem://x", "--to-bucket", "mem://x")
}

func newMemPersist() pdriver.Driver {
	o, err := storeurl.Open(context.Background(), "mem", storeurl.Options{})
	if err != nil {
		panic(err)
	}
	return o.Persistence
}

// TestCopyNamespace moves one ckptserver tenant (a namespace) between two
// Redis key spaces with --namespace: its checkpoints and persistence
// records arrive, every key the copy wrote lies in the tenant's hash tag
// of the destination, and the source's other tenant stays behind.
func TestCopyNamespace(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	srcURL := "redis://" + srv.Addr + "/0?prefix=nsrc"
	dstURL := "redis://" + srv.Addr + "/0?prefix=ndst"
	so, err := storeurl.Open(ctx, srcURL, storeurl.Options{})
	must(t, err)
	t.Cleanup(func() { _ = so.Close() })
	for _, tenant := range []string{"tenant{a}", "other"} {
		ten, err := so.Namespace(tenant, ckptstore.Options{})
		must(t, err)
		seed(t, ten.Store, 3)
		fillPersist(t, ten.Persistence, blobs.NewMem(blobs.MemOptions{}))
	}
	h := newHarness(t)
	r := h.ok("copy", "--namespace", "tenant{a}", "--from", srcURL, "--to", dstURL, "--verify")
	if !strings.Contains(r.stdout, "verify: equal: 5 threads") {
		t.Errorf("copy: %v", r)
	}
	keys, err := so.Handle.(redis.UniversalClient).Keys(ctx, "{ndst*").Result()
	must(t, err)
	tag := "{" + redisstore.NamespacePrefix("ndst", "tenant{a}") + "}:"
	persistKeys := 0
	for _, k := range keys {
		if !strings.HasPrefix(k, tag) {
			t.Errorf("the copy wrote %q, outside the tenant's key space %q", k, tag)
		}
		if strings.HasPrefix(k, tag+"p:") {
			persistKeys++
		}
	}
	if persistKeys == 0 {
		t.Error("no persistence key arrived")
	}
	h.ok("check", "--namespace", "tenant{a}", "--store", dstURL)
	h.fails(2, "--namespace", "threads", "--namespace", "\xff", "--store", dstURL)
}

// BenchmarkCopyPersistenceRedisToMemkv copies 10,000 persistence records (2,500 each of
// runs, interrupts, metadata values and artifacts, with their indexes)
// from Redis into fdbstore on memkv with the default batches, and reports
// records per second.
func BenchmarkCopyPersistenceRedisToMemkv(b *testing.B) {
	ctx := context.Background()
	srv := redistest.Start(b)
	srcURL := "redis://" + srv.Addr + "/0?prefix=bench"
	so, err := storeurl.Open(ctx, srcURL, storeurl.Options{})
	must(b, err)
	b.Cleanup(func() { _ = so.Close() })
	p := so.Persistence
	const n = 2500
	for i := range n {
		id := fmt.Sprintf("r-%05d", i)
		_, err := p.CreateOrResumeRun(ctx, &pdriver.RunRecord{RunID: id, ThreadID: fmt.Sprintf("t-%d", i%100), Status: pdriver.RunRunning, StartedAt: int64(i), Usage: json.RawMessage(`{"tokens": 1234}`)})
		must(b, err)
		must(b, p.CreateInterrupt(ctx, &pdriver.InterruptRecord{InterruptID: "i-" + id, RunID: id, ThreadID: "t", Status: pdriver.InterruptPending, RequestedAt: int64(i), Payload: json.RawMessage(`{"tool":"x"}`)}))
		must(b, p.SetMetadata(ctx, "ns", id, json.RawMessage(`{"v":1}`)))
		must(b, p.SaveArtifact(ctx, &pdriver.ArtifactRecord{ArtifactID: "a-" + id, RunID: id, ThreadID: "t", Name: "n", MimeType: "text/plain", Size: 1, CreatedAt: int64(i)}))
	}
	h := newHarness(b)
	db := memkv.New()
	st, err := fdbstore.New(db, fdbstore.Options{})
	must(b, err)
	d, err := fdbstore.NewPersistence(db, fdbstore.PersistenceOptions{})
	must(b, err)
	mkURL := h.add("mk", st)
	h.persists["mk"] = d
	b.Run("redis-to-memkv", func(b *testing.B) {
		for range b.N {
			{ // an empty destination each time
				b.StopTimer()
				must(b, db.Transact(ctx, func(tr kv.Transaction) error {
					tr.ClearRange(kv.KeyRange{Begin: []byte{}, End: []byte{0xff}})
					return nil
				}))
				b.StartTimer()
			}
			start := time.Now()
			r := h.ok("copy", "--from", srcURL, "--to", mkURL)
			if s := persistSummary(b, r.stdout); s[1] != 4*n {
				b.Fatalf("copy: %v", s)
			}
			b.ReportMetric(float64(4*n)/time.Since(start).Seconds(), "records/s")
		}
	})
	backs := 0
	b.Run("memkv-to-redis", func(b *testing.B) {
		for range b.N {
			backs++
			dst := fmt.Sprintf("redis://%s/0?prefix=benchback%d", srv.Addr, backs)
			start := time.Now()
			r := h.ok("copy", "--from", mkURL, "--to", dst)
			if s := persistSummary(b, r.stdout); s[1] != 4*n {
				b.Fatalf("copy back: %v", s)
			}
			b.ReportMetric(float64(4*n)/time.Since(start).Seconds(), "records/s")
		}
	})
}
