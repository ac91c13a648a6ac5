package driver_test

// Tests that mutation testing (internal/mutation: the hand-made mutants and
// go-gremlins) found missing from the root package's own tests: each mutant
// named below passed them. Some were caught by the conformance suite, but
// the contract package should not depend on a store's tests to prove its
// own functions.

import (
	"slices"
	"strings"
	"testing"

	"github.com/ckptstore/ckptstore/driver"
)

// Mutant val-key-no-prefix: a blob key checked for 64 lowercase hex digits
// but not for its prefix.
func TestValidateBlobKeyWithoutPrefix(t *testing.T) {
	hex := strings.Repeat("0a", 32)
	for _, tc := range []struct {
		name string
		mod  func(*driver.Checkpoint)
	}{
		{"file key of bare hex", func(cp *driver.Checkpoint) { cp.Files[1].BlobKey = hex }},
		{"file key with the prefix's slash missing", func(cp *driver.Checkpoint) { cp.Files[1].BlobKey = "sandbox-files/sha256" + hex }},
		{"artifact key of bare hex", func(cp *driver.Checkpoint) { cp.Artifacts[0].BlobKey = hex }},
		{"artifact key with a file prefix", func(cp *driver.Checkpoint) { cp.Artifacts[0].BlobKey = "sandbox-files/sha256/" + hex }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cp := validCheckpoint()
			tc.mod(cp)
			wantErr(t, driver.Validate(cp), driver.ErrInvalidEntry, "blobKey")
		})
	}
}

// Mutant typ-compare-utf16: ids compared by UTF-16 code units, as
// JavaScript's < compares strings, instead of by their UTF-8 bytes. The two
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

// Gremlins mutants of wellFormedString and hex4 (json.go) that lived: the
// edges of the low-surrogate range as the second half of a pair, a high
// surrogate followed by text that ends in low-surrogate hex digits without
// an escape, and lone surrogates spelled with uppercase hex digits.
func TestUnmarshalSurrogateEdges(t *testing.T) {
	for _, tt := range []struct {
		name   string
		id     string // the JSON string literal of the id, quotes included
		wantID string
		want   error
	}{
		{"pair with the lowest low half", `"\ud800\udc00"`, "\U00010000", nil},
		{"pair with the highest low half", `"\ud800\udfff"`, "\U000103FF", nil},
		{"high then U+E000, just past the low range", `"\ud800\ue000"`, "", driver.ErrInvalidID},
		{"high then U+DBFF, a high", `"\ud800\udbff"`, "", driver.ErrInvalidID},
		{"high then unescaped text ending in dc00", `"\ud800xxdc00"`, "", driver.ErrInvalidID},
		{"high then unescaped u and low hex", `"\ud800xudc00"`, "", driver.ErrInvalidID},
		{"uppercase lone low surrogate", `"\uDC00"`, "", driver.ErrInvalidID},
		{"uppercase lone high surrogate", `"\uDBFF"`, "", driver.ErrInvalidID},
		{"uppercase high then lowercase low", `"\uD83D\ude00"`, "😀", nil},
		{"uppercase non-surrogate", `"\uABCD\uEF01"`, "\uABCD\uEF01", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var cp driver.Checkpoint
			err := cp.UnmarshalJSON([]byte(`{"id":` + tt.id + `,"threadId":"t","createdAt":1,"reason":"named"}`))
			wantErr(t, err, tt.want, "")
			if tt.want == nil && cp.ID != tt.wantID {
				t.Fatalf("id = %+q, want %+q", cp.ID, tt.wantID)
			}
		})
	}
}

// Gremlins mutant of Checkpoint.MarshalJSON: the output buffer sized
// len(out)-len(conv) panics once the conversation is longer than the rest
// of the checkpoint's JSON; no test had such a conversation.
func TestMarshalConversationLongerThanTheRest(t *testing.T) {
	conv := "[" + strings.Repeat(`{"role":"user","content":"a long message"},`, 200) + `{"role":"assistant","content":"ok"}]`
	cp := &driver.Checkpoint{ID: "c", ThreadID: "t", CreatedAt: 1, Reason: driver.ReasonAutomatic, Conversation: []byte(conv)}
	b, err := cp.MarshalJSON()
	if err != nil {
		t.Fatalf("MarshalJSON: %v", err)
	}
	var got driver.Checkpoint
	if err := got.UnmarshalJSON(b); err != nil {
		t.Fatalf("UnmarshalJSON: %v", err)
	}
	if string(got.Conversation) != conv {
		t.Fatalf("conversation of %d bytes came back as %d bytes", len(conv), len(got.Conversation))
	}
}

// Gremlins mutant of BlobKeys: a slice sized len(Files)-len(Artifacts)
// panics when a checkpoint has more artifacts than files.
func TestBlobKeysMoreArtifactsThanFiles(t *testing.T) {
	cp := &driver.Checkpoint{Artifacts: []driver.Artifact{
		{ArtifactID: "a", BlobKey: artifactKey(2)}, {ArtifactID: "b", BlobKey: artifactKey(1)}, {ArtifactID: "c", BlobKey: artifactKey(2)},
	}}
	got := cp.BlobKeys()
	if want := []string{artifactKey(1), artifactKey(2)}; !slices.Equal(got, want) {
		t.Fatalf("BlobKeys() = %q, want %q", got, want)
	}
}

// Gremlins mutants of isASCIILetter: the first and last letter of each case
// (a, z, A, Z) make drive paths, and the characters just outside those
// ranges (@ [ ` {) do not.
func TestValidateDriveLetterEdges(t *testing.T) {
	for _, p := range []string{"a:", "z:/x", "A:", "Z:/x"} {
		cp := validCheckpoint()
		cp.Files[2].Path = p
		wantErr(t, driver.Validate(cp), driver.ErrInvalidEntry, "drive letter")
	}
	for _, p := range []string{"@:", "[:", "`:", "{:", "@:/x", "{:/x"} {
		cp := validCheckpoint()
		cp.Files[2].Path = p
		if err := driver.Validate(cp); err != nil {
			t.Errorf("path %q: %v, want valid (not a drive letter)", p, err)
		}
	}
}
