package driver_test

import (
	"math"
	"slices"
	"testing"

	"github.com/ckptstore/ckptstore/driver"
)

func TestCheckpointClone(t *testing.T) {
	if (*driver.Checkpoint)(nil).Clone() != nil {
		t.Fatal("Clone of nil is not nil")
	}
	orig := validCheckpoint()
	want := marshalDirect(t, orig)
	c := orig.Clone()
	if got := marshalDirect(t, c); got != want {
		t.Fatalf("Clone differs:\n%s\n%s", got, want)
	}
	// Writing through every reference field of the clone leaves the
	// original alone.
	c.Files[0].Path = "changed"
	c.Files = append(c.Files, driver.Entry{Path: "new", Kind: driver.KindDir})
	c.Artifacts[0].Name = "changed"
	c.Conversation[1] = ' '
	c.ID = "changed"
	if got := marshalDirect(t, orig); got != want {
		t.Fatalf("changing the clone changed the original:\n%s", got)
	}
	// And the other way round.
	c = orig.Clone()
	orig.Files[1].Size = 999
	orig.Conversation[0] = ' '
	orig.Artifacts[0].Size = 1
	if c.Files[1].Size != 120 || c.Conversation[0] != '[' || c.Artifacts[0].Size != 2048 {
		t.Fatal("changing the original changed the clone")
	}
}

func TestCheckpointCloneKeepsNilAndEmpty(t *testing.T) {
	c := (&driver.Checkpoint{ID: "c"}).Clone()
	if c.Files != nil || c.Artifacts != nil || c.Conversation != nil {
		t.Fatalf("Clone turned nil fields into empty ones: %+v", c)
	}
	// Appending to a clone of a checkpoint whose slices have spare capacity
	// must not write into the original's backing array.
	files := make([]driver.Entry, 1, 4)
	files[0] = driver.Entry{Path: "a", Kind: driver.KindDir}
	orig := &driver.Checkpoint{Files: files}
	c = orig.Clone()
	c.Files = append(c.Files, driver.Entry{Path: "b", Kind: driver.KindDir})
	if got := files[:2][1].Path; got == "b" {
		t.Fatal("append to the clone wrote into the original's array")
	}
}

func TestInstanceRecordClone(t *testing.T) {
	if (*driver.InstanceRecord)(nil).Clone() != nil {
		t.Fatal("Clone of nil is not nil")
	}
	r := &driver.InstanceRecord{Key: "k", Provider: "p", LatestRunID: "r", UpdatedAt: 3}
	c := r.Clone()
	if *c != *r || c == r {
		t.Fatalf("Clone = %p %+v, want an equal copy of %p", c, c, r)
	}
	c.Key = "other"
	if r.Key != "k" {
		t.Fatal("changing the clone changed the original")
	}
}

func TestBlobKeys(t *testing.T) {
	cp := &driver.Checkpoint{
		Files: []driver.Entry{
			{Path: "z", Kind: driver.KindFile, BlobKey: fileKey(3)},
			{Path: "d", Kind: driver.KindDir},
			{Path: "a", Kind: driver.KindFile, BlobKey: fileKey(1)},
			{Path: "b", Kind: driver.KindFile, BlobKey: fileKey(3)}, // same bytes twice: counted once
		},
		Artifacts: []driver.Artifact{
			{ArtifactID: "x", BlobKey: artifactKey(2)},
			{ArtifactID: "y", BlobKey: artifactKey(2)},
		},
	}
	want := []string{artifactKey(2), fileKey(1), fileKey(3)} // sorted by bytes: "sandbox-a…" < "sandbox-f…"
	if got := cp.BlobKeys(); !slices.Equal(got, want) {
		t.Fatalf("BlobKeys = %q, want %q", got, want)
	}
	// A directory contributes nothing, even with a stray BlobKey.
	dirs := &driver.Checkpoint{Files: []driver.Entry{{Path: "d", Kind: driver.KindDir, BlobKey: fileKey(1)}}}
	if got := dirs.BlobKeys(); len(got) != 0 {
		t.Fatalf("BlobKeys of directories only = %q, want none", got)
	}
	if got := (&driver.Checkpoint{}).BlobKeys(); len(got) != 0 {
		t.Fatalf("BlobKeys of an empty checkpoint = %q", got)
	}
	// A file and an artifact with the same key (invalid, but BlobKeys
	// must still count it once).
	same := &driver.Checkpoint{Files: []driver.Entry{{Path: "f", Kind: driver.KindFile, BlobKey: "k"}},
		Artifacts: []driver.Artifact{{BlobKey: "k"}}}
	if got := same.BlobKeys(); !slices.Equal(got, []string{"k"}) {
		t.Fatalf("BlobKeys = %q, want [k]", got)
	}
	// BlobKeys does not reorder the checkpoint's own slices.
	if cp.Files[0].Path != "z" || cp.Artifacts[1].ArtifactID != "y" {
		t.Fatal("BlobKeys changed the checkpoint")
	}
}

func TestCompareCheckpoints(t *testing.T) {
	cp := func(id string, at float64) *driver.Checkpoint { return &driver.Checkpoint{ID: id, CreatedAt: at} }
	// In List order: createdAt first, then the id's bytes (not runes, not
	// case-folded: "B" < "a" < "é", and "a" < "a\x00").
	ordered := []*driver.Checkpoint{
		cp("z", -1e300), cp("z", -1.5), cp("a", 0), cp("b", 0), cp("B", 1), cp("a", 1), cp("a\x00", 1), cp("é", 1), cp("\uFFFD", 1),
		cp("a", 1.0000000000000002), cp("a", math.MaxFloat64),
	}
	for i, a := range ordered {
		for j, b := range ordered {
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := driver.CompareCheckpoints(a, b); got != want {
				t.Errorf("Compare(%q@%v, %q@%v) = %d, want %d", a.ID, a.CreatedAt, b.ID, b.CreatedAt, got, want)
			}
		}
	}
	shuffled := slices.Clone(ordered)
	slices.Reverse(shuffled)
	slices.SortFunc(shuffled, driver.CompareCheckpoints)
	if !slices.Equal(shuffled, ordered) {
		t.Fatal("sorting with CompareCheckpoints does not give List order")
	}
	// -0 and +0 are the same time; the id decides.
	if got := driver.CompareCheckpoints(cp("b", math.Copysign(0, -1)), cp("a", 0)); got != 1 {
		t.Fatalf("Compare(b@-0, a@0) = %d, want 1", got)
	}
}

func TestForkRoot(t *testing.T) {
	src := validCheckpoint()
	srcJSON := marshalDirect(t, src)
	in := driver.ForkInput{
		SourceThreadID: src.ThreadID, SourceCheckpointID: src.ID,
		DestinationThreadID: "thread-2", DestinationCheckpointID: "root-1", CreatedAt: 42.5,
		Writer: driver.Writer{ThreadID: "thread-2", OwnerToken: "tok", Fence: 3},
	}
	root := driver.ForkRoot(src, in)
	want := &driver.Checkpoint{ID: "root-1", ThreadID: "thread-2", CreatedAt: 42.5, Reason: driver.ReasonForkRoot,
		Files: src.Files, Conversation: src.Conversation, Artifacts: src.Artifacts}
	if got, w := marshalDirect(t, root), marshalDirect(t, want); got != w {
		t.Fatalf("ForkRoot =\n%s\nwant\n%s", got, w)
	}
	if err := driver.Validate(root); err != nil {
		t.Fatalf("ForkRoot of a valid checkpoint is invalid: %v", err)
	}
	// The root shares no memory with the source.
	root.Files[0].Path = "x"
	root.Artifacts[0].Name = "x"
	root.Conversation[1] = ' '
	if marshalDirect(t, src) != srcJSON {
		t.Fatal("changing the fork root changed the source")
	}
}

// Ids compare by their UTF-8 bytes, not by UTF-16 code units as
// JavaScript's < compares strings. The two
// orders differ only between a character above U+FFFF (a surrogate pair,
// 0xD800…) and one from U+E000 to U+FFFF.
func TestCompareCheckpointsByBytesNotUTF16(t *testing.T) {
	for _, tc := range []struct{ lo, hi string }{
		{"\uE000", "\U00010000"},
		{"\uFFFF", "😀"},
		{"a\uFF5E", "a\U0001F600"},
	} {
		lo := &driver.Checkpoint{ID: tc.lo, CreatedAt: 1}
		hi := &driver.Checkpoint{ID: tc.hi, CreatedAt: 1}
		if c := driver.CompareCheckpoints(lo, hi); c >= 0 {
			t.Errorf("CompareCheckpoints(%+q, %+q) = %d, want < 0 (UTF-8 byte order)", tc.lo, tc.hi, c)
		}
		if c := driver.CompareCheckpoints(hi, lo); c <= 0 {
			t.Errorf("CompareCheckpoints(%+q, %+q) = %d, want > 0 (UTF-8 byte order)", tc.hi, tc.lo, c)
		}
	}
}

// BlobKeys of a checkpoint with more artifacts than files (a slice sized
// len(Files)-len(Artifacts) would panic).
func TestBlobKeysMoreArtifactsThanFiles(t *testing.T) {
	cp := &driver.Checkpoint{Artifacts: []driver.Artifact{
		{ArtifactID: "a", BlobKey: artifactKey(2)}, {ArtifactID: "b", BlobKey: artifactKey(1)}, {ArtifactID: "c", BlobKey: artifactKey(2)},
	}}
	got := cp.BlobKeys()
	if want := []string{artifactKey(1), artifactKey(2)}; !slices.Equal(got, want) {
		t.Fatalf("BlobKeys() = %q, want %q", got, want)
	}
}
