package testkit_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/internal/testkit"
	"github.com/ckptstore/ckptstore/memstore"
)

// recorder is a testing.TB whose Fatalf records instead of stopping.
type recorder struct {
	*testing.T
	msg string
}

func (r *recorder) Fatalf(format string, args ...any) { r.msg = fmt.Sprintf(format, args...) }

// liar reports one reference too many for every key.
type liar struct{ *ckptstore.Store }

func (l liar) ListBlobReferences(ctx context.Context) ([]ckptstore.BlobRef, error) {
	refs, err := l.Store.ListBlobReferences(ctx)
	for i := range refs {
		refs[i].References++
	}
	return refs, err
}

func TestCheckRefs(t *testing.T) {
	ctx := context.Background()
	s := memstore.New(ckptstore.Options{})
	lease, err := s.AcquireWriter(ctx, "t")
	testkit.Must(t, err)
	cp := &ckptstore.Checkpoint{ID: "a", ThreadID: "t", CreatedAt: 1, Reason: ckptstore.ReasonAutomatic,
		Files: []ckptstore.Entry{
			{Path: "x", Kind: ckptstore.KindFile, BlobKey: testkit.FileKey(2), Size: 1},
			{Path: "y", Kind: ckptstore.KindFile, BlobKey: testkit.FileKey(2), Size: 1},
		},
		Artifacts: []ckptstore.Artifact{{ArtifactID: "r", Name: "r", MimeType: "text/plain", BlobKey: testkit.ArtifactKey(1)}}}
	testkit.Must(t, s.Append(ctx, cp, "", lease.Writer))

	refs := testkit.CheckRefs(t, s, "t")
	if len(refs) != 2 || refs[0].References != 1 || refs[1].References != 1 {
		t.Fatalf("CheckRefs = %v, want two keys counted once each", refs)
	}
	r := &recorder{T: t}
	testkit.CheckRefs(r, liar{s}, "t")
	if r.msg == "" {
		t.Fatal("CheckRefs accepted counts one too high")
	}
}

// Checkpoint is valid, with one file per blob number, and a fresh value
// each call.
func TestCheckpoint(t *testing.T) {
	cp := testkit.Checkpoint("t", "b", "a", 2, 7, 3)
	require.NoError(t, driver.Validate(cp))
	assert.Equal(t, []ckptstore.Entry{
		{Path: "f0", Kind: ckptstore.KindFile, BlobKey: testkit.FileKey(7), Size: 7},
		{Path: "f1", Kind: ckptstore.KindFile, BlobKey: testkit.FileKey(3), Size: 3},
	}, cp.Files)
	assert.Equal(t, testkit.Conversation, string(cp.Conversation))
	assert.Equal(t, [3]string{"t", "b", "a"}, [3]string{cp.ThreadID, cp.ID, cp.ParentCheckpointID})
	assert.Equal(t, []string{"b", "c"}, testkit.IDs([]*ckptstore.Checkpoint{cp, testkit.Checkpoint("t", "c", "b", 3)}))
	cp.Files[0].Path = "changed"
	assert.Equal(t, "f0", testkit.Checkpoint("t", "b", "a", 2, 7).Files[0].Path, "a fresh value each call")
}

// A Clock moves only by Advance and Tick; Tick returns the new time.
func TestClock(t *testing.T) {
	start := time.Unix(100, 0)
	c := testkit.NewClock(start)
	assert.Equal(t, start, c.Now())
	c.Advance(time.Second)
	assert.Equal(t, start.Add(time.Second), c.Now())
	assert.Equal(t, start.Add(time.Second+time.Millisecond), c.Tick(time.Millisecond))
	assert.Equal(t, start.Add(time.Second+time.Millisecond), c.Now(), "Now after Tick reads what Tick returned")
	assert.Equal(t, 2*time.Second+time.Millisecond, c.Since(start.Add(-time.Second)))
}

// Set moves a Clock to the time given, backwards too.
func TestClockSet(t *testing.T) {
	c := testkit.NewClock(time.Unix(100, 0))
	c.Set(time.Unix(50, 0))
	assert.Equal(t, time.Unix(50, 0), c.Now())
}

// The entry builders give valid entries, and a checkpoint holding them
// passes Validate.
func TestEntryBuilders(t *testing.T) {
	cp := testkit.Checkpoint("t", "c", "", 1)
	cp.Files = []ckptstore.Entry{testkit.Dir("d"), testkit.File("d/f", 4, 9)}
	cp.Artifacts = []ckptstore.Artifact{testkit.Artifact("a", 5)}
	require.NoError(t, driver.Validate(cp))
	assert.Equal(t, ckptstore.Entry{Path: "d/f", Kind: ckptstore.KindFile, BlobKey: testkit.FileKey(4), Size: 9}, cp.Files[1])
	assert.Equal(t, ckptstore.Entry{Path: "d", Kind: ckptstore.KindDir}, cp.Files[0])
	assert.Equal(t, testkit.ArtifactKey(5), cp.Artifacts[0].BlobKey)
}

// Recount counts each distinct key once per checkpoint, leaves directories
// out, and sorts by key bytes.
func TestRecount(t *testing.T) {
	a := testkit.Checkpoint("t", "a", "", 1, 2, 2, 1)
	a.Files = append(a.Files, testkit.Dir("d"))
	a.Artifacts = []ckptstore.Artifact{testkit.Artifact("x", 1), testkit.Artifact("y", 1)}
	b := testkit.Checkpoint("t", "b", "a", 2, 2)
	assert.Equal(t, []ckptstore.BlobRef{
		{Key: testkit.ArtifactKey(1), References: 1},
		{Key: testkit.FileKey(1), References: 1},
		{Key: testkit.FileKey(2), References: 2},
	}, testkit.Recount([]*ckptstore.Checkpoint{a, b}))
	assert.Empty(t, testkit.Recount(nil))
}

// IDs names a nil checkpoint rather than panicking.
func TestIDsNil(t *testing.T) {
	assert.Equal(t, []string{"<nil>", "a"}, testkit.IDs([]*ckptstore.Checkpoint{nil, testkit.Checkpoint("t", "a", "", 1)}))
}
