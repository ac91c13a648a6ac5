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

// appendObject appends r, an object whose members members writes, or null
// for a nil r.
func appendObject[T any](b []byte, r *T, members func(w *jw, r *T)) []byte {
	if r == nil {
		return append(b, "null"...)
	}
	w := jw{b: b}
	w.open()
	members(&w, r)
	w.close()
	return w.b
}

func appendRun(b []byte, r *persist.RunRecord) []byte {
	return appendObject(b, r, func(w *jw, r *persist.RunRecord) {
		w.str("runId", r.RunID)
		w.str("threadId", r.ThreadID)
		w.str("status", string(r.Status))
		w.int("startedAt", r.StartedAt)
		w.optInt("finishedAt", r.FinishedAt)
		w.runError("error", r.Error)
		w.optRaw("usage", r.Usage)
		w.optStr("sandboxKey", r.SandboxKey)
		w.optInt("detachedSince", r.DetachedSince)
		if r.CancelRequested != nil {
			w.bool("cancelRequested", *r.CancelRequested)
		}
		w.optInt("driverEpoch", r.DriverEpoch)
	})
}

func appendGenerationRun(b []byte, r *persist.GenerationRunRecord) []byte {
	return appendObject(b, r, func(w *jw, r *persist.GenerationRunRecord) {
		w.str("runId", r.RunID)
		w.str("threadId", r.ThreadID)
		w.str("activity", r.Activity)
		w.str("provider", r.Provider)
		w.str("model", r.Model)
		w.str("status", string(r.Status))
		w.int("startedAt", r.StartedAt)
		w.optInt("finishedAt", r.FinishedAt)
		w.runError("error", r.Error)
		w.optRaw("result", r.Result)
		w.optRaw("artifacts", r.Artifacts)
		w.optRaw("usage", r.Usage)
	})
}

func appendInterrupt(b []byte, r *persist.InterruptRecord) []byte {
	return appendObject(b, r, func(w *jw, r *persist.InterruptRecord) {
		w.str("interruptId", r.InterruptID)
		w.str("runId", r.RunID)
		w.str("threadId", r.ThreadID)
		w.str("status", string(r.Status))
		w.int("requestedAt", r.RequestedAt)
		w.optInt("resolvedAt", r.ResolvedAt)
		if r.Payload == nil { // required; never absent in a stored record
			w.raw("payload", []byte("null"))
		} else {
			w.raw("payload", r.Payload)
		}
		w.optRaw("response", r.Response)
	})
}

func appendArtifact(b []byte, r *persist.ArtifactRecord) []byte {
	return appendObject(b, r, func(w *jw, r *persist.ArtifactRecord) {
		w.str("artifactId", r.ArtifactID)
		w.str("runId", r.RunID)
		w.str("threadId", r.ThreadID)
		w.optStr("blobKey", r.BlobKey)
		w.str("name", r.Name)
		w.str("mimeType", r.MimeType)
		w.int("size", r.Size)
		w.optStr("sourceUrl", r.SourceURL)
		w.int("createdAt", r.CreatedAt)
	})
}

func appendBlobRecord(b []byte, r *persist.BlobRecord) []byte {
	return appendObject(b, r, func(w *jw, r *persist.BlobRecord) {
		w.str("key", r.Key)
		w.int("size", r.Size)
		w.str("etag", r.ETag)
		w.optStr("contentType", r.ContentType)
		if r.CustomMetadata != nil {
			w.name("customMetadata")
			w.b = appendStringMap(w.b, r.CustomMetadata)
		}
		w.int("createdAt", r.CreatedAt)
		w.int("updatedAt", r.UpdatedAt)
	})
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
	return fmt.Errorf("%w: %s has no member %q", pdriver.ErrInvalidEntry, path, name)
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

func readRun(x *rd, name []byte, r *persist.RunRecord) error {
	switch string(name) {
	case "runId":
		x.id(&r.RunID, "/runId")
	case "threadId":
		x.id(&r.ThreadID, "/threadId")
	case "status":
		var s string
		x.text(&s, "/status")
		r.Status = persist.RunStatus(s)
	case "startedAt":
		x.int(&r.StartedAt, "/startedAt")
	case "finishedAt":
		x.optInt(&r.FinishedAt, "/finishedAt")
	case "error":
		x.runError(&r.Error, "/error")
	case "usage":
		x.raw(&r.Usage)
	case "sandboxKey":
		x.optText(&r.SandboxKey, "/sandboxKey")
	case "detachedSince":
		x.optInt(&r.DetachedSince, "/detachedSince")
	case "cancelRequested":
		x.optBool(&r.CancelRequested, "/cancelRequested")
	case "driverEpoch":
		x.optInt(&r.DriverEpoch, "/driverEpoch")
	default:
		return unknown("run", name)
	}
	return nil
}

func readGenerationRun(x *rd, name []byte, r *persist.GenerationRunRecord) error {
	switch string(name) {
	case "runId":
		x.id(&r.RunID, "/runId")
	case "threadId":
		x.id(&r.ThreadID, "/threadId")
	case "activity":
		x.text(&r.Activity, "/activity")
	case "provider":
		x.text(&r.Provider, "/provider")
	case "model":
		x.text(&r.Model, "/model")
	case "status":
		var s string
		x.text(&s, "/status")
		r.Status = persist.RunStatus(s)
	case "startedAt":
		x.int(&r.StartedAt, "/startedAt")
	case "finishedAt":
		x.optInt(&r.FinishedAt, "/finishedAt")
	case "error":
		x.runError(&r.Error, "/error")
	case "result":
		x.raw(&r.Result)
	case "artifacts":
		x.raw(&r.Artifacts)
	case "usage":
		x.raw(&r.Usage)
	default:
		return unknown("generation run", name)
	}
	return nil
}

func readInterrupt(x *rd, name []byte, r *persist.InterruptRecord) error {
	switch string(name) {
	case "interruptId":
		x.id(&r.InterruptID, "/interruptId")
	case "runId":
		x.id(&r.RunID, "/runId")
	case "threadId":
		x.id(&r.ThreadID, "/threadId")
	case "status":
		var s string
		x.text(&s, "/status")
		r.Status = persist.InterruptStatus(s)
	case "requestedAt":
		x.int(&r.RequestedAt, "/requestedAt")
	case "resolvedAt":
		x.optInt(&r.ResolvedAt, "/resolvedAt")
	case "payload":
		x.raw(&r.Payload)
	case "response":
		x.rawOrNull(&r.Response)
	default:
		return unknown("interrupt", name)
	}
	return nil
}

// readNewInterrupt reads the record of interrupts/create: an interrupt
// without status and resolvedAt.
func readNewInterrupt(x *rd, name []byte, r *persist.NewInterrupt) error {
	switch string(name) {
	case "interruptId":
		x.id(&r.InterruptID, "/record/interruptId")
	case "runId":
		x.id(&r.RunID, "/record/runId")
	case "threadId":
		x.id(&r.ThreadID, "/record/threadId")
	case "requestedAt":
		x.int(&r.RequestedAt, "/record/requestedAt")
	case "payload":
		x.raw(&r.Payload)
	case "response":
		x.rawOrNull(&r.Response)
	default:
		return unknown("record", name)
	}
	return nil
}

func appendCommitEntry(b []byte, e persist.InterruptCommitEntry) []byte {
	w := jw{b: b}
	w.open()
	w.str("interruptId", e.InterruptID)
	w.str("status", string(e.Status))
	w.optRaw("response", e.Response)
	w.close()
	return w.b
}

func readCommitEntry(x *rd, name []byte, e *persist.InterruptCommitEntry) error {
	switch string(name) {
	case "interruptId":
		x.id(&e.InterruptID, "/entries/interruptId")
	case "status":
		var s string
		x.text(&s, "/entries/status")
		e.Status = persist.InterruptStatus(s)
	case "response":
		x.rawOrNull(&e.Response)
	default:
		return unknown("entry", name)
	}
	return nil
}

func readArtifact(x *rd, name []byte, r *persist.ArtifactRecord) error {
	switch string(name) {
	case "artifactId":
		x.id(&r.ArtifactID, "/artifactId")
	case "runId":
		x.id(&r.RunID, "/runId")
	case "threadId":
		x.id(&r.ThreadID, "/threadId")
	case "blobKey":
		x.optID(&r.BlobKey, "/blobKey")
	case "name":
		x.text(&r.Name, "/name")
	case "mimeType":
		x.text(&r.MimeType, "/mimeType")
	case "size":
		x.int(&r.Size, "/size")
	case "sourceUrl":
		x.optText(&r.SourceURL, "/sourceUrl")
	case "createdAt":
		x.int(&r.CreatedAt, "/createdAt")
	default:
		return unknown("artifact", name)
	}
	return nil
}

func readBlobRecord(x *rd, name []byte, r *persist.BlobRecord) error {
	switch string(name) {
	case "key":
		x.id(&r.Key, "/key")
	case "size":
		x.int(&r.Size, "/size")
	case "etag":
		x.text(&r.ETag, "/etag")
	case "contentType":
		x.optText(&r.ContentType, "/contentType")
	case "customMetadata":
		x.stringMap(&r.CustomMetadata, "/customMetadata")
	case "createdAt":
		x.int(&r.CreatedAt, "/createdAt")
	case "updatedAt":
		x.int(&r.UpdatedAt, "/updatedAt")
	default:
		return unknown("blob", name)
	}
	return nil
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
