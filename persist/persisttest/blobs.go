package persisttest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore/persist"
	"github.com/ckptstore/ckptstore/persist/driver"
	"github.com/stretchr/testify/require"
)

var blobTests = []test{
	{"PutGetHead", onEnv(testBlobRoundTrip)},
	{"StreamWithoutLength", onEnv(testBlobStream)},
	{"Ranges", onEnv(testBlobRanges)},
	{"OverwriteAndDelete", onEnv(testBlobOverwrite)},
	{"ListLiteralPrefix", onEnv(testBlobListPrefix)},
	{"ListCursorPaging", onEnv(testBlobPaging)},
	{"ListLongerThanADriverPage", onEnv(testBlobListLong)},
	{"FailedPutKeepsOldBytes", onEnv(testBlobFailedPut)},
	{"ReplacedBytesLeaveTheBucket", onEnv(testBlobNoOrphans)},
	{"ReadersSeeWholeBytes", onEnv(testBlobAtomicReplace)},
	{"ReadAfterReplaceInTheWindow", onEnv(testBlobReadRace)},
	{"LargestMetadata", onEnv(testBlobLargestMeta)},
}

// LargestBlobMeta returns a blob put whose key, contentType and
// customMetadata take MaxBlobMetaBytes+over by persist.BlobMetaSize, made of
// the bytes that grow most once encoded: a key of MaxIDBytes control
// characters, a contentType of quotes, a metadata name of backslashes and
// a value of U+2028 (which JSON escapes). With over 0 it is the largest put
// accepted; a remote store's test reads it back through its own wire.
func LargestBlobMeta(over int) (string, persist.BlobPutOptions) {
	key := strings.Repeat("\x01", driver.MaxIDBytes)
	ct := strings.Repeat(`"`, 200)
	name := strings.Repeat(`\`, 100)
	opts := persist.BlobPutOptions{ContentType: &ct, CustomMetadata: map[string]string{name: ""}}
	rest := persist.MaxBlobMetaBytes + over - persist.BlobMetaSize(key, opts)
	value := strings.Repeat("\u2028", rest/9) + strings.Repeat("a", rest%9)
	opts.CustomMetadata[name] = value
	return key, opts
}

// testBlobLargestMeta: the largest metadata accepted is stored and read
// back whole; one byte more is refused (Validation) and stores nothing.
func testBlobLargestMeta(t *testing.T, e *env) {
	key, opts := LargestBlobMeta(0)
	require.Equal(t, persist.MaxBlobMetaBytes, persist.BlobMetaSize(key, opts))
	e.put(key, []byte("x"), opts)
	o, b := e.read(key, nil)
	require.Equal(t, "x", string(b))
	require.Equal(t, key, o.Key)
	require.Equal(t, *opts.ContentType, *o.ContentType)
	require.Equal(t, opts.CustomMetadata, o.CustomMetadata)

	over, opts := LargestBlobMeta(1)
	_, err := e.s.Blobs.Put(e.ctx, over, bytes.NewReader([]byte("y")), opts)
	require.ErrorIs(t, err, persist.ErrInvalidEntry)
	require.Less(t, len(err.Error()), 300, "the error quotes no input")
	_, b = e.read(key, nil)
	require.Equal(t, "x", string(b), "a refused put changes nothing")
}

func (e *env) put(key string, body []byte, opts persist.BlobPutOptions) persist.BlobRecord {
	e.t.Helper()
	r := must(e.s.Blobs.Put(e.ctx, key, bytes.NewReader(body), opts)).of(e.t)
	return r
}

// read returns the blob's object and its bytes, or nil.
func (e *env) read(key string, rng *persist.BlobRange) (*persist.BlobObject, []byte) {
	e.t.Helper()
	o := must(e.s.Blobs.Get(e.ctx, key, rng)).of(e.t)
	if o == nil {
		return nil, nil
	}
	b := must(io.ReadAll(o.Body)).of(e.t)
	require.NoError(e.t, o.Body.Close())
	return o, b
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func testBlobRoundTrip(t *testing.T, e *env) {
	o, _ := e.read("blob-missing", nil)
	require.Nil(t, o)
	h, err := e.s.Blobs.Head(e.ctx, "blob-missing")
	require.NoError(t, err)
	require.Nil(t, h)

	body := []byte{1, 2, 3, 4}
	put := e.put("blob/a", body, persist.BlobPutOptions{ContentType: str("image/png"), CustomMetadata: map[string]string{"runId": "run-blob"}})
	want := map[string]any{"key": "blob/a", "size": 4, "etag": sum(body), "contentType": "image/png",
		"customMetadata": map[string]any{"runId": "run-blob"}, "createdAt": epoch.UnixMilli(), "updatedAt": epoch.UnixMilli()}
	jsonEq(t, want, put)
	o, got := e.read("blob/a", nil)
	require.Equal(t, body, got)
	require.Nil(t, o.Range, "a whole read reports no range")
	jsonEq(t, want, o.BlobRecord)
	h, err = e.s.Blobs.Head(e.ctx, "blob/a")
	require.NoError(t, err)
	jsonEq(t, want, h)

	e.put("blob/text", []byte("héllo"), persist.BlobPutOptions{})
	_, got = e.read("blob/text", nil)
	require.Equal(t, "héllo", string(got))
	empty := e.put("blob/empty", nil, persist.BlobPutOptions{})
	require.Zero(t, empty.Size)
	_, got = e.read("blob/empty", nil)
	require.Empty(t, got)
}

// chunky yields its bytes a few at a time and never says how many there are.
type chunky struct {
	b []byte
	n int
}

func (c *chunky) Read(p []byte) (int, error) {
	if len(c.b) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), c.n, len(c.b))
	copy(p, c.b[:n])
	c.b = c.b[n:]
	return n, nil
}

func testBlobStream(t *testing.T, e *env) {
	body := make([]byte, 64*1024)
	for i := range body {
		body[i] = byte(i % 251)
	}
	for _, hint := range []*int64{nil, i64(int64(len(body))), i64(3)} {
		put := must(e.s.Blobs.Put(e.ctx, "blob/stream", &chunky{b: body, n: 777}, persist.BlobPutOptions{ExpectedLength: hint})).of(t)
		require.EqualValues(t, len(body), put.Size, "size is what arrived, whatever the advisory length")
		o, got := e.read("blob/stream", nil)
		require.Equal(t, body, got)
		require.EqualValues(t, len(body), o.Size)
	}
}

func testBlobRanges(t *testing.T, e *env) {
	body := make([]byte, 1024)
	for i := range body {
		body[i] = byte(i % 251)
	}
	e.put("blob/range", body, persist.BlobPutOptions{})
	cases := []struct {
		rng            persist.BlobRange
		offset, length int64
	}{
		{persist.BlobRange{Offset: 100, Length: i64(50)}, 100, 50},
		{persist.BlobRange{Offset: 1000}, 1000, 24},
		{persist.BlobRange{Offset: 1000, Length: i64(1000)}, 1000, 24},
		{persist.BlobRange{Offset: 0}, 0, 1024},
		{persist.BlobRange{Offset: 1023, Length: i64(1)}, 1023, 1},
		{persist.BlobRange{Offset: 5, Length: i64(0)}, 5, 0},
	}
	for _, c := range cases {
		o, got := e.read("blob/range", &c.rng)
		require.Equal(t, body[c.offset:c.offset+c.length], got, "range %+v", c.rng)
		require.EqualValues(t, 1024, o.Size, "size stays the whole object's")
		require.Equal(t, &persist.ServedRange{Offset: c.offset, Length: c.length}, o.Range)
	}
	for _, rng := range []persist.BlobRange{{Offset: 1024}, {Offset: 5000, Length: i64(1)}} {
		_, err := e.s.Blobs.Get(e.ctx, "blob/range", &rng)
		require.ErrorIs(t, err, persist.ErrRangeNotSatisfiable, "%+v", rng)
	}
	e.put("blob/zero", nil, persist.BlobPutOptions{})
	_, err := e.s.Blobs.Get(e.ctx, "blob/zero", &persist.BlobRange{Offset: 0})
	require.ErrorIs(t, err, persist.ErrRangeNotSatisfiable, "an empty object has no satisfiable range")
	o, _ := e.read("blob/absent", &persist.BlobRange{Offset: 5000})
	require.Nil(t, o, "an absent key is absent, whatever the range")
}

func testBlobOverwrite(t *testing.T, e *env) {
	first := e.put("blob/over", []byte{1}, persist.BlobPutOptions{ContentType: str("text/plain"), CustomMetadata: map[string]string{"v": "1"}})
	e.clock.Add(time.Second)
	second := e.put("blob/over", []byte{2, 2, 2}, persist.BlobPutOptions{})
	require.EqualValues(t, 3, second.Size)
	require.NotEqual(t, first.ETag, second.ETag)
	require.Nil(t, second.ContentType, "an overwrite replaces the metadata too")
	require.Nil(t, second.CustomMetadata)
	require.Equal(t, first.CreatedAt, second.CreatedAt, "createdAt is when the key was first written")
	require.Greater(t, second.UpdatedAt, first.UpdatedAt)
	_, got := e.read("blob/over", nil)
	require.Equal(t, []byte{2, 2, 2}, got)
	require.NoError(t, e.s.Blobs.Delete(e.ctx, "blob/over"))
	o, _ := e.read("blob/over", nil)
	require.Nil(t, o)
	h := must(e.s.Blobs.Head(e.ctx, "blob/over")).of(t)
	require.Nil(t, h)
	require.NoError(t, e.s.Blobs.Delete(e.ctx, "blob/over"), "deleting an absent key is a no-op")
	again := e.put("blob/over", []byte{3}, persist.BlobPutOptions{})
	require.Greater(t, again.CreatedAt, first.CreatedAt, "after a delete the key starts anew")
}

func (e *env) listKeys(opts persist.BlobListOptions) ([]string, persist.BlobListPage) {
	e.t.Helper()
	p := must(e.s.Blobs.List(e.ctx, opts)).of(e.t)
	require.NotNil(e.t, p.Objects)
	keys := []string{}
	for _, o := range p.Objects {
		keys = append(keys, o.Key)
	}
	return keys, p
}

func testBlobListPrefix(t *testing.T, e *env) {
	for i, k := range []string{"list_/b", "list_/a", "list_/c", "list-x/d", "LIST_/e", "list%/f", "list_"} {
		e.put(k, []byte{byte(i)}, persist.BlobPutOptions{})
	}
	keys, p := e.listKeys(persist.BlobListOptions{Prefix: "list_/"})
	require.Equal(t, []string{"list_/a", "list_/b", "list_/c"}, keys)
	require.False(t, p.Truncated)
	require.Empty(t, p.Cursor)
	keys, _ = e.listKeys(persist.BlobListOptions{Prefix: "list_/nothing-here"})
	require.Equal(t, []string{}, keys)
	keys, _ = e.listKeys(persist.BlobListOptions{})
	require.Equal(t, []string{"LIST_/e", "list%/f", "list-x/d", "list_", "list_/a", "list_/b", "list_/c"}, keys, "no prefix: every key, by bytes")
	jsonEq(t, map[string]any{"key": "list_/a", "size": 1, "etag": sum([]byte{1}), "createdAt": epoch.UnixMilli(), "updatedAt": epoch.UnixMilli()}, p.Objects[0])
}

func testBlobPaging(t *testing.T, e *env) {
	all := []string{"page/a", "page/b", "page/c", "page/d", "page/e"}
	for _, k := range all {
		e.put(k, []byte{1}, persist.BlobPutOptions{})
	}
	e.put("page0", []byte{1}, persist.BlobPutOptions{})
	zero := 0
	keys, p := e.listKeys(persist.BlobListOptions{Prefix: "page/", Limit: &zero})
	require.Equal(t, []string{}, keys)
	require.False(t, p.Truncated)
	require.Empty(t, p.Cursor)

	two := 2
	var seen []string
	cursor := ""
	for range 10 {
		keys, p := e.listKeys(persist.BlobListOptions{Prefix: "page/", Limit: &two, Cursor: cursor})
		seen = append(seen, keys...)
		if !p.Truncated {
			require.Empty(t, p.Cursor)
			break
		}
		require.Equal(t, keys[len(keys)-1], p.Cursor)
		cursor = p.Cursor
	}
	require.Equal(t, all, seen, "paging visits every key once")
	five := 5
	keys, p = e.listKeys(persist.BlobListOptions{Prefix: "page/", Limit: &five})
	require.Equal(t, all, keys)
	require.False(t, p.Truncated, "an exact fit is not truncated")
	keys, _ = e.listKeys(persist.BlobListOptions{Prefix: "page/", Cursor: "page/b"})
	require.Equal(t, all[2:], keys, "the cursor is exclusive")
	keys, _ = e.listKeys(persist.BlobListOptions{Prefix: "page/", Cursor: "page/bb"})
	require.Equal(t, all[2:], keys, "a cursor need not be a stored key")
}

func testBlobListLong(t *testing.T, e *env) {
	var all []string
	for i := range 1003 {
		k := fmt.Sprintf("long/%05d", i)
		e.put(k, nil, persist.BlobPutOptions{})
		all = append(all, k)
	}
	keys, p := e.listKeys(persist.BlobListOptions{Prefix: "long/"})
	require.Equal(t, all, keys)
	require.False(t, p.Truncated)
	n := 1001
	keys, p = e.listKeys(persist.BlobListOptions{Prefix: "long/", Limit: &n})
	require.Equal(t, all[:1001], keys)
	require.True(t, p.Truncated)
	require.Equal(t, all[1000], p.Cursor)
}

// failing yields some bytes and then an error, like a dropped upload.
type failing struct{ n int }

var errBody = errors.New("persisttest: body failed")

func (f *failing) Read(p []byte) (int, error) {
	if f.n == 0 {
		return 0, errBody
	}
	n := min(len(p), f.n)
	clear(p[:n])
	f.n -= n
	return n, nil
}

// objects counts the bucket's objects.
func (e *env) objects() int {
	e.t.Helper()
	return e.bucket.Len()
}

func testBlobFailedPut(t *testing.T, e *env) {
	old := e.put("blob/keep", []byte("old bytes"), persist.BlobPutOptions{ContentType: str("text/plain")})
	n := e.objects()
	_, err := e.s.Blobs.Put(e.ctx, "blob/keep", &failing{n: 4}, persist.BlobPutOptions{})
	require.ErrorIs(t, err, errBody)
	o, got := e.read("blob/keep", nil)
	require.Equal(t, "old bytes", string(got), "a failed body keeps the old bytes")
	jsonEq(t, old, o.BlobRecord)
	require.Equal(t, n, e.objects(), "and leaves no object behind")

	e.d.mu.Lock()
	e.d.failPutBlob = true
	e.d.mu.Unlock()
	_, err = e.s.Blobs.Put(e.ctx, "blob/keep", bytes.NewReader([]byte("new")), persist.BlobPutOptions{})
	if e.remote {
		// The server's failure crosses the wire as a code, not as the
		// injected error's identity.
		require.Error(t, err)
		require.Empty(t, persist.Code(err), "a storage failure is no contract error")
	} else {
		require.ErrorIs(t, err, errInjected)
	}
	e.d.mu.Lock()
	e.d.failPutBlob = false
	e.d.mu.Unlock()
	_, got = e.read("blob/keep", nil)
	require.Equal(t, "old bytes", string(got), "a failed row write keeps the old bytes")
	require.Equal(t, n, e.objects(), "and deletes the bytes it uploaded")
}

func testBlobNoOrphans(t *testing.T, e *env) {
	for i := range 5 {
		e.put("blob/x", []byte{byte(i)}, persist.BlobPutOptions{})
		e.put(fmt.Sprintf("blob/y%d", i), []byte{byte(i)}, persist.BlobPutOptions{})
	}
	require.Equal(t, 6, e.objects(), "one object per live key")
	for i := range 5 {
		require.NoError(t, e.s.Blobs.Delete(e.ctx, fmt.Sprintf("blob/y%d", i)))
	}
	require.Equal(t, 1, e.objects())
}

// testBlobAtomicReplace reads a key while it is overwritten: every read
// sees one whole version, with the metadata of that version.
func testBlobAtomicReplace(t *testing.T, e *env) {
	version := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i)}, 1000+i) }
	e.put("blob/hot", version(0), persist.BlobPutOptions{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 1; i < 20; i++ {
			_, err := e.s.Blobs.Put(e.ctx, "blob/hot", bytes.NewReader(version(i)), persist.BlobPutOptions{})
			if err != nil {
				t.Error(err)
			}
		}
	})
	for range 200 {
		o := must(e.s.Blobs.Get(e.ctx, "blob/hot", nil)).of(t)
		b := must(io.ReadAll(o.Body)).of(t)
		o.Body.Close()
		i := int(b[0] - 'a')
		require.Equal(t, version(i), b, "a read mixes versions")
		require.EqualValues(t, len(b), o.Size, "the metadata is the bytes' version")
		require.Equal(t, sum(b), o.ETag)
	}
	wg.Wait()
}

// testBlobReadRace replaces, and then deletes, a key between a Get's read
// of the row and its open of the bytes: the Get serves the new bytes (or
// absence), never an error.
func testBlobReadRace(t *testing.T, e *env) {
	e.put("blob/race", []byte("old"), persist.BlobPutOptions{})
	e.d.mu.Lock()
	e.d.afterGetBlob = func() { e.put("blob/race", []byte("new!"), persist.BlobPutOptions{}) }
	e.d.mu.Unlock()
	o, b := e.read("blob/race", nil)
	require.Equal(t, "new!", string(b))
	require.EqualValues(t, 4, o.Size)
	e.d.mu.Lock()
	e.d.afterGetBlob = func() { require.NoError(t, e.s.Blobs.Delete(e.ctx, "blob/race")) }
	e.d.mu.Unlock()
	o, _ = e.read("blob/race", &persist.BlobRange{Offset: 1})
	require.Nil(t, o, "a key deleted in the window reads as absent")
}
