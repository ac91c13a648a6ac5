package memstore

// The Durable Streams driver of memstore (package streams).
//
// Invariants, under Streams.mu: byName holds every stream a client can
// name, soft-deleted ones included; a stream's chunks are its own data,
// in order, the first starting at its fork point (0 for a stream that is
// not a fork); a chunk never changes once appended, so a reader may use
// the chunks it copied after the lock is released. A fork points at its
// source's stream value, which keeps the shared data alive; refs counts
// the forks that still name a stream, and a soft-deleted stream leaves
// byName when its last fork goes (cascading up the chain). order holds
// every stream not removed in serial order (creation order, for export),
// and removed ones until compact drops them.

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/ckptstore/ckptstore/streams"
)

// Streams is memstore's streams.Driver: the streams of one namespace, in
// the process. Live readers wait on a channel of the stream, closed by
// the write that changes it.
type Streams struct {
	mu     sync.Mutex
	byName map[string]*mstream
	serial uint64 // the last stream's serial (streams.Porter)
	// order holds every stream by serial, for streams.Porter, with the
	// removed ones (gone) until compact drops them.
	order []*mstream
	gone  int
}

var _ streams.Driver = (*Streams)(nil)

// NewStreams returns an empty stream driver.
func NewStreams() *Streams { return &Streams{byName: map[string]*mstream{}} }

type mstream struct {
	name      string
	info      streams.Info
	w         streams.Writers
	producers map[string]streams.ProducerState
	source    *mstream
	base      streams.Pos // the fork point; the source's data is below it
	chunks    []streams.Chunk
	refs      int
	deleted   bool          // soft-deleted: forks still read it
	wake      chan struct{} // closed by the next change; nil: nobody waits
	serial    uint64        // creation order, never reused
	imp       *importTarget // set while an import of the stream is pending
	removed   bool          // out of the namespace and of every fork's chain
}

func (s *mstream) changed() {
	if s.wake != nil {
		close(s.wake)
		s.wake = nil
	}
}

// lookup returns the live stream name; an expired one is removed.
func (d *Streams) lookup(name string, now time.Time) (*mstream, error) {
	s := d.byName[name]
	if s == nil {
		return nil, streams.ErrNotFound
	}
	if s.deleted {
		return nil, streams.ErrGone
	}
	if s.info.Expired(now) {
		d.expire(s)
		return nil, streams.ErrNotFound
	}
	return s, nil
}

// expire takes an expired s out of the namespace: its name is free at
// once, and forks that still read it keep its data.
func (d *Streams) expire(s *mstream) {
	if s.refs == 0 {
		d.remove(s)
		return
	}
	s.changed()
	delete(d.byName, s.name)
	s.name, s.deleted = "", true
}

// remove takes s, which no fork names, out of the namespace, and with it
// every soft-deleted source up the chain that s was the last fork of.
func (d *Streams) remove(s *mstream) {
	defer d.compact()
	s.changed()
	s.deleted = true
	d.drop(s)
	if s.name != "" {
		delete(d.byName, s.name)
	}
	for src := s.source; src != nil; src = src.source {
		src.refs--
		if !src.deleted || src.refs > 0 {
			return
		}
		d.drop(src)
		if src.name != "" {
			delete(d.byName, src.name)
		}
	}
}

// drop marks s removed for order.
func (d *Streams) drop(s *mstream) {
	if !s.removed {
		s.removed = true
		d.gone++
	}
}

// add puts the new stream s, of the highest serial yet, in the namespace
// and in order.
func (d *Streams) add(s *mstream) {
	d.byName[s.name] = s
	d.order = append(d.order, s)
}

// compact drops the removed streams from order once they are half of it,
// so that order stays within twice the streams alive.
func (d *Streams) compact() {
	if d.gone == 0 || 2*d.gone < len(d.order) {
		return
	}
	live := d.order[:0]
	for _, s := range d.order {
		if !s.removed {
			live = append(live, s)
		}
	}
	clear(d.order[len(live):])
	d.order, d.gone = live, 0
}

// Create implements streams.Driver.
func (d *Streams) Create(_ context.Context, name string, req *streams.CreateRequest, now time.Time) (streams.Info, bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	old, err := d.lookup(name, now)
	if err := streams.NameLookupErr(err); err != nil {
		return streams.Info{}, false, err
	}
	var (
		oi, si *streams.Info
		src    *mstream
	)
	if old != nil {
		oi = &old.info
	}
	if f := req.Fork; f != nil {
		if src, err = d.lookup(f.Source, now); err != nil {
			return streams.Info{}, false, streams.SourceLookupErr(err)
		}
		si = &src.info
	}
	cfg, fork, err := streams.DecideCreate(req, oi, si, func(a streams.Pos) (streams.Pos, error) { return src.run(a, src.info.Tail), nil })
	if err != nil {
		return streams.Info{}, false, err
	}
	if old != nil {
		old.info.Accessed = now
		return old.info, false, nil
	}
	d.serial++
	s := &mstream{name: name, serial: d.serial, info: streams.Info{Config: cfg, Accessed: now, Fork: fork, Created: now.UnixNano()}}
	if fork != nil {
		s.source, s.base, s.info.Tail = src, fork.Pos, fork.Pos
		src.refs++
		src.info.Accessed = now
	}
	if b := req.Body; b != nil && b.Len() > 0 {
		b.Start = s.info.Tail
		s.chunks = append(s.chunks, *b)
		s.info.Tail = b.End()
	}
	s.info.Closed = req.Closed
	d.add(s)
	return s.info, true, nil
}

// run is the number of units from anchor to the end of the chunk that
// holds it, in s's view up to to.
func (s *mstream) run(anchor, to streams.Pos) streams.Pos {
	if anchor < s.base {
		return s.source.run(anchor, min(to, s.base))
	}
	i := sort.Search(len(s.chunks), func(i int) bool { return s.chunks[i].End() > anchor })
	if i == len(s.chunks) || anchor >= to {
		return 0
	}
	return min(s.chunks[i].End(), to) - anchor
}

// view appends the chunks of s's view in [from, to) to out, up to about
// budget bytes (at least one unit), and returns where it stopped.
func (s *mstream) view(out []streams.Chunk, from, to streams.Pos, budget int) ([]streams.Chunk, streams.Pos, int) {
	if from < s.base {
		stop := min(to, s.base)
		out, from, budget = s.source.view(out, from, stop, budget)
		if from < stop {
			return out, from, budget
		}
	}
	i := sort.Search(len(s.chunks), func(i int) bool { return s.chunks[i].End() > from })
	for ; i < len(s.chunks) && from < to && budget > 0; i++ {
		out, from, budget = s.chunks[i].Take(out, from, to, budget)
	}
	return out, from, budget
}

// Append implements streams.Driver.
func (d *Streams) Append(_ context.Context, name string, req *streams.AppendRequest, now time.Time) (streams.AppendResult, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, err := d.lookup(name, now)
	if err != nil {
		return streams.AppendResult{}, err
	}
	s.info.Accessed = now
	var ps *streams.ProducerState
	if p := req.Producer; p != nil {
		if st, ok := s.producers[p.ID]; ok {
			ps = &st
		}
	}
	dec, err := streams.DecideAppend(&s.info, &s.w, ps, req)
	if err != nil || !dec.Write {
		return dec.Result, err
	}
	if b := req.Body; b != nil {
		b.Start = s.info.Tail
		s.chunks = append(s.chunks, *b)
		s.info.Tail = b.End()
	}
	if p := req.Producer; p != nil {
		if s.producers == nil {
			s.producers = map[string]streams.ProducerState{}
		}
		s.producers[p.ID] = dec.State
	}
	s.w.Apply(req, &dec)
	if req.Close {
		s.info.Closed = true
	}
	s.changed()
	dec.Result.Next = s.info.Tail
	return dec.Result, nil
}

// Delete implements streams.Driver.
func (d *Streams) Delete(_ context.Context, name string, now time.Time) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, err := d.lookup(name, now)
	if err != nil {
		return err
	}
	if s.refs > 0 {
		s.deleted = true
		s.changed()
		return nil
	}
	d.remove(s)
	return nil
}

// Head implements streams.Driver.
func (d *Streams) Head(_ context.Context, name string, touch bool, now time.Time) (streams.Info, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, err := d.lookup(name, now)
	if err != nil {
		return streams.Info{}, err
	}
	if touch {
		s.info.Accessed = now
	}
	return s.info, nil
}

// Read implements streams.Driver.
func (d *Streams) Read(_ context.Context, name string, from streams.Pos, max int, now time.Time) (streams.ReadResult, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, err := d.lookup(name, now)
	if err != nil {
		return streams.ReadResult{}, err
	}
	s.info.Accessed = now
	if from > s.info.Tail {
		return streams.ReadResult{}, streams.Errorf(streams.ErrBadRequest, "the offset is past the stream's tail")
	}
	chunks, next, _ := s.view(nil, from, s.info.Tail, max)
	return streams.ReadResult{Info: s.info, Chunks: chunks, Next: next}, nil
}

// Wait implements streams.Driver.
func (d *Streams) Wait(ctx context.Context, name string, tail streams.Pos) error {
	d.mu.Lock()
	s := d.byName[name]
	if s == nil || s.deleted || s.info.Closed || s.info.Tail != tail {
		d.mu.Unlock()
		return nil
	}
	if s.wake == nil {
		s.wake = make(chan struct{})
	}
	ch := s.wake
	d.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

var _ streams.Sweeper = (*Streams)(nil)

// SweepExpired implements streams.Sweeper: it looks at up to max streams
// in the map's (random) order.
func (d *Streams) SweepExpired(_ context.Context, now time.Time, max int) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var expired []*mstream
	seen := 0
	for _, s := range d.byName {
		if seen++; seen > max {
			break
		}
		if !s.deleted && s.info.Expired(now) {
			expired = append(expired, s)
		}
	}
	for _, s := range expired {
		d.expire(s)
	}
	return len(expired), nil
}
