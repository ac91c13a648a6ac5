package httpstore

import (
	"bytes"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
)

// rootDecode is what decodeCheckpoint did before the fast path: the root
// decoder, with the conversation's whitespace kept.
func rootDecode(raw []byte) (*ckptstore.Checkpoint, error) { return decodeCheckpointRoot(raw) }

// mutations turn a checkpoint's JSON into near misses of every kind the
// root decoder refuses or treats specially.
var mutations = []struct{ from, to string }{
	{`"id":`, `"id":5,"id":`}, {`"id":"`, `"id":"\ud800`}, {`"id":"`, `"i\u0064":"x`}, {`"id":"`, `"ID":"`},
	{`"threadId":"`, `"threadId":null,"x":"`}, {`"parentCheckpointId":null`, `"parentCheckpointId":"\udc00"`},
	{`"parentCheckpointId":null`, `"parentCheckpointId":7`}, {`"parentCheckpointId":null`, `"parentCheckpointId":"p"`},
	{`"createdAt":`, `"createdAt":"1","c":`}, {`"createdAt":`, `"createdAt":1e400,"c":`}, {`"createdAt":`, `"createdAt":-0.0,"c":`},
	{`"reason":"`, `"reason":"x\u0000`}, {`"reason":`, `"reason":null,"r":`}, {`"label":"`, `"label":1,"l":"`},
	{`"files":[`, `"files":[null,`}, {`"files":[`, `"files":[1,`}, {`"files":[`, `"files":{"a":`}, {`"files":[]`, `"files":null`},
	{`"kind":"dir"`, `"kind":"dir","size":1`}, {`"kind":"dir"`, `"kind":"dir","blobKey":null`}, {`"kind":"file"`, `"kind":"link"`},
	{`"size":`, `"size":1.5,"s":`}, {`"size":`, `"size":-1,"s":`}, {`"size":`, `"size":1e3,"s":`}, {`"size":`, `"size":9007199254740992,"s":`},
	{`"path":"`, `"path":"\ud83d\ude00`}, {`"path":"`, "\"path\":\"\xff"}, {`"blobKey":"`, `"blobKey":null,"b":"`},
	{`"conversation":[`, `"conversation": [`}, {`"conversation":`, `"conversation":{},"c":`}, {`"conversation":`, `"conversation":null,"c":`},
	{`"conversation":[`, "\"conversation\":\n[\"\xff\","}, {`"conversation":`, `"conversation":"[]","c":`},
	{`"artifacts":[`, `"artifacts":[{},`}, {`"artifactId":"`, `"artifactId":3,"a":"`}, {`"createdAt":`, `"createdAt":`},
	{`}`, ` }`}, {`{`, ` { `}, {`]`, ` ] `}, {`,`, ` , `}, {`:`, ` : `},
	{`{"id"`, `{"extra":{"deep":[1,2,{"x":null}]},"id"`}, {`"artifacts":[]`, `"artifacts":[],"artifacts":null`},
}

// agree checks the fast path against the root decoder on raw: either the
// fast path leaves raw to the root decoder, or both accept it with equal
// results.
func agree(t interface {
	Fatalf(string, ...any)
}, raw []byte) {
	want, werr := rootDecode(raw)
	got, ok := decodeCheckpointFast(raw)
	if !ok {
		return // the root decoder decides: nothing to compare
	}
	if werr != nil {
		t.Fatalf("%s: the fast path accepted what the root decoder refuses (%v)", raw, werr)
	}
	if !driver.EqualCheckpoints(got, want) || !bytes.Equal(got.Conversation, want.Conversation) {
		t.Fatalf("%s:\nfast %+v\nroot %+v", raw, got, want)
	}
}

// TestFastCheckpointDecoderEachMutation applies each mutation alone to a
// checkpoint that has every field, a file, a directory and an artifact.
func TestFastCheckpointDecoderEachMutation(t *testing.T) {
	cp := &ckptstore.Checkpoint{ID: "c1", ThreadID: "t", CreatedAt: 2, Reason: ckptstore.ReasonNamed, Label: "l",
		Conversation: []byte(`[1]`),
		Files: []ckptstore.Entry{{Path: "d", Kind: ckptstore.KindDir},
			{Path: "d/f", Kind: ckptstore.KindFile, BlobKey: "sandbox-files/sha256/" + strings.Repeat("a", 64), Size: 1}},
		Artifacts: []ckptstore.Artifact{{ArtifactID: "a", Name: "n", MimeType: "m", Size: 3, BlobKey: "k", CreatedAt: 1.5}}}
	b, _ := cp.MarshalJSON()
	for _, m := range mutations {
		for i := 0; ; {
			j := strings.Index(string(b[i:]), m.from)
			if j < 0 {
				break
			}
			j += i
			agree(t, []byte(string(b[:j])+m.to+string(b[j+len(m.from):])))
			i = j + 1
		}
	}
}

func TestFastCheckpointDecoderAgrees(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cp := &ckptstore.Checkpoint{ID: "c1", ThreadID: "t", CreatedAt: rapid.Float64Range(-1e10, 1e10).Draw(t, "at"),
			Reason: ckptstore.ReasonAutomatic, Label: rapid.SampledFrom([]string{"", "l", "é\u2028"}).Draw(t, "label"),
			Conversation: []byte(rapid.SampledFrom([]string{"", "[]", ` [1,{"a":"b"}] `, `["\u2028"]`}).Draw(t, "conv"))}
		for i := range rapid.IntRange(0, 3).Draw(t, "files") {
			kind := rapid.SampledFrom([]ckptstore.EntryKind{ckptstore.KindFile, ckptstore.KindDir}).Draw(t, "kind")
			e := ckptstore.Entry{Path: strings.Repeat("p", i+1), Kind: kind}
			if kind == ckptstore.KindFile {
				e.BlobKey, e.Size = "sandbox-files/sha256/"+strings.Repeat("a", 64), int64(i)
			}
			cp.Files = append(cp.Files, e)
		}
		if rapid.Bool().Draw(t, "artifact") {
			cp.Artifacts = []ckptstore.Artifact{{ArtifactID: "a", Name: "n", MimeType: "m", Size: 3, BlobKey: "k", CreatedAt: 1.5}}
		}
		b, err := cp.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		for range rapid.IntRange(0, 3).Draw(t, "mutations") {
			m := rapid.SampledFrom(mutations).Draw(t, "mutation")
			if i := strings.Index(s, m.from); i >= 0 {
				s = s[:i] + m.to + s[i+len(m.from):]
			}
		}
		agree(t, []byte(s))
		// decodeCheckpoint as a whole answers as the root decoder does.
		_, err1 := decodeCheckpoint([]byte(s))
		_, err2 := rootDecode([]byte(s))
		if ckptstore.Code(err1) != ckptstore.Code(err2) || (err1 == nil) != (err2 == nil) {
			t.Fatalf("%s: decodeCheckpoint %v, root %v", s, err1, err2)
		}
	})
}

// TestFastCheckpointDecoderTakesThePlainCase: the fast path does handle
// what clients send (else it would prove nothing and save nothing).
func TestFastCheckpointDecoderTakesThePlainCase(t *testing.T) {
	cp := &ckptstore.Checkpoint{ID: "c", ThreadID: "t", ParentCheckpointID: "p", CreatedAt: 1, Reason: ckptstore.ReasonNamed,
		Label: "l", SourceRunID: "r", Conversation: []byte(` ["x"] `),
		Files:     []ckptstore.Entry{{Path: "d", Kind: ckptstore.KindDir}, {Path: "d/f", Kind: ckptstore.KindFile, BlobKey: "k", Size: 2}},
		Artifacts: []ckptstore.Artifact{{ArtifactID: "a", Name: "n", MimeType: "m", Size: 3, BlobKey: "k2", CreatedAt: 4}}}
	b := appendCheckpointJSON(nil, cp)
	got, ok := decodeCheckpointFast(b)
	if !ok || !driver.EqualCheckpoints(got, cp) || string(got.Conversation) != ` ["x"] ` {
		t.Fatalf("fast path: %v %+v", ok, got)
	}
}

// TestFastWriterDecoderAgrees: what the fast writer decoder accepts, the
// root decoder accepts with the same result.
func TestFastWriterDecoderAgrees(t *testing.T) {
	base := `{"threadId":"t","ownerToken":"o","fence":3}`
	for _, m := range []struct{ from, to string }{
		{``, ``}, {`"t"`, `"\ud800"`}, {`"t"`, `5`}, {`"o"`, `null`}, {`"o"`, `"\udc00"`}, {`"o"`, "\"\xff\""},
		{`3}`, `3.5}`}, {`3}`, `-3}`}, {`3}`, `1e300}`}, {`3}`, `"3"}`}, {`3}`, `9007199254740992}`},
		{`{`, `{"fence":1,`}, {`}`, `,"threadId":"u"}`}, {`"threadId"`, `"thread\u0049d"`}, {`{`, `{"x":[{}],`},
	} {
		raw := []byte(strings.Replace(base, m.from, m.to, 1))
		var want ckptstore.Writer
		werr := want.UnmarshalJSON(raw)
		got, ok := decodeWriterFast(raw)
		if !ok {
			continue
		}
		if werr != nil || got != want {
			t.Errorf("%s: fast %+v, root %+v (%v)", raw, got, want, werr)
		}
	}
	if _, ok := decodeWriterFast([]byte(base)); !ok {
		t.Error("the fast path refuses a plain writer")
	}
}
