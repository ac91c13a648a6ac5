package fdbstore

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ckptstore/ckptstore/fdbstore/kv"
	pdriver "github.com/ckptstore/ckptstore/persist/driver"
)

// TestStoredFormKept: the values this driver stores keep the bytes that
// encoding/json wrote before the records had a codec of their own (the
// want strings are that code's output): index entries hold copies of
// their record's value and Check compares them, so a store written before
// must check clean after. Each reads back as the record.
func TestStoredFormKept(t *testing.T) {
	s, n, f := "a<b>&c\u2028", int64(-7), false
	cases := []struct {
		v    any
		want string
	}{
		{&pdriver.RunRecord{RunID: "r<", ThreadID: "t&", Status: pdriver.RunFailed, StartedAt: 1 << 52, FinishedAt: &n,
			Error: &pdriver.RunError{Message: s, Code: &s}, Usage: json.RawMessage(` {"a" : "<"} `), SandboxKey: &s,
			DetachedSince: &n, CancelRequested: &f, DriverEpoch: &n},
			`{"runId":"r\u003c","threadId":"t\u0026","status":"failed","startedAt":4503599627370496,"finishedAt":-7,"error":{"message":"a\u003cb\u003e\u0026c\u2028","code":"a\u003cb\u003e\u0026c\u2028"},"sandboxKey":"a\u003cb\u003e\u0026c\u2028","detachedSince":-7,"cancelRequested":false,"driverEpoch":-7,"usage":"IHsiYSIgOiAiPCJ9IA=="}`},
		{&pdriver.GenerationRunRecord{RunID: "g", ThreadID: "t", Activity: "image", Provider: "p>", Model: "m", Status: pdriver.RunRunning,
			StartedAt: 3, Result: json.RawMessage(`null`), Artifacts: json.RawMessage("[ 1 ]"), Usage: json.RawMessage(`{}`)},
			`{"runId":"g","threadId":"t","activity":"image","provider":"p\u003e","model":"m","status":"running","startedAt":3,"result":"bnVsbA==","artifacts":"WyAxIF0=","usage":"e30="}`},
		{&pdriver.InterruptRecord{InterruptID: "i", RunID: "r", ThreadID: "t", Status: pdriver.InterruptResolved, RequestedAt: 1,
			ResolvedAt: &n, Payload: json.RawMessage(`{"q":"&"}`), Response: json.RawMessage(`null`)},
			`{"interruptId":"i","runId":"r","threadId":"t","status":"resolved","requestedAt":1,"resolvedAt":-7,"payload":"eyJxIjoiJiJ9","response":"bnVsbA=="}`},
		{&pdriver.InterruptRecord{InterruptID: "i", RunID: "r", ThreadID: "t", Status: pdriver.InterruptPending, RequestedAt: 1,
			Payload: json.RawMessage(`{}`)},
			`{"interruptId":"i","runId":"r","threadId":"t","status":"pending","requestedAt":1,"payload":"e30="}`},
		{&pdriver.ArtifactRecord{ArtifactID: "a", RunID: "r", ThreadID: "t", BlobKey: &s, Name: "n<", MimeType: "m", Size: 9, CreatedAt: 4},
			`{"artifactId":"a","runId":"r","threadId":"t","blobKey":"a\u003cb\u003e\u0026c\u2028","name":"n\u003c","mimeType":"m","size":9,"createdAt":4}`},
		{&blobRow{BlobRecord: pdriver.BlobRecord{Key: "k&", Size: 1, ETag: "e", ContentType: &s, CustomMetadata: map[string]string{"z": "<", "a": ">"},
			CreatedAt: 1, UpdatedAt: 2}, Object: "o<"},
			`{"key":"k\u0026","size":1,"etag":"e","contentType":"a\u003cb\u003e\u0026c\u2028","customMetadata":{"a":"\u003e","z":"\u003c"},"createdAt":1,"updatedAt":2,"object":"o\u003c"}`},
	}
	for _, c := range cases {
		b, err := encode("record", c.v)
		require.NoError(t, err)
		require.Equal(t, c.want, string(b))
		var back any
		switch v := c.v.(type) {
		case *pdriver.RunRecord:
			back, err = decode[pdriver.RunRecord](nil, b)
		case *pdriver.GenerationRunRecord:
			back, err = decode[pdriver.GenerationRunRecord](nil, b)
		case *pdriver.InterruptRecord:
			back, err = decode[pdriver.InterruptRecord](nil, b)
		case *pdriver.ArtifactRecord:
			back, err = decode[pdriver.ArtifactRecord](nil, b)
		case *blobRow:
			back, err = decode[blobRow](nil, b)
		default:
			t.Fatalf("%T", v)
		}
		require.NoError(t, err)
		require.Equal(t, c.v, back, "%s reads back as the record", b)
	}
}

// TestStoredFormWithinOneValue: the largest record the persistence
// contract lets through (a generation run whose two ids, five texts and
// three JSON values are each at their bound, in the form that takes the
// most room stored: six bytes a byte for ids and texts, base64 for the
// JSON values) encodes within one FoundationDB value, with the margin
// pdriver.MaxValueBytes's comment works out. Its index copy is the same
// bytes. The persistence suite stores it on every engine
// (ValuesAtTheBounds); this pins the arithmetic.
func TestStoredFormWithinOneValue(t *testing.T) {
	id := func(c string) string { return strings.Repeat(c, pdriver.MaxIDBytes) }
	text := strings.Repeat("<", (pdriver.MaxValueBytes-2)/6)
	require.Equal(t, pdriver.MaxValueBytes, pdriver.TextSize(text))
	value := json.RawMessage(`"` + strings.Repeat("x", pdriver.MaxValueBytes-2) + `"`)
	at := int64(-pdriver.MaxSafeInteger)
	rec := &pdriver.GenerationRunRecord{RunID: id("\x01"), ThreadID: id("&"), Activity: text, Provider: text, Model: text,
		Status: pdriver.RunCompleted, StartedAt: at, FinishedAt: &at, Error: &pdriver.RunError{Message: text, Code: &text},
		Result: value, Artifacts: value, Usage: value}
	b, err := encode("generation run", rec)
	require.NoError(t, err)
	t.Logf("the largest stored record: %d bytes of %d", len(b), kv.MaxValueSize)
	require.LessOrEqual(t, len(b), 86_228, "pdriver.MaxValueBytes's worked bound")
	require.LessOrEqual(t, len(b), kv.MaxValueSize)
}
