package fdbstore

import (
	"fmt"
	"math"
	"time"

	"github.com/ckptstore/ckptstore/fdbstore/internal/tuple"
	"github.com/ckptstore/ckptstore/fdbstore/kv"
)

// Key space names, the second element of every key (see the package doc).
const (
	spaceIndex    = "i" // (P, "i", bucket(id), id[, chunk]) → the checkpoint's location [and a copy of its value]
	spaceThread   = "t" // (P, "t", bucket(thread), thread, …) → everything of one thread
	spaceListed   = "x" // (P, "x", thread) → "": the thread has a head, a checkpoint or a transcript
	spaceRefs     = "r" // (P, "r", blobKey) → reference count
	spaceInstance = "n" // (P, "n", key) → an instance record

	threadHead       = "h" // (…, "h") → head id
	threadLease      = "l" // (…, "l") → lease
	threadData       = "c" // (…, "c", createdAt, id, chunk) → encoding chunk
	threadLinks      = "p" // (…, "p", id) → parent, createdAt, sizes
	threadTranscript = "m" // (…, "m", chunk) → transcript chunk
	threadOps        = "o" // (…, "o", epoch, token) → tuple(wallMillis) kind result: a write that committed
)

// bucketBits is the width of the hash bucket that leads index and thread
// keys. Ids that callers make in time order (ULIDs, UUIDv7, counters)
// would otherwise put every new key at one end of the key space, in one
// shard; the bucket spreads them over 2^16 places whatever their shape.
const bucketBits = 16

// bucket is the hash bucket of an id: FNV-1a, 32 bits, top bucketBits.
// It is part of the stored key layout and must never change.
func bucket(id string) int64 {
	h := uint32(2166136261)
	for i := 0; i < len(id); i++ {
		h ^= uint32(id[i])
		h *= 16777619
	}
	return int64(h >> (32 - bucketBits))
}

// bucketLen bounds the encoding of a bucket element.
const bucketLen = 3

// appendBucketed appends the elements B(id), id: how the checkpoint index,
// the threads and every persistence record and index owner are keyed.
func appendBucketed(b []byte, id string) []byte {
	return tuple.AppendString(tuple.AppendInt(b, bucket(id)), id)
}

// The prefixes of one database. The default store keeps its checkpoints
// under DefaultPrefix, ("ckptstore"), and its persistence under
// DefaultPersistPrefix, ("ckptstore.persist"). Namespace name keeps both
// inside its subspace ("ckptstore.ns", name): checkpoints at
// NamespacePrefix(name), ("ckptstore.ns", name, nil), and persistence at
// PersistNamespacePrefix(name), ("ckptstore.ns", name, "persist"), so a
// tenant's whole state is the one range of its subspace, and neither
// Check reads the other's keys. The four roots differ within their first
// string element, so none is a prefix of another.
//
// The name is a tuple element (its NUL bytes escaped as 00 ff, then a 00
// terminator), not raw bytes appended. Packed strings alone are not
// prefix-free ("a" packs to a prefix of "a\x00"'s packing: 02 61 00 vs
// 02 61 00 ff 00); the element after the name makes the prefixes so,
// because where one packing ends its string the other continues with ff,
// and neither nil (00) nor a string (02) is ff. So different names give
// different prefixes, and no tenant's prefix is a byte prefix of another's.
const (
	// DefaultPersistPrefix is PersistenceOptions.Prefix when "": the
	// packed tuple ("ckptstore.persist").
	DefaultPersistPrefix = "\x02ckptstore.persist\x00"
	// namespaceRoot is the packed tuple ("ckptstore.ns").
	namespaceRoot = "\x02ckptstore.ns\x00"
)

// namespaceSpace is the packed tuple ("ckptstore.ns", name): every key of
// namespace name.
func namespaceSpace(name string) []byte {
	return tuple.AppendString(start([]byte(namespaceRoot), tuple.StringLen(name)+tuple.StringLen("persist")), name)
}

// NamespacePrefix is the Options.Prefix of namespace name's checkpoints
// and instances: the packed tuple ("ckptstore.ns", name, nil).
func NamespacePrefix(name string) string { return string(tuple.Append(namespaceSpace(name), nil)) }

// PersistNamespacePrefix is the PersistenceOptions.Prefix of namespace
// name's persistence: the packed tuple ("ckptstore.ns", name, "persist").
func PersistNamespacePrefix(name string) string {
	return string(tuple.AppendString(namespaceSpace(name), "persist"))
}

// prefixesOf returns the checkpoint and persistence prefixes of namespace
// name, or of the default store when name is "".
func prefixesOf(name string) (checkpoints, persistence string) {
	if name == "" {
		return DefaultPrefix, DefaultPersistPrefix
	}
	return NamespacePrefix(name), PersistNamespacePrefix(name)
}

// keys builds the keys of one prefix. Every key it returns is a new
// allocation (keys never share memory). The keys of Append's hot path are
// built by typed appenders into a buffer sized in advance, one allocation
// per key, without boxing elements in interfaces; key() is for the others.
type keys struct {
	p []byte
	// The packed prefixes of the key spaces: (P, "i"), (P, "t"), (P, "r"),
	// (P, "x").
	indexSpace, threadSpace, refSpace, listedSpace []byte
}

func newKeys(prefix []byte) keys {
	p := append([]byte(nil), prefix...)
	k := keys{p: p[:len(p):len(p)]}
	k.indexSpace = k.key(spaceIndex)
	k.threadSpace = k.key(spaceThread)
	k.refSpace = k.key(spaceRefs)
	k.listedSpace = k.key(spaceListed)
	return k
}

func (k keys) key(elems ...any) []byte { return tuple.Append(k.p[:len(k.p):len(k.p)], elems...) }

// start returns a new buffer holding base with room for n more bytes.
func start(base []byte, n int) []byte {
	return append(make([]byte, 0, len(base)+n), base...)
}

// threadBase is (P, "t", bucket(thread), thread) with room for extra bytes.
func (k keys) threadBase(thread string, extra int) []byte {
	return appendBucketed(start(k.threadSpace, bucketLen+tuple.StringLen(thread)+extra), thread)
}

// threadKey is (P, "t", bucket(thread), thread, sub).
func (k keys) threadKey(thread, sub string, extra int) []byte {
	return tuple.AppendString(k.threadBase(thread, tuple.StringLen(sub)+extra), sub)
}

// index is (P, "i", bucket(id), id): the checkpoint's location. The copy
// of its value, when kept, is under it: (P, "i", bucket(id), id, chunk).
func (k keys) index(id string) []byte { return k.indexExtra(id, 0) }

func (k keys) indexExtra(id string, extra int) []byte {
	return appendBucketed(start(k.indexSpace, bucketLen+tuple.StringLen(id)+extra), id)
}

// copyChunk is chunk i of the copy of a checkpoint's value under its index.
func (k keys) copyChunk(id string, i int) []byte {
	return tuple.AppendInt(k.indexExtra(id, tuple.MaxIntLen), int64(i))
}

// idRange is the index key of id and every chunk of its copy: the one
// range Get reads. It ends before the keys of ids that extend id with
// NUL bytes, whose next byte is 0xff.
func (k keys) idRange(id string) kv.KeyRange {
	b := k.index(id)
	_, e := tuple.Range(b)
	return kv.KeyRange{Begin: b, End: e}
}

func (k keys) head(thread string) []byte  { return k.threadKey(thread, threadHead, 0) }
func (k keys) lease(thread string) []byte { return k.threadKey(thread, threadLease, 0) }
func (k keys) link(thread, id string) []byte {
	return tuple.AppendString(k.threadKey(thread, threadLinks, tuple.StringLen(id)), id)
}
func (k keys) ref(blobKey string) []byte {
	return tuple.AppendString(start(k.refSpace, tuple.StringLen(blobKey)), blobKey)
}
func (k keys) instance(key string) []byte { return k.key(spaceInstance, key) }

// listed is (P, "x", thread), present while the thread has a head, a
// checkpoint or a transcript.
func (k keys) listed(thread string) []byte {
	return tuple.AppendString(start(k.listedSpace, tuple.StringLen(thread)), thread)
}

// listedRange is every listed key.
func (k keys) listedRange() kv.KeyRange { return rangeOf(k.listedSpace) }

// transcriptPrefix is the packed prefix of the thread's transcript chunks.
func (k keys) transcriptPrefix(thread string) []byte { return k.threadKey(thread, threadTranscript, 0) }

func (k keys) transcriptChunk(thread string, i int) []byte {
	return tuple.AppendInt(k.threadKey(thread, threadTranscript, tuple.MaxIntLen), int64(i))
}

// opMarker is the marker of a write of thread with token in epoch.
func (k keys) opMarker(thread string, epoch int64, token string) []byte {
	b := k.threadKey(thread, threadOps, tuple.MaxIntLen+tuple.StringLen(token))
	return tuple.AppendString(tuple.AppendInt(b, epoch), token)
}

// opsBefore is the range of the thread's markers of epochs before epoch.
func (k keys) opsBefore(thread string, epoch int64) kv.KeyRange {
	b := k.threadKey(thread, threadOps, 0)
	return kv.KeyRange{Begin: b, End: tuple.AppendInt(append([]byte(nil), b...), epoch)}
}

// dataPrefix is the packed prefix of every chunk of every checkpoint of
// the thread; List reads its range.
func (k keys) dataPrefix(thread string) []byte { return k.threadKey(thread, threadData, 0) }

// checkpointPrefix is the packed prefix of the chunks of one checkpoint.
func (k keys) checkpointPrefix(thread string, createdAt float64, id string) []byte {
	return k.appendCheckpointPrefix(thread, createdAt, id, 0)
}

// appendCheckpointPrefix is checkpointPrefix with room for extra bytes.
func (k keys) appendCheckpointPrefix(thread string, createdAt float64, id string, extra int) []byte {
	b := k.threadKey(thread, threadData, tuple.Float64Len+tuple.StringLen(id)+extra)
	return tuple.AppendString(tuple.AppendFloat64(b, sortKey(createdAt)), id)
}

func (k keys) chunk(thread string, createdAt float64, id string, i int) []byte {
	return tuple.AppendInt(k.appendCheckpointPrefix(thread, createdAt, id, tuple.MaxIntLen), int64(i))
}

func (k keys) linksPrefix(thread string) []byte { return k.threadKey(thread, threadLinks, 0) }
func (k keys) refsPrefix() []byte               { return start(k.refSpace, 0) }

// rangeOf is the range of every key longer than the packed tuple p that
// starts with it.
func rangeOf(p []byte) kv.KeyRange {
	b, e := tuple.Range(p)
	return kv.KeyRange{Begin: b, End: e}
}

// sortKey is createdAt as it goes into keys: -0 becomes +0, because List
// orders by the number (where -0 == +0) and then by id, while the tuple
// encoding would put -0 first. The stored checkpoint keeps its own bits.
func sortKey(createdAt float64) float64 {
	if createdAt == 0 {
		return 0
	}
	return createdAt
}

// suffix unpacks the elements of key after the packed prefix p.
func suffix(key, p []byte) (tuple.Tuple, error) {
	if len(key) < len(p) || string(key[:len(p)]) != string(p) {
		return nil, fmt.Errorf("%w: key %x is outside %x", ErrCorrupt, key, p)
	}
	t, err := tuple.Unpack(key[len(p):])
	if err != nil {
		return nil, fmt.Errorf("%w: key %x: %v", ErrCorrupt, key, err)
	}
	return t, nil
}

// indexValue is the value at (P, "i", bucket(id), id): where the
// checkpoint's data is, and whether a copy of it follows the index key.
type indexValue struct {
	thread    string
	createdAt float64 // sortKey form
	copied    bool    // the value is also under the index key (Get's one round)
}

func (v indexValue) encode() []byte {
	c := int64(0)
	if v.copied {
		c = 1
	}
	return tuple.Pack(v.thread, v.createdAt, c)
}

func decodeIndex(b []byte) (indexValue, error) {
	t, err := tuple.Unpack(b)
	if err == nil && len(t) == 3 {
		th, ok1 := t[0].(string)
		ca, ok2 := t[1].(float64)
		c, ok3 := t[2].(int64)
		if ok1 && ok2 && ok3 && (c == 0 || c == 1) {
			return indexValue{thread: th, createdAt: ca, copied: c == 1}, nil
		}
	}
	return indexValue{}, fmt.Errorf("%w: index value %x", ErrCorrupt, b)
}

// linkValue is the value at (P, "t", thread, "p", id): what pruning needs
// to walk the chain and size its batches without reading the checkpoints.
type linkValue struct {
	parent    string
	createdAt float64 // sortKey form
	size      int64   // bytes of the encoding
	blobs     int64   // distinct blob keys
}

func (v linkValue) encode() []byte { return tuple.Pack(v.parent, v.createdAt, v.size, v.blobs) }

func decodeLink(b []byte) (linkValue, error) {
	t, err := tuple.Unpack(b)
	if err == nil && len(t) == 4 {
		p, ok1 := t[0].(string)
		ca, ok2 := t[1].(float64)
		size, ok3 := t[2].(int64)
		blobs, ok4 := t[3].(int64)
		if ok1 && ok2 && ok3 && ok4 {
			return linkValue{parent: p, createdAt: ca, size: size, blobs: blobs}, nil
		}
	}
	return linkValue{}, fmt.Errorf("%w: link value %x", ErrCorrupt, b)
}

// leaseValue is the value at (P, "t", thread, "l"). A released lease keeps
// its fence with an empty token, so fences keep growing across releases.
type leaseValue struct {
	token   string
	fence   int64
	expires time.Time // exact to the nanosecond
}

func (v leaseValue) encode() []byte {
	return tuple.Pack(v.token, v.fence, v.expires.Unix(), int64(v.expires.Nanosecond()))
}

func decodeLease(b []byte) (leaseValue, error) {
	t, err := tuple.Unpack(b)
	if err == nil && len(t) == 4 {
		tok, ok1 := t[0].(string)
		fence, ok2 := t[1].(int64)
		sec, ok3 := t[2].(int64)
		nsec, ok4 := t[3].(int64)
		if ok1 && ok2 && ok3 && ok4 && nsec >= 0 && nsec < int64(time.Second) && fence >= 0 && fence < math.MaxInt64 {
			return leaseValue{token: tok, fence: fence, expires: time.Unix(sec, nsec)}, nil
		}
	}
	return leaseValue{}, fmt.Errorf("%w: lease value %x", ErrCorrupt, b)
}
