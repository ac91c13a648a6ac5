package memstore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/internal/testkit"
	"github.com/ckptstore/ckptstore/memstore"
)

// List and ListPage copy a batch of checkpoints into shared backing arrays.
// Each copy must still be the caller's alone: writing into one, or
// appending to its slices, changes neither its neighbours nor the store.
func TestBatchCopiesShareNothingVisible(t *testing.T) {
	s := memstore.New(ckptstore.Options{})
	ctx := context.Background()
	l, err := s.AcquireWriter(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	var want []*ckptstore.Checkpoint
	head := ""
	for i := range 3 {
		c := &ckptstore.Checkpoint{ID: fmt.Sprint("c", i), ThreadID: "t", ParentCheckpointID: head, CreatedAt: float64(i),
			Reason: ckptstore.ReasonAutomatic, Conversation: []byte(fmt.Sprintf(`[{"n":%d}]`, i)),
			Files: []ckptstore.Entry{{Path: "d", Kind: ckptstore.KindDir},
				{Path: "d/f", Kind: ckptstore.KindFile, BlobKey: testkit.FileKey(i), Size: 1}},
			Artifacts: []ckptstore.Artifact{{ArtifactID: "a", Name: "a", MimeType: "text/plain", BlobKey: testkit.ArtifactKey(i), CreatedAt: 1}}}
		if err := s.Append(ctx, c, head, l.Writer); err != nil {
			t.Fatal(err)
		}
		want = append(want, c.Clone())
		head = c.ID
	}
	page, _, err := s.ListPage(ctx, "t", ckptstore.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	list, err := s.List(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	for name, got := range map[string][]*ckptstore.Checkpoint{"List": list, "ListPage": page} {
		if len(got) != len(want) {
			t.Fatalf("%s: %d checkpoints, want %d", name, len(got), len(want))
		}
		// Append to the first copy's slices, then overwrite it in place.
		first := got[0]
		first.Files = append(first.Files, ckptstore.Entry{Path: "x", Kind: ckptstore.KindDir})
		first.Artifacts = append(first.Artifacts, ckptstore.Artifact{ArtifactID: "x"})
		first.Conversation = append(first.Conversation, 'x')
		for i := range first.Files {
			first.Files[i].Path = "changed"
		}
		for i := range first.Artifacts {
			first.Artifacts[i].Name = "changed"
		}
		for i := range first.Conversation {
			first.Conversation[i] = ' '
		}
		for i, c := range got[1:] {
			if !driver.EqualCheckpoints(c, want[i+1]) {
				t.Errorf("%s: changing copy 0 changed copy %d: %+v, want %+v", name, i+1, c, want[i+1])
			}
		}
	}
	again, err := s.List(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range again {
		if !driver.EqualCheckpoints(c, want[i]) {
			t.Errorf("changing the copies changed stored checkpoint %d: %+v, want %+v", i, c, want[i])
		}
	}
}
