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
	spaceIndex    = "i" // (P, "i", id) → the checkpoint's thread and createdAt
	spaceThread   = "t" // (P, "t", thread, …) → everything of one thread
	spaceRefs     = "r" // (P, "r", blobKey) → reference count
	spaceOps      = "o" // (P, "o", wallMillis, token) → a committed write
	spaceInstance = "n" // (P, "n", key) → an instance record

	threadHead  = "h" // (P, "t", thread, "h") → head id
	threadLease = "l" // (P, "t", thread, "l") → lease
	threadData  = "c" // (P, "t", thread, "c", createdAt, id, chunk) → encoding chunk
	threadLinks = "p" // (P, "t", thread, "p", id) → parent, createdAt, sizes
)

// keys builds the keys of one prefix. Every key it returns is a new
// allocation (keys never share memory). The keys of Append's hot path are
// built by typed appenders into a buffer sized in advance, one allocation
// per key, without boxing elements in interfaces; key() is for the others.
type keys struct {
	p []byte
	// The packed prefixes of the key spaces: (P, "i"), (P, "t"), (P, "r").
	indexSpace, threadSpace, refSpace []byte
}

func newKeys(prefix []byte) keys {
	p := append([]byte(nil), prefix...)
	k := keys{p: p[:len(p):len(p)]}
	k.indexSpace = k.key(spaceIndex)
	k.threadSpace = k.key(spaceThread)
	k.refSpace = k.key(spaceRefs)
	return k
}

func (k keys) key(elems ...any) []byte { return tuple.Append(k.p[:len(k.p):len(k.p)], elems...) }

// start returns a new buffer holding base with room for n more bytes.
func start(base []byte, n int) []byte {
	return append(make([]byte, 0, len(base)+n), base...)
}

// threadKey is (P, "t", thread, sub).
func (k keys) threadKey(thread, sub string, extra int) []byte {
	b := start(k.threadSpace, tuple.StringLen(thread)+tuple.StringLen(sub)+extra)
	return tuple.AppendString(tuple.AppendString(b, thread), sub)
}

func (k keys) index(id string) []byte {
	return tuple.AppendString(start(k.indexSpace, tuple.StringLen(id)), id)
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
func (k keys) op(ms int64, token string) []byte {
	return k.key(spaceOps, ms, token)
}

// dataPrefix is the packed prefix of every chunk of every checkpoint of
// the thread; List reads its range.
func (k keys) dataPrefix(thread string) []byte { return k.key(spaceThread, thread, threadData) }

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

func (k keys) linksPrefix(thread string) []byte { return k.key(spaceThread, thread, threadLinks) }
func (k keys) refsPrefix() []byte               { return start(k.refSpace, 0) }

// opsBefore is the range of every op marker written before ms.
func (k keys) opsBefore(ms int64) kv.KeyRange {
	return kv.KeyRange{Begin: k.key(spaceOps), End: k.key(spaceOps, ms)}
}

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
		return nil, fmt.Errorf("%w: key %x is outside %x", errCorrupt, key, p)
	}
	t, err := tuple.Unpack(key[len(p):])
	if err != nil {
		return nil, fmt.Errorf("%w: key %x: %v", errCorrupt, key, err)
	}
	return t, nil
}

// indexValue is the value at (P, "i", id): where the checkpoint's data is.
type indexValue struct {
	thread    string
	createdAt float64 // sortKey form
}

func (v indexValue) encode() []byte { return tuple.Pack(v.thread, v.createdAt) }

func decodeIndex(b []byte) (indexValue, error) {
	t, err := tuple.Unpack(b)
	if err == nil && len(t) == 2 {
		th, ok1 := t[0].(string)
		ca, ok2 := t[1].(float64)
		if ok1 && ok2 {
			return indexValue{thread: th, createdAt: ca}, nil
		}
	}
	return indexValue{}, fmt.Errorf("%w: index value %x", errCorrupt, b)
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
	return linkValue{}, fmt.Errorf("%w: link value %x", errCorrupt, b)
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
	return leaseValue{}, fmt.Errorf("%w: lease value %x", errCorrupt, b)
}
