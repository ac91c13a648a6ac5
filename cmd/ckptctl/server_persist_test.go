package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/httpstore"
	pdriver "github.com/ckptstore/ckptstore/persist/driver"
	"github.com/ckptstore/ckptstore/storeurl"
)

// fillTenant writes records of every kind whose ids start with tag into
// d: runs, a generation run, interrupts, metadata, an artifact and a blob
// row (its object under the default blob prefix). It returns how many.
func fillTenant(t *testing.T, d pdriver.Driver, tag string, runs int) int {
	t.Helper()
	ctx := context.Background()
	for i := range runs {
		_, err := d.CreateOrResumeRun(ctx, &pdriver.RunRecord{RunID: fmt.Sprintf("%s-run-%d", tag, i), ThreadID: tag + "-th", Status: pdriver.RunRunning, StartedAt: int64(i)})
		must(t, err)
	}
	_, err := d.CreateOrResumeGenerationRun(ctx, &pdriver.GenerationRunRecord{RunID: tag + "-gen", ThreadID: tag + "-th", Activity: "image", Provider: "p", Model: "m", Status: pdriver.RunRunning, StartedAt: 1})
	must(t, err)
	for i := range 3 {
		must(t, d.CreateInterrupt(ctx, &pdriver.InterruptRecord{InterruptID: fmt.Sprintf("%s-int-%d", tag, i), RunID: tag + "-run-0", ThreadID: tag + "-th",
			Status: pdriver.InterruptPending, RequestedAt: int64(i), Payload: []byte(`{ "q" :  1 }`)}))
	}
	for i := range 4 {
		must(t, d.SetMetadata(ctx, tag+"-ns", fmt.Sprintf("k%d", i), []byte(fmt.Sprintf(`{"v" : %d}`, i))))
	}
	must(t, d.SaveArtifact(ctx, &pdriver.ArtifactRecord{ArtifactID: tag + "-art", RunID: tag + "-run-0", ThreadID: tag + "-th", Name: "n", MimeType: "text/plain", Size: 1, CreatedAt: 1}))
	_, _, err = d.PutBlob(ctx, &pdriver.BlobMeta{Object: "tanstack-blobs/" + tag + "-obj", BlobRecord: pdriver.BlobRecord{Key: tag + "/k", Size: 1, ETag: "e", CreatedAt: 1, UpdatedAt: 1}})
	must(t, err)
	return runs + 1 + 3 + 4 + 1 + 1
}

// persistLines is the sorted JSON lines of d's records.
func persistLines(t *testing.T, d pdriver.Driver) []string {
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

// exportLines is the sorted persistence lines of an export stream.
func exportLines(t *testing.T, stream string) []string {
	t.Helper()
	var out []string
	for r, err := range streamRecords(strings.NewReader(stream)) {
		must(t, err)
		b, err := r.MarshalJSON()
		must(t, err)
		out = append(out, string(b))
	}
	slices.Sort(out)
	return out
}

// TestServerPersist: with only a tenant's token, export through a
// ckptserver carries the tenant's persistence records (every kind, raw
// values byte for byte, across several export pages) and none of another
// tenant's; import through the server loads them into another tenant,
// and again loads nothing; copy server → server and server → a local
// store carries them and verifies; a differing record is refused (exit
// 1) and left as it is.
func TestServerPersist(t *testing.T) {
	t.Setenv(tokenEnv, "")
	ctx := context.Background()
	o, err := storeurl.Open(ctx, "mem", storeurl.Options{})
	must(t, err)
	tokens := map[string]string{}
	for _, ns := range []string{"a", "b", "c", "d", "e"} {
		tokens["tok-"+ns] = ns
	}
	srv := httptest.NewServer(httpstore.NewHandler(o, httpstore.HandlerOptions{Tokens: tokens}))
	t.Cleanup(srv.Close)
	url := srv.URL
	driverOf := func(ns string) pdriver.Driver {
		tn, err := o.Namespace(ns, ckptstore.Options{})
		must(t, err)
		return tn.Persistence
	}
	// More runs than one export page holds, so the export resumes.
	n := fillTenant(t, driverOf("a"), "a", httpstore.MaxExportRecords+20)
	fillTenant(t, driverOf("b"), "b", 3)
	want := persistLines(t, driverOf("a"))
	if len(want) != n {
		t.Fatalf("tenant a holds %d records, want %d", len(want), n)
	}

	h := newHarness(t)
	r := h.ok("export", "--store", url, "--token", "tok-a", "--progress", "0")
	got := exportLines(t, r.stdout)
	if !slices.Equal(got, want) {
		t.Fatalf("export through the server with tenant a's token holds %d persistence records, the backend's namespace a %d (or they differ)", len(got), len(want))
	}
	for _, l := range got {
		if strings.Contains(l, `"b-`) || strings.Contains(l, "b/k") {
			t.Fatalf("tenant a's export holds tenant b's record %s", l)
		}
	}
	if !strings.Contains(r.stderr, fmt.Sprintf("export: 0 threads, 0 checkpoints, %d persistence records", n)) {
		t.Errorf("export does not count the %d persistence records:\n%s", n, r.stderr)
	}

	// import into tenant c, twice.
	h.stdin = r.stdout
	r = h.ok("import", "--store", url, "--token", "tok-c", "--progress", "0")
	if !strings.Contains(r.stdout, fmt.Sprintf("persistence: %d records, %d loaded", n, n)) {
		t.Errorf("import through the server:\n%s", r.stdout)
	}
	if got := persistLines(t, driverOf("c")); !slices.Equal(got, want) {
		t.Errorf("tenant c holds %d records after the import, tenant a %d (or they differ)", len(got), len(want))
	}
	r = h.ok("import", "--store", url, "--token", "tok-c", "--progress", "0")
	if !strings.Contains(r.stdout, fmt.Sprintf("persistence: %d records, 0 loaded, %d already present", n, n)) {
		t.Errorf("a second import through the server:\n%s", r.stdout)
	}

	// copy server → server (tenant a into d), verified.
	r = h.ok("copy", "--from", url, "--from-token", "tok-a", "--to", url, "--to-token", "tok-d", "--verify", "--progress", "0")
	if !strings.Contains(r.stdout, fmt.Sprintf("verify: equal: 0 threads, 0 checkpoints, 0 blob keys, %d persistence records", n)) {
		t.Errorf("copy server → server --verify:\n%s", r.stdout)
	}
	if got := persistLines(t, driverOf("d")); !slices.Equal(got, want) {
		t.Errorf("tenant d holds %d records after the copy, tenant a %d (or they differ)", len(got), len(want))
	}
	// copy server → a local store, and back to the server's empty tenant e, verified.
	local := newMemPersist()
	h.persists["local"] = local
	r = h.ok("copy", "--from", url, "--token", "tok-a", "--to", h.add("local", newMem()), "--verify", "--progress", "0")
	if !strings.Contains(r.stdout, "verify: equal") {
		t.Errorf("copy server → local --verify:\n%s", r.stdout)
	}
	if got := persistLines(t, local); !slices.Equal(got, want) {
		t.Errorf("the local store holds %d records after the copy, tenant a %d (or they differ)", len(got), len(want))
	}
	r = h.ok("copy", "--from", "test:local", "--to", url, "--to-token", "tok-e", "--verify", "--progress", "0")
	if !strings.Contains(r.stdout, "verify: equal") {
		t.Fatalf("copy local → server --verify:\n%s", r.stdout)
	}
	// copy --verify against a server finds an extra record; a differing
	// one is refused.
	must(t, driverOf("d").SetMetadata(ctx, "a-ns", "extra", []byte(`1`)))
	h.fails(1, fmt.Sprintf("the destination holds %d persistence records, the source %d", n+1, n),
		"copy", "--from", url, "--from-token", "tok-a", "--to", url, "--to-token", "tok-d", "--verify", "--progress", "0")
	must(t, driverOf("d").SetMetadata(ctx, "a-ns", "k1", []byte(`"changed"`)))
	h.fails(1, `metadata "4:a-nsk1": refused: the destination holds another record`, "copy", "--from", url, "--from-token", "tok-a", "--to", url, "--to-token", "tok-d", "--verify", "--progress", "0")

	// A record tenant c holds with other content: refused, exit 1, c's
	// record unchanged, the others loaded.
	p := newMemPersist()
	must(t, p.SetMetadata(ctx, "a-ns", "k0", []byte(`"other"`)))
	must(t, p.SetMetadata(ctx, "c-ns", "new", []byte(`2`)))
	h.persists["p"] = p
	h.stdin = h.ok("export", "--store", h.add("p", newMem()), "--progress", "0").stdout
	h.fails(1, "refused", "import", "--store", url, "--token", "tok-c", "--progress", "0")
	v, err := driverOf("c").GetMetadata(ctx, "a-ns", "k0")
	must(t, err)
	if string(v) != `{"v" : 0}` {
		t.Errorf("the refused import changed c's record to %s", v)
	}
	if v, err := driverOf("c").GetMetadata(ctx, "c-ns", "new"); err != nil || string(v) != "2" {
		t.Errorf("the record beside the refused one was not loaded: %s, %v", v, err)
	}
}
