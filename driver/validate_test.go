package driver_test

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/ckptstore/ckptstore/driver"
)

const maxSize = 1<<53 - 1 // 2^53−1, the largest size docs/contract.md allows

func TestMaxSize(t *testing.T) {
	if driver.MaxSize != maxSize {
		t.Fatalf("MaxSize = %d, want 2^53-1", int64(driver.MaxSize))
	}
}

// validateCase is one case of TestValidate: a change to a valid
// checkpoint and the error Validate must give for it (nil: still valid).
type validateCase struct {
	name   string
	mutate func(*driver.Checkpoint)
	want   error
}

// Builders of TestValidate's cases.
func vFile(path string) driver.Entry {
	return driver.Entry{Path: path, Kind: driver.KindFile, BlobKey: fileKey(9), Size: 1}
}

func vDir(path string) driver.Entry { return driver.Entry{Path: path, Kind: driver.KindDir} }

func vFiles(es ...driver.Entry) func(*driver.Checkpoint) {
	return func(cp *driver.Checkpoint) { cp.Files = es }
}

func vArt(f func(*driver.Artifact)) func(*driver.Checkpoint) {
	return func(cp *driver.Checkpoint) { f(&cp.Artifacts[0]) }
}

func vConv(s string) func(*driver.Checkpoint) {
	return func(cp *driver.Checkpoint) { cp.Conversation = json.RawMessage(s) }
}

// vHex64 is 64 lowercase hex digits, the digest of a valid blob key.
var vHex64 = strings.Repeat("ab", 32)

// TestValidate breaks one rule of docs/contract.md's Validation section per case, and
// checks the valid edge next to each rule.
func TestValidate(t *testing.T) {
	tests := []validateCase{
		{"valid", func(*driver.Checkpoint) {}, nil},
		{"minimal: no parent, files, conversation or artifacts", func(cp *driver.Checkpoint) {
			*cp = driver.Checkpoint{ID: "c", ThreadID: "t", Reason: driver.ReasonAutomatic}
		}, nil},
	}
	for _, group := range [][]validateCase{idCases(), fieldCases(), conversationCases(), pathCases(), treeCases(), fileFieldCases(), artifactCases()} {
		tests = append(tests, group...)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cp := validCheckpoint()
			tt.mutate(cp)
			wantErr(t, driver.Validate(cp), tt.want, "")
			// ValidateAppend runs the same checks once the writer and the
			// expected head are valid.
			wantErr(t, driver.ValidateAppend(cp, "cp-1", driver.Writer{ThreadID: "thread-1"}), tt.want, "")
		})
	}
}

// idCases: ids.
func idCases() []validateCase {
	return []validateCase{
		{"empty id", func(cp *driver.Checkpoint) { cp.ID = "" }, driver.ErrInvalidID},
		{"id not UTF-8", func(cp *driver.Checkpoint) { cp.ID = "c\xff" }, driver.ErrInvalidID},
		{"id is a lone surrogate in WTF-8", func(cp *driver.Checkpoint) { cp.ID = "\xed\xa0\x80" }, driver.ErrInvalidID},
		{"empty thread id", func(cp *driver.Checkpoint) { cp.ThreadID = "" }, driver.ErrInvalidID},
		{"thread id not UTF-8", func(cp *driver.Checkpoint) { cp.ThreadID = "\x80" }, driver.ErrInvalidID},
		{"parent not UTF-8", func(cp *driver.Checkpoint) { cp.ParentCheckpointID = "p\xc3" }, driver.ErrInvalidID},
		{"unicode ids", func(cp *driver.Checkpoint) {
			cp.ID, cp.ThreadID, cp.ParentCheckpointID = "チェック", "🧵", "親"
		}, nil},
		{"ids with NUL and spaces are valid", func(cp *driver.Checkpoint) { cp.ID = "a\x00 b" }, nil},
	}
}

// fieldCases: createdAt, reason, optional strings.
func fieldCases() []validateCase {
	return []validateCase{
		{"createdAt NaN", func(cp *driver.Checkpoint) { cp.CreatedAt = math.NaN() }, driver.ErrInvalidEntry},
		{"createdAt +Inf", func(cp *driver.Checkpoint) { cp.CreatedAt = math.Inf(1) }, driver.ErrInvalidEntry},
		{"createdAt -Inf", func(cp *driver.Checkpoint) { cp.CreatedAt = math.Inf(-1) }, driver.ErrInvalidEntry},
		{"createdAt negative, fractional", func(cp *driver.Checkpoint) { cp.CreatedAt = -1.25 }, nil},
		{"createdAt -0", func(cp *driver.Checkpoint) { cp.CreatedAt = math.Copysign(0, -1) }, nil},
		{"createdAt MaxFloat64", func(cp *driver.Checkpoint) { cp.CreatedAt = math.MaxFloat64 }, nil},
		{"createdAt smallest subnormal", func(cp *driver.Checkpoint) { cp.CreatedAt = math.SmallestNonzeroFloat64 }, nil},
		{"reason empty", func(cp *driver.Checkpoint) { cp.Reason = "" }, driver.ErrInvalidEntry},
		{"reason other case", func(cp *driver.Checkpoint) { cp.Reason = "Automatic" }, driver.ErrInvalidEntry},
		{"reason unknown", func(cp *driver.Checkpoint) { cp.Reason = "manual" }, driver.ErrInvalidEntry},
		{"reason automatic", func(cp *driver.Checkpoint) { cp.Reason = driver.ReasonAutomatic }, nil},
		{"reason fork-root", func(cp *driver.Checkpoint) { cp.Reason = driver.ReasonForkRoot }, nil},
		{"label not UTF-8", func(cp *driver.Checkpoint) { cp.Label = "\xff" }, driver.ErrInvalidEntry},
		{"sourceRunId not UTF-8", func(cp *driver.Checkpoint) { cp.SourceRunID = "\xff" }, driver.ErrInvalidEntry},
	}
}

// conversationCases: conversation.
func conversationCases() []validateCase {
	return []validateCase{
		{"conversation empty non-nil", vConv(""), nil},
		{"conversation []", vConv("[]"), nil},
		{"conversation [] after whitespace", vConv(" \n[]"), nil},
		{"conversation of two bytes ending in ]", vConv("{]"), driver.ErrInvalidEntry},
		{"conversation of two bytes starting with [", vConv("[}"), driver.ErrInvalidEntry},
		{"conversation with odd whitespace", vConv(" \t\r\n[ 1 ,\n\"x\" ]\n "), nil},
		{"conversation keeps escaped lone surrogates (opaque)", vConv(`["\ud800"]`), nil},
		{"conversation object", vConv(`{"role":"user"}`), driver.ErrInvalidEntry},
		{"conversation null", vConv("null"), driver.ErrInvalidEntry},
		{"conversation string", vConv(`"[]"`), driver.ErrInvalidEntry},
		{"conversation only whitespace", vConv("  "), driver.ErrInvalidEntry},
		{"conversation unterminated", vConv("[1,"), driver.ErrInvalidEntry},
		{"conversation trailing data", vConv("[] []"), driver.ErrInvalidEntry},
		{"conversation invalid UTF-8 in a string", vConv("[\"\xff\"]"), driver.ErrInvalidEntry},
		{"conversation BOM", vConv("\uFEFF[]"), driver.ErrInvalidEntry},
	}
}

// pathCases: paths.
func pathCases() []validateCase {
	return []validateCase{
		{"path empty", vFiles(vFile("")), driver.ErrInvalidEntry},
		{"path NUL", vFiles(vFile("a\x00b")), driver.ErrInvalidEntry},
		{"path not UTF-8", vFiles(vFile("a\xff")), driver.ErrInvalidEntry},
		{"path absolute /", vFiles(vFile("/etc/passwd")), driver.ErrInvalidEntry},
		{"path absolute \\", vFiles(vFile(`\server\share`)), driver.ErrInvalidEntry},
		{"path drive letter and /", vFiles(vFile("C:/x")), driver.ErrInvalidEntry},
		{"path drive letter and \\", vFiles(vFile(`c:\x`)), driver.ErrInvalidEntry},
		{"path drive letter alone", vFiles(vFile("C:")), driver.ErrInvalidEntry},
		{"path lowercase drive letter alone", vFiles(vFile("z:")), driver.ErrInvalidEntry},
		{"path drive-relative C:foo is valid", vFiles(vFile("C:foo")), nil},
		{"path C:foo/bar is valid", vFiles(vDir("C:foo"), vFile("C:foo/bar")), nil},
		{"path digit colon is valid", vFiles(vFile("1:")), nil},
		{"path two letters colon is valid", vFiles(vFile("ab:")), nil},
		{"path non-ASCII letter colon is valid", vFiles(vFile("é:")), nil},
		{"path backslash inside", vFiles(vFile(`a\b`)), driver.ErrInvalidEntry},
		{"path empty segment", vFiles(vFile("a//b")), driver.ErrInvalidEntry},
		{"path trailing slash", vFiles(vFile("a/")), driver.ErrInvalidEntry},
		{"path .", vFiles(vFile(".")), driver.ErrInvalidEntry},
		{"path ..", vFiles(vFile("..")), driver.ErrInvalidEntry},
		{"path ./a", vFiles(vFile("./a")), driver.ErrInvalidEntry},
		{"path a/./b", vFiles(vFile("a/./b")), driver.ErrInvalidEntry},
		{"path a/..", vFiles(vFile("a/..")), driver.ErrInvalidEntry},
		{"path a/../b", vFiles(vFile("a/../b")), driver.ErrInvalidEntry},
		{"path dot-names are valid", vFiles(vFile(".env"), vFile("..a"), vFile("a.."), vFile("...")), nil},
		{"path with spaces and unicode", vFiles(vDir(" ü"), vFile(" ü/ファイル .txt")), nil},
	}
}

// treeCases: kinds and the tree.
func treeCases() []validateCase {
	return []validateCase{
		{"kind empty", vFiles(driver.Entry{Path: "a", BlobKey: fileKey(1)}), driver.ErrInvalidEntry},
		{"kind symlink", vFiles(driver.Entry{Path: "a", Kind: "symlink"}), driver.ErrInvalidEntry},
		{"kind File", vFiles(driver.Entry{Path: "a", Kind: "File", BlobKey: fileKey(1)}), driver.ErrInvalidEntry},
		{"duplicate file", vFiles(vFile("a"), vFile("a")), driver.ErrInvalidEntry},
		{"duplicate file and dir", vFiles(vDir("a"), vFile("a")), driver.ErrInvalidEntry},
		{"duplicate dir", vFiles(vDir("a"), vDir("a")), driver.ErrInvalidEntry},
		{"file beneath a file", vFiles(vFile("a"), vFile("a/b")), driver.ErrInvalidEntry},
		{"file beneath a file, child listed first", vFiles(vFile("a/b"), vFile("a")), driver.ErrInvalidEntry},
		{"dir beneath a file", vFiles(vFile("a"), vDir("a/b")), driver.ErrInvalidEntry},
		{"deep entry beneath a file, no dirs between", vFiles(vFile("a"), vFile("a/b/c/d")), driver.ErrInvalidEntry},
		{"entry beneath a file deeper in the tree", vFiles(vDir("a"), vFile("a/b"), vFile("a/b/c")), driver.ErrInvalidEntry},
		{"entries beneath a dir", vFiles(vDir("a"), vDir("a/b"), vFile("a/b/c"), vFile("a/d")), nil},
		{"entry beneath an unlisted dir", vFiles(vFile("x/y/z")), nil},
		{"file is a name prefix, not an ancestor", vFiles(vFile("a"), vFile("ab/c"), vFile("a.b")), nil},
	}
}

// fileFieldCases: file fields.
func fileFieldCases() []validateCase {
	return []validateCase{
		{"file size 0", vFiles(driver.Entry{Path: "a", Kind: driver.KindFile, BlobKey: fileKey(1)}), nil},
		{"file size 2^53-1", vFiles(driver.Entry{Path: "a", Kind: driver.KindFile, BlobKey: fileKey(1), Size: maxSize}), nil},
		{"file size 2^53", vFiles(driver.Entry{Path: "a", Kind: driver.KindFile, BlobKey: fileKey(1), Size: maxSize + 1}), driver.ErrInvalidEntry},
		{"file size -1", vFiles(driver.Entry{Path: "a", Kind: driver.KindFile, BlobKey: fileKey(1), Size: -1}), driver.ErrInvalidEntry},
		{"file size MinInt64", vFiles(driver.Entry{Path: "a", Kind: driver.KindFile, BlobKey: fileKey(1), Size: math.MinInt64}), driver.ErrInvalidEntry},
		{"file without blobKey", vFiles(driver.Entry{Path: "a", Kind: driver.KindFile, Size: 1}), driver.ErrInvalidEntry},
		{"file blobKey of an artifact", vFiles(driver.Entry{Path: "a", Kind: driver.KindFile, BlobKey: artifactKey(1)}), driver.ErrInvalidEntry},
		{"file blobKey uppercase hex", vFiles(driver.Entry{Path: "a", Kind: driver.KindFile, BlobKey: "sandbox-files/sha256/" + strings.Repeat("AB", 32)}), driver.ErrInvalidEntry},
		{"file blobKey 63 hex", vFiles(driver.Entry{Path: "a", Kind: driver.KindFile, BlobKey: "sandbox-files/sha256/" + vHex64[1:]}), driver.ErrInvalidEntry},
		{"file blobKey 65 hex", vFiles(driver.Entry{Path: "a", Kind: driver.KindFile, BlobKey: "sandbox-files/sha256/" + vHex64 + "a"}), driver.ErrInvalidEntry},
		{"file blobKey non-hex", vFiles(driver.Entry{Path: "a", Kind: driver.KindFile, BlobKey: "sandbox-files/sha256/" + vHex64[:63] + "g"}), driver.ErrInvalidEntry},
		{"file blobKey other algorithm", vFiles(driver.Entry{Path: "a", Kind: driver.KindFile, BlobKey: "sandbox-files/sha512/" + vHex64}), driver.ErrInvalidEntry},
		{"file blobKey with a leading slash", vFiles(driver.Entry{Path: "a", Kind: driver.KindFile, BlobKey: "/sandbox-files/sha256/" + vHex64}), driver.ErrInvalidEntry},
		{"file blobKey not UTF-8 is an entry error", vFiles(driver.Entry{Path: "a", Kind: driver.KindFile, BlobKey: "sandbox-files/sha256/" + vHex64[:63] + "\xff"}), driver.ErrInvalidEntry},
		{"dir with blobKey", vFiles(driver.Entry{Path: "a", Kind: driver.KindDir, BlobKey: fileKey(1)}), driver.ErrInvalidEntry},
		{"dir with size", vFiles(driver.Entry{Path: "a", Kind: driver.KindDir, Size: 1}), driver.ErrInvalidEntry},
		{"dir with negative size", vFiles(driver.Entry{Path: "a", Kind: driver.KindDir, Size: -1}), driver.ErrInvalidEntry},
		{"two files share a blob", vFiles(vFile("a"), vFile("b")), nil},
	}
}

// artifactCases: artifacts.
func artifactCases() []validateCase {
	return []validateCase{
		{"artifact empty id", vArt(func(a *driver.Artifact) { a.ArtifactID = "" }), driver.ErrInvalidEntry},
		{"artifact empty name", vArt(func(a *driver.Artifact) { a.Name = "" }), driver.ErrInvalidEntry},
		{"artifact empty mimeType", vArt(func(a *driver.Artifact) { a.MimeType = "" }), driver.ErrInvalidEntry},
		{"artifact id not UTF-8", vArt(func(a *driver.Artifact) { a.ArtifactID = "\xff" }), driver.ErrInvalidEntry},
		{"artifact name not UTF-8", vArt(func(a *driver.Artifact) { a.Name = "\xff" }), driver.ErrInvalidEntry},
		{"artifact mimeType not UTF-8", vArt(func(a *driver.Artifact) { a.MimeType = "\xff" }), driver.ErrInvalidEntry},
		{"artifact blobKey of a file", vArt(func(a *driver.Artifact) { a.BlobKey = fileKey(1) }), driver.ErrInvalidEntry},
		{"artifact blobKey empty", vArt(func(a *driver.Artifact) { a.BlobKey = "" }), driver.ErrInvalidEntry},
		{"artifact blobKey uppercase", vArt(func(a *driver.Artifact) { a.BlobKey = "sandbox-artifacts/sha256/" + strings.Repeat("AB", 32) }), driver.ErrInvalidEntry},
		{"artifact blobKey not UTF-8", vArt(func(a *driver.Artifact) { a.BlobKey = "sandbox-artifacts/sha256/" + vHex64[:63] + "\xff" }), driver.ErrInvalidEntry},
		{"artifact size -1", vArt(func(a *driver.Artifact) { a.Size = -1 }), driver.ErrInvalidEntry},
		{"artifact size 2^53", vArt(func(a *driver.Artifact) { a.Size = maxSize + 1 }), driver.ErrInvalidEntry},
		{"artifact size 2^53-1", vArt(func(a *driver.Artifact) { a.Size = maxSize }), nil},
		{"artifact size 0", vArt(func(a *driver.Artifact) { a.Size = 0 }), nil},
		{"artifact createdAt NaN", vArt(func(a *driver.Artifact) { a.CreatedAt = math.NaN() }), driver.ErrInvalidEntry},
		{"artifact createdAt -Inf", vArt(func(a *driver.Artifact) { a.CreatedAt = math.Inf(-1) }), driver.ErrInvalidEntry},
		{"artifact createdAt negative", vArt(func(a *driver.Artifact) { a.CreatedAt = -5.5 }), nil},
	}
}

func TestValidateNil(t *testing.T) {
	wantErr(t, driver.Validate(nil), driver.ErrInvalidEntry, "")
	wantErr(t, driver.ValidateAppend(nil, "", driver.Writer{ThreadID: "t"}), driver.ErrInvalidEntry, "")
}

// Validate must not change its argument: stores call it on the caller's value.
func TestValidateDoesNotMutate(t *testing.T) {
	cp := validCheckpoint()
	before, err := json.Marshal(cp)
	if err != nil {
		t.Fatal(err)
	}
	if err := driver.Validate(cp); err != nil {
		t.Fatal(err)
	}
	after, _ := json.Marshal(cp)
	if string(before) != string(after) {
		t.Fatalf("Validate changed the checkpoint:\n%s\n%s", before, after)
	}
}

// TestValidateOrder checks that when several checks fail, the first one in
// docs/contract.md's order decides the error.
func TestValidateOrder(t *testing.T) {
	t.Run("Validate", func(t *testing.T) {
		cp := validCheckpoint()
		cp.ID, cp.ThreadID, cp.ParentCheckpointID, cp.CreatedAt = "", "", "\xff", math.NaN()
		wantErr(t, driver.Validate(cp), driver.ErrInvalidID, "checkpoint id")
		cp.ID = "c"
		wantErr(t, driver.Validate(cp), driver.ErrInvalidID, "thread id")
		cp.ThreadID = "t"
		wantErr(t, driver.Validate(cp), driver.ErrInvalidID, "parentCheckpointId")
		cp.ParentCheckpointID = ""
		wantErr(t, driver.Validate(cp), driver.ErrInvalidEntry, "createdAt")
	})
	t.Run("ValidateAppend", func(t *testing.T) {
		// Step 1 in docs/contract.md's order: checkpoint id, thread id, writer
		// thread id, expected head, parent; then step 2.
		cp := validCheckpoint()
		cp.ID, cp.ThreadID, cp.ParentCheckpointID = "", "", "\xff"
		cp.Files = []driver.Entry{{Path: "/abs", Kind: driver.KindDir}}
		w := driver.Writer{ThreadID: ""}
		head := "\xfe"
		wantErr(t, driver.ValidateAppend(cp, head, w), driver.ErrInvalidID, "checkpoint id")
		cp.ID = "c"
		wantErr(t, driver.ValidateAppend(cp, head, w), driver.ErrInvalidID, "thread id")
		cp.ThreadID = "t"
		wantErr(t, driver.ValidateAppend(cp, head, w), driver.ErrInvalidID, "writer thread id")
		w.ThreadID = "other thread" // not the checkpoint's: a writer check, not an id check
		wantErr(t, driver.ValidateAppend(cp, head, w), driver.ErrInvalidID, "expected head")
		head = ""
		wantErr(t, driver.ValidateAppend(cp, head, w), driver.ErrInvalidID, "parentCheckpointId")
		cp.ParentCheckpointID = ""
		wantErr(t, driver.ValidateAppend(cp, head, w), driver.ErrInvalidEntry, "/abs")
		cp.Files = nil
		wantErr(t, driver.ValidateAppend(cp, head, w), nil, "")
	})
	t.Run("content", func(t *testing.T) {
		// Every content failure is ErrInvalidEntry; a bad id still wins over
		// all of them.
		cp := validCheckpoint()
		cp.CreatedAt = math.Inf(1)
		cp.Reason = "x"
		cp.Files = []driver.Entry{{Path: "..", Kind: "x"}}
		cp.Artifacts[0].Size = -1
		cp.Conversation = json.RawMessage("{}")
		wantErr(t, driver.Validate(cp), driver.ErrInvalidEntry, "")
		cp.ParentCheckpointID = "\xff"
		wantErr(t, driver.Validate(cp), driver.ErrInvalidID, "")
	})
}

func TestValidateID(t *testing.T) {
	for _, tt := range []struct {
		id   string
		want error
	}{
		{"", driver.ErrInvalidID},
		{"\xff", driver.ErrInvalidID},
		{"a\xc3", driver.ErrInvalidID},            // truncated sequence
		{"\xed\xa0\x80", driver.ErrInvalidID},     // a UTF-16 surrogate encoded as UTF-8
		{"\xc0\xaf", driver.ErrInvalidID},         // overlong '/'
		{"\xf4\x90\x80\x80", driver.ErrInvalidID}, // above U+10FFFF
		{"a", nil}, {" ", nil}, {"\x00", nil}, {"\uFFFD", nil}, {"😀", nil}, {"\U0010FFFF", nil},
	} {
		wantErr(t, driver.ValidateID("thread id", tt.id), tt.want, "")
		wantErr(t, driver.ValidateInstanceKey(tt.id), tt.want, "")
	}
	wantErr(t, driver.ValidateID("source thread id", ""), driver.ErrInvalidID, "source thread id")
}

func TestValidateDeleteHead(t *testing.T) {
	w := func(id string) driver.Writer { return driver.Writer{ThreadID: id} }
	for _, tt := range []struct {
		name             string
		thread, cp, wtid string
		want             error
		mentions         string
	}{
		{"valid", "t", "c", "t", nil, ""},
		{"writer of another thread is not an id error", "t", "c", "u", nil, ""},
		{"all invalid: thread first", "", "", "", driver.ErrInvalidID, "thread id"},
		{"then checkpoint", "t", "\xff", "", driver.ErrInvalidID, "checkpoint id"},
		{"then writer", "t", "c", "\xff", driver.ErrInvalidID, "writer thread id"},
		{"thread not UTF-8", "\xff", "c", "t", driver.ErrInvalidID, "thread id"},
		{"checkpoint empty", "t", "", "t", driver.ErrInvalidID, "checkpoint id"},
		{"writer empty", "t", "c", "", driver.ErrInvalidID, "writer thread id"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wantErr(t, driver.ValidateDeleteHead(tt.thread, tt.cp, w(tt.wtid)), tt.want, tt.mentions)
		})
	}
}

func TestValidatePrune(t *testing.T) {
	w := func(id string) driver.Writer { return driver.Writer{ThreadID: id} }
	for _, tt := range []struct {
		name     string
		thread   string
		keep     int
		wtid     string
		want     error
		mentions string
	}{
		{"keep 1", "t", 1, "t", nil, ""},
		{"keep many", "t", 1000, "t", nil, ""},
		{"keep 0", "t", 0, "t", driver.ErrInvalidEntry, "keep"},
		{"keep -1", "t", -1, "t", driver.ErrInvalidEntry, "keep"},
		{"keep MinInt", "t", math.MinInt, "t", driver.ErrInvalidEntry, "keep"},
		{"thread id before keep", "", 0, "t", driver.ErrInvalidID, "thread id"},
		{"writer thread id before keep", "t", 0, "\xff", driver.ErrInvalidID, "writer thread id"},
		{"thread id before writer thread id", "\xff", 0, "", driver.ErrInvalidID, "thread id"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wantErr(t, driver.ValidatePrune(tt.thread, tt.keep, w(tt.wtid)), tt.want, tt.mentions)
		})
	}
	t.Run("keep above 2^53-1", func(t *testing.T) {
		if strconv.IntSize < 64 {
			t.Skip("int is 32 bits: keep cannot exceed 2^53-1")
		}
		big := int64(maxSize)
		wantErr(t, driver.ValidatePrune("t", int(big), w("t")), nil, "")
		wantErr(t, driver.ValidatePrune("t", int(big+1), w("t")), driver.ErrInvalidEntry, "keep")
		wantErr(t, driver.ValidatePrune("t", math.MaxInt, w("t")), driver.ErrInvalidEntry, "keep")
	})
}

func TestValidateFork(t *testing.T) {
	valid := func() driver.ForkInput {
		return driver.ForkInput{
			SourceThreadID: "src", SourceCheckpointID: "cp-1",
			DestinationThreadID: "dst", DestinationCheckpointID: "cp-2",
			CreatedAt: 5, Writer: driver.Writer{ThreadID: "dst", OwnerToken: "tok", Fence: 1},
		}
	}
	wantErr(t, driver.ValidateFork(valid()), nil, "")

	// The writer may name any valid thread here: whether it is the
	// destination's live lease is the store's check.
	in := valid()
	in.Writer.ThreadID = "src"
	wantErr(t, driver.ValidateFork(in), nil, "")

	// Source checkpoint id equal to the destination id is the store's
	// concern (destination not empty), not a validation error.
	in = valid()
	in.DestinationCheckpointID = in.SourceCheckpointID
	wantErr(t, driver.ValidateFork(in), nil, "")

	// First failure wins: the five ids in docs/contract.md's order, then createdAt,
	// then equal threads.
	in = driver.ForkInput{CreatedAt: math.NaN()}
	steps := []struct {
		fix      func(*driver.ForkInput)
		want     error
		mentions string
	}{
		{func(*driver.ForkInput) {}, driver.ErrInvalidID, "source thread id"},
		{func(in *driver.ForkInput) { in.SourceThreadID = "same" }, driver.ErrInvalidID, "source checkpoint id"},
		{func(in *driver.ForkInput) { in.SourceCheckpointID = "cp" }, driver.ErrInvalidID, "destination thread id"},
		{func(in *driver.ForkInput) { in.DestinationThreadID = "same" }, driver.ErrInvalidID, "destination checkpoint id"},
		{func(in *driver.ForkInput) { in.DestinationCheckpointID = "cp2" }, driver.ErrInvalidID, "writer thread id"},
		{func(in *driver.ForkInput) { in.Writer.ThreadID = "same" }, driver.ErrInvalidEntry, "createdAt"},
		{func(in *driver.ForkInput) { in.CreatedAt = 1 }, driver.ErrForkSourceThreadMismatch, ""},
		{func(in *driver.ForkInput) { in.DestinationThreadID = "other" }, nil, ""},
	}
	for i, s := range steps {
		s.fix(&in)
		t.Logf("step %d", i)
		wantErr(t, driver.ValidateFork(in), s.want, s.mentions)
	}

	for _, tt := range []struct {
		name string
		mut  func(*driver.ForkInput)
		want error
	}{
		{"source thread not UTF-8", func(in *driver.ForkInput) { in.SourceThreadID = "\xff" }, driver.ErrInvalidID},
		{"source checkpoint not UTF-8", func(in *driver.ForkInput) { in.SourceCheckpointID = "\xff" }, driver.ErrInvalidID},
		{"destination thread not UTF-8", func(in *driver.ForkInput) { in.DestinationThreadID = "\xff" }, driver.ErrInvalidID},
		{"destination checkpoint not UTF-8", func(in *driver.ForkInput) { in.DestinationCheckpointID = "\xff" }, driver.ErrInvalidID},
		{"writer thread not UTF-8", func(in *driver.ForkInput) { in.Writer.ThreadID = "\xff" }, driver.ErrInvalidID},
		{"createdAt +Inf", func(in *driver.ForkInput) { in.CreatedAt = math.Inf(1) }, driver.ErrInvalidEntry},
		{"createdAt -Inf beats equal threads", func(in *driver.ForkInput) {
			in.CreatedAt = math.Inf(-1)
			in.DestinationThreadID = in.SourceThreadID
		}, driver.ErrInvalidEntry},
		{"equal threads", func(in *driver.ForkInput) { in.DestinationThreadID = in.SourceThreadID }, driver.ErrForkSourceThreadMismatch},
		{"createdAt negative fraction", func(in *driver.ForkInput) { in.CreatedAt = -0.5 }, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := valid()
			tt.mut(&in)
			wantErr(t, driver.ValidateFork(in), tt.want, "")
		})
	}
}

func TestValidateInstanceRecord(t *testing.T) {
	valid := func() *driver.InstanceRecord {
		return &driver.InstanceRecord{Key: "k", Provider: "daytona", ProviderSandboxID: "sb-1", ThreadID: "t",
			LatestSnapshotID: "snap-1", LatestRunID: "run-1", UpdatedAt: 1_700_000_000_000}
	}
	for _, tt := range []struct {
		name string
		mut  func(*driver.InstanceRecord)
		want error
	}{
		{"valid", func(*driver.InstanceRecord) {}, nil},
		{"optional fields empty", func(r *driver.InstanceRecord) { r.LatestSnapshotID, r.LatestRunID = "", "" }, nil},
		{"negative updatedAt", func(r *driver.InstanceRecord) { r.UpdatedAt = -1 }, nil},
		{"empty key", func(r *driver.InstanceRecord) { r.Key = "" }, driver.ErrInvalidID},
		{"key not UTF-8", func(r *driver.InstanceRecord) { r.Key = "\xff" }, driver.ErrInvalidID},
		{"key checked before the other fields", func(r *driver.InstanceRecord) { r.Key, r.Provider = "", "\xff" }, driver.ErrInvalidID},
		{"provider not UTF-8", func(r *driver.InstanceRecord) { r.Provider = "\xff" }, driver.ErrInvalidEntry},
		{"providerSandboxId not UTF-8", func(r *driver.InstanceRecord) { r.ProviderSandboxID = "\xff" }, driver.ErrInvalidEntry},
		{"threadId not UTF-8", func(r *driver.InstanceRecord) { r.ThreadID = "\xff" }, driver.ErrInvalidEntry},
		{"latestSnapshotId not UTF-8", func(r *driver.InstanceRecord) { r.LatestSnapshotID = "\xff" }, driver.ErrInvalidEntry},
		{"latestRunId not UTF-8", func(r *driver.InstanceRecord) { r.LatestRunID = "\xff" }, driver.ErrInvalidEntry},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := valid()
			tt.mut(r)
			wantErr(t, driver.ValidateInstanceRecord(r), tt.want, "")
		})
	}
	wantErr(t, driver.ValidateInstanceRecord(nil), driver.ErrInvalidEntry, "")
}

// A blob key needs its prefix as well as its 64 lowercase hex digits.
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

// Drive letters (isASCIILetter): the first and last letter of each case
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

// TestValidateErrorsAreBounded: however long the field that breaks a rule
// (a path, a reason, a kind, a blob key, an artifact id), the error quotes
// only a prefix of it, and a blob key no longer than a valid one is
// quoted whole.
func TestValidateErrorsAreBounded(t *testing.T) {
	huge := strings.Repeat("x", 1<<20)
	for _, c := range []struct {
		name   string
		mutate func(*driver.Checkpoint)
	}{
		{"path", vFiles(vFile("/" + huge))},
		{"path beneath a file", vFiles(vFile(huge), vFile(huge+"/y"))},
		{"duplicate path", vFiles(vFile(huge), vFile(huge))},
		{"reason", func(cp *driver.Checkpoint) { cp.Reason = driver.Reason(huge) }},
		{"kind", vFiles(driver.Entry{Path: "p", Kind: driver.EntryKind(huge)})},
		{"file blob key", vFiles(driver.Entry{Path: "p", Kind: driver.KindFile, BlobKey: huge, Size: 1})},
		{"artifact id", vArt(func(a *driver.Artifact) { a.ArtifactID, a.Size = huge, -1 })},
	} {
		err := driver.Validate(func() *driver.Checkpoint { cp := validCheckpoint(); c.mutate(cp); return cp }())
		if err == nil || len(err.Error()) > 600 {
			t.Errorf("%s of 1 MiB: a %d-byte error", c.name, len(fmt.Sprint(err)))
		}
	}
	bad := "sandbox-files/sha256/" + vHex64[:63] + "G"
	err := driver.Validate(func() *driver.Checkpoint {
		cp := validCheckpoint()
		cp.Files = []driver.Entry{{Path: "p", Kind: driver.KindFile, BlobKey: bad, Size: 1}}
		return cp
	}())
	if err == nil || !strings.Contains(err.Error(), strconv.Quote(bad)) {
		t.Errorf("a blob key of the valid length is quoted whole: %v", err)
	}
}
