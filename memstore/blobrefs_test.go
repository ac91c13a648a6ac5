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
	var stored []*ckptstore.Checkpoint
	merges := 0
	for step := range 30_000 {
		if len(stored) > 0 && r.IntN(3) == 0 {
			i := r.IntN(len(stored))
			c := stored[i]
			stored = slices.Delete(stored, i, i+1)
			refs.drop(mustPack(t, c))
			for _, k := range c.BlobKeys() {
				if want[k]--; want[k] == 0 {
					delete(want, k)
				}
			}
		} else {
			k1, k2 := testkit.FileKey(r.IntN(200_000)), testkit.ArtifactKey(r.IntN(50))
			c := &ckptstore.Checkpoint{
				Files: []ckptstore.Entry{{Path: "a", Kind: ckptstore.KindFile, BlobKey: k1},
					{Path: "b", Kind: ckptstore.KindFile, BlobKey: k1}, {Path: "d", Kind: ckptstore.KindDir}},
				Artifacts: []ckptstore.Artifact{{BlobKey: k2}},
			}
			stored = append(stored, c)
			before := len(refs.pending)
			refs.add(c)
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
		refs.drop(mustPack(t, c))
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
