package httpstore

// A one-pass decoder of the checkpoint JSON for the common case. Every
// append a server receives and every checkpoint a client reads back is
// decoded; the root package's strict decoder (Checkpoint.UnmarshalJSON)
// decodes each object into a map of raw values, entry by entry, which is
// most of a request's allocations. decodeCheckpointFast reads the same
// object once with jsontext and builds the checkpoint directly. It takes
// only the plain case — every field present with its proper JSON type and
// well-formed strings — and reports anything else (any fault at all) as
// not handled, so that UnmarshalJSON, the one authority on what is refused
// and with which error, decides. What it accepts it decodes to what
// UnmarshalJSON would (the differential test checks both halves).

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
)

// reader walks one checkpoint object with a single jsontext decoder:
// values are taken as slices of raw by the decoder's offsets, nothing is
// copied until the checkpoint is built.
type reader struct {
	raw []byte
	dec *jsontext.Decoder
}

// value reads the next value and returns its bytes in raw.
func (r *reader) value() ([]byte, bool) {
	v, err := r.dec.ReadValue()
	if err != nil {
		return nil, false
	}
	end := int(r.dec.InputOffset())
	return r.raw[end-len(v) : end], true
}

// object reads an object, calling field for each name (unquoted); field
// reads (or skips) the value itself. The last of a repeated name is the
// one that counts, so field must overwrite. A name is read as a raw value,
// not a token, so that it costs no string: a name with an escape is left
// to the root decoder, as anything unusual is.
func (r *reader) object(field func(name []byte, nameEnd int) bool) bool {
	if t, err := r.dec.ReadToken(); err != nil || t.Kind() != '{' {
		return false
	}
	for r.dec.PeekKind() == '"' {
		name, err := r.dec.ReadValue()
		if err != nil || bytes.IndexByte(name, '\\') >= 0 {
			return false
		}
		if !field(name[1:len(name)-1], int(r.dec.InputOffset())) {
			return false
		}
	}
	t, err := r.dec.ReadToken()
	return err == nil && t.Kind() == '}'
}

// array reads an array, calling elem for each element; elem reads it.
// null is no array (nil, true); any other kind fails.
func (r *reader) array(elem func() bool) (isArray, ok bool) {
	switch r.dec.PeekKind() {
	case 'n':
		_, err := r.dec.ReadToken()
		return false, err == nil
	case '[':
	default:
		return false, false
	}
	if _, err := r.dec.ReadToken(); err != nil {
		return false, false
	}
	for r.dec.PeekKind() != ']' {
		if r.dec.PeekKind() == 0 || !elem() {
			return false, false
		}
	}
	_, err := r.dec.ReadToken()
	return true, err == nil
}

func (r *reader) skip() bool { return r.dec.SkipValue() == nil }

// plainString decodes a JSON string that is well-formed; ok is false for
// anything else (null included).
func plainString(raw []byte) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	s, ok, err := driver.DecodeJSONString(raw, "", ckptstore.ErrInvalidEntry)
	return s, ok && err == nil
}

func isJSONNull(raw []byte) bool { return len(raw) == 0 || string(raw) == "null" }

// plainFloat decodes a JSON number that a float64 holds.
func plainFloat(raw []byte) (float64, bool) {
	if len(raw) == 0 || !(raw[0] == '-' || '0' <= raw[0] && raw[0] <= '9') {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	return f, err == nil
}

// plainSafeInt decodes a JSON number that is an integer from 0 to 2^53−1.
func plainSafeInt(raw []byte) (int64, bool) {
	f, ok := plainFloat(raw)
	if !ok || f != math.Trunc(f) || f < 0 || f > driver.MaxSize {
		return 0, false
	}
	return int64(f), true
}

// rawField is a field of an object whose raw value a decoder keeps.
type rawField struct {
	name string
	raw  *[]byte
}

// field reads the value of the field called name into its rawField of
// fs, overwriting an earlier one of the same name, or skips it when fs has
// none.
func (r *reader) field(name []byte, fs []rawField) bool {
	for _, f := range fs {
		if f.name == string(name) {
			var ok bool
			*f.raw, ok = r.value()
			return ok
		}
	}
	return r.skip()
}

// fields reads an object, keeping the raw value of each field of fs.
func (r *reader) fields(fs ...rawField) bool {
	return r.object(func(name []byte, _ int) bool { return r.field(name, fs) })
}

// stringInto decodes raw, a plain string, into dst. (A pointer per call,
// not a table of them: a table's pointers would escape with the raw values
// plainString keeps, moving every entry to the heap.)
func stringInto(dst *string, raw []byte) bool {
	s, ok := plainString(raw)
	*dst = s
	return ok
}

// A checkpoint's strings — ids, every path and blob key — are many and
// small: one allocation each was a third of a request's allocations. The
// decoder appends them, decoded, to one arena and cuts them all from a
// single string of it once the object is read. They share that string as
// long as any of them lives, which costs nothing a copy would not: the
// arena holds only the strings, not the conversation beside them.

// span is a string in the arena: arena[off:end].
type span struct{ off, end int }

// arena collects the decoded strings of one checkpoint.
type arena struct{ b []byte }

// add appends raw, a plain string, decoded; ok is false for anything else
// (null included). Without an escape the bytes are the string and only
// their UTF-8 needs checking — what driver.DecodeJSONString checks of
// such a string; with one, DecodeJSONString decodes it.
func (a *arena) add(raw []byte) (span, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return span{}, false
	}
	off := len(a.b)
	if body := raw[1 : len(raw)-1]; bytes.IndexByte(body, '\\') < 0 {
		if !utf8.Valid(body) {
			return span{}, false
		}
		a.b = append(a.b, body...)
	} else {
		s, ok := plainString(raw)
		if !ok {
			return span{}, false
		}
		a.b = append(a.b, s...)
	}
	return span{off, len(a.b)}, true
}

// addNullable is add that also takes null or an absent value, as "".
func (a *arena) addNullable(raw []byte) (span, bool) {
	if isJSONNull(raw) {
		return span{}, true
	}
	return a.add(raw)
}

// entrySpans is a file entry before its strings are cut.
type entrySpans struct {
	path, blobKey span
	kind          ckptstore.EntryKind
	size          int64
}

// artifactSpans is an artifact before its strings are cut.
type artifactSpans struct {
	id, name, mime, blobKey span
	size                    int64
	createdAt               float64
}

// decodeCheckpointFast decodes raw, a checkpoint object, or reports that
// it leaves it to Checkpoint.UnmarshalJSON. The conversation keeps the
// whitespace around it (see decodeCheckpoint).
func decodeCheckpointFast(raw []byte) (*ckptstore.Checkpoint, bool) {
	r := &reader{raw: raw, dec: jsontext.NewDecoder(bytes.NewBuffer(raw), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))}
	var id, thread, parent, createdAt, reason, label, run, conv []byte
	scalars := []rawField{
		{"id", &id}, {"threadId", &thread}, {"parentCheckpointId", &parent}, {"createdAt", &createdAt},
		{"reason", &reason}, {"label", &label}, {"sourceRunId", &run},
	}
	// The strings are most of a small checkpoint and a sliver of one with
	// a long conversation; the arena is copied once cut, so its spare
	// capacity is only transient.
	ar := arena{b: make([]byte, 0, min(len(raw), 8<<10))}
	var files []entrySpans
	var artifacts []artifactSpans
	ok := r.object(func(name []byte, nameEnd int) bool {
		switch string(name) {
		case "conversation":
			var ok bool
			if conv, ok = r.value(); ok && !isJSONNull(conv) {
				conv = padded(raw, nameEnd, int(r.dec.InputOffset()))
			}
			return ok
		case "files":
			var ok bool
			files, ok = arrayOf(r, &ar, (*reader).entry)
			return ok
		case "artifacts":
			var ok bool
			artifacts, ok = arrayOf(r, &ar, (*reader).artifact)
			return ok
		}
		return r.field(name, scalars)
	})
	if !ok {
		return nil, false
	}
	if _, err := r.dec.ReadToken(); err != io.EOF {
		return nil, false
	}
	var sp [6]span
	var oks [6]bool
	sp[0], oks[0] = ar.add(id)
	sp[1], oks[1] = ar.add(thread)
	sp[2], oks[2] = ar.addNullable(parent)
	sp[3], oks[3] = ar.add(reason)
	sp[4], oks[4] = ar.addNullable(label)
	sp[5], oks[5] = ar.addNullable(run)
	if oks != [6]bool{true, true, true, true, true, true} {
		return nil, false
	}
	cp := new(ckptstore.Checkpoint)
	if cp.CreatedAt, ok = plainFloat(createdAt); !ok {
		return nil, false
	}
	if !isJSONNull(conv) {
		if driver.ValidateTranscript(conv) != nil {
			return nil, false
		}
		cp.Conversation = json.RawMessage(conv)
	}
	strs := string(ar.b)
	cut := func(s span) string { return strs[s.off:s.end] }
	cp.ID, cp.ThreadID, cp.ParentCheckpointID = cut(sp[0]), cut(sp[1]), cut(sp[2])
	cp.Reason, cp.Label, cp.SourceRunID = ckptstore.Reason(cut(sp[3])), cut(sp[4]), cut(sp[5])
	if files != nil {
		cp.Files = make([]ckptstore.Entry, len(files))
		for i, e := range files {
			cp.Files[i] = ckptstore.Entry{Path: cut(e.path), Kind: e.kind, BlobKey: cut(e.blobKey), Size: e.size}
		}
	}
	if artifacts != nil {
		cp.Artifacts = make([]ckptstore.Artifact, len(artifacts))
		for i, a := range artifacts {
			cp.Artifacts[i] = ckptstore.Artifact{ArtifactID: cut(a.id), Name: cut(a.name), MimeType: cut(a.mime),
				BlobKey: cut(a.blobKey), Size: a.size, CreatedAt: a.createdAt}
		}
	}
	return cp, true
}

// arrayOf reads an array whose elements elem reads: nil for null (the
// last of a repeated name counts, so a null after an array clears it), a
// non-nil slice for an array.
func arrayOf[T any](r *reader, ar *arena, elem func(*reader, *arena) (T, bool)) ([]T, bool) {
	out := []T{}
	isArray, ok := r.array(func() bool {
		v, ok := elem(r, ar)
		out = append(out, v)
		return ok
	})
	if !isArray {
		return nil, ok
	}
	return out, ok
}

// entry reads a file entry object. Its kind is taken only as the plain
// strings "file" and "dir".
func (r *reader) entry(ar *arena) (entrySpans, bool) {
	var path, kind, blobKey, size []byte
	var e entrySpans
	if !r.fields(rawField{"path", &path}, rawField{"kind", &kind}, rawField{"blobKey", &blobKey}, rawField{"size", &size}) {
		return e, false
	}
	var ok bool
	if e.path, ok = ar.add(path); !ok {
		return e, false
	}
	switch string(kind) {
	case `"dir"`:
		e.kind = ckptstore.KindDir
		return e, isJSONNull(blobKey) && isJSONNull(size)
	case `"file"`:
		e.kind = ckptstore.KindFile
		if e.blobKey, ok = ar.add(blobKey); !ok {
			return e, false
		}
		e.size, ok = plainSafeInt(size)
		return e, ok
	}
	return e, false
}

// artifact reads an artifact object.
func (r *reader) artifact(ar *arena) (artifactSpans, bool) {
	var id, name, mime, blobKey, size, createdAt []byte
	var a artifactSpans
	if !r.fields(rawField{"artifactId", &id}, rawField{"name", &name}, rawField{"mimeType", &mime},
		rawField{"blobKey", &blobKey}, rawField{"size", &size}, rawField{"createdAt", &createdAt}) {
		return a, false
	}
	var oks [4]bool
	a.id, oks[0] = ar.add(id)
	a.name, oks[1] = ar.add(name)
	a.mime, oks[2] = ar.add(mime)
	a.blobKey, oks[3] = ar.add(blobKey)
	if oks != [4]bool{true, true, true, true} {
		return a, false
	}
	var ok bool
	if a.size, ok = plainSafeInt(size); !ok {
		return a, false
	}
	a.createdAt, ok = plainFloat(createdAt)
	return a, ok
}

// decodeWriterFast decodes a writer object whose fields are plain (a
// well-formed threadId and ownerToken, an integer fence), or reports that
// it leaves it to Writer.UnmarshalJSON.
func decodeWriterFast(raw []byte) (ckptstore.Writer, bool) {
	r := &reader{raw: raw, dec: jsontext.NewDecoder(bytes.NewBuffer(raw), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))}
	var thread, token, fence []byte
	var w ckptstore.Writer
	if !r.fields(rawField{"threadId", &thread}, rawField{"ownerToken", &token}, rawField{"fence", &fence}) ||
		!stringInto(&w.ThreadID, thread) || !stringInto(&w.OwnerToken, token) {
		return w, false
	}
	f, ok := plainFloat(fence)
	if !ok || f != math.Trunc(f) || math.Abs(f) > driver.MaxSize {
		return w, false
	}
	w.Fence = int64(f)
	return w, true
}
