package httpstore

import (
	"bytes"
	"math"
	"testing"

	"pgregory.net/rapid"

	"github.com/ckptstore/ckptstore"
)

// TestCheckpointJSONMatchesMarshalJSON: the direct encoder writes exactly
// the bytes of Checkpoint.MarshalJSON, for strings with every class of
// character the escaping treats differently and floats across the
// formatting boundaries.
func TestCheckpointJSONMatchesMarshalJSON(t *testing.T) {
	str := rapid.OneOf(
		rapid.String(),
		rapid.SampledFrom([]string{"", "<a&b>", "\u2028\u2029", "\b\f\n\r\t\x00\x1f\x7f", `"\`, "é😀", "\xff\xfe", "a\u2028b"}),
	)
	num := rapid.OneOf(
		rapid.Float64(),
		rapid.SampledFrom([]float64{0, math.Copysign(0, -1), 1e-6, 9.99e-7, 1e-7, 1e21, 9.99e20, 1e300, -1e-300, 0.1, 1700000000000.123, 5e-324}),
	)
	rapid.Check(t, func(t *rapid.T) {
		cp := &ckptstore.Checkpoint{
			ID: str.Draw(t, "id"), ThreadID: str.Draw(t, "thread"), ParentCheckpointID: str.Draw(t, "parent"),
			CreatedAt: num.Draw(t, "createdAt"), Reason: ckptstore.Reason(str.Draw(t, "reason")),
			Label: str.Draw(t, "label"), SourceRunID: str.Draw(t, "run"),
			Conversation: []byte(rapid.SampledFrom([]string{"", "[]", " [1, {\"a\":\"<b>\"}]\n", "[\"\u2028\"]"}).Draw(t, "conv")),
		}
		for i := range rapid.IntRange(0, 3).Draw(t, "files") {
			kind := rapid.SampledFrom([]ckptstore.EntryKind{ckptstore.KindFile, ckptstore.KindDir, "other"}).Draw(t, "kind")
			cp.Files = append(cp.Files, ckptstore.Entry{Path: str.Draw(t, "path"), Kind: kind, BlobKey: str.Draw(t, "blob"), Size: rapid.Int64().Draw(t, "size")})
			_ = i
		}
		for range rapid.IntRange(0, 2).Draw(t, "artifacts") {
			cp.Artifacts = append(cp.Artifacts, ckptstore.Artifact{ArtifactID: str.Draw(t, "aid"), Name: str.Draw(t, "name"),
				MimeType: str.Draw(t, "mime"), Size: rapid.Int64().Draw(t, "asize"), BlobKey: str.Draw(t, "ablob"), CreatedAt: num.Draw(t, "acreated")})
		}
		if math.IsNaN(cp.CreatedAt) || math.IsInf(cp.CreatedAt, 0) {
			cp.CreatedAt = 1
		}
		for i := range cp.Artifacts {
			if a := cp.Artifacts[i].CreatedAt; math.IsNaN(a) || math.IsInf(a, 0) {
				cp.Artifacts[i].CreatedAt = 2
			}
		}
		want, err := cp.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		if got := appendCheckpointJSON(nil, cp); !bytes.Equal(got, want) {
			t.Fatalf("direct encoder:\n%s\nMarshalJSON:\n%s", got, want)
		}
	})
}
