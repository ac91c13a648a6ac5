package driver

// The one JSON codec of the persistence records, patches and entries, on
// the wire and in storage: package driver's (the checkpoint contract's)
// scanner reads, its string writer writes, and one member table per type
// says both ways what its members are, so no two places can disagree on a
// name, an order or an optional member.
//
// Invariants:
//
//   - AppendJSON writes the members in the table's order (the struct's),
//     an absent optional member left out, a raw JSON value byte for byte,
//     strings as JSON.stringify writes them (no HTML escaping). It is what
//     encoding/json wrote from the struct tags, with HTML escaping off and
//     raw values as given; json.Marshal of a record (MarshalJSON) compacts
//     and HTML-escapes that, which is exactly its old output.
//   - Reading is strict about shape: an id that is not a string or not
//     well-formed Unicode fails with ErrInvalidID, any other fault (a wrong
//     type, an integer beyond ±2^53−1, an unknown member) with
//     ErrInvalidEntry, each naming the member by its JSON pointer, the
//     message after the sentinel's words cut to maxFault bytes. A missing
//     member reads as its zero value: the contract's checks refuse what
//     must be there. A raw JSON value is kept with its whitespace, and null
//     is an absent optional member (a response's, a result's and a
//     metadata value's null is the value null, which the contract lets
//     them be). Of an object's faults the first id fault, else the first
//     fault, is the object's.
//   - decode(encode(x)) == x for every record, and encode(decode(b)) is
//     stable (codec_test.go).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	ckptdriver "github.com/ckptstore/ckptstore/driver"
)

// maxFault bounds the message of a reading fault: a member name or value
// in it is cut, never echoed whole.
const maxFault = 256

// ---- reading ----

// Reader reads the typed values of the persistence records off a
// JSONReader and keeps the faults of what it reads (see the file comment).
// The request and reply envelopes of httpstore read their members with it
// too. The zero value with JSON set is ready to use; a Reader is not safe
// for concurrent use.
type Reader struct {
	// JSON is the reader of the input.
	JSON *ckptdriver.JSONReader

	id, other error
	at        string // the pointer of the object read, before its members'
	i         int    // and its index in at's array plus one; 0: none
}

// NewReader returns a Reader of r.
func NewReader(r *ckptdriver.JSONReader) *Reader { return &Reader{JSON: r} }

// Err returns the fault of what was read: the first id fault, else the
// first other fault; nil when there was none.
func (x *Reader) Err() error {
	if x.id != nil {
		return x.id
	}
	return x.other
}

// Add keeps err, a fault of what is read, as Err says; an error that
// wraps no contract sentinel is kept as ErrInvalidEntry.
func (x *Reader) Add(err error) {
	if err == nil {
		return
	}
	err = fault(err, "")
	if errors.Is(err, ErrInvalidID) {
		if x.id == nil {
			x.id = err
		}
	} else if x.other == nil {
		x.other = err
	}
}

// value keeps the fault of a value read at the current object.
func (x *Reader) value(err error) {
	if err == nil {
		return
	}
	at := x.at
	if x.i > 0 {
		at += "/" + strconv.Itoa(x.i-1)
	}
	x.Add(fault(err, at))
}

// fault is err as a persistence fault: the contract sentinel it wraps
// (ErrInvalidEntry for the checkpoint contract's or none), the message
// prefixed by at and cut to maxFault bytes.
func fault(err error, at string) error {
	if Code(err) != "" && at == "" && len(err.Error()) <= maxFault {
		return err
	}
	sentinel := ErrInvalidEntry
	if errors.Is(err, ErrInvalidID) || errors.Is(err, ckptdriver.ErrInvalidID) {
		sentinel = ErrInvalidID
	}
	msg := err.Error()
	for _, s := range []error{ErrInvalidID, ErrInvalidEntry, ckptdriver.ErrInvalidEntry, ckptdriver.ErrInvalidID} {
		if m, ok := strings.CutPrefix(msg, s.Error()+": "); ok {
			msg = m
			break
		}
	}
	if at != "" && !strings.HasPrefix(msg, "/") {
		at += ": "
	}
	return fmt.Errorf("%w: %s", sentinel, ckptdriver.CutUTF8(at+msg, maxFault))
}

// unknown is the fault of a member that what has not.
func unknown(what string, name []byte) error {
	return fmt.Errorf("%w: %s has no member %s", ErrInvalidEntry, what, ckptdriver.QuoteShort(string(name)))
}

// ID reads a string that is an id into dst; null is "".
func (x *Reader) ID(dst *string, path string) { *dst, _ = readID(x, path) }

// Text reads a string into dst; null is "".
func (x *Reader) Text(dst *string, path string) { *dst, _ = readText(x, path) }

// OptText reads a string into *dst; null is nil.
func (x *Reader) OptText(dst **string, path string) { setOpt(dst, readText, x, path) }

// Int reads a safe integer into dst; null is 0.
func (x *Reader) Int(dst *int64, path string) { *dst, _ = readInt(x, path) }

// OptInt reads a safe integer into *dst; null is nil.
func (x *Reader) OptInt(dst **int64, path string) { setOpt(dst, readInt, x, path) }

// OptBool reads a boolean into *dst; null is nil.
func (x *Reader) OptBool(dst **bool, path string) { setOpt(dst, readBool, x, path) }

// Raw reads a JSON value with its whitespace into dst; null is nil.
func (x *Reader) Raw(dst *json.RawMessage) { *dst, _ = readRaw(x, "") }

// RawOrNull reads a JSON value with its whitespace into dst; null is the
// value null.
func (x *Reader) RawOrNull(dst *json.RawMessage) { *dst, _ = readRawOrNull(x, "") }

// StringMap reads an object of strings into dst; null is nil.
func (x *Reader) StringMap(dst *map[string]string, path string) { *dst, _ = readStringMap(x, path) }

func setOpt[V any](dst **V, read func(*Reader, string) (V, bool), x *Reader, path string) {
	*dst = nil
	if v, ok := read(x, path); ok {
		*dst = &v
	}
}

// The value readers: (value, present); a fault is kept in x.

func readID(x *Reader, path string) (string, bool) {
	v, ok, err := x.JSON.String(path, ErrInvalidID)
	x.value(err)
	return v, ok
}

func readText(x *Reader, path string) (string, bool) {
	v, ok, err := x.JSON.String(path, ErrInvalidEntry)
	x.value(err)
	return v, ok
}

func readStatus[S ~string](x *Reader, path string) (S, bool) {
	v, ok := readText(x, path)
	return S(v), ok
}

func readInt(x *Reader, path string) (int64, bool) {
	v, ok, err := x.JSON.Int(path)
	x.value(err)
	return v, ok
}

func readBool(x *Reader, path string) (bool, bool) {
	v, ok, err := x.JSON.PaddedView()
	if err != nil || !ok {
		x.value(err)
		return false, false
	}
	switch string(bytes.TrimSpace(v)) {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	x.value(fmt.Errorf("%w: %s must be a boolean", ErrInvalidEntry, path))
	return false, false
}

func readRaw(x *Reader, _ string) (json.RawMessage, bool) {
	v, ok, err := x.JSON.Padded()
	x.value(err)
	return v, ok
}

func readRawOrNull(x *Reader, _ string) (json.RawMessage, bool) {
	v, ok, err := x.JSON.Padded()
	x.value(err)
	if !ok && err == nil {
		return json.RawMessage("null"), true
	}
	return v, ok
}

func readStringMap(x *Reader, path string) (map[string]string, bool) {
	if x.JSON.Null() {
		return nil, false
	}
	m := map[string]string{}
	x.value(x.JSON.Object(path, func(name []byte) error {
		k := string(name)
		m[k], _ = readText(x, path)
		return nil
	}))
	return m, true
}

func readRunError(x *Reader, path string) (RunError, bool) {
	if x.JSON.Null() {
		return RunError{}, false
	}
	var e RunError
	x.value(x.JSON.Object(path, func(name []byte) error {
		switch string(name) {
		case "message":
			e.Message, _ = readText(x, path+"/message")
		case "code":
			setOpt(&e.Code, readText, x, path+"/code")
		default:
			x.value(unknown(path, name))
			return x.JSON.Skip()
		}
		return nil
	}))
	return e, true
}

// ---- writing ----

// The value writers: each appends its value, or nothing when it is absent.

func putStr(b []byte, v string) []byte            { return ckptdriver.AppendJSONString(b, v) }
func putInt(b []byte, v int64) []byte             { return strconv.AppendInt(b, v, 10) }
func putBool(b []byte, v bool) []byte             { return strconv.AppendBool(b, v) }
func putRaw(b []byte, v json.RawMessage) []byte   { return append(b, v...) }
func putStatus[S ~string](b []byte, v S) []byte   { return putStr(b, string(v)) }
func putRunError(b []byte, e RunError) []byte     { return e.AppendJSON(b) }
func putMap(b []byte, m map[string]string) []byte { return appendStringMap(b, m) }

// AppendJSON appends e as {"message", "code"}, code left out when nil.
func (e *RunError) AppendJSON(b []byte) []byte {
	b = append(b, `{"message":`...)
	b = putStr(b, e.Message)
	if e.Code != nil {
		b = append(b, `,"code":`...)
		b = putStr(b, *e.Code)
	}
	return append(b, '}')
}

// appendStringMap appends m with its keys sorted, as encoding/json does;
// a nil m is absent.
func appendStringMap(b []byte, m map[string]string) []byte {
	if m == nil {
		return b
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = putStr(b, k)
		b = append(b, ':')
		b = putStr(b, m[k])
	}
	return append(b, '}')
}

// ---- the member tables ----

// member is one JSON member of a T: put appends its value (nothing when
// absent), get reads it at path; raw marks a JSON value kept byte for byte.
type member[T any] struct {
	name, path string
	raw        bool
	put        func(b []byte, r *T) []byte
	get        func(x *Reader, path string, r *T)
}

// codec is the JSON shape of a T: its members in order, and what names a
// T in the fault of an unknown member.
type codec[T any] struct {
	what    string
	members []member[T]
}

func newCodec[T any](what string, ms ...member[T]) *codec[T] {
	for i := range ms {
		ms[i].path = "/" + ms[i].name
	}
	return &codec[T]{what, ms}
}

// req is a required member at the field f returns.
func req[T, V any](name string, f func(*T) *V, put func([]byte, V) []byte, get func(*Reader, string) (V, bool)) member[T] {
	return member[T]{name: name,
		put: func(b []byte, r *T) []byte { return put(b, *f(r)) },
		get: func(x *Reader, p string, r *T) { *f(r), _ = get(x, p) }}
}

// opt is an optional member, a pointer field: nil is absent.
func opt[T, V any](name string, f func(*T) **V, put func([]byte, V) []byte, get func(*Reader, string) (V, bool)) member[T] {
	return member[T]{name: name,
		put: func(b []byte, r *T) []byte {
			if v := *f(r); v != nil {
				return put(b, *v)
			}
			return b
		},
		get: func(x *Reader, p string, r *T) { setOpt(f(r), get, x, p) }}
}

// raw is a raw JSON member: empty is absent, or null when required; get
// reads null as rawGet does.
func raw[T any](name string, f func(*T) *json.RawMessage, required bool, get func(*Reader, string) (json.RawMessage, bool)) member[T] {
	return member[T]{name: name, raw: true,
		put: func(b []byte, r *T) []byte {
			if v := *f(r); len(v) > 0 {
				return append(b, v...)
			}
			if required {
				return append(b, "null"...)
			}
			return b
		},
		get: func(x *Reader, p string, r *T) { *f(r), _ = get(x, p) }}
}

// appendJSON appends r's object.
func (c *codec[T]) appendJSON(b []byte, r *T) []byte {
	b = append(b, '{')
	first := len(b)
	for i := range c.members {
		m := &c.members[i]
		mark := len(b)
		if len(b) > first {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, m.name...)
		b = append(b, '"', ':')
		if v := m.put(b, r); len(v) > len(b) {
			b = v
		} else {
			b = b[:mark]
		}
	}
	return append(b, '}')
}

// each calls fn with each present member: its name, its value's JSON
// (valid during the call) and whether it is raw.
func (c *codec[T]) each(r *T, fn func(name string, value []byte, raw bool)) {
	buf := scratchPool.Get().(*[]byte)
	for i := range c.members {
		m := &c.members[i]
		if v := m.put((*buf)[:0], r); len(v) > 0 {
			fn(m.name, v, m.raw)
			*buf = v
		}
	}
	if cap(*buf) > 64<<10 {
		*buf = nil // a rare huge value is left to the collector
	}
	scratchPool.Put(buf)
}

// scratchPool keeps the buffers each writes a member's value into.
var scratchPool = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

// member reads the member name into r; false when T has none.
func (c *codec[T]) member(x *Reader, name []byte, r *T) bool {
	for i := range c.members {
		if m := &c.members[i]; m.name == string(name) {
			m.get(x, m.path, r)
			return true
		}
	}
	return false
}

// object reads an object into r, failing on unknown members.
func (c *codec[T]) object(x *Reader, r *T) {
	x.value(x.JSON.Object("", func(name []byte) error {
		if !c.member(x, name, r) {
			x.value(unknown(c.what, name))
			return x.JSON.Skip()
		}
		return nil
	}))
}

// nullable reads an object into a new T, or null as nil, at the pointer
// at (element i of it when i ≥ 0).
func (c *codec[T]) nullable(x *Reader, at string, i int) *T {
	if x.JSON.Null() {
		return nil
	}
	saveAt, saveI := x.at, x.i
	x.at, x.i = at, i+1
	r := new(T)
	c.object(x, r)
	x.at, x.i = saveAt, saveI
	return r
}

// ReadObject reads an object, the value next in x, at the JSON pointer at,
// with member for each member (false: an unknown one, a fault); null is
// no object (false). Faults of the members name them under at.
func ReadObject(x *Reader, at string, member func(name []byte) bool) bool {
	if x.JSON.Null() {
		return false
	}
	saveAt, saveI := x.at, x.i
	x.at, x.i = at, 0
	x.value(x.JSON.Object("", func(name []byte) error {
		if !member(name) {
			x.value(unknown(at, name))
			return x.JSON.Skip()
		}
		return nil
	}))
	x.at, x.i = saveAt, saveI
	return true
}

// AppendStringMap appends m as a JSON object with its keys sorted, as
// encoding/json writes a map; nil appends nothing.
func AppendStringMap(b []byte, m map[string]string) []byte { return appendStringMap(b, m) }

// list reads an array of objects (none null; null is none) at the pointer
// at.
func (c *codec[T]) list(x *Reader, at string) []*T {
	out := []*T{}
	_, err := x.JSON.Array(at, func(i int) error {
		r := c.nullable(x, at, i)
		if r == nil {
			x.value(fmt.Errorf("%w: %s/%d is null", ErrInvalidEntry, at, i))
			r = new(T)
		}
		out = append(out, r)
		return nil
	})
	x.value(err)
	return out
}

// unmarshal decodes b, one object, into *dst; on failure *dst is left as
// it was.
func (c *codec[T]) unmarshal(b []byte, dst *T) error {
	r := ckptdriver.NewJSONReader(b)
	defer r.Close()
	x := NewReader(r)
	v := new(T)
	c.object(x, v)
	if err := r.End(); err != nil {
		return fault(err, "")
	}
	if err := x.Err(); err != nil {
		return err
	}
	*dst = *v
	return nil
}

// setMember reads value, one member's JSON, into r's member name: the
// value is read as the member of a one-member object, so that a raw
// value keeps its bytes and nothing else can be read.
func (c *codec[T]) setMember(r *T, name string, value []byte) error {
	b := make([]byte, 0, len(name)+len(value)+8)
	b = putStr(append(b, '{'), name)
	b = append(append(append(b, ':'), value...), '}')
	rd := ckptdriver.NewJSONReader(b)
	defer rd.Close()
	x := NewReader(rd)
	n := 0
	x.value(rd.Object("", func(m []byte) error {
		if n++; n == 1 && c.member(x, m, r) {
			return nil
		}
		x.value(unknown(c.what, m))
		return rd.Skip()
	}))
	if err := rd.End(); err != nil {
		return fault(err, "/"+name)
	}
	return x.Err()
}

var runCodec = newCodec("run",
	req("runId", func(r *RunRecord) *string { return &r.RunID }, putStr, readID),
	req("threadId", func(r *RunRecord) *string { return &r.ThreadID }, putStr, readID),
	req("status", func(r *RunRecord) *RunStatus { return &r.Status }, putStatus[RunStatus], readStatus[RunStatus]),
	req("startedAt", func(r *RunRecord) *int64 { return &r.StartedAt }, putInt, readInt),
	opt("finishedAt", func(r *RunRecord) **int64 { return &r.FinishedAt }, putInt, readInt),
	opt("error", func(r *RunRecord) **RunError { return &r.Error }, putRunError, readRunError),
	raw("usage", func(r *RunRecord) *json.RawMessage { return &r.Usage }, false, readRaw),
	opt("sandboxKey", func(r *RunRecord) **string { return &r.SandboxKey }, putStr, readText),
	opt("detachedSince", func(r *RunRecord) **int64 { return &r.DetachedSince }, putInt, readInt),
	opt("cancelRequested", func(r *RunRecord) **bool { return &r.CancelRequested }, putBool, readBool),
	opt("driverEpoch", func(r *RunRecord) **int64 { return &r.DriverEpoch }, putInt, readInt),
)

var genCodec = newCodec("generation run",
	req("runId", func(r *GenerationRunRecord) *string { return &r.RunID }, putStr, readID),
	req("threadId", func(r *GenerationRunRecord) *string { return &r.ThreadID }, putStr, readID),
	req("activity", func(r *GenerationRunRecord) *string { return &r.Activity }, putStr, readText),
	req("provider", func(r *GenerationRunRecord) *string { return &r.Provider }, putStr, readText),
	req("model", func(r *GenerationRunRecord) *string { return &r.Model }, putStr, readText),
	req("status", func(r *GenerationRunRecord) *RunStatus { return &r.Status }, putStatus[RunStatus], readStatus[RunStatus]),
	req("startedAt", func(r *GenerationRunRecord) *int64 { return &r.StartedAt }, putInt, readInt),
	opt("finishedAt", func(r *GenerationRunRecord) **int64 { return &r.FinishedAt }, putInt, readInt),
	opt("error", func(r *GenerationRunRecord) **RunError { return &r.Error }, putRunError, readRunError),
	raw("result", func(r *GenerationRunRecord) *json.RawMessage { return &r.Result }, false, readRawOrNull),
	raw("artifacts", func(r *GenerationRunRecord) *json.RawMessage { return &r.Artifacts }, false, readRaw),
	raw("usage", func(r *GenerationRunRecord) *json.RawMessage { return &r.Usage }, false, readRaw),
)

var intCodec = newCodec("interrupt",
	req("interruptId", func(r *InterruptRecord) *string { return &r.InterruptID }, putStr, readID),
	req("runId", func(r *InterruptRecord) *string { return &r.RunID }, putStr, readID),
	req("threadId", func(r *InterruptRecord) *string { return &r.ThreadID }, putStr, readID),
	req("status", func(r *InterruptRecord) *InterruptStatus { return &r.Status }, putStatus[InterruptStatus], readStatus[InterruptStatus]),
	req("requestedAt", func(r *InterruptRecord) *int64 { return &r.RequestedAt }, putInt, readInt),
	opt("resolvedAt", func(r *InterruptRecord) **int64 { return &r.ResolvedAt }, putInt, readInt),
	raw("payload", func(r *InterruptRecord) *json.RawMessage { return &r.Payload }, true, readRaw),
	raw("response", func(r *InterruptRecord) *json.RawMessage { return &r.Response }, false, readRawOrNull),
)

var entryCodec = newCodec("entry",
	req("interruptId", func(r *InterruptCommitEntry) *string { return &r.InterruptID }, putStr, readID),
	req("status", func(r *InterruptCommitEntry) *InterruptStatus { return &r.Status }, putStatus[InterruptStatus], readStatus[InterruptStatus]),
	raw("response", func(r *InterruptCommitEntry) *json.RawMessage { return &r.Response }, false, readRawOrNull),
)

var artCodec = newCodec("artifact",
	req("artifactId", func(r *ArtifactRecord) *string { return &r.ArtifactID }, putStr, readID),
	req("runId", func(r *ArtifactRecord) *string { return &r.RunID }, putStr, readID),
	req("threadId", func(r *ArtifactRecord) *string { return &r.ThreadID }, putStr, readID),
	opt("blobKey", func(r *ArtifactRecord) **string { return &r.BlobKey }, putStr, readID),
	req("name", func(r *ArtifactRecord) *string { return &r.Name }, putStr, readText),
	req("mimeType", func(r *ArtifactRecord) *string { return &r.MimeType }, putStr, readText),
	req("size", func(r *ArtifactRecord) *int64 { return &r.Size }, putInt, readInt),
	opt("sourceUrl", func(r *ArtifactRecord) **string { return &r.SourceURL }, putStr, readText),
	req("createdAt", func(r *ArtifactRecord) *int64 { return &r.CreatedAt }, putInt, readInt),
)

var blobCodec = newCodec("blob",
	req("key", func(r *BlobRecord) *string { return &r.Key }, putStr, readID),
	req("size", func(r *BlobRecord) *int64 { return &r.Size }, putInt, readInt),
	req("etag", func(r *BlobRecord) *string { return &r.ETag }, putStr, readText),
	opt("contentType", func(r *BlobRecord) **string { return &r.ContentType }, putStr, readText),
	req("customMetadata", func(r *BlobRecord) *map[string]string { return &r.CustomMetadata }, putMap, readStringMap),
	req("createdAt", func(r *BlobRecord) *int64 { return &r.CreatedAt }, putInt, readInt),
	req("updatedAt", func(r *BlobRecord) *int64 { return &r.UpdatedAt }, putInt, readInt),
)

var metaCodec = newCodec("metadata",
	req("namespace", func(r *MetadataEntry) *string { return &r.Namespace }, putStr, readID),
	req("key", func(r *MetadataEntry) *string { return &r.Key }, putStr, readID),
	raw("value", func(r *MetadataEntry) *json.RawMessage { return &r.Value }, true, readRawOrNull),
)

// ---- the methods of the records ----

// Codec is a type this codec reads and writes.
type Codec interface {
	RunRecord | GenerationRunRecord | InterruptRecord | InterruptCommitEntry | ArtifactRecord | BlobRecord | MetadataEntry
}

// codecOf is T's codec.
func codecOf[T Codec]() *codec[T] {
	var c any
	switch any((*T)(nil)).(type) {
	case *RunRecord:
		c = runCodec
	case *GenerationRunRecord:
		c = genCodec
	case *InterruptRecord:
		c = intCodec
	case *InterruptCommitEntry:
		c = entryCodec
	case *ArtifactRecord:
		c = artCodec
	case *BlobRecord:
		c = blobCodec
	case *MetadataEntry:
		c = metaCodec
	}
	return c.(*codec[T])
}

// Read reads a record's object, or null as nil, the value next in x; at is
// its JSON pointer, which its faults name.
func Read[T Codec](x *Reader, at string) *T { return codecOf[T]().nullable(x, at, -1) }

// ReadList reads an array of records (null is none) at the pointer at.
func ReadList[T Codec](x *Reader, at string) []*T { return codecOf[T]().list(x, at) }

// AppendJSON appends r's JSON (see the file comment).
func (r *RunRecord) AppendJSON(b []byte) []byte { return runCodec.appendJSON(b, r) }

// MarshalJSON encodes r (AppendJSON).
func (r RunRecord) MarshalJSON() ([]byte, error) {
	return r.AppendJSON(make([]byte, 0, 256+len(r.Usage))), nil
}

// UnmarshalJSON decodes a run; on failure r is left as it was.
func (r *RunRecord) UnmarshalJSON(b []byte) error { return runCodec.unmarshal(b, r) }

// ReadMember reads the member name of a run's object into r, the value
// next in x; false (nothing read) when a run has no such member.
func (r *RunRecord) ReadMember(x *Reader, name []byte) bool { return runCodec.member(x, name, r) }

// Members calls fn with each member of r's JSON, in order: its name, its
// value's JSON (valid during the call) and whether it is a raw JSON value.
func (r *RunRecord) Members(fn func(name string, value []byte, raw bool)) { runCodec.each(r, fn) }

// SetMember sets the member name from its value's JSON, as a run's
// object is read.
func (r *RunRecord) SetMember(name string, value []byte) error {
	return runCodec.setMember(r, name, value)
}

// AppendJSON appends r's JSON.
func (r *GenerationRunRecord) AppendJSON(b []byte) []byte { return genCodec.appendJSON(b, r) }

// MarshalJSON encodes r (AppendJSON).
func (r GenerationRunRecord) MarshalJSON() ([]byte, error) {
	return r.AppendJSON(make([]byte, 0, 256+len(r.Result)+len(r.Artifacts)+len(r.Usage))), nil
}

// UnmarshalJSON decodes a generation run; on failure r is left as it was.
func (r *GenerationRunRecord) UnmarshalJSON(b []byte) error { return genCodec.unmarshal(b, r) }

// ReadMember reads one member into r (see RunRecord.ReadMember).
func (r *GenerationRunRecord) ReadMember(x *Reader, name []byte) bool {
	return genCodec.member(x, name, r)
}

// Members yields r's members (see RunRecord.Members).
func (r *GenerationRunRecord) Members(fn func(name string, value []byte, raw bool)) {
	genCodec.each(r, fn)
}

// SetMember sets one member (see RunRecord.SetMember).
func (r *GenerationRunRecord) SetMember(name string, value []byte) error {
	return genCodec.setMember(r, name, value)
}

// AppendJSON appends r's JSON; a missing payload is written as null.
func (r *InterruptRecord) AppendJSON(b []byte) []byte { return intCodec.appendJSON(b, r) }

// MarshalJSON encodes r (AppendJSON).
func (r InterruptRecord) MarshalJSON() ([]byte, error) {
	return r.AppendJSON(make([]byte, 0, 192+len(r.Payload)+len(r.Response))), nil
}

// UnmarshalJSON decodes an interrupt; on failure r is left as it was.
func (r *InterruptRecord) UnmarshalJSON(b []byte) error { return intCodec.unmarshal(b, r) }

// ReadMember reads one member into r (see RunRecord.ReadMember).
func (r *InterruptRecord) ReadMember(x *Reader, name []byte) bool {
	return intCodec.member(x, name, r)
}

// Members yields r's members (see RunRecord.Members).
func (r *InterruptRecord) Members(fn func(name string, value []byte, raw bool)) {
	intCodec.each(r, fn)
}

// SetMember sets one member (see RunRecord.SetMember).
func (r *InterruptRecord) SetMember(name string, value []byte) error {
	return intCodec.setMember(r, name, value)
}

// AppendJSON appends e's JSON.
func (e *InterruptCommitEntry) AppendJSON(b []byte) []byte { return entryCodec.appendJSON(b, e) }

// MarshalJSON encodes e (AppendJSON).
func (e InterruptCommitEntry) MarshalJSON() ([]byte, error) {
	return e.AppendJSON(make([]byte, 0, 96+len(e.Response))), nil
}

// UnmarshalJSON decodes a commit entry; on failure e is left as it was.
func (e *InterruptCommitEntry) UnmarshalJSON(b []byte) error { return entryCodec.unmarshal(b, e) }

// AppendJSON appends r's JSON.
func (r *ArtifactRecord) AppendJSON(b []byte) []byte { return artCodec.appendJSON(b, r) }

// MarshalJSON encodes r (AppendJSON).
func (r ArtifactRecord) MarshalJSON() ([]byte, error) { return r.AppendJSON(make([]byte, 0, 256)), nil }

// UnmarshalJSON decodes an artifact; on failure r is left as it was.
func (r *ArtifactRecord) UnmarshalJSON(b []byte) error { return artCodec.unmarshal(b, r) }

// Members yields r's members (see RunRecord.Members).
func (r *ArtifactRecord) Members(fn func(name string, value []byte, raw bool)) {
	artCodec.each(r, fn)
}

// SetMember sets one member (see RunRecord.SetMember).
func (r *ArtifactRecord) SetMember(name string, value []byte) error {
	return artCodec.setMember(r, name, value)
}

// AppendJSON appends r's JSON; customMetadata's keys are sorted.
func (r *BlobRecord) AppendJSON(b []byte) []byte { return blobCodec.appendJSON(b, r) }

// MarshalJSON encodes r (AppendJSON). A struct that embeds a BlobRecord
// (BlobMeta, persist.BlobObject) marshals as its BlobRecord: give it its
// own MarshalJSON when it has more members to write.
func (r BlobRecord) MarshalJSON() ([]byte, error) { return r.AppendJSON(make([]byte, 0, 256)), nil }

// UnmarshalJSON decodes a blob record; on failure r is left as it was.
func (r *BlobRecord) UnmarshalJSON(b []byte) error { return blobCodec.unmarshal(b, r) }

// ReadMember reads one member into r (see RunRecord.ReadMember).
func (r *BlobRecord) ReadMember(x *Reader, name []byte) bool { return blobCodec.member(x, name, r) }

// Members yields r's members (see RunRecord.Members).
func (r *BlobRecord) Members(fn func(name string, value []byte, raw bool)) { blobCodec.each(r, fn) }

// SetMember sets one member (see RunRecord.SetMember).
func (r *BlobRecord) SetMember(name string, value []byte) error {
	return blobCodec.setMember(r, name, value)
}

// AppendJSON appends m's JSON; a missing value is written as null.
func (m *MetadataEntry) AppendJSON(b []byte) []byte { return metaCodec.appendJSON(b, m) }

// MarshalJSON encodes m (AppendJSON).
func (m MetadataEntry) MarshalJSON() ([]byte, error) {
	return m.AppendJSON(make([]byte, 0, 64+len(m.Namespace)+len(m.Key)+len(m.Value))), nil
}

// UnmarshalJSON decodes a metadata entry; on failure m is left as it was.
func (m *MetadataEntry) UnmarshalJSON(b []byte) error { return metaCodec.unmarshal(b, m) }

// ---- patches ----

// patchMember is one member of a patch P: its state, the JSON of a set
// value, and a reader that sets (a value) or clears (null) it.
type patchMember[P any] struct {
	name, path string
	state      func(p *P) fieldState
	put        func(b []byte, p *P) []byte
	get        func(x *Reader, path string, p *P)
}

func pm[P, V any](name string, f func(*P) *Field[V], put func([]byte, V) []byte, get func(*Reader, string) (V, bool)) patchMember[P] {
	return patchMember[P]{name: name, path: "/" + name,
		state: func(p *P) fieldState { return f(p).state },
		put:   func(b []byte, p *P) []byte { return put(b, f(p).value) },
		get: func(x *Reader, path string, p *P) {
			if v, ok := get(x, path); ok {
				*f(p) = Set(v)
			} else {
				*f(p) = Clear[V]()
			}
		}}
}

var runPatchMembers = []patchMember[RunPatch]{
	pm("status", func(p *RunPatch) *Field[RunStatus] { return &p.Status }, putStatus[RunStatus], readStatus[RunStatus]),
	pm("finishedAt", func(p *RunPatch) *Field[int64] { return &p.FinishedAt }, putInt, readInt),
	pm("error", func(p *RunPatch) *Field[RunError] { return &p.Error }, putRunError, readRunError),
	pm("usage", func(p *RunPatch) *Field[json.RawMessage] { return &p.Usage }, putRaw, readRaw),
	pm("sandboxKey", func(p *RunPatch) *Field[string] { return &p.SandboxKey }, putStr, readText),
	pm("detachedSince", func(p *RunPatch) *Field[int64] { return &p.DetachedSince }, putInt, readInt),
	pm("cancelRequested", func(p *RunPatch) *Field[bool] { return &p.CancelRequested }, putBool, readBool),
	pm("driverEpoch", func(p *RunPatch) *Field[int64] { return &p.DriverEpoch }, putInt, readInt),
}

var genPatchMembers = []patchMember[GenerationRunPatch]{
	pm("status", func(p *GenerationRunPatch) *Field[RunStatus] { return &p.Status }, putStatus[RunStatus], readStatus[RunStatus]),
	pm("finishedAt", func(p *GenerationRunPatch) *Field[int64] { return &p.FinishedAt }, putInt, readInt),
	pm("error", func(p *GenerationRunPatch) *Field[RunError] { return &p.Error }, putRunError, readRunError),
	pm("result", func(p *GenerationRunPatch) *Field[json.RawMessage] { return &p.Result }, putRaw, readRaw),
	pm("artifacts", func(p *GenerationRunPatch) *Field[json.RawMessage] { return &p.Artifacts }, putRaw, readRaw),
	pm("usage", func(p *GenerationRunPatch) *Field[json.RawMessage] { return &p.Usage }, putRaw, readRaw),
}

// eachPatch calls fn with each member p names: a set one with its value's
// JSON (valid during the call), a cleared one with nil.
func eachPatch[P any](ms []patchMember[P], p *P, fn func(name string, value []byte)) {
	buf := scratchPool.Get().(*[]byte)
	for i := range ms {
		switch ms[i].state(p) {
		case fieldSet:
			*buf = ms[i].put((*buf)[:0], p)
			fn(ms[i].name, *buf)
		case fieldClear:
			fn(ms[i].name, nil)
		}
	}
	if cap(*buf) > 64<<10 {
		*buf = nil
	}
	scratchPool.Put(buf)
}

// appendPatch appends the members p names, a cleared one as null.
func appendPatch[P any](b []byte, ms []patchMember[P], p *P) []byte {
	b = append(b, '{')
	n := 0
	eachPatch(ms, p, func(name string, v []byte) {
		if n++; n > 1 {
			b = append(b, ',')
		}
		b = append(putStr(b, name), ':')
		if v == nil {
			v = []byte("null")
		}
		b = append(b, v...)
	})
	return append(b, '}')
}

// readPatch reads a patch object into p: a member left out keeps its
// field, null clears it, a value sets it; null and absence are faults.
func readPatch[P any](x *Reader, ms []patchMember[P], p *P, at string) {
	if x.JSON.Null() {
		x.value(fmt.Errorf("%w: the patch is null, not an object", ErrInvalidEntry))
		return
	}
	saveAt, saveI := x.at, x.i
	x.at, x.i = at, 0
	x.value(x.JSON.Object("", func(name []byte) error {
		for i := range ms {
			if ms[i].name == string(name) {
				ms[i].get(x, ms[i].path, p)
				return nil
			}
		}
		x.value(unknown("patch", name))
		return x.JSON.Skip()
	}))
	x.at, x.i = saveAt, saveI
}

func unmarshalPatch[P any](b []byte, ms []patchMember[P], dst *P) error {
	r := ckptdriver.NewJSONReader(b)
	defer r.Close()
	x := NewReader(r)
	var p P
	readPatch(x, ms, &p, "")
	if err := r.End(); err != nil {
		return fault(err, "")
	}
	if err := x.Err(); err != nil {
		return err
	}
	*dst = p
	return nil
}

// AppendJSON appends the members p names, a cleared one as null.
func (p *RunPatch) AppendJSON(b []byte) []byte { return appendPatch(b, runPatchMembers, p) }

// MarshalJSON encodes p (AppendJSON).
func (p RunPatch) MarshalJSON() ([]byte, error) { return p.AppendJSON(make([]byte, 0, 256)), nil }

// UnmarshalJSON reads a patch object: a member left out keeps its field,
// null clears it, a value sets it. Unknown members fail.
func (p *RunPatch) UnmarshalJSON(b []byte) error { return unmarshalPatch(b, runPatchMembers, p) }

// Members calls fn with each member p names: a set one with its value's
// JSON (valid during the call), a cleared one with nil.
func (p *RunPatch) Members(fn func(name string, value []byte)) { eachPatch(runPatchMembers, p, fn) }

// ReadRunPatch reads a run patch, the value next in x, into p; at is its
// JSON pointer.
func ReadRunPatch(x *Reader, p *RunPatch, at string) { readPatch(x, runPatchMembers, p, at) }

// AppendJSON appends the members p names, a cleared one as null.
func (p *GenerationRunPatch) AppendJSON(b []byte) []byte { return appendPatch(b, genPatchMembers, p) }

// MarshalJSON encodes p (AppendJSON).
func (p GenerationRunPatch) MarshalJSON() ([]byte, error) {
	return p.AppendJSON(make([]byte, 0, 256)), nil
}

// UnmarshalJSON reads a patch object as RunPatch.UnmarshalJSON does.
func (p *GenerationRunPatch) UnmarshalJSON(b []byte) error {
	return unmarshalPatch(b, genPatchMembers, p)
}

// Members yields the members p names (see RunPatch.Members).
func (p *GenerationRunPatch) Members(fn func(name string, value []byte)) {
	eachPatch(genPatchMembers, p, fn)
}

// ReadGenerationRunPatch reads a generation run patch (see ReadRunPatch).
func ReadGenerationRunPatch(x *Reader, p *GenerationRunPatch, at string) {
	readPatch(x, genPatchMembers, p, at)
}
