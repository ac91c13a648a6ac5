package fdbstore

// Paged reads: ListPage over a thread's data range, and Threads over the
// listed keys. Each page is one range read of Limit+1 pairs, the extra one
// telling whether more follow.

import (
	"context"
	"fmt"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/fdbstore/internal/tuple"
	"github.com/ckptstore/ckptstore/fdbstore/kv"
)

// cursorID bounds an id taken from a cursor: ids are at most MaxIDBytes
// long, and cutting a longer cursor id to MaxIDBytes+1 bytes keeps its
// order against every stored id, while keeping keys under FoundationDB's
// limit.
func cursorID(id string) string { return id[:min(len(id), MaxIDBytes+1)] }

// ListPage implements driver.Store: one range read of the thread's data
// from the cursor, Limit+1 pairs. A page holds only whole checkpoints, so
// when checkpoints of several chunks fill the read, the page is shorter
// than Limit (it is never empty while checkpoints follow); a single
// checkpoint of more than Limit chunks takes a second round. Check order:
// thread id (ErrInvalidID), limit, cursor (ErrInvalidEntry).
func (s *Driver) ListPage(ctx context.Context, threadID string, pg driver.Page) ([]*ckptstore.Checkpoint, string, error) {
	if len(threadID) > MaxIDBytes {
		return []*ckptstore.Checkpoint{}, "", nil
	}
	p := s.k.dataPrefix(threadID)
	r := rangeOf(p)
	if pg.After != nil {
		at := s.k.checkpointPrefix(threadID, pg.After.CreatedAt, cursorID(pg.After.ID))
		if pg.Reverse {
			r.End = at // every chunk of the position's checkpoint is after it
		} else {
			_, r.Begin = tuple.Range(at) // after every chunk of the position
		}
	}
	var page []*ckptstore.Checkpoint
	var more bool
	err := s.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		var err error
		page, more, err = s.readPage(tr, p, r, pg)
		return err
	})
	if err != nil {
		return nil, "", err
	}
	return page, pg.Next(page, more), nil
}

// readPage reads one page of the thread data under p within r.
func (s *Driver) readPage(tr kv.ReadTransaction, p []byte, r kv.KeyRange, pg driver.Page) ([]*ckptstore.Checkpoint, bool, error) {
	kvs, err := tr.GetRange(r, kv.RangeOptions{Limit: pg.Limit + 1, Reverse: pg.Reverse}).Get()
	if err != nil {
		return nil, false, err
	}
	groups, err := groupChunks(kvs, p, pg.Reverse)
	if err != nil {
		return nil, false, err
	}
	full := len(kvs) == pg.Limit+1
	switch {
	case !full:
		if n := len(groups); n > 0 && !groups[n-1].complete {
			return nil, false, fmt.Errorf("%w: checkpoint %q lacks its first chunk", ErrCorrupt, groups[n-1].id)
		}
		out, err := decodeGroups(groups)
		return out, false, err
	case len(groups) > pg.Limit:
		out, err := decodeGroups(groups[:pg.Limit])
		return out, true, err
	case len(groups) > 1:
		// The last group may be cut by the limit: it starts the next page.
		out, err := decodeGroups(groups[:len(groups)-1])
		return out, true, err
	}
	// One checkpoint of more than Limit chunks: read all of it, and one
	// pair beyond it to tell whether more follow.
	g := groups[0]
	at := tuple.AppendString(tuple.AppendFloat64(append([]byte(nil), p...), g.createdAt), g.id)
	whole := tr.GetRange(rangeOf(at), kv.RangeOptions{})
	beyond := r
	if pg.Reverse {
		beyond.End = at
	} else {
		_, beyond.Begin = tuple.Range(at)
	}
	nextf := tr.GetRange(beyond, kv.RangeOptions{Limit: 1, Reverse: pg.Reverse})
	chunks, err := whole.Get()
	if err != nil {
		return nil, false, err
	}
	next, err := nextf.Get()
	if err != nil {
		return nil, false, err
	}
	if err := checkChunks(g.id, chunks, at); err != nil {
		return nil, false, err
	}
	cp, err := assemble(g.id, chunks)
	if err != nil {
		return nil, false, err
	}
	return []*ckptstore.Checkpoint{cp}, len(next) > 0, nil
}

// Threads implements driver.Store: one range read of the listed
// keys, Limit+1 of them. Check order: limit, cursor (ErrInvalidEntry).
func (s *Driver) Threads(ctx context.Context, tp driver.ThreadPage) ([]string, string, error) {
	r := s.k.listedRange()
	if tp.After != "" {
		r.Begin = append(s.k.listed(cursorID(tp.After)), 0x00)
	}
	var kvs []kv.KeyValue
	err := s.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		var err error
		kvs, err = tr.GetRange(r, kv.RangeOptions{Limit: tp.Limit + 1}).Get()
		return err
	})
	if err != nil {
		return nil, "", err
	}
	more := len(kvs) > tp.Limit
	kvs = kvs[:min(len(kvs), tp.Limit)]
	ids := make([]string, 0, len(kvs))
	for _, kvp := range kvs {
		t, err := suffix(kvp.Key, s.k.listedSpace)
		if err != nil {
			return nil, "", err
		}
		id, ok := elem[string](t, 0, 1)
		if !ok {
			return nil, "", fmt.Errorf("%w: listed key %x", ErrCorrupt, kvp.Key)
		}
		ids = append(ids, id)
	}
	return ids, tp.Next(ids, more), nil
}
