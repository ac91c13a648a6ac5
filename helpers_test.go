package ckptstore_test

// Fixtures shared by the root package's tests: valid blob keys, a valid
// checkpoint to mutate, and a clock the tests move by hand.

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore"
)

// fileKey and artifactKey return distinct valid blob keys for n.
func fileKey(n int) string     { return fmt.Sprintf("sandbox-files/sha256/%064x", n) }
func artifactKey(n int) string { return fmt.Sprintf("sandbox-artifacts/sha256/%064x", n) }

// validCheckpoint returns a checkpoint that passes Validate and uses every
// field, so that a test can break exactly one rule.
func validCheckpoint() *ckptstore.Checkpoint {
	return &ckptstore.Checkpoint{
		ID:                 "cp-2",
		ThreadID:           "thread-1",
		ParentCheckpointID: "cp-1",
		CreatedAt:          1_700_000_000_000.5,
		Reason:             ckptstore.ReasonNamed,
		Label:              "before refactor",
		SourceRunID:        "run-7",
		Files: []ckptstore.Entry{
			{Path: "src", Kind: ckptstore.KindDir},
			{Path: "src/main.go", Kind: ckptstore.KindFile, BlobKey: fileKey(1), Size: 120},
			{Path: "README.md", Kind: ckptstore.KindFile, BlobKey: fileKey(2), Size: 0},
		},
		Conversation: json.RawMessage(`[{"role":"user","content":"hi"}]`),
		Artifacts: []ckptstore.Artifact{
			{ArtifactID: "a1", Name: "report.pdf", MimeType: "application/pdf", Size: 2048, BlobKey: artifactKey(1), CreatedAt: 1_700_000_000_001},
		},
	}
}

// clock is a time source that only moves when a test moves it.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
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
