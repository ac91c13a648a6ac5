package memstore

import (
	"context"
	"reflect"
	"testing"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

// A packed checkpoint unpacks to what it was packed from, field for field,
// one at a time (Clone) and in a batch (cloneAll): nil and empty slices
// stay as they were, and so do kinds and reasons outside the contract's
// (which validation refuses before pack, but pack keeps all the same).
func TestPackRoundTrip(t *testing.T) {
	full := &ckptstore.Checkpoint{ID: "c1", ThreadID: "t", ParentCheckpointID: "c0", CreatedAt: -0.5,
		Reason: ckptstore.ReasonNamed, Label: "v1 ✓", SourceRunID: "run-1",
		Files: []ckptstore.Entry{{Path: "d", Kind: ckptstore.KindDir},
			{Path: "d/f", Kind: ckptstore.KindFile, BlobKey: testkit.FileKey(1), Size: 7},
			{Path: "d/odd", Kind: "symlink", BlobKey: testkit.FileKey(2), Size: 1}},
		Conversation: []byte(`[{"role":"user","content":"hi"}]`),
		Artifacts: []ckptstore.Artifact{{ArtifactID: "a", Name: "r.md", MimeType: "text/markdown", Size: 3,
			BlobKey: testkit.ArtifactKey(1), CreatedAt: 2}}}
	cps := []*ckptstore.Checkpoint{
		full,
		{ID: "c2", ThreadID: "t", CreatedAt: 1, Reason: ckptstore.ReasonForkRoot}, // nil slices
		{ID: "c3", ThreadID: "t", CreatedAt: 2, Reason: ckptstore.ReasonAutomatic,
			Files: []ckptstore.Entry{}, Conversation: []byte{}, Artifacts: []ckptstore.Artifact{}}, // empty, not nil
		{ID: "c4", ThreadID: "t", CreatedAt: 3, Reason: "other"},
	}
	var recs []*rec
	for _, c := range cps {
		r, err := pack(c)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	batch := cloneAll(recs)
	for i, c := range cps {
		for name, got := range map[string]*ckptstore.Checkpoint{"Clone": recs[i].Clone(), "cloneAll": batch[i]} {
			if !reflect.DeepEqual(got, c) { // DeepEqual tells nil from empty
				t.Errorf("%s of checkpoint %d: %+v, want %+v", name, i, got, c)
			}
		}
	}
	if (*rec)(nil).Clone() != nil {
		t.Error("Clone of a nil rec is not nil")
	}
}

// pack copies what a caller may change in place: the conversation and the
// entry and artifact arrays (the strings are immutable, and shared).
func TestPackCopies(t *testing.T) {
	c := &ckptstore.Checkpoint{ID: "c", ThreadID: "t", CreatedAt: 1, Reason: ckptstore.ReasonAutomatic,
		Files:        []ckptstore.Entry{{Path: "f", Kind: ckptstore.KindFile, BlobKey: testkit.FileKey(1), Size: 1}},
		Conversation: []byte(`[1]`),
		Artifacts:    []ckptstore.Artifact{{ArtifactID: "a", Name: "n", MimeType: "m", BlobKey: testkit.ArtifactKey(1)}}}
	want := c.Clone()
	r, err := pack(c)
	if err != nil {
		t.Fatal(err)
	}
	c.Files[0].Path, c.Files[0].BlobKey, c.Files[0].Size = "g", testkit.FileKey(2), 2
	c.Artifacts[0].Name = "changed"
	c.Conversation[1] = '2'
	if got := r.Clone(); !driver.EqualCheckpoints(got, want) {
		t.Errorf("changing the packed checkpoint changed the rec: %+v, want %+v", got, want)
	}
}

// A fork returns the root as the caller's own, and so does a repeat of
// the fork by its op token: changing either changes no stored checkpoint,
// not the destination's transcript, and not the other.
func TestForkRootIsACopy(t *testing.T) {
	s := New(ckptstore.Options{})
	ctx := context.Background()
	src, err := s.AcquireWriter(ctx, "src")
	if err != nil {
		t.Fatal(err)
	}
	c := &ckptstore.Checkpoint{ID: "s1", ThreadID: "src", CreatedAt: 1, Reason: ckptstore.ReasonAutomatic,
		Files:        []ckptstore.Entry{{Path: "f", Kind: ckptstore.KindFile, BlobKey: testkit.FileKey(1), Size: 1}},
		Conversation: []byte(`[1]`)}
	if err := s.Append(ctx, c, "", src.Writer); err != nil {
		t.Fatal(err)
	}
	dst, err := s.AcquireWriter(ctx, "dst")
	if err != nil {
		t.Fatal(err)
	}
	in := ckptstore.ForkInput{SourceThreadID: "src", SourceCheckpointID: "s1", DestinationThreadID: "dst",
		DestinationCheckpointID: "d1", CreatedAt: 2, Writer: dst.Writer}
	tctx := ckptstore.WithOpToken(ctx, "fork-1")
	root, err := s.ForkFromCheckpoint(tctx, in)
	if err != nil {
		t.Fatal(err)
	}
	want := root.Clone()
	root.Files[0].Path, root.Conversation[1] = "changed", '9'
	again, err := s.ForkFromCheckpoint(tctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if !driver.EqualCheckpoints(again, want) {
		t.Errorf("repeated fork after changing the first root: %+v, want %+v", again, want)
	}
	again.Files[0].Path, again.Conversation[1] = "changed", '9'
	stored, err := s.Get(ctx, "d1")
	if err != nil {
		t.Fatal(err)
	}
	if !driver.EqualCheckpoints(stored, want) {
		t.Errorf("changing the returned roots changed the stored root: %+v, want %+v", stored, want)
	}
	if got, err := s.Get(ctx, "s1"); err != nil || !driver.EqualCheckpoints(got, c) {
		t.Errorf("source after the fork: %+v, %v; want %+v", got, err, c)
	}
	// The destination's transcript is the root's conversation, copied: the
	// caller's root is not the store's.
	if got, err := s.LoadThread(ctx, "dst"); err != nil || string(got) != string(want.Conversation) {
		t.Errorf("destination transcript after changing the returned roots: %s, %v; want %s", got, err, want.Conversation)
	}
}
