package driver_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/ckptstore/ckptstore/driver"
)

// fuzzSeed is a checkpoint with every field, a directory, a file and an
// artifact; fuzzMutations turn its JSON into near misses of every kind the
// decoder refuses or treats specially.
const fuzzSeed = `{"id":"c1","threadId":"t","parentCheckpointId":null,"createdAt":2,"reason":"named","label":"l",` +
	`"files":[{"path":"d","kind":"dir"},{"path":"d/f","kind":"file","blobKey":"k","size":3}],` +
	`"conversation":[1],"artifacts":[{"artifactId":"a","name":"n","mimeType":"m","size":1,"blobKey":"b","createdAt":1}]}`

var fuzzMutations = []struct{ from, to string }{
	{`"id":`, `"id":5,"id":`}, {`"id":"`, `"id":"\ud800`}, {`"id":"`, `"i\u0064":"x`}, {`"id":"`, `"ID":"`},
	{`"threadId":"`, `"threadId":null,"x":"`}, {`"parentCheckpointId":null`, `"parentCheckpointId":"\udc00"`},
	{`"parentCheckpointId":null`, `"parentCheckpointId":7`}, {`"parentCheckpointId":null`, `"parentCheckpointId":"p"`},
	{`"createdAt":`, `"createdAt":"1","c":`}, {`"createdAt":`, `"createdAt":1e400,"c":`}, {`"createdAt":`, `"createdAt":-0.0,"c":`},
	{`"reason":"`, `"reason":"x\u0000`}, {`"reason":`, `"reason":null,"r":`}, {`"label":"`, `"label":1,"l":"`},
	{`"files":[`, `"files":[null,`}, {`"files":[`, `"files":[1,`}, {`"files":[`, `"files":{"a":`},
	{`"kind":"dir"`, `"kind":"dir","size":1`}, {`"kind":"dir"`, `"kind":"dir","blobKey":null`}, {`"kind":"file"`, `"kind":"link"`},
	{`"kind":"dir"`, `"kind":"\u0064ir"`}, {`"size":`, `"size":1.5,"s":`}, {`"size":`, `"size":-1,"s":`}, {`"size":`, `"size":1e3,"s":`},
	{`"size":`, `"size":9007199254740992,"s":`}, {`"path":"`, `"path":"\ud83d\ude00`}, {`"path":"`, "\"path\":\"\xff"},
	{`"blobKey":"`, `"blobKey":null,"b":"`}, {`"conversation":[`, `"conversation": [`}, {`"conversation":`, `"conversation":{},"c":`},
	{`"conversation":`, `"conversation":null,"c":`}, {`"conversation":[`, "\"conversation\":\n[\"\xff\","},
	{`"conversation":`, `"conversation":"[]","c":`}, {`"artifacts":[`, `"artifacts":[{},`}, {`"artifactId":"`, `"artifactId":3,"a":"`},
	{`}`, ` }`}, {`{`, ` { `}, {`]`, ` ] `}, {`,`, ` , `}, {`:`, ` : `}, {`}`, `} {}`}, {`,`, `,,`}, {`]`, ``},
	{`{"id"`, `{"extra":{"deep":[1,2,{"x":null}]},"id"`}, {`"path":"`, `"p\u0061th":"`},
	{`"kind":"dir"`, `"kind":"file","kind":"dir"`}, {`"kind":"file"`, `"x":{"kind":"dir"},"kind":"file"`}, {`"artifacts":[`, `"artifacts":null,"artifacts":[`},
}

// FuzzCheckpointJSON is the codec's property: what decodes re-encodes and
// decodes again to the same checkpoint and the same bytes; what does not
// decode fails with ErrInvalidEntry or ErrInvalidID, never a panic; and
// malformed JSON never decodes.
func FuzzCheckpointJSON(f *testing.F) {
	f.Add([]byte(fuzzSeed))
	for _, m := range fuzzMutations {
		f.Add([]byte(strings.Replace(fuzzSeed, m.from, m.to, 1)))
		f.Add([]byte(strings.ReplaceAll(fuzzSeed, m.from, m.to)))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var cp driver.Checkpoint
		err := cp.UnmarshalJSON(in)
		if err != nil {
			if !errors.Is(err, driver.ErrInvalidEntry) && !errors.Is(err, driver.ErrInvalidID) {
				t.Fatalf("UnmarshalJSON(%q): untyped error %v", in, err)
			}
			return
		}
		if !json.Valid(in) {
			t.Fatalf("UnmarshalJSON accepted malformed JSON %q", in)
		}
		out, err := cp.MarshalJSON()
		if err != nil {
			t.Fatalf("MarshalJSON of what %q decoded to: %v", in, err)
		}
		var back driver.Checkpoint
		if err := back.UnmarshalJSON(out); err != nil {
			t.Fatalf("UnmarshalJSON(%s), the re-encoding of %q: %v", out, in, err)
		}
		if d := sameCheckpoint(&cp, &back); d != "" {
			t.Fatalf("%q round-trips as %s: %s", in, out, d)
		}
		if again, _ := back.MarshalJSON(); string(again) != string(out) {
			t.Fatalf("re-encoding differs:\n%s\n%s", out, again)
		}
	})
}

// TestDecodeErrorsNamePathAndOffset: a decode error names the field by its
// JSON pointer and the byte offset of its value, and keeps its type.
func TestDecodeErrorsNamePathAndOffset(t *testing.T) {
	for _, tt := range []struct {
		doc, want string
		sentinel  error
	}{
		{`{"id":"c","threadId":"t","createdAt":1,"reason":"named","files":[{"path":"d","kind":"dir"},{"path":"f","kind":"file","blobKey":"k","size":1.5}]}`,
			"/files/1/size 1.5 is not a safe integer in range (offset 138)", driver.ErrInvalidEntry},
		{`{"id":"c","threadId":7,"createdAt":1,"reason":"named"}`, "/threadId is not a string (offset 21)", driver.ErrInvalidID},
		{`{"id":"c","threadId":"t","createdAt":"x","reason":"named"}`, "/createdAt must be a number (offset 37)", driver.ErrInvalidEntry},
		{`{"id":"c","threadId":"t","createdAt":1,"reason":"named","artifacts":[{"artifactId":"\ud800"}]}`,
			"/artifacts/0/artifactId is not well-formed Unicode (offset 83)", driver.ErrInvalidEntry},
	} {
		var cp driver.Checkpoint
		err := cp.UnmarshalJSON([]byte(tt.doc))
		if !errors.Is(err, tt.sentinel) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("UnmarshalJSON(%s) = %v, want %v naming %q", tt.doc, err, tt.sentinel, tt.want)
		}
	}
	var cp driver.Checkpoint
	err := cp.UnmarshalJSON([]byte(`{"id":"c","threadId":"t" "x"}`))
	if !errors.Is(err, driver.ErrInvalidEntry) || !strings.Contains(err.Error(), "offset 25") {
		t.Errorf("a syntax error = %v, want ErrInvalidEntry naming offset 25", err)
	}
}
