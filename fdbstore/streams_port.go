package fdbstore

// Export and import of fdbstore's streams (streams.Porter). A stream's
// serial is its id, so a dump lists the "m/" keys in order. Every step is
// one kv transaction: a head's creation (with its name, producers and the
// source's reference count), or one data record's append, which finishes
// a pending import when it reaches the target tail.

import (
	"context"
	"encoding/binary"
	"fmt"
	"strconv"

	"github.com/ckptstore/ckptstore/fdbstore/kv"
	"github.com/ckptstore/ckptstore/streams"
)

var _ streams.Porter = (*Streams)(nil)

// dumpName is f's name in a dump: its own, or the nameless form when it
// lost it (dropped).
func dumpName(f *fstream) string {
	if f.Dropped {
		return streams.NamelessPrefix + strconv.FormatUint(f.ID, 10)
	}
	return f.Name
}

// record reads f's producers and its source's name and returns its head.
func (d *Streams) record(tr kv.ReadTransaction, f *fstream) (streams.StreamRecord, error) {
	r := streams.StreamRecord{Name: dumpName(f), Serial: f.ID, Deleted: f.Deleted || f.Dropped}
	info, w := f.info(), f.writers()
	r.SetInfo(&info, &w)
	if f.Src != 0 {
		src, err := d.load(tr, f.Src)
		if err != nil {
			return r, err
		}
		// A source with no state (a broken store) is named as a
		// nameless stream that no dump holds: Check reports the fork,
		// and Load refuses it.
		r.Fork.Source = streams.NamelessPrefix + strconv.FormatUint(f.Src, 10)
		if src != nil {
			r.Fork.Source = dumpName(src)
		}
	}
	kvs, err := tr.GetRange(kv.PrefixRange(d.idKey("p/", f.ID)), kv.RangeOptions{}).Get()
	if err != nil {
		return r, err
	}
	pfx := len(d.idKey("p/", f.ID))
	for _, e := range kvs {
		var st streams.ProducerState
		if _, err := fmt.Sscan(string(e.Value), &st.Epoch, &st.LastSeq); err != nil {
			return r, fmt.Errorf("fdbstore: stream %d: producer state %q: %w", f.ID, e.Value, err)
		}
		r.Producers = append(r.Producers, streams.ProducerRecord{ID: string(e.Key[pfx:]), Epoch: st.Epoch, LastSeq: st.LastSeq})
	}
	streams.SortProducers(r.Producers)
	if f.Imp != nil {
		at := streams.Pos(f.Tail)
		r.Pending, r.Tail, r.Closed = &at, streams.Pos(*f.Imp), f.ImpC
	}
	return r, nil
}

// PortList implements streams.Porter.
func (d *Streams) PortList(ctx context.Context, after uint64, max int) ([]streams.StreamRecord, error) {
	var out []streams.StreamRecord
	err := d.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		out = out[:0]
		r := kv.KeyRange{Begin: d.metaKey(after + 1), End: kv.Strinc([]byte(d.p + "m/"))}
		if after == ^uint64(0) {
			return nil
		}
		kvs, err := tr.GetRange(r, kv.RangeOptions{Limit: max}).Get()
		if err != nil {
			return err
		}
		for _, e := range kvs {
			id := binary.BigEndian.Uint64(e.Key[len(e.Key)-8:])
			f, err := d.load(tr, id)
			if err != nil || f == nil {
				return err
			}
			rec, err := d.record(tr, f)
			if err != nil {
				return err
			}
			out = append(out, rec)
		}
		return nil
	})
	return out, err
}

// PortData implements streams.Porter.
func (d *Streams) PortData(ctx context.Context, serial uint64, from, to streams.Pos, max int) ([]streams.Chunk, error) {
	var out []streams.Chunk
	err := d.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		out = out[:0]
		budget := max
		pos := from
		if c, ok, err := d.chunkAt(tr, serial, pos); err != nil {
			return err
		} else if ok && c.Start < pos {
			out, pos, budget = c.Take(out, pos, to, budget)
		}
		for pos < to && budget > 0 {
			kvs, err := tr.GetRange(kv.KeyRange{Begin: d.chunkKey(serial, pos), End: d.chunkKey(serial, to)}, kv.RangeOptions{Limit: 16}).Get()
			if err != nil || len(kvs) == 0 {
				return err
			}
			for _, e := range kvs {
				if budget <= 0 {
					break
				}
				c, err := decodeChunkValue(streams.Pos(binary.BigEndian.Uint64(e.Key[len(e.Key)-8:])), e.Value)
				if err != nil {
					return err
				}
				if c.Start != pos {
					return fmt.Errorf("fdbstore: stream %d: a chunk at %d where %d was expected", serial, c.Start, pos)
				}
				out, pos, budget = c.Take(out, pos, to, budget)
			}
		}
		return nil
	})
	return out, err
}

// byName returns the stream stored under name, whatever its state.
func (d *Streams) byName(tr kv.ReadTransaction, name string) (*fstream, error) {
	v, err := tr.Get(d.nameKey(name)).Get()
	if err != nil || v == nil {
		return nil, err
	}
	f, err := d.load(tr, binary.BigEndian.Uint64(v))
	if err == nil && f == nil {
		err = fmt.Errorf("fdbstore: stream %q names a stream with no state", name)
	}
	return f, err
}

// PortState implements streams.Porter.
func (d *Streams) PortState(ctx context.Context, name string) (streams.StreamRecord, bool, error) {
	var (
		out   streams.StreamRecord
		found bool
	)
	err := d.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		f, err := d.byName(tr, name)
		if err != nil || f == nil {
			found = false
			return err
		}
		out, err = d.record(tr, f)
		found = err == nil
		return err
	})
	return out, found, err
}

// PortCreate implements streams.Porter.
func (d *Streams) PortCreate(ctx context.Context, rec *streams.StreamRecord) error {
	return d.db.Transact(ctx, func(tr kv.Transaction) error {
		if old, err := d.byName(tr, rec.Name); err != nil || old != nil {
			if err == nil {
				err = streams.Errorf(streams.ErrImportConflict, "the destination holds a stream %q", rec.Name)
			}
			return err
		}
		var src *fstream
		if fk := rec.Fork; fk != nil {
			var err error
			if src, err = d.byName(tr, fk.Source); err != nil {
				return err
			}
			if src == nil {
				return streams.Errorf(streams.ErrBadRequest, "stream %q: its fork source %q is not loaded", rec.Name, fk.Source)
			}
			target := src.Tail
			if src.Imp != nil {
				target = *src.Imp
			}
			if int64(fk.Pos) > target {
				return streams.Errorf(streams.ErrBadRequest, "stream %q: its fork point %d is past its source's tail %d", rec.Name, fk.Pos, target)
			}
		}
		id, err := d.nextID(tr)
		if err != nil {
			return err
		}
		c := rec.Config()
		f := &fstream{ID: id, Name: rec.Name, Acc: rec.Accessed.UnixNano(), Created: rec.Created,
			Closed: rec.Closed, Deleted: rec.Deleted, Tail: int64(rec.Base()), LastSeq: rec.LastSeq, MaxEpoch: rec.MaxEpoch, ClosedBy: rec.Writers().ClosedBy}
		f.setConfig(&c)
		if rec.Tail > rec.Base() {
			t := int64(rec.Tail)
			f.Imp, f.ImpC, f.Closed = &t, rec.Closed, false
		}
		if src != nil {
			f.Src, f.SrcName, f.Base = src.ID, rec.Fork.Source, int64(rec.Fork.Pos)
			src.Refs++
			if err := d.save(tr, src); err != nil {
				return err
			}
		}
		for _, p := range rec.Producers {
			tr.Set(d.prodKey(id, p.ID), fmt.Appendf(nil, "%d %d", p.Epoch, p.LastSeq))
		}
		tr.Set(d.nameKey(rec.Name), binary.BigEndian.AppendUint64(nil, id))
		return d.save(tr, f)
	})
}

// PortAppend implements streams.Porter.
func (d *Streams) PortAppend(ctx context.Context, name string, c streams.Chunk) error {
	var woke uint64
	err := d.db.Transact(ctx, func(tr kv.Transaction) error {
		woke = 0
		f, err := d.byName(tr, name)
		if err != nil {
			return err
		}
		if f == nil || f.Imp == nil || int64(c.Start) != f.Tail || int64(c.End()) > *f.Imp {
			return streams.Errorf(streams.ErrImportConflict, "stream %q is not pending an import of data at %d", name, c.Start)
		}
		if err := d.writeChunk(tr, f.ID, &c); err != nil {
			return err
		}
		f.Tail = int64(c.End())
		if f.Tail == *f.Imp {
			f.Closed, f.Imp, f.ImpC = f.ImpC, nil, false
		}
		woke = f.ID
		return d.save(tr, f)
	})
	if err == nil && woke != 0 {
		d.wake(woke)
	}
	return err
}
