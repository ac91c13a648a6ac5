package memstore

// Export and import of memstore's streams (streams.Porter): the raw
// states, under Streams.mu. An imported stream keeps the position of
// every unit, its Created and its writer state; while its import is
// pending (imp set) it reads as open with the data loaded so far.

import (
	"context"
	"sort"
	"strconv"

	"github.com/ckptstore/ckptstore/streams"
)

var _ streams.Porter = (*Streams)(nil)

// importTarget is what a pending import finishes at.
type importTarget struct {
	tail   streams.Pos
	closed bool
}

// dumpName is s's name in a dump: its own, or the nameless form.
func (s *mstream) dumpName() string {
	if s.name == "" {
		return streams.NamelessPrefix + strconv.FormatUint(s.serial, 10)
	}
	return s.name
}

// record is s's head as a dump holds it.
func (s *mstream) record() streams.StreamRecord {
	r := streams.StreamRecord{Name: s.dumpName(), Serial: s.serial, Deleted: s.deleted}
	r.SetInfo(&s.info, &s.w)
	if s.source != nil {
		r.Fork = &streams.ForkRecord{Source: s.source.dumpName(), Pos: s.base}
	}
	for id, p := range s.producers {
		r.Producers = append(r.Producers, streams.ProducerRecord{ID: id, Epoch: p.Epoch, LastSeq: p.LastSeq})
	}
	streams.SortProducers(r.Producers)
	if s.imp != nil {
		at := s.info.Tail
		r.Pending, r.Tail, r.Closed = &at, s.imp.tail, s.imp.closed
	}
	return r
}

// PortList implements streams.Porter: the streams of order after
// after, the removed ones left out.
func (d *Streams) PortList(_ context.Context, after uint64, max int) ([]streams.StreamRecord, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []streams.StreamRecord
	for i := d.search(after + 1); i < len(d.order) && len(out) < max; i++ {
		if s := d.order[i]; !s.removed {
			out = append(out, s.record())
		}
	}
	return out, nil
}

// search is the index in order of the first stream of serial at least
// serial.
func (d *Streams) search(serial uint64) int {
	return sort.Search(len(d.order), func(i int) bool { return d.order[i].serial >= serial })
}

// find returns the stream of serial, nil when none.
func (d *Streams) find(serial uint64) *mstream {
	if i := d.search(serial); i < len(d.order) && d.order[i].serial == serial && !d.order[i].removed {
		return d.order[i]
	}
	return nil
}

// PortData implements streams.Porter.
func (d *Streams) PortData(_ context.Context, serial uint64, from, to streams.Pos, max int) ([]streams.Chunk, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.find(serial)
	if s == nil {
		return nil, streams.Errorf(streams.ErrNotFound, "no stream of serial %d", serial)
	}
	var out []streams.Chunk
	from = max64(from, s.base)
	budget := max
	for i := range s.chunks {
		c := &s.chunks[i]
		if c.End() <= from {
			continue
		}
		if from >= to || budget <= 0 {
			break
		}
		out, from, budget = c.Take(out, from, to, budget)
	}
	return out, nil
}

func max64(a, b streams.Pos) streams.Pos {
	if a > b {
		return a
	}
	return b
}

// PortState implements streams.Porter.
func (d *Streams) PortState(_ context.Context, name string) (streams.StreamRecord, bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.byName[name]
	if s == nil {
		return streams.StreamRecord{}, false, nil
	}
	return s.record(), true, nil
}

// PortCreate implements streams.Porter.
func (d *Streams) PortCreate(_ context.Context, rec *streams.StreamRecord) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.byName[rec.Name] != nil {
		return streams.Errorf(streams.ErrImportConflict, "the destination holds a stream %q", rec.Name)
	}
	var src *mstream
	var fork *streams.Fork
	if f := rec.Fork; f != nil {
		src = d.byName[f.Source]
		if src == nil {
			return streams.Errorf(streams.ErrBadRequest, "stream %q: its fork source %q is not loaded", rec.Name, f.Source)
		}
		target := src.info.Tail
		if src.imp != nil {
			target = src.imp.tail
		}
		if f.Pos > target {
			return streams.Errorf(streams.ErrBadRequest, "stream %q: its fork point %d is past its source's tail %d", rec.Name, f.Pos, target)
		}
		fork = &streams.Fork{Source: f.Source, Pos: f.Pos}
	}
	d.serial++
	s := &mstream{name: rec.Name, serial: d.serial, deleted: rec.Deleted, w: rec.Writers(),
		info: streams.Info{Config: rec.Config(), Accessed: rec.Accessed, Fork: fork, Created: rec.Created, Tail: rec.Base(), Closed: rec.Closed}}
	if len(rec.Producers) > 0 {
		s.producers = make(map[string]streams.ProducerState, len(rec.Producers))
		for _, p := range rec.Producers {
			s.producers[p.ID] = streams.ProducerState{Epoch: p.Epoch, LastSeq: p.LastSeq}
		}
	}
	if rec.Tail > rec.Base() {
		s.imp = &importTarget{tail: rec.Tail, closed: rec.Closed}
		s.info.Closed = false
	}
	if src != nil {
		s.source, s.base = src, rec.Base()
		src.refs++
	}
	d.add(s)
	return nil
}

// PortAppend implements streams.Porter.
func (d *Streams) PortAppend(_ context.Context, name string, c streams.Chunk) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	s := d.byName[name]
	if s == nil || s.imp == nil || c.Start != s.info.Tail || c.End() > s.imp.tail {
		return streams.Errorf(streams.ErrImportConflict, "stream %q is not pending an import of data at %d", name, c.Start)
	}
	s.chunks = append(s.chunks, c)
	s.info.Tail = c.End()
	if s.info.Tail == s.imp.tail {
		s.info.Closed, s.imp = s.imp.closed, nil
	}
	s.changed()
	return nil
}
