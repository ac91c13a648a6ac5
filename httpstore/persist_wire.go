package httpstore

// The persistence routes' JSON, shared by the handler and the client: one
// appender and one reader per record and input of package persist, in
// TanStack's shapes. Both sides go through the codec's own reader
// (driver.JSONReader) rather than a struct decoder, because JSON values the
// store never interprets (usage, payload, response, metadata values, …) are
// kept byte for byte with their whitespace, which no struct decoder keeps,
// and because an id that is not well-formed Unicode must fail as
// PERSIST_INVALID_ID and any other string as PERSIST_INVALID_ENTRY, field by
// field. Invariant: every error a reader returns wraps a persist sentinel.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	ckptdriver "github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/persist"
	pdriver "github.com/ckptstore/ckptstore/persist/driver"
)

// ---- writing ----

// jw appends JSON object members to b.
type jw struct {
	b []byte
	n int // members written in the current object
}

func (w *jw) open()  { w.b = append(w.b, '{'); w.n = 0 }
func (w *jw) close() { w.b = append(w.b, '}'); w.n = 1 }

func (w *jw) name(n string) {
	if w.n > 0 {
		w.b = append(w.b, ',')
	}
	w.n++
	w.b = append(w.b, '"')
	w.b = append(w.b, n...)
	w.b = append(w.b, '"', ':')
}

func (w *jw) str(n, v string)        { w.name(n); w.b = ckptdriver.AppendJSONString(w.b, v) }
func (w *jw) int(n string, v int64)  { w.name(n); w.b = strconv.AppendInt(w.b, v, 10) }
func (w *jw) bool(n string, v bool)  { w.name(n); w.b = strconv.AppendBool(w.b, v) }
func (w *jw) raw(n string, v []byte) { w.name(n); w.b = append(w.b, v...) }

func (w *jw) optStr(n string, v *string) {
	if v != nil {
		w.str(n, *v)
	}
}

func (w *jw) optInt(n string, v *int64) {
	if v != nil {
		w.int(n, *v)
	}
}

func (w *jw) optRaw(n string, v json.RawMessage) {
	if v != nil {
		w.raw(n, v)
	}
}

func (w *jw) runError(n string, e *pdriver.RunError) {
	if e == nil {
		return
	}
	w.name(n)
	w.open()
	w.str("message", e.Message)
	w.optStr("code", e.Code)
	w.close()
}

func appendStringMap(b []byte, m map[string]string) []byte {
	w := jw{b: b}
	w.open()
	for k, v := range m {
		w.name("")
		w.b = w.b[:len(w.b)-3] // drop the empty name: the key is escaped below
		w.b = ckptdriver.AppendJSONString(w.b, k)
		w.b = append(w.b, ':')
		w.b = ckptdriver.AppendJSONString(w.b, v)
	}
	w.close()
	return w.b
}

func appendList[T any](b []byte, recs []T, one func([]byte, T) []byte) []byte {
	b = append(b, '[')
	for i, r := range recs {
		if i > 0 {
			b = append(b, ',')
		}
		b = one(b, r)
	}
	return append(b, ']')
}

// ---- reading ----

// entry makes err, a reader's fault that wraps no persist sentinel (a
// number or boolean of the wrong shape), wrap ErrInvalidEntry.
func entry(err error) error {
	if err == nil || pdriver.Code(err) != "" {
		return err
	}
	return fmt.Errorf("%w: %v", pdriver.ErrInvalidEntry, err)
}

// fields collects the faults of one object's fields: the first fault of an
// id, else the first fault, is the object's (ids are checked first).
type fields struct{ id, other error }

func (f *fields) add(err error) {
	if err == nil {
		return
	}
	err = entry(err)
	if pdriver.Code(err) == pdriver.CodeInvalidID {
		if f.id == nil {
			f.id = err
		}
	} else if f.other == nil {
		f.other = err
	}
}

func (f *fields) err() error {
	if f.id != nil {
		return f.id
	}
	return f.other
}

// rd reads typed fields off a JSONReader into a fields.
type rd struct {
	r *ckptdriver.JSONReader
	f fields
}

func (x *rd) id(dst *string, path string) {
	v, _, err := x.r.String(path, pdriver.ErrInvalidID)
	*dst = v
	x.f.add(err)
}

func (x *rd) text(dst *string, path string) {
	v, _, err := x.r.String(path, pdriver.ErrInvalidEntry)
	*dst = v
	x.f.add(err)
}

func (x *rd) optID(dst **string, path string) {
	v, ok, err := x.r.String(path, pdriver.ErrInvalidID)
	if ok {
		*dst = &v
	}
	x.f.add(err)
}

func (x *rd) optText(dst **string, path string) {
	v, ok, err := x.r.String(path, pdriver.ErrInvalidEntry)
	if ok {
		*dst = &v
	}
	x.f.add(err)
}

func (x *rd) int(dst *int64, path string) {
	v, _, err := x.r.Int(path)
	*dst = v
	x.f.add(err)
}

func (x *rd) optInt(dst **int64, path string) {
	v, ok, err := x.r.Int(path)
	if ok {
		*dst = &v
	}
	x.f.add(err)
}

// raw reads a JSON value with its whitespace; null is absent.
func (x *rd) raw(dst *json.RawMessage) {
	v, ok, err := x.r.Padded()
	if ok {
		*dst = v
	}
	x.f.add(err)
}

// rawOrNull reads a JSON value with its whitespace; a null present is the
// JSON value null (a response, a metadata value).
func (x *rd) rawOrNull(dst *json.RawMessage) {
	v, ok, err := x.r.Padded()
	if ok {
		*dst = v
	} else if err == nil {
		*dst = json.RawMessage("null")
	}
	x.f.add(err)
}

func (x *rd) optBool(dst **bool, path string) {
	v, ok, err := x.r.Padded()
	if err != nil || !ok {
		x.f.add(err)
		return
	}
	switch string(bytes.TrimSpace(v)) {
	case "true":
		b := true
		*dst = &b
	case "false":
		b := false
		*dst = &b
	default:
		x.f.add(fmt.Errorf("%w: %s must be a boolean", pdriver.ErrInvalidEntry, path))
	}
}

func (x *rd) runError(dst **pdriver.RunError, path string) {
	v, ok, err := x.r.Padded()
	if err != nil || !ok {
		x.f.add(err)
		return
	}
	e := &pdriver.RunError{}
	x.f.add(readWhole(v, func(y *rd, name []byte) error {
		switch string(name) {
		case "message":
			y.text(&e.Message, path+"/message")
		case "code":
			y.optText(&e.Code, path+"/code")
		default:
			return unknown(path, name)
		}
		return nil
	}))
	*dst = e
}

// unknown is the fault of a member no shape has.
func unknown(path string, name []byte) error {
	return fmt.Errorf("%w: %s has no member %s", pdriver.ErrInvalidEntry, path, ckptdriver.QuoteShort(string(name)))
}

// readWhole reads b, one JSON object, field by field.
func readWhole(b []byte, field func(x *rd, name []byte) error) error {
	r := ckptdriver.NewJSONReader(b)
	defer r.Close()
	x := &rd{r: r}
	err := r.Object("", func(name []byte) error {
		if err := field(x, name); err != nil {
			x.f.add(err)
			return r.Skip()
		}
		return nil
	})
	if err == nil {
		err = r.End()
	}
	if err := x.f.err(); err != nil {
		return err
	}
	return entry(err)
}

// nullable reads a record field that may be null.
func nullable[T any](x *rd, read func(x *rd, name []byte, rec *T) error) *T {
	v, ok, err := x.r.Padded()
	if err != nil || !ok {
		x.f.add(err)
		return nil
	}
	rec := new(T)
	x.f.add(readWhole(v, func(y *rd, name []byte) error { return read(y, name, rec) }))
	return rec
}

// list reads an array of records (none null).
func list[T any](x *rd, path string, read func(x *rd, name []byte, rec *T) error) []*T {
	out := []*T{}
	_, err := x.r.Array(path, func(i int) error {
		rec := new(T)
		p := path + "/" + strconv.Itoa(i)
		err := x.r.Object(p, func(name []byte) error {
			if err := read(x, name, rec); err != nil {
				x.f.add(err)
				return x.r.Skip()
			}
			return nil
		})
		x.f.add(err)
		out = append(out, rec)
		return nil
	})
	x.f.add(err)
	return out
}

// ---- the records: one member table each ----

// wire is the JSON shape of one record type T, written and read by one
// table so that the two sides cannot disagree on a member: members in the
// order they are written; what names T in the fault of an unknown member.
type wire[T any] struct {
	what    string
	members []member[T]
}

// newWire is the wire of members, whose paths are prefix, the JSON pointer
// of the object, and the name: made once here, not on every read.
func newWire[T any](what, prefix string, members []member[T]) *wire[T] {
	for i := range members {
		members[i].path = prefix + members[i].name
	}
	return &wire[T]{what, members}
}

// member is one JSON member of a T: put appends it (or nothing when it is
// absent), get reads it at path. put takes and returns the jw by value:
// a pointer passed to a func value escapes, which would cost an
// allocation per record written.
type member[T any] struct {
	name, path string
	put        func(w jw, name string, r *T) jw
	get        func(x *rd, path string, r *T)
}

// append appends r, or null for a nil r.
func (s *wire[T]) append(b []byte, r *T) []byte {
	if r == nil {
		return append(b, "null"...)
	}
	w := jw{b: b}
	w.open()
	for _, m := range s.members {
		w = m.put(w, m.name, r)
	}
	w.close()
	return w.b
}

// read reads the member name into r; a reader of one member for
// nullable, list, startOf and recordOf.
func (s *wire[T]) read(x *rd, name []byte, r *T) error {
	for _, m := range s.members {
		if m.name == string(name) {
			m.get(x, m.path, r)
			return nil
		}
	}
	return unknown(s.what, name)
}

// at is a member that put writes and get reads at a field of a T, the
// one f points to; put and get are mostly jw's and rd's own methods.
func at[T, V any](name string, f func(*T) *V, put func(jw, string, V) jw, get func(*rd, *V, string)) member[T] {
	return member[T]{name: name, put: func(w jw, n string, r *T) jw { return put(w, n, *f(r)) }, get: func(x *rd, p string, r *T) { get(x, f(r), p) }}
}

// The writers of the tables: jw's methods, by value (see member).

func putStr(w jw, n, v string) jw                    { w.str(n, v); return w }
func putInt(w jw, n string, v int64) jw              { w.int(n, v); return w }
func putOptStr(w jw, n string, v *string) jw         { w.optStr(n, v); return w }
func putOptInt(w jw, n string, v *int64) jw          { w.optInt(n, v); return w }
func putOptRaw(w jw, n string, v json.RawMessage) jw { w.optRaw(n, v); return w }

func putRunError(w jw, n string, v *pdriver.RunError) jw { w.runError(n, v); return w }

// putStatus and getStatus write and read a status: any string on the
// wire, checked by the store.
func putStatus[S ~string](w jw, n string, v S) jw { w.str(n, string(v)); return w }

func getStatus[S ~string](x *rd, v *S, p string) {
	var s string
	x.text(&s, p)
	*v = S(s)
}

func putOptBool(w jw, n string, v *bool) jw {
	if v != nil {
		w.bool(n, *v)
	}
	return w
}

// getRaw and getRawOrNull are rd.raw and rd.rawOrNull, which need no path.
func getRaw(x *rd, v *json.RawMessage, _ string)       { x.raw(v) }
func getRawOrNull(x *rd, v *json.RawMessage, _ string) { x.rawOrNull(v) }

type (
	runRec   = persist.RunRecord
	genRec   = persist.GenerationRunRecord
	intRec   = persist.InterruptRecord
	newInt   = persist.NewInterrupt
	entryRec = persist.InterruptCommitEntry
	artRec   = persist.ArtifactRecord
	blobRec  = persist.BlobRecord
)

var runWire = newWire("run", "/", []member[runRec]{
	at("runId", func(r *runRec) *string { return &r.RunID }, putStr, (*rd).id),
	at("threadId", func(r *runRec) *string { return &r.ThreadID }, putStr, (*rd).id),
	at("status", func(r *runRec) *persist.RunStatus { return &r.Status }, putStatus[persist.RunStatus], getStatus[persist.RunStatus]),
	at("startedAt", func(r *runRec) *int64 { return &r.StartedAt }, putInt, (*rd).int),
	at("finishedAt", func(r *runRec) **int64 { return &r.FinishedAt }, putOptInt, (*rd).optInt),
	at("error", func(r *runRec) **pdriver.RunError { return &r.Error }, putRunError, (*rd).runError),
	at("usage", func(r *runRec) *json.RawMessage { return &r.Usage }, putOptRaw, getRaw),
	at("sandboxKey", func(r *runRec) **string { return &r.SandboxKey }, putOptStr, (*rd).optText),
	at("detachedSince", func(r *runRec) **int64 { return &r.DetachedSince }, putOptInt, (*rd).optInt),
	at("cancelRequested", func(r *runRec) **bool { return &r.CancelRequested }, putOptBool, (*rd).optBool),
	at("driverEpoch", func(r *runRec) **int64 { return &r.DriverEpoch }, putOptInt, (*rd).optInt),
})

var genWire = newWire("generation run", "/", []member[genRec]{
	at("runId", func(r *genRec) *string { return &r.RunID }, putStr, (*rd).id),
	at("threadId", func(r *genRec) *string { return &r.ThreadID }, putStr, (*rd).id),
	at("activity", func(r *genRec) *string { return &r.Activity }, putStr, (*rd).text),
	at("provider", func(r *genRec) *string { return &r.Provider }, putStr, (*rd).text),
	at("model", func(r *genRec) *string { return &r.Model }, putStr, (*rd).text),
	at("status", func(r *genRec) *persist.RunStatus { return &r.Status }, putStatus[persist.RunStatus], getStatus[persist.RunStatus]),
	at("startedAt", func(r *genRec) *int64 { return &r.StartedAt }, putInt, (*rd).int),
	at("finishedAt", func(r *genRec) **int64 { return &r.FinishedAt }, putOptInt, (*rd).optInt),
	at("error", func(r *genRec) **pdriver.RunError { return &r.Error }, putRunError, (*rd).runError),
	at("result", func(r *genRec) *json.RawMessage { return &r.Result }, putOptRaw, getRaw),
	at("artifacts", func(r *genRec) *json.RawMessage { return &r.Artifacts }, putOptRaw, getRaw),
	at("usage", func(r *genRec) *json.RawMessage { return &r.Usage }, putOptRaw, getRaw),
})

var intWire = newWire("interrupt", "/", []member[intRec]{
	at("interruptId", func(r *intRec) *string { return &r.InterruptID }, putStr, (*rd).id),
	at("runId", func(r *intRec) *string { return &r.RunID }, putStr, (*rd).id),
	at("threadId", func(r *intRec) *string { return &r.ThreadID }, putStr, (*rd).id),
	at("status", func(r *intRec) *persist.InterruptStatus { return &r.Status }, putStatus[persist.InterruptStatus], getStatus[persist.InterruptStatus]),
	at("requestedAt", func(r *intRec) *int64 { return &r.RequestedAt }, putInt, (*rd).int),
	at("resolvedAt", func(r *intRec) **int64 { return &r.ResolvedAt }, putOptInt, (*rd).optInt),
	{name: "payload", put: func(w jw, n string, r *intRec) jw {
		if r.Payload == nil { // required; never absent in a stored record
			w.raw(n, []byte("null"))
		} else {
			w.raw(n, r.Payload)
		}
		return w
	}, get: func(x *rd, _ string, r *intRec) { x.raw(&r.Payload) }},
	at("response", func(r *intRec) *json.RawMessage { return &r.Response }, putOptRaw, getRawOrNull),
})

// newIntWire reads the record of interrupts/create: an interrupt without
// status and resolvedAt.
var newIntWire = newWire("record", "/record/", []member[newInt]{
	at("interruptId", func(r *newInt) *string { return &r.InterruptID }, putStr, (*rd).id),
	at("runId", func(r *newInt) *string { return &r.RunID }, putStr, (*rd).id),
	at("threadId", func(r *newInt) *string { return &r.ThreadID }, putStr, (*rd).id),
	at("requestedAt", func(r *newInt) *int64 { return &r.RequestedAt }, putInt, (*rd).int),
	at("payload", func(r *newInt) *json.RawMessage { return &r.Payload }, putOptRaw, getRaw),
	at("response", func(r *newInt) *json.RawMessage { return &r.Response }, putOptRaw, getRawOrNull),
})

var entryWire = newWire("entry", "/entries/", []member[entryRec]{
	at("interruptId", func(r *entryRec) *string { return &r.InterruptID }, putStr, (*rd).id),
	at("status", func(r *entryRec) *persist.InterruptStatus { return &r.Status }, putStatus[persist.InterruptStatus], getStatus[persist.InterruptStatus]),
	at("response", func(r *entryRec) *json.RawMessage { return &r.Response }, putOptRaw, getRawOrNull),
})

var artWire = newWire("artifact", "/", []member[artRec]{
	at("artifactId", func(r *artRec) *string { return &r.ArtifactID }, putStr, (*rd).id),
	at("runId", func(r *artRec) *string { return &r.RunID }, putStr, (*rd).id),
	at("threadId", func(r *artRec) *string { return &r.ThreadID }, putStr, (*rd).id),
	at("blobKey", func(r *artRec) **string { return &r.BlobKey }, putOptStr, (*rd).optID),
	at("name", func(r *artRec) *string { return &r.Name }, putStr, (*rd).text),
	at("mimeType", func(r *artRec) *string { return &r.MimeType }, putStr, (*rd).text),
	at("size", func(r *artRec) *int64 { return &r.Size }, putInt, (*rd).int),
	at("sourceUrl", func(r *artRec) **string { return &r.SourceURL }, putOptStr, (*rd).optText),
	at("createdAt", func(r *artRec) *int64 { return &r.CreatedAt }, putInt, (*rd).int),
})

var blobWire = newWire("blob", "/", []member[blobRec]{
	at("key", func(r *blobRec) *string { return &r.Key }, putStr, (*rd).id),
	at("size", func(r *blobRec) *int64 { return &r.Size }, putInt, (*rd).int),
	at("etag", func(r *blobRec) *string { return &r.ETag }, putStr, (*rd).text),
	at("contentType", func(r *blobRec) **string { return &r.ContentType }, putOptStr, (*rd).optText),
	{name: "customMetadata", put: func(w jw, n string, r *blobRec) jw {
		if r.CustomMetadata != nil {
			w.name(n)
			w.b = appendStringMap(w.b, r.CustomMetadata)
		}
		return w
	}, get: func(x *rd, p string, r *blobRec) { x.stringMap(&r.CustomMetadata, p) }},
	at("createdAt", func(r *blobRec) *int64 { return &r.CreatedAt }, putInt, (*rd).int),
	at("updatedAt", func(r *blobRec) *int64 { return &r.UpdatedAt }, putInt, (*rd).int),
})

// The appenders and readers the routes and the client name.
var (
	appendRun           = runWire.append
	readRun             = runWire.read
	appendGenerationRun = genWire.append
	readGenerationRun   = genWire.read
	appendInterrupt     = intWire.append
	readInterrupt       = intWire.read
	readNewInterrupt    = newIntWire.read
	readCommitEntry     = entryWire.read
	appendArtifact      = artWire.append
	readArtifact        = artWire.read
	appendBlobRecord    = blobWire.append
	readBlobRecord      = blobWire.read
)

func appendCommitEntry(b []byte, e persist.InterruptCommitEntry) []byte {
	return entryWire.append(b, &e)
}

func (x *rd) stringMap(dst *map[string]string, path string) {
	v, ok, err := x.r.Padded()
	if err != nil || !ok {
		x.f.add(err)
		return
	}
	m := map[string]string{}
	x.f.add(readWhole(v, func(y *rd, name []byte) error {
		var s string
		y.text(&s, path)
		m[string(name)] = s
		return nil
	}))
	*dst = m
}

// readPatch reads a patch, one member at a time with member (false: no
// such member): a member left out keeps its field, null clears it, a
// value sets it.
func readPatch(x *rd, member func(y *rd, name []byte) bool) {
	v, ok, err := x.r.Padded()
	if err != nil || !ok {
		x.f.add(err)
		if err == nil {
			x.f.add(fmt.Errorf("%w: patch is missing", pdriver.ErrInvalidEntry))
		}
		return
	}
	x.f.add(readWhole(v, func(y *rd, name []byte) error {
		if !member(y, name) {
			return unknown("patch", name)
		}
		return nil
	}))
}

// readRunPatch reads a run patch (see readPatch).
func readRunPatch(x *rd, p *persist.RunPatch) {
	readPatch(x, func(y *rd, name []byte) bool {
		switch string(name) {
		case "status":
			patchStatus(y, &p.Status)
		case "finishedAt":
			patchInt(y, &p.FinishedAt, "/patch/finishedAt")
		case "error":
			patchError(y, &p.Error)
		case "usage":
			patchRaw(y, &p.Usage)
		case "sandboxKey":
			v, ok, err := y.r.String("/patch/sandboxKey", pdriver.ErrInvalidEntry)
			y.f.add(err)
			p.SandboxKey = setOrClear(v, ok)
		case "detachedSince":
			patchInt(y, &p.DetachedSince, "/patch/detachedSince")
		case "cancelRequested":
			var b *bool
			y.optBool(&b, "/patch/cancelRequested")
			if b == nil {
				p.CancelRequested = persist.Clear[bool]()
			} else {
				p.CancelRequested = persist.Set(*b)
			}
		case "driverEpoch":
			patchInt(y, &p.DriverEpoch, "/patch/driverEpoch")
		default:
			return false
		}
		return true
	})
}

// readGenerationRunPatch reads a generation run patch (see readPatch).
func readGenerationRunPatch(x *rd, p *persist.GenerationRunPatch) {
	readPatch(x, func(y *rd, name []byte) bool {
		switch string(name) {
		case "status":
			patchStatus(y, &p.Status)
		case "finishedAt":
			patchInt(y, &p.FinishedAt, "/patch/finishedAt")
		case "error":
			patchError(y, &p.Error)
		case "result":
			patchRaw(y, &p.Result)
		case "artifacts":
			patchRaw(y, &p.Artifacts)
		case "usage":
			patchRaw(y, &p.Usage)
		default:
			return false
		}
		return true
	})
}

func setOrClear[T any](v T, ok bool) persist.Field[T] {
	if ok {
		return persist.Set(v)
	}
	return persist.Clear[T]()
}

func patchStatus(y *rd, f *persist.Field[persist.RunStatus]) {
	v, ok, err := y.r.String("/patch/status", pdriver.ErrInvalidEntry)
	y.f.add(err)
	*f = setOrClear(persist.RunStatus(v), ok)
}

func patchInt(y *rd, f *persist.Field[int64], path string) {
	v, ok, err := y.r.Int(path)
	y.f.add(err)
	*f = setOrClear(v, ok)
}

func patchError(y *rd, f *persist.Field[persist.RunError]) {
	var e *pdriver.RunError
	y.runError(&e, "/patch/error")
	if e == nil {
		*f = persist.Clear[persist.RunError]()
	} else {
		*f = persist.Set(*e)
	}
}

func patchRaw(y *rd, f *persist.Field[json.RawMessage]) {
	var v json.RawMessage
	y.raw(&v)
	*f = setOrClear(v, v != nil)
}
