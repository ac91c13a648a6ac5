package redisstore

// Export and import of redisstore's streams (streams.Porter). A stream's
// serial is its id, so a dump reads the ids in order, a window of them
// per round trip. An import's head is one optimistic transaction (the
// name, the state, the producers and the source's reference count), and
// so is each data record's append, which finishes a pending import when
// it reaches the target tail ("imp" and "impc" in the state hash until
// then).

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/ckptstore/ckptstore/streams"
)

var _ streams.Porter = (*Streams)(nil)

// portWindow is how many ids PortList reads per round trip.
const portWindow = 256

// pstream is a stream's state with its pending import, if any.
type pstream struct {
	*rstream
	imp  *int64
	impc bool
}

func (d *Streams) portLoad(ctx context.Context, c redis.Cmdable, id string) (*pstream, error) {
	m, err := c.HGetAll(ctx, d.meta(id)).Result()
	if err != nil {
		return nil, err
	}
	return parsePort(id, m)
}

func parsePort(id string, m map[string]string) (*pstream, error) {
	r, err := parseStream(id, m)
	if err != nil || r == nil {
		return nil, err
	}
	p := &pstream{rstream: r, impc: m["impc"] != ""}
	if v, ok := m["imp"]; ok {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("redisstore: stream %s: bad import tail %q", id, v)
		}
		p.imp = &n
	}
	return p, nil
}

// dumpName is r's name in a dump: its own, or the nameless form when it
// lost it (dropped).
func (r *rstream) dumpName() string {
	if r.dropped {
		return streams.NamelessPrefix + r.id
	}
	return r.name
}

// record reads p's producers and its source's name and returns its head.
func (d *Streams) record(ctx context.Context, c redis.Cmdable, p *pstream) (streams.StreamRecord, error) {
	serial, err := strconv.ParseUint(p.id, 10, 64)
	if err != nil {
		return streams.StreamRecord{}, fmt.Errorf("redisstore: stream id %q: %w", p.id, err)
	}
	r := streams.StreamRecord{Name: p.dumpName(), Serial: serial, Deleted: p.deleted || p.dropped}
	r.SetInfo(&p.info, &p.w)
	if p.src != "" {
		src, err := d.load(ctx, c, p.src)
		if err != nil {
			return r, err
		}
		// A source with no state (a broken store) is named as a
		// nameless stream that no dump holds: Check reports the fork,
		// and Load refuses it.
		r.Fork.Source = streams.NamelessPrefix + p.src
		if src != nil {
			r.Fork.Source = src.dumpName()
		}
	}
	prods, err := c.HGetAll(ctx, d.prods(p.id)).Result()
	if err != nil {
		return r, err
	}
	for id, v := range prods {
		var st streams.ProducerState
		if _, err := fmt.Sscan(v, &st.Epoch, &st.LastSeq); err != nil {
			return r, fmt.Errorf("redisstore: stream %s: producer state %q: %w", p.id, v, err)
		}
		r.Producers = append(r.Producers, streams.ProducerRecord{ID: id, Epoch: st.Epoch, LastSeq: st.LastSeq})
	}
	streams.SortProducers(r.Producers)
	if p.imp != nil {
		at := p.info.Tail
		r.Pending, r.Tail, r.Closed = &at, streams.Pos(*p.imp), p.impc
	}
	return r, nil
}

// PortList implements streams.Porter: it reads the ids after after, a
// window at a time, up to the last id minted.
func (d *Streams) PortList(ctx context.Context, after uint64, max int) ([]streams.StreamRecord, error) {
	last, err := d.c.Get(ctx, d.base+"seq").Uint64()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []streams.StreamRecord
	for next := after + 1; next <= last && len(out) < max; next += portWindow {
		cmds := make([]*redis.MapStringStringCmd, 0, portWindow)
		pipe := d.c.Pipeline()
		for id := next; id < next+portWindow && id <= last; id++ {
			cmds = append(cmds, pipe.HGetAll(ctx, d.meta(strconv.FormatUint(id, 10))))
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return nil, err
		}
		for i, cmd := range cmds {
			if len(out) >= max {
				break
			}
			p, err := parsePort(strconv.FormatUint(next+uint64(i), 10), cmd.Val())
			if err != nil {
				return nil, err
			}
			if p == nil {
				continue
			}
			rec, err := d.record(ctx, d.c, p)
			if err != nil {
				return nil, err
			}
			out = append(out, rec)
		}
	}
	return out, nil
}

// PortData implements streams.Porter.
func (d *Streams) PortData(ctx context.Context, serial uint64, from, to streams.Pos, max int) ([]streams.Chunk, error) {
	id := strconv.FormatUint(serial, 10)
	var out []streams.Chunk
	budget, pos := max, from
	if ch, ok, err := d.chunkAt(ctx, d.c, id, pos); err != nil {
		return nil, err
	} else if ok && ch.Start < pos {
		out, pos, budget = ch.Take(out, pos, to, budget)
	}
	for pos < to && budget > 0 {
		ms, err := d.c.ZRangeByScore(ctx, d.chunks(id), &redis.ZRangeBy{Min: strconv.FormatInt(int64(pos), 10),
			Max: "(" + strconv.FormatInt(int64(to), 10), Count: 16}).Result()
		if err != nil || len(ms) == 0 {
			return out, err
		}
		for _, m := range ms {
			if budget <= 0 {
				break
			}
			ch, err := decodeChunk(m)
			if err != nil {
				return nil, err
			}
			if ch.Start != pos {
				return nil, fmt.Errorf("redisstore: stream %s: a chunk at %d where %d was expected", id, ch.Start, pos)
			}
			out, pos, budget = ch.Take(out, pos, to, budget)
		}
	}
	return out, nil
}

// byName returns the stream stored under name, whatever its state,
// watching its state when c is a transaction.
func (d *Streams) byName(ctx context.Context, c redis.Cmdable, name string) (*pstream, error) {
	id, err := c.HGet(ctx, d.names(), name).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if tx, ok := c.(*redis.Tx); ok {
		if err := tx.Watch(ctx, d.meta(id)).Err(); err != nil {
			return nil, err
		}
	}
	p, err := d.portLoad(ctx, c, id)
	if err == nil && p == nil {
		err = fmt.Errorf("redisstore: stream %s names id %s, which has no state", strconv.Quote(name), id)
	}
	return p, err
}

// PortState implements streams.Porter.
func (d *Streams) PortState(ctx context.Context, name string) (streams.StreamRecord, bool, error) {
	p, err := d.byName(ctx, d.c, name)
	if err != nil || p == nil {
		return streams.StreamRecord{}, false, err
	}
	rec, err := d.record(ctx, d.c, p)
	return rec, err == nil, err
}

// PortCreate implements streams.Porter.
func (d *Streams) PortCreate(ctx context.Context, rec *streams.StreamRecord) error {
	return d.txn(ctx, func(tx *redis.Tx) error {
		if old, err := d.byName(ctx, tx, rec.Name); err != nil || old != nil {
			if err == nil {
				err = streams.Errorf(streams.ErrImportConflict, "the destination holds a stream %q", rec.Name)
			}
			return err
		}
		var src *pstream
		if fk := rec.Fork; fk != nil {
			var err error
			if src, err = d.byName(ctx, tx, fk.Source); err != nil {
				return err
			}
			if src == nil {
				return streams.Errorf(streams.ErrBadRequest, "stream %q: its fork source %q is not loaded", rec.Name, fk.Source)
			}
			target := int64(src.info.Tail)
			if src.imp != nil {
				target = *src.imp
			}
			if int64(fk.Pos) > target {
				return streams.Errorf(streams.ErrBadRequest, "stream %q: its fork point %d is past its source's tail %d", rec.Name, fk.Pos, target)
			}
		}
		n, err := tx.Incr(ctx, d.base+"seq").Result()
		if err != nil {
			return err
		}
		r := &rstream{id: strconv.FormatInt(n, 10), name: rec.Name, deleted: rec.Deleted, w: rec.Writers(),
			info: streams.Info{Config: rec.Config(), Accessed: rec.Accessed, Created: rec.Created, Tail: rec.Base(), Closed: rec.Closed}}
		pending := rec.Tail > rec.Base()
		if pending {
			r.info.Closed = false
		}
		if src != nil {
			r.src = src.id
			r.info.Fork = &streams.Fork{Source: rec.Fork.Source, Pos: rec.Fork.Pos}
		}
		fields := r.fields()
		if pending {
			fields["imp"] = int64(rec.Tail)
			if rec.Closed {
				fields["impc"] = 1
			}
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.HSet(ctx, d.meta(r.id), fields)
			p.HSet(ctx, d.names(), rec.Name, r.id)
			for _, pr := range rec.Producers {
				p.HSet(ctx, d.prods(r.id), pr.ID, fmt.Sprintf("%d %d", pr.Epoch, pr.LastSeq))
			}
			if src != nil {
				p.HIncrBy(ctx, d.meta(src.id), "refs", 1)
			}
			return nil
		})
		return err
	}, d.names())
}

// PortAppend implements streams.Porter.
func (d *Streams) PortAppend(ctx context.Context, name string, c streams.Chunk) error {
	return d.txn(ctx, func(tx *redis.Tx) error {
		p, err := d.byName(ctx, tx, name)
		if err != nil {
			return err
		}
		if p == nil || p.imp == nil || c.Start != p.info.Tail || int64(c.End()) > *p.imp {
			return streams.Errorf(streams.ErrImportConflict, "stream %q is not pending an import of data at %d", name, c.Start)
		}
		_, err = tx.TxPipelined(ctx, func(pl redis.Pipeliner) error {
			pl.ZAdd(ctx, d.chunks(p.id), redis.Z{Score: float64(c.Start), Member: encodeChunk(&c)})
			pl.HSet(ctx, d.meta(p.id), "tail", int64(c.End()))
			if int64(c.End()) == *p.imp {
				if p.impc {
					pl.HSet(ctx, d.meta(p.id), "closed", 1)
				}
				pl.HDel(ctx, d.meta(p.id), "imp", "impc")
			}
			pl.Publish(ctx, d.base+"wake", p.id)
			return nil
		})
		return err
	}, d.names())
}
