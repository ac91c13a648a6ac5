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

// decodeCheckpointFast decodes raw, a checkpoint object, or reports that
// it leaves it to Checkpoint.UnmarshalJSON. The conversation keeps the
// whitespace around it (see decodeCheckpoint).
func decodeCheckpointFast(raw []byte) (*ckptstore.Checkpoint, bool) {
	r := &reader{raw: raw, dec: jsontext.NewDecoder(bytes.NewBuffer(raw), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))}
	var v struct {
		id, thread, parent, createdAt, reason, label, run, conv []byte
	}
	cp := new(ckptstore.Checkpoint)
	ok := r.object(func(name string, nameEnd int) bool {
		var ok bool
		switch name {
		case "id":
			v.id, ok = r.value()
		case "threadId":
			v.thread, ok = r.value()
		case "parentCheckpointId":
			v.parent, ok = r.value()
		case "createdAt":
			v.createdAt, ok = r.value()
		case "reason":
			v.reason, ok = r.value()
		case "label":
			v.label, ok = r.value()
		case "sourceRunId":
			v.run, ok = r.value()
		case "conversation":
			if v.conv, ok = r.value(); ok && !isJSONNull(v.conv) {
				v.conv = padded(raw, nameEnd, int(r.dec.InputOffset()))
			}
		case "files":
			files := []ckptstore.Entry{}
			var isArray bool
			isArray, ok = r.array(func() bool {
				e, ok := r.entry()
				files = append(files, e)
				return ok
			})
			cp.Files = nil
			if isArray {
				cp.Files = files
			}
		case "artifacts":
			arts := []ckptstore.Artifact{}
			var isArray bool
			isArray, ok = r.array(func() bool {
				a, ok := r.artifact()
				arts = append(arts, a)
				return ok
			})
			cp.Artifacts = nil
			if isArray {
				cp.Artifacts = arts
			}
		default:
			ok = r.skip()
		}
		return ok
	})
	if !ok {
		return nil, false
	}
	if _, err := r.dec.ReadToken(); err != io.EOF {
		return nil, false
	}
	if cp.ID, ok = plainString(v.id); !ok {
		return nil, false
	}
	if cp.ThreadID, ok = plainString(v.thread); !ok {
		return nil, false
	}
	if !isJSONNull(v.parent) {
		if cp.ParentCheckpointID, ok = plainString(v.parent); !ok {
			return nil, false
		}
	}
	if cp.CreatedAt, ok = plainFloat(v.createdAt); !ok {
		return nil, false
	}
	reason, ok := plainString(v.reason)
	if !ok {
		return nil, false
	}
	cp.Reason = ckptstore.Reason(reason)
	if !isJSONNull(v.label) {
		if cp.Label, ok = plainString(v.label); !ok {
			return nil, false
		}
	}
	if !isJSONNull(v.run) {
		if cp.SourceRunID, ok = plainString(v.run); !ok {
			return nil, false
		}
	}
	if !isJSONNull(v.conv) {
		if ckptstore.ValidateTranscript(v.conv) != nil {
			return nil, false
		}
		cp.Conversation = json.RawMessage(v.conv)
	}
	return cp, true
}

// entry reads a file entry object.
func (r *reader) entry() (ckptstore.Entry, bool) {
	var path, kind, blobKey, size []byte
	if !r.object(func(name string, _ int) bool {
		var ok bool
		switch name {
		case "path":
			path, ok = r.value()
		case "kind":
			kind, ok = r.value()
		case "blobKey":
			blobKey, ok = r.value()
		case "size":
			size, ok = r.value()
		default:
			ok = r.skip()
		}
		return ok
	}) {
		return ckptstore.Entry{}, false
	}
	var e ckptstore.Entry
	var ok bool
	if e.Path, ok = plainString(path); !ok {
		return e, false
	}
	k, ok := plainString(kind)
	if !ok {
		return e, false
	}
	e.Kind = ckptstore.EntryKind(k)
	switch e.Kind {
	case ckptstore.KindDir:
		return e, isJSONNull(blobKey) && isJSONNull(size)
	case ckptstore.KindFile:
		if e.BlobKey, ok = plainString(blobKey); !ok {
			return e, false
		}
		e.Size, ok = plainSafeInt(size)
		return e, ok
	}
	return e, false
}

// artifact reads an artifact object.
func (r *reader) artifact() (ckptstore.Artifact, bool) {
	var id, name, mime, blobKey, size, createdAt []byte
	if !r.object(func(n string, _ int) bool {
		var ok bool
		switch n {
		case "artifactId":
			id, ok = r.value()
		case "name":
			name, ok = r.value()
		case "mimeType":
			mime, ok = r.value()
		case "blobKey":
			blobKey, ok = r.value()
		case "size":
			size, ok = r.value()
		case "createdAt":
			createdAt, ok = r.value()
		default:
			ok = r.skip()
		}
		return ok
	}) {
		return ckptstore.Artifact{}, false
	}
	var a ckptstore.Artifact
	var ok bool
	for _, f := range [...]struct {
		raw []byte
		dst *string
	}{{id, &a.ArtifactID}, {name, &a.Name}, {mime, &a.MimeType}, {blobKey, &a.BlobKey}} {
		if *f.dst, ok = plainString(f.raw); !ok {
			return a, false
		}
	}
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
	if !r.object(func(name string, _ int) bool {
		var ok bool
		switch name {
		case "threadId":
			thread, ok = r.value()
		case "ownerToken":
			token, ok = r.value()
		case "fence":
			fence, ok = r.value()
		default:
			ok = r.skip()
		}
		return ok
	}) {
		return ckptstore.Writer{}, false
	}
	var w ckptstore.Writer
	var ok bool
	if w.ThreadID, ok = plainString(thread); !ok {
		return w, false
	}
	if w.OwnerToken, ok = plainString(token); !ok {
		return w, false
	}
	f, ok := plainFloat(fence)
	if !ok || f != math.Trunc(f) || math.Abs(f) > ckptstore.MaxSize {
		return w, false
	}
	w.Fence = int64(f)
	return w, true
}
