package fdbdriver

import (
	"strings"

	"github.com/ckptstore/ckptstore/fdbstore/kv"
)

// The key layout. Every key is the prefix Q followed by a packed tuple whose
// first element names the key space:
//
//	(Q, "run", b(id), id)                         → run record (JSON)
//	(Q, "rt",  b(thread), thread, startedAt, id)  → copy: every run of the thread
//	(Q, "ra",  b(thread), thread, startedAt, id)  → copy: the thread's running runs
//	(Q, "rr",  detachedSince, id)                 → copy: reclaimable (running, detached) runs
//	(Q, "gen", b(id), id)                         → generation run record
//	(Q, "gt",  b(thread), thread, startedAt, id)  → copy: the thread's generation runs
//	(Q, "in",  b(id), id)                         → interrupt record
//	(Q, "it"|"ip", b(thread), thread, requestedAt, id) → copy: the thread's (pending) interrupts
//	(Q, "iu"|"iv", b(run), run, requestedAt, id)       → copy: the run's (pending) interrupts
//	(Q, "io",  epoch, token)                      → a commit batch's op token: expiry (store ms)
//	(Q, "md",  namespace, key)                    → metadata value
//	(Q, "ar",  b(id), id)                         → artifact record
//	(Q, "au",  b(run), run, createdAt, id)        → copy: the run's artifacts
//	(Q, "at",  b(thread), thread, createdAt, id)  → copy: the thread's artifacts
//	(Q, "bl",  key)                               → blob row (JSON with the bucket object)
//	(Q, "lk",  key)                               → lock lease, fence and queue (JSON)
//	(Q, "op",  token)                             → one driver call's marker: its result
//
// b(x) is a 16-bit FNV-1a hash bucket of x (fdbstore's), so that ids and
// threads made in time order (ULIDs, UUIDv7) spread over the key space
// instead of writing at one end of it. Each list is one index whose key
// order is the list's order, so a page is one range read of at most limit
// keys, and each index value is a copy of the record, so a page needs no
// second round. Blob rows are keyed by the blob key alone, because their
// list is in key order and filtered by a literal prefix.
//
// The elements are encoded as FoundationDB's tuple layer encodes strings
// and integers (fdbstore's internal codec is not importable from here; the
// test checks the bytes against the published encodings).
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

// DefaultPrefix is the prefix when Options.Prefix is "": the packed tuple
// ("ckptstore.persist"). It shares no key with fdbstore.DefaultPrefix
// ("ckptstore") or the namespaces ("ckptstore.ns", …).
const DefaultPrefix = "\x02ckptstore.persist\x00"

// NamespacePrefix is the prefix of namespace name's persistence: the packed
// tuple ("ckptstore.ns", name, "persist"). A namespace's checkpoints live
// under ("ckptstore.ns", name, nil) (storeurl.FDBNamespacePrefix), so one
// tenant's whole state is the range of ("ckptstore.ns", name), and neither
// store's Check sees the other's keys.
func NamespacePrefix(name string) string {
	b := appendString([]byte("\x02ckptstore.ns\x00"), name)
	return string(appendString(b, "persist"))
}

// appendString appends s as a tuple string element: 0x02, the bytes with
// every 0x00 escaped as 0x00 0xff, and a 0x00 terminator. The encoding
// orders strings by their bytes.
func appendString(b []byte, s string) []byte {
	b = append(b, 0x02)
	for i := 0; i < len(s); i++ {
		b = append(b, s[i])
		if s[i] == 0 {
			b = append(b, 0xff)
		}
	}
	return append(b, 0x00)
}

// appendInt appends v as a tuple integer element: 0x14 for zero, 0x14±n
// followed by n big-endian bytes (one's complement for negatives). The
// encoding orders integers numerically.
func appendInt(b []byte, v int64) []byte {
	if v == 0 {
		return append(b, 0x14)
	}
	u := uint64(v)
	if v < 0 {
		u = uint64(-v)
	}
	n := 0
	for x := u; x > 0; x >>= 8 {
		n++
	}
	if v < 0 {
		b = append(b, byte(0x14-n))
		u = ^u
	} else {
		b = append(b, byte(0x14+n))
	}
	for i := n - 1; i >= 0; i-- {
		b = append(b, byte(u>>(8*i)))
	}
	return b
}

// bucket is FNV-1a, 32 bits, top 16: fdbstore's bucket of ids.
func bucket(id string) int64 {
	h := uint32(2166136261)
	for i := 0; i < len(id); i++ {
		h ^= uint32(id[i])
		h *= 16777619
	}
	return int64(h >> 16)
}

// keys builds the keys of one prefix.
type keys struct{ q []byte }

func (k keys) space(s string) []byte {
	return appendString(append(make([]byte, 0, len(k.q)+len(s)+64), k.q...), s)
}

// record is (Q, space, b(id), id).
func (k keys) record(space, id string) []byte {
	return appendString(appendInt(k.space(space), bucket(id)), id)
}

// owner is (Q, space, b(owner), owner): the prefix of one owner's index.
func (k keys) owner(space, owner string) []byte {
	return appendString(appendInt(k.space(space), bucket(owner)), owner)
}

// entry is (Q, space, b(owner), owner, at, id): one index entry.
func (k keys) entry(space, owner string, at int64, id string) []byte {
	return appendString(appendInt(k.owner(space, owner), at), id)
}

// page is the range of an owner's index strictly after `after` (nil: all).
func (k keys) page(space, owner string, after *position) kv.KeyRange {
	p := k.owner(space, owner)
	return pageOf(p, after)
}

// pageOf is the range of every (p, at, id) strictly after `after`.
func pageOf(p []byte, after *position) kv.KeyRange {
	r := kv.KeyRange{Begin: p, End: append(append([]byte(nil), p...), 0xff)}
	if after != nil {
		r.Begin = append(appendString(appendInt(append([]byte(nil), p...), after.at), after.id), 0x00)
	}
	return r
}

// position is a driver.Position in this package's terms.
type position struct {
	at int64
	id string
}

func (k keys) reclaim(at int64, id string) []byte {
	return appendString(appendInt(k.space(spaceRunReclaim), at), id)
}

// reclaimPage is the reclaim index strictly after `after` and at most cutoff.
func (k keys) reclaimPage(cutoff int64, after *position) kv.KeyRange {
	r := pageOf(k.space(spaceRunReclaim), after)
	r.End = appendInt(k.space(spaceRunReclaim), cutoff+1)
	return r
}

func (k keys) meta(namespace, key string) []byte {
	return appendString(appendString(k.space(spaceMeta), namespace), key)
}

func (k keys) blob(key string) []byte { return appendString(k.space(spaceBlob), key) }

// blobPage is the blob rows whose key starts with prefix and is greater
// than after. A string's packing without its terminator is a prefix of the
// packing of every string that starts with it.
func (k keys) blobPage(prefix, after string) kv.KeyRange {
	p := appendString(k.space(spaceBlob), prefix)
	p = p[:len(p)-1] // drop the terminator
	r := kv.KeyRange{Begin: p, End: kv.Strinc(p)}
	if after != "" {
		if a := append(k.blob(after), 0x00); strings.Compare(string(a), string(r.Begin)) > 0 {
			r.Begin = a
		}
	}
	return r
}

func (k keys) lock(key string) []byte { return appendString(k.space(spaceLock), key) }
func (k keys) op(token string) []byte { return appendString(k.space(spaceOp), token) }

func (k keys) intOp(epoch int64, token string) []byte {
	return appendString(appendInt(k.space(spaceIntOp), epoch), token)
}

// intOpsBefore is every op token of the epochs before epoch.
func (k keys) intOpsBefore(epoch int64) kv.KeyRange {
	return kv.KeyRange{Begin: k.space(spaceIntOp), End: appendInt(k.space(spaceIntOp), epoch)}
}
