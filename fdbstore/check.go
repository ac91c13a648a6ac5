package fdbstore

// Check, the consistency checker: it reads the whole keyspace of a store
// and reports every broken invariant of the package doc. It is for tests
// and operators (ckptctl check), not for hot paths: it reads every key
// under the prefix, a page per transaction, and keeps the checkpoints'
// metadata in memory.

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/fdbstore/internal/tuple"
	"github.com/ckptstore/ckptstore/fdbstore/kv"
)

// Problem is one broken invariant: the key where it shows (printable, as
// %q) and what is wrong.
type Problem struct {
	Key  string
	What string
}

func (p Problem) String() string { return fmt.Sprintf("%q: %s", p.Key, p.What) }

// checkPage is how many keys one transaction of Check reads.
const checkPage = 10_000

// Check reads every key of the store and returns the broken invariants,
// sorted by key; none for a consistent store. It finds:
//
//   - a key of no kind this package writes, and an index or thread key
//     whose bucket is not its id's;
//   - an index whose checkpoint has no data under its thread, a copy
//     without an index, a copy that differs from the data, or copied = 1
//     without a copy;
//   - a checkpoint whose chunks are not numbered 0, 1, …, whose value does
//     not decode or names another id, thread or createdAt, or that has no
//     index, or an index or link naming another thread or createdAt;
//   - a link without its checkpoint, or whose parent, size or blob count
//     differ from the stored value;
//   - a lease or index value that does not decode;
//   - a transcript whose chunks are not numbered from 0 or that is not a
//     JSON array;
//   - a marker that does not decode, of another epoch than its time, or of
//     no kind of write; a global (old layout) marker unless legacyMarkers;
//   - a listed key for a thread with no head, checkpoint or transcript, or
//     a thread with one of them and no listed key;
//   - a blob count at 0 or below, one that differs from a recount of the
//     stored checkpoints, and a blob key in use without a count;
//   - an instance record that does not decode.
//
// Heads are not checked against checkpoints: the contract lets a head
// name a pruned checkpoint whose id was then reused. The store should be
// quiet while Check runs: a write between its pages can show as a problem
// that is not one.
func (s *Store) Check(ctx context.Context) ([]Problem, error) {
	c := &checker{s: s, index: map[string]*checkedIndex{}, threads: map[string]*checkedThread{},
		refs: map[string]int64{}, counted: map[string]int64{}, listed: map[string]bool{}}
	r := kv.PrefixRange(s.k.p)
	for {
		var page []kv.KeyValue
		err := s.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
			var err error
			page, err = tr.GetRange(r, kv.RangeOptions{Limit: checkPage}).Get()
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("fdbstore: check: %w", err)
		}
		for _, p := range page {
			c.key(p)
		}
		if len(page) < checkPage {
			break
		}
		r.Begin = append(append([]byte(nil), page[len(page)-1].Key...), 0x00)
	}
	c.crossCheck()
	slices.SortFunc(c.problems, func(a, b Problem) int {
		return strings.Compare(a.Key+"\x00"+a.What, b.Key+"\x00"+b.What)
	})
	return c.problems, nil
}

type checker struct {
	s        *Store
	problems []Problem
	index    map[string]*checkedIndex
	threads  map[string]*checkedThread
	refs     map[string]int64 // stored counts
	counted  map[string]int64 // recount from the stored checkpoints
	listed   map[string]bool
	// The checkpoint whose data chunks are being read.
	cur *checkedData
}

type checkedIndex struct {
	key     []byte
	v       indexValue
	ok      bool // the value decoded
	copy    [][]byte
	hasData bool
}

type checkedThread struct {
	head, transcript, data bool
	links                  map[string]linkValue
	linkKeys               map[string][]byte
	cps                    map[string]checkedCP
	transcriptChunks       [][]byte
	transcriptKey          []byte
}

type checkedCP struct {
	parent    string
	createdAt float64
	size      int64
	blobs     int64
	key       []byte
}

type checkedData struct {
	thread    string
	createdAt float64
	id        string
	key       []byte
	chunks    [][]byte
}

func (c *checker) bad(key []byte, format string, args ...any) {
	c.problems = append(c.problems, Problem{Key: string(key), What: fmt.Sprintf(format, args...)})
}

func (c *checker) thread(id string) *checkedThread {
	th := c.threads[id]
	if th == nil {
		th = &checkedThread{links: map[string]linkValue{}, linkKeys: map[string][]byte{}, cps: map[string]checkedCP{}}
		c.threads[id] = th
	}
	return th
}

// key files one key of the store.
func (c *checker) key(p kv.KeyValue) {
	t, err := tuple.Unpack(p.Key[len(c.s.k.p):])
	if err != nil || len(t) < 2 {
		c.bad(p.Key, "not a key of this package")
		return
	}
	space, _ := t[0].(string)
	switch space {
	case spaceIndex:
		c.indexKey(p, t[1:])
	case spaceThread:
		c.threadKey(p, t[1:])
	case spaceListed:
		if th, ok := elem[string](t[1:], 0, 1); ok && len(p.Value) == 0 {
			c.listed[th] = true
			return
		}
		c.bad(p.Key, "malformed listed key or value")
	case spaceRefs:
		key, ok := elem[string](t[1:], 0, 1)
		if !ok {
			c.bad(p.Key, "malformed reference key")
			return
		}
		c.refs[key] = kv.DecodeInt64(p.Value)
	case spaceOps:
		if !c.s.opts.legacyMarkers {
			c.bad(p.Key, "global op marker of the old layout")
		}
	case spaceInstance:
		key, ok := elem[string](t[1:], 0, 1)
		if !ok {
			c.bad(p.Key, "malformed instance key")
		} else if _, err := decodeInstance(key, p.Value); err != nil {
			c.bad(p.Key, "instance record: %v", err)
		}
	default:
		c.bad(p.Key, "not a key of this package")
	}
}

func (c *checker) indexKey(p kv.KeyValue, t tuple.Tuple) {
	if len(t) < 2 || len(t) > 3 {
		c.bad(p.Key, "malformed index key")
		return
	}
	b, ok1 := t[0].(int64)
	id, ok2 := t[1].(string)
	if !ok1 || !ok2 {
		c.bad(p.Key, "malformed index key")
		return
	}
	if b != bucket(id) {
		c.bad(p.Key, "bucket %d, want %d", b, bucket(id))
	}
	ix := c.index[id]
	if len(t) == 2 {
		ix = &checkedIndex{key: p.Key}
		c.index[id] = ix
		v, err := decodeIndex(p.Value)
		if err != nil {
			c.bad(p.Key, "index value: %v", err)
			return
		}
		ix.v, ix.ok = v, true
		return
	}
	n, ok := t[2].(int64)
	if !ok {
		c.bad(p.Key, "malformed copy key")
		return
	}
	if ix == nil || !bytes.HasPrefix(p.Key, ix.key) {
		c.bad(p.Key, "copy without an index")
		return
	}
	if n != int64(len(ix.copy)) {
		c.bad(p.Key, "copy chunk %d, want %d", n, len(ix.copy))
	}
	ix.copy = append(ix.copy, p.Value)
}

func (c *checker) threadKey(p kv.KeyValue, t tuple.Tuple) {
	if len(t) < 3 {
		c.bad(p.Key, "malformed thread key")
		return
	}
	b, ok1 := t[0].(int64)
	id, ok2 := t[1].(string)
	sub, ok3 := t[2].(string)
	if !ok1 || !ok2 || !ok3 {
		c.bad(p.Key, "malformed thread key")
		return
	}
	if b != bucket(id) {
		c.bad(p.Key, "bucket %d, want %d", b, bucket(id))
	}
	th := c.thread(id)
	rest := t[3:]
	if sub != threadData {
		c.endData()
	}
	switch sub {
	case threadHead:
		th.head = len(rest) == 0
	case threadLease:
		if _, err := decodeLease(p.Value); err != nil || len(rest) != 0 {
			c.bad(p.Key, "lease: %v", err)
		}
	case threadData:
		c.dataKey(p, id, rest)
	case threadLinks:
		cid, ok := elem[string](rest, 0, 1)
		l, err := decodeLink(p.Value)
		if !ok || err != nil {
			c.bad(p.Key, "malformed link: %v", err)
			return
		}
		th.links[cid], th.linkKeys[cid] = l, p.Key
	case threadTranscript:
		n, ok := elem[int64](rest, 0, 1)
		if !ok || n != int64(len(th.transcriptChunks)) {
			c.bad(p.Key, "transcript chunk out of sequence")
		}
		if th.transcriptKey == nil {
			th.transcriptKey = p.Key
		}
		th.transcriptChunks = append(th.transcriptChunks, p.Value)
	case threadOps:
		epoch, ok := elem[int64](rest, 0, 2)
		_, ok2 := elem[string](rest, 1, 2)
		ms, result, err := decodeMarker(p.Value)
		switch {
		case !ok || !ok2 || err != nil:
			c.bad(p.Key, "malformed marker: %v", err)
		case epoch != ms/markerTTL.Milliseconds():
			c.bad(p.Key, "marker of epoch %d written at %d ms", epoch, ms)
		case len(result) == 0 || !strings.ContainsRune(opKinds, rune(result[0])):
			c.bad(p.Key, "marker of no kind of write")
		}
	default:
		c.bad(p.Key, "not a key of this package")
	}
}

// dataKey adds one chunk of a checkpoint's data; a checkpoint is checked
// when its last chunk has been read.
func (c *checker) dataKey(p kv.KeyValue, thread string, rest tuple.Tuple) {
	ca, ok1 := elem[float64](rest, 0, 3)
	id, ok2 := elem[string](rest, 1, 3)
	n, ok3 := elem[int64](rest, 2, 3)
	if !ok1 || !ok2 || !ok3 {
		c.bad(p.Key, "malformed checkpoint key")
		return
	}
	if d := c.cur; d == nil || d.thread != thread || d.id != id || d.createdAt != ca {
		c.endData()
		c.cur = &checkedData{thread: thread, createdAt: ca, id: id, key: p.Key}
	}
	if n != int64(len(c.cur.chunks)) {
		c.bad(p.Key, "checkpoint chunk %d, want %d", n, len(c.cur.chunks))
	}
	c.cur.chunks = append(c.cur.chunks, p.Value)
}

// endData checks the checkpoint whose chunks were read last.
func (c *checker) endData() {
	d := c.cur
	if d == nil {
		return
	}
	c.cur = nil
	enc := bytes.Join(d.chunks, nil)
	cp, err := decodeCheckpoint(enc)
	if err != nil {
		c.bad(d.key, "checkpoint value: %v", err)
		return
	}
	if cp.ID != d.id || cp.ThreadID != d.thread || sortKey(cp.CreatedAt) != d.createdAt {
		c.bad(d.key, "the value holds checkpoint %q of thread %q at %v", cp.ID, cp.ThreadID, cp.CreatedAt)
	}
	th := c.thread(d.thread)
	th.data = true
	if _, dup := th.cps[d.id]; dup {
		c.bad(d.key, "checkpoint %q stored twice in its thread", d.id)
	}
	blobs := cp.BlobKeys()
	th.cps[d.id] = checkedCP{parent: cp.ParentCheckpointID, createdAt: d.createdAt, size: int64(len(enc)), blobs: int64(len(blobs)), key: d.key}
	for _, b := range blobs {
		c.counted[b]++
	}
	ix := c.index[d.id]
	switch {
	case ix == nil:
		c.bad(d.key, "checkpoint %q has no index", d.id)
	case !ix.ok:
	case ix.v.thread != d.thread || ix.v.createdAt != d.createdAt:
		c.bad(d.key, "the index of %q names thread %q at %v", d.id, ix.v.thread, ix.v.createdAt)
	default:
		ix.hasData = true
		if ix.v.copied && !bytes.Equal(bytes.Join(ix.copy, nil), enc) {
			c.bad(ix.key, "the copy of %q differs from its data", d.id)
		}
	}
}

// crossCheck checks what needs every key read.
func (c *checker) crossCheck() {
	c.endData()
	for id, ix := range c.index {
		if !ix.ok {
			continue
		}
		if !ix.hasData {
			c.bad(ix.key, "index of %q without data in thread %q", id, ix.v.thread)
		}
		if ix.v.copied != (len(ix.copy) > 0) {
			c.bad(ix.key, "copied = %v with %d copy chunks", ix.v.copied, len(ix.copy))
		}
	}
	for _, id := range slices.Sorted(maps.Keys(c.threads)) {
		th := c.threads[id]
		for cid, l := range th.links {
			cp, ok := th.cps[cid]
			if !ok {
				c.bad(th.linkKeys[cid], "link of %q without its checkpoint", cid)
				continue
			}
			if l.parent != cp.parent || l.createdAt != cp.createdAt || l.size != cp.size || l.blobs != cp.blobs {
				c.bad(th.linkKeys[cid], "link %+v, checkpoint has parent %q, createdAt %v, size %d, %d blobs", l, cp.parent, cp.createdAt, cp.size, cp.blobs)
			}
		}
		for cid, cp := range th.cps {
			if _, ok := th.links[cid]; !ok {
				c.bad(cp.key, "checkpoint %q has no link", cid)
			}
		}
		if len(th.transcriptChunks) > 0 {
			th.transcript = true
			if err := ckptstore.ValidateTranscript(bytes.Join(th.transcriptChunks, nil)); err != nil {
				c.bad(th.transcriptKey, "transcript: %v", err)
			}
		}
		nonEmpty := th.head || th.data || th.transcript
		if nonEmpty != c.listed[id] {
			c.bad(c.s.k.listed(id), "listed = %v for a thread with head %v, checkpoints %v, transcript %v", c.listed[id], th.head, th.data, th.transcript)
		}
	}
	for id := range c.listed {
		if _, ok := c.threads[id]; !ok {
			c.bad(c.s.k.listed(id), "listed thread %q has no keys", id)
		}
	}
	for key, n := range c.refs {
		if n <= 0 {
			c.bad(c.s.k.ref(key), "count %d", n)
		} else if n != c.counted[key] {
			c.bad(c.s.k.ref(key), "count %d, %d stored checkpoints use it", n, c.counted[key])
		}
	}
	for key, n := range c.counted {
		if _, ok := c.refs[key]; !ok {
			c.bad(c.s.k.ref(key), "no count, %d stored checkpoints use it", n)
		}
	}
}
