package streams

// Export and import of a namespace's streams: what ckptctl's export,
// import and copy move between engines.
//
// Invariants:
//
//   - A dump is a sequence of Records: a stream's head (StreamRecord),
//     then its own data in order (DataRecords of at most MaxDataRecord
//     bytes), stream by stream in the order of the source's serials. A
//     stream's serial is minted when it is created and never reused, and
//     a fork is created after its source, so every source comes before
//     its forks.
//   - Positions are carried exactly: a stream's head holds its tail and
//     its fork point, its data records their start positions, and Load
//     stores each unit at the position it had. So an offset a reader got
//     before a copy names the same data after it, and its ETags (which
//     hold Created) are the same too.
//   - A fork's record holds only its own data (from its fork point on)
//     and names its source, which Load resolves by name in the
//     destination, where it shares the source's data as any fork does. A
//     source that lost its name (it expired, or was deleted and its name
//     reused, while forks still read it) is exported under a name of the
//     reserved "__ds" space (NamelessPrefix and its serial), which no
//     client can reach, and is loaded soft-deleted: its forks read it, and
//     it goes with the last of them, as in the source.
//   - Load is idempotent by content and never overwrites: a stream head
//     the destination holds with equal content (every field but Serial
//     and Accessed) is skipped, a data record whose units are stored
//     already with the same bytes is skipped, and anything else the
//     destination holds under the name is ErrImportConflict, with nothing
//     of that record written.
//   - An imported stream is written in steps (its head, then its data
//     records), each one atomic step of the engine. Between them the
//     stream is pending: it reads as open, with the data loaded so far, and
//     takes its recorded closure when its last unit is loaded. Loading the
//     same records again finishes a pending stream; so a killed import is
//     finished by importing again.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// NamelessPrefix starts the name a dump gives a stream that lost its name
// while forks still read it: NamelessPrefix and the stream's serial. The
// "__ds" space is reserved (CheckName), so no client reaches it.
const NamelessPrefix = "__ds/nameless/"

// MaxDataRecord is the most data bytes one DataRecord holds (a record
// holds at least one unit, so a larger JSON message makes a larger one).
const MaxDataRecord = 64 << 10

// maxLoadData bounds the data of one DataRecord that Load accepts: a
// JSON message is at most one append, which no engine takes over 8 MiB.
const maxLoadData = 16 << 20

// maxProducers bounds the producer states of one StreamRecord Load
// accepts, so that a forged record cannot make it hold unbounded state.
const maxProducers = 1 << 20

// ErrImportConflict: Load met a stream or data that the destination holds
// with other content under the same name. Nothing of that record was
// written.
var ErrImportConflict = &Error{Code: "STREAM_IMPORT_CONFLICT", Msg: "the destination holds another stream under the name"}

// Record is one item of a dump: exactly one of Stream and Data is set.
type Record struct {
	Stream *StreamRecord `json:"stream,omitempty"`
	Data   *DataRecord   `json:"streamData,omitempty"`
}

// ForkRecord is a fork's source, by name, and its fork point.
type ForkRecord struct {
	Source string `json:"source"`
	Pos    Pos    `json:"pos"`
}

// ProducerRecord is one producer's state on a stream.
type ProducerRecord struct {
	ID      string `json:"id"`
	Epoch   int64  `json:"epoch"`
	LastSeq int64  `json:"lastSeq"`
}

// StreamRecord is a stream's head: everything but its data.
type StreamRecord struct {
	// Name is the stream's name, or NamelessPrefix and Serial for a
	// stream that lost its name while forks still read it.
	Name string `json:"name"`
	// Serial orders the dump: the source's creation order, unique
	// within a dump. Load ignores it.
	Serial      uint64     `json:"serial"`
	ContentType string     `json:"contentType"`
	TTL         *int64     `json:"ttl,omitempty"`
	ExpiresAt   *time.Time `json:"expiresAt,omitempty"`
	// Accessed is the last read or write, from which a TTL counts.
	Accessed time.Time `json:"accessed"`
	// Created is Info.Created (part of every read's ETag).
	Created int64 `json:"created"`
	Closed  bool  `json:"closed,omitempty"`
	// Deleted: soft-deleted, kept because forks still read it.
	Deleted bool        `json:"deleted,omitempty"`
	Fork    *ForkRecord `json:"fork,omitempty"`
	// Tail is the position after the stream's last unit.
	Tail      Pos              `json:"tail"`
	LastSeq   string           `json:"lastSeq,omitempty"`
	MaxEpoch  int64            `json:"maxEpoch,omitempty"`
	ClosedBy  *Producer        `json:"closedBy,omitempty"`
	Producers []ProducerRecord `json:"producers,omitempty"`

	// Pending is set, by a driver's PortState, on a stream whose import
	// is not finished: Tail and Closed are then its target, and Pending
	// the position its data reaches so far. Never in a dump.
	Pending *Pos `json:"-"`
}

// Base is where the stream's own data starts: its fork point, or 0.
func (s *StreamRecord) Base() Pos {
	if s.Fork != nil {
		return s.Fork.Pos
	}
	return 0
}

// Config is the stream's configuration.
func (s *StreamRecord) Config() Config {
	c := Config{ContentType: s.ContentType}
	if s.TTL != nil {
		c.TTL, c.HasTTL = *s.TTL, true
	}
	if s.ExpiresAt != nil {
		c.ExpiresAt = *s.ExpiresAt
	}
	return c
}

// Writers is the stream's writer state besides its producers.
func (s *StreamRecord) Writers() Writers {
	w := Writers{LastSeq: s.LastSeq, MaxEpoch: s.MaxEpoch}
	if s.ClosedBy != nil {
		c := *s.ClosedBy
		w.ClosedBy = &c
	}
	return w
}

// SetInfo sets the record's configuration, closure, tail and fork from
// info, and its writer state from w: what every driver's PortState
// shares.
func (s *StreamRecord) SetInfo(info *Info, w *Writers) {
	s.ContentType, s.Accessed, s.Created, s.Closed, s.Tail = info.ContentType, info.Accessed.UTC(), info.Created, info.Closed, info.Tail
	s.TTL, s.ExpiresAt, s.Fork = nil, nil, nil
	if info.HasTTL {
		t := info.TTL
		s.TTL = &t
	}
	if !info.ExpiresAt.IsZero() {
		e := info.ExpiresAt.UTC()
		s.ExpiresAt = &e
	}
	if info.Fork != nil {
		s.Fork = &ForkRecord{Source: info.Fork.Source, Pos: info.Fork.Pos}
	}
	s.LastSeq, s.MaxEpoch, s.ClosedBy = w.LastSeq, w.MaxEpoch, nil
	if w.ClosedBy != nil {
		c := *w.ClosedBy
		s.ClosedBy = &c
	}
}

// DataRecord is a piece of a stream's own data, at its position.
type DataRecord struct {
	// Name and Serial are the stream's, as its StreamRecord has them.
	Name   string `json:"name"`
	Serial uint64 `json:"serial"`
	// Start is the position of the first unit.
	Start Pos `json:"start"`
	// Data holds the units: bytes, or in JSON mode the messages joined by
	// commas, Ends[i] being the end of message i in Data.
	Data []byte  `json:"data"`
	Ends []int32 `json:"ends,omitempty"`
}

// Chunk is the record's data as a chunk of a stream, JSON mode or not.
func (d *DataRecord) Chunk(json bool) Chunk {
	c := Chunk{Start: d.Start, Data: d.Data}
	if json {
		c.Ends = d.Ends
		if c.Ends == nil {
			c.Ends = []int32{}
		}
	}
	return c
}

// Position is where a dump resumes: after the head of the stream of
// Serial and its data below Data. The zero Position is the start.
type Position struct {
	Serial uint64
	Data   Pos
}

// String is the position as a cursor: "" for the start, else
// "serial.data".
func (p Position) String() string {
	if p == (Position{}) {
		return ""
	}
	return strconv.FormatUint(p.Serial, 10) + "." + strconv.FormatInt(int64(p.Data), 10)
}

// ParsePosition parses a cursor String made; anything else is
// ErrBadRequest.
func ParsePosition(s string) (Position, error) {
	if s == "" {
		return Position{}, nil
	}
	a, b, ok := strings.Cut(s, ".")
	serial, err1 := strconv.ParseUint(a, 10, 64)
	data, err2 := strconv.ParseInt(b, 10, 64)
	if !ok || err1 != nil || err2 != nil || serial == 0 || data < 0 || Pos(data) > MaxPos {
		return Position{}, errorf(ErrBadRequest, "stream dump cursor %s is not one this server wrote", quoteShort(s))
	}
	return Position{Serial: serial, Data: Pos(data)}, nil
}

// PositionOf is the position of r in its dump: a Dump after it yields
// exactly the records that followed r.
func PositionOf(r Record) Position {
	if r.Stream != nil {
		return Position{Serial: r.Stream.Serial, Data: r.Stream.Base()}
	}
	if r.Data != nil {
		c := r.Data.Chunk(r.Data.Ends != nil)
		return Position{Serial: r.Data.Serial, Data: c.End()}
	}
	return Position{}
}

// Porter is the export and import capability of a Driver: the raw
// stream states, which Dump and Load (the functions of this package) put
// together, and which every driver of this module implements.
type Porter interface {
	// PortList returns up to max stream heads whose serial is above
	// after, in serial order, soft-deleted and nameless ones included
	// (named by NamelessPrefix), expired or not, with their producers.
	// It renews no TTL. A stream whose import is pending has Pending set.
	PortList(ctx context.Context, after uint64, max int) ([]StreamRecord, error)
	// PortData returns the stream of serial's own chunks in [from, to),
	// about max bytes of them (at least one unit when there is any).
	PortData(ctx context.Context, serial uint64, from, to Pos, max int) ([]Chunk, error)
	// PortState returns the head of the stream stored under name, with its
	// serial (found false: none). It renews no TTL.
	PortState(ctx context.Context, name string) (rec StreamRecord, found bool, err error)
	// PortCreate stores rec's head in one step: as a pending stream with
	// no data when rec.Tail is past its base (open until its data is
	// loaded), else finished. A fork's source is found by name, whatever
	// its state; a missing one, or a fork point past its tail, is
	// ErrBadRequest. A name that is taken is ErrImportConflict, nothing
	// written.
	PortCreate(ctx context.Context, rec *StreamRecord) error
	// PortAppend adds c to the pending stream name in one step when c
	// starts at its data's end, and finishes the stream (its recorded
	// closure) when c reaches its target tail. Any other state is
	// ErrImportConflict, nothing written.
	PortAppend(ctx context.Context, name string, c Chunk) error
}

// dumpPage is how many stream heads Dump reads at a time.
const dumpPage = 64

// Dump yields the streams of p after the position after: each stream's
// head, then its own data in records of about MaxDataRecord bytes, in
// serial order. Every read is bounded (dumpPage heads, MaxDataRecord
// bytes of data), so a dump holds at most one page in memory. It is exact
// on a store nobody writes meanwhile; data appended to a stream after its
// head was read is not yielded (the head's tail bounds it).
func Dump(ctx context.Context, p Porter, after Position) iter.Seq2[Record, error] {
	return func(yield func(Record, error) bool) {
		cur := after.Serial
		var resume *Position
		if after.Serial != 0 {
			resume = &after
			cur = after.Serial - 1
		}
		for {
			heads, err := p.PortList(ctx, cur, dumpPage)
			if err != nil {
				yield(Record{}, err)
				return
			}
			if len(heads) == 0 {
				return
			}
			for i := range heads {
				h := &heads[i]
				if h.Serial <= cur {
					yield(Record{}, fmt.Errorf("streams: the driver listed serial %d after %d", h.Serial, cur))
					return
				}
				cur = h.Serial
				from := h.Base()
				if resume != nil && h.Serial == resume.Serial {
					from = max(from, resume.Data)
				} else if !yield(Record{Stream: h}, nil) {
					return
				}
				resume = nil
				if h.Pending != nil {
					// A pending stream's data ends where its import stopped.
					h.Tail = *h.Pending
				}
				for from < h.Tail {
					chunks, err := p.PortData(ctx, h.Serial, from, h.Tail, MaxDataRecord)
					if err != nil {
						yield(Record{}, err)
						return
					}
					if len(chunks) == 0 {
						yield(Record{}, fmt.Errorf("streams: stream %s holds no data at %d, below its tail %d", quoteShort(h.Name), from, h.Tail))
						return
					}
					for _, c := range chunks {
						if c.Start != from || c.Len() == 0 {
							yield(Record{}, fmt.Errorf("streams: stream %s: the driver returned data at %d for %d", quoteShort(h.Name), c.Start, from))
							return
						}
						d := &DataRecord{Name: h.Name, Serial: h.Serial, Start: c.Start, Data: c.Data, Ends: c.Ends}
						if !yield(Record{Data: d}, nil) {
							return
						}
						from = c.End()
					}
				}
			}
		}
	}
}

// CheckRecord reports a record that is not one well-formed record:
// not exactly one part set, a bad name, content type or producer, a tail
// below the fork point, data of the wrong shape. json tells a data
// record's mode (its stream's).
func CheckRecord(r *Record, json bool) error {
	switch {
	case (r.Stream == nil) == (r.Data == nil):
		return errorf(ErrBadRequest, "a stream dump record holds one of \"stream\" and \"streamData\"")
	case r.Stream != nil:
		return checkHead(r.Stream)
	}
	d := r.Data
	if err := checkDumpName(d.Name); err != nil {
		return err
	}
	if len(d.Data) > maxLoadData {
		return errorf(ErrBadRequest, "stream %s: a data record of %d bytes, over %d", quoteShort(d.Name), len(d.Data), maxLoadData)
	}
	c := d.Chunk(json)
	if c.Len() == 0 || d.Start < 0 || c.End() > MaxPos {
		return errorf(ErrBadRequest, "stream %s: a data record with no units, or out of range", quoteShort(d.Name))
	}
	if !json {
		if d.Ends != nil {
			return errorf(ErrBadRequest, "stream %s: message ends in the data of a stream not in JSON mode", quoteShort(d.Name))
		}
		return nil
	}
	lo := int32(0)
	for i, e := range d.Ends {
		if e < lo || int(e) > len(d.Data) || (i == len(d.Ends)-1) != (int(e) == len(d.Data)) ||
			(i < len(d.Ends)-1 && d.Data[e] != ',') || !validJSON(d.Data[lo:e]) {
			return errorf(ErrBadRequest, "stream %s: the data record at %d is not JSON messages joined by commas", quoteShort(d.Name), d.Start)
		}
		lo = e + 1
	}
	return nil
}

// validJSON reports whether m is one compact JSON value, as CheckBody
// stores messages (no line break, so a JSON read never splits one).
func validJSON(m []byte) bool {
	return json.Valid(m) && !bytes.ContainsAny(m, "\n\r")
}

func checkDumpName(name string) error {
	if rest, ok := strings.CutPrefix(name, NamelessPrefix); ok {
		if n, err := strconv.ParseUint(rest, 10, 64); err != nil || n == 0 || strconv.FormatUint(n, 10) != rest {
			return errorf(ErrBadRequest, "stream name %s: a nameless stream is %s and its serial", quoteShort(name), NamelessPrefix)
		}
		return nil
	}
	return CheckName(name)
}

func checkHead(s *StreamRecord) error {
	if err := checkDumpName(s.Name); err != nil {
		return err
	}
	if s.ContentType == "" || len(s.ContentType) > 256 || !utf8.ValidString(s.ContentType) {
		return errorf(ErrBadRequest, "stream %s: want a content type of 1 to 256 bytes", quoteShort(s.Name))
	}
	if s.TTL != nil && s.ExpiresAt != nil || s.TTL != nil && (*s.TTL < 0 || *s.TTL > MaxSafeInteger) {
		return errorf(ErrBadRequest, "stream %s: a TTL of 0 to 2^53-1 seconds, or an expiry, not both", quoteShort(s.Name))
	}
	if s.Fork != nil {
		if err := checkDumpName(s.Fork.Source); err != nil {
			return err
		}
		if s.Fork.Source == s.Name {
			return errorf(ErrBadRequest, "stream %s forks itself", quoteShort(s.Name))
		}
	}
	if s.Base() < 0 || s.Tail < s.Base() || s.Tail > MaxPos {
		return errorf(ErrBadRequest, "stream %s: its tail %d is below its fork point or out of range", quoteShort(s.Name), s.Tail)
	}
	if strings.HasPrefix(s.Name, NamelessPrefix) && !s.Deleted {
		return errorf(ErrBadRequest, "stream %s: a nameless stream is soft-deleted", quoteShort(s.Name))
	}
	if len(s.Producers) > maxProducers {
		return errorf(ErrBadRequest, "stream %s: over %d producers", quoteShort(s.Name), maxProducers)
	}
	for i, p := range s.Producers {
		if p.ID == "" || len(p.ID) > MaxNameBytes || !utf8.ValidString(p.ID) || p.Epoch < 0 || p.LastSeq < 0 ||
			(i > 0 && s.Producers[i-1].ID >= p.ID) {
			return errorf(ErrBadRequest, "stream %s: producers need distinct valid ids in order and non-negative epochs and sequences", quoteShort(s.Name))
		}
	}
	if s.MaxEpoch < 0 {
		return errorf(ErrBadRequest, "stream %s: a negative epoch", quoteShort(s.Name))
	}
	return nil
}

// SameHead reports whether a and b are the same stream head: every field
// but Serial, Accessed and Pending.
func SameHead(a, b *StreamRecord) bool {
	ac, bc := a.Config(), b.Config()
	return a.Name == b.Name && ac.Matches(&bc) && a.ContentType == b.ContentType && a.Created == b.Created &&
		a.Closed == b.Closed && a.Deleted == b.Deleted && a.Tail == b.Tail &&
		(a.Fork == nil) == (b.Fork == nil) && (a.Fork == nil || *a.Fork == *b.Fork) &&
		a.LastSeq == b.LastSeq && a.MaxEpoch == b.MaxEpoch &&
		(a.ClosedBy == nil) == (b.ClosedBy == nil) && (a.ClosedBy == nil || *a.ClosedBy == *b.ClosedBy) &&
		slices.Equal(a.Producers, b.Producers)
}

// SortProducers puts ps in the order of their ids, the order of a
// StreamRecord's Producers.
func SortProducers(ps []ProducerRecord) {
	slices.SortFunc(ps, func(a, b ProducerRecord) int { return strings.Compare(a.ID, b.ID) })
}

// Load stores recs, in order, into p, and returns how many it wrote (a
// record stored already is skipped, not counted). Each record is one
// step: a head is compared with what the destination holds under its
// name, then created; a data record is compared with the units stored
// already, then appended. The first record that fails (ErrBadRequest for
// a malformed one or a data record of a stream not loaded,
// ErrImportConflict for other content) ends the call, nothing of it
// written; the records before it stay stored.
func Load(ctx context.Context, p Porter, recs []Record) (int, error) {
	n := 0
	for i := range recs {
		wrote, err := load(ctx, p, &recs[i])
		if err != nil {
			return n, err
		}
		if wrote {
			n++
		}
	}
	return n, nil
}

func load(ctx context.Context, p Porter, r *Record) (bool, error) {
	if r.Stream != nil {
		if err := CheckRecord(r, false); err != nil {
			return false, err
		}
		h := r.Stream
		for range 2 {
			cur, found, err := p.PortState(ctx, h.Name)
			if err != nil {
				return false, err
			}
			if found {
				if !SameHead(&cur, h) {
					return false, errorf(ErrImportConflict, "the destination holds another stream %s (other configuration, fork, closure, tail or writers)", quoteShort(h.Name))
				}
				return false, nil
			}
			err = p.PortCreate(ctx, h)
			if Code(err) == ErrImportConflict.Code {
				continue // created meanwhile: compare with it
			}
			return err == nil, err
		}
		return false, errorf(ErrImportConflict, "stream %s changes while it is imported", quoteShort(h.Name))
	}
	if r.Data == nil {
		return false, CheckRecord(r, false)
	}
	d := r.Data
	if err := checkDumpName(d.Name); err != nil {
		return false, err
	}
	cur, found, err := p.PortState(ctx, d.Name)
	if err != nil {
		return false, err
	}
	if !found {
		return false, errorf(ErrBadRequest, "stream %s: data before the stream's head was loaded", quoteShort(d.Name))
	}
	cfg := cur.Config()
	isJSON := cfg.JSON()
	if err := CheckRecord(r, isJSON); err != nil {
		return false, err
	}
	c := d.Chunk(isJSON)
	have := cur.Tail
	if cur.Pending != nil {
		have = *cur.Pending
	}
	if c.Start < cur.Base() || c.End() > cur.Tail {
		return false, errorf(ErrImportConflict, "stream %s: data at [%d, %d) is outside the destination stream's [%d, %d)", quoteShort(d.Name), c.Start, c.End(), cur.Base(), cur.Tail)
	}
	if c.End() <= have {
		same, err := sameData(ctx, p, cur.Serial, &c)
		if err != nil || !same {
			if err == nil {
				err = errorf(ErrImportConflict, "stream %s: the destination holds other data at [%d, %d)", quoteShort(d.Name), c.Start, c.End())
			}
			return false, err
		}
		return false, nil
	}
	if c.Start != have {
		return false, errorf(ErrImportConflict, "stream %s: data at %d, but the destination's import stopped at %d", quoteShort(d.Name), c.Start, have)
	}
	return true, p.PortAppend(ctx, d.Name, c)
}

// sameData reports whether stream serial holds c's units at c's
// position, byte for byte (and message for message in JSON mode).
func sameData(ctx context.Context, p Porter, serial uint64, c *Chunk) (bool, error) {
	var got Chunk
	got.Start = c.Start
	if c.Ends != nil {
		got.Ends = []int32{}
	}
	for from := c.Start; from < c.End(); {
		chunks, err := p.PortData(ctx, serial, from, c.End(), MaxDataRecord)
		if err != nil {
			return false, err
		}
		if len(chunks) == 0 {
			return false, nil
		}
		for _, k := range chunks {
			if k.Start != from {
				return false, nil
			}
			if len(got.Ends) > 0 && len(k.Ends) > 0 {
				got.Data = append(got.Data, ',')
			}
			off := int32(len(got.Data))
			got.Data = append(got.Data, k.Data...)
			for _, e := range k.Ends {
				got.Ends = append(got.Ends, e+off)
			}
			from = k.End()
		}
	}
	return bytes.Equal(got.Data, c.Data) && slices.Equal(got.Ends, c.Ends), nil
}
