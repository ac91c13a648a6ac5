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

	"github.com/go-json-experiment/json/jsontext"

	"github.com/ckptstore/ckptstore"
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

// object reads an object, calling field for each name; field reads (or
// skips) the value itself. The last of a repeated name is the one that
// counts, so field must overwrite.
func (r *reader) object(field func(name string, nameEnd int) bool) bool {
	if t, err := r.dec.ReadToken(); err != nil || t.Kind() != '{' {
		return false
	}
	for r.dec.PeekKind() == '"' {
		t, err := r.dec.ReadToken()
		if err != nil {
			return false
		}
		if !field(t.String(), int(r.dec.InputOffset())) {
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
	s, ok, err := ckptstore.DecodeJSONString(raw, "", ckptstore.ErrInvalidEntry)
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
	if !ok || f != math.Trunc(f) || f < 0 || f > ckptstore.MaxSize {
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
func (r *reader) field(name string, fs []rawField) bool {
	for _, f := range fs {
		if f.name == name {
			var ok bool
			*f.raw, ok = r.value()
			return ok
		}
	}
	return r.skip()
}

// fields reads an object, keeping the raw value of each field of fs.
func (r *reader) fields(fs ...rawField) bool {
	return r.object(func(name string, _ int) bool { return r.field(name, fs) })
}

// stringInto decodes raw, a plain string, into dst. (A pointer per call,
// not a table of them: a table's pointers would escape with the raw values
// plainString keeps, moving every entry to the heap.)
func stringInto(dst *string, raw []byte) bool {
	s, ok := plainString(raw)
	*dst = s
	return ok
}

// nullableInto is stringInto that also takes null or an absent value,
// which leave dst "".
func nullableInto(dst *string, raw []byte) bool {
	return isJSONNull(raw) || stringInto(dst, raw)
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
	cp := new(ckptstore.Checkpoint)
	ok := r.object(func(name string, nameEnd int) bool {
		switch name {
		case "conversation":
			var ok bool
			if conv, ok = r.value(); ok && !isJSONNull(conv) {
				conv = padded(raw, nameEnd, int(r.dec.InputOffset()))
			}
			return ok
		case "files":
			var ok bool
			cp.Files, ok = arrayOf(r, (*reader).entry)
			return ok
		case "artifacts":
			var ok bool
			cp.Artifacts, ok = arrayOf(r, (*reader).artifact)
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
	if !stringInto(&cp.ID, id) || !stringInto(&cp.ThreadID, thread) || !nullableInto(&cp.ParentCheckpointID, parent) ||
		!stringInto((*string)(&cp.Reason), reason) || !nullableInto(&cp.Label, label) || !nullableInto(&cp.SourceRunID, run) {
		return nil, false
	}
	if cp.CreatedAt, ok = plainFloat(createdAt); !ok {
		return nil, false
	}
	if !isJSONNull(conv) {
		if ckptstore.ValidateTranscript(conv) != nil {
			return nil, false
		}
		cp.Conversation = json.RawMessage(conv)
	}
	return cp, true
}

// arrayOf reads an array whose elements elem reads: nil for null (the
// last of a repeated name counts, so a null after an array clears it), a
// non-nil slice for an array.
func arrayOf[T any](r *reader, elem func(*reader) (T, bool)) ([]T, bool) {
	out := []T{}
	isArray, ok := r.array(func() bool {
		v, ok := elem(r)
		out = append(out, v)
		return ok
	})
	if !isArray {
		return nil, ok
	}
	return out, ok
}

// entry reads a file entry object.
func (r *reader) entry() (ckptstore.Entry, bool) {
	var path, kind, blobKey, size []byte
	var e ckptstore.Entry
	if !r.fields(rawField{"path", &path}, rawField{"kind", &kind}, rawField{"blobKey", &blobKey}, rawField{"size", &size}) ||
		!stringInto(&e.Path, path) || !stringInto((*string)(&e.Kind), kind) {
		return e, false
	}
	switch e.Kind {
	case ckptstore.KindDir:
		return e, isJSONNull(blobKey) && isJSONNull(size)
	case ckptstore.KindFile:
		if !stringInto(&e.BlobKey, blobKey) {
			return e, false
		}
		var ok bool
		e.Size, ok = plainSafeInt(size)
		return e, ok
	}
	return e, false
}

// artifact reads an artifact object.
func (r *reader) artifact() (ckptstore.Artifact, bool) {
	var id, name, mime, blobKey, size, createdAt []byte
	var a ckptstore.Artifact
	if !r.fields(rawField{"artifactId", &id}, rawField{"name", &name}, rawField{"mimeType", &mime},
		rawField{"blobKey", &blobKey}, rawField{"size", &size}, rawField{"createdAt", &createdAt}) ||
		!stringInto(&a.ArtifactID, id) || !stringInto(&a.Name, name) || !stringInto(&a.MimeType, mime) || !stringInto(&a.BlobKey, blobKey) {
		return a, false
	}
	var ok bool
	if a.Size, ok = plainSafeInt(size); !ok {
		return a, false
	}
	a.CreatedAt, ok = plainFloat(createdAt)
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
	if !ok || f != math.Trunc(f) || math.Abs(f) > ckptstore.MaxSize {
		return w, false
	}
	w.Fence = int64(f)
	return w, true
}
