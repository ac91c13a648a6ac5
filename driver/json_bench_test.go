package driver_test

// Benchmarks of the JSON form, the encoding a store persists: a checkpoint of
// 1,000 entries (100 directories of 9 files), about 140 kB.

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/ckptstore/ckptstore/driver"
)

// benchCheckpoint is a checkpoint of a workspace with n files under n/10
// directories, about the size of a small repository.
func benchCheckpoint(n int) *driver.Checkpoint {
	cp := &driver.Checkpoint{ID: "cp-1", ThreadID: "thread-1", CreatedAt: 1.7e12, Reason: driver.ReasonAutomatic,
		Conversation: json.RawMessage(`[{"role":"user","content":"hello"}]`)}
	for d := range n / 10 {
		cp.Files = append(cp.Files, driver.Entry{Path: fmt.Sprintf("src/pkg%d", d), Kind: driver.KindDir})
		for f := range 9 {
			cp.Files = append(cp.Files, driver.Entry{Path: fmt.Sprintf("src/pkg%d/file%d.go", d, f), Kind: driver.KindFile,
				BlobKey: fmt.Sprintf("sandbox-files/sha256/%064x", d*10+f), Size: int64(100 * f)})
		}
	}
	return cp
}

func BenchmarkUnmarshalCheckpoint(b *testing.B) {
	data, err := benchCheckpoint(1000).MarshalJSON()
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		var cp driver.Checkpoint
		if err := json.Unmarshal(data, &cp); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMarshalCheckpoint(b *testing.B) {
	cp := benchCheckpoint(1000)
	data, err := cp.MarshalJSON()
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := cp.MarshalJSON(); err != nil {
			b.Fatal(err)
		}
	}
}
