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

// objectFields reads the JSON object at raw (already known to be valid
// JSON or not: any syntax fault ends it) and calls field with each name and
// the value's bounds in raw: [from, end) is the value without whitespace,
// and nameEnd the offset after the name. The last of a repeated name is
// the one that counts, so field must overwrite.
func objectFields(raw []byte, field func(name string, nameEnd, from, end int) bool) bool {
	dec := jsontext.NewDecoder(bytes.NewBuffer(raw), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	if t, err := dec.ReadToken(); err != nil || t.Kind() != '{' {
		return false
	}
	for dec.PeekKind() == '"' {
		t, err := dec.ReadToken()
		if err != nil {
			return false
		}
		name := t.String()
		nameEnd := int(dec.InputOffset())
		v, err := dec.ReadValue()
		if err != nil {
			return false
		}
		end := int(dec.InputOffset())
		if !field(name, nameEnd, end-len(v), end) {
			return false
		}
	}
	if t, err := dec.ReadToken(); err != nil || t.Kind() != '}' {
		return false
	}
	_, err := dec.ReadToken()
	return err == io.EOF // nothing after the object
}

// arrayElements calls elem with the bounds of each element of the JSON
// array raw.
func arrayElements(raw []byte, elem func(from, end int) bool) bool {
	dec := jsontext.NewDecoder(bytes.NewBuffer(raw), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	if t, err := dec.ReadToken(); err != nil || t.Kind() != '[' {
		return false
	}
	for dec.PeekKind() != ']' {
		v, err := dec.ReadValue()
		if err != nil {
			return false
		}
		end := int(dec.InputOffset())
		if !elem(end-len(v), end) {
			return false
		}
	}
	_, err := dec.ReadToken()
	return err == nil
}

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
	var v struct {
		id, thread, parent, createdAt, reason, label, run, files, artifacts []byte
		conv                                                                []byte // padded
		convSet                                                             bool
	}
	ok := objectFields(raw, func(name string, nameEnd, from, end int) bool {
		val := raw[from:end]
		switch name {
		case "id":
			v.id = val
		case "threadId":
			v.thread = val
		case "parentCheckpointId":
			v.parent = val
		case "createdAt":
			v.createdAt = val
		case "reason":
			v.reason = val
		case "label":
			v.label = val
		case "sourceRunId":
			v.run = val
		case "files":
			v.files = val
		case "artifacts":
			v.artifacts = val
		case "conversation":
			v.conv, v.convSet = val, true
			if !isJSONNull(val) {
				v.conv = padded(raw, nameEnd, end)
			}
		}
		return true
	})
	if !ok {
		return nil, false
	}
	cp := new(ckptstore.Checkpoint)
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
	for _, f := range []struct {
		raw []byte
		dst *string
	}{{v.label, &cp.Label}, {v.run, &cp.SourceRunID}} {
		if !isJSONNull(f.raw) {
			if *f.dst, ok = plainString(f.raw); !ok {
				return nil, false
			}
		}
	}
	if !isJSONNull(v.files) {
		cp.Files = []ckptstore.Entry{}
		if !arrayElements(v.files, func(from, end int) bool {
			e, ok := plainEntry(v.files[from:end])
			cp.Files = append(cp.Files, e)
			return ok
		}) {
			return nil, false
		}
	}
	if !isJSONNull(v.conv) {
		if ckptstore.ValidateTranscript(v.conv) != nil {
			return nil, false
		}
		cp.Conversation = json.RawMessage(v.conv)
	}
	if !isJSONNull(v.artifacts) {
		cp.Artifacts = []ckptstore.Artifact{}
		if !arrayElements(v.artifacts, func(from, end int) bool {
			a, ok := plainArtifact(v.artifacts[from:end])
			cp.Artifacts = append(cp.Artifacts, a)
			return ok
		}) {
			return nil, false
		}
	}
	return cp, true
}

func plainEntry(raw []byte) (ckptstore.Entry, bool) {
	var path, kind, blobKey, size []byte
	if !objectFields(raw, func(name string, _, from, end int) bool {
		switch name {
		case "path":
			path = raw[from:end]
		case "kind":
			kind = raw[from:end]
		case "blobKey":
			blobKey = raw[from:end]
		case "size":
			size = raw[from:end]
		}
		return true
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

func plainArtifact(raw []byte) (ckptstore.Artifact, bool) {
	var id, name, mime, blobKey, size, createdAt []byte
	if !objectFields(raw, func(n string, _, from, end int) bool {
		switch n {
		case "artifactId":
			id = raw[from:end]
		case "name":
			name = raw[from:end]
		case "mimeType":
			mime = raw[from:end]
		case "blobKey":
			blobKey = raw[from:end]
		case "size":
			size = raw[from:end]
		case "createdAt":
			createdAt = raw[from:end]
		}
		return true
	}) {
		return ckptstore.Artifact{}, false
	}
	var a ckptstore.Artifact
	var ok bool
	for _, f := range []struct {
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
