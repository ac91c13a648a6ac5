package httpstore

// What the handler and the client share: header names, the non-contract
// error codes, the status of each code, and a small JSON object builder
// that splices checkpoints in as the bytes of Checkpoint.MarshalJSON (an
// encoding/json encoder would compact them, and the conversation must keep
// its bytes).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
)

// Header names of the protocol.
const (
	HeaderNamespace      = "Ckpt-Namespace"
	HeaderNow            = "Ckpt-Now"
	HeaderLeaseDuration  = "Ckpt-Lease-Duration-Ms"
	HeaderRenewAfter     = "Ckpt-Renew-After-Ms"
	HeaderIdempotencyKey = "Idempotency-Key"
)

// Codes of the failures that are not contract errors.
const (
	CodeBadRequest       = "BAD_REQUEST"
	CodeUnauthorized     = "UNAUTHORIZED"
	CodeNotFound         = "NOT_FOUND"
	CodeMethodNotAllowed = "METHOD_NOT_ALLOWED"
	CodeUnsupportedMedia = "UNSUPPORTED_MEDIA_TYPE"
	CodeUnsupported      = "UNSUPPORTED"
	CodePayloadTooLarge  = "PAYLOAD_TOO_LARGE"
	CodeUnavailable      = "UNAVAILABLE"
	CodeInternal         = "INTERNAL"
)

// Capability names, as the capabilities method lists them.
const (
	CapPrune        = "prune"
	CapFork         = "fork"
	CapTranscripts  = "transcripts"
	CapDeleteThread = "deleteThread"
	CapListPage     = "listPage"
	CapThreads      = "threads"
	CapImport       = "import"
)

// Error is a failure the server reported. A contract error unwraps to its
// sentinel (errors.Is(err, ckptstore.ErrConflict), ckptstore.Code), and
// UNSUPPORTED to errors.ErrUnsupported.
type Error struct {
	Status  int    // the HTTP status
	Code    string // SANDBOX_SNAPSHOT_… or one of the Code… constants
	Message string // the server's message
}

// Error returns the status, the code and the server's message.
func (e *Error) Error() string {
	return fmt.Sprintf("httpstore: %d %s: %s", e.Status, e.Code, e.Message)
}

// Unwrap returns the sentinel of e's code, if it has one.
func (e *Error) Unwrap() error {
	if s := driver.ErrorFor(e.Code); s != nil {
		return s
	}
	if e.Code == CodeUnsupported {
		return errors.ErrUnsupported
	}
	return nil
}

// statusOf is the HTTP status of a wire code.
func statusOf(code string) int {
	switch code {
	case driver.CodeInvalidID, driver.CodeInvalidEntry, CodeBadRequest:
		return http.StatusBadRequest
	case driver.CodeForkSourceNotFound, CodeNotFound:
		return http.StatusNotFound
	case driver.CodeStaleHead, driver.CodeParentMismatch, driver.CodeDuplicateID,
		driver.CodeNotHead, driver.CodeWriterConflict, driver.CodeWriterLost,
		driver.CodeForkSourceThreadMismatch, driver.CodeForkDestinationNotEmpty:
		return http.StatusConflict
	case CodeUnauthorized:
		return http.StatusUnauthorized
	case CodeMethodNotAllowed:
		return http.StatusMethodNotAllowed
	case CodeUnsupportedMedia:
		return http.StatusUnsupportedMediaType
	case CodeUnsupported:
		return http.StatusNotImplemented
	case CodePayloadTooLarge:
		return http.StatusRequestEntityTooLarge
	case CodeUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// object builds one JSON object by appending fields.
type object struct {
	b []byte
}

func (o *object) start() { o.b = append(o.b[:0], '{') }

func (o *object) name(n string) {
	if len(o.b) > 1 {
		o.b = append(o.b, ',')
	}
	o.b = append(o.b, '"')
	o.b = append(o.b, n...)
	o.b = append(o.b, '"', ':')
}

// str appends a string field.
func (o *object) str(n, v string) {
	o.name(n)
	o.b = appendString(o.b, v)
}

// strOrNull appends a string field, null when v is "".
func (o *object) strOrNull(n, v string) {
	if v == "" {
		o.name(n)
		o.b = append(o.b, "null"...)
		return
	}
	o.str(n, v)
}

func (o *object) int(n string, v int64) {
	o.name(n)
	o.b = strconv.AppendInt(o.b, v, 10)
}

func (o *object) float(n string, v float64) {
	o.name(n)
	o.b = appendFloat(o.b, v)
}

func (o *object) bool(n string, v bool) {
	o.name(n)
	o.b = strconv.AppendBool(o.b, v)
}

// raw appends a field whose value is already JSON.
func (o *object) raw(n string, v []byte) {
	o.name(n)
	o.b = append(o.b, v...)
}

func (o *object) writer(n string, w ckptstore.Writer) {
	o.name(n)
	o.b = append(o.b, `{"threadId":`...)
	o.b = appendString(o.b, w.ThreadID)
	o.b = append(o.b, `,"ownerToken":`...)
	o.b = appendString(o.b, w.OwnerToken)
	o.b = append(o.b, `,"fence":`...)
	o.b = strconv.AppendInt(o.b, w.Fence, 10)
	o.b = append(o.b, '}')
}

// checkpoint appends cp as its MarshalJSON bytes (null for nil).
func (o *object) checkpoint(n string, cp *ckptstore.Checkpoint) error {
	o.name(n)
	return o.appendCheckpoint(cp)
}

func (o *object) appendCheckpoint(cp *ckptstore.Checkpoint) error {
	if cp == nil {
		o.b = append(o.b, "null"...)
		return nil
	}
	o.b = appendCheckpointJSON(o.b, cp)
	return nil
}

func (o *object) checkpoints(n string, cps []*ckptstore.Checkpoint) error {
	o.name(n)
	o.b = append(o.b, '[')
	for i, cp := range cps {
		if i > 0 {
			o.b = append(o.b, ',')
		}
		if err := o.appendCheckpoint(cp); err != nil {
			return err
		}
	}
	o.b = append(o.b, ']')
	return nil
}

func (o *object) strings(n string, ss []string) {
	o.name(n)
	o.b = append(o.b, '[')
	for i, s := range ss {
		if i > 0 {
			o.b = append(o.b, ',')
		}
		o.b = appendString(o.b, s)
	}
	o.b = append(o.b, ']')
}

func (o *object) end() []byte { return append(o.b, '}') }

// fields is a decoded request or reply object: field names matched
// exactly, a repeated name keeping its last value, as in JSON.parse.
type fields map[string]json.RawMessage

// decodeFields decodes body, which must be one JSON object, into its
// fields: names matched exactly, the last of a repeated name kept, every
// value its bare JSON bytes — but the values of transcript fields
// (messages, transcript), which keep the whitespace around them, as a
// transcript is kept byte for byte. decodeFields copies what it keeps, so
// body may be reused. It reads body once, with jsontext (as fast as
// encoding/json's validity scan alone).
func decodeFields(body []byte) (fields, error) {
	dec := jsontext.NewDecoder(bytes.NewBuffer(body), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	if t, err := dec.ReadToken(); err != nil || t.Kind() != '{' {
		return nil, errors.New("the body is not a JSON object")
	}
	f := make(fields, 8)
	for dec.PeekKind() == '"' {
		name, err := dec.ReadToken()
		if err != nil {
			return nil, fmt.Errorf("the body is not a JSON object: %v", err)
		}
		key := name.String() // before the next read voids name
		from := int(dec.InputOffset())
		v, err := dec.ReadValue()
		if err != nil {
			return nil, fmt.Errorf("the body is not a JSON object: %v", err)
		}
		if slices.Contains(paddedFields, key) {
			f[key] = padded(body, from, int(dec.InputOffset()))
			continue
		}
		f[key] = bytes.Clone(v)
	}
	if t, err := dec.ReadToken(); err != nil || t.Kind() != '}' {
		return nil, errors.New("the body is not a JSON object")
	}
	if _, err := dec.ReadToken(); err != io.EOF {
		return nil, errors.New("the body is more than one JSON object")
	}
	return f, nil
}

// padded returns a copy of obj[from:end] — a name's end to its value's
// end — from after the ':' to the ',' or '}' that follows: the value with
// the whitespace around it.
func padded(obj []byte, from, end int) json.RawMessage {
	for from < end && obj[from] != ':' {
		from++
	}
	for end < len(obj) && isSpace(obj[end]) {
		end++
	}
	return bytes.Clone(obj[from+1 : end])
}

// paddedFields are the fields whose whitespace counts.
var paddedFields = []string{"messages", "transcript"}

// paddedValue returns a copy of the value of the last field name of the JSON
// object obj with the whitespace around it: everything between the ':' and
// the ',' or '}' that follows. encoding/json and jsontext strip it, but a
// conversation or transcript is stored byte for byte, whitespace included.
func paddedValue(obj []byte, name string) (json.RawMessage, bool) {
	dec := jsontext.NewDecoder(bytes.NewBuffer(obj), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	if t, err := dec.ReadToken(); err != nil || t.Kind() != '{' {
		return nil, false
	}
	var out json.RawMessage
	found := false
	for dec.PeekKind() == '"' {
		t, err := dec.ReadToken()
		if err != nil {
			return nil, false
		}
		if t.String() != name {
			if dec.SkipValue() != nil {
				return nil, false
			}
			continue
		}
		from := int(dec.InputOffset())
		if _, err := dec.ReadValue(); err != nil {
			return nil, false
		}
		out, found = padded(obj, from, int(dec.InputOffset())), true
	}
	return out, found
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// decodeCheckpoint decodes one checkpoint, keeping the whitespace around
// its conversation.
func decodeCheckpoint(raw []byte) (*ckptstore.Checkpoint, error) {
	if cp, ok := decodeCheckpointFast(raw); ok {
		return cp, nil
	}
	return decodeCheckpointRoot(raw)
}

// decodeCheckpointRoot is decodeCheckpoint through the root decoder alone,
// the one authority on what is refused (fastcp.go).
func decodeCheckpointRoot(raw []byte) (*ckptstore.Checkpoint, error) {
	cp := new(ckptstore.Checkpoint)
	if err := cp.UnmarshalJSON(raw); err != nil {
		return nil, err
	}
	if cp.Conversation != nil {
		if p, ok := paddedValue(raw, "conversation"); ok && len(p) != len(cp.Conversation) {
			cp.Conversation = p
		}
	}
	return cp, nil
}

// str is a string field, decoded strictly (see driver.DecodeJSONString);
// absent and null are "".
func (f fields) str(name string, sentinel error) (string, error) {
	s, _, err := driver.DecodeJSONString(f[name], name, sentinel)
	return s, err
}

// isNull reports whether the field is absent or null.
func (f fields) isNull(name string) bool {
	r := bytes.TrimFunc(f[name], func(r rune) bool { return r < 0x80 && isSpace(byte(r)) })
	return len(r) == 0 || string(r) == "null"
}

// int is an integer field of at most 2^53−1 in magnitude; absent or null
// is 0. Anything else fails with ErrInvalidEntry.
func (f fields) int(name string) (int64, error) {
	if f.isNull(name) {
		return 0, nil
	}
	v, err := f.float(name)
	if err != nil {
		return 0, err
	}
	if v != math.Trunc(v) || math.Abs(v) > driver.MaxSize {
		return 0, fmt.Errorf("%w: %s %v is not an integer", ckptstore.ErrInvalidEntry, name, v)
	}
	return int64(v), nil
}

// float is a number field; absent or null is 0.
func (f fields) float(name string) (float64, error) {
	r := f[name]
	if f.isNull(name) {
		return 0, nil
	}
	if !(r[0] == '-' || '0' <= r[0] && r[0] <= '9') {
		return 0, fmt.Errorf("%w: %s must be a number", ckptstore.ErrInvalidEntry, name)
	}
	v, err := strconv.ParseFloat(string(r), 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %s %s is out of range", ckptstore.ErrInvalidEntry, name, r)
	}
	return v, nil
}

// bool is a boolean field; absent or null is false.
func (f fields) bool(name string) (bool, error) {
	switch string(f[name]) {
	case "", "null", "false":
		return false, nil
	case "true":
		return true, nil
	}
	return false, fmt.Errorf("%w: %s must be a boolean", ckptstore.ErrInvalidEntry, name)
}

// writer is a Writer field; absent or null fails with ErrInvalidID (a
// writer without a thread id).
func (f fields) writer(name string) (ckptstore.Writer, error) {
	var w ckptstore.Writer
	if f.isNull(name) {
		return w, fmt.Errorf("%w: %s is missing", ckptstore.ErrInvalidID, name)
	}
	if w, ok := decodeWriterFast(f[name]); ok {
		return w, nil
	}
	err := w.UnmarshalJSON(f[name])
	return w, err
}

// checkpoint is a Checkpoint field; null is nil.
func (f fields) checkpoint(name string) (*ckptstore.Checkpoint, error) {
	if f.isNull(name) {
		return nil, nil
	}
	return decodeCheckpoint(f[name])
}

// checkpoints is an array of checkpoints; absent or null is none.
func (f fields) checkpoints(name string) ([]*ckptstore.Checkpoint, error) {
	if f.isNull(name) {
		return nil, nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(f[name], &raws); err != nil {
		return nil, fmt.Errorf("%w: %s is not an array: %v", ckptstore.ErrInvalidEntry, name, err)
	}
	out := make([]*ckptstore.Checkpoint, len(raws))
	for i, r := range raws {
		cp, err := decodeCheckpoint(r)
		if err != nil {
			return nil, err
		}
		out[i] = cp
	}
	return out, nil
}

// strings is an array of strings, decoded strictly; absent or null is none.
func (f fields) strings(name string, sentinel error) ([]string, error) {
	if f.isNull(name) {
		return nil, nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(f[name], &raws); err != nil {
		return nil, fmt.Errorf("%w: %s is not an array: %v", sentinel, name, err)
	}
	out := make([]string, len(raws))
	for i, r := range raws {
		s, ok, err := driver.DecodeJSONString(r, name, sentinel)
		if err == nil && !ok {
			err = fmt.Errorf("%w: %s[%d] is null", sentinel, name, i)
		}
		if err != nil {
			return nil, err
		}
		out[i] = s
	}
	return out, nil
}

// millis reads a header of milliseconds (driver.ParseMillis) in
// nanoseconds.
func millis(s string) (int64, error) { return driver.ParseMillis(s) }

// firstIDError returns the first error that wraps ErrInvalidID, else the
// first error: a request decodes its parts one after another, and the
// contract checks every id before any other field.
func firstIDError(errs ...error) error {
	for _, err := range errs {
		if errors.Is(err, ckptstore.ErrInvalidID) {
			return err
		}
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
