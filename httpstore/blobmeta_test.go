package httpstore_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ckptstore/ckptstore/httpstore"
	"github.com/ckptstore/ckptstore/persist"
	"github.com/ckptstore/ckptstore/persist/persisttest"
)

// nodeMaxHeaderSize is Node's default --max-http-header-size, the limit
// its fetch (undici) puts on a reply's header block.
const nodeMaxHeaderSize = 16384

// encodeURIComponent is JavaScript's, as the TypeScript client encodes the
// Ckpt-Blob-Put header.
func encodeURIComponent(s string) string {
	e := strings.ReplaceAll(url.QueryEscape(s), "+", "%20")
	for _, c := range "!'()*" {
		e = strings.ReplaceAll(e, url.QueryEscape(string(c)), string(c))
	}
	return e
}

// rawBlobPut sends a blobs/put as the TypeScript client does and returns
// the status and the error code, if any.
func rawBlobPut(t *testing.T, base, key string, opts persist.BlobPutOptions, body string) (int, string) {
	t.Helper()
	hdr := map[string]any{"key": key, "contentType": opts.ContentType, "customMetadata": opts.CustomMetadata}
	j, err := json.Marshal(hdr)
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, base+"/v1/blobs/put", strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set(httpstore.HeaderBlobPut, encodeURIComponent(string(j)))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e struct{ Code string }
	if resp.StatusCode != http.StatusOK {
		_ = json.Unmarshal(b, &e)
	}
	return resp.StatusCode, e.Code
}

// replyHeaderBlock sends a blobs/get over a plain connection and returns
// the reply's header block as it arrived: the status line, every header
// line and the empty line that ends them.
func replyHeaderBlock(t *testing.T, base, getBody string) []byte {
	t.Helper()
	u, err := url.Parse(base)
	require.NoError(t, err)
	conn, err := net.Dial("tcp", u.Host)
	require.NoError(t, err)
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/blobs/get HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		u.Host, len(getBody), getBody)
	br := bufio.NewReader(conn)
	var block []byte
	for {
		line, err := br.ReadBytes('\n')
		require.NoError(t, err)
		block = append(block, line...)
		if bytes.Equal(line, []byte("\r\n")) {
			return block
		}
	}
}

// TestBlobMetaFitsClientHeaderLimits: the largest key, contentType and
// customMetadata a put accepts come back from a get in a reply whose whole
// header block fits Node's default limit (and so Go's, which is larger),
// read back equal through the Go client; one byte more is refused at put
// time with PERSIST_INVALID_ENTRY, by the server and by the client.
func TestBlobMetaFitsClientHeaderLimits(t *testing.T) {
	base := persistServer(t, true, httpstore.HandlerOptions{Dev: true})
	key, opts := persisttest.LargestBlobMeta(0)
	st, code := rawBlobPut(t, base, key, opts, "x")
	require.Equal(t, http.StatusOK, st, code)

	kj, err := json.Marshal(key)
	require.NoError(t, err)
	// A ranged read: the range member makes the header longest.
	block := replyHeaderBlock(t, base, `{"key":`+string(kj)+`,"range":{"offset":0,"length":1}}`)
	require.Contains(t, string(block), "HTTP/1.1 200 ")
	require.Contains(t, string(block), httpstore.HeaderBlob+": ")
	t.Logf("largest blob get reply: header block %d bytes (Node's limit %d)", len(block), nodeMaxHeaderSize)
	require.Less(t, len(block), nodeMaxHeaderSize, "the reply's header block must fit Node's default limit")

	c, err := httpstore.NewClient(base, httpstore.ClientOptions{})
	require.NoError(t, err)
	ctx := context.Background()
	obj, err := c.Persistence().Blobs.Get(ctx, key, &persist.BlobRange{Offset: 0})
	require.NoError(t, err)
	b, err := io.ReadAll(obj.Body)
	obj.Body.Close()
	require.NoError(t, err)
	require.Equal(t, "x", string(b))
	require.Equal(t, key, obj.Key)
	require.Equal(t, *opts.ContentType, *obj.ContentType)
	require.Equal(t, opts.CustomMetadata, obj.CustomMetadata)

	if node, err := exec.LookPath("node"); err != nil {
		t.Log("node is not installed: the reply is not read through Node's fetch (the header block size above is checked against its limit)")
	} else {
		script := `fetch(process.argv[1] + "/v1/blobs/get", {method: "POST", headers: {"content-type": "application/json"}, body: process.argv[2]})
  .then(async r => { const m = JSON.parse(decodeURIComponent(r.headers.get("ckpt-blob"))); await r.arrayBuffer(); console.log(JSON.stringify(m.blob.customMetadata)) })
  .catch(e => { console.error(e.cause ? e.cause.code : e); process.exit(1) })`
		out, err := exec.Command(node, "-e", script, base, `{"key":`+string(kj)+`}`).CombinedOutput()
		require.NoError(t, err, "Node's fetch cannot read the reply: %s", out)
		var md map[string]string
		require.NoError(t, json.Unmarshal(bytes.TrimSpace(out), &md))
		require.Equal(t, opts.CustomMetadata, md, "Node reads the metadata back whole")
	}

	over, overOpts := persisttest.LargestBlobMeta(1)
	st, code = rawBlobPut(t, base, over, overOpts, "y")
	require.Equal(t, http.StatusBadRequest, st)
	require.Equal(t, "PERSIST_INVALID_ENTRY", code)
	_, err = c.Persistence().Blobs.Put(ctx, over, strings.NewReader("y"), overOpts)
	require.ErrorIs(t, err, persist.ErrInvalidEntry)
	obj, err = c.Persistence().Blobs.Get(ctx, key, nil)
	require.NoError(t, err)
	b, _ = io.ReadAll(obj.Body)
	obj.Body.Close()
	require.Equal(t, "x", string(b), "a refused put changes nothing")
}

// TestBlobMetaSizeBoundsTheWire: persist.BlobMetaSize is never less than
// what the strings take in the Ckpt-Blob header (the server's encoding) or
// in the Ckpt-Blob-Put header (JavaScript's encodeURIComponent), for every
// single character class and for mixed strings.
func TestBlobMetaSizeBoundsTheWire(t *testing.T) {
	wire := func(s string) (int, int) {
		j, err := json.Marshal(s)
		require.NoError(t, err)
		// The server's JSON leaves <, > and & unescaped, as json.Marshal
		// would not: undo that, so j is what the header carries.
		j = bytes.ReplaceAll(j, []byte(`\u003c`), []byte("<"))
		j = bytes.ReplaceAll(j, []byte(`\u003e`), []byte(">"))
		j = bytes.ReplaceAll(j, []byte(`\u0026`), []byte("&"))
		return len(url.PathEscape(string(j))) + 3, len(encodeURIComponent(string(j))) + 3 // + a separator
	}
	var samples []string
	for c := 0; c < 0x80; c++ {
		samples = append(samples, strings.Repeat(string(rune(c)), 5))
	}
	samples = append(samples, "é", "😀", "\u2028\u2029", "a\"b\\c\nd\x00e<&>", "", "text/plain; charset=utf-8")
	for _, s := range samples {
		size := persist.BlobMetaSize(s, persist.BlobPutOptions{})
		get, put := wire(s)
		if size < get || size < put {
			t.Errorf("BlobMetaSize(%q) = %d, but the wire takes %d (get) and %d (put)", s, size, get, put)
		}
	}
}
