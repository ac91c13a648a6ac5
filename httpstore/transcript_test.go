package httpstore_test

import (
	"net/http/httptest"
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
