package memstore

// Blob counts, kept in key order as keys come and go, so BlobReferences
// reads them in order instead of sorting every key on each call.

import (
	"slices"
	"strings"

	"github.com/ckptstore/ckptstore"
)

// blobRef is the count of one blob key, found by key in blobRefs.byKey in
// O(1): most appends share their keys with the parent and only count.
type blobRef struct {
	n int64
	// seen is the last change that counted this key: a checkpoint names a
	// key once however many of its entries hold it, so a change skips a
	// key it has seen (instead of sorting the checkpoint's keys to dedupe).
	seen uint64
}

// mergeSlack is how many keys may wait in blobRefs.pending, or be dead, on
// top of a quarter of the sorted keys, before a write merges them.
const mergeSlack = 4096

// blobRefs holds the count of every key referenced by a stored checkpoint,
// and the keys in byte order as a sorted run plus the keys added since it
// was made. A new key is appended to pending (no tree descent on the write
// path: that was an eighth of a 2 KB Append's time); BlobReferences sorts
// pending alone and merges it into the run, O(n + p log p) for p new keys,
// and so does a write once pending or the dead items outgrow mergeSlack
// plus a quarter of the run, which bounds the memory and the read's sort
// (a write then pays one merge, amortized O(log p) per key added).
//
// An item whose blobRef count is 0 is dead: its key went to 0 and left
// byKey (a key that comes back gets a new blobRef and a new item). Merges
// drop dead items. The caller holds Store.mu.
type blobRefs struct {
	byKey   map[string]*blobRef
	sorted  []refItem // by key bytes, each live key at most once; may hold dead items
	pending []refItem // keys added since the last merge, in no order; may hold dead items
	dead    int       // dead items in sorted and pending
	change  uint64    // numbers the changes, for blobRef.seen
}

// refItem is one key of blobRefs.sorted or pending, with its count.
type refItem struct {
	key string
	ref *blobRef
}

func newBlobRefs() blobRefs {
	return blobRefs{byKey: make(map[string]*blobRef)}
}

// add counts one more reference to each distinct blob key of c (the keys
// of ckptstore.Checkpoint.BlobKeys). A key it did not count yet is kept as
// c holds it: c is the caller's checkpoint that the stored one was packed
// from, not the stored one, whose keys are substrings of its whole text and
// would keep that alive for as long as the key is counted.
func (r *blobRefs) add(c *ckptstore.Checkpoint) {
	r.change++
	for i := range c.Files {
		if e := &c.Files[i]; e.Kind == ckptstore.KindFile {
			r.inc(e.BlobKey)
		}
	}
	for i := range c.Artifacts {
		r.inc(c.Artifacts[i].BlobKey)
	}
	if len(r.pending) > mergeSlack+len(r.sorted)/4 {
		r.merge()
	}
}

func (r *blobRefs) inc(k string) {
	b := r.byKey[k]
	if b == nil {
		b = &blobRef{}
		r.byKey[k] = b
		r.pending = append(r.pending, refItem{k, b})
	}
	if b.seen != r.change {
		b.seen = r.change
		b.n++
	}
}

// drop removes one reference to each distinct blob key of the stored
// checkpoint c, and forgets the keys that reach 0.
func (r *blobRefs) drop(c *rec) {
	r.change++
	c.blobKeys(r.dec)
	if r.dead > mergeSlack+len(r.sorted)/4 {
		r.merge()
	}
}

func (r *blobRefs) dec(k string) {
	b := r.byKey[k] // nil only when this change already took it to 0
	if b == nil || b.seen == r.change {
		return
	}
	b.seen = r.change
	if b.n--; b.n == 0 {
		delete(r.byKey, k)
		r.dead++
	}
}

// merge sorts pending into sorted and drops the dead items of both.
func (r *blobRefs) merge() {
	slices.SortFunc(r.pending, func(a, b refItem) int { return strings.Compare(a.key, b.key) })
	out := make([]refItem, 0, len(r.byKey))
	s, p := r.sorted, r.pending
	for len(s) > 0 || len(p) > 0 {
		var it refItem
		if len(p) == 0 || len(s) > 0 && s[0].key < p[0].key {
			it, s = s[0], s[1:]
		} else {
			it, p = p[0], p[1:]
		}
		if it.ref.n > 0 {
			out = append(out, it)
		}
	}
	clear(r.pending) // drop the dead refs it points to
	r.sorted, r.pending, r.dead = out, r.pending[:0], 0
}

// list returns every count in key byte order.
func (r *blobRefs) list() []ckptstore.BlobRef {
	if len(r.pending) > 0 || r.dead > 0 {
		r.merge()
	}
	out := make([]ckptstore.BlobRef, len(r.sorted))
	for i, it := range r.sorted {
		out[i] = ckptstore.BlobRef{Key: it.key, References: it.ref.n}
	}
	return out
}
