package httpstore_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ckptstore/ckptstore/httpstore"
	"github.com/ckptstore/ckptstore/storeurl"
	"github.com/ckptstore/ckptstore/streams"
	"github.com/ckptstore/ckptstore/streams/streamstest"
)

// TestStreamsExportImport: streams/export pages through a tenant's
// streams with a cursor, small pages resuming mid-stream; streams/import
// loads them into another tenant, where they read the same; a forged
// cursor, a limit out of range and a malformed record are BAD_REQUEST,
// and a conflicting stream is STREAM_IMPORT_CONFLICT (409), nothing of it
// written.
func TestStreamsExportImport(t *testing.T) {
	ctx := context.Background()
	o, err := storeurl.Open(ctx, "mem", storeurl.Options{})
	require.NoError(t, err)
	hs := httptest.NewServer(httpstore.NewHandler(o, httpstore.HandlerOptions{Tokens: map[string]string{"ta": "a", "tb": "b"}}))
	t.Cleanup(hs.Close)
	client := func(tok string) *httpstore.Client {
		c, err := httpstore.NewClient(hs.URL, httpstore.ClientOptions{Token: tok})
		require.NoError(t, err)
		return c
	}
	driverOf := func(ns string) streams.Driver {
		d, err := o.Streams(ns)
		require.NoError(t, err)
		return d
	}
	streamstest.Populate(t, driverOf("a"))
	a, b := client("ta"), client("tb")

	var recs []streams.Record
	pages := 0
	for cursor := ""; ; pages++ {
		page, next, err := a.ExportStreams(ctx, cursor, 3)
		require.NoError(t, err)
		require.LessOrEqual(t, len(page), 3)
		recs = append(recs, page...)
		if next == "" {
			break
		}
		cursor = next
	}
	require.Greater(t, pages, 5)
	var direct []streams.Record
	for r, err := range streams.Dump(ctx, driverOf("a").(streams.Porter), streams.Position{}) {
		require.NoError(t, err)
		direct = append(direct, r)
	}
	require.Equal(t, len(direct), len(recs))

	n, err := b.ImportStreams(ctx, recs)
	require.NoError(t, err)
	require.Equal(t, len(recs), n)
	streamstest.SameReads(t, driverOf("a"), driverOf("b"), streamstest.Clock(3))
	n, err = b.ImportStreams(ctx, recs)
	require.NoError(t, err)
	require.Zero(t, n)

	for _, cursor := range []string{"x", "0.0", "1.2.3"} {
		_, _, err := a.ExportStreams(ctx, cursor, 0)
		var he *httpstore.Error
		require.True(t, errors.As(err, &he), "%v", err)
		require.Equal(t, 400, he.Status)
	}
	_, _, err = a.ExportStreams(ctx, "", httpstore.MaxStreamExportRecords+1)
	require.ErrorIs(t, err, streams.ErrBadRequest)
	_, err = b.ImportStreams(ctx, []streams.Record{{}})
	var he *httpstore.Error
	require.True(t, errors.As(err, &he), "%v", err)
	require.Equal(t, 400, he.Status)

	// Another "bytes" in a: the import of b's records into a conflicts.
	_, err = a.ImportStreams(ctx, recs[:1])
	require.NoError(t, err) // equal: skipped
	bd := driverOf("b")
	_, err = bd.Append(ctx, "bytes", &streams.AppendRequest{ContentType: "text/plain", Body: &streams.Chunk{Data: []byte("x")}}, streamstest.Clock(3))
	require.NoError(t, err)
	var fromB []streams.Record
	for r, err := range streams.Dump(ctx, bd.(streams.Porter), streams.Position{}) {
		require.NoError(t, err)
		fromB = append(fromB, r)
	}
	_, err = a.ImportStreams(ctx, fromB[:1])
	require.ErrorIs(t, err, streams.ErrImportConflict)
	require.True(t, errors.As(err, &he))
	require.Equal(t, 409, he.Status)
}
