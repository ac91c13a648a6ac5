package driver

// Export and import of a driver's records: what ckptctl's export, import
// and copy move between backends.
//
// Invariants:
//
//   - A Record is exactly one stored record of one store, tagged by kind;
//     its JSON (MarshalJSON) keeps every raw JSON value byte for byte, so
//     that dump → load → dump gives the same bytes.
//   - Load is idempotent by content: a record already stored with equal
//     content is skipped, so loading a batch twice changes nothing, and a
//     killed load is finished by loading again.
//   - Load never overwrites: a record stored under the same identity with
//     other content fails the call with ErrRecordConflict, like the
//     checkpoint import's refusal of a differing thread.
//   - Op-token markers (a commit batch's token, a call's resend marker)
//     and lock leases and queues are not records: they are short-lived
//     state of calls in flight and of live processes, and a copy of them
//     would either be expired on arrival or hand a lease to a holder that
//     never asked the destination for it.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"

	"github.com/ckptstore/ckptstore/contract"
	ckptdriver "github.com/ckptstore/ckptstore/driver"
)

// RecordKind names the store a Record belongs to.
type RecordKind string

// The kinds, one per store that keeps records. Locks keep none (see the
// file comment).
const (
	KindRun           RecordKind = "run"
	KindGenerationRun RecordKind = "generationRun"
	KindInterrupt     RecordKind = "interrupt"
	KindMetadata      RecordKind = "metadata"
	KindArtifact      RecordKind = "artifact"
	KindBlob          RecordKind = "blob"
)

// Kinds lists the kinds in the order Dump yields them.
var Kinds = []RecordKind{KindRun, KindGenerationRun, KindInterrupt, KindMetadata, KindArtifact, KindBlob}

// MetadataEntry is one metadata value with its two-part identity.
type MetadataEntry struct {
	Namespace string          `json:"namespace"`
	Key       string          `json:"key"`
	Value     json.RawMessage `json:"value"`
}

// Record is one stored record: exactly one of the pointers is set, the
// one Kind names. A blob record is the row with its bucket object, so
// that the object's bytes can be copied beside it.
type Record struct {
	Kind          RecordKind
	Run           *RunRecord
	GenerationRun *GenerationRunRecord
	Interrupt     *InterruptRecord
	Metadata      *MetadataEntry
	Artifact      *ArtifactRecord
	Blob          *BlobMeta
}

// CodeRecordConflict is ErrRecordConflict's wire code: the server's
// persistence import answers it (409), so that a client's Load fails as
// a driver's does.
const CodeRecordConflict = "PERSIST_RECORD_CONFLICT"

// ErrRecordConflict is Load's error for a record whose identity the store
// already holds with other content. Nothing of that Load was written.
var ErrRecordConflict = perr(CodeRecordConflict, "the store holds another record under the same identity")

// Porter is the export and import capability that every driver of this
// module implements (memstore, fdbstore and redisstore's Persistence).
type Porter interface {
	// Dump yields the records of the store after the position after (the
	// zero Position: every record), kind by kind in Kinds order, within a
	// kind in the order of the driver's resume keys (PositionOf), read in
	// pages, each page one bounded read. A resumed Dump does not reread
	// what came before after beyond one bounded page of the driver. It is
	// exact on a store nobody writes meanwhile; a record written behind a
	// position is not yielded by a Dump resumed there. An invalid after
	// fails with ErrInvalidEntry; an error ends the sequence.
	Dump(ctx context.Context, after DumpPosition) iter.Seq2[Record, error]
	// PositionOf is the position of r in this driver's dump order: a Dump
	// after it yields exactly the records Dump yields after r.
	PositionOf(r Record) DumpPosition
	// Load stores every record that the store lacks, with its indexes, and
	// returns how many it stored. A record stored already with equal
	// content is skipped (Equal); one stored with other content fails
	// the call with ErrRecordConflict before anything is written. A batch
	// too large for one transaction of the backend fails with
	// ErrInvalidEntry and changes nothing, so the caller can split it.
	// On Redis the check and the writes are one step per record, not per
	// call: a record created between them is never overwritten and is
	// reported as a conflict by the next Load.
	Load(ctx context.Context, recs []Record) (int, error)
}

// ID is the record's identity within its kind: the id, the blob key, or
// the metadata namespace and key (length-prefixed, so no two collide).
func (r Record) ID() string {
	switch r.Kind {
	case KindRun:
		return r.Run.RunID
	case KindGenerationRun:
		return r.GenerationRun.RunID
	case KindInterrupt:
		return r.Interrupt.InterruptID
	case KindMetadata:
		return fmt.Sprintf("%d:%s%s", len(r.Metadata.Namespace), r.Metadata.Namespace, r.Metadata.Key)
	case KindArtifact:
		return r.Artifact.ArtifactID
	case KindBlob:
		return r.Blob.Key
	}
	return ""
}

// Check reports a record that is not one well-formed record of its kind:
// the kind unknown, not exactly the pointer of its kind set, an empty id,
// or a raw JSON value that is not valid JSON, is nested deeper than
// contract.MaxJSONDepth or is over MaxValueBytes. Load's callers check
// records read from a stream with it. A record stored before those bounds
// may be over them: it fails Check, so it is not imported again, but it
// is still written out (MarshalJSON checks only the shape), so an export
// carries everything the store holds.
func (r Record) Check() error { return r.check(true) }

// check is Check; bounded false leaves out the raw values' checks.
func (r Record) check(bounded bool) error {
	set := 0
	for _, p := range []bool{r.Run != nil, r.GenerationRun != nil, r.Interrupt != nil, r.Metadata != nil, r.Artifact != nil, r.Blob != nil} {
		if p {
			set++
		}
	}
	var want bool
	var raws []json.RawMessage
	switch r.Kind {
	case KindRun:
		want = r.Run != nil
		if want {
			raws = []json.RawMessage{r.Run.Usage}
		}
	case KindGenerationRun:
		want = r.GenerationRun != nil
		if want {
			raws = []json.RawMessage{r.GenerationRun.Result, r.GenerationRun.Artifacts, r.GenerationRun.Usage}
		}
	case KindInterrupt:
		want = r.Interrupt != nil
		if want {
			raws = []json.RawMessage{r.Interrupt.Payload, r.Interrupt.Response}
			if len(r.Interrupt.Payload) == 0 {
				return fmt.Errorf("%w: interrupt %q has no payload", ErrInvalidEntry, r.Interrupt.InterruptID)
			}
		}
	case KindMetadata:
		want = r.Metadata != nil
		if want {
			raws = []json.RawMessage{r.Metadata.Value}
			if len(r.Metadata.Value) == 0 || r.Metadata.Namespace == "" || r.Metadata.Key == "" {
				return fmt.Errorf("%w: metadata needs a namespace, a key and a value", ErrInvalidEntry)
			}
		}
	case KindArtifact:
		want = r.Artifact != nil
	case KindBlob:
		want = r.Blob != nil
		if want && r.Blob.Object == "" {
			return fmt.Errorf("%w: blob %q names no bucket object", ErrInvalidEntry, r.Blob.Key)
		}
	default:
		return fmt.Errorf("%w: unknown record kind %q", ErrInvalidEntry, r.Kind)
	}
	if !want || set != 1 {
		return fmt.Errorf("%w: a %s record must hold exactly its %s", ErrInvalidEntry, r.Kind, r.Kind)
	}
	if err := r.checkFields(); err != nil {
		return err
	}
	if !bounded {
		return nil
	}
	for _, v := range raws {
		if len(v) > MaxValueBytes {
			return fmt.Errorf("%w: %s %q holds a value of %d bytes, more than %d (MaxValueBytes)", ErrInvalidEntry, r.Kind, r.ID(), len(v), MaxValueBytes)
		}
		if len(v) > 0 {
			if err := ckptdriver.CheckJSON(v); err != nil {
				return fmt.Errorf("%w: %s %q holds a value that is not valid JSON: %v", ErrInvalidEntry, r.Kind, r.ID(), err)
			}
		}
	}
	return nil
}

// checkFields checks the ids and statuses a record of its kind must have.
func (r Record) checkFields() error {
	var ids []string
	ok := true
	switch r.Kind {
	case KindRun:
		ids, ok = []string{r.Run.RunID, r.Run.ThreadID}, r.Run.Status.Valid()
	case KindGenerationRun:
		g := r.GenerationRun
		ids, ok = []string{g.RunID, g.ThreadID}, g.Status.Valid()
	case KindInterrupt:
		x := r.Interrupt
		ids = []string{x.InterruptID, x.RunID, x.ThreadID}
		ok = x.Status == InterruptPending || x.Status == InterruptResolved || x.Status == InterruptCancelled
	case KindMetadata:
		ids = []string{r.Metadata.Namespace, r.Metadata.Key}
	case KindArtifact:
		ids = []string{r.Artifact.ArtifactID, r.Artifact.RunID, r.Artifact.ThreadID}
	case KindBlob:
		ids = []string{r.Blob.Key}
	}
	for _, id := range ids {
		if err := contract.CheckNamedID(string(r.Kind)+" record id", id, ErrInvalidID); err != nil {
			return err // quoting at most a prefix of id
		}
	}
	if !ok {
		return fmt.Errorf("%w: %s %q has no valid status", ErrInvalidEntry, r.Kind, r.ID())
	}
	return nil
}

// Distinct is the first pass of every driver's Load: record by record, in
// order, it checks the record (Check), skips a repeat of one it has seen
// (same kind and ID) with equal content, fails a repeat with other content
// with ErrRecordConflict, and calls first with a record seen for the first
// time; the first error ends the pass.
func Distinct(recs []Record, first func(Record) error) error {
	seen := map[string]Record{}
	for _, r := range recs {
		if err := r.Check(); err != nil {
			return err
		}
		id := string(r.Kind) + "\x00" + r.ID()
		if prev, dup := seen[id]; dup {
			if !Equal(prev, r) {
				return fmt.Errorf("%w: %s %q comes twice with different content", ErrRecordConflict, r.Kind, r.ID())
			}
			continue
		}
		seen[id] = r
		if err := first(r); err != nil {
			return err
		}
	}
	return nil
}

// Equal reports whether a and b are the same record: the same kind and
// every field equal, raw JSON values byte for byte.
func Equal(a, b Record) bool {
	x, err1 := a.MarshalJSON()
	y, err2 := b.MarshalJSON()
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// MarshalJSON writes {"persist": kind, "record": …}: the record in
// TanStack's JSON shape (a blob row with its "object" last, metadata as
// {namespace, key, value}) in its stored form (AppendStored), raw JSON
// values as stored, byte for byte. encoding/json compacts what a Marshaler
// returns, so a caller that keeps the bytes calls MarshalJSON itself.
func (r Record) MarshalJSON() ([]byte, error) {
	if err := r.check(false); err != nil {
		return nil, err
	}
	b := ckptdriver.AppendJSONString(append(make([]byte, 0, 256), `{"persist":`...), string(r.Kind))
	b = append(b, `,"record":`...)
	verbatim := func(b, v []byte) []byte { return append(b, v...) }
	switch r.Kind {
	case KindRun:
		b = AppendStored(b, r.Run.Members, verbatim)
	case KindGenerationRun:
		b = AppendStored(b, r.GenerationRun.Members, verbatim)
	case KindInterrupt:
		b = AppendStored(b, r.Interrupt.Members, verbatim)
	case KindMetadata:
		b = AppendStored(b, func(fn func(string, []byte, bool)) { metaCodec.each(r.Metadata, fn) }, verbatim)
	case KindArtifact:
		b = AppendStored(b, r.Artifact.Members, verbatim)
	case KindBlob:
		b = AppendStored(b, r.Blob.Members, verbatim)
		b = append(b[:len(b)-1], `,"object":`...)
		b = append(appendHTMLSafe(b, ckptdriver.AppendJSONString(nil, r.Blob.Object)), '}')
	}
	return append(b, '}'), nil
}

// AppendStored appends the object of the members that members yields (a
// record's Members) in the form encoding/json wrote from the records'
// struct tags, which stored forms and exports keep: every typed value
// HTML-escaped (<, > and & as \u003c, \u003e, \u0026), in order, then
// every raw JSON value, in order, as rawValue appends it.
func AppendStored(b []byte, members func(func(name string, value []byte, raw bool)), rawValue func(b, v []byte) []byte) []byte {
	b = append(b, '{')
	first := len(b)
	var tail []byte // the raw members, written after the others
	members(func(name string, v []byte, raw bool) {
		if raw {
			tail = append(ckptdriver.AppendJSONString(append(tail, ','), name), ':')
			tail = rawValue(tail, v)
			return
		}
		if len(b) > first {
			b = append(b, ',')
		}
		b = append(ckptdriver.AppendJSONString(b, name), ':')
		b = appendHTMLSafe(b, v)
	})
	if len(b) == first && len(tail) > 0 {
		tail = tail[1:] // no member before the first raw one
	}
	return append(append(b, tail...), '}')
}

// TextSize is the size MaxValueBytes bounds a text by: the bytes of s
// written as a JSON string in a stored record (AppendStored: quoted,
// control characters escaped, and <, > and & as \u003c, \u003e, \u0026),
// the most room it takes in any engine's stored form or on the wire. A
// byte takes at most six.
func TextSize(s string) int {
	return len(appendHTMLSafe(nil, ckptdriver.AppendJSONString(nil, s)))
}

// appendHTMLSafe appends v, JSON written by this codec, with <, > and &
// escaped as encoding/json escapes them (only strings hold them).
func appendHTMLSafe(b, v []byte) []byte {
	const hex = "0123456789abcdef"
	for _, c := range v {
		switch c {
		case '<', '>', '&':
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
		default:
			b = append(b, c)
		}
	}
	return b
}

// UnmarshalJSON reads MarshalJSON's form (members in any order). Unknown
// members fail; raw JSON values keep their bytes. The record is then
// Checked.
func (r *Record) UnmarshalJSON(b []byte) error {
	const shape = "a persistence record must be {\"persist\": KIND, \"record\": {…}}"
	rd := ckptdriver.NewJSONReader(b)
	defer rd.Close()
	x := NewReader(rd)
	var kind string
	var rec []byte
	x.value(rd.Object("", func(name []byte) error {
		switch string(name) {
		case "persist":
			x.Text(&kind, "/persist")
		case "record":
			v, _, err := rd.PaddedView()
			rec = v
			x.value(err)
		default:
			x.value(unknown("a persistence record", name))
			return rd.Skip()
		}
		return nil
	}))
	if err := rd.End(); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrInvalidEntry, shape, fault(err, ""))
	}
	if err := x.Err(); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrInvalidEntry, shape, err)
	}
	*r = Record{Kind: RecordKind(kind)}
	if rec == nil {
		return fmt.Errorf("%w: %s: the record is missing", ErrInvalidEntry, shape)
	}
	var err error
	switch r.Kind {
	case KindRun:
		r.Run = new(RunRecord)
		err = r.Run.UnmarshalJSON(rec)
	case KindGenerationRun:
		r.GenerationRun = new(GenerationRunRecord)
		err = r.GenerationRun.UnmarshalJSON(rec)
	case KindInterrupt:
		r.Interrupt = new(InterruptRecord)
		err = r.Interrupt.UnmarshalJSON(rec)
	case KindMetadata:
		r.Metadata = new(MetadataEntry)
		err = r.Metadata.UnmarshalJSON(rec)
	case KindArtifact:
		r.Artifact = new(ArtifactRecord)
		err = r.Artifact.UnmarshalJSON(rec)
	case KindBlob:
		r.Blob = new(BlobMeta)
		err = r.Blob.UnmarshalRow(rec)
	default:
		return fmt.Errorf("%w: unknown record kind %s", ErrInvalidEntry, ckptdriver.QuoteShort(kind))
	}
	if err != nil {
		return fmt.Errorf("%w: %s record: %v", ErrInvalidEntry, r.Kind, err)
	}
	// The shape only, as MarshalJSON: an export may carry a record stored
	// before the value bounds, and Load checks the bounds (Distinct).
	return r.check(false)
}

// AppendRow appends m's row: its record's JSON with "object" last, the
// form a driver that stores rows as JSON keeps.
func (m *BlobMeta) AppendRow(b []byte) []byte {
	b = m.BlobRecord.AppendJSON(b)
	b = append(b[:len(b)-1], `,"object":`...)
	return append(ckptdriver.AppendJSONString(b, m.Object), '}')
}

// UnmarshalRow reads AppendRow's form; on failure m is left as it was.
func (m *BlobMeta) UnmarshalRow(b []byte) error {
	rd := ckptdriver.NewJSONReader(b)
	defer rd.Close()
	x := NewReader(rd)
	var v BlobMeta
	x.value(rd.Object("", func(name []byte) error {
		if string(name) == "object" {
			x.Text(&v.Object, "/object")
		} else if !v.ReadMember(x, name) {
			x.value(unknown("blob row", name))
			return rd.Skip()
		}
		return nil
	}))
	if err := rd.End(); err != nil {
		return fault(err, "")
	}
	if err := x.Err(); err != nil {
		return err
	}
	*m = v
	return nil
}
