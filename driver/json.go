package driver

// The one JSON codec of the checkpoint types, in the shape of
// @tanstack/ai-sandbox: camelCase names, parentCheckpointId null when
// empty, a directory entry without blobKey and size, a file entry always
// with size, optional strings left out when empty, arrays never null.
//
// Decoding is a single pass of the scanner of scan.go over the input (a
// JSONReader), strict about the shape the TypeScript types imply: a field
// of the wrong JSON type, a size that is not a safe integer or a directory
// with file fields fails with ErrInvalidEntry, and a missing, non-string or
// ill-formed id with ErrInvalidID, each naming the field by its JSON
// pointer and the byte offset of its value. The rules of Validate are left
// to Validate. Fields are matched by their exact names, unknown ones are
// skipped, and a repeated name keeps its last value, as in JSON.parse; a
// string that is not well-formed Unicode is rejected rather than repaired,
// so that what decodes is what the TypeScript side meant. The conversation
// is kept as its exact bytes, with the whitespace around the array: the
// bytes between the ':' and the ',' or '}' that follow, which is what the
// encoder writes, so a checkpoint round-trips byte for byte.
//
// Encoding appends to a buffer without reflection, as encoding/json would
// write the same fields without HTML escaping (as JSON.stringify writes
// '<', '>' and '&'). encoding/json compacts and HTML-escapes what a
// MarshalJSON method returns, so the exact bytes come from calling
// MarshalJSON (or AppendJSON) directly.

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/ckptstore/ckptstore/contract"
)

// jsonValid reports whether b is exactly one JSON value, with optional
// whitespace around it: what encoding/json.Valid accepts (invalid UTF-8
// inside strings and repeated names included; the nesting limit is the
// same 10,000 levels). It is the decoder's own scanner, so a conversation
// is held to one grammar whether it arrives from Go or in a request body;
// it scans about twice as fast as jsontext.Value.IsValid, allocates
// nothing, and recurses at most maxDepth+1 levels.
func jsonValid(b []byte) bool {
	_, err := scanJSON(b, maxDepth)
	return err == nil
}

// CheckJSON is the JSON-validity rule of every contract, for each JSON
// value one stores: nil when b is exactly one JSON value, with optional
// whitespace around it, nested at most contract.MaxJSONDepth levels; else
// an error that says why and at which offset, of bounded size. It accepts
// what encoding/json.Valid accepts at that depth (invalid UTF-8 inside
// strings included; a contract that needs UTF-8 checks it apart). The
// error wraps no sentinel: each contract wraps it in its invalid-entry
// error. It is the scanner the wire reader reads with, held to a bound
// 9,000 levels below the reader's, so a value that passes fits any
// request that carries it and any record that stores it, and reads back.
func CheckJSON(b []byte) error {
	_, err := scanJSON(b, contract.MaxJSONDepth)
	return err
}

// scanJSON scans b, which must be exactly one JSON value nested at most
// limit levels, and reports why not, and whether it is only too deep.
func scanJSON(b []byte, limit int) (deep bool, err error) {
	s := scanner{b: b, limit: limit}
	end, err := s.value(s.skipSpace(0), 0)
	if err == nil {
		if i := s.skipSpace(end); i != len(b) {
			err = s.fail(i, "%s after the top-level value", s.describe(i))
		}
	}
	return s.deep, err
}

// ---- reading ----

// JSONReader reads one JSON text held in memory, in a single pass: the
// decoder of the checkpoint types, and of the request and reply bodies of
// httpstore, whose fields it reads value by value (Object, then String,
// Checkpoint, … or Skip for each field). A value of the wrong shape is
// skipped and reported as an error wrapping ErrInvalidEntry or
// ErrInvalidID, naming its JSON pointer and byte offset, and reading goes
// on; malformed JSON ends the reading, and Err reports it from then on.
// Decoded values share no memory with the input. A JSONReader is not safe
// for concurrent use.
type JSONReader struct {
	raw     []byte
	dec     scanner
	err     error  // the first syntax error
	nameEnd int64  // the offset just past the last object name read
	name    []byte // scratch for a name with escapes

	// Scratch of the value being read, reused from value to value.
	ar    arena
	files []entrySpans
	arts  []artifactSpans
}

// readerPool keeps readers, whose decoder state (stacks, buffers) is most
// of what a fresh one allocates.
var readerPool = sync.Pool{New: func() any { return new(JSONReader) }}

// NewJSONReader returns a reader of b, which must not change until Close.
func NewJSONReader(b []byte) *JSONReader {
	r := readerPool.Get().(*JSONReader)
	r.raw, r.err, r.nameEnd = b, nil, 0
	r.dec.Reset(b)
	return r
}

// Close releases r, which must not be used after.
func (r *JSONReader) Close() {
	r.raw = nil
	r.dec.Reset(nil) // drop the scanner's reference to the input
	if cap(r.name) > 1<<10 || cap(r.ar.b) > 64<<10 || cap(r.files) > 1<<10 || cap(r.arts) > 1<<10 {
		r.name, r.ar.b, r.files, r.arts = nil, nil, nil, nil // a rare huge value is left to the collector
	}
	readerPool.Put(r)
}

// Err returns the syntax error that ended the reading, or nil. It wraps
// ErrInvalidEntry and names the offset and pointer of the fault.
func (r *JSONReader) Err() error { return r.err }

// syntax records err, the decoder's, as the error that ends the reading.
func (r *JSONReader) syntax(err error) error {
	if r.err == nil {
		r.err = invalid("%v", err)
	}
	return r.err
}

// End checks that nothing but whitespace follows the values read.
func (r *JSONReader) End() error {
	if r.err != nil {
		return r.err
	}
	if _, err := r.dec.ReadToken(); err != io.EOF {
		if err == nil {
			err = fmt.Errorf("more than one JSON value (offset %d)", r.dec.InputOffset())
		}
		return r.syntax(err)
	}
	return nil
}

// jsonValue is a value read: its bytes in the input (nil when absent) and
// their offset.
type jsonValue struct {
	b   []byte
	off int64
}

func (v jsonValue) isNull() bool { return len(v.b) == 0 || string(v.b) == "null" }

// value reads the next value.
func (r *JSONReader) value() (jsonValue, error) {
	if r.err != nil {
		return jsonValue{}, r.err
	}
	v, err := r.dec.ReadValue()
	if err != nil {
		return jsonValue{}, r.syntax(err)
	}
	end := r.dec.InputOffset()
	start := end - int64(len(v))
	return jsonValue{r.raw[start:end:end], start}, nil
}

// Skip reads the next value and ignores it.
func (r *JSONReader) Skip() error {
	if r.err != nil {
		return r.err
	}
	if err := r.dec.SkipValue(); err != nil {
		return r.syntax(err)
	}
	return nil
}

// Object reads an object, calling field with each name (decoded; valid
// during the call only), which must read or skip the value; a non-nil error
// from field stops the reading and is returned. A value that is not an
// object is skipped, and Object returns an error wrapping ErrInvalidEntry
// that names path.
func (r *JSONReader) Object(path string, field func(name []byte) error) error {
	return r.object(jsonPath{base: path}, field)
}

func (r *JSONReader) object(path jsonPath, field func(name []byte) error) error {
	if r.err != nil {
		return r.err
	}
	if k := r.dec.PeekKind(); k != '{' {
		off := r.dec.InputOffset()
		if err := r.Skip(); err != nil {
			return err
		}
		return fieldErr(ErrInvalidEntry, path, "", off, "is not a JSON object")
	}
	if _, err := r.dec.ReadToken(); err != nil {
		return r.syntax(err)
	}
	for r.dec.PeekKind() == '"' {
		// A name read as a value, not a token, costs no string.
		n, err := r.dec.ReadValue()
		if err != nil {
			return r.syntax(err)
		}
		r.nameEnd = r.dec.InputOffset()
		if err := field(r.memberName(n)); err != nil {
			return err
		}
		if r.err != nil {
			return r.err
		}
	}
	if _, err := r.dec.ReadToken(); err != nil {
		return r.syntax(err)
	}
	return nil
}

// memberName is the decoded name of a member, from its JSON string
// (quotes included): the bytes between the quotes, or, when it has
// escapes, their decoding in r's scratch (valid until the next name).
func (r *JSONReader) memberName(quoted []byte) []byte {
	name := quoted[1 : len(quoted)-1]
	if bytes.IndexByte(name, '\\') < 0 {
		return name
	}
	r.name, _ = jsontext.AppendUnquote(r.name[:0], quoted)
	return r.name
}

// Array reads an array, calling elem with the index of each element, which
// must read or skip it. null is no array (isArray false); any other value
// that is not an array is skipped, and Array returns an error wrapping
// ErrInvalidEntry that names path.
func (r *JSONReader) Array(path string, elem func(i int) error) (isArray bool, err error) {
	return r.array(jsonPath{base: path}, elem)
}

func (r *JSONReader) array(path jsonPath, elem func(i int) error) (isArray bool, err error) {
	if r.err != nil {
		return false, r.err
	}
	switch r.dec.PeekKind() {
	case '[':
	case 'n':
		return false, r.Skip()
	default:
		off := r.dec.InputOffset()
		if err := r.Skip(); err != nil {
			return false, err
		}
		return false, fieldErr(ErrInvalidEntry, path, "", off, "is not an array")
	}
	if _, err := r.dec.ReadToken(); err != nil {
		return true, r.syntax(err)
	}
	for i := 0; r.dec.PeekKind() != ']'; i++ {
		if r.dec.PeekKind() == 0 {
			_, err := r.dec.ReadToken()
			return true, r.syntax(err)
		}
		if err := elem(i); err != nil {
			return true, err
		}
		if r.err != nil {
			return true, r.err
		}
	}
	if _, err := r.dec.ReadToken(); err != nil {
		return true, r.syntax(err)
	}
	return true, nil
}

// Null reads the next value when it is null and reports whether it was;
// any other value is left for the next read. A reader of a value that may
// be null (an optional object of the persistence records) asks it first.
// A malformed null ends the reading (Err).
func (r *JSONReader) Null() bool {
	if r.err != nil || r.dec.PeekKind() != 'n' {
		return false
	}
	_ = r.Skip()
	return true
}

// Padded reads the value of the field whose name was just read and returns
// a copy of it with the whitespace around it: the bytes from after the ':'
// to the ',' or '}' that follows. encoding/json and jsontext strip that
// whitespace, but a conversation or transcript is kept byte for byte. null
// is absent (nil, false).
func (r *JSONReader) Padded() ([]byte, bool, error) {
	v, ok, err := r.padded()
	if !ok || err != nil {
		return nil, false, err
	}
	return bytes.Clone(v), true, nil
}

// PaddedView is Padded without the copy: the bytes are the input's, valid
// as long as it is. A server that holds the request body until the call
// ends passes a transcript on as a view (a driver copies what it keeps),
// so a large one costs the body once, not twice.
func (r *JSONReader) PaddedView() ([]byte, bool, error) { return r.padded() }

// Transcript reads a transcript for SaveThread as it reads the request:
// PaddedView's bytes, checked in the same pass (the scanner has checked
// the syntax as it read the value; what ValidateTranscript adds is the
// kind and the UTF-8), so the transcript is neither copied nor scanned a
// second time. null is absent (false). A value that is not an array of
// valid UTF-8 fails with ErrInvalidEntry, as ValidateTranscript does.
func (r *JSONReader) Transcript() (Transcript, bool, error) {
	v, ok, deep, err := r.paddedBounded()
	if !ok || err != nil {
		return Transcript{}, false, err
	}
	if t := bytes.TrimLeft(v, " \t\r\n"); t[0] != '[' || !utf8.Valid(v) {
		return Transcript{}, true, invalid("transcript is not a JSON array")
	}
	if deep {
		return Transcript{}, true, invalid("transcript is nested deeper than %d levels", contract.MaxJSONDepth)
	}
	return Transcript{b: v}, true, nil
}

// paddedBounded is padded for a value the contract's JSON-validity rule
// bounds: deep reports that the value nests deeper than
// contract.MaxJSONDepth, which the scanner measured as it read it (no
// second pass).
func (r *JSONReader) paddedBounded() (v []byte, ok, deep bool, err error) {
	base := len(r.dec.stack)
	r.dec.peak = base
	v, ok, err = r.padded()
	return v, ok, r.dec.peak-base > contract.MaxJSONDepth, err
}

// padded is Padded without the copy.
func (r *JSONReader) padded() ([]byte, bool, error) {
	from := r.nameEnd
	v, err := r.value()
	if err != nil || v.isNull() {
		return nil, false, err
	}
	end := v.off + int64(len(v.b))
	for from < v.off && r.raw[from] != ':' {
		from++
	}
	for end < int64(len(r.raw)) && isJSONSpace(r.raw[end]) {
		end++
	}
	return r.raw[from+1 : end : end], true, nil
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// String reads a string, decoded strictly: null is absent ("", false); a
// value that is not a string, or a string that is not well-formed Unicode
// (invalid UTF-8, a lone surrogate escape), fails with an error wrapping
// sentinel and naming path.
func (r *JSONReader) String(path string, sentinel error) (string, bool, error) {
	v, err := r.value()
	if err != nil {
		return "", false, err
	}
	if !v.isNull() && v.b[0] == '"' {
		if body := v.b[1 : len(v.b)-1]; bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body) {
			return string(body), true, nil // the common case, one allocation
		}
	}
	a := arena{b: r.ar.b[:0]}
	sp, ok, err := a.str(v, jsonPath{base: path}, "", sentinel)
	r.ar.b = a.b
	if !ok || err != nil {
		return "", false, err
	}
	return string(a.b[sp.off:sp.end]), true, nil
}

// Int reads an integer of at most 2^53−1 in magnitude (1e3 and 2.0 are
// integers); null is absent. Anything else fails with ErrInvalidEntry.
func (r *JSONReader) Int(path string) (int64, bool, error) {
	v, err := r.value()
	if err != nil || v.isNull() {
		return 0, false, err
	}
	n, err := parseInt(v, jsonPath{base: path}, "", -MaxSize)
	return n, err == nil, err
}

// Float reads a finite number; null is absent. Anything else fails with
// ErrInvalidEntry.
func (r *JSONReader) Float(path string) (float64, bool, error) {
	v, err := r.value()
	if err != nil || v.isNull() {
		return 0, false, err
	}
	f, err := parseFloat(v, jsonPath{base: path}, "")
	return f, err == nil, err
}

// Bool reads a boolean; null is false. Anything else fails with
// ErrInvalidEntry.
func (r *JSONReader) Bool(path string) (bool, error) {
	v, err := r.value()
	if err != nil {
		return false, err
	}
	switch string(v.b) {
	case "null", "false":
		return false, nil
	case "true":
		return true, nil
	}
	return false, fieldErr(ErrInvalidEntry, jsonPath{base: path}, "", v.off, "must be a boolean")
}

// Strings reads an array of strings, each decoded as String decodes it and
// none null; null is none.
func (r *JSONReader) Strings(path string, sentinel error) ([]string, error) {
	var out []string
	var first error
	_, err := r.Array(path, func(i int) error {
		s, ok, err := r.String(path, sentinel)
		if err == nil && !ok {
			err = fieldErr(sentinel, jsonPath{base: path}, strconv.Itoa(i), r.dec.InputOffset(), "is null")
		}
		if first == nil {
			first = err
		}
		out = append(out, s)
		return nil
	})
	if err == nil {
		err = first
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// jsonPath names a value in errors, as a JSON pointer: base, or an
// element of the array list in base (base/list/i). It is built only when
// there is an error to report.
type jsonPath struct {
	base, list string
	i          int
}

func (p jsonPath) String() string {
	if p.list == "" {
		return p.base
	}
	return p.base + "/" + p.list + "/" + strconv.Itoa(p.i)
}

// fieldErr is a shape fault of the field name of path (of path itself
// when name is ""), at byte off of the input.
func fieldErr(sentinel error, path jsonPath, name string, off int64, format string, args ...any) error {
	p := path.String()
	if name != "" {
		p += "/" + name
	}
	if p == "" {
		p = "the value"
	}
	return fmt.Errorf("%w: %s %s (offset %d)", sentinel, p, fmt.Sprintf(format, args...), off)
}

// ---- strings ----

// arena collects the decoded strings of one value: a checkpoint's ids,
// paths and blob keys are many and small, and cutting them all from one
// string costs one allocation instead of one each. They then share that
// string as long as any of them lives, which costs nothing a copy would
// not: it holds only the strings, not the conversation beside them.
type arena struct{ b []byte }

// span is a string in an arena: b[off:end].
type span struct{ off, end int }

// str decodes v as a string into the arena: null or absent is ("", false);
// anything but a well-formed string fails with sentinel.
func (a *arena) str(v jsonValue, path jsonPath, name string, sentinel error) (span, bool, error) {
	if v.isNull() {
		return span{}, false, nil
	}
	if v.b[0] != '"' {
		return span{}, false, fieldErr(sentinel, path, name, v.off, "is not a string")
	}
	off := len(a.b)
	body := v.b[1 : len(v.b)-1]
	if bytes.IndexByte(body, '\\') < 0 {
		if !utf8.Valid(body) {
			return span{}, false, fieldErr(sentinel, path, name, v.off, "is not well-formed Unicode")
		}
		a.b = append(a.b, body...)
		return span{off, len(a.b)}, true, nil
	}
	if !wellFormedString(v.b) {
		return span{}, false, fieldErr(sentinel, path, name, v.off, "is not well-formed Unicode")
	}
	a.b, _ = jsontext.AppendUnquote(a.b, v.b) // well-formed, so it cannot fail
	return span{off, len(a.b)}, true, nil
}

// required is str for a string that must be present.
func (a *arena) required(v jsonValue, path jsonPath, name string, sentinel error) (span, error) {
	s, ok, err := a.str(v, path, name, sentinel)
	if err == nil && !ok {
		err = fieldErr(sentinel, path, "", v.off, "needs a string %s", name)
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

// ---- numbers ----

// Every number of the codec is parsed here: as a float64 (what JavaScript
// holds), and an integer is a float64 without a fraction.

// parseFloat decodes v, a JSON number; one too large for a float64 (1e400)
// fails, as it has no finite value.
func parseFloat(v jsonValue, path jsonPath, name string) (float64, error) {
	if v.isNull() || !(v.b[0] == '-' || '0' <= v.b[0] && v.b[0] <= '9') {
		return 0, fieldErr(ErrInvalidEntry, path, name, v.off, "must be a number")
	}
	if n, ok := smallUint(v.b); ok {
		return float64(n), nil
	}
	f, err := strconv.ParseFloat(string(v.b), 64)
	if err != nil {
		return 0, fieldErr(ErrInvalidEntry, path, name, v.off, "%s is out of range", v.b)
	}
	return f, nil
}

// smallUint returns the value of b when it is a run of at most 15 digits,
// which a float64 holds exactly: the sizes, fences and millisecond times
// that are most of the numbers read, without strconv's general parse. The
// scanner has checked b's grammar, so it has no leading zero.
func smallUint(b []byte) (uint64, bool) {
	if len(b) > 15 {
		return 0, false
	}
	var n uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + uint64(c-'0')
	}
	return n, true
}

// parseInt decodes v, a JSON number that is an integer from lowest to
// 2^53−1, as JavaScript's Number.isSafeInteger accepts it (1e3 and 2.0
// included).
func parseInt(v jsonValue, path jsonPath, name string, lowest int64) (int64, error) {
	f, err := parseFloat(v, path, name)
	if err != nil {
		return 0, err
	}
	if f != math.Trunc(f) || f > MaxSize || f < float64(lowest) {
		return 0, fieldErr(ErrInvalidEntry, path, name, v.off, "%s is not a safe integer in range", v.b)
	}
	return int64(f), nil
}

// ---- the checkpoint types ----

// entrySpans is an entry before its strings are cut from the arena.
type entrySpans struct {
	path, blobKey span
	kind          EntryKind
	size          int64
}

func (a *arena) entry(e entrySpans, s string) Entry {
	return Entry{Path: s[e.path.off:e.path.end], Kind: e.kind, BlobKey: s[e.blobKey.off:e.blobKey.end], Size: e.size}
}

// artifactSpans is an artifact before its strings are cut from the arena.
type artifactSpans struct {
	id, name, mime, blobKey span
	size                    int64
	createdAt               float64
}

func (a *arena) artifact(x artifactSpans, s string) Artifact {
	cut := func(sp span) string { return s[sp.off:sp.end] }
	return Artifact{ArtifactID: cut(x.id), Name: cut(x.name), MimeType: cut(x.mime), Size: x.size,
		BlobKey: cut(x.blobKey), CreatedAt: x.createdAt}
}

// fields reads an object, keeping the value of each field named in names
// at the same index of vals (a repeated name keeps its last value), and
// handing any other name to other, or skipping it when other is nil.
func (r *JSONReader) fields(path jsonPath, names []string, vals []jsonValue, other func(name []byte) error) error {
	if other == nil && r.err == nil && r.dec.PeekKind() == '{' {
		// A flat object (entry, artifact, writer, instance) is read in
		// one pass of the scanner, a member at a time, not a token at a
		// time: most of an append's decoding is its entries.
		err := r.dec.ReadObject(func(quoted, val []byte, off int) {
			if i := slices.Index(names, string(r.memberName(quoted))); i >= 0 {
				vals[i] = jsonValue{val, int64(off)}
			}
		})
		if err != nil {
			return r.syntax(err)
		}
		return nil
	}
	return r.object(path, func(name []byte) error {
		if i := slices.Index(names, string(name)); i >= 0 {
			var err error
			vals[i], err = r.value()
			return err
		}
		if other != nil {
			return other(name)
		}
		return r.Skip()
	})
}

// The fields each object keeps, by the index of its values.
var (
	entryFields      = []string{"path", "kind", "blobKey", "size"}
	artifactFields   = []string{"artifactId", "name", "mimeType", "blobKey", "size", "createdAt"}
	checkpointFields = []string{"id", "threadId", "parentCheckpointId", "createdAt", "reason", "label", "sourceRunId"}
	writerFields     = []string{"threadId", "ownerToken", "fence"}
	instanceFields   = []string{"key", "provider", "providerSandboxId", "threadId", "latestSnapshotId", "latestRunId", "updatedAt"}
)

// entry reads an entry object into the arena, rejecting a directory with
// a blobKey or size and a file without them.
func (r *JSONReader) entry(a *arena, path jsonPath) (entrySpans, error) {
	var v [4]jsonValue
	var e entrySpans
	start := r.dec.InputOffset()
	err := r.fields(path, entryFields, v[:], nil)
	if err != nil {
		return e, err
	}
	fpath, kind, blobKey, size := v[0], v[1], v[2], v[3]
	if e.path, err = a.required(fpath, path, "path", ErrInvalidEntry); err != nil {
		return e, err
	}
	mark := len(a.b)
	k, err := a.required(kind, path, "kind", ErrInvalidEntry)
	if err != nil {
		return e, err
	}
	kb := string(a.b[k.off:k.end])
	a.b = a.b[:mark] // the kind is one of two constants, not an arena string
	switch kb {
	case string(KindDir):
		e.kind = KindDir
		if !blobKey.isNull() || !size.isNull() {
			return e, fieldErr(ErrInvalidEntry, path, "", start, "is a directory with a blobKey or size")
		}
	case string(KindFile):
		e.kind = KindFile
		if e.blobKey, err = a.required(blobKey, path, "blobKey", ErrInvalidEntry); err != nil {
			return e, err
		}
		if e.size, err = parseInt(size, path, "size", 0); err != nil {
			return e, err
		}
	default:
		return e, fieldErr(ErrInvalidEntry, path, "kind", kind.off, "is %s, not file or dir", kind.b)
	}
	return e, nil
}

// artifact reads an artifact object into the arena; every field is
// required.
func (r *JSONReader) artifact(a *arena, path jsonPath) (artifactSpans, error) {
	var v [6]jsonValue
	var x artifactSpans
	err := r.fields(path, artifactFields, v[:], nil)
	if err != nil {
		return x, err
	}
	for i, dst := range []*span{&x.id, &x.name, &x.mime, &x.blobKey} {
		if *dst, err = a.required(v[i], path, artifactFields[i], ErrInvalidEntry); err != nil {
			return x, err
		}
	}
	if x.size, err = parseInt(v[4], path, "size", 0); err != nil {
		return x, err
	}
	x.createdAt, err = parseFloat(v[5], path, "createdAt")
	return x, err
}

// arrayInto reads an array of objects into *dst, which it empties first,
// with elem, keeping the first fault; isArray is false for null.
func arrayInto[T any](r *JSONReader, path jsonPath, dst *[]T, elem func(path jsonPath) (T, error)) (isArray bool, err error) {
	*dst = (*dst)[:0]
	var first error
	isArray, err = r.array(path, func(i int) error {
		v, err := elem(jsonPath{base: path.base, list: path.list, i: i})
		if r.err != nil {
			return r.err
		}
		if first == nil {
			first = err
		}
		*dst = append(*dst, v)
		return nil
	})
	if err == nil {
		err = first
	}
	return isArray, err
}

// Checkpoint reads a checkpoint; null is nil. path names the value in
// errors ("" for the whole input). The ids are checked first (ErrInvalidID
// when missing, not strings or not well-formed), as Append checks them
// first; then the other fields, in the order of the TypeScript type. The
// conversation keeps its bytes and the whitespace around them; it must be
// a JSON array (null or absent means empty).
func (r *JSONReader) Checkpoint(path string) (*Checkpoint, error) {
	if r.err != nil {
		return nil, r.err
	}
	if r.dec.PeekKind() == 'n' {
		return nil, r.Skip()
	}
	p := jsonPath{base: path}
	var v [7]jsonValue
	var conv []byte
	var convOff int64
	var hasFiles, hasArts, convDeep bool
	var filesErr, artsErr error
	// The strings are cut from one string of the reader's arena, and the
	// entries built from the reader's scratch slices: per checkpoint, one
	// allocation for its strings and one per slice.
	r.ar.b = r.ar.b[:0]
	err := r.fields(p, checkpointFields, v[:], func(name []byte) (err error) {
		switch string(name) {
		case "conversation":
			convOff = r.nameEnd
			conv, _, convDeep, err = r.paddedBounded()
		case "files":
			hasFiles, filesErr = arrayInto(r, jsonPath{base: path, list: "files"}, &r.files,
				func(p jsonPath) (entrySpans, error) { return r.entry(&r.ar, p) })
		case "artifacts":
			hasArts, artsErr = arrayInto(r, jsonPath{base: path, list: "artifacts"}, &r.arts,
				func(p jsonPath) (artifactSpans, error) { return r.artifact(&r.ar, p) })
		default:
			err = r.Skip()
		}
		if r.err != nil {
			return r.err
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	id, thread, parent, createdAt, reason, label, run := v[0], v[1], v[2], v[3], v[4], v[5], v[6]
	a := &r.ar
	var sp [6]span
	var errs [10]error
	sp[0], errs[0] = a.required(id, p, "id", ErrInvalidID)
	sp[1], errs[1] = a.required(thread, p, "threadId", ErrInvalidID)
	sp[2], _, errs[2] = a.str(parent, p, "parentCheckpointId", ErrInvalidID)
	for _, err := range errs[:3] {
		if err != nil {
			return nil, err
		}
	}
	cp := new(Checkpoint)
	cp.CreatedAt, errs[3] = parseFloat(createdAt, p, "createdAt")
	sp[3], errs[4] = a.required(reason, p, "reason", ErrInvalidEntry)
	sp[4], _, errs[5] = a.str(label, p, "label", ErrInvalidEntry)
	sp[5], _, errs[6] = a.str(run, p, "sourceRunId", ErrInvalidEntry)
	errs[7] = filesErr
	if conv != nil {
		// The scanner has checked the syntax as it read the value; what
		// is left of validateConversation is the kind and the UTF-8.
		if t := bytes.TrimLeft(conv, " \t\r\n"); t[0] != '[' || !utf8.Valid(conv) {
			errs[8] = fieldErr(ErrInvalidEntry, p, "conversation", convOff, "is not a JSON array of valid UTF-8")
		} else if convDeep {
			errs[8] = fieldErr(ErrInvalidEntry, p, "conversation", convOff, "is nested deeper than %d levels", contract.MaxJSONDepth)
		}
	}
	errs[9] = artsErr
	for _, err := range errs[3:] {
		if err != nil {
			return nil, err
		}
	}
	s := string(a.b)
	cut := func(x span) string { return s[x.off:x.end] }
	cp.ID, cp.ThreadID, cp.ParentCheckpointID = cut(sp[0]), cut(sp[1]), cut(sp[2])
	cp.Reason, cp.Label, cp.SourceRunID = Reason(cut(sp[3])), cut(sp[4]), cut(sp[5])
	if hasFiles {
		cp.Files = make([]Entry, len(r.files))
		for i, e := range r.files {
			cp.Files[i] = a.entry(e, s)
		}
	}
	if hasArts {
		cp.Artifacts = make([]Artifact, len(r.arts))
		for i, x := range r.arts {
			cp.Artifacts[i] = a.artifact(x, s)
		}
	}
	if conv != nil {
		cp.Conversation = bytes.Clone(conv)
	}
	return cp, nil
}

// Decoded is a checkpoint that JSONReader.Decoded read: the reader held
// its conversation to validateConversation's rules as it read it (the
// scanner checked the syntax, Checkpoint the kind and the UTF-8), so
// ValidateAppendDecoded does not scan it again. Only this package makes
// one; its checkpoint must not be changed.
type Decoded struct {
	cp *Checkpoint
}

// Checkpoint returns the decoded checkpoint; nil for null.
func (d Decoded) Checkpoint() *Checkpoint { return d.cp }

// Decoded is Checkpoint, with the checkpoint as a Decoded. The reader's
// limit on nesting covers the value and the envelopes around it, so a
// conversation it accepts is within validateConversation's limit too.
func (r *JSONReader) Decoded(path string) (Decoded, error) {
	cp, err := r.Checkpoint(path)
	return Decoded{cp: cp}, err
}

// Writer reads a writer; null is absent (false). The thread id is decoded
// strictly (ErrInvalidID when missing, not a string or not well-formed
// Unicode, as every id); ownerToken must be a string (ErrInvalidEntry
// otherwise) and is taken as encoding/json decodes it, since a token that
// is not well-formed cannot be any lease's and fails the writer check
// anyway; fence must be an integer of at most 2^53−1 in magnitude
// (ErrInvalidEntry). Other fields are skipped, so a Lease's JSON reads as
// its Writer.
func (r *JSONReader) Writer(path string) (Writer, bool, error) {
	var w Writer
	if r.err != nil {
		return w, false, r.err
	}
	if r.dec.PeekKind() == 'n' {
		return w, false, r.Skip()
	}
	p := jsonPath{base: path}
	var v [3]jsonValue
	start := r.dec.InputOffset()
	if err := r.fields(p, writerFields, v[:], nil); err != nil {
		return w, false, err
	}
	thread, token, fence := v[0], v[1], v[2]
	a := arena{b: r.ar.b[:0]}
	t, err := a.required(thread, p, "threadId", ErrInvalidID)
	r.ar.b = a.b
	if err != nil {
		return w, false, err
	}
	if token.isNull() || token.b[0] != '"' {
		return w, false, fieldErr(ErrInvalidEntry, p, "ownerToken", max(token.off, start), "must be a string")
	}
	if w.Fence, err = parseInt(fence, p, "fence", -MaxSize); err != nil {
		return w, false, err
	}
	if body := token.b[1 : len(token.b)-1]; bytes.IndexByte(body, '\\') < 0 && utf8.Valid(body) {
		a.b = append(a.b, body...)
	} else {
		a.b, _ = jsontext.AppendUnquote(a.b, token.b) // ill-formed Unicode as U+FFFD
	}
	r.ar.b = a.b
	s := string(a.b)
	w.ThreadID, w.OwnerToken = s[t.off:t.end], s[t.end:]
	return w, true, nil
}

// InstanceRecord reads an instance record; null is nil. key, provider,
// providerSandboxId, threadId and updatedAt are required; the key is an id
// (ErrInvalidID), the others fail with ErrInvalidEntry.
func (r *JSONReader) InstanceRecord(path string) (*InstanceRecord, error) {
	p := jsonPath{base: path}
	if r.err != nil {
		return nil, r.err
	}
	if r.dec.PeekKind() == 'n' {
		return nil, r.Skip()
	}
	var v [7]jsonValue
	if err := r.fields(p, instanceFields, v[:], nil); err != nil {
		return nil, err
	}
	var a arena
	var sp [6]span
	var err error
	if sp[0], err = a.required(v[0], p, "key", ErrInvalidID); err != nil {
		return nil, err
	}
	for i := 1; i < 6; i++ {
		if i >= 4 { // latestSnapshotId and latestRunId are optional
			sp[i], _, err = a.str(v[i], p, instanceFields[i], ErrInvalidEntry)
		} else {
			sp[i], err = a.required(v[i], p, instanceFields[i], ErrInvalidEntry)
		}
		if err != nil {
			return nil, err
		}
	}
	rec := new(InstanceRecord)
	if rec.UpdatedAt, err = parseInt(v[6], p, "updatedAt", math.MinInt64); err != nil {
		return nil, err
	}
	s := string(a.b)
	cut := func(x span) string { return s[x.off:x.end] }
	rec.Key, rec.Provider, rec.ProviderSandboxID, rec.ThreadID = cut(sp[0]), cut(sp[1]), cut(sp[2]), cut(sp[3])
	rec.LatestSnapshotID, rec.LatestRunID = cut(sp[4]), cut(sp[5])
	return rec, nil
}

// unmarshal decodes b, one JSON value and nothing else, with read, and
// hands the value to set; it is every UnmarshalJSON method, which so
// leaves its receiver as it was on failure. A value that is not an
// object, null included, fails with ErrInvalidEntry.
func unmarshal[T any](b []byte, what string, read func(r *JSONReader) (T, error), set func(T)) error {
	r := NewJSONReader(b)
	defer r.Close()
	if r.dec.PeekKind() != '{' {
		if err := r.Skip(); err != nil {
			return err
		}
		return invalid("%s is not a JSON object", what)
	}
	v, err := read(r)
	if err == nil {
		err = r.End()
	}
	if r.err != nil {
		return r.err
	}
	if err == nil {
		set(v)
	}
	return err
}

// UnmarshalJSON decodes a checkpoint (see JSONReader.Checkpoint). On
// failure cp is left as it was.
func (cp *Checkpoint) UnmarshalJSON(b []byte) error {
	return unmarshal(b, "checkpoint", func(r *JSONReader) (*Checkpoint, error) { return r.Checkpoint("") },
		func(v *Checkpoint) { *cp = *v })
}

// UnmarshalJSON decodes an entry, rejecting a directory with a blobKey or
// size and a file without them.
func (e *Entry) UnmarshalJSON(b []byte) error {
	return unmarshal(b, "entry", func(r *JSONReader) (Entry, error) {
		var a arena
		x, err := r.entry(&a, jsonPath{})
		return a.entry(x, string(a.b)), err
	}, func(v Entry) { *e = v })
}

// UnmarshalJSON decodes an artifact; every field is required.
func (x *Artifact) UnmarshalJSON(b []byte) error {
	return unmarshal(b, "artifact", func(r *JSONReader) (Artifact, error) {
		var a arena
		s, err := r.artifact(&a, jsonPath{})
		return a.artifact(s, string(a.b)), err
	}, func(v Artifact) { *x = v })
}

// UnmarshalJSON decodes an instance record (see JSONReader.InstanceRecord).
func (rec *InstanceRecord) UnmarshalJSON(b []byte) error {
	return unmarshal(b, "instance record", func(r *JSONReader) (*InstanceRecord, error) { return r.InstanceRecord("") },
		func(v *InstanceRecord) { *rec = *v })
}

// UnmarshalJSON decodes a writer (see JSONReader.Writer).
func (w *Writer) UnmarshalJSON(b []byte) error {
	return unmarshal(b, "writer", func(r *JSONReader) (Writer, error) {
		v, _, err := r.Writer("")
		return v, err
	}, func(v Writer) { *w = v })
}

// ---- writing ----

// AppendJSON appends cp's JSON: an empty conversation, files or artifacts
// as [], the conversation as its bytes. It writes the conversation as it
// is, so cp must have passed Validate, as every stored checkpoint has;
// MarshalJSON checks it. A non-finite createdAt fails (ErrInvalidEntry),
// as it has no JSON form.
func (cp *Checkpoint) AppendJSON(b []byte) ([]byte, error) {
	if !finite(cp.CreatedAt) {
		return b, invalid("createdAt %v has no JSON form", cp.CreatedAt)
	}
	b = append(b, `{"id":`...)
	b = AppendJSONString(b, cp.ID)
	b = append(b, `,"threadId":`...)
	b = AppendJSONString(b, cp.ThreadID)
	b = append(b, `,"parentCheckpointId":`...)
	if cp.ParentCheckpointID == "" {
		b = append(b, "null"...)
	} else {
		b = AppendJSONString(b, cp.ParentCheckpointID)
	}
	b = append(b, `,"createdAt":`...)
	b = appendFloat(b, cp.CreatedAt)
	b = append(b, `,"reason":`...)
	b = AppendJSONString(b, string(cp.Reason))
	if cp.Label != "" {
		b = append(b, `,"label":`...)
		b = AppendJSONString(b, cp.Label)
	}
	if cp.SourceRunID != "" {
		b = append(b, `,"sourceRunId":`...)
		b = AppendJSONString(b, cp.SourceRunID)
	}
	b = append(b, `,"files":[`...)
	for i := range cp.Files {
		if i > 0 {
			b = append(b, ',')
		}
		b = cp.Files[i].appendJSON(b)
	}
	b = append(b, `],"conversation":`...)
	if len(cp.Conversation) == 0 {
		b = append(b, "[]"...)
	} else {
		b = append(b, cp.Conversation...)
	}
	b = append(b, `,"artifacts":[`...)
	for i := range cp.Artifacts {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = cp.Artifacts[i].appendJSON(b); err != nil {
			return b, err
		}
	}
	return append(b, "]}"...), nil
}

// MarshalJSON encodes cp (see AppendJSON), failing with ErrInvalidEntry
// when its conversation is not a JSON array. Only a direct call keeps the
// exact bytes: json.Marshal and json.Encoder compact the output of every
// MarshalJSON method, which drops the conversation's whitespace, and
// json.Marshal also escapes <, > and & (the same JSON value, other bytes).
// A store that persists checkpoints as JSON calls cp.MarshalJSON().
func (cp Checkpoint) MarshalJSON() ([]byte, error) {
	if err := validateConversation(cp.Conversation); err != nil {
		return nil, err
	}
	return cp.AppendJSON(make([]byte, 0, 256+len(cp.Conversation)+64*len(cp.Files)))
}

func (e *Entry) appendJSON(b []byte) []byte {
	b = append(b, `{"path":`...)
	b = AppendJSONString(b, e.Path)
	b = append(b, `,"kind":`...)
	b = AppendJSONString(b, string(e.Kind))
	if e.Kind != KindDir {
		b = append(b, `,"blobKey":`...)
		b = AppendJSONString(b, e.BlobKey)
		b = append(b, `,"size":`...)
		b = strconv.AppendInt(b, e.Size, 10)
	}
	return append(b, '}')
}

// MarshalJSON encodes e; a directory has no blobKey or size.
func (e Entry) MarshalJSON() ([]byte, error) { return e.appendJSON(nil), nil }

func (a *Artifact) appendJSON(b []byte) ([]byte, error) {
	if !finite(a.CreatedAt) {
		return b, invalid("artifact createdAt %v has no JSON form", a.CreatedAt)
	}
	b = append(b, `{"artifactId":`...)
	b = AppendJSONString(b, a.ArtifactID)
	b = append(b, `,"name":`...)
	b = AppendJSONString(b, a.Name)
	b = append(b, `,"mimeType":`...)
	b = AppendJSONString(b, a.MimeType)
	b = append(b, `,"size":`...)
	b = strconv.AppendInt(b, a.Size, 10)
	b = append(b, `,"blobKey":`...)
	b = AppendJSONString(b, a.BlobKey)
	b = append(b, `,"createdAt":`...)
	b = appendFloat(b, a.CreatedAt)
	return append(b, '}'), nil
}

// MarshalJSON encodes a.
func (a Artifact) MarshalJSON() ([]byte, error) { return a.appendJSON(nil) }

// MarshalJSON encodes r; absent optional fields are left out.
func (r InstanceRecord) MarshalJSON() ([]byte, error) {
	b := append([]byte(nil), `{"key":`...)
	b = AppendJSONString(b, r.Key)
	b = append(b, `,"provider":`...)
	b = AppendJSONString(b, r.Provider)
	b = append(b, `,"providerSandboxId":`...)
	b = AppendJSONString(b, r.ProviderSandboxID)
	b = append(b, `,"threadId":`...)
	b = AppendJSONString(b, r.ThreadID)
	if r.LatestSnapshotID != "" {
		b = append(b, `,"latestSnapshotId":`...)
		b = AppendJSONString(b, r.LatestSnapshotID)
	}
	if r.LatestRunID != "" {
		b = append(b, `,"latestRunId":`...)
		b = AppendJSONString(b, r.LatestRunID)
	}
	b = append(b, `,"updatedAt":`...)
	b = strconv.AppendInt(b, r.UpdatedAt, 10)
	return append(b, '}'), nil
}

// AppendJSON appends w as {"threadId","ownerToken","fence"}.
func (w Writer) AppendJSON(b []byte) []byte {
	b = append(b, `{"threadId":`...)
	b = AppendJSONString(b, w.ThreadID)
	b = append(b, `,"ownerToken":`...)
	b = AppendJSONString(b, w.OwnerToken)
	b = append(b, `,"fence":`...)
	b = strconv.AppendInt(b, w.Fence, 10)
	return append(b, '}')
}

// MarshalJSON encodes w (see AppendJSON).
func (w Writer) MarshalJSON() ([]byte, error) { return w.AppendJSON(nil), nil }

// AppendJSONString appends s as a JSON string as encoding/json writes it
// without HTML escaping: '"', '\\' and control characters escaped (\b \f
// \n \r \t by name), U+2028 and U+2029 escaped, and invalid UTF-8 written
// as U+FFFD.
func AppendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&15])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// AppendJSONNumber appends f as encoding/json writes a float64 (the
// formatting of JavaScript's Number#toString: exponent form below 1e-6 and
// from 1e21, "e-7" not "e-07"). NaN and the infinities have no JSON form
// and fail with ErrInvalidEntry.
func AppendJSONNumber(b []byte, f float64) ([]byte, error) {
	if !finite(f) {
		return b, invalid("%v has no JSON form", f)
	}
	return appendFloat(b, f), nil
}

// appendFloat is AppendJSONNumber of a finite f.
func appendFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
