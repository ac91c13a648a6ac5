package fdbstore

import (
	"strings"

	"github.com/ckptstore/ckptstore/fdbstore/internal/tuple"
	"github.com/ckptstore/ckptstore/fdbstore/kv"
)

// The key layout of the persistence. Every key is the prefix Q followed by
// a packed tuple (internal/tuple, as for the checkpoints) whose first
// element names the key space:
//
//	(Q, "run", B(id), id)                         → run record (JSON)
//	(Q, "rt",  B(thread), thread, startedAt, id)  → copy: every run of the thread
//	(Q, "ra",  B(thread), thread, startedAt, id)  → copy: the thread's running runs
//	(Q, "rr",  detachedSince, id)                 → copy: reclaimable (running, detached) runs
//	(Q, "gen", B(id), id)                         → generation run record
//	(Q, "gt",  B(thread), thread, startedAt, id)  → copy: the thread's generation runs
//	(Q, "in",  B(id), id)                         → interrupt record
//	(Q, "it"|"ip", B(thread), thread, requestedAt, id) → copy: the thread's (pending) interrupts
//	(Q, "iu"|"iv", B(run), run, requestedAt, id)       → copy: the run's (pending) interrupts
//	(Q, "io",  epoch, token)                      → a commit batch's op token: expiry (store ms)
//	(Q, "md",  namespace, key)                    → metadata value
//	(Q, "ar",  B(id), id)                         → artifact record
//	(Q, "au",  B(run), run, createdAt, id)        → copy: the run's artifacts
//	(Q, "at",  B(thread), thread, createdAt, id)  → copy: the thread's artifacts
//	(Q, "bl",  key)                               → blob row (JSON with the bucket object)
//	(Q, "lk",  key)                               → lock lease, fence and queue (JSON)
//	(Q, "op",  token)                             → one call's marker (markers.go's encoding)
//
// B(x) is the checkpoints' bucket (keys.go), for the same reason: ids and
// threads made in time order (ULIDs, UUIDv7) spread over the key space
// instead of writing at one end of it. Each list is one index whose key
// order is the list's order, so a page is one range read of at most limit
// keys, and each index value is a copy of the record, so a page needs no
// second round. Blob rows are keyed by the blob key alone, because their
// list is in key order and filtered by a literal prefix.
const (
	spaceRun           = "run"
	spaceRunThread     = "rt"
	spaceRunActive     = "ra"
	spaceRunReclaim    = "rr"
	spaceGen           = "gen"
	spaceGenThread     = "gt"
	spaceInt           = "in"
	spaceIntThread     = "it"
	spaceIntThreadPend = "ip"
	spaceIntRun        = "iu"
	spaceIntRunPend    = "iv"
	spaceIntOp         = "io"
	spaceMeta          = "md"
	spaceArt           = "ar"
	spaceArtRun        = "au"
	spaceArtThread     = "at"
	spaceBlob          = "bl"
	spaceLock          = "lk"
	spaceOp            = "op"
)

// persistKeys builds the persistence keys of one prefix.
type persistKeys struct{ q []byte }

// space is (Q, s), with room for an id or two after it.
func (k persistKeys) space(s string) []byte {
	return tuple.AppendString(start(k.q, tuple.StringLen(s)+64), s)
}

// record is (Q, space, B(id), id).
func (k persistKeys) record(space, id string) []byte {
	return appendBucketed(k.space(space), id)
}

// owner is (Q, space, B(owner), owner): the prefix of one owner's index.
func (k persistKeys) owner(space, owner string) []byte {
	return appendBucketed(k.space(space), owner)
}

// entry is (Q, space, B(owner), owner, at, id): one index entry.
func (k persistKeys) entry(space, owner string, at int64, id string) []byte {
	return tuple.AppendString(tuple.AppendInt(k.owner(space, owner), at), id)
}

// page is the range of an owner's index strictly after `after` (nil: all).
func (k persistKeys) page(space, owner string, after *position) kv.KeyRange {
	return pageOf(k.owner(space, owner), after)
}

// pageOf is the range of every (p, at, id) strictly after `after`.
func pageOf(p []byte, after *position) kv.KeyRange {
	r := kv.KeyRange{Begin: p, End: append(append([]byte(nil), p...), 0xff)}
	if after != nil {
		r.Begin = append(tuple.AppendString(tuple.AppendInt(append([]byte(nil), p...), after.at), after.id), 0x00)
	}
	return r
}

// position is a driver.Position in this package's terms.
type position struct {
	at int64
	id string
}

func (k persistKeys) reclaim(at int64, id string) []byte {
	return tuple.AppendString(tuple.AppendInt(k.space(spaceRunReclaim), at), id)
}

// reclaimPage is the reclaim index strictly after `after` and at most cutoff.
func (k persistKeys) reclaimPage(cutoff int64, after *position) kv.KeyRange {
	r := pageOf(k.space(spaceRunReclaim), after)
	r.End = tuple.AppendInt(k.space(spaceRunReclaim), cutoff+1)
	return r
}

func (k persistKeys) meta(namespace, key string) []byte {
	return tuple.AppendString(tuple.AppendString(k.space(spaceMeta), namespace), key)
}

func (k persistKeys) blob(key string) []byte { return tuple.AppendString(k.space(spaceBlob), key) }

// blobPage is the blob rows whose key starts with prefix and is greater
// than after. A string's packing without its terminator is a prefix of the
// packing of every string that starts with it.
func (k persistKeys) blobPage(prefix, after string) kv.KeyRange {
	p := tuple.AppendString(k.space(spaceBlob), prefix)
	p = p[:len(p)-1] // drop the terminator
	r := kv.KeyRange{Begin: p, End: kv.Strinc(p)}
	if after != "" {
		if a := append(k.blob(after), 0x00); strings.Compare(string(a), string(r.Begin)) > 0 {
			r.Begin = a
		}
	}
	return r
}

func (k persistKeys) lock(key string) []byte { return tuple.AppendString(k.space(spaceLock), key) }
func (k persistKeys) op(token string) []byte { return tuple.AppendString(k.space(spaceOp), token) }

func (k persistKeys) intOp(epoch int64, token string) []byte {
	return tuple.AppendString(tuple.AppendInt(k.space(spaceIntOp), epoch), token)
}

// intOpsBefore is every op token of the epochs before epoch.
func (k persistKeys) intOpsBefore(epoch int64) kv.KeyRange {
	return kv.KeyRange{Begin: k.space(spaceIntOp), End: tuple.AppendInt(k.space(spaceIntOp), epoch)}
}
