package driver

// JSON in the shape of @tanstack/ai-sandbox: camelCase names,
// parentCheckpointId null when empty, a directory entry without blobKey and
// size, a file entry always with size, optional strings left out when empty,
// arrays never null. Decoding checks the shape the TypeScript types imply
// (a field of the wrong JSON type, a size that is not a safe integer, a
// directory with file fields) and fails with ErrInvalidEntry, or
// ErrInvalidID for a missing, non-string or ill-formed id; the rules of
// Validate are left to Validate. Fields are matched by their exact names and
// a repeated name keeps its last value, as in JSON.parse; a string that is
// not well-formed Unicode is rejected rather than repaired, so that what
// decodes is what the TypeScript side meant.
//
// The exact bytes (conversation kept as given, no HTML escaping) come from
// calling MarshalJSON directly; encoding/json compacts and HTML-escapes what
// a MarshalJSON method returns.
//
// jsonValid accepts exactly what encoding/json.Valid accepts (fuzzed against
// it in conversation_test.go); it is what every Append and Marshal pays for
// the conversation, so it must stay linear and its stack use bounded.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

// jsonValidOptions make jsontext accept what encoding/json.Valid accepts:
// repeated object names, and invalid UTF-8 and escaped lone surrogates in
// strings. They are the options encoding/json.Valid itself runs jsontext
// with when it is built on it (GOEXPERIMENT=jsonv2). The nesting limit is
// the same in both, 10,000 levels. A slice, so that passing it allocates
// nothing.
var jsonValidOptions = []jsontext.Options{
	jsontext.AllowDuplicateNames(true),
	jsontext.AllowInvalidUTF8(true),
}

// jsonValid reports whether b is exactly one JSON value, with optional
// whitespace around it, as encoding/json.Valid does, at several times its
// speed: jsontext scans strings in bulk where encoding/json's scanner calls
// a function per byte. jsontext recurses per level of nesting but stops at
// the limit (an error at level 10,001), so no input recurses deeper than
// that, and a deeper one is rejected after its first 10,001 levels.
func jsonValid(b []byte) bool { return jsontext.Value(b).IsValid(jsonValidOptions...) }

// marshal is json.Marshal without HTML escaping, as JSON.stringify writes
// '<', '>' and '&'.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

type entryJSON struct {
	Path    string    `json:"path"`
	Kind    EntryKind `json:"kind"`
	BlobKey *string   `json:"blobKey,omitempty"`
	Size    *int64    `json:"size,omitempty"`
}

// MarshalJSON encodes e; a directory has no blobKey or size.
func (e Entry) MarshalJSON() ([]byte, error) {
	j := entryJSON{Path: e.Path, Kind: e.Kind}
	if e.Kind != KindDir {
		j.BlobKey, j.Size = &e.BlobKey, &e.Size
	}
	return marshal(j)
}

// UnmarshalJSON decodes an entry, rejecting a directory with a blobKey or
// size and a file without them.
func (e *Entry) UnmarshalJSON(b []byte) error {
	o, err := decodeObject(b, "entry")
	if err != nil {
		return err
	}
	out, err := o.entry()
	if err != nil {
		return err
	}
	*e = out
	return nil
}

// entry reads an Entry from o.
func (o jsonObject) entry() (Entry, error) {
	path, err := o.required("entry", "path", ErrInvalidEntry)
	if err != nil {
		return Entry{}, err
	}
	kind, err := o.required("entry", "kind", ErrInvalidEntry)
	if err != nil {
		return Entry{}, err
	}
	out := Entry{Path: path, Kind: EntryKind(kind)}
	switch out.Kind {
	case KindDir:
		if !isNull(o["blobKey"]) || !isNull(o["size"]) {
			return Entry{}, invalid("directory %q carries blobKey or size", out.Path)
		}
	case KindFile:
		if out.BlobKey, err = o.required("file", "blobKey", ErrInvalidEntry); err != nil {
			return Entry{}, err
		}
		if out.Size, err = decodeSafeInt(o["size"], "size"); err != nil {
			return Entry{}, err
		}
	default:
		return Entry{}, invalid("entry %q has kind %q, not file or dir", out.Path, out.Kind)
	}
	return out, nil
}

type artifactJSON struct {
	ArtifactID string  `json:"artifactId"`
	Name       string  `json:"name"`
	MimeType   string  `json:"mimeType"`
	Size       int64   `json:"size"`
	BlobKey    string  `json:"blobKey"`
	CreatedAt  float64 `json:"createdAt"`
}

// MarshalJSON encodes a.
func (a Artifact) MarshalJSON() ([]byte, error) { return marshal(artifactJSON(a)) }

// UnmarshalJSON decodes an artifact; every field is required.
func (a *Artifact) UnmarshalJSON(b []byte) error {
	o, err := decodeObject(b, "artifact")
	if err != nil {
		return err
	}
	out, err := o.artifact()
	if err != nil {
		return err
	}
	*a = out
	return nil
}

// artifact reads an Artifact from o.
func (o jsonObject) artifact() (Artifact, error) {
	var out Artifact
	var err error
	for _, f := range []struct {
		name string
		dst  *string
	}{{"artifactId", &out.ArtifactID}, {"name", &out.Name}, {"mimeType", &out.MimeType}, {"blobKey", &out.BlobKey}} {
		if *f.dst, err = o.required("artifact", f.name, ErrInvalidEntry); err != nil {
			return Artifact{}, err
		}
	}
	if out.Size, err = decodeSafeInt(o["size"], "artifact size"); err != nil {
		return Artifact{}, err
	}
	if out.CreatedAt, err = decodeFloat(o["createdAt"], "artifact createdAt"); err != nil {
		return Artifact{}, err
	}
	return out, nil
}

type checkpointJSON struct {
	ID                 string          `json:"id"`
	ThreadID           string          `json:"threadId"`
	ParentCheckpointID *string         `json:"parentCheckpointId"`
	CreatedAt          float64         `json:"createdAt"`
	Reason             Reason          `json:"reason"`
	Label              string          `json:"label,omitempty"`
	SourceRunID        string          `json:"sourceRunId,omitempty"`
	Files              []Entry         `json:"files"`
	Conversation       json.RawMessage `json:"conversation"`
	Artifacts          []Artifact      `json:"artifacts"`
}

// MarshalJSON encodes cp; an empty conversation, files or artifacts encode
// as [], and the conversation is copied byte for byte. Only a direct call
// keeps those bytes: json.Marshal and json.Encoder compact the output of
// every MarshalJSON method, which drops the conversation's whitespace, and
// json.Marshal also escapes <, > and & (the same JSON value, other bytes).
// A store that persists checkpoints as JSON calls cp.MarshalJSON().
func (cp Checkpoint) MarshalJSON() ([]byte, error) {
	j := checkpointJSON{ID: cp.ID, ThreadID: cp.ThreadID, CreatedAt: cp.CreatedAt,
		Reason: cp.Reason, Label: cp.Label, SourceRunID: cp.SourceRunID,
		Files: cp.Files, Conversation: cp.Conversation, Artifacts: cp.Artifacts}
	if cp.ParentCheckpointID != "" {
		j.ParentCheckpointID = &cp.ParentCheckpointID
	}
	if j.Files == nil {
		j.Files = []Entry{}
	}
	if j.Artifacts == nil {
		j.Artifacts = []Artifact{}
	}
	if len(j.Conversation) == 0 {
		j.Conversation = json.RawMessage("[]")
	}
	// encoding/json compacts a RawMessage; the conversation must keep its
	// bytes, so it is spliced in after encoding the rest.
	conv := j.Conversation
	j.Conversation = json.RawMessage(`0`)
	out, err := marshal(j)
	if err != nil {
		return nil, err
	}
	if !jsonValid(conv) {
		return nil, invalid("conversation is not valid JSON")
	}
	const placeholder = `"conversation":0,`
	i := bytes.LastIndex(out, []byte(placeholder))
	if i < 0 {
		return nil, fmt.Errorf("ckptstore: internal error encoding conversation")
	}
	res := make([]byte, 0, len(out)+len(conv))
	res = append(res, out[:i+len(`"conversation":`)]...)
	res = append(res, conv...)
	res = append(res, out[i+len(placeholder)-1:]...)
	return res, nil
}

// UnmarshalJSON decodes a checkpoint. The ids are checked first
// (ErrInvalidID when missing, not strings or not well-formed), as Append
// checks them first. The conversation is kept as its exact bytes; it must be
// a JSON array (null or absent means empty).
func (cp *Checkpoint) UnmarshalJSON(b []byte) error {
	o, err := decodeObject(b, "checkpoint")
	if err != nil {
		return err
	}
	var out Checkpoint
	if out.ID, err = o.required("checkpoint", "id", ErrInvalidID); err != nil {
		return err
	}
	if out.ThreadID, err = o.required("checkpoint", "threadId", ErrInvalidID); err != nil {
		return err
	}
	if out.ParentCheckpointID, _, err = o.str("checkpoint", "parentCheckpointId", ErrInvalidID); err != nil {
		return err
	}
	if out.CreatedAt, err = decodeFloat(o["createdAt"], "createdAt"); err != nil {
		return err
	}
	reason, err := o.required("checkpoint", "reason", ErrInvalidEntry)
	if err != nil {
		return err
	}
	out.Reason = Reason(reason)
	if out.Label, _, err = o.str("checkpoint", "label", ErrInvalidEntry); err != nil {
		return err
	}
	if out.SourceRunID, _, err = o.str("checkpoint", "sourceRunId", ErrInvalidEntry); err != nil {
		return err
	}
	if out.Files, err = decodeArray(o["files"], "files", jsonObject.entry); err != nil {
		return err
	}
	if conv := o["conversation"]; !isNull(conv) {
		if err := validateConversation(conv); err != nil {
			return err
		}
		out.Conversation = conv // the map's own copy of the bytes
	}
	if out.Artifacts, err = decodeArray(o["artifacts"], "artifacts", jsonObject.artifact); err != nil {
		return err
	}
	*cp = out
	return nil
}

type instanceJSON struct {
	Key               string `json:"key"`
	Provider          string `json:"provider"`
	ProviderSandboxID string `json:"providerSandboxId"`
	ThreadID          string `json:"threadId"`
	LatestSnapshotID  string `json:"latestSnapshotId,omitempty"`
	LatestRunID       string `json:"latestRunId,omitempty"`
	UpdatedAt         int64  `json:"updatedAt"`
}

// MarshalJSON encodes r; absent optional fields are left out.
func (r InstanceRecord) MarshalJSON() ([]byte, error) {
	return marshal(instanceJSON(r))
}

// UnmarshalJSON decodes an instance record; key, provider,
// providerSandboxId, threadId and updatedAt are required.
func (r *InstanceRecord) UnmarshalJSON(b []byte) error {
	o, err := decodeObject(b, "instance record")
	if err != nil {
		return err
	}
	var out InstanceRecord
	if out.Key, err = o.required("instance record", "key", ErrInvalidID); err != nil {
		return err
	}
	for _, f := range []struct {
		name     string
		dst      *string
		optional bool
	}{
		{"provider", &out.Provider, false}, {"providerSandboxId", &out.ProviderSandboxID, false},
		{"threadId", &out.ThreadID, false}, {"latestSnapshotId", &out.LatestSnapshotID, true},
		{"latestRunId", &out.LatestRunID, true},
	} {
		if f.optional {
			*f.dst, _, err = o.str("instance record", f.name, ErrInvalidEntry)
		} else {
			*f.dst, err = o.required("instance record", f.name, ErrInvalidEntry)
		}
		if err != nil {
			return err
		}
	}
	if out.UpdatedAt, err = decodeInt(o["updatedAt"], "updatedAt", math.MinInt64); err != nil {
		return err
	}
	*r = out
	return nil
}

// jsonObject is a decoded JSON object whose fields are taken by their exact
// names, as JSON.parse matches them (encoding/json's struct decoding folds
// case, so {"ID": …} would fill id). A repeated name keeps its last value,
// as in JSON.parse.
type jsonObject map[string]json.RawMessage

// decodeObject decodes b, which must be a JSON object, naming what in errors.
func decodeObject(b []byte, what string) (jsonObject, error) {
	if t := bytes.TrimLeft(b, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return nil, invalid("%s is not a JSON object", what)
	}
	var o jsonObject
	if err := json.Unmarshal(b, &o); err != nil {
		return nil, invalid("%s: %v", what, err)
	}
	return o, nil
}

// str returns the string field name; ok is false when it is absent or null.
// A value that is not a string, or not well-formed Unicode, fails with
// sentinel: encoding/json would turn invalid UTF-8 and unpaired surrogate
// escapes into U+FFFD, and so make an invalid id valid.
func (o jsonObject) str(what, name string, sentinel error) (s string, ok bool, err error) {
	raw := o[name]
	if isNull(raw) {
		return "", false, nil
	}
	if raw[0] != '"' {
		return "", false, fmt.Errorf("%w: %s %s is not a string", sentinel, what, name)
	}
	if !wellFormedString(raw) {
		return "", false, fmt.Errorf("%w: %s %s is not well-formed Unicode", sentinel, what, name)
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1]), true, nil
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false, fmt.Errorf("%w: %s %s: %v", sentinel, what, name, err)
	}
	return s, true, nil
}

// required is str for a field that must be present and not null.
func (o jsonObject) required(what, name string, sentinel error) (string, error) {
	s, ok, err := o.str(what, name, sentinel)
	if err == nil && !ok {
		err = fmt.Errorf("%w: %s needs a string %s", sentinel, what, name)
	}
	return s, err
}

// wellFormedString reports whether the JSON string literal s (quotes
// included, already valid JSON) is valid UTF-8 and every \u escape of a
// surrogate is half of a high-low pair.
func wellFormedString(s []byte) bool {
	if !utf8.Valid(s) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			continue
		}
		i++ // the escaped byte
		if s[i] != 'u' {
			continue
		}
		r := hex4(s[i+1:])
		i += 4
		switch {
		case 0xD800 <= r && r < 0xDC00:
			if i+6 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
				if r2 := hex4(s[i+3:]); 0xDC00 <= r2 && r2 < 0xE000 {
					i += 6
					continue
				}
			}
			return false
		case 0xDC00 <= r && r < 0xE000:
			return false
		}
	}
	return true
}

// hex4 decodes the four hex digits that start b; JSON validation has
// already checked that they are there.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		switch {
		case c <= '9':
			c -= '0'
		case c >= 'a':
			c -= 'a' - 10
		default:
			c -= 'A' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// decodeArray decodes raw, a JSON array of objects or null (nil), reading
// each object with read. The whole array is decoded in one pass, which is
// what makes a checkpoint of many entries cheap to read.
func decodeArray[T any](raw json.RawMessage, what string, read func(jsonObject) (T, error)) ([]T, error) {
	if isNull(raw) {
		return nil, nil
	}
	if raw[0] != '[' {
		return nil, invalid("%s is not an array", what)
	}
	var objs []jsonObject
	if err := json.Unmarshal(raw, &objs); err != nil {
		return nil, invalid("%s: an element is not an object: %v", what, err)
	}
	out := make([]T, len(objs))
	for i, o := range objs {
		if o == nil { // a null element
			return nil, invalid("%s[%d] is null", what, i)
		}
		v, err := read(o)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

// decodeSafeInt decodes a JSON number that is an integer from 0 to 2^53−1,
// as JavaScript's Number.isSafeInteger accepts it (1e3 and 2.0 included).
func decodeSafeInt(raw json.RawMessage, what string) (int64, error) {
	return decodeInt(raw, what, 0)
}

func decodeInt(raw json.RawMessage, what string, lowest int64) (int64, error) {
	if isNull(raw) || !(raw[0] == '-' || '0' <= raw[0] && raw[0] <= '9') {
		return 0, invalid("%s must be a number", what)
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > MaxSize || f < float64(lowest) {
		return 0, invalid("%s %s is not a safe integer in range", what, raw)
	}
	return int64(f), nil
}

// decodeFloat decodes a JSON number; one too large for a float64 (1e400)
// fails, as it has no finite value.
func decodeFloat(raw json.RawMessage, what string) (float64, error) {
	if isNull(raw) || !(raw[0] == '-' || '0' <= raw[0] && raw[0] <= '9') {
		return 0, invalid("%s must be a number", what)
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return 0, invalid("%s %s is out of range", what, raw)
	}
	return f, nil
}
