package conformance

// Every rule of docs/contract.md's Validation section as its own named case: inputs
// that must fail (and change nothing), and edge cases that must be accepted
// and come back unchanged.

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/contract"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

// A mod turns the suite's valid base checkpoint into a test case.
type mod = func(c *ckptstore.Checkpoint)

func files(es ...ckptstore.Entry) mod {
	return func(c *ckptstore.Checkpoint) { c.Files = es }
}

func pathFile(p string) mod { return files(testkit.File(p, 1, 1)) }

func fileWithKey(key string) mod {
	return files(ckptstore.Entry{Path: "f", Kind: ckptstore.KindFile, BlobKey: key, Size: 1})
}

func fileWithSize(n int64) mod {
	return files(ckptstore.Entry{Path: "f", Kind: ckptstore.KindFile, BlobKey: testkit.FileKey(1), Size: n})
}

func withArtifact(f func(a *ckptstore.Artifact)) mod {
	return func(c *ckptstore.Checkpoint) {
		a := testkit.Artifact("art", 1)
		f(&a)
		c.Artifacts = []ckptstore.Artifact{testkit.Artifact("ok", 2), a}
	}
}

const hex64 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// modCase is a named change to the suite's valid base checkpoint.
type modCase struct {
	name string
	mod  mod
}

// pathCases is a case named "path " and p for each path p: a file at p.
func pathCases(paths ...string) []modCase {
	cs := make([]modCase, len(paths))
	for i, p := range paths {
		cs[i] = modCase{"path " + p, pathFile(p)}
	}
	return cs
}

// invalidEntryCases must each fail Append with ErrInvalidEntry: the paths
// (the edges of a-z and A-Z are drive letters too), then the other cases.
var invalidEntryCases = append(pathCases("/a", "/", `\a`, "C:", "z:", "c:/x", `C:\x`, `a\b`, `a\`, "a//b", "a/",
	"./a", "a/./b", "a/.", "a/..", "a/../b", ".", "..", "a:", "A:", "Z:/x"), []modCase{
	{"path empty", pathFile("")},
	{"path NUL", pathFile("\x00")},
	{"path with NUL", pathFile("a\x00b")},
	{"path invalid UTF-8", pathFile("\xff")},
	{"path truncated UTF-8", pathFile("a/\xc3")},
	{"dir path absolute", files(testkit.Dir("/a"))},
	{"dir path with ..", files(testkit.Dir("a/.."))},
	// duplicates and nesting
	{"duplicate file", files(testkit.File("a", 1, 1), testkit.File("a", 1, 1))},
	{"duplicate file and dir", files(testkit.File("a", 1, 1), testkit.Dir("a"))},
	{"duplicate dir and file", files(testkit.Dir("a"), testkit.File("a", 1, 1))},
	{"duplicate dir", files(testkit.Dir("a"), testkit.Dir("a"))},
	{"file beneath file", files(testkit.File("a", 1, 1), testkit.File("a/b", 2, 1))},
	{"file beneath later file", files(testkit.File("a/b", 2, 1), testkit.File("a", 1, 1))},
	{"dir beneath file", files(testkit.File("a", 1, 1), testkit.Dir("a/b"))},
	{"deep beneath file", files(testkit.File("a", 1, 1), testkit.Dir("a/b/c"))},
	{"beneath nested file", files(testkit.Dir("x"), testkit.File("x/f", 1, 1), testkit.File("x/f/g", 2, 1))},
	// kind
	{"kind empty", files(ckptstore.Entry{Path: "a", Kind: "", BlobKey: testkit.FileKey(1), Size: 1})},
	{"kind symlink", files(ckptstore.Entry{Path: "a", Kind: "symlink", BlobKey: testkit.FileKey(1), Size: 1})},
	{"kind File", files(ckptstore.Entry{Path: "a", Kind: "File", BlobKey: testkit.FileKey(1), Size: 1})},
	// file blob keys
	{"file blobKey empty", fileWithKey("")},
	{"file blobKey uppercase hex", fileWithKey("sandbox-files/sha256/" + strings.ToUpper(hex64))},
	{"file blobKey one uppercase digit", fileWithKey("sandbox-files/sha256/" + hex64[:63] + "F")},
	{"file blobKey 63 hex", fileWithKey("sandbox-files/sha256/" + hex64[:63])},
	{"file blobKey 65 hex", fileWithKey("sandbox-files/sha256/" + hex64 + "0")},
	{"file blobKey non-hex", fileWithKey("sandbox-files/sha256/" + hex64[:63] + "g")},
	{"file blobKey wrong prefix", fileWithKey("sandbox-files/sha1/" + hex64)},
	{"file blobKey artifact prefix", fileWithKey("sandbox-artifacts/sha256/" + hex64)},
	{"file blobKey no prefix", fileWithKey(hex64)},
	{"file blobKey uppercase prefix", fileWithKey("SANDBOX-FILES/sha256/" + hex64)},
	{"file blobKey leading space", fileWithKey(" sandbox-files/sha256/" + hex64)},
	{"file blobKey trailing newline", fileWithKey("sandbox-files/sha256/" + hex64 + "\n")},
	{"file blobKey invalid UTF-8", fileWithKey("sandbox-files/sha256/" + hex64[:63] + "\xff")},
	// file sizes
	{"file size -1", fileWithSize(-1)},
	{"file size 2^53", fileWithSize(maxSize + 1)},
	{"file size MaxInt64", fileWithSize(math.MaxInt64)},
	{"file size MinInt64", fileWithSize(math.MinInt64)},
	// directories
	{"dir with blobKey", files(ckptstore.Entry{Path: "d", Kind: ckptstore.KindDir, BlobKey: testkit.FileKey(1)})},
	{"dir with size", files(ckptstore.Entry{Path: "d", Kind: ckptstore.KindDir, Size: 1})},
	{"dir with blobKey and size", files(ckptstore.Entry{Path: "d", Kind: ckptstore.KindDir, BlobKey: testkit.FileKey(1), Size: 1})},
	// artifacts
	{"artifact artifactId empty", withArtifact(func(a *ckptstore.Artifact) { a.ArtifactID = "" })},
	{"artifact name empty", withArtifact(func(a *ckptstore.Artifact) { a.Name = "" })},
	{"artifact mimeType empty", withArtifact(func(a *ckptstore.Artifact) { a.MimeType = "" })},
	{"artifact artifactId invalid UTF-8", withArtifact(func(a *ckptstore.Artifact) { a.ArtifactID = "\xff" })},
	{"artifact name invalid UTF-8", withArtifact(func(a *ckptstore.Artifact) { a.Name = "n\xc3" })},
	{"artifact mimeType invalid UTF-8", withArtifact(func(a *ckptstore.Artifact) { a.MimeType = "\xed\xa0\x80" })},
	{"artifact blobKey empty", withArtifact(func(a *ckptstore.Artifact) { a.BlobKey = "" })},
	{"artifact blobKey file prefix", withArtifact(func(a *ckptstore.Artifact) { a.BlobKey = "sandbox-files/sha256/" + hex64 })},
	{"artifact blobKey uppercase hex", withArtifact(func(a *ckptstore.Artifact) { a.BlobKey = "sandbox-artifacts/sha256/" + strings.ToUpper(hex64) })},
	{"artifact blobKey 63 hex", withArtifact(func(a *ckptstore.Artifact) { a.BlobKey = "sandbox-artifacts/sha256/" + hex64[:63] })},
	{"artifact blobKey invalid UTF-8", withArtifact(func(a *ckptstore.Artifact) { a.BlobKey = "sandbox-artifacts/sha256/" + hex64[:63] + "\xff" })},
	{"artifact size -1", withArtifact(func(a *ckptstore.Artifact) { a.Size = -1 })},
	{"artifact size 2^53", withArtifact(func(a *ckptstore.Artifact) { a.Size = maxSize + 1 })},
	{"artifact createdAt NaN", withArtifact(func(a *ckptstore.Artifact) { a.CreatedAt = nan })},
	{"artifact createdAt +Inf", withArtifact(func(a *ckptstore.Artifact) { a.CreatedAt = posInf })},
	{"artifact createdAt -Inf", withArtifact(func(a *ckptstore.Artifact) { a.CreatedAt = negInf })},
	// checkpoint fields
	{"createdAt NaN", func(c *ckptstore.Checkpoint) { c.CreatedAt = nan }},
	{"createdAt +Inf", func(c *ckptstore.Checkpoint) { c.CreatedAt = posInf }},
	{"createdAt -Inf", func(c *ckptstore.Checkpoint) { c.CreatedAt = negInf }},
	{"reason empty", func(c *ckptstore.Checkpoint) { c.Reason = "" }},
	{"reason Automatic", func(c *ckptstore.Checkpoint) { c.Reason = "Automatic" }},
	{"reason other", func(c *ckptstore.Checkpoint) { c.Reason = "other" }},
	{"reason fork_root", func(c *ckptstore.Checkpoint) { c.Reason = "fork_root" }},
	{"label invalid UTF-8", func(c *ckptstore.Checkpoint) { c.Label = "v\xff1" }},
	{"sourceRunId invalid UTF-8", func(c *ckptstore.Checkpoint) { c.SourceRunID = "\xc3" }},
	// conversation
	{"conversation object", conv(`{}`)},
	{"conversation string", conv(`"x"`)},
	{"conversation null", conv(`null`)},
	{"conversation number", conv(`1`)},
	{"conversation true", conv(`true`)},
	{"conversation unterminated", conv(`[`)},
	{"conversation trailing comma", conv(`[1,]`)},
	{"conversation two arrays", conv(`[] []`)},
	{"conversation trailing garbage", conv(`[]x`)},
	{"conversation not JSON", conv("\xff")},
	{"conversation object after space", conv(` {"a":[]}`)},
	// A JSON text must be UTF-8 (RFC 8259 §8.1); json.Valid alone lets
	// invalid bytes through inside a string.
	{"conversation with invalid UTF-8 in a string", conv("[\"a\xffb\"]")},
	{"conversation with a lone surrogate in WTF-8", conv("[\"\xed\xa0\x80\"]")},
	// The JSON-validity rule's depth bound (contract.MaxJSONDepth).
	{"conversation nested over the depth bound", conv(strings.Repeat("[", contract.MaxJSONDepth+1) + strings.Repeat("]", contract.MaxJSONDepth+1))},
}...)

func conv(s string) mod { return func(c *ckptstore.Checkpoint) { c.Conversation = []byte(s) } }

// validEdgeCases must each be accepted and come back unchanged.
var validEdgeCases = append(pathCases(":", "a:b", "...", ".a", "a.", "a..b"), []modCase{
	{"conversation nested at the depth bound", conv(strings.Repeat("[", contract.MaxJSONDepth) + strings.Repeat("]", contract.MaxJSONDepth))},
	{"path C:foo (drive letter without separator)", pathFile("C:foo")},
	{"path 1: (not a letter)", pathFile("1:")},
	{"path space", pathFile(" ")},
	{"path unicode", pathFile("日本/ファイル 😀.txt")},
	{"path long", pathFile(strings.Repeat("abcdefgh/", 455) + "end")},
	{"path special chars", files(testkit.File("~", 1, 1), testkit.File("$HOME", 2, 1), testkit.File("*", 3, 1), testkit.File("%s", 4, 1), testkit.File("a b/c", 5, 1))},
	{"file under dir", files(testkit.Dir("a"), testkit.File("a/b", 1, 1))},
	{"file before its dir", files(testkit.File("a/b", 1, 1), testkit.Dir("a"))},
	{"no parent dirs listed", files(testkit.File("a/b/c/d/e", 1, 1))},
	{"dirs nested", files(testkit.Dir("a"), testkit.Dir("a/b"), testkit.File("a/b/c", 1, 1), testkit.Dir("a/d"))},
	{"sibling names are not ancestors", files(testkit.File("a", 1, 1), testkit.File("a.b", 2, 1), testkit.File("ab/c", 3, 1), testkit.File("a!/b", 4, 1), testkit.Dir("a-"))},
	{"file size 0", fileWithSize(0)},
	{"file size 2^53-1", fileWithSize(maxSize)},
	{"empty file list", files()},
	{"nil file list", func(c *ckptstore.Checkpoint) { c.Files = nil }},
	{"only dirs", files(testkit.Dir("a"), testkit.Dir("b"))},
	{"artifact size 0", withArtifact(func(a *ckptstore.Artifact) { a.Size = 0 })},
	{"artifact size 2^53-1", withArtifact(func(a *ckptstore.Artifact) { a.Size = maxSize })},
	{"artifact negative createdAt", withArtifact(func(a *ckptstore.Artifact) { a.CreatedAt = -12.5 })},
	{"artifact unicode fields", withArtifact(func(a *ckptstore.Artifact) { a.Name, a.MimeType = "résumé 😀.pdf", "application/pdf; charset=ü" })},
	{"artifact ids repeat", func(c *ckptstore.Checkpoint) {
		c.Artifacts = []ckptstore.Artifact{testkit.Artifact("x", 1), testkit.Artifact("x", 2)}
	}},
	{"artifact shares a file's digest", func(c *ckptstore.Checkpoint) {
		c.Files = []ckptstore.Entry{testkit.File("f", 5, 1)}
		c.Artifacts = []ckptstore.Artifact{testkit.Artifact("x", 5)}
	}},
	{"reason named", func(c *ckptstore.Checkpoint) { c.Reason = ckptstore.ReasonNamed }},
	{"reason fork-root", func(c *ckptstore.Checkpoint) { c.Reason = ckptstore.ReasonForkRoot }},
	{"label and run id unicode", func(c *ckptstore.Checkpoint) { c.Label, c.SourceRunID = "✓ label\x00", "run/😀" }},
	{"conversation empty array", conv(`[]`)},
	{"conversation with inner space", conv(`[ 1 , [ ] ]`)},
	{"createdAt negative", func(c *ckptstore.Checkpoint) { c.CreatedAt = -1e15 }},
	{"createdAt max", func(c *ckptstore.Checkpoint) { c.CreatedAt = math.MaxFloat64 }},
	// JSON allows whitespace around the array, and the conversation comes
	// back byte for byte, whitespace included.
	{"conversation with whitespace around the array", conv(" \r\n\t[1]\n ")},
	// The characters next to the letters are not drive letters.
	{"path @: [: `: {: (not letters)", files(testkit.File("@:", 1, 1), testkit.File("[:", 2, 1), testkit.File("`:", 3, 1), testkit.File("{:/x", 4, 1))},
}...)

// idCase changes an Append's checkpoint, expected head or writer.
type idCase struct {
	name string
	mod  func(c *ckptstore.Checkpoint, expected *string, w *ckptstore.Writer)
}

// invalidIDCases must each fail Append with ErrInvalidID.
func invalidIDCases() []idCase {
	var cs []idCase
	for _, bad := range invalidIDs {
		bad := bad
		cs = append(cs,
			idCase{"checkpoint id " + bad.name, func(c *ckptstore.Checkpoint, _ *string, _ *ckptstore.Writer) { c.ID = bad.id }},
			idCase{"thread id " + bad.name, func(c *ckptstore.Checkpoint, _ *string, _ *ckptstore.Writer) { c.ThreadID = bad.id }},
			idCase{"writer thread id " + bad.name, func(_ *ckptstore.Checkpoint, _ *string, w *ckptstore.Writer) { w.ThreadID = bad.id }},
		)
		if bad.id != "" { // "" is a valid expected head and parent: none
			cs = append(cs,
				idCase{"expected head " + bad.name, func(c *ckptstore.Checkpoint, e *string, _ *ckptstore.Writer) {
					*e, c.ParentCheckpointID = bad.id, bad.id
				}},
				idCase{"parent " + bad.name, func(c *ckptstore.Checkpoint, _ *string, _ *ckptstore.Writer) { c.ParentCheckpointID = bad.id }},
			)
		}
	}
	cs = append(cs, idCase{"invalid id and invalid entry", func(c *ckptstore.Checkpoint, _ *string, _ *ckptstore.Writer) {
		c.ID = "\xff"
		c.CreatedAt = nan
		c.Files = []ckptstore.Entry{testkit.File("/abs", 1, 1)}
	}})
	return cs
}

func (s *suite) testValidation(t *testing.T) {
	// One store for the failing cases: each must leave it as it was.
	e, w := s.chained(t, "thread", "h")
	base := func(n int) *ckptstore.Checkpoint {
		c := testkit.Checkpoint("thread", fmt.Sprintf("new-%d", n), "h", 1000)
		c.Files = []ckptstore.Entry{testkit.File("ok", 9, 1)}
		return c
	}
	t.Run("InvalidEntry", func(t *testing.T) {
		for i, tc := range invalidEntryCases {
			t.Run(tc.name, func(t *testing.T) {
				e := e.with(t)
				c := base(i)
				tc.mod(c)
				e.appendFails("Append", c, "h", w, ckptstore.ErrInvalidEntry)
			})
		}
	})
	t.Run("InvalidID", func(t *testing.T) {
		for i, tc := range invalidIDCases() {
			t.Run(tc.name, func(t *testing.T) {
				e := e.with(t)
				c, expected, w := base(i), "h", w
				tc.mod(c, &expected, &w)
				e.appendFails("Append", c, expected, w, ckptstore.ErrInvalidID)
			})
		}
	})
	t.Run("Valid", func(t *testing.T) {
		for i, tc := range validEdgeCases {
			t.Run(tc.name, func(t *testing.T) {
				e := e.with(t)
				c := base(i)
				c.ID = fmt.Sprintf("valid-%d", i)
				tc.mod(c)
				e.appendKept(c, w)
			})
		}
	})
}
