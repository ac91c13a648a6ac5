package fdbstore

// The Durable Streams driver of fdbstore (package streams), over kv.DB:
// FoundationDB, or memkv in tests.
//
// Layout, under the driver's prefix P (a namespace's is the tuple
// ("ckptstore.ns", name, "streams"), the sibling of its checkpoints):
//
//	P "n/" name            → the stream's id (8 bytes; ids are never reused)
//	P "seq"                → the last id
//	P "m/" id              → the stream's state (JSON)
//	P "c/" id start        → a chunk: its message ends, then its data
//	P "p/" id producer-id  → "epoch seq"
//
// Invariants: each write is one kv transaction that reads the state,
// decides with package streams' functions and writes; kv.DB retries it on
// conflict and after commit_unknown_result, and the retry meets the state
// the first try left, so an append is never applied twice. An append of
// more than maxStreamValue bytes is stored as several chunks (each under
// FoundationDB's value limit); a JSON message larger than that is refused
// (413). Chunks never change once written. A name's id, once a lookup has
// found it, is only a hint: it is used while the id's state is live and
// carries the name (see lookup), else the name is read.

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ckptstore/ckptstore/fdbstore/kv"
	"github.com/ckptstore/ckptstore/streams"
)

// maxStreamValue bounds the data of one chunk key, under kv.MaxValueSize.
const maxStreamValue = 90_000

// MaxStreamAppend is the largest create or append body fdbstore stores:
// one transaction carries it, under kv.MaxTransactionSize with room for
// the keys and the state. A larger one is 413.
const MaxStreamAppend = 8 << 20

// streamsRecheck bounds a live reader's wait for a write of another
// process on a database without watches (kv.Watcher): a reader on one
// server learns of another server's append by reading again after this
// long (a write in its own process wakes it at once). A var only so that
// a test can take the re-read away and prove that the watch alone wakes
// a reader.
var streamsRecheck = time.Second

// Streams is fdbstore's streams.Driver: the streams of one prefix.
type Streams struct {
	db kv.DB
	p  string

	mu         sync.Mutex
	waits      map[uint64]chan struct{}
	sweepAfter []byte            // the last name key the last sweep looked at
	ids        map[string]uint64 // names' ids as lookups last found them (lookup says when one is used)
}

var (
	_ streams.Driver  = (*Streams)(nil)
	_ streams.Sweeper = (*Streams)(nil)
)

// NewStreams returns the stream driver of the keys under prefix in db.
func NewStreams(db kv.DB, prefix string) *Streams {
	return &Streams{db: db, p: prefix, waits: map[uint64]chan struct{}{}, ids: map[string]uint64{}}
}

// StreamsNamespacePrefix is the prefix of namespace name's streams: the
// packed tuple ("ckptstore.ns", name, "streams").
func StreamsNamespacePrefix(name string) string {
	return strings.TrimSuffix(NamespacePrefix(name), "\x00") + "\x02streams\x00"
}

func (d *Streams) nameKey(name string) []byte { return []byte(d.p + "n/" + name) }
func (d *Streams) idKey(kind string, id uint64, rest ...byte) []byte {
	k := append([]byte(d.p+kind), 0, 0, 0, 0, 0, 0, 0, 0)
	binary.BigEndian.PutUint64(k[len(k)-8:], id)
	return append(k, rest...)
}
func (d *Streams) metaKey(id uint64) []byte { return d.idKey("m/", id) }
func (d *Streams) chunkKey(id uint64, start streams.Pos) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(start))
	return d.idKey("c/", id, b[:]...)
}
func (d *Streams) prodKey(id uint64, producer string) []byte {
	return d.idKey("p/", id, []byte(producer)...)
}

// fstream is a stream's state, stored as JSON.
type fstream struct {
	ID       uint64            `json:"-"`
	Name     string            `json:"name"`
	CT       string            `json:"ct"`
	TTL      *int64            `json:"ttl,omitempty"`
	Exp      int64             `json:"exp,omitempty"`
	Closed   bool              `json:"closed,omitempty"`
	Tail     int64             `json:"tail"`
	Acc      int64             `json:"acc"`
	Created  int64             `json:"cr"`
	Src      uint64            `json:"src,omitempty"`
	SrcName  string            `json:"srcName,omitempty"`
	Base     int64             `json:"base,omitempty"`
	Refs     int64             `json:"refs,omitempty"`
	Deleted  bool              `json:"del,omitempty"`
	Dropped  bool              `json:"drop,omitempty"`
	LastSeq  string            `json:"ls,omitempty"`
	MaxEpoch int64             `json:"me,omitempty"`
	ClosedBy *streams.Producer `json:"cb,omitempty"`
	// Imp is the target tail of a pending import (streams.Porter), ImpC
	// its closure; Closed is false until the import reaches Imp.
	Imp  *int64 `json:"imp,omitempty"`
	ImpC bool   `json:"impc,omitempty"`
}

func (f *fstream) info() streams.Info {
	i := streams.Info{Config: streams.Config{ContentType: f.CT}, Closed: f.Closed, Tail: streams.Pos(f.Tail),
		Accessed: time.Unix(0, f.Acc), Created: f.Created}
	if f.TTL != nil {
		i.TTL, i.HasTTL = *f.TTL, true
	}
	if f.Exp != 0 {
		i.ExpiresAt = time.Unix(0, f.Exp).UTC()
	}
	if f.Src != 0 {
		i.Fork = &streams.Fork{Source: f.SrcName, Pos: streams.Pos(f.Base)}
	}
	return i
}

// setConfig sets f's configuration to c, the inverse of info's.
func (f *fstream) setConfig(c *streams.Config) {
	f.CT, f.TTL, f.Exp = c.ContentType, nil, 0
	if c.HasTTL {
		ttl := c.TTL
		f.TTL = &ttl
	}
	if !c.ExpiresAt.IsZero() {
		f.Exp = c.ExpiresAt.UnixNano()
	}
}

func (f *fstream) writers() streams.Writers {
	return streams.Writers{LastSeq: f.LastSeq, MaxEpoch: f.MaxEpoch, ClosedBy: f.ClosedBy}
}

func (d *Streams) load(tr kv.ReadTransaction, id uint64) (*fstream, error) {
	v, err := tr.Get(d.metaKey(id)).Get()
	if err != nil || v == nil {
		return nil, err
	}
	f := &fstream{ID: id}
	if err := json.Unmarshal(v, f); err != nil {
		return nil, fmt.Errorf("fdbstore: stream %d: %w", id, err)
	}
	return f, nil
}

func (d *Streams) save(tr kv.Transaction, f *fstream) error {
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	tr.Set(d.metaKey(f.ID), b)
	return nil
}

// lookup resolves name to its stream: ErrNotFound (with the expired
// stream, when it is one) or ErrGone.
//
// A name whose id the driver has seen costs one read, of the state: a
// live state (present, neither deleted nor dropped, not expired) of that
// id means the name still maps to it, since whatever moves a name off a
// stream (delete, or a create over an expired stream) also clears or
// marks the stream's state, and the read's conflict range makes such a
// concurrent write fail this transaction. Anything else reads the name.
func (d *Streams) lookup(tr kv.ReadTransaction, name string, now time.Time) (*fstream, error) {
	if id, ok := d.cachedID(name); ok {
		f, err := d.load(tr, id)
		if err != nil {
			return nil, err
		}
		if f != nil && !f.Deleted && !f.Dropped && f.Name == name {
			if info := f.info(); !info.Expired(now) {
				return f, nil
			}
		}
		d.forgetID(name)
	}
	f, err := d.lookupName(tr, name, now)
	if err == nil {
		d.rememberID(name, f.ID)
	}
	return f, err
}

// idCacheMax bounds the name → id cache of one driver; a full cache is
// emptied and refilled by the lookups that follow.
const idCacheMax = 10_000

func (d *Streams) cachedID(name string) (uint64, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	id, ok := d.ids[name]
	return id, ok
}

func (d *Streams) rememberID(name string, id uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.ids) >= idCacheMax {
		clear(d.ids)
	}
	d.ids[name] = id
}

func (d *Streams) forgetID(name string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.ids, name)
}

// lookupName is lookup by the name's key.
func (d *Streams) lookupName(tr kv.ReadTransaction, name string, now time.Time) (*fstream, error) {
	v, err := tr.Get(d.nameKey(name)).Get()
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, streams.ErrNotFound
	}
	f, err := d.load(tr, binary.BigEndian.Uint64(v))
	if err != nil {
		return nil, err
	}
	if f == nil {
		return nil, fmt.Errorf("fdbstore: stream %q names a stream with no state", name)
	}
	if f.Deleted {
		return nil, streams.ErrGone
	}
	info := f.info()
	if info.Expired(now) {
		return f, streams.ErrNotFound
	}
	return f, nil
}

// nextID mints the id of a new stream: one above the last (the "seq"
// key), so that ids are never reused.
func (d *Streams) nextID(tr kv.Transaction) (uint64, error) {
	seq, err := tr.Get([]byte(d.p + "seq")).Get()
	if err != nil {
		return 0, err
	}
	id := uint64(1)
	if len(seq) == 8 {
		id = binary.BigEndian.Uint64(seq) + 1
	}
	tr.Set([]byte(d.p+"seq"), binary.BigEndian.AppendUint64(nil, id))
	return id, nil
}

// release removes f, which no name refers to any more: its keys go when
// no fork reads it, and with them every source up the chain that waited
// for its last fork.
func (d *Streams) release(tr kv.Transaction, f *fstream) error {
	if f.Refs > 0 {
		f.Dropped = true
		return d.save(tr, f)
	}
	d.clearKeys(tr, f.ID)
	for src := f.Src; src != 0; {
		s, err := d.load(tr, src)
		if err != nil || s == nil {
			return err
		}
		s.Refs--
		if s.Refs > 0 || !s.Deleted && !s.Dropped {
			return d.save(tr, s)
		}
		if s.Deleted {
			if v, err := tr.Get(d.nameKey(s.Name)).Get(); err == nil && v != nil && binary.BigEndian.Uint64(v) == s.ID {
				tr.Clear(d.nameKey(s.Name))
			}
		}
		d.clearKeys(tr, s.ID)
		src = s.Src
	}
	return nil
}

func (d *Streams) clearKeys(tr kv.Transaction, id uint64) {
	tr.Clear(d.metaKey(id))
	tr.ClearRange(kv.PrefixRange(d.idKey("c/", id)))
	tr.ClearRange(kv.PrefixRange(d.idKey("p/", id)))
}

// encodeChunkValue is a chunk's value: the number of JSON ends (4 bytes,
// all ones for bytes), the ends, the data.
func encodeChunkValue(c *streams.Chunk) []byte {
	n := ^uint32(0)
	if c.Ends != nil {
		n = uint32(len(c.Ends))
	}
	b := binary.BigEndian.AppendUint32(make([]byte, 0, 4+4*len(c.Ends)+len(c.Data)), n)
	for _, e := range c.Ends {
		b = binary.BigEndian.AppendUint32(b, uint32(e))
	}
	return append(b, c.Data...)
}

func decodeChunkValue(start streams.Pos, v []byte) (streams.Chunk, error) {
	if len(v) < 4 {
		return streams.Chunk{}, errors.New("fdbstore: a stream chunk is short")
	}
	c := streams.Chunk{Start: start}
	n := binary.BigEndian.Uint32(v)
	v = v[4:]
	if n != ^uint32(0) {
		if uint64(len(v)) < 4*uint64(n) {
			return streams.Chunk{}, errors.New("fdbstore: a stream chunk is short")
		}
		c.Ends = make([]int32, n)
		for i := range c.Ends {
			c.Ends[i] = int32(binary.BigEndian.Uint32(v[4*i:]))
		}
		v = v[4*n:]
	}
	c.Data = v
	return c, nil
}

// pieces splits c into chunks whose data fit a value: bytes anywhere,
// JSON between messages (a message larger than a value is ErrTooLarge).
func pieces(c *streams.Chunk) ([]streams.Chunk, error) {
	if len(c.Data) <= maxStreamValue {
		return []streams.Chunk{*c}, nil
	}
	var out []streams.Chunk
	for from := c.Start; from < c.End(); {
		to := from
		if c.Ends == nil {
			to = min(c.End(), from+maxStreamValue)
		} else {
			lo := int32(0)
			if k := from - c.Start; k > 0 {
				lo = c.Ends[k-1] + 1
			}
			for to < c.End() && c.Ends[to-c.Start]-lo <= maxStreamValue {
				to++
			}
			if to == from {
				return nil, streams.Errorf(streams.ErrTooLarge, "a JSON message of over %d bytes", maxStreamValue)
			}
		}
		out = append(out, c.Slice(from, to))
		from = to
	}
	return out, nil
}

func (d *Streams) writeChunk(tr kv.Transaction, id uint64, c *streams.Chunk) error {
	if len(c.Data) > MaxStreamAppend {
		return streams.Errorf(streams.ErrTooLarge, "fdbstore stores a body of at most %d bytes", MaxStreamAppend)
	}
	ps, err := pieces(c)
	if err != nil {
		return err
	}
	for i := range ps {
		tr.Set(d.chunkKey(id, ps[i].Start), encodeChunkValue(&ps[i]))
	}
	return nil
}

// chunkAt returns the chunk of stream id that holds pos.
func (d *Streams) chunkAt(tr kv.ReadTransaction, id uint64, pos streams.Pos) (streams.Chunk, bool, error) {
	r := kv.KeyRange{Begin: d.idKey("c/", id), End: d.chunkKey(id, pos+1)}
	kvs, err := tr.GetRange(r, kv.RangeOptions{Limit: 1, Reverse: true}).Get()
	if err != nil || len(kvs) == 0 {
		return streams.Chunk{}, false, err
	}
	k := kvs[0].Key
	c, err := decodeChunkValue(streams.Pos(binary.BigEndian.Uint64(k[len(k)-8:])), kvs[0].Value)
	if err != nil || c.End() <= pos {
		return streams.Chunk{}, false, err
	}
	return c, true, nil
}

// runAt is the number of units from anchor to the end of the chunk that
// holds it, in f's view.
func (d *Streams) runAt(tr kv.ReadTransaction, f *fstream, anchor streams.Pos) (streams.Pos, error) {
	to := streams.Pos(f.Tail)
	for {
		if anchor >= to {
			return 0, nil
		}
		if f.Src != 0 && anchor < streams.Pos(f.Base) {
			to = min(to, streams.Pos(f.Base))
			s, err := d.load(tr, f.Src)
			if err != nil || s == nil {
				return 0, err
			}
			f = s
			continue
		}
		c, ok, err := d.chunkAt(tr, f.ID, anchor)
		if err != nil || !ok {
			return 0, err
		}
		return min(c.End(), to) - anchor, nil
	}
}

// Create implements streams.Driver.
func (d *Streams) Create(ctx context.Context, name string, req *streams.CreateRequest, now time.Time) (streams.Info, bool, error) {
	var (
		out     streams.Info
		created bool
		newID   uint64
	)
	err := d.db.Transact(ctx, func(tr kv.Transaction) error {
		created = false
		old, err := d.lookup(tr, name, now)
		live := err == nil // else old, if set, has expired
		if err := streams.NameLookupErr(err); err != nil {
			return err
		}
		var (
			oi, si *streams.Info
			src    *fstream
		)
		if live {
			i := old.info()
			oi = &i
		}
		if f := req.Fork; f != nil {
			if src, err = d.lookup(tr, f.Source, now); err != nil {
				return streams.SourceLookupErr(err)
			}
			i := src.info()
			si = &i
		}
		cfg, fork, err := streams.DecideCreate(req, oi, si, func(a streams.Pos) (streams.Pos, error) { return d.runAt(tr, src, a) })
		if err != nil {
			return err
		}
		if live {
			old.Acc = now.UnixNano()
			oi.Accessed = now
			out = *oi
			return d.save(tr, old)
		}
		if old != nil {
			tr.Clear(d.nameKey(name))
			if err := d.release(tr, old); err != nil {
				return err
			}
		}
		id, err := d.nextID(tr)
		if err != nil {
			return err
		}
		f := &fstream{ID: id, Name: name, Acc: now.UnixNano(), Created: now.UnixNano(), Closed: req.Closed}
		f.setConfig(&cfg)
		if fork != nil {
			f.Src, f.SrcName, f.Base, f.Tail = src.ID, fork.Source, int64(fork.Pos), int64(fork.Pos)
			src.Refs++
			src.Acc = now.UnixNano()
			if err := d.save(tr, src); err != nil {
				return err
			}
		}
		if b := req.Body; b != nil && b.Len() > 0 {
			b.Start = streams.Pos(f.Tail)
			if err := d.writeChunk(tr, id, b); err != nil {
				return err
			}
			f.Tail = int64(b.End())
		}
		tr.Set(d.nameKey(name), binary.BigEndian.AppendUint64(nil, id))
		out, created, newID = f.info(), true, id
		return d.save(tr, f)
	})
	if err == nil && created {
		d.rememberID(name, newID)
	}
	return out, created, err
}

// Append implements streams.Driver.
func (d *Streams) Append(ctx context.Context, name string, req *streams.AppendRequest, now time.Time) (streams.AppendResult, error) {
	var (
		res  streams.AppendResult
		woke uint64
	)
	err := d.db.Transact(ctx, func(tr kv.Transaction) error {
		woke = 0
		// With the id known, the producer's state is read in the same
		// round as the stream's (one round trip to a cluster, not two).
		var prod kv.FutureValue
		id, cached := d.cachedID(name)
		if p := req.Producer; p != nil && cached {
			prod = tr.Get(d.prodKey(id, p.ID))
		}
		f, err := d.lookup(tr, name, now)
		if err != nil {
			return err
		}
		var ps *streams.ProducerState
		if p := req.Producer; p != nil {
			if prod == nil || f.ID != id {
				prod = tr.Get(d.prodKey(f.ID, p.ID))
			}
			v, err := prod.Get()
			if err != nil {
				return err
			}
			if v != nil {
				var st streams.ProducerState
				if _, err := fmt.Sscan(string(v), &st.Epoch, &st.LastSeq); err != nil {
					return fmt.Errorf("fdbstore: stream %d: producer state %q: %w", f.ID, v, err)
				}
				ps = &st
			}
		}
		info, w := f.info(), f.writers()
		dec, err := streams.DecideAppend(&info, &w, ps, req)
		if err != nil {
			return err
		}
		res = dec.Result
		f.Acc = now.UnixNano()
		if dec.Write {
			if b := req.Body; b != nil {
				b.Start = streams.Pos(f.Tail)
				if err := d.writeChunk(tr, f.ID, b); err != nil {
					return err
				}
				f.Tail = int64(b.End())
				res.Next = b.End()
			}
			if p := req.Producer; p != nil {
				tr.Set(d.prodKey(f.ID, p.ID), fmt.Appendf(nil, "%d %d", dec.State.Epoch, dec.State.LastSeq))
			}
			w.Apply(req, &dec)
			f.LastSeq, f.MaxEpoch, f.ClosedBy = w.LastSeq, w.MaxEpoch, w.ClosedBy
			if req.Close {
				f.Closed = true
			}
			woke = f.ID
		}
		return d.save(tr, f)
	})
	if err == nil && woke != 0 {
		d.wake(woke)
	}
	return res, err
}

// Delete implements streams.Driver.
func (d *Streams) Delete(ctx context.Context, name string, now time.Time) error {
	var woke uint64
	err := d.db.Transact(ctx, func(tr kv.Transaction) error {
		f, err := d.lookup(tr, name, now)
		if err != nil {
			return err
		}
		woke = f.ID
		if f.Refs > 0 {
			f.Deleted = true
			return d.save(tr, f)
		}
		tr.Clear(d.nameKey(name))
		return d.release(tr, f)
	})
	if err == nil {
		d.wake(woke)
	}
	return err
}

// Head implements streams.Driver.
func (d *Streams) Head(ctx context.Context, name string, touch bool, now time.Time) (streams.Info, error) {
	var info streams.Info
	err := d.access(ctx, name, touch, now, func(tr kv.ReadTransaction, f *fstream) error {
		info = f.info()
		return nil
	})
	return info, err
}

// access runs fn on the live stream name, renewing its TTL when touch;
// an expired stream is removed.
func (d *Streams) access(ctx context.Context, name string, touch bool, now time.Time, fn func(tr kv.ReadTransaction, f *fstream) error) error {
	expired := false
	err := d.db.Transact(ctx, func(tr kv.Transaction) error {
		expired = false
		f, err := d.lookup(tr, name, now)
		if errors.Is(err, streams.ErrNotFound) && f != nil {
			expired = true
			tr.Clear(d.nameKey(name))
			return d.release(tr, f)
		}
		if err != nil {
			return err
		}
		if touch {
			f.Acc = now.UnixNano()
			if err := d.save(tr, f); err != nil {
				return err
			}
		}
		return fn(tr.Snapshot(), f)
	})
	if err == nil && expired {
		return streams.ErrNotFound
	}
	return err
}

// Read implements streams.Driver.
func (d *Streams) Read(ctx context.Context, name string, from streams.Pos, max int, now time.Time) (streams.ReadResult, error) {
	var out streams.ReadResult
	err := d.access(ctx, name, true, now, func(tr kv.ReadTransaction, f *fstream) error {
		out = streams.ReadResult{Info: f.info(), Next: from}
		out.Info.Accessed = now
		if from > streams.Pos(f.Tail) {
			return streams.Errorf(streams.ErrBadRequest, "the offset is past the stream's tail")
		}
		type seg struct {
			id       uint64
			from, to streams.Pos
		}
		var segs []seg
		to := streams.Pos(f.Tail)
		for cur := f; from < to; {
			lo := from
			if cur.Src != 0 && streams.Pos(cur.Base) > from {
				lo = streams.Pos(cur.Base)
			}
			if lo < to {
				segs = append(segs, seg{cur.ID, lo, to})
			}
			if cur.Src == 0 || streams.Pos(cur.Base) <= from {
				break
			}
			to = min(to, streams.Pos(cur.Base))
			next, err := d.load(tr, cur.Src)
			if err != nil {
				return err
			}
			if next == nil {
				return fmt.Errorf("fdbstore: stream %q: a fork's source has no state", name)
			}
			cur = next
		}
		budget := max
		for i := len(segs) - 1; i >= 0 && budget > 0; i-- {
			s := segs[i]
			pos := max64(out.Next, s.from)
			if c, ok, err := d.chunkAt(tr, s.id, pos); err != nil {
				return err
			} else if ok && c.Start < pos {
				out.Chunks, out.Next, budget = c.Take(out.Chunks, pos, s.to, budget)
				pos = out.Next
			}
			for pos < s.to && budget > 0 {
				kvs, err := tr.GetRange(kv.KeyRange{Begin: d.chunkKey(s.id, pos), End: d.chunkKey(s.id, s.to)}, kv.RangeOptions{Limit: 16}).Get()
				if err != nil {
					return err
				}
				if len(kvs) == 0 {
					break
				}
				for _, e := range kvs {
					if budget <= 0 {
						break
					}
					c, err := decodeChunkValue(streams.Pos(binary.BigEndian.Uint64(e.Key[len(e.Key)-8:])), e.Value)
					if err != nil {
						return err
					}
					out.Chunks, out.Next, budget = c.Take(out.Chunks, c.Start, s.to, budget)
					pos = out.Next
				}
			}
			if out.Next < s.to {
				break
			}
		}
		return nil
	})
	return out, err
}

func max64(a, b streams.Pos) streams.Pos {
	if a > b {
		return a
	}
	return b
}

func (d *Streams) wake(id uint64) {
	d.mu.Lock()
	if ch := d.waits[id]; ch != nil {
		close(ch)
		delete(d.waits, id)
	}
	d.mu.Unlock()
}

// Wait implements streams.Driver. On a database with watches
// (kv.Watcher: FoundationDB, memkv) it watches the stream's state key, set
// before the state is read, so any server's write wakes it; without them a
// write of this process wakes it at once and another's within
// streamsRecheck.
func (d *Streams) Wait(ctx context.Context, name string, tail streams.Pos) error {
	var id uint64
	if err := d.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		v, err := tr.Get(d.nameKey(name)).Get()
		if err != nil || v == nil {
			return streams.ErrNotFound
		}
		id = binary.BigEndian.Uint64(v)
		return nil
	}); err != nil {
		return nil // gone, or the store fails: the caller's read says which
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var ch <-chan struct{}
	recheck := streamsRecheck
	if w, ok := d.db.(kv.Watcher); ok {
		c, err := w.Watch(wctx, d.metaKey(id))
		if err == nil {
			ch, recheck = c, 0
		}
	}
	if ch == nil {
		d.mu.Lock()
		c := d.waits[id]
		if c == nil {
			c = make(chan struct{})
			d.waits[id] = c
		}
		d.mu.Unlock()
		ch = c
	}
	// Watched first, then read: a write after the read fires ch.
	fresh := false
	if err := d.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		f, err := d.load(tr, id)
		fresh = err == nil && f != nil && !f.Deleted && !f.Dropped && !f.Closed && streams.Pos(f.Tail) == tail
		return err
	}); err != nil || !fresh {
		return nil
	}
	var timeout <-chan time.Time
	if recheck > 0 {
		t := time.NewTimer(recheck)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-ch:
		return nil
	case <-timeout:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// SweepExpired implements streams.Sweeper: it looks at up to max names
// after the last call's, in key order, and removes the expired streams.
func (d *Streams) SweepExpired(ctx context.Context, now time.Time, max int) (int, error) {
	d.mu.Lock()
	after := d.sweepAfter
	d.mu.Unlock()
	begin := d.nameKey("")
	if after != nil {
		begin = append(after, 0)
	}
	var names []string
	var last []byte
	err := d.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		names, last = names[:0], nil
		kvs, err := tr.GetRange(kv.KeyRange{Begin: begin, End: kv.Strinc(d.nameKey(""))}, kv.RangeOptions{Limit: max}).Get()
		if err != nil {
			return err
		}
		for _, e := range kvs {
			f, err := d.load(tr, binary.BigEndian.Uint64(e.Value))
			if err != nil {
				return err
			}
			if f != nil && !f.Deleted {
				if info := f.info(); info.Expired(now) {
					names = append(names, string(e.Key[len(d.nameKey("")):]))
				}
			}
			last = e.Key
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	d.mu.Lock()
	d.sweepAfter = last // nil: the next sweep starts over
	d.mu.Unlock()
	n := 0
	for _, name := range names {
		if err := d.access(ctx, name, false, now, func(kv.ReadTransaction, *fstream) error { return nil }); errors.Is(err, streams.ErrNotFound) {
			n++
		}
	}
	return n, nil
}

// streamsCache keeps one stream driver per namespace of a store opened by
// URL, so that a process's live readers share its writers' wake-ups.
type streamsCache struct {
	db      kv.DB
	mu      sync.Mutex
	drivers map[string]*Streams
}

func newStreamsCache(db kv.DB) *streamsCache {
	return &streamsCache{db: db, drivers: map[string]*Streams{}}
}

// get returns the driver of namespace name, made on first use.
func (sc *streamsCache) get(name string) *Streams {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	d := sc.drivers[name]
	if d == nil {
		d = NewStreams(sc.db, StreamsNamespacePrefix(name))
		sc.drivers[name] = d
	}
	return d
}
