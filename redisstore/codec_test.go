package redisstore

// The encoding's own round trips, damage and fuzz tests live in
// internal/cpcodec; these check how the store composes the three strings
// and that every failure wraps ErrCorrupt.

import (
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

func codecCheckpoints() []*ckptstore.Checkpoint {
	return []*ckptstore.Checkpoint{
		testkit.Checkpoint("t\x00é", "c1", "c0", 1.5e12+0.25, 1, 2),
		{ID: "x", ThreadID: "y", CreatedAt: math.Copysign(0, -1), Reason: ckptstore.ReasonNamed, Label: "v1 ✓", SourceRunID: "run-7",
			Files: []ckptstore.Entry{{Path: "src", Kind: ckptstore.KindDir}}, Conversation: []byte{},
			Artifacts: []ckptstore.Artifact{{ArtifactID: "a", Name: "n", MimeType: "m", Size: driver.MaxSize, BlobKey: testkit.ArtifactKey(3), CreatedAt: -1e300}}},
		{ID: "x", ThreadID: "y", Reason: ckptstore.ReasonForkRoot}, // nil slices, nil conversation
	}
}

// encodeStored returns the five hash fields Get reads for cp.
func encodeStored(t *testing.T, cp *ckptstore.Checkpoint) (thread, parent, header, body, conv string) {
	t.Helper()
	b, err := encodeBody(cp)
	must(t, err)
	return cp.ThreadID, cp.ParentCheckpointID, string(encodeHeader(cp)), string(b), string(cp.Conversation)
}

func TestCodecRoundTrip(t *testing.T) {
	for _, cp := range codecCheckpoints() {
		th, p, h, b, v := encodeStored(t, cp)
		got, err := decodeCheckpoint(cp.ID, th, p, h, b, v)
		must(t, err)
		if !reflect.DeepEqual(got, cp) || math.Float64bits(got.CreatedAt) != math.Float64bits(cp.CreatedAt) {
			t.Fatalf("round trip:\n got %#v\nwant %#v", got, cp)
		}
	}
}

// Damaged or missing fields fail with ErrCorrupt, never a wrong checkpoint.
func TestCodecRejectsDamage(t *testing.T) {
	for _, cp := range codecCheckpoints() {
		th, p, h, b, v := encodeStored(t, cp)
		for n := range len(h) {
			if _, err := decodeCheckpoint(cp.ID, th, p, h[:n], b, v); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("header cut to %d bytes: %v", n, err)
			}
		}
		for n := range len(b) {
			if _, err := decodeCheckpoint(cp.ID, th, p, h, b[:n], v); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("body cut to %d bytes: %v", n, err)
			}
		}
		if _, err := decodeCheckpoint(cp.ID, th, p, h, b+"x", v); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("body with a trailing byte: %v", err)
		}
		if _, err := decodeCheckpoint(cp.ID, th, p, h, b, nil); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("missing conversation field: %v", err)
		}
		if cp.Conversation == nil {
			if _, err := decodeCheckpoint(cp.ID, th, p, h, b, "[]"); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("bytes for a nil conversation: %v", err)
			}
		}
	}
}

// An entry the layout cannot hold exactly is refused before any write.
func TestEncodeBodyRefusesInvalidEntries(t *testing.T) {
	cp := testkit.Checkpoint("t", "c", "", 1, 1)
	cp.Files[0].Kind = "link"
	if _, err := encodeBody(cp); !errors.Is(err, ckptstore.ErrInvalidEntry) {
		t.Fatalf("kind %q: %v, want ErrInvalidEntry", cp.Files[0].Kind, err)
	}
}
