package driver

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestCursorRoundTrip(t *testing.T) {
	for _, p := range []Position{
		{CreatedAt: 0, ID: "a"},
		{CreatedAt: math.Copysign(0, -1), ID: "é/😀"},
		{CreatedAt: -1.5e300, ID: "x\x00y"},
		{CreatedAt: 1700000000000.25, ID: "cp-1"},
		// An id longer than the 9-byte head of the cursor (a capacity
		// hint of 9-len(id) would panic: gremlins found no test with one).
		{CreatedAt: 2, ID: "01HZX3K9Q8N4M2P7R5T6V8W0YZ"},
	} {
		got, err := DecodeCursor(EncodeCursor(p))
		if err != nil {
			t.Fatalf("DecodeCursor(EncodeCursor(%v)): %v", p, err)
		}
		if math.Float64bits(got.CreatedAt) != math.Float64bits(p.CreatedAt) || got.ID != p.ID {
			t.Errorf("round trip of %v gave %v", p, got)
		}
	}
	for _, id := range []string{"t", "é", "a\x00b"} {
		got, err := DecodeThreadCursor(EncodeThreadCursor(id))
		if err != nil || got != id {
			t.Errorf("thread cursor round trip of %q gave %q, %v", id, got, err)
		}
	}
}

func TestCursorRejects(t *testing.T) {
	nan := EncodeCursor(Position{CreatedAt: math.NaN(), ID: "a"})
	for _, s := range []string{
		"!", "cA", // not base64url / too short
		EncodeThreadCursor("abc"),             // a threads cursor is not a list cursor
		EncodeCursor(Position{CreatedAt: 1}),  // no id
		nan,                                   // createdAt not finite
		EncodeCursor(Position{ID: "\xff"}),    // invalid UTF-8
		EncodeCursor(Position{ID: "a"}) + "=", // padding is not ours
	} {
		if _, err := DecodeCursor(s); !errors.Is(err, ErrInvalidEntry) {
			t.Errorf("DecodeCursor(%q) = %v, want ErrInvalidEntry", s, err)
		}
	}
	for _, s := range []string{"", "!", EncodeCursor(Position{ID: "a"}), EncodeThreadCursor("\xff"), EncodeThreadCursor("")} {
		if _, err := DecodeThreadCursor(s); !errors.Is(err, ErrInvalidEntry) {
			t.Errorf("DecodeThreadCursor(%q) = %v, want ErrInvalidEntry", s, err)
		}
	}
}

func TestComparePosition(t *testing.T) {
	cp := &Checkpoint{ID: "b", CreatedAt: 5}
	for _, c := range []struct {
		p    Position
		want int
	}{
		{Position{5, "b"}, 0}, {Position{5, "a"}, 1}, {Position{5, "c"}, -1},
		{Position{4, "z"}, 1}, {Position{6, ""}, -1},
	} {
		if got := ComparePosition(cp, c.p); got != c.want {
			t.Errorf("ComparePosition(%v) = %d, want %d", c.p, got, c.want)
		}
	}
	zero := &Checkpoint{ID: "a", CreatedAt: math.Copysign(0, -1)}
	if ComparePosition(zero, Position{0, "a"}) != 0 {
		t.Error("-0 and +0 must be the same position, as List orders them")
	}
}

func TestPageLimit(t *testing.T) {
	for in, want := range map[int]int{0: DefaultPageLimit, 1: 1, 1000: 1000} {
		if got, err := PageLimit(in); err != nil || got != want {
			t.Errorf("PageLimit(%d) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []int{-1, 1001, math.MaxInt} {
		if _, err := PageLimit(in); !errors.Is(err, ErrInvalidEntry) {
			t.Errorf("PageLimit(%d) = %v, want ErrInvalidEntry", in, err)
		}
	}
}

func TestEqualCheckpoints(t *testing.T) {
	a := &Checkpoint{ID: "a", ThreadID: "t", CreatedAt: 1, Reason: ReasonAutomatic,
		Files: []Entry{{Path: "f", Kind: KindFile, BlobKey: "k", Size: 1}}}
	b := a.Clone()
	b.Conversation = []byte("[]")
	b.Artifacts = []Artifact{}
	if !EqualCheckpoints(a, b) {
		t.Fatal("an empty conversation must equal [] and nil slices empty ones")
	}
	for name, change := range map[string]func(*Checkpoint){
		"createdAt -0":  func(c *Checkpoint) { c.CreatedAt = math.Copysign(0, -1); a.CreatedAt = 0 },
		"parent":        func(c *Checkpoint) { c.ParentCheckpointID = "p" },
		"label":         func(c *Checkpoint) { c.Label = "l" },
		"conversation":  func(c *Checkpoint) { c.Conversation = []byte("[ ]") },
		"file size":     func(c *Checkpoint) { c.Files[0].Size = 2 },
		"artifact":      func(c *Checkpoint) { c.Artifacts = []Artifact{{ArtifactID: "x"}} },
		"reason":        func(c *Checkpoint) { c.Reason = ReasonNamed },
		"source run id": func(c *Checkpoint) { c.SourceRunID = "r" },
	} {
		c := a.Clone()
		change(c)
		if EqualCheckpoints(a, c) {
			t.Errorf("%s: a changed checkpoint compares equal", name)
		}
		a.CreatedAt = 1
	}
	if EqualCheckpoints(a, nil) || !EqualCheckpoints(nil, nil) {
		t.Error("nil handling")
	}
}

func TestValidateTranscript(t *testing.T) {
	for _, ok := range []string{"[]", " [1, {\"a\":2}] ", "[\"é\"]"} {
		if err := ValidateTranscript([]byte(ok)); err != nil {
			t.Errorf("ValidateTranscript(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "{}", "null", "[", "[\"\xff\"]", "1"} {
		if err := ValidateTranscript([]byte(bad)); !errors.Is(err, ErrInvalidEntry) {
			t.Errorf("ValidateTranscript(%q) = %v, want ErrInvalidEntry", bad, err)
		}
	}
}

func TestValidateImport(t *testing.T) {
	w := Writer{ThreadID: "t", OwnerToken: "o", Fence: 1}
	cp := func(id string) *Checkpoint {
		return &Checkpoint{ID: id, ThreadID: "t", CreatedAt: 1, Reason: ReasonAutomatic}
	}
	ok := ImportBatch{ThreadID: "t", Checkpoints: []*Checkpoint{cp("a"), cp("b")}, SetHead: true, Head: "b", Writer: w}
	if err := ValidateImport(ok); err != nil {
		t.Fatalf("valid batch: %v", err)
	}
	for name, c := range map[string]struct {
		change func(*ImportBatch)
		want   error
	}{
		"thread id":        {func(b *ImportBatch) { b.ThreadID = "" }, ErrInvalidID},
		"writer thread":    {func(b *ImportBatch) { b.Writer.ThreadID = "\xff" }, ErrInvalidID},
		"checkpoint id":    {func(b *ImportBatch) { b.Checkpoints[1].ID = "" }, ErrInvalidID},
		"head id":          {func(b *ImportBatch) { b.Head = "\xff" }, ErrInvalidID},
		"id before entry":  {func(b *ImportBatch) { b.Checkpoints[0].Reason = "x"; b.Checkpoints[1].ID = "" }, ErrInvalidID},
		"other thread":     {func(b *ImportBatch) { b.Checkpoints[0].ThreadID = "u" }, ErrInvalidEntry},
		"twice":            {func(b *ImportBatch) { b.Checkpoints[1].ID = "a" }, ErrInvalidEntry},
		"content":          {func(b *ImportBatch) { b.Checkpoints[1].CreatedAt = math.Inf(1) }, ErrInvalidEntry},
		"nil checkpoint":   {func(b *ImportBatch) { b.Checkpoints[0] = nil }, ErrInvalidEntry},
		"id before nil":    {func(b *ImportBatch) { b.Checkpoints[0] = nil; b.Checkpoints[1].ID = "" }, ErrInvalidID},
		"transcript":       {func(b *ImportBatch) { b.Transcript = []byte("{}") }, ErrInvalidEntry},
		"empty transcript": {func(b *ImportBatch) { b.Transcript = []byte{} }, ErrInvalidEntry},
	} {
		b := ok
		b.Checkpoints = []*Checkpoint{cp("a"), cp("b")}
		c.change(&b)
		if err := ValidateImport(b); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
}

// TestCursorIDBound: a cursor holds an id of at most MaxIDBytes, as every
// id the store lists is; a longer one is not a cursor the store wrote, and
// the error quotes only a prefix of it.
func TestCursorIDBound(t *testing.T) {
	at := strings.Repeat("x", MaxIDBytes)
	if p, err := DecodeCursor(EncodeCursor(Position{CreatedAt: 1, ID: at})); err != nil || p.ID != at {
		t.Errorf("list cursor at MaxIDBytes: %v", err)
	}
	if id, err := DecodeThreadCursor(EncodeThreadCursor(at)); err != nil || id != at {
		t.Errorf("threads cursor at MaxIDBytes: %v", err)
	}
	for _, n := range []int{MaxIDBytes + 1, 1 << 20} {
		over := strings.Repeat("x", n)
		_, err := DecodeCursor(EncodeCursor(Position{CreatedAt: 1, ID: over}))
		if !errors.Is(err, ErrInvalidEntry) || len(err.Error()) > 400 {
			t.Errorf("list cursor of a %d-byte id: %v", n, err)
		}
		_, err = DecodeThreadCursor(EncodeThreadCursor(over))
		if !errors.Is(err, ErrInvalidEntry) || len(err.Error()) > 400 {
			t.Errorf("threads cursor of a %d-byte id: %v", n, err)
		}
	}
}

// TestValidateIDBound: ids of 1 to MaxIDBytes bytes pass, longer ones fail
// with ErrInvalidID, quoting a prefix only.
func TestValidateIDBound(t *testing.T) {
	for _, id := range []string{"a", strings.Repeat("x", MaxIDBytes), strings.Repeat("é", MaxIDBytes/2)} {
		if err := ValidateID("id", id); err != nil {
			t.Errorf("a %d-byte id: %v", len(id), err)
		}
	}
	for _, id := range []string{strings.Repeat("x", MaxIDBytes+1), strings.Repeat("é", MaxIDBytes/2) + "x", strings.Repeat("\xff", 1<<20)} {
		err := ValidateID("id", id)
		if !errors.Is(err, ErrInvalidID) || len(err.Error()) > 400 {
			t.Errorf("a %d-byte id: %v", len(id), err)
		}
	}
	if got := QuoteShort("ab"); got != `"ab"` {
		t.Errorf("QuoteShort(ab) = %s", got)
	}
	if got := QuoteShort(strings.Repeat("z", 65)); got != `"`+strings.Repeat("z", 64)+`"… (65 bytes)` {
		t.Errorf("QuoteShort of 65 bytes = %s", got)
	}
}
