package httpstore_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/httpstore"
	"github.com/ckptstore/ckptstore/internal/redistest"
	pdriver "github.com/ckptstore/ckptstore/persist/driver"
	"github.com/ckptstore/ckptstore/storeurl"
)

// fillTenant writes runs, interrupts, metadata and an artifact whose ids
// start with tag into d, and returns how many records.
func fillTenant(t *testing.T, d pdriver.Driver, tag string) int {
	t.Helper()
	ctx := context.Background()
	for i := range 5 {
		_, err := d.CreateOrResumeRun(ctx, &pdriver.RunRecord{RunID: fmt.Sprintf("%s-run-%d", tag, i), ThreadID: tag + "-th", Status: pdriver.RunRunning, StartedAt: int64(i)})
		require.NoError(t, err)
	}
	for i := range 2 {
		require.NoError(t, d.CreateInterrupt(ctx, &pdriver.InterruptRecord{InterruptID: fmt.Sprintf("%s-int-%d", tag, i), RunID: tag + "-run-0", ThreadID: tag + "-th",
			Status: pdriver.InterruptPending, RequestedAt: int64(i), Payload: []byte(`{ "q" : 1 }`)}))
	}
	for i := range 3 {
		require.NoError(t, d.SetMetadata(ctx, tag+"-ns", fmt.Sprintf("k%d", i), []byte(fmt.Sprintf(`{"v": %d}`, i))))
	}
	require.NoError(t, d.SaveArtifact(ctx, &pdriver.ArtifactRecord{ArtifactID: tag + "-art", RunID: tag + "-run-0", ThreadID: tag + "-th", Name: "n", MimeType: "text/plain", Size: 1, CreatedAt: 1}))
	return 5 + 2 + 3 + 1
}

// lines is recs as JSON lines (Record.MarshalJSON), in order.
func lines(t *testing.T, recs []pdriver.Record) []string {
	t.Helper()
	out := make([]string, len(recs))
	for i, r := range recs {
		b, err := r.MarshalJSON()
		require.NoError(t, err)
		out[i] = string(b)
	}
	return out
}

// dumpOf is every record of d's Dump.
func dumpOf(t *testing.T, d pdriver.Driver) []pdriver.Record {
	t.Helper()
	var out []pdriver.Record
	for r, err := range d.(pdriver.Porter).Dump(context.Background(), pdriver.DumpPosition{}) {
		require.NoError(t, err)
		out = append(out, r)
	}
	return out
}

// TestPersistExportImport: on a real redis-server shared by three
// tenants, persist/export pages through exactly the caller's records (the
// backend's dump of its namespace, byte for byte, and none of another
// tenant's), whatever the page size; persist/import loads them into
// another tenant, idempotently; a differing record is
// PERSIST_RECORD_CONFLICT (409) and a bad cursor, limit or blob object
// PERSIST_INVALID_ENTRY.
func TestPersistExportImport(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	o, err := storeurl.Open(ctx, "redis://"+srv.Addr, storeurl.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = o.Close() })
	hs := httptest.NewServer(httpstore.NewHandler(o, httpstore.HandlerOptions{Tokens: map[string]string{"tok-a": "a", "tok-b": "b", "tok-c": "c"}}))
	t.Cleanup(hs.Close)
	client := func(tok string) *httpstore.Client {
		c, err := httpstore.NewClient(hs.URL, httpstore.ClientOptions{Token: tok})
		require.NoError(t, err)
		return c
	}
	driverOf := func(ns string) pdriver.Driver {
		tn, err := o.Namespace(ns, ckptstore.Options{})
		require.NoError(t, err)
		return tn.Persistence
	}
	da, db, dc := driverOf("a"), driverOf("b"), driverOf("c")
	n := fillTenant(t, da, "a")
	fillTenant(t, db, "b")
	want := lines(t, dumpOf(t, da))
	require.Len(t, want, n)

	ca := client("tok-a")
	for _, limit := range []int{0, 1, 2, 3, n - 1, n, 1000} {
		var got []pdriver.Record
		cursor, pages := "", 0
		for {
			recs, next, err := ca.ExportPersistence(ctx, cursor, limit)
			require.NoError(t, err)
			pages++
			got = append(got, recs...)
			if next == "" {
				break
			}
			require.NotEmpty(t, recs, "a page before the last is empty")
			cursor = next
			require.LessOrEqual(t, pages, n+1, "the pages never end")
		}
		require.Equal(t, want, lines(t, got), "tenant a's export in pages of %d", limit)
		if limit > 0 {
			require.Equal(t, (n+limit-1)/limit, pages, "pages of %d: the last page says it is the last", limit)
		}
		for _, r := range got {
			require.NotContains(t, r.ID(), "b-", "tenant a's export holds tenant b's %s", r.Kind)
		}
	}

	// Import into tenant c, twice: the second stores nothing.
	all, _, err := ca.ExportPersistence(ctx, "", 1000)
	require.NoError(t, err)
	cc := client("tok-c")
	loaded, err := cc.ImportPersistence(ctx, all)
	require.NoError(t, err)
	require.Equal(t, n, loaded)
	loaded, err = cc.ImportPersistence(ctx, all)
	require.NoError(t, err)
	require.Zero(t, loaded, "an import of records held already stores nothing")
	require.Equal(t, want, lines(t, dumpOf(t, dc)), "tenant c holds tenant a's records, byte for byte")
	require.Len(t, dumpOf(t, db), n, "tenant b's records are untouched")

	// A record c holds with other content: 409, typed, nothing written.
	i := slices.IndexFunc(all, func(r pdriver.Record) bool { return r.Kind == pdriver.KindMetadata })
	changed := *all[i].Metadata
	changed.Value = []byte(`"other"`)
	fresh := pdriver.Record{Kind: pdriver.KindMetadata, Metadata: &pdriver.MetadataEntry{Namespace: "c-ns", Key: "new", Value: []byte(`1`)}}
	_, err = cc.ImportPersistence(ctx, []pdriver.Record{fresh, {Kind: pdriver.KindMetadata, Metadata: &changed}})
	require.ErrorIs(t, err, pdriver.ErrRecordConflict)
	var he *httpstore.Error
	require.True(t, errors.As(err, &he))
	require.Equal(t, 409, he.Status)
	require.Equal(t, pdriver.CodeRecordConflict, he.Code)
	v, err := dc.GetMetadata(ctx, "c-ns", "new")
	require.NoError(t, err)
	require.Nil(t, v, "a refused import wrote a record")

	// Bad input: typed, nothing read or written.
	_, _, err = ca.ExportPersistence(ctx, "not a cursor", 0)
	require.ErrorIs(t, err, pdriver.ErrInvalidEntry)
	_, _, err = ca.ExportPersistence(ctx, pdriver.DumpPosition{Kind: "lock", Key: "x"}.Cursor(), 0)
	require.ErrorIs(t, err, pdriver.ErrInvalidEntry)
	_, _, err = ca.ExportPersistence(ctx, "", httpstore.MaxExportRecords+1)
	require.ErrorIs(t, err, pdriver.ErrInvalidEntry)
	_, err = cc.ImportPersistence(ctx, make([]pdriver.Record, httpstore.MaxImportRecords+1))
	require.ErrorIs(t, err, pdriver.ErrInvalidEntry)
	outside := pdriver.Record{Kind: pdriver.KindBlob, Blob: &pdriver.BlobMeta{Object: "cp/some-checkpoint", BlobRecord: pdriver.BlobRecord{Key: "k", Size: 1, ETag: "e", CreatedAt: 1, UpdatedAt: 1}}}
	_, err = cc.ImportPersistence(ctx, []pdriver.Record{outside})
	require.ErrorIs(t, err, pdriver.ErrInvalidEntry, "a blob row naming an object outside the blob prefix")
	m, err := dc.GetBlob(ctx, "k")
	require.NoError(t, err)
	require.Nil(t, m)
}

// TestPersistExportPageBytes: a page stops before its records pass
// MaxExportBytes, and a record larger than that comes alone, so no reply
// grows with the records' sizes beyond one record.
func TestPersistExportPageBytes(t *testing.T) {
	ctx := context.Background()
	o, err := storeurl.Open(ctx, "mem", storeurl.Options{})
	require.NoError(t, err)
	hs := httptest.NewServer(httpstore.NewHandler(o, httpstore.HandlerOptions{Tokens: map[string]string{"tok": "t"}}))
	t.Cleanup(hs.Close)
	tn, err := o.Namespace("t", ckptstore.Options{})
	require.NoError(t, err)
	d := tn.Persistence
	mib := `"` + strings.Repeat("x", 1<<20) + `"`
	for i := range 7 {
		require.NoError(t, d.SetMetadata(ctx, "ns", fmt.Sprintf("k%d", i), []byte(mib)))
	}
	huge := `"` + strings.Repeat("y", httpstore.MaxExportBytes+1) + `"`
	require.NoError(t, d.SetMetadata(ctx, "ns", "k7", []byte(huge)))
	c, err := httpstore.NewClient(hs.URL, httpstore.ClientOptions{Token: "tok"})
	require.NoError(t, err)
	var sizes []int
	cursor, total := "", 0
	for {
		recs, next, err := c.ExportPersistence(ctx, cursor, 0)
		require.NoError(t, err)
		size := 0
		for _, l := range lines(t, recs) {
			size += len(l)
		}
		require.True(t, size <= httpstore.MaxExportBytes || len(recs) == 1, "a page of %d records holds %d bytes", len(recs), size)
		sizes = append(sizes, len(recs))
		total += len(recs)
		if next == "" {
			break
		}
		cursor = next
	}
	require.Equal(t, 8, total)
	require.Equal(t, []int{3, 3, 1, 1}, sizes, "pages of three 1 MiB values (a fourth passes 4 MiB), then the rest, then the 4 MiB one alone")
}
