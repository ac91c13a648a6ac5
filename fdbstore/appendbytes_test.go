package fdbstore

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/fdbstore/kv/memkv"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

// appendsMeasured is how many Appends appendBytes averages over.
const appendsMeasured = 50

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
	const n = appendsMeasured
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

// TestAppendBytes bounds what one Append of a harness-shaped checkpoint
// writes: 8 keys (and the listed key on the thread's first), and the
// conversation twice (in the data and in the copy under the index) plus
// about 1.2 KB. When the op markers moved under their thread this was
// 1,233 B for a 4-byte conversation, 75 B and no key more than with the
// first layout's global markers.
func TestAppendBytes(t *testing.T) {
	for _, conv := range []int{4, 2048} {
		b, k := appendBytes(t, Options{}, conv)
		t.Logf("conversation %d B: %.0f B and %.2f keys per Append", conv, b, k)
		if want := 8 + 1.0/appendsMeasured; math.Abs(k-want) > 1e-9 || b > float64(2*conv)+1300 {
			t.Errorf("conversation %d B: %.0f B and %.2f keys per Append; want %.2f keys and at most %d B", conv, b, k, want, 2*conv+1300)
		}
	}
}
