package driver_test

// Fixtures shared by the driver package's tests: valid blob keys, a valid
// checkpoint to mutate, and an error check.

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

// fileKey and artifactKey return distinct valid blob keys for n.
var fileKey, artifactKey = testkit.FileKey, testkit.ArtifactKey

// validCheckpoint returns a checkpoint that passes Validate and uses every
// field, so that a test can break exactly one rule.
func validCheckpoint() *driver.Checkpoint {
	return &driver.Checkpoint{
		ID:                 "cp-2",
		ThreadID:           "thread-1",
		ParentCheckpointID: "cp-1",
		CreatedAt:          1_700_000_000_000.5,
		Reason:             driver.ReasonNamed,
		Label:              "before refactor",
		SourceRunID:        "run-7",
		Files: []driver.Entry{
			{Path: "src", Kind: driver.KindDir},
			{Path: "src/main.go", Kind: driver.KindFile, BlobKey: fileKey(1), Size: 120},
			{Path: "README.md", Kind: driver.KindFile, BlobKey: fileKey(2), Size: 0},
		},
		Conversation: json.RawMessage(`[{"role":"user","content":"hi"}]`),
		Artifacts: []driver.Artifact{
			{ArtifactID: "a1", Name: "report.pdf", MimeType: "application/pdf", Size: 2048, BlobKey: artifactKey(1), CreatedAt: 1_700_000_000_001},
		},
	}
}

// wantErr fails t unless err satisfies errors.Is with want (nil: no error).
// When contains is not empty, the message must also contain it, which is how
// tests tell apart two failures that share a sentinel.
func wantErr(t *testing.T, err, want error, contains string) {
	t.Helper()
	if want == nil {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if !errors.Is(err, want) {
		t.Fatalf("error = %v, want %v", err, want)
	}
	if contains != "" && !strings.Contains(err.Error(), contains) {
		t.Fatalf("error = %q, want it to mention %q", err, contains)
	}
}
