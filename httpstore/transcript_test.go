package httpstore_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ckptstore/ckptstore/httpstore"
)

// TestSaveThreadOnePass: saveThread checks the transcript as it reads the
// body (one pass) with ValidateTranscript's rules, and stores the bytes
// that came in: loadThread returns them byte for byte, whitespace and
// escapes included. What it refuses changes nothing, and the id is checked
// before the transcript.
func TestSaveThreadOnePass(t *testing.T) {
	srv := httptest.NewServer(httpstore.NewHandler(memBackend{}, httpstore.HandlerOptions{Dev: true}))
	t.Cleanup(srv.Close)
	const in = " [ {\"role\":\"user\", \"content\":\"h\\u00e9 \\ud83d\\ude00 é\"} ,\n 1 ]\t"
	st, code, b := post(t, srv.URL, "saveThread", `{"threadId":"t","messages":`+in+`}`)
	require.Equal(t, 200, st, "%s %s", code, b)
	st, code, b = post(t, srv.URL, "loadThread", `{"threadId":"t"}`)
	require.Equal(t, 200, st, "%s %s", code, b)
	require.Equal(t, `{"messages":`+in+`}`, string(b), "the transcript byte for byte")

	for name, c := range map[string]struct{ body, code string }{
		"an object":         {`{"threadId":"t","messages":{}}`, "SANDBOX_SNAPSHOT_INVALID_ENTRY"},
		"a string":          {`{"threadId":"t","messages":"[]"}`, "SANDBOX_SNAPSHOT_INVALID_ENTRY"},
		"invalid UTF-8":     {"{\"threadId\":\"t\",\"messages\":[\"\xff\"]}", "SANDBOX_SNAPSHOT_INVALID_ENTRY"},
		"absent":            {`{"threadId":"t"}`, "SANDBOX_SNAPSHOT_INVALID_ENTRY"},
		"null":              {`{"threadId":"t","messages":null}`, "SANDBOX_SNAPSHOT_INVALID_ENTRY"},
		"id before content": {`{"threadId":"","messages":5}`, "SANDBOX_SNAPSHOT_INVALID_ID"},
		"broken JSON":       {`{"threadId":"t","messages":[1,]}`, httpstore.CodeBadRequest},
	} {
		st, code, b := post(t, srv.URL, "saveThread", c.body)
		require.Equal(t, c.code, code, "%s: %d %s", name, st, b)
	}
	st, code, b = post(t, srv.URL, "loadThread", `{"threadId":"t"}`)
	require.Equal(t, 200, st, "%s %s", code, b)
	require.Equal(t, `{"messages":`+in+`}`, string(b), "a refused save changed nothing")
}

// TestReplyLength: every reply, short or long, carries its Content-Length
// and is not chunked, whether the handler declared it (long) or net/http
// counted it (short).
func TestReplyLength(t *testing.T) {
	srv := httptest.NewServer(httpstore.NewHandler(memBackend{}, httpstore.HandlerOptions{Dev: true}))
	t.Cleanup(srv.Close)
	// Replies of 17, 2047, 2048, 2049 and 4017 bytes.
	for _, n := range []int{0, 2030, 2031, 2032, 4000} {
		msgs := `["` + strings.Repeat("x", n) + `"]`
		st, code, b := post(t, srv.URL, "saveThread", `{"threadId":"t","messages":`+msgs+`}`)
		require.Equal(t, 200, st, "%s %s", code, b)
		resp, err := http.Post(srv.URL+"/v1/loadThread", "application/json", strings.NewReader(`{"threadId":"t"}`))
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, `{"messages":`+msgs+`}`, string(body))
		require.Equal(t, int64(len(body)), resp.ContentLength, "a reply of %d bytes", len(body))
		require.Empty(t, resp.TransferEncoding, "a reply of %d bytes is not chunked", len(body))
	}
	// An error reply too.
	resp, err := http.Post(srv.URL+"/v1/nope", "application/json", strings.NewReader(`{}`))
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, int64(len(body)), resp.ContentLength)
}
