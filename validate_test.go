package ckptstore_test

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/ckptstore/ckptstore"
)

const maxSize = 1<<53 - 1 // 2^53−1, the largest size docs/contract.md allows

func TestMaxSize(t *testing.T) {
	if ckptstore.MaxSize != maxSize {
		t.Fatalf("MaxSize = %d, want 2^53-1", int64(ckptstore.MaxSize))
	}
}

// validateCase is one case of TestValidate: a change to a valid
// checkpoint and the error Validate must give for it (nil: still valid).
type validateCase struct {
	name   string
	mutate func(*ckptstore.Checkpoint)
	want   error
}

// Builders of TestValidate's cases.
func vFile(path string) ckptstore.Entry {
	return ckptstore.Entry{Path: path, Kind: ckptstore.KindFile, BlobKey: fileKey(9), Size: 1}
}

func vDir(path string) ckptstore.Entry { return ckptstore.Entry{Path: path, Kind: ckptstore.KindDir} }

func vFiles(es ...ckptstore.Entry) func(*ckptstore.Checkpoint) {
	return func(cp *ckptstore.Checkpoint) { cp.Files = es }
}

func vArt(f func(*ckptstore.Artifact)) func(*ckptstore.Checkpoint) {
	return func(cp *ckptstore.Checkpoint) { f(&cp.Artifacts[0]) }
}

func vConv(s string) func(*ckptstore.Checkpoint) {
	return func(cp *ckptstore.Checkpoint) { cp.Conversation = json.RawMessage(s) }
}

// vHex64 is 64 lowercase hex digits, the digest of a valid blob key.
var vHex64 = strings.Repeat("ab", 32)

// TestValidate breaks one rule of docs/contract.md's Validation section per case, and
// checks the valid edge next to each rule.
func TestValidate(t *testing.T) {
	tests := []validateCase{
		{"valid", func(*ckptstore.Checkpoint) {}, nil},
		{"minimal: no parent, files, conversation or artifacts", func(cp *ckptstore.Checkpoint) {
			*cp = ckptstore.Checkpoint{ID: "c", ThreadID: "t", Reason: ckptstore.ReasonAutomatic}
		}, nil},
	}
	for _, group := range [][]validateCase{idCases(), fieldCases(), conversationCases(), pathCases(), treeCases(), fileFieldCases(), artifactCases()} {
		tests = append(tests, group...)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cp := validCheckpoint()
			tt.mutate(cp)
			wantErr(t, ckptstore.Validate(cp), tt.want, "")
			// ValidateAppend runs the same checks once the writer and the
			// expected head are valid.
			wantErr(t, ckptstore.ValidateAppend(cp, "cp-1", ckptstore.Writer{ThreadID: "thread-1"}), tt.want, "")
		})
	}
}

// idCases: ids.
func idCases() []validateCase {
	return []validateCase{
		{"empty id", func(cp *ckptstore.Checkpoint) { cp.ID = "" }, ckptstore.ErrInvalidID},
		{"id not UTF-8", func(cp *ckptstore.Checkpoint) { cp.ID = "c\xff" }, ckptstore.ErrInvalidID},
		{"id is a lone surrogate in WTF-8", func(cp *ckptstore.Checkpoint) { cp.ID = "\xed\xa0\x80" }, ckptstore.ErrInvalidID},
		{"empty thread id", func(cp *ckptstore.Checkpoint) { cp.ThreadID = "" }, ckptstore.ErrInvalidID},
		{"thread id not UTF-8", func(cp *ckptstore.Checkpoint) { cp.ThreadID = "\x80" }, ckptstore.ErrInvalidID},
		{"parent not UTF-8", func(cp *ckptstore.Checkpoint) { cp.ParentCheckpointID = "p\xc3" }, ckptstore.ErrInvalidID},
		{"unicode ids", func(cp *ckptstore.Checkpoint) {
			cp.ID, cp.ThreadID, cp.ParentCheckpointID = "チェック", "🧵", "親"
		}, nil},
		{"ids with NUL and spaces are valid", func(cp *ckptstore.Checkpoint) { cp.ID = "a\x00 b" }, nil},
	}
}

// fieldCases: createdAt, reason, optional strings.
func fieldCases() []validateCase {
	return []validateCase{
		{"createdAt NaN", func(cp *ckptstore.Checkpoint) { cp.CreatedAt = math.NaN() }, ckptstore.ErrInvalidEntry},
		{"createdAt +Inf", func(cp *ckptstore.Checkpoint) { cp.CreatedAt = math.Inf(1) }, ckptstore.ErrInvalidEntry},
		{"createdAt -Inf", func(cp *ckptstore.Checkpoint) { cp.CreatedAt = math.Inf(-1) }, ckptstore.ErrInvalidEntry},
		{"createdAt negative, fractional", func(cp *ckptstore.Checkpoint) { cp.CreatedAt = -1.25 }, nil},
		{"createdAt -0", func(cp *ckptstore.Checkpoint) { cp.CreatedAt = math.Copysign(0, -1) }, nil},
		{"createdAt MaxFloat64", func(cp *ckptstore.Checkpoint) { cp.CreatedAt = math.MaxFloat64 }, nil},
		{"createdAt smallest subnormal", func(cp *ckptstore.Checkpoint) { cp.CreatedAt = math.SmallestNonzeroFloat64 }, nil},
		{"reason empty", func(cp *ckptstore.Checkpoint) { cp.Reason = "" }, ckptstore.ErrInvalidEntry},
		{"reason other case", func(cp *ckptstore.Checkpoint) { cp.Reason = "Automatic" }, ckptstore.ErrInvalidEntry},
		{"reason unknown", func(cp *ckptstore.Checkpoint) { cp.Reason = "manual" }, ckptstore.ErrInvalidEntry},
		{"reason automatic", func(cp *ckptstore.Checkpoint) { cp.Reason = ckptstore.ReasonAutomatic }, nil},
		{"reason fork-root", func(cp *ckptstore.Checkpoint) { cp.Reason = ckptstore.ReasonForkRoot }, nil},
		{"label not UTF-8", func(cp *ckptstore.Checkpoint) { cp.Label = "\xff" }, ckptstore.ErrInvalidEntry},
		{"sourceRunId not UTF-8", func(cp *ckptstore.Checkpoint) { cp.SourceRunID = "\xff" }, ckptstore.ErrInvalidEntry},
	}
}

// conversationCases: conversation.
func conversationCases() []validateCase {
	return []validateCase{
		{"conversation empty non-nil", vConv(""), nil},
		{"conversation []", vConv("[]"), nil},
		{"conversation [] after whitespace", vConv(" \n[]"), nil},
		{"conversation of two bytes ending in ]", vConv("{]"), ckptstore.ErrInvalidEntry},
		{"conversation of two bytes starting with [", vConv("[}"), ckptstore.ErrInvalidEntry},
		{"conversation with odd whitespace", vConv(" \t\r\n[ 1 ,\n\"x\" ]\n "), nil},
		{"conversation keeps escaped lone surrogates (opaque)", vConv(`["\ud800"]`), nil},
		{"conversation object", vConv(`{"role":"user"}`), ckptstore.ErrInvalidEntry},
		{"conversation null", vConv("null"), ckptstore.ErrInvalidEntry},
		{"conversation string", vConv(`"[]"`), ckptstore.ErrInvalidEntry},
		{"conversation only whitespace", vConv("  "), ckptstore.ErrInvalidEntry},
		{"conversation unterminated", vConv("[1,"), ckptstore.ErrInvalidEntry},
		{"conversation trailing data", vConv("[] []"), ckptstore.ErrInvalidEntry},
		{"conversation invalid UTF-8 in a string", vConv("[\"\xff\"]"), ckptstore.ErrInvalidEntry},
		{"conversation BOM", vConv("\uFEFF[]"), ckptstore.ErrInvalidEntry},
	}
}

// pathCases: paths.
func pathCases() []validateCase {
	return []validateCase{
		{"path empty", vFiles(vFile("")), ckptstore.ErrInvalidEntry},
		{"path NUL", vFiles(vFile("a\x00b")), ckptstore.ErrInvalidEntry},
		{"path not UTF-8", vFiles(vFile("a\xff")), ckptstore.ErrInvalidEntry},
		{"path absolute /", vFiles(vFile("/etc/passwd")), ckptstore.ErrInvalidEntry},
		{"path absolute \\", vFiles(vFile(`\server\share`)), ckptstore.ErrInvalidEntry},
		{"path drive letter and /", vFiles(vFile("C:/x")), ckptstore.ErrInvalidEntry},
		{"path drive letter and \\", vFiles(vFile(`c:\x`)), ckptstore.ErrInvalidEntry},
		{"path drive letter alone", vFiles(vFile("C:")), ckptstore.ErrInvalidEntry},
		{"path lowercase drive letter alone", vFiles(vFile("z:")), ckptstore.ErrInvalidEntry},
		{"path drive-relative C:foo is valid", vFiles(vFile("C:foo")), nil},
		{"path C:foo/bar is valid", vFiles(vDir("C:foo"), vFile("C:foo/bar")), nil},
		{"path digit colon is valid", vFiles(vFile("1:")), nil},
		{"path two letters colon is valid", vFiles(vFile("ab:")), nil},
		{"path non-ASCII letter colon is valid", vFiles(vFile("é:")), nil},
		{"path backslash inside", vFiles(vFile(`a\b`)), ckptstore.ErrInvalidEntry},
		{"path empty segment", vFiles(vFile("a//b")), ckptstore.ErrInvalidEntry},
		{"path trailing slash", vFiles(vFile("a/")), ckptstore.ErrInvalidEntry},
		{"path .", vFiles(vFile(".")), ckptstore.ErrInvalidEntry},
		{"path ..", vFiles(vFile("..")), ckptstore.ErrInvalidEntry},
		{"path ./a", vFiles(vFile("./a")), ckptstore.ErrInvalidEntry},
		{"path a/./b", vFiles(vFile("a/./b")), ckptstore.ErrInvalidEntry},
		{"path a/..", vFiles(vFile("a/..")), ckptstore.ErrInvalidEntry},
		{"path a/../b", vFiles(vFile("a/../b")), ckptstore.ErrInvalidEntry},
		{"path dot-names are valid", vFiles(vFile(".env"), vFile("..a"), vFile("a.."), vFile("...")), nil},
		{"path with spaces and unicode", vFiles(vDir(" ü"), vFile(" ü/ファイル .txt")), nil},
	}
}

// treeCases: kinds and the tree.
func treeCases() []validateCase {
	return []validateCase{
		{"kind empty", vFiles(ckptstore.Entry{Path: "a", BlobKey: fileKey(1)}), ckptstore.ErrInvalidEntry},
		{"kind symlink", vFiles(ckptstore.Entry{Path: "a", Kind: "symlink"}), ckptstore.ErrInvalidEntry},
		{"kind File", vFiles(ckptstore.Entry{Path: "a", Kind: "File", BlobKey: fileKey(1)}), ckptstore.ErrInvalidEntry},
		{"duplicate file", vFiles(vFile("a"), vFile("a")), ckptstore.ErrInvalidEntry},
		{"duplicate file and dir", vFiles(vDir("a"), vFile("a")), ckptstore.ErrInvalidEntry},
		{"duplicate dir", vFiles(vDir("a"), vDir("a")), ckptstore.ErrInvalidEntry},
		{"file beneath a file", vFiles(vFile("a"), vFile("a/b")), ckptstore.ErrInvalidEntry},
		{"file beneath a file, child listed first", vFiles(vFile("a/b"), vFile("a")), ckptstore.ErrInvalidEntry},
		{"dir beneath a file", vFiles(vFile("a"), vDir("a/b")), ckptstore.ErrInvalidEntry},
		{"deep entry beneath a file, no dirs between", vFiles(vFile("a"), vFile("a/b/c/d")), ckptstore.ErrInvalidEntry},
		{"entry beneath a file deeper in the tree", vFiles(vDir("a"), vFile("a/b"), vFile("a/b/c")), ckptstore.ErrInvalidEntry},
		{"entries beneath a dir", vFiles(vDir("a"), vDir("a/b"), vFile("a/b/c"), vFile("a/d")), nil},
		{"entry beneath an unlisted dir", vFiles(vFile("x/y/z")), nil},
		{"file is a name prefix, not an ancestor", vFiles(vFile("a"), vFile("ab/c"), vFile("a.b")), nil},
	}
}

// fileFieldCases: file fields.
func fileFieldCases() []validateCase {
	return []validateCase{
		{"file size 0", vFiles(ckptstore.Entry{Path: "a", Kind: ckptstore.KindFile, BlobKey: fileKey(1)}), nil},
		{"file size 2^53-1", vFiles(ckptstore.Entry{Path: "a", Kind: ckptstore.KindFile, BlobKey: fileKey(1), Size: maxSize}), nil},
		{"file size 2^53", vFiles(ckptstore.Entry{Path: "a", Kind: ckptstore.KindFile, BlobKey: fileKey(1), Size: maxSize + 1}), ckptstore.ErrInvalidEntry},
		{"file size -1", vFiles(ckptstore.Entry{Path: "a", Kind: ckptstore.KindFile, BlobKey: fileKey(1), Size: -1}), ckptstore.ErrInvalidEntry},
		{"file size MinInt64", vFiles(ckptstore.Entry{Path: "a", Kind: ckptstore.KindFile, BlobKey: fileKey(1), Size: math.MinInt64}), ckptstore.ErrInvalidEntry},
		{"file without blobKey", vFiles(ckptstore.Entry{Path: "a", Kind: ckptstore.KindFile, Size: 1}), ckptstore.ErrInvalidEntry},
		{"file blobKey of an artifact", vFiles(ckptstore.Entry{Path: "a", Kind: ckptstore.KindFile, BlobKey: artifactKey(1)}), ckptstore.ErrInvalidEntry},
		{"file blobKey uppercase hex", vFiles(ckptstore.Entry{Path: "a", Kind: ckptstore.KindFile, BlobKey: "sandbox-files/sha256/" + strings.Repeat("AB", 32)}), ckptstore.ErrInvalidEntry},
		{"file blobKey 63 hex", vFiles(ckptstore.Entry{Path: "a", Kind: ckptstore.KindFile, BlobKey: "sandbox-files/sha256/" + vHex64[1:]}), ckptstore.ErrInvalidEntry},
		{"file blobKey 65 hex", vFiles(ckptstore.Entry{Path: "a", Kind: ckptstore.KindFile, BlobKey: "sandbox-files/sha256/" + vHex64 + "a"}), ckptstore.ErrInvalidEntry},
		{"file blobKey non-hex", vFiles(ckptstore.Entry{Path: "a", Kind: ckptstore.KindFile, BlobKey: "sandbox-files/sha256/" + vHex64[:63] + "g"}), ckptstore.ErrInvalidEntry},
		{"file blobKey other algorithm", vFiles(ckptstore.Entry{Path: "a", Kind: ckptstore.KindFile, BlobKey: "sandbox-files/sha512/" + vHex64}), ckptstore.ErrInvalidEntry},
		{"file blobKey with a leading slash", vFiles(ckptstore.Entry{Path: "a", Kind: ckptstore.KindFile, BlobKey: "/sandbox-files/sha256/" + vHex64}), ckptstore.ErrInvalidEntry},
		{"file blobKey not UTF-8 is an entry error", vFiles(ckptstore.Entry{Path: "a", Kind: ckptstore.KindFile, BlobKey: "sandbox-files/sha256/" + vHex64[:63] + "\xff"}), ckptstore.ErrInvalidEntry},
		{"dir with blobKey", vFiles(ckptstore.Entry{Path: "a", Kind: ckptstore.KindDir, BlobKey: fileKey(1)}), ckptstore.ErrInvalidEntry},
		{"dir with size", vFiles(ckptstore.Entry{Path: "a", Kind: ckptstore.KindDir, Size: 1}), ckptstore.ErrInvalidEntry},
		{"dir with negative size", vFiles(ckptstore.Entry{Path: "a", Kind: ckptstore.KindDir, Size: -1}), ckptstore.ErrInvalidEntry},
		{"two files share a blob", vFiles(vFile("a"), vFile("b")), nil},
	}
}

// artifactCases: artifacts.
func artifactCases() []validateCase {
	return []validateCase{
		{"artifact empty id", vArt(func(a *ckptstore.Artifact) { a.ArtifactID = "" }), ckptstore.ErrInvalidEntry},
		{"artifact empty name", vArt(func(a *ckptstore.Artifact) { a.Name = "" }), ckptstore.ErrInvalidEntry},
		{"artifact empty mimeType", vArt(func(a *ckptstore.Artifact) { a.MimeType = "" }), ckptstore.ErrInvalidEntry},
		{"artifact id not UTF-8", vArt(func(a *ckptstore.Artifact) { a.ArtifactID = "\xff" }), ckptstore.ErrInvalidEntry},
		{"artifact name not UTF-8", vArt(func(a *ckptstore.Artifact) { a.Name = "\xff" }), ckptstore.ErrInvalidEntry},
		{"artifact mimeType not UTF-8", vArt(func(a *ckptstore.Artifact) { a.MimeType = "\xff" }), ckptstore.ErrInvalidEntry},
		{"artifact blobKey of a file", vArt(func(a *ckptstore.Artifact) { a.BlobKey = fileKey(1) }), ckptstore.ErrInvalidEntry},
		{"artifact blobKey empty", vArt(func(a *ckptstore.Artifact) { a.BlobKey = "" }), ckptstore.ErrInvalidEntry},
		{"artifact blobKey uppercase", vArt(func(a *ckptstore.Artifact) { a.BlobKey = "sandbox-artifacts/sha256/" + strings.Repeat("AB", 32) }), ckptstore.ErrInvalidEntry},
		{"artifact blobKey not UTF-8", vArt(func(a *ckptstore.Artifact) { a.BlobKey = "sandbox-artifacts/sha256/" + vHex64[:63] + "\xff" }), ckptstore.ErrInvalidEntry},
		{"artifact size -1", vArt(func(a *ckptstore.Artifact) { a.Size = -1 }), ckptstore.ErrInvalidEntry},
		{"artifact size 2^53", vArt(func(a *ckptstore.Artifact) { a.Size = maxSize + 1 }), ckptstore.ErrInvalidEntry},
		{"artifact size 2^53-1", vArt(func(a *ckptstore.Artifact) { a.Size = maxSize }), nil},
		{"artifact size 0", vArt(func(a *ckptstore.Artifact) { a.Size = 0 }), nil},
		{"artifact createdAt NaN", vArt(func(a *ckptstore.Artifact) { a.CreatedAt = math.NaN() }), ckptstore.ErrInvalidEntry},
		{"artifact createdAt -Inf", vArt(func(a *ckptstore.Artifact) { a.CreatedAt = math.Inf(-1) }), ckptstore.ErrInvalidEntry},
		{"artifact createdAt negative", vArt(func(a *ckptstore.Artifact) { a.CreatedAt = -5.5 }), nil},
	}
}

func TestValidateNil(t *testing.T) {
	wantErr(t, ckptstore.Validate(nil), ckptstore.ErrInvalidEntry, "")
	wantErr(t, ckptstore.ValidateAppend(nil, "", ckptstore.Writer{ThreadID: "t"}), ckptstore.ErrInvalidEntry, "")
}

// Validate must not change its argument: stores call it on the caller's value.
func TestValidateDoesNotMutate(t *testing.T) {
	cp := validCheckpoint()
	before, err := json.Marshal(cp)
	if err != nil {
		t.Fatal(err)
	}
	if err := ckptstore.Validate(cp); err != nil {
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
		wantErr(t, ckptstore.Validate(cp), ckptstore.ErrInvalidID, "checkpoint id")
		cp.ID = "c"
		wantErr(t, ckptstore.Validate(cp), ckptstore.ErrInvalidID, "thread id")
		cp.ThreadID = "t"
		wantErr(t, ckptstore.Validate(cp), ckptstore.ErrInvalidID, "parentCheckpointId")
		cp.ParentCheckpointID = ""
		wantErr(t, ckptstore.Validate(cp), ckptstore.ErrInvalidEntry, "createdAt")
	})
	t.Run("ValidateAppend", func(t *testing.T) {
		// Step 1 in docs/contract.md's order: checkpoint id, thread id, writer
		// thread id, expected head, parent; then step 2.
		cp := validCheckpoint()
		cp.ID, cp.ThreadID, cp.ParentCheckpointID = "", "", "\xff"
		cp.Files = []ckptstore.Entry{{Path: "/abs", Kind: ckptstore.KindDir}}
		w := ckptstore.Writer{ThreadID: ""}
		head := "\xfe"
		wantErr(t, ckptstore.ValidateAppend(cp, head, w), ckptstore.ErrInvalidID, "checkpoint id")
		cp.ID = "c"
		wantErr(t, ckptstore.ValidateAppend(cp, head, w), ckptstore.ErrInvalidID, "thread id")
		cp.ThreadID = "t"
		wantErr(t, ckptstore.ValidateAppend(cp, head, w), ckptstore.ErrInvalidID, "writer thread id")
		w.ThreadID = "other thread" // not the checkpoint's: a writer check, not an id check
		wantErr(t, ckptstore.ValidateAppend(cp, head, w), ckptstore.ErrInvalidID, "expected head")
		head = ""
		wantErr(t, ckptstore.ValidateAppend(cp, head, w), ckptstore.ErrInvalidID, "parentCheckpointId")
		cp.ParentCheckpointID = ""
		wantErr(t, ckptstore.ValidateAppend(cp, head, w), ckptstore.ErrInvalidEntry, "/abs")
		cp.Files = nil
		wantErr(t, ckptstore.ValidateAppend(cp, head, w), nil, "")
	})
	t.Run("content", func(t *testing.T) {
		// Every content failure is ErrInvalidEntry; a bad id still wins over
		// all of them.
		cp := validCheckpoint()
		cp.CreatedAt = math.Inf(1)
		cp.Reason = "x"
		cp.Files = []ckptstore.Entry{{Path: "..", Kind: "x"}}
		cp.Artifacts[0].Size = -1
		cp.Conversation = json.RawMessage("{}")
		wantErr(t, ckptstore.Validate(cp), ckptstore.ErrInvalidEntry, "")
		cp.ParentCheckpointID = "\xff"
		wantErr(t, ckptstore.Validate(cp), ckptstore.ErrInvalidID, "")
	})
}

func TestValidateID(t *testing.T) {
	for _, tt := range []struct {
		id   string
		want error
	}{
		{"", ckptstore.ErrInvalidID},
		{"\xff", ckptstore.ErrInvalidID},
		{"a\xc3", ckptstore.ErrInvalidID},            // truncated sequence
		{"\xed\xa0\x80", ckptstore.ErrInvalidID},     // a UTF-16 surrogate encoded as UTF-8
		{"\xc0\xaf", ckptstore.ErrInvalidID},         // overlong '/'
		{"\xf4\x90\x80\x80", ckptstore.ErrInvalidID}, // above U+10FFFF
		{"a", nil}, {" ", nil}, {"\x00", nil}, {"\uFFFD", nil}, {"😀", nil}, {"\U0010FFFF", nil},
	} {
		wantErr(t, ckptstore.ValidateID("thread id", tt.id), tt.want, "")
		wantErr(t, ckptstore.ValidateInstanceKey(tt.id), tt.want, "")
	}
	wantErr(t, ckptstore.ValidateID("source thread id", ""), ckptstore.ErrInvalidID, "source thread id")
}

func TestValidateDeleteHead(t *testing.T) {
	w := func(id string) ckptstore.Writer { return ckptstore.Writer{ThreadID: id} }
	for _, tt := range []struct {
		name             string
		thread, cp, wtid string
		want             error
		mentions         string
	}{
		{"valid", "t", "c", "t", nil, ""},
		{"writer of another thread is not an id error", "t", "c", "u", nil, ""},
		{"all invalid: thread first", "", "", "", ckptstore.ErrInvalidID, "thread id"},
		{"then checkpoint", "t", "\xff", "", ckptstore.ErrInvalidID, "checkpoint id"},
		{"then writer", "t", "c", "\xff", ckptstore.ErrInvalidID, "writer thread id"},
		{"thread not UTF-8", "\xff", "c", "t", ckptstore.ErrInvalidID, "thread id"},
		{"checkpoint empty", "t", "", "t", ckptstore.ErrInvalidID, "checkpoint id"},
		{"writer empty", "t", "c", "", ckptstore.ErrInvalidID, "writer thread id"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wantErr(t, ckptstore.ValidateDeleteHead(tt.thread, tt.cp, w(tt.wtid)), tt.want, tt.mentions)
		})
	}
}

func TestValidatePrune(t *testing.T) {
	w := func(id string) ckptstore.Writer { return ckptstore.Writer{ThreadID: id} }
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
		{"keep 0", "t", 0, "t", ckptstore.ErrInvalidEntry, "keep"},
		{"keep -1", "t", -1, "t", ckptstore.ErrInvalidEntry, "keep"},
		{"keep MinInt", "t", math.MinInt, "t", ckptstore.ErrInvalidEntry, "keep"},
		{"thread id before keep", "", 0, "t", ckptstore.ErrInvalidID, "thread id"},
		{"writer thread id before keep", "t", 0, "\xff", ckptstore.ErrInvalidID, "writer thread id"},
		{"thread id before writer thread id", "\xff", 0, "", ckptstore.ErrInvalidID, "thread id"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			wantErr(t, ckptstore.ValidatePrune(tt.thread, tt.keep, w(tt.wtid)), tt.want, tt.mentions)
		})
	}
	t.Run("keep above 2^53-1", func(t *testing.T) {
		if strconv.IntSize < 64 {
			t.Skip("int is 32 bits: keep cannot exceed 2^53-1")
		}
		big := int64(maxSize)
		wantErr(t, ckptstore.ValidatePrune("t", int(big), w("t")), nil, "")
		wantErr(t, ckptstore.ValidatePrune("t", int(big+1), w("t")), ckptstore.ErrInvalidEntry, "keep")
		wantErr(t, ckptstore.ValidatePrune("t", math.MaxInt, w("t")), ckptstore.ErrInvalidEntry, "keep")
	})
}

func TestValidateFork(t *testing.T) {
	valid := func() ckptstore.ForkInput {
		return ckptstore.ForkInput{
			SourceThreadID: "src", SourceCheckpointID: "cp-1",
			DestinationThreadID: "dst", DestinationCheckpointID: "cp-2",
			CreatedAt: 5, Writer: ckptstore.Writer{ThreadID: "dst", OwnerToken: "tok", Fence: 1},
		}
	}
	wantErr(t, ckptstore.ValidateFork(valid()), nil, "")

	// The writer may name any valid thread here: whether it is the
	// destination's live lease is the store's check.
	in := valid()
	in.Writer.ThreadID = "src"
	wantErr(t, ckptstore.ValidateFork(in), nil, "")

	// Source checkpoint id equal to the destination id is the store's
	// concern (destination not empty), not a validation error.
	in = valid()
	in.DestinationCheckpointID = in.SourceCheckpointID
	wantErr(t, ckptstore.ValidateFork(in), nil, "")

	// First failure wins: the five ids in docs/contract.md's order, then createdAt,
	// then equal threads.
	in = ckptstore.ForkInput{CreatedAt: math.NaN()}
	steps := []struct {
		fix      func(*ckptstore.ForkInput)
		want     error
		mentions string
	}{
		{func(*ckptstore.ForkInput) {}, ckptstore.ErrInvalidID, "source thread id"},
		{func(in *ckptstore.ForkInput) { in.SourceThreadID = "same" }, ckptstore.ErrInvalidID, "source checkpoint id"},
		{func(in *ckptstore.ForkInput) { in.SourceCheckpointID = "cp" }, ckptstore.ErrInvalidID, "destination thread id"},
		{func(in *ckptstore.ForkInput) { in.DestinationThreadID = "same" }, ckptstore.ErrInvalidID, "destination checkpoint id"},
		{func(in *ckptstore.ForkInput) { in.DestinationCheckpointID = "cp2" }, ckptstore.ErrInvalidID, "writer thread id"},
		{func(in *ckptstore.ForkInput) { in.Writer.ThreadID = "same" }, ckptstore.ErrInvalidEntry, "createdAt"},
		{func(in *ckptstore.ForkInput) { in.CreatedAt = 1 }, ckptstore.ErrForkSourceThreadMismatch, ""},
		{func(in *ckptstore.ForkInput) { in.DestinationThreadID = "other" }, nil, ""},
	}
	for i, s := range steps {
		s.fix(&in)
		t.Logf("step %d", i)
		wantErr(t, ckptstore.ValidateFork(in), s.want, s.mentions)
	}

	for _, tt := range []struct {
		name string
		mut  func(*ckptstore.ForkInput)
		want error
	}{
		{"source thread not UTF-8", func(in *ckptstore.ForkInput) { in.SourceThreadID = "\xff" }, ckptstore.ErrInvalidID},
		{"source checkpoint not UTF-8", func(in *ckptstore.ForkInput) { in.SourceCheckpointID = "\xff" }, ckptstore.ErrInvalidID},
		{"destination thread not UTF-8", func(in *ckptstore.ForkInput) { in.DestinationThreadID = "\xff" }, ckptstore.ErrInvalidID},
		{"destination checkpoint not UTF-8", func(in *ckptstore.ForkInput) { in.DestinationCheckpointID = "\xff" }, ckptstore.ErrInvalidID},
		{"writer thread not UTF-8", func(in *ckptstore.ForkInput) { in.Writer.ThreadID = "\xff" }, ckptstore.ErrInvalidID},
		{"createdAt +Inf", func(in *ckptstore.ForkInput) { in.CreatedAt = math.Inf(1) }, ckptstore.ErrInvalidEntry},
		{"createdAt -Inf beats equal threads", func(in *ckptstore.ForkInput) {
			in.CreatedAt = math.Inf(-1)
			in.DestinationThreadID = in.SourceThreadID
		}, ckptstore.ErrInvalidEntry},
		{"equal threads", func(in *ckptstore.ForkInput) { in.DestinationThreadID = in.SourceThreadID }, ckptstore.ErrForkSourceThreadMismatch},
		{"createdAt negative fraction", func(in *ckptstore.ForkInput) { in.CreatedAt = -0.5 }, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := valid()
			tt.mut(&in)
			wantErr(t, ckptstore.ValidateFork(in), tt.want, "")
		})
	}
}

func TestValidateInstanceRecord(t *testing.T) {
	valid := func() *ckptstore.InstanceRecord {
		return &ckptstore.InstanceRecord{Key: "k", Provider: "daytona", ProviderSandboxID: "sb-1", ThreadID: "t",
			LatestSnapshotID: "snap-1", LatestRunID: "run-1", UpdatedAt: 1_700_000_000_000}
	}
	for _, tt := range []struct {
		name string
		mut  func(*ckptstore.InstanceRecord)
		want error
	}{
		{"valid", func(*ckptstore.InstanceRecord) {}, nil},
		{"optional fields empty", func(r *ckptstore.InstanceRecord) { r.LatestSnapshotID, r.LatestRunID = "", "" }, nil},
		{"negative updatedAt", func(r *ckptstore.InstanceRecord) { r.UpdatedAt = -1 }, nil},
		{"empty key", func(r *ckptstore.InstanceRecord) { r.Key = "" }, ckptstore.ErrInvalidID},
		{"key not UTF-8", func(r *ckptstore.InstanceRecord) { r.Key = "\xff" }, ckptstore.ErrInvalidID},
		{"key checked before the other fields", func(r *ckptstore.InstanceRecord) { r.Key, r.Provider = "", "\xff" }, ckptstore.ErrInvalidID},
		{"provider not UTF-8", func(r *ckptstore.InstanceRecord) { r.Provider = "\xff" }, ckptstore.ErrInvalidEntry},
		{"providerSandboxId not UTF-8", func(r *ckptstore.InstanceRecord) { r.ProviderSandboxID = "\xff" }, ckptstore.ErrInvalidEntry},
		{"threadId not UTF-8", func(r *ckptstore.InstanceRecord) { r.ThreadID = "\xff" }, ckptstore.ErrInvalidEntry},
		{"latestSnapshotId not UTF-8", func(r *ckptstore.InstanceRecord) { r.LatestSnapshotID = "\xff" }, ckptstore.ErrInvalidEntry},
		{"latestRunId not UTF-8", func(r *ckptstore.InstanceRecord) { r.LatestRunID = "\xff" }, ckptstore.ErrInvalidEntry},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := valid()
			tt.mut(r)
			wantErr(t, ckptstore.ValidateInstanceRecord(r), tt.want, "")
		})
	}
	wantErr(t, ckptstore.ValidateInstanceRecord(nil), ckptstore.ErrInvalidEntry, "")
}

// A blob key needs its prefix as well as its 64 lowercase hex digits.
func TestValidateBlobKeyWithoutPrefix(t *testing.T) {
	hex := strings.Repeat("0a", 32)
	for _, tc := range []struct {
		name string
		mod  func(*ckptstore.Checkpoint)
	}{
		{"file key of bare hex", func(cp *ckptstore.Checkpoint) { cp.Files[1].BlobKey = hex }},
		{"file key with the prefix's slash missing", func(cp *ckptstore.Checkpoint) { cp.Files[1].BlobKey = "sandbox-files/sha256" + hex }},
		{"artifact key of bare hex", func(cp *ckptstore.Checkpoint) { cp.Artifacts[0].BlobKey = hex }},
		{"artifact key with a file prefix", func(cp *ckptstore.Checkpoint) { cp.Artifacts[0].BlobKey = "sandbox-files/sha256/" + hex }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cp := validCheckpoint()
			tc.mod(cp)
			wantErr(t, ckptstore.Validate(cp), ckptstore.ErrInvalidEntry, "blobKey")
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
		wantErr(t, ckptstore.Validate(cp), ckptstore.ErrInvalidEntry, "drive letter")
	}
	for _, p := range []string{"@:", "[:", "`:", "{:", "@:/x", "{:/x"} {
		cp := validCheckpoint()
		cp.Files[2].Path = p
		if err := ckptstore.Validate(cp); err != nil {
			t.Errorf("path %q: %v, want valid (not a drive letter)", p, err)
		}
	}
}
