package fdbstore

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/fdbstore/kv/memkv"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

// appendBytes is the mutation bytes and keys memkv counts per Append of a
// harness-shaped checkpoint (two files, a conversation of conv bytes).
func appendBytes(t *testing.T, opts Options, conv int) (bytes, keys float64) {
	t.Helper()
	ctx := context.Background()
	db := memkv.New()
	s, err := NewDriver(db, opts)
	testkit.Must(t, err)
	lease, err := s.p().AcquireWriter(ctx, "thread-0123456789")
	testkit.Must(t, err)
	const n = 50
	head := ""
	db.ResetStats()
	for i := range n {
		id := fmt.Sprintf("cp-0123456789-%04d", i)
		cp := &ckptstore.Checkpoint{ID: id, ThreadID: "thread-0123456789", ParentCheckpointID: head, CreatedAt: float64(i),
			Reason: ckptstore.ReasonAutomatic, Conversation: []byte(`["` + strings.Repeat("x", max(0, conv-4)) + `"]`),
			Files: []ckptstore.Entry{
				{Path: "a", Kind: ckptstore.KindFile, BlobKey: testkit.FileKey(1), Size: 1},
				{Path: "b", Kind: ckptstore.KindFile, BlobKey: testkit.FileKey(i + 2), Size: 1},
			}}
		testkit.Must(t, s.p().Append(ctx, cp, head, lease.Writer))
		head = id
	}
	st := db.Stats()
	return float64(st.BytesWritten) / n, float64(st.KeysWritten) / n
}

// TestAppendBytes measures what the marker move costs per Append: the
// per-thread marker and its range clear, whose keys hold the thread,
// against the old global marker and its range clear.
func TestAppendBytes(t *testing.T) {
	for _, conv := range []int{4, 2048} {
		oldB, oldK := appendBytes(t, Options{legacyMarkers: true}, conv)
		newB, newK := appendBytes(t, Options{}, conv)
		t.Logf("conversation %d B: global markers %.0f B and %.1f keys per Append, per-thread markers %.0f B and %.1f keys (+%.0f B)",
			conv, oldB, oldK, newB, newK, newB-oldB)
		if newK != oldK || newB-oldB > 100 {
			t.Errorf("per-thread markers cost %.0f B and %.1f keys more per Append; want no key and at most 100 B", newB-oldB, newK-oldK)
		}
	}
}
