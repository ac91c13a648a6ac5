package memstore

// Blob counts, kept in key order as keys come and go, so ListBlobReferences
// reads them in order instead of sorting every key on each call.

import (
	"slices"
	"strings"

	"github.com/ckptstore/ckptstore"
)

// blobRef is the count of one blob key, in slot blobRefs.slots[i] where
// blobRefs.byKey[key] = i.
type blobRef struct {
	n int64
	// seen is the last change that counted this key: a checkpoint names a
	// key once however many of its entries hold it, so a change skips a
	// key it has seen (instead of sorting the checkpoint's keys to dedupe).
	seen uint64
}

// slot numbers a blobRef in blobRefs.slots. Slot 0 is never used, so the
// zero slot of a fileRec says "none" (a directory). Counts are slots, not
// pointers, so that a stored file entry holds no pointer for the collector
// to follow: a pointer in each fileRec cost a 10,000-checkpoint List 8 %.
type slot uint32

// mergeSlack is how many keys may wait in blobRefs.pending, or be dead, on
// top of a quarter of the sorted keys, before a write merges them.
const mergeSlack = 4096

// blobRefs holds the count of every key referenced by a stored checkpoint,
// and the keys in byte order as a sorted run plus the keys added since it
// was made. A new key is appended to pending (no tree descent on the write
// path: that was an eighth of a 2 KB Append's time); ListBlobReferences sorts
// pending alone and merges it into the run, O(n + p log p) for p new keys,
// and so does a write once pending or the dead items outgrow mergeSlack
// plus a quarter of the run, which bounds the memory and the read's sort
// (a write then pays one merge, amortized O(log p) per key added).
//
// An item whose count is 0 is dead: its key went to 0 and left byKey (a
// key that comes back gets a new slot and a new item). Each slot has one
// item, so a merge that drops a dead item frees its slot for reuse, and no
// slot is reused before: a dead item never sees another key's count. The
// caller holds Driver.mu.
type blobRefs struct {
	byKey   map[string]slot
	slots   []blobRef // slots[0] unused
	free    []slot    // slots whose dead items a merge dropped
	sorted  []refItem // by key bytes, each live key at most once; may hold dead items
	pending []refItem // keys added since the last merge, in no order; may hold dead items
	dead    int       // dead items in sorted and pending
	change  uint64    // numbers the changes, for blobRef.seen
}

// refItem is one key of blobRefs.sorted or pending, with its count's slot.
type refItem struct {
	key string
	at  slot
}

func newBlobRefs() blobRefs {
	return blobRefs{byKey: make(map[string]slot), slots: make([]blobRef, 1)}
}

// add counts one more reference to each distinct blob key of r, stored
// from c (the keys of ckptstore.Checkpoint.BlobKeys), and sets the count
// of each of r's file entries (fileRec.ref), which drop uses. like is a
// stored checkpoint that r's files likely share keys with, index for index
// (r's parent, a fork's source), or nil: a file whose key is like's at the
// same index takes like's count without a lookup by key, which was most
// of add's time (a harness's file mostly keeps its parent's key). A count
// of a stored checkpoint is live, so like's are.
//
// A key it did not count yet is kept as c holds it: c is the caller's
// checkpoint that r was packed from, whose artifact keys are not
// substrings of r's whole text, which a kept key would keep alive for as
// long as it is counted.
func (r *blobRefs) add(rc *rec, c *ckptstore.Checkpoint, like *rec) {
	r.change++
	for i := range rc.files {
		f := &rc.files[i]
		if f.kindCode != kindFile {
			continue
		}
		// A directory's key is "" and a file's never is: equal keys are
		// two files, and like's has a count.
		if like != nil && i < len(like.files) && like.files[i].key == f.key {
			f.ref = like.files[i].ref
		} else {
			f.ref = r.ref(f.key)
		}
		r.count(f.ref)
	}
	for i := range c.Artifacts {
		r.count(r.ref(c.Artifacts[i].BlobKey))
	}
	if len(r.pending) > mergeSlack+len(r.sorted)/4 {
		r.merge()
	}
}

// ref returns the slot of k's count, a new one at 0 when k has none.
func (r *blobRefs) ref(k string) slot {
	at, ok := r.byKey[k]
	if !ok {
		if n := len(r.free); n > 0 {
			at, r.free = r.free[n-1], r.free[:n-1]
			r.slots[at] = blobRef{}
		} else {
			at = slot(len(r.slots))
			r.slots = append(r.slots, blobRef{})
		}
		r.byKey[k] = at
		r.pending = append(r.pending, refItem{k, at})
	}
	return at
}

// count adds one to the count at, once per change.
func (r *blobRefs) count(at slot) {
	if b := &r.slots[at]; b.seen != r.change {
		b.seen = r.change
		b.n++
	}
}

// drop removes one reference to each distinct blob key of the stored
// checkpoint c, and forgets the keys that reach 0. Its files' counts are
// their fileRec.ref, set by add; its artifacts' are found by key.
func (r *blobRefs) drop(c *rec) {
	r.change++
	for i := range c.files {
		if f := &c.files[i]; f.ref != 0 {
			r.release(f.key, f.ref)
		}
	}
	for i := range c.arts {
		k := c.str(c.arts[i].key)
		if at, ok := r.byKey[k]; ok { // not ok only when this change already took it to 0
			r.release(k, at)
		}
	}
	if r.dead > mergeSlack+len(r.sorted)/4 {
		r.merge()
	}
}

// release takes one from the count at, k's, once per change.
func (r *blobRefs) release(k string, at slot) {
	b := &r.slots[at]
	if b.seen == r.change {
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
		if r.slots[it.at].n > 0 {
			out = append(out, it)
		} else {
			r.free = append(r.free, it.at) // its one item is gone
		}
	}
	clear(r.pending) // drop the keys of dead items
	r.sorted, r.pending, r.dead = out, r.pending[:0], 0
}

// list returns every count in key byte order.
func (r *blobRefs) list() []ckptstore.BlobRef {
	if len(r.pending) > 0 || r.dead > 0 {
		r.merge()
	}
	out := make([]ckptstore.BlobRef, len(r.sorted))
	for i, it := range r.sorted {
		out[i] = ckptstore.BlobRef{Key: it.key, References: r.slots[it.at].n}
	}
	return out
}
