package memstore

// Blob counts, kept in key order as they change, so BlobReferences reads
// them in order instead of sorting every key on each call.

import (
	"github.com/ckptstore/ckptstore"
	"github.com/google/btree"
)

// blobRef is the count of one blob key. The same value is in blobRefs.byKey,
// where Append finds it in O(1), and in blobRefs.ordered, which only
// changes when a key appears or goes; most appends share their keys with
// the parent and touch no tree.
type blobRef struct {
	n int64
	// seen is the last change that counted this key: a checkpoint names a
	// key once however many of its entries hold it, so a change skips a
	// key it has seen (instead of sorting the checkpoint's keys to dedupe).
	seen uint64
}

// blobRefs holds the count of every key referenced by a stored checkpoint.
// The caller holds Store.mu.
type blobRefs struct {
	byKey   map[string]*blobRef
	ordered *btree.BTreeG[refItem] // the values of byKey, by key bytes
	change  uint64                 // numbers the changes, for blobRef.seen
}

// refItem is an entry of blobRefs.ordered. It holds the key itself, not
// only the blobRef, so that the tree's comparisons read the key in place
// instead of chasing a pointer first.
type refItem struct {
	key string
	ref *blobRef
}

func newBlobRefs() blobRefs {
	return blobRefs{
		byKey:   make(map[string]*blobRef),
		ordered: btree.NewG(btreeDegree, func(a, b refItem) bool { return a.key < b.key }),
	}
}

// add counts one more reference to each distinct blob key of c (the keys
// of ckptstore.Checkpoint.BlobKeys).
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
}

func (r *blobRefs) inc(k string) {
	b := r.byKey[k]
	if b == nil {
		b = &blobRef{}
		r.byKey[k] = b
		r.ordered.ReplaceOrInsert(refItem{k, b})
	}
	if b.seen != r.change {
		b.seen = r.change
		b.n++
	}
}

// drop removes one reference to each distinct blob key of c, and forgets
// the keys that reach 0.
func (r *blobRefs) drop(c *ckptstore.Checkpoint) {
	r.change++
	for i := range c.Files {
		if e := &c.Files[i]; e.Kind == ckptstore.KindFile {
			r.dec(e.BlobKey)
		}
	}
	for i := range c.Artifacts {
		r.dec(c.Artifacts[i].BlobKey)
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
		r.ordered.Delete(refItem{key: k})
	}
}

// list returns every count in key byte order.
func (r *blobRefs) list() []ckptstore.BlobRef {
	out := make([]ckptstore.BlobRef, 0, r.ordered.Len())
	r.ordered.Ascend(func(it refItem) bool {
		out = append(out, ckptstore.BlobRef{Key: it.key, References: it.ref.n})
		return true
	})
	return out
}
