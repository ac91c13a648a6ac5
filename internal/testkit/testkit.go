// Package testkit holds the test helpers that several packages of this
// module define the same way: valid blob keys, entry and checkpoint
// builders, a settable clock, a fatal error check and a blob reference
// recount. It is for tests only (and for test-support packages such as
// conformance and fdbstore/internal/storetest); nothing in it is part of
// the library.
//
// Invariants: FileKey and ArtifactKey are valid keys of their prefixes for
// every n ≥ 0 and distinct for distinct n; Checkpoint passes
// driver.Validate for valid ids and createdAt; a Clock only moves when
// Advance, Tick or Set moves it.
package testkit

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore"
)

// FileKey returns a valid file blob key, sandbox-files/sha256/<64 hex>,
// whose hex is n; distinct n give distinct keys, in the order of n.
func FileKey(n int) string { return fmt.Sprintf("sandbox-files/sha256/%064x", n) }

// ArtifactKey is FileKey for artifacts: sandbox-artifacts/sha256/<64 hex>.
func ArtifactKey(n int) string { return fmt.Sprintf("sandbox-artifacts/sha256/%064x", n) }

// File returns a file entry at path whose blob is FileKey(n).
func File(path string, n int, size int64) ckptstore.Entry {
	return ckptstore.Entry{Path: path, Kind: ckptstore.KindFile, BlobKey: FileKey(n), Size: size}
}

// Dir returns a directory entry at path.
func Dir(path string) ckptstore.Entry { return ckptstore.Entry{Path: path, Kind: ckptstore.KindDir} }

// Artifact returns a valid artifact named id whose blob is ArtifactKey(n):
// name id+".txt", text/plain, size 3, createdAt 1.5.
func Artifact(id string, n int) ckptstore.Artifact {
	return ckptstore.Artifact{ArtifactID: id, Name: id + ".txt", MimeType: "text/plain",
		Size: 3, BlobKey: ArtifactKey(n), CreatedAt: 1.5}
}

// Conversation is the conversation of every Checkpoint: one short message.
const Conversation = `[{"role":"user","content":"hi"}]`

// Checkpoint returns a valid checkpoint of thread: id, parent ("" = a
// root), createdAt, ReasonAutomatic, the conversation Conversation, and one
// file per blob number n, path "f<i>" (i its position), blob FileKey(n)
// and size n. A fresh value each call, for the test to change.
func Checkpoint(thread, id, parent string, createdAt float64, blobs ...int) *ckptstore.Checkpoint {
	cp := &ckptstore.Checkpoint{
		ID: id, ThreadID: thread, ParentCheckpointID: parent, CreatedAt: createdAt,
		Reason: ckptstore.ReasonAutomatic, Conversation: []byte(Conversation),
	}
	for i, n := range blobs {
		cp.Files = append(cp.Files, File(fmt.Sprintf("f%d", i), n, int64(n)))
	}
	return cp
}

// IDs returns the ids of cps, in order: what a test compares when the
// order of a list or a page is the point. A nil checkpoint shows as
// "<nil>", so that a broken list still prints.
func IDs(cps []*ckptstore.Checkpoint) []string {
	ids := make([]string, len(cps))
	for i, cp := range cps {
		if cp == nil {
			ids[i] = "<nil>"
			continue
		}
		ids[i] = cp.ID
	}
	return ids
}

// Must fails t at once when err is not nil.
func Must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Clock is a time source that moves only when a test moves it, safe for
// concurrent use. Pass its Now method as a store's or engine's clock.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock that reads start until it is advanced.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock by d (backwards when d < 0).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// Tick moves the clock by d and returns the new time, in one step: as a
// time source (func() time.Time { return c.Tick(time.Millisecond) }) every
// reading is later than the one before, even across goroutines.
func (c *Clock) Tick(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	return c.now
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// Since is Now().Sub(t), as a time source such as gofakes3's needs.
func (c *Clock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// CheckRefs fails t unless s.ListBlobReferences equals a recount over every
// checkpoint that s.List returns for threads (which must be every thread
// the store holds): each distinct blob key of a checkpoint counts once,
// and the references come sorted by key bytes. It returns the references.
// s is any store: a *ckptstore.Store or a suite's wrapper of one (package
// conformance imports this one, so it cannot name conformance.Store).
func CheckRefs(t testing.TB, s interface {
	List(ctx context.Context, threadID string) ([]*ckptstore.Checkpoint, error)
	ListBlobReferences(ctx context.Context) ([]ckptstore.BlobRef, error)
}, threads ...string) []ckptstore.BlobRef {
	t.Helper()
	ctx := context.Background()
	var all []*ckptstore.Checkpoint
	for _, th := range threads {
		cps, err := s.List(ctx, th)
		Must(t, err)
		all = append(all, cps...)
	}
	want := Recount(all)
	got, err := s.ListBlobReferences(ctx)
	Must(t, err)
	if !slices.Equal(got, want) {
		t.Fatalf("BlobReferences = %v, recount = %v", got, want)
	}
	return got
}

// Recount returns the blob references that cps imply, counted here rather
// than by the root package (a suite must not trust what it tests): each
// distinct key of a checkpoint's files and artifacts counts once, and the
// references come sorted by key bytes. Directories have no key.
func Recount(cps []*ckptstore.Checkpoint) []ckptstore.BlobRef {
	counts := map[string]int64{}
	for _, cp := range cps {
		seen := map[string]bool{}
		for _, e := range cp.Files {
			if e.Kind == ckptstore.KindFile {
				seen[e.BlobKey] = true
			}
		}
		for _, a := range cp.Artifacts {
			seen[a.BlobKey] = true
		}
		for k := range seen {
			counts[k]++
		}
	}
	refs := make([]ckptstore.BlobRef, 0, len(counts))
	for k, n := range counts {
		refs = append(refs, ckptstore.BlobRef{Key: k, References: n})
	}
	slices.SortFunc(refs, func(a, b ckptstore.BlobRef) int { return strings.Compare(a.Key, b.Key) })
	return refs
}
