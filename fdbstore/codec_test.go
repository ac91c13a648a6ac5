package fdbstore

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/fdbstore/internal/tuple"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

// TestCodecRoundTrip checks the value fdbstore composes from cpcodec's
// parts (whose own round-trip, damage and fuzz tests live in
// internal/cpcodec): exact, nil apart from empty, every truncation refused
// with ErrCorrupt (a value that lost its last chunk included), and no
// memory shared with the stored bytes.
func TestCodecRoundTrip(t *testing.T) {
	full := &ckptstore.Checkpoint{
		ID: "c1", ThreadID: "t\x00é", ParentCheckpointID: "c0", CreatedAt: 1.5e12 + 0.25,
		Reason: ckptstore.ReasonNamed, Label: "v1 ✓", SourceRunID: "run-7",
		Files: []ckptstore.Entry{
			{Path: "src", Kind: ckptstore.KindDir},
			{Path: "src/main.go", Kind: ckptstore.KindFile, BlobKey: "sandbox-files/sha256/" + string(bytes.Repeat([]byte("a"), 64)), Size: 1<<53 - 1},
		},
		Conversation: []byte(" [ {\"a\": 1} ]\n"),
		Artifacts: []ckptstore.Artifact{{
			ArtifactID: "a1", Name: "out.png", MimeType: "image/png", Size: 0,
			BlobKey: "sandbox-artifacts/sha256/" + string(bytes.Repeat([]byte("b"), 64)), CreatedAt: math.Copysign(0, -1),
		}},
	}
	for _, cp := range []*ckptstore.Checkpoint{
		full,
		{ID: "x", ThreadID: "y", CreatedAt: math.Copysign(0, -1), Reason: ckptstore.ReasonAutomatic},                                                                         // nil slices
		{ID: "x", ThreadID: "y", CreatedAt: -1e300, Reason: ckptstore.ReasonForkRoot, Files: []ckptstore.Entry{}, Artifacts: []ckptstore.Artifact{}, Conversation: []byte{}}, // empty, not nil
	} {
		enc, err := encodeCheckpoint(cp)
		testkit.Must(t, err)
		got, err := decodeCheckpoint(enc)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, cp) || math.Float64bits(got.CreatedAt) != math.Float64bits(cp.CreatedAt) {
			t.Fatalf("round trip:\n got %#v\nwant %#v", got, cp)
		}
		if (got.Files == nil) != (cp.Files == nil) || (got.Conversation == nil) != (cp.Conversation == nil) || (got.Artifacts == nil) != (cp.Artifacts == nil) {
			t.Fatal("nil and empty slices were not kept apart")
		}
		// Every strict prefix of the encoding is rejected, not misread.
		for i := 0; i < len(enc); i++ {
			if _, err := decodeCheckpoint(enc[:i]); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("prefix of %d bytes: %v, want ErrCorrupt", i, err)
			}
		}
		if _, err := decodeCheckpoint(append(enc[:len(enc):len(enc)], 0)); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("trailing byte: %v, want ErrCorrupt", err)
		}
	}
	// A decoded checkpoint shares no memory with the stored bytes.
	enc, err := encodeCheckpoint(full)
	testkit.Must(t, err)
	got, err := decodeCheckpoint(enc)
	testkit.Must(t, err)
	for i := range enc {
		enc[i] = 0
	}
	if !reflect.DeepEqual(got, full) {
		t.Fatal("decoded checkpoint aliases its encoding")
	}
	// A value of another version is refused, not misread.
	enc, _ = encodeCheckpoint(full)
	enc[0]++
	if _, err := decodeCheckpoint(enc); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("unknown version: %v, want ErrCorrupt", err)
	}
	// An entry the layout cannot hold exactly is refused before any write.
	bad := full.Clone()
	bad.Files[0].Size = 1
	if _, err := encodeCheckpoint(bad); !errors.Is(err, ckptstore.ErrInvalidEntry) {
		t.Fatalf("directory with a size: %v, want ErrInvalidEntry", err)
	}
}

// TestKeyLayout pins the documented key layout to exact bytes: tuple-layer
// keys under the raw prefix, index and thread keys led by the id's bucket.
func TestKeyLayout(t *testing.T) {
	k := newKeys([]byte("P"))
	bk := func(id string) string { return string(tuple.Pack(bucket(id))) }
	th := "P\x02t\x00" + bk("t") + "\x02t\x00"
	for _, c := range []struct {
		name string
		got  []byte
		want string
	}{
		{"index", k.index("c1"), "P\x02i\x00" + bk("c1") + "\x02c1\x00"},
		{"copy chunk", k.copyChunk("c1", 1), "P\x02i\x00" + bk("c1") + "\x02c1\x00\x15\x01"},
		{"head", k.head("t\x00"), "P\x02t\x00" + bk("t\x00") + "\x02t\x00\xff\x00\x02h\x00"},
		{"lease", k.lease("t"), th + "\x02l\x00"},
		{"chunk", k.chunk("t", 1, "c", 2), th + "\x02c\x00\x21\xbf\xf0\x00\x00\x00\x00\x00\x00\x02c\x00\x15\x02"},
		{"chunk at -0", k.chunk("t", math.Copysign(0, -1), "c", 0), th + "\x02c\x00\x21\x80\x00\x00\x00\x00\x00\x00\x00\x02c\x00\x14"},
		{"link", k.link("t", "c"), th + "\x02p\x00\x02c\x00"},
		{"transcript", k.transcriptChunk("t", 0), th + "\x02m\x00\x14"},
		{"marker", k.opMarker("t", 256, "tok"), th + "\x02o\x00\x16\x01\x00\x02tok\x00"},
		{"listed", k.listed("t"), "P\x02x\x00\x02t\x00"},
		{"ref", k.ref("sandbox-files/x"), "P\x02r\x00\x02sandbox-files/x\x00"},
		{"instance", k.instance("k"), "P\x02n\x00\x02k\x00"},
	} {
		if string(c.got) != c.want {
			t.Errorf("%s key = %q, want %q", c.name, c.got, c.want)
		}
	}
	if DefaultPrefix != string(tuple.Pack("ckptstore")) {
		t.Errorf("DefaultPrefix = %q, want the packed tuple (\"ckptstore\")", DefaultPrefix)
	}
	// The bucket is pinned: it is part of the stored layout.
	for id, want := range map[string]int64{"": 33052, "c1": 34857, "thread-1": 7547} {
		if got := bucket(id); got != want {
			t.Errorf("bucket(%q) = %d, want %d", id, got, want)
		}
	}
	// Keys never share memory with the prefix or each other.
	a, b := k.index("a"), k.index("b")
	a[len(a)-2] = 'z'
	if string(b) != "P\x02i\x00"+bk("b")+"\x02b\x00" || string(k.p) != "P" {
		t.Fatal("keys share memory")
	}
	// Markers of epochs before the cutoff are in the range a write clears;
	// later ones are not, nor another thread's.
	r := k.opsBefore("t", 1000)
	in := func(key []byte) bool { return string(key) >= string(r.Begin) && string(key) < string(r.End) }
	for epoch, want := range map[int64]bool{0: true, 999: true, 1000: false, 5000: false} {
		if got := in(k.opMarker("t", epoch, "tok")); got != want {
			t.Errorf("marker of epoch %d in the cleared range: %v, want %v", epoch, got, want)
		}
	}
	if in(k.opMarker("u", 0, "tok")) || in(k.lease("t")) || in(k.head("t")) {
		t.Error("the cleared range holds another thread's marker or another key")
	}
	// The id range holds the index key and its copy, not a longer id's.
	idr := k.idRange("a")
	for key, want := range map[string]bool{string(k.index("a")): true, string(k.copyChunk("a", 3)): true,
		string(k.index("a\x00")): false, string(k.copyChunk("a\x00", 0)): false} {
		if got := key >= string(idr.Begin) && key < string(idr.End); got != want && bucket("a") == bucket("a\x00") {
			t.Errorf("key %q in idRange(a): %v, want %v", key, got, want)
		}
	}
}

// TestTypedKeysMatchTuples: the keys built by typed appenders into
// presized buffers are the tuples the layout documents, for ids with
// escaped bytes too; and the blob keys of a stored checkpoint, carved from
// one buffer, are the ref keys and cannot overwrite each other.
func TestTypedKeysMatchTuples(t *testing.T) {
	k := newKeys([]byte("\x15pre"))
	for _, id := range []string{"", "c", "a\x00b", "\x00\x00", "\xffé"} {
		th := "th\x00" + id
		for _, c := range []struct {
			name      string
			got, want []byte
		}{
			{"index", k.index(id), k.key(spaceIndex, bucket(id), id)},
			{"copy", k.copyChunk(id, 2), k.key(spaceIndex, bucket(id), id, 2)},
			{"head", k.head(th), k.key(spaceThread, bucket(th), th, threadHead)},
			{"lease", k.lease(th), k.key(spaceThread, bucket(th), th, threadLease)},
			{"link", k.link(th, id), k.key(spaceThread, bucket(th), th, threadLinks, id)},
			{"ref", k.ref(id), k.key(spaceRefs, id)},
			{"listed", k.listed(th), k.key(spaceListed, th)},
			{"transcript", k.transcriptChunk(th, 300), k.key(spaceThread, bucket(th), th, threadTranscript, 300)},
			{"marker", k.opMarker(th, 1234567, id), k.key(spaceThread, bucket(th), th, threadOps, 1234567, id)},
			{"checkpoint", k.checkpointPrefix(th, -2.5, id), k.key(spaceThread, bucket(th), th, threadData, -2.5, id)},
			{"chunk", k.chunk(th, 7, id, 300), k.key(spaceThread, bucket(th), th, threadData, 7.0, id, 300)},
		} {
			if !bytes.Equal(c.got, c.want) {
				t.Errorf("%s(%q) = %x, want %x", c.name, id, c.got, c.want)
			}
		}
	}
	s := &Driver{k: k}
	cp := &ckptstore.Checkpoint{ID: "c", ThreadID: "t", Files: []ckptstore.Entry{
		{Path: "a", Kind: ckptstore.KindFile, BlobKey: "sandbox-files/sha256/" + strings.Repeat("a", 64)},
		{Path: "b", Kind: ckptstore.KindFile, BlobKey: "sandbox-files/sha256/" + strings.Repeat("b", 64)},
	}}
	st, err := s.newStored(cp)
	testkit.Must(t, err)
	if len(st.refKeys) != 2 {
		t.Fatalf("%d ref keys, want 2", len(st.refKeys))
	}
	for i, b := range st.blobs {
		if !bytes.Equal(st.refKeys[i], k.ref(b)) || cap(st.refKeys[i]) != len(st.refKeys[i]) {
			t.Errorf("ref key %d = %q (capacity %d), want %q capped at its length", i, st.refKeys[i], cap(st.refKeys[i]), k.ref(b))
		}
	}
}

func TestValueEncodings(t *testing.T) {
	l := leaseValue{token: "tok", fence: 7, expires: time.Unix(1_700_000_000, 123_456_789)}
	got, err := decodeLease(l.encode())
	if err != nil || got.token != l.token || got.fence != l.fence || !got.expires.Equal(l.expires) {
		t.Fatalf("lease round trip: %+v, %v", got, err)
	}
	lv := linkValue{parent: "p", createdAt: -3.5, size: 1234, blobs: 9}
	if got, err := decodeLink(lv.encode()); err != nil || got != lv {
		t.Fatalf("link round trip: %+v, %v", got, err)
	}
	for _, iv := range []indexValue{{thread: "t", createdAt: 2}, {thread: "u", createdAt: -1, copied: true}} {
		if got, err := decodeIndex(iv.encode()); err != nil || got != iv {
			t.Fatalf("index round trip: %+v, %v", got, err)
		}
	}
	for _, v := range []int64{0, 1234567890123} {
		m := append(tuple.Pack(v), "result"...)
		if ms, rest, err := decodeMarker(m); err != nil || ms != v || string(rest) != "result" {
			t.Fatalf("decodeMarker(%x) = %d, %q, %v", m, ms, rest, err)
		}
	}
	for _, bad := range [][]byte{nil, {0x02, 'x', 0}, {0x16, 1}} {
		if _, _, err := decodeMarker(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("decodeMarker(%x): %v", bad, err)
		}
	}
	for _, bad := range [][]byte{nil, {0x02, 'x'}, l.encode()[:5], lv.encode()[:3]} {
		if _, err := decodeLease(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("decodeLease(%x): %v", bad, err)
		}
		if _, err := decodeLink(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("decodeLink(%x): %v", bad, err)
		}
		if _, err := decodeIndex(bad); !errors.Is(err, ErrCorrupt) {
			t.Errorf("decodeIndex(%x): %v", bad, err)
		}
	}
}
