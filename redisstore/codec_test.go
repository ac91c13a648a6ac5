package redisstore

import (
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/ckptstore/ckptstore"
)

func randString(rng *rand.Rand) string {
	const alphabet = "ab/:{}\x00é😀"
	r := []rune(alphabet)
	var b strings.Builder
	for range rng.IntN(6) {
		b.WriteRune(r[rng.IntN(len(r))])
	}
	return b.String()
}

// randCheckpoint returns a checkpoint with random fields, nil and empty
// slices included (the codec keeps them apart).
func randCheckpoint(rng *rand.Rand) *ckptstore.Checkpoint {
	cp := &ckptstore.Checkpoint{ID: "id", ThreadID: "t", CreatedAt: math.Float64frombits(rng.Uint64()),
		Reason: ckptstore.Reason(randString(rng)), Label: randString(rng), SourceRunID: randString(rng)}
	if rng.IntN(3) > 0 {
		cp.Files = make([]ckptstore.Entry, rng.IntN(4))
		for i := range cp.Files {
			if rng.IntN(2) == 0 {
				cp.Files[i] = ckptstore.Entry{Path: randString(rng), Kind: ckptstore.KindDir}
			} else {
				cp.Files[i] = ckptstore.Entry{Path: randString(rng), Kind: ckptstore.KindFile,
					BlobKey: randString(rng), Size: rng.Int64N(ckptstore.MaxSize + 1)}
			}
		}
	}
	if rng.IntN(3) > 0 {
		cp.Conversation = []byte(randString(rng))
	}
	if rng.IntN(3) > 0 {
		cp.Artifacts = make([]ckptstore.Artifact, rng.IntN(3))
		for i := range cp.Artifacts {
			cp.Artifacts[i] = ckptstore.Artifact{ArtifactID: randString(rng), Name: randString(rng),
				MimeType: randString(rng), Size: rng.Int64N(ckptstore.MaxSize + 1), BlobKey: randString(rng),
				CreatedAt: math.Float64frombits(rng.Uint64())}
		}
	}
	return cp
}

func TestCodecRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for i := range 2000 {
		cp := randCheckpoint(rng)
		got := &ckptstore.Checkpoint{ID: cp.ID, ThreadID: cp.ThreadID}
		must(t, decodeHeader(got, string(encodeHeader(cp))))
		must(t, decodeBody(got, string(encodeBody(cp)), string(cp.Conversation)))
		// Compare bits: NaN payloads are not equal to themselves.
		if math.Float64bits(got.CreatedAt) != math.Float64bits(cp.CreatedAt) {
			t.Fatalf("case %d: createdAt bits %x, want %x", i, math.Float64bits(got.CreatedAt), math.Float64bits(cp.CreatedAt))
		}
		got.CreatedAt, cp.CreatedAt = 0, 0
		for j := range cp.Artifacts {
			if math.Float64bits(got.Artifacts[j].CreatedAt) != math.Float64bits(cp.Artifacts[j].CreatedAt) {
				t.Fatalf("case %d: artifact createdAt differs", i)
			}
			got.Artifacts[j].CreatedAt, cp.Artifacts[j].CreatedAt = 0, 0
		}
		if !reflect.DeepEqual(got, cp) {
			t.Fatalf("case %d: decoded %#v\nwant %#v", i, got, cp)
		}
	}
}

// Every strict prefix of an encoding, and trailing bytes, fail with
// ErrCorrupt.
func TestCodecRejectsDamage(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	for range 200 {
		cp := randCheckpoint(rng)
		h, b := string(encodeHeader(cp)), string(encodeBody(cp))
		for n := range len(h) {
			if err := decodeHeader(&ckptstore.Checkpoint{}, h[:n]); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("header cut to %d bytes: %v", n, err)
			}
		}
		for n := range len(b) {
			if err := decodeBody(&ckptstore.Checkpoint{}, b[:n], ""); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("body cut to %d bytes: %v", n, err)
			}
		}
		if err := decodeBody(&ckptstore.Checkpoint{}, b+"x", ""); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("body with a trailing byte: %v", err)
		}
	}
	if err := decodeHeader(&ckptstore.Checkpoint{}, "\x02"+strings.Repeat("\x00", 12)); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("unknown version: %v", err)
	}
}

// FuzzDecode feeds arbitrary bytes to the decoders: they may fail, never
// panic or allocate beyond the input.
func FuzzDecode(f *testing.F) {
	rng := rand.New(rand.NewPCG(3, 3))
	for range 5 {
		cp := randCheckpoint(rng)
		f.Add(string(encodeHeader(cp)), string(encodeBody(cp)))
	}
	f.Fuzz(func(t *testing.T, h, b string) {
		_ = decodeHeader(&ckptstore.Checkpoint{}, h)
		_ = decodeBody(&ckptstore.Checkpoint{}, b, "[]")
	})
}
