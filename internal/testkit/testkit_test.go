package testkit_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/ckptstore/ckptstore"
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
type liar struct{ *memstore.Store }

func (l liar) BlobReferences(ctx context.Context) ([]ckptstore.BlobRef, error) {
	refs, err := l.Store.BlobReferences(ctx)
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
