package memstore

import (
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

// blobRefs against a recount, through enough keys that writes merge
// (pending and dead items past mergeSlack) and not only reads: keys come,
// go to 0, come back, and appear twice in one checkpoint.
func TestBlobRefsMerges(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	refs := newBlobRefs()
	want := map[string]int64{}
	type storedRec struct {
		c *ckptstore.Checkpoint
		r *rec
	}
	var stored []storedRec
	merges := 0
	for step := range 30_000 {
		if len(stored) > 0 && r.IntN(3) == 0 {
			i := r.IntN(len(stored))
			c := stored[i]
			stored = slices.Delete(stored, i, i+1)
			refs.drop(c.r)
			for _, k := range c.c.BlobKeys() {
				if want[k]--; want[k] == 0 {
					delete(want, k)
				}
			}
		} else {
			// like is a stored checkpoint, or nil: its keys are taken
			// by index when they match, as an Append's parent's are.
			var like *rec
			if len(stored) > 0 && r.IntN(2) == 0 {
				like = stored[r.IntN(len(stored))].r
			}
			k1, k2 := testkit.FileKey(r.IntN(200_000)), testkit.ArtifactKey(r.IntN(50))
			if like != nil && r.IntN(2) == 0 {
				k1 = like.files[0].key // the same string, as a harness's file keeps its parent's
			}
			c := &ckptstore.Checkpoint{
				Files: []ckptstore.Entry{{Path: "a", Kind: ckptstore.KindFile, BlobKey: k1},
					{Path: "b", Kind: ckptstore.KindFile, BlobKey: k1}, {Path: "d", Kind: ckptstore.KindDir}},
				Artifacts: []ckptstore.Artifact{{BlobKey: k2}},
			}
			rc := mustPack(t, c)
			stored = append(stored, storedRec{c, rc})
			before := len(refs.pending)
			refs.add(rc, c, like)
			if len(refs.pending) < before {
				merges++
			}
			for _, k := range c.BlobKeys() {
				want[k]++
			}
		}
		if step == 1000 || step == 20_000 || step == 29_999 {
			got := refs.list()
			keys := slices.Sorted(maps.Keys(want))
			if len(got) != len(keys) {
				t.Fatalf("step %d: %d keys, want %d", step, len(got), len(keys))
			}
			for i, k := range keys {
				if got[i].Key != k || got[i].References != want[k] {
					t.Fatalf("step %d: key %d is %s ×%d, want %s ×%d", step, i, got[i].Key, got[i].References, k, want[k])
				}
			}
		}
	}
	// Only drops since the last read: the read must still see them.
	for _, c := range stored {
		refs.drop(c.r)
	}
	if got := refs.list(); len(got) != 0 {
		t.Errorf("after every checkpoint was dropped: %d keys listed, want 0 (first %+v)", len(got), got[0])
	}
	if merges == 0 {
		t.Errorf("no write merged pending keys: the test does not reach the write-path merge")
	}
	if n := len(refs.sorted) + len(refs.pending); n > 2*len(want)+2*mergeSlack {
		t.Errorf("%d items held for %d live keys: dead items are not dropped", n, len(want))
	}
}

func mustPack(t *testing.T, c *ckptstore.Checkpoint) *rec {
	t.Helper()
	r, err := pack(c)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A key that went to 0 frees its slot once a merge dropped its item, and
// not before: the next new key takes the slot over, with its own count.
func TestBlobRefsReusesSlots(t *testing.T) {
	refs := newBlobRefs()
	one := func(k string) (*ckptstore.Checkpoint, *rec) {
		c := &ckptstore.Checkpoint{Files: []ckptstore.Entry{{Path: "a", Kind: ckptstore.KindFile, BlobKey: k}}}
		r := mustPack(t, c)
		refs.add(r, c, nil)
		return c, r
	}
	_, a := one(testkit.FileKey(1))
	refs.drop(a)
	_, b := one(testkit.FileKey(2)) // before a merge: a's slot is not free yet
	if a.files[0].ref == b.files[0].ref {
		t.Fatalf("a new key took slot %d of a dead key whose item was not dropped yet", b.files[0].ref)
	}
	refs.list() // merges: a's item and slot go
	_, c := one(testkit.FileKey(3))
	if c.files[0].ref != a.files[0].ref {
		t.Errorf("new key in slot %d, want the freed slot %d (%d slots)", c.files[0].ref, a.files[0].ref, len(refs.slots))
	}
	got := refs.list()
	want := []ckptstore.BlobRef{{Key: testkit.FileKey(2), References: 1}, {Key: testkit.FileKey(3), References: 1}}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("counts %+v, want %+v", got, want)
	}
}
