package driver_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/ckptstore/ckptstore/driver"
)

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	return string(b)
}

func TestMarshalCheckpointShape(t *testing.T) {
	want := `{"id":"cp-2","threadId":"thread-1","parentCheckpointId":"cp-1","createdAt":1700000000000.5,` +
		`"reason":"named","label":"before refactor","sourceRunId":"run-7","files":[` +
		`{"path":"src","kind":"dir"},` +
		`{"path":"src/main.go","kind":"file","blobKey":"` + fileKey(1) + `","size":120},` +
		`{"path":"README.md","kind":"file","blobKey":"` + fileKey(2) + `","size":0}],` +
		`"conversation":[{"role":"user","content":"hi"}],` +
		`"artifacts":[{"artifactId":"a1","name":"report.pdf","mimeType":"application/pdf","size":2048,` +
		`"blobKey":"` + artifactKey(1) + `","createdAt":1700000000001}]}`
	cp := validCheckpoint()
	if got := mustMarshal(t, cp); got != want {
		t.Fatalf("Marshal(*Checkpoint) =\n%s\nwant\n%s", got, want)
	}
	if got := mustMarshal(t, *cp); got != want {
		t.Fatalf("Marshal(Checkpoint) differs from Marshal(*Checkpoint):\n%s", got)
	}
	if got := mustMarshal(t, []*driver.Checkpoint{cp}); got != "["+want+"]" {
		t.Fatalf("Marshal([]*Checkpoint) =\n%s", got)
	}
}

func TestMarshalCheckpointEmpty(t *testing.T) {
	const want = `{"id":"c","threadId":"t","parentCheckpointId":null,"createdAt":0,"reason":"automatic","files":[],"conversation":[],"artifacts":[]}`
	for name, cp := range map[string]*driver.Checkpoint{
		"nil slices": {ID: "c", ThreadID: "t", Reason: driver.ReasonAutomatic},
		"empty slices": {ID: "c", ThreadID: "t", Reason: driver.ReasonAutomatic,
			Files: []driver.Entry{}, Artifacts: []driver.Artifact{}, Conversation: json.RawMessage{}},
	} {
		if got := mustMarshal(t, cp); got != want {
			t.Errorf("%s: Marshal =\n%s\nwant\n%s", name, got, want)
		}
	}
}

func TestMarshalEntry(t *testing.T) {
	for _, tt := range []struct {
		e    driver.Entry
		want string
	}{
		{driver.Entry{Path: "d", Kind: driver.KindDir}, `{"path":"d","kind":"dir"}`},
		// A directory never carries file fields, even when the Go value does.
		{driver.Entry{Path: "d", Kind: driver.KindDir, BlobKey: "x", Size: 3}, `{"path":"d","kind":"dir"}`},
		{driver.Entry{Path: "f", Kind: driver.KindFile, BlobKey: fileKey(1)}, `{"path":"f","kind":"file","blobKey":"` + fileKey(1) + `","size":0}`},
		{driver.Entry{Path: "f", Kind: driver.KindFile, BlobKey: fileKey(1), Size: maxSize}, `{"path":"f","kind":"file","blobKey":"` + fileKey(1) + `","size":9007199254740991}`},
	} {
		if got := mustMarshal(t, tt.e); got != tt.want {
			t.Errorf("Marshal(%+v) = %s, want %s", tt.e, got, tt.want)
		}
		if got := mustMarshal(t, &tt.e); got != tt.want {
			t.Errorf("Marshal(&%+v) = %s, want %s", tt.e, got, tt.want)
		}
	}
}

// marshalDirect calls MarshalJSON itself, as stores do to keep the exact
// bytes; encoding/json would compact and HTML-escape its result.
func marshalDirect(t *testing.T, m json.Marshaler) string {
	t.Helper()
	b, err := m.MarshalJSON()
	if err != nil {
		t.Fatalf("MarshalJSON: %v", err)
	}
	return string(b)
}

// JSON.stringify writes <, > and & as they are; so must we.
func TestMarshalNoHTMLEscaping(t *testing.T) {
	cp := &driver.Checkpoint{ID: "a<b>", ThreadID: "t&u", Reason: driver.ReasonNamed, Label: "<script>&amp;</script>",
		Files:        []driver.Entry{{Path: "a&b<c>", Kind: driver.KindDir}},
		Conversation: json.RawMessage(`["<&>"]`)}
	got := marshalDirect(t, cp)
	for _, s := range []string{`"id":"a<b>"`, `"threadId":"t&u"`, `"label":"<script>&amp;</script>"`, `"path":"a&b<c>"`} {
		if !strings.Contains(got, s) {
			t.Errorf("Marshal = %s, want it to contain %s", got, s)
		}
	}
	if strings.Contains(got, `\u003c`) || strings.Contains(got, `\u0026`) {
		t.Errorf("Marshal HTML-escaped: %s", got)
	}
	rec := driver.InstanceRecord{Key: "<k>", Provider: "a&b", ProviderSandboxID: "x", ThreadID: "t"}
	if got := marshalDirect(t, rec); !strings.Contains(got, `"key":"<k>","provider":"a&b"`) {
		t.Errorf("MarshalJSON(InstanceRecord) = %s, want no HTML escaping", got)
	}
	e := driver.Entry{Path: "<&>", Kind: driver.KindDir}
	if got := marshalDirect(t, e); got != `{"path":"<&>","kind":"dir"}` {
		t.Errorf("MarshalJSON(Entry) = %s, want no HTML escaping", got)
	}
	a := driver.Artifact{ArtifactID: "<&>", BlobKey: artifactKey(1)}
	if got := marshalDirect(t, a); !strings.Contains(got, `"artifactId":"<&>"`) {
		t.Errorf("MarshalJSON(Artifact) = %s, want no HTML escaping", got)
	}
}

// json.Marshal gives the same JSON value as a direct MarshalJSON call,
// compacted and HTML-escaped: encoding/json does that to every Marshaler's
// output. This pins down why stores must call MarshalJSON directly.
func TestJSONMarshalCompactsDirectOutput(t *testing.T) {
	cp := validCheckpoint()
	cp.Label = "<&>"
	cp.Conversation = json.RawMessage("[ 1,\n 2 ]")
	direct := marshalDirect(t, cp)
	var want bytes.Buffer
	if err := json.Compact(&want, []byte(direct)); err != nil {
		t.Fatal(err)
	}
	var escaped bytes.Buffer
	json.HTMLEscape(&escaped, want.Bytes())
	if got := mustMarshal(t, cp); got != escaped.String() {
		t.Fatalf("json.Marshal =\n%s\nwant the compacted, escaped direct output\n%s", got, escaped.String())
	}
}

// Go formats float64 the way JavaScript's Number#toString does; a TypeScript
// reader sees the same text JSON.stringify would write.
func TestMarshalCreatedAtFormat(t *testing.T) {
	for _, tt := range []struct {
		f    float64
		want string
	}{
		{0, `0`}, {0.1, `0.1`}, {-1.5, `-1.5`}, {1e-7, `1e-7`}, {1e21, `1e+21`}, {1e20, `100000000000000000000`},
		{1700000000000.123, `1700000000000.123`}, {math.MaxFloat64, `1.7976931348623157e+308`}, {5e-324, `5e-324`},
	} {
		cp := &driver.Checkpoint{ID: "c", ThreadID: "t", Reason: driver.ReasonNamed, CreatedAt: tt.f}
		if got := mustMarshal(t, cp); !strings.Contains(got, `"createdAt":`+tt.want+`,`) {
			t.Errorf("createdAt %v encodes as %s, want %s", tt.f, got, tt.want)
		}
	}
}

func TestMarshalRejectsInvalidConversation(t *testing.T) {
	for _, conv := range []string{"[", "x", "[] []"} {
		cp := &driver.Checkpoint{ID: "c", ThreadID: "t", Reason: driver.ReasonNamed, Conversation: json.RawMessage(conv)}
		if _, err := json.Marshal(cp); !errors.Is(err, driver.ErrInvalidEntry) {
			t.Errorf("Marshal with conversation %q: error %v, want ErrInvalidEntry", conv, err)
		}
	}
}

// The conversation is opaque: Marshal and Unmarshal keep its bytes exactly,
// whitespace, escapes, number spelling and all.
func TestConversationBytesKept(t *testing.T) {
	for _, conv := range []string{
		`[]`,
		"[ ]",
		"[\n\t{ \"role\" : \"user\" ,\"content\":\"é\\u00e9\\n\"},\r\n 1.50E+2 , -0, null ]",
		`[{"content":"<b>&amp;</b>","z":1,"a":2,"z":3}]`, // order and a repeated key kept
		`["\ud83d\ude00😀", "\ud800"]`,                    // escapes are not decoded, even unpaired ones
		`[{"conversation":0,"x":1}]`,                     // looks like the encoder's own placeholder
	} {
		cp := &driver.Checkpoint{ID: "c", ThreadID: "t", Reason: driver.ReasonNamed,
			Conversation: json.RawMessage(conv), Artifacts: []driver.Artifact{{ArtifactID: `"conversation":0,`}}}
		out := marshalDirect(t, cp)
		if !strings.Contains(out, `"conversation":`+conv+`,"artifacts":`) {
			t.Errorf("Marshal did not keep conversation %q:\n%s", conv, out)
		}
		if !json.Valid([]byte(out)) {
			t.Errorf("Marshal produced invalid JSON: %s", out)
		}
		var back driver.Checkpoint
		if err := json.Unmarshal([]byte(out), &back); err != nil {
			t.Fatalf("Unmarshal(%s): %v", out, err)
		}
		if string(back.Conversation) != conv {
			t.Errorf("Unmarshal conversation = %q, want %q", back.Conversation, conv)
		}
		if back.Artifacts[0].ArtifactID != `"conversation":0,` {
			t.Errorf("artifact id = %q, want it unchanged", back.Artifacts[0].ArtifactID)
		}
	}
}

// Whitespace around the array is part of the conversation's bytes: the
// encoder writes it between the ':' and the ',', and the decoder keeps
// those bytes, so the checkpoint round-trips byte for byte (the HTTP
// protocol's rule, docs/http-api.md).
func TestConversationOuterWhitespace(t *testing.T) {
	const conv = " \n[1, 2]\t "
	cp := &driver.Checkpoint{ID: "c", ThreadID: "t", Reason: driver.ReasonNamed, Conversation: json.RawMessage(conv)}
	out := marshalDirect(t, cp)
	if !strings.Contains(out, `"conversation":`+conv+`,`) {
		t.Fatalf("MarshalJSON did not keep the outer whitespace: %q", out)
	}
	var back driver.Checkpoint
	if err := json.Unmarshal([]byte(out), &back); err != nil {
		t.Fatal(err)
	}
	if string(back.Conversation) != conv {
		t.Fatalf("decoded conversation = %q, want %q", back.Conversation, conv)
	}
	if again := marshalDirect(t, &back); again != out {
		t.Fatalf("re-encoded as\n%q\nwant\n%q", again, out)
	}
}

// Decoding must not share memory with the input: a caller that reuses its
// buffer would otherwise change a decoded checkpoint.
func TestUnmarshalCopiesConversation(t *testing.T) {
	doc := []byte(`{"id":"c","threadId":"t","createdAt":1,"reason":"named","conversation":[1,2]}`)
	var cp driver.Checkpoint
	if err := json.Unmarshal(doc, &cp); err != nil {
		t.Fatal(err)
	}
	for i := range doc {
		doc[i] = 'x'
	}
	if string(cp.Conversation) != "[1,2]" {
		t.Fatalf("conversation changed with the input buffer: %q", cp.Conversation)
	}
}

func TestUnmarshalCheckpoint(t *testing.T) {
	doc := `{"id":"cp-2","threadId":"thread-1","parentCheckpointId":"cp-1","createdAt":1700000000000.5,` +
		`"reason":"named","label":"before refactor","sourceRunId":"run-7","files":[` +
		`{"path":"src","kind":"dir"},` +
		`{"path":"src/main.go","kind":"file","blobKey":"` + fileKey(1) + `","size":120},` +
		`{"path":"README.md","kind":"file","blobKey":"` + fileKey(2) + `","size":0}],` +
		`"conversation":[{"role":"user","content":"hi"}],` +
		`"artifacts":[{"artifactId":"a1","name":"report.pdf","mimeType":"application/pdf","size":2048,` +
		`"blobKey":"` + artifactKey(1) + `","createdAt":1700000000001}]}`
	var got driver.Checkpoint
	if err := json.Unmarshal([]byte(doc), &got); err != nil {
		t.Fatal(err)
	}
	if a, b := mustMarshal(t, &got), mustMarshal(t, validCheckpoint()); a != b {
		t.Fatalf("decoded checkpoint differs:\n%s\n%s", a, b)
	}
}

func TestUnmarshalCheckpointOptional(t *testing.T) {
	for _, doc := range []string{
		`{"id":"c","threadId":"t","createdAt":1,"reason":"automatic"}`,
		`{"id":"c","threadId":"t","parentCheckpointId":null,"createdAt":1,"reason":"automatic","label":null,"sourceRunId":null,"files":null,"conversation":null,"artifacts":null}`,
		`{"id":"c","threadId":"t","parentCheckpointId":"","createdAt":1,"reason":"automatic","label":"","sourceRunId":"","files":[],"artifacts":[]}`,
		" \n{\"id\":\"c\",\"threadId\":\"t\",\"createdAt\":1,\"reason\":\"automatic\",\"unknownField\":{\"x\":[1]}} \n",
	} {
		var cp driver.Checkpoint
		if err := json.Unmarshal([]byte(doc), &cp); err != nil {
			t.Fatalf("Unmarshal(%s): %v", doc, err)
		}
		if cp.ID != "c" || cp.ThreadID != "t" || cp.ParentCheckpointID != "" || cp.CreatedAt != 1 || cp.Reason != driver.ReasonAutomatic ||
			cp.Label != "" || cp.SourceRunID != "" || len(cp.Files) != 0 || len(cp.Conversation) != 0 || len(cp.Artifacts) != 0 {
			t.Errorf("Unmarshal(%s) = %+v", doc, cp)
		}
		const want = `{"id":"c","threadId":"t","parentCheckpointId":null,"createdAt":1,"reason":"automatic","files":[],"conversation":[],"artifacts":[]}`
		if got := mustMarshal(t, &cp); got != want {
			t.Errorf("re-encoded %s as %s", doc, got)
		}
	}
}

// TestUnmarshalStrings checks how JSON strings decode: escapes as JSON.parse
// reads them, names matched exactly, a repeated name keeping its last value,
// and ill-formed Unicode rejected rather than turned into U+FFFD.
func TestUnmarshalStrings(t *testing.T) {
	doc := func(fields string) string {
		return `{"threadId":"t","createdAt":1,"reason":"named",` + fields + `}`
	}
	for _, tt := range []struct {
		name   string
		fields string
		wantID string
		want   error
	}{
		{"plain", `"id":"abc"`, "abc", nil},
		{"escaped ASCII", `"id":"\u0041\n\"\\\/"`, "A\n\"\\/", nil},
		{"surrogate pair", `"id":"\ud83d\ude00"`, "😀", nil},
		{"uppercase surrogate pair", `"id":"\uD83D\uDE00"`, "😀", nil},
		{"highest code point", `"id":"\udbff\udfff"`, "\U0010FFFF", nil},
		{"raw UTF-8", `"id":"😀é"`, "😀é", nil},
		{"escaped backslash then ud800 is plain text", `"id":"\\ud800"`, `\ud800`, nil},
		{"escaped name", `"\u0069d":"abc"`, "abc", nil},
		{"repeated name keeps the last", `"id":"first","id":"last"`, "last", nil},
		{"U+FFFD itself is fine", `"id":"\ufffd"`, "\uFFFD", nil},
		{"NUL escape", `"id":"a\u0000"`, "a\x00", nil},

		{"missing id", `"x":"abc"`, "", driver.ErrInvalidID},
		{"null id", `"id":null`, "", driver.ErrInvalidID},
		{"number id", `"id":5`, "", driver.ErrInvalidID},
		{"array id", `"id":["a"]`, "", driver.ErrInvalidID},
		{"names are case-sensitive", `"ID":"abc"`, "", driver.ErrInvalidID},
		{"lone high surrogate", `"id":"\ud800"`, "", driver.ErrInvalidID},
		{"lone low surrogate", `"id":"a\udc00"`, "", driver.ErrInvalidID},
		{"reversed pair", `"id":"\ude00\ud83d"`, "", driver.ErrInvalidID},
		{"high then non-surrogate escape", `"id":"\ud800\u0041"`, "", driver.ErrInvalidID},
		{"high then other escape", `"id":"\ud800\n"`, "", driver.ErrInvalidID},
		{"two highs then a low", `"id":"\ud800\ud800\udc00"`, "", driver.ErrInvalidID},
		{"high at the end", `"id":"abc\udbff"`, "", driver.ErrInvalidID},
		{"escaped backslash then a lone surrogate", `"id":"\\\ud800"`, "", driver.ErrInvalidID},
		{"raw invalid UTF-8", "\"id\":\"a\xffb\"", "", driver.ErrInvalidID},
		{"raw WTF-8 surrogate", "\"id\":\"\xed\xa0\x80\"", "", driver.ErrInvalidID},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var cp driver.Checkpoint
			err := json.Unmarshal([]byte(doc(tt.fields)), &cp)
			wantErr(t, err, tt.want, "")
			if tt.want == nil && cp.ID != tt.wantID {
				t.Fatalf("id = %q, want %q", cp.ID, tt.wantID)
			}
		})
	}
}

func TestUnmarshalCheckpointErrors(t *testing.T) {
	const (
		ok   = `"id":"c","threadId":"t","createdAt":1,"reason":"named"`
		file = `{"path":"f","kind":"file","blobKey":"k","size":1}`
	)
	for _, tt := range []struct {
		name string
		doc  string
		want error
	}{
		{"array", `[]`, driver.ErrInvalidEntry},
		{"string", `"x"`, driver.ErrInvalidEntry},
		{"null", `null`, driver.ErrInvalidEntry},

		{"missing threadId", `{"id":"c","createdAt":1,"reason":"named"}`, driver.ErrInvalidID},
		{"threadId number", `{"id":"c","threadId":1,"createdAt":1,"reason":"named"}`, driver.ErrInvalidID},
		{"threadId lone surrogate", `{"id":"c","threadId":"\udfff","createdAt":1,"reason":"named"}`, driver.ErrInvalidID},
		{"parent number", `{` + ok + `,"parentCheckpointId":7}`, driver.ErrInvalidID},
		{"parent lone surrogate", `{` + ok + `,"parentCheckpointId":"\ud800"}`, driver.ErrInvalidID},
		{"parent raw invalid UTF-8", "{" + ok + ",\"parentCheckpointId\":\"\xc3\"}", driver.ErrInvalidID},
		{"ids before content", `{"id":5,"threadId":"t","createdAt":"x","reason":1,"files":[1]}`, driver.ErrInvalidID},

		{"missing createdAt", `{"id":"c","threadId":"t","reason":"named"}`, driver.ErrInvalidEntry},
		{"null createdAt", `{"id":"c","threadId":"t","createdAt":null,"reason":"named"}`, driver.ErrInvalidEntry},
		{"string createdAt", `{"id":"c","threadId":"t","createdAt":"1","reason":"named"}`, driver.ErrInvalidEntry},
		{"createdAt beyond float64", `{"id":"c","threadId":"t","createdAt":1e400,"reason":"named"}`, driver.ErrInvalidEntry},
		{"createdAt below -float64", `{"id":"c","threadId":"t","createdAt":-1e400,"reason":"named"}`, driver.ErrInvalidEntry},
		{"missing reason", `{"id":"c","threadId":"t","createdAt":1}`, driver.ErrInvalidEntry},
		{"reason number", `{"id":"c","threadId":"t","createdAt":1,"reason":1}`, driver.ErrInvalidEntry},
		{"label number", `{` + ok + `,"label":1}`, driver.ErrInvalidEntry},
		{"label lone surrogate", `{` + ok + `,"label":"\ud800"}`, driver.ErrInvalidEntry},
		{"sourceRunId array", `{` + ok + `,"sourceRunId":[]}`, driver.ErrInvalidEntry},
		{"sourceRunId raw invalid UTF-8", "{" + ok + ",\"sourceRunId\":\"\xff\"}", driver.ErrInvalidEntry},

		{"files object", `{` + ok + `,"files":{}}`, driver.ErrInvalidEntry},
		{"files string", `{` + ok + `,"files":"a"}`, driver.ErrInvalidEntry},
		{"files of numbers", `{` + ok + `,"files":[1]}`, driver.ErrInvalidEntry},
		{"files with null", `{` + ok + `,"files":[null]}`, driver.ErrInvalidEntry},
		{"bad second entry", `{` + ok + `,"files":[` + file + `,{"path":"d","kind":"dir","size":1}]}`, driver.ErrInvalidEntry},

		{"conversation object", `{` + ok + `,"conversation":{}}`, driver.ErrInvalidEntry},
		{"conversation string", `{` + ok + `,"conversation":"[]"}`, driver.ErrInvalidEntry},
		{"conversation number", `{` + ok + `,"conversation":0}`, driver.ErrInvalidEntry},
		{"conversation true", `{` + ok + `,"conversation":true}`, driver.ErrInvalidEntry},
		{"conversation raw invalid UTF-8", "{" + ok + ",\"conversation\":[\"\xff\"]}", driver.ErrInvalidEntry},

		{"artifacts object", `{` + ok + `,"artifacts":{}}`, driver.ErrInvalidEntry},
		{"artifact missing blobKey", `{` + ok + `,"artifacts":[{"artifactId":"a","name":"n","mimeType":"m","size":1,"createdAt":1}]}`, driver.ErrInvalidEntry},
		{"artifact fractional size", `{` + ok + `,"artifacts":[{"artifactId":"a","name":"n","mimeType":"m","size":1.5,"blobKey":"k","createdAt":1}]}`, driver.ErrInvalidEntry},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var cp driver.Checkpoint
			wantErr(t, json.Unmarshal([]byte(tt.doc), &cp), tt.want, "")
		})
	}
	t.Run("syntax error", func(t *testing.T) {
		var cp driver.Checkpoint
		var syn *json.SyntaxError
		if err := json.Unmarshal([]byte(`{"id":"c",`), &cp); !errors.As(err, &syn) {
			t.Fatalf("error = %v, want a *json.SyntaxError", err)
		}
	})
}

func TestUnmarshalEntry(t *testing.T) {
	key := fileKey(3)
	withSize := func(size string) string {
		return `{"path":"f","kind":"file","blobKey":"` + key + `","size":` + size + `}`
	}
	for _, tt := range []struct {
		name string
		doc  string
		want driver.Entry
	}{
		{"dir", `{"path":"d","kind":"dir"}`, driver.Entry{Path: "d", Kind: driver.KindDir}},
		{"dir, field names are case-sensitive", `{"path":"d","kind":"dir","Size":3,"BlobKey":"x"}`, driver.Entry{Path: "d", Kind: driver.KindDir}},
		{"file", withSize("12"), driver.Entry{Path: "f", Kind: driver.KindFile, BlobKey: key, Size: 12}},
		{"size 0", withSize("0"), driver.Entry{Path: "f", Kind: driver.KindFile, BlobKey: key}},
		{"size -0", withSize("-0"), driver.Entry{Path: "f", Kind: driver.KindFile, BlobKey: key}},
		{"size 1e3", withSize("1e3"), driver.Entry{Path: "f", Kind: driver.KindFile, BlobKey: key, Size: 1000}},
		{"size 1E+3", withSize("1E+3"), driver.Entry{Path: "f", Kind: driver.KindFile, BlobKey: key, Size: 1000}},
		{"size 2.0", withSize("2.0"), driver.Entry{Path: "f", Kind: driver.KindFile, BlobKey: key, Size: 2}},
		{"size 2.5e1", withSize("2.5e1"), driver.Entry{Path: "f", Kind: driver.KindFile, BlobKey: key, Size: 25}},
		{"size 2^53-1", withSize("9007199254740991"), driver.Entry{Path: "f", Kind: driver.KindFile, BlobKey: key, Size: maxSize}},
		{"size 2^53-1 in exponent form", withSize("9.007199254740991e15"), driver.Entry{Path: "f", Kind: driver.KindFile, BlobKey: key, Size: maxSize}},
		{"unknown fields ignored", `{"path":"f","kind":"file","blobKey":"` + key + `","size":1,"mode":420}`, driver.Entry{Path: "f", Kind: driver.KindFile, BlobKey: key, Size: 1}},
		{"blobKey not checked here", `{"path":"f","kind":"file","blobKey":"any","size":1}`, driver.Entry{Path: "f", Kind: driver.KindFile, BlobKey: "any", Size: 1}},
		{"path not checked here", `{"path":"/abs/../x","kind":"dir"}`, driver.Entry{Path: "/abs/../x", Kind: driver.KindDir}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var e driver.Entry
			if err := json.Unmarshal([]byte(tt.doc), &e); err != nil {
				t.Fatalf("Unmarshal(%s): %v", tt.doc, err)
			}
			if e != tt.want {
				t.Fatalf("Unmarshal(%s) = %+v, want %+v", tt.doc, e, tt.want)
			}
		})
	}
}

func TestUnmarshalEntryErrors(t *testing.T) {
	key := fileKey(3)
	withSize := func(size string) string {
		return `{"path":"f","kind":"file","blobKey":"` + key + `","size":` + size + `}`
	}
	for _, tt := range []struct{ name, doc string }{
		{"dir with size", `{"path":"d","kind":"dir","size":1}`},
		{"dir with size 0", `{"path":"d","kind":"dir","size":0}`},
		{"dir with blobKey", `{"path":"d","kind":"dir","blobKey":"` + key + `"}`},
		{"dir with empty blobKey", `{"path":"d","kind":"dir","blobKey":""}`},
		{"file without size", `{"path":"f","kind":"file","blobKey":"` + key + `"}`},
		{"file with null size", withSize("null")},
		{"file without blobKey", `{"path":"f","kind":"file","size":1}`},
		{"file with null blobKey", `{"path":"f","kind":"file","blobKey":null,"size":1}`},
		{"file with numeric blobKey", `{"path":"f","kind":"file","blobKey":1,"size":1}`},
		{"file, field names are case-sensitive", `{"path":"f","kind":"file","blobKey":"` + key + `","SIZE":1}`},
		{"size 1.5", withSize("1.5")},
		{"size -0.5", withSize("-0.5")},
		{"size 1e-1", withSize("1e-1")},
		{"size 2^53", withSize("9007199254740992")},
		{"size 2^53+1", withSize("9007199254740993")},
		{"size 1e16", withSize("1e16")},
		{"size 1e400", withSize("1e400")},
		{"size -1", withSize("-1")},
		{"size string", withSize(`"12"`)},
		{"size bool", withSize("true")},
		{"size array", withSize("[1]")},
		{"size object", withSize(`{"n":1}`)},
		{"unknown kind", `{"path":"l","kind":"symlink"}`},
		{"kind other case", `{"path":"d","kind":"Dir"}`},
		{"kind number", `{"path":"d","kind":1}`},
		{"kind missing", `{"path":"d"}`},
		{"path missing", `{"kind":"dir"}`},
		{"path null", `{"path":null,"kind":"dir"}`},
		{"path number", `{"path":1,"kind":"dir"}`},
		{"path lone surrogate", `{"path":"a\udc00","kind":"dir"}`},
		{"path raw invalid UTF-8", "{\"path\":\"a\xff\",\"kind\":\"dir\"}"},
		{"blobKey lone surrogate", `{"path":"f","kind":"file","blobKey":"\ud800","size":1}`},
		{"not an object", `["path","f"]`},
		{"a string", `"f"`},
		{"null", `null`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var e driver.Entry
			wantErr(t, json.Unmarshal([]byte(tt.doc), &e), driver.ErrInvalidEntry, "")
			// The same entry inside a checkpoint fails the same way.
			var cp driver.Checkpoint
			doc := `{"id":"c","threadId":"t","createdAt":1,"reason":"named","files":[` + tt.doc + `]}`
			wantErr(t, json.Unmarshal([]byte(doc), &cp), driver.ErrInvalidEntry, "")
		})
	}
}

func TestUnmarshalArtifact(t *testing.T) {
	key := artifactKey(4)
	doc := func(size, createdAt string) string {
		return `{"artifactId":"a","name":"n","mimeType":"text/plain","size":` + size + `,"blobKey":"` + key + `","createdAt":` + createdAt + `}`
	}
	var a driver.Artifact
	if err := json.Unmarshal([]byte(doc("1e3", "-1.5")), &a); err != nil {
		t.Fatal(err)
	}
	want := driver.Artifact{ArtifactID: "a", Name: "n", MimeType: "text/plain", Size: 1000, BlobKey: key, CreatedAt: -1.5}
	if a != want {
		t.Fatalf("Unmarshal = %+v, want %+v", a, want)
	}
	if got, want := mustMarshal(t, a), doc("1000", "-1.5"); got != want {
		t.Fatalf("Marshal = %s, want %s", got, want)
	}
	for _, bad := range []string{
		doc("1.5", "1"), doc("-1", "1"), doc("9007199254740992", "1"), doc(`"1"`, "1"), doc("null", "1"),
		doc("1", `"1"`), doc("1", "null"), doc("1", "1e999"),
		`{"name":"n","mimeType":"m","size":1,"blobKey":"k","createdAt":1}`,
		`{"artifactId":"a","mimeType":"m","size":1,"blobKey":"k","createdAt":1}`,
		`{"artifactId":"a","name":"n","size":1,"blobKey":"k","createdAt":1}`,
		`{"artifactId":"a","name":"n","mimeType":"m","blobKey":"k","createdAt":1}`,
		`{"artifactId":"a","name":"n","mimeType":"m","size":1,"blobKey":"k"}`,
		`{"artifactId":1,"name":"n","mimeType":"m","size":1,"blobKey":"k","createdAt":1}`,
		`{"artifactId":"\ud800","name":"n","mimeType":"m","size":1,"blobKey":"k","createdAt":1}`,
		`[]`, `null`,
	} {
		var a driver.Artifact
		if err := json.Unmarshal([]byte(bad), &a); !errors.Is(err, driver.ErrInvalidEntry) {
			t.Errorf("Unmarshal(%s) error = %v, want ErrInvalidEntry", bad, err)
		}
	}
}

func TestInstanceRecordJSON(t *testing.T) {
	full := driver.InstanceRecord{Key: "k", Provider: "daytona", ProviderSandboxID: "sb-1", ThreadID: "t",
		LatestSnapshotID: "snap-1", LatestRunID: "run-1", UpdatedAt: 1_700_000_000_123}
	const fullJSON = `{"key":"k","provider":"daytona","providerSandboxId":"sb-1","threadId":"t","latestSnapshotId":"snap-1","latestRunId":"run-1","updatedAt":1700000000123}`
	minimal := driver.InstanceRecord{Key: "k", Provider: "p", ProviderSandboxID: "s", ThreadID: "t", UpdatedAt: -5}
	const minimalJSON = `{"key":"k","provider":"p","providerSandboxId":"s","threadId":"t","updatedAt":-5}`
	for _, tt := range []struct {
		rec  driver.InstanceRecord
		want string
	}{{full, fullJSON}, {minimal, minimalJSON}} {
		if got := mustMarshal(t, tt.rec); got != tt.want {
			t.Errorf("Marshal = %s, want %s", got, tt.want)
		}
		if got := mustMarshal(t, &tt.rec); got != tt.want {
			t.Errorf("Marshal(pointer) = %s, want %s", got, tt.want)
		}
		var back driver.InstanceRecord
		if err := json.Unmarshal([]byte(tt.want), &back); err != nil {
			t.Fatal(err)
		}
		if back != tt.rec {
			t.Errorf("Unmarshal(%s) = %+v, want %+v", tt.want, back, tt.rec)
		}
	}
	var back driver.InstanceRecord
	if err := json.Unmarshal([]byte(`{"key":"k","provider":"p","providerSandboxId":"s","threadId":"t","updatedAt":1e3,"latestSnapshotId":null,"latestRunId":null}`), &back); err != nil {
		t.Fatal(err)
	}
	if back != (driver.InstanceRecord{Key: "k", Provider: "p", ProviderSandboxID: "s", ThreadID: "t", UpdatedAt: 1000}) {
		t.Errorf("null optional fields decode as %+v, want them absent", back)
	}

	for _, tt := range []struct {
		doc  string
		want error
	}{
		{`{"provider":"p","providerSandboxId":"s","threadId":"t","updatedAt":1}`, driver.ErrInvalidID},
		{`{"key":5,"provider":"p","providerSandboxId":"s","threadId":"t","updatedAt":1}`, driver.ErrInvalidID},
		{`{"key":"\ud800","provider":"p","providerSandboxId":"s","threadId":"t","updatedAt":1}`, driver.ErrInvalidID},
		{`{"Key":"k","provider":"p","providerSandboxId":"s","threadId":"t","updatedAt":1}`, driver.ErrInvalidID},
		{`{"key":"k","providerSandboxId":"s","threadId":"t","updatedAt":1}`, driver.ErrInvalidEntry},
		{`{"key":"k","provider":"p","threadId":"t","updatedAt":1}`, driver.ErrInvalidEntry},
		{`{"key":"k","provider":"p","providerSandboxId":"s","updatedAt":1}`, driver.ErrInvalidEntry},
		{`{"key":"k","provider":"p","providerSandboxId":"s","threadId":"t"}`, driver.ErrInvalidEntry},
		{`{"key":"k","provider":"p","providerSandboxId":"s","threadId":"t","updatedAt":"1"}`, driver.ErrInvalidEntry},
		{`{"key":"k","provider":"p","providerSandboxId":"s","threadId":"t","updatedAt":1.5}`, driver.ErrInvalidEntry},
		{`{"key":"k","provider":"p","providerSandboxId":"s","threadId":"t","updatedAt":1e300}`, driver.ErrInvalidEntry},
		{`{"key":"k","provider":"p","providerSandboxId":"s","threadId":"t","updatedAt":1,"latestRunId":1}`, driver.ErrInvalidEntry},
		{`{"key":"k","provider":"p","providerSandboxId":"s","threadId":"\udc00","updatedAt":1}`, driver.ErrInvalidEntry},
		{`[]`, driver.ErrInvalidEntry},
	} {
		var r driver.InstanceRecord
		if err := json.Unmarshal([]byte(tt.doc), &r); !errors.Is(err, tt.want) {
			t.Errorf("Unmarshal(%s) error = %v, want %v", tt.doc, err, tt.want)
		}
	}
}

// A failed decode leaves the target as it was.
func TestUnmarshalFailureLeavesTarget(t *testing.T) {
	cp := *validCheckpoint()
	before := mustMarshal(t, &cp)
	if err := json.Unmarshal([]byte(`{"id":"x","threadId":"t","createdAt":1,"reason":"named","files":[{"path":"d","kind":"dir","size":1}]}`), &cp); err == nil {
		t.Fatal("Unmarshal accepted a directory with a size")
	}
	if after := mustMarshal(t, &cp); after != before {
		t.Fatalf("failed Unmarshal changed the checkpoint:\n%s\n%s", before, after)
	}
	e := driver.Entry{Path: "keep", Kind: driver.KindDir}
	if err := e.UnmarshalJSON([]byte(`{"path":"f","kind":"file"}`)); err == nil || e.Path != "keep" {
		t.Fatalf("failed Entry.UnmarshalJSON: err %v, entry %+v", err, e)
	}
}

func TestJSONMarshalIsCompact(t *testing.T) {
	out := mustMarshal(t, validCheckpoint())
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(out)); err != nil {
		t.Fatal(err)
	}
	if buf.String() != out {
		t.Fatalf("Marshal output is not compact:\n%s", out)
	}
}

// A non-finite float has no JSON form; encoding fails instead of writing
// something a reader would take for a number.
func TestMarshalNonFinite(t *testing.T) {
	for _, f := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		cp := &driver.Checkpoint{ID: "c", ThreadID: "t", Reason: driver.ReasonNamed, CreatedAt: f}
		if _, err := cp.MarshalJSON(); err == nil {
			t.Errorf("MarshalJSON with createdAt %v succeeded", f)
		}
		a := driver.Artifact{CreatedAt: f}
		if _, err := a.MarshalJSON(); err == nil {
			t.Errorf("Artifact.MarshalJSON with createdAt %v succeeded", f)
		}
	}
}

// UnmarshalJSON called directly (not through json.Unmarshal, which checks
// the syntax first) still rejects malformed input.
func TestUnmarshalDirectMalformed(t *testing.T) {
	for _, doc := range []string{`{`, `{"id":}`, `{"path":"a",}`, ``, `  `} {
		var cp driver.Checkpoint
		var e driver.Entry
		var a driver.Artifact
		var r driver.InstanceRecord
		for name, err := range map[string]error{
			"Checkpoint":     cp.UnmarshalJSON([]byte(doc)),
			"Entry":          e.UnmarshalJSON([]byte(doc)),
			"Artifact":       a.UnmarshalJSON([]byte(doc)),
			"InstanceRecord": r.UnmarshalJSON([]byte(doc)),
		} {
			if !errors.Is(err, driver.ErrInvalidEntry) {
				t.Errorf("%s.UnmarshalJSON(%q) error = %v, want ErrInvalidEntry", name, doc, err)
			}
		}
	}
}

// TestEntryMembers: an entry is read a member at a time (the flat-object
// path): an escaped name matches, a repeated name keeps its last value,
// and an unknown member, however nested, is skipped.
func TestEntryMembers(t *testing.T) {
	key := "sandbox-files/sha256/" + strings.Repeat("ab", 32)
	for _, c := range []struct {
		name, entry string
		want        driver.Entry
	}{
		{"escaped name", `{"p\u0061th":"a","kind":"dir"}`, driver.Entry{Path: "a", Kind: driver.KindDir}},
		{"repeated name", `{"path":"a","kind":"dir","kind":"file","blobKey":"` + key + `","size":7}`,
			driver.Entry{Path: "a", Kind: driver.KindFile, BlobKey: key, Size: 7}},
		{"nested unknown", `{"x":{"kind":"file","y":[1,{"path":"z"}]},"path":"a","kind":"dir"}`, driver.Entry{Path: "a", Kind: driver.KindDir}},
	} {
		in := `{"id":"c","threadId":"t","createdAt":1,"reason":"automatic","files":[` + c.entry + `],"conversation":[]}`
		var cp driver.Checkpoint
		if err := cp.UnmarshalJSON([]byte(in)); err != nil {
			t.Errorf("%s: UnmarshalJSON: %v", c.name, err)
			continue
		}
		if len(cp.Files) != 1 || cp.Files[0] != c.want {
			t.Errorf("%s: files = %+v, want [%+v]", c.name, cp.Files, c.want)
		}
	}
}
