// Package testkit holds the test helpers that several packages of this
// module define the same way: valid blob keys, a valid checkpoint, a
// settable clock, a fatal error check and a blob reference recount. It is for tests only (and for test-support packages
// such as fdbstore/internal/storetest); nothing in it is part of the
// library.
//
// Invariants: FileKey and ArtifactKey are valid keys of their prefixes for
// every n ≥ 0 and distinct for distinct n; Checkpoint passes
// ckptstore.Validate for valid ids and createdAt; a Clock only moves when
// Advance or Tick moves it.
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
		cp.Files = append(cp.Files, ckptstore.Entry{Path: fmt.Sprintf("f%d", i), Kind: ckptstore.KindFile, BlobKey: FileKey(n), Size: int64(n)})
	}
	return cp
}

// IDs returns the ids of cps, in order: what a test compares when the
// order of a list or a page is the point.
func IDs(cps []*ckptstore.Checkpoint) []string {
	ids := make([]string, len(cps))
	for i, cp := range cps {
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

// Since is Now().Sub(t), as a time source such as gofakes3's needs.
func (c *Clock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// CheckRefs fails t unless s.BlobReferences equals a recount over every
// checkpoint that s.List returns for threads (which must be every thread
// the store holds): each distinct blob key of a checkpoint counts once,
// and the references come sorted by key bytes. It returns the references.
func CheckRefs(t testing.TB, s ckptstore.Store, threads ...string) []ckptstore.BlobRef {
	t.Helper()
	ctx := context.Background()
	counts := map[string]int64{}
	for _, th := range threads {
		cps, err := s.List(ctx, th)
		Must(t, err)
		for _, cp := range cps {
			for _, k := range cp.BlobKeys() {
				counts[k]++
			}
		}
	}
	want := make([]ckptstore.BlobRef, 0, len(counts))
	for k, n := range counts {
		want = append(want, ckptstore.BlobRef{Key: k, References: n})
	}
	slices.SortFunc(want, func(a, b ckptstore.BlobRef) int { return strings.Compare(a.Key, b.Key) })
	got, err := s.BlobReferences(ctx)
	Must(t, err)
	if !slices.Equal(got, want) {
		t.Fatalf("BlobReferences = %v, recount = %v", got, want)
	}
	return got
}
