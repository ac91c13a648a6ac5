package redisstore

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/blobs"
	"github.com/ckptstore/ckptstore/internal/testkit"
	"github.com/ckptstore/ckptstore/sweep"
)

var _ sweep.RefLister = (*ckptstore.Store)(nil)

// The sweep streams the store's references page by page (PageSize 2 here)
// and deletes exactly the blobs no checkpoint uses.
func TestSweepStreamsReferences(t *testing.T) {
	ctx := context.Background()
	s := newStore(t, miniClient(t), Options{PageSize: 2})
	b, err := blobs.Open(ctx, "mem://")
	must(t, err)
	for i := range 9 {
		must(t, b.Put(ctx, testkit.FileKey(i), strings.NewReader("x")))
	}
	w := acquire(t, s, "t")
	must(t, s.p().Append(ctx, testkit.Checkpoint("t", "a", "", 1, 0, 2, 4), "", w))
	must(t, s.p().Append(ctx, testkit.Checkpoint("t", "b", "a", 2, 4, 6, 8), "a", w))
	deleted, err := sweep.Run(ctx, s.p(), b, sweep.Options{Now: func() time.Time { return time.Now().Add(time.Hour) }})
	must(t, err)
	var want []string
	for _, i := range []int{1, 3, 5, 7} {
		want = append(want, testkit.FileKey(i))
	}
	slices.Sort(want)
	slices.Sort(deleted)
	if !slices.Equal(deleted, want) {
		t.Fatalf("sweep deleted %q, want %q", deleted, want)
	}
}
