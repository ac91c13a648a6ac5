package cpcodec_test

// Round trips of random checkpoints (rapid), the exact bytes of the layout,
// refusal of every truncation and corruption, bounded allocation, and a
// fuzz target: decoding arbitrary bytes never panics, and whatever decodes
// encodes again to a value that decodes the same.

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/internal/cpcodec"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

// encode composes the parts as a store does: version, header, body, then
// the conversation when it is present.
func encode(cp *ckptstore.Checkpoint) ([]byte, error) {
	n := 1 + cpcodec.HeaderLen(cp) + cpcodec.BodyLen(cp)
	if cp.Conversation != nil {
		n += cpcodec.StringLen(cp.Conversation)
	}
	b := append(make([]byte, 0, n), cpcodec.Version)
	b = cpcodec.AppendHeader(b, cp)
	b, err := cpcodec.AppendBody(b, cp)
	if err != nil {
		return nil, err
	}
	if cp.Conversation != nil {
		b = cpcodec.AppendString(b, cp.Conversation)
	}
	return b, nil
}

// decode reads what encode wrote, with errors that wrap corrupt.
func decode(b []byte, corrupt error) (*ckptstore.Checkpoint, error) {
	d := cpcodec.NewDecoder(b, corrupt)
	d.Version("value")
	cp := &ckptstore.Checkpoint{}
	d.Header(cp)
	if d.Body(cp) {
		cp.Conversation = d.Bytes("conversation")
	}
	if err := d.End("value"); err != nil {
		return nil, err
	}
	return cp, nil
}

// same reports whether a and b are equal field for field, floats compared
// by their bits (NaN payloads, -0) and nil slices apart from empty ones.
func same(a, b *ckptstore.Checkpoint) bool {
	a, b = a.Clone(), b.Clone()
	if math.Float64bits(a.CreatedAt) != math.Float64bits(b.CreatedAt) || len(a.Artifacts) != len(b.Artifacts) {
		return false
	}
	a.CreatedAt, b.CreatedAt = 0, 0
	for i := range a.Artifacts {
		if math.Float64bits(a.Artifacts[i].CreatedAt) != math.Float64bits(b.Artifacts[i].CreatedAt) {
			return false
		}
		a.Artifacts[i].CreatedAt, b.Artifacts[i].CreatedAt = 0, 0
	}
	return reflect.DeepEqual(a, b) // DeepEqual tells nil from empty slices
}

// genCheckpoint draws checkpoints that pass the codec's preconditions:
// strings of any bytes (invalid UTF-8, NUL), floats of any bits, sizes
// with their extremes, and nil or empty slices and conversation.
func genCheckpoint(t *rapid.T) *ckptstore.Checkpoint {
	str := rapid.OneOf(
		rapid.Map(rapid.SliceOfN(rapid.Byte(), 0, 12), func(b []byte) string { return string(b) }),
		rapid.StringN(0, 12, -1),
	)
	float := rapid.OneOf(
		rapid.Map(rapid.Uint64(), math.Float64frombits),
		rapid.SampledFrom([]float64{0, math.Copysign(0, -1), math.NaN(), math.Inf(-1), math.SmallestNonzeroFloat64, math.MaxFloat64}),
	)
	size := rapid.OneOf(rapid.Int64Range(0, driver.MaxSize), rapid.SampledFrom([]int64{0, 127, 128, driver.MaxSize}))
	cp := &ckptstore.Checkpoint{
		ID: "id", ThreadID: "t", // not part of the header or body
		CreatedAt:   float.Draw(t, "createdAt"),
		Reason:      ckptstore.Reason(str.Draw(t, "reason")),
		Label:       str.Draw(t, "label"),
		SourceRunID: str.Draw(t, "sourceRunId"),
	}
	if rapid.IntRange(0, 2).Draw(t, "files nil/empty/some") > 0 {
		cp.Files = make([]ckptstore.Entry, rapid.IntRange(0, 5).Draw(t, "files"))
		for i := range cp.Files {
			e := ckptstore.Entry{Path: str.Draw(t, "path"), Kind: ckptstore.KindDir}
			if rapid.Bool().Draw(t, "isFile") {
				e.Kind, e.BlobKey, e.Size = ckptstore.KindFile, str.Draw(t, "blobKey"), size.Draw(t, "size")
			}
			cp.Files[i] = e
		}
	}
	if rapid.IntRange(0, 2).Draw(t, "conversation nil/empty/some") > 0 {
		cp.Conversation = []byte(str.Draw(t, "conversation"))
	}
	if rapid.IntRange(0, 2).Draw(t, "artifacts nil/empty/some") > 0 {
		cp.Artifacts = make([]ckptstore.Artifact, rapid.IntRange(0, 3).Draw(t, "artifacts"))
		for i := range cp.Artifacts {
			cp.Artifacts[i] = ckptstore.Artifact{ArtifactID: str.Draw(t, "artifactId"), Name: str.Draw(t, "name"),
				MimeType: str.Draw(t, "mimeType"), Size: size.Draw(t, "size"), BlobKey: str.Draw(t, "blobKey"),
				CreatedAt: float.Draw(t, "createdAt")}
		}
	}
	return cp
}

// partsOf returns cp without the fields the parts leave to the store (the ids).
func partsOf(cp *ckptstore.Checkpoint) *ckptstore.Checkpoint {
	c := cp.Clone()
	c.ID, c.ThreadID, c.ParentCheckpointID = "", "", ""
	return c
}

func TestRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		cp := genCheckpoint(t)
		if h := cpcodec.AppendHeader(nil, cp); len(h) != cpcodec.HeaderLen(cp) {
			t.Fatalf("header is %d bytes, HeaderLen says %d", len(h), cpcodec.HeaderLen(cp))
		}
		body, err := cpcodec.AppendBody(nil, cp)
		if err != nil {
			t.Fatal(err)
		}
		if len(body) != cpcodec.BodyLen(cp) {
			t.Fatalf("body is %d bytes, BodyLen says %d", len(body), cpcodec.BodyLen(cp))
		}
		enc, err := encode(cp)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decode(enc, nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := partsOf(cp); !same(got, want) {
			t.Fatalf("round trip:\n got %#v\nwant %#v", got, want)
		}
		// The decoded value shares no memory with the encoding.
		clear(enc)
		if want := partsOf(cp); !same(got, want) {
			t.Fatal("the decoded checkpoint aliases its encoding")
		}
	})
}

// Every strict prefix of an encoding and every encoding with a trailing
// byte is refused with the caller's sentinel, never misread.
func TestRejectsTruncationAndTrailingBytes(t *testing.T) {
	errMine := errors.New("mine")
	rapid.Check(t, func(t *rapid.T) {
		enc, err := encode(genCheckpoint(t))
		if err != nil {
			t.Fatal(err)
		}
		for n := range len(enc) {
			if _, err := decode(enc[:n:n], errMine); !errors.Is(err, errMine) {
				t.Fatalf("prefix of %d of %d bytes: %v, want the sentinel", n, len(enc), err)
			}
		}
		if _, err := decode(append(enc, 0), errMine); !errors.Is(err, errMine) {
			t.Fatalf("trailing byte: %v, want the sentinel", err)
		}
	})
}

// TestLayout pins the documented layout to exact bytes.
func TestLayout(t *testing.T) {
	cp := &ckptstore.Checkpoint{
		CreatedAt: math.Copysign(0, -1), Reason: "r", Label: "", SourceRunID: "s",
		Files: []ckptstore.Entry{
			{Path: "d", Kind: ckptstore.KindDir},
			{Path: "f", Kind: ckptstore.KindFile, BlobKey: "k", Size: 300},
		},
		Conversation: []byte("[]"),
		Artifacts:    []ckptstore.Artifact{},
	}
	enc, err := encode(cp)
	if err != nil {
		t.Fatal(err)
	}
	want := "\x02" + // Version
		"\x80\x00\x00\x00\x00\x00\x00\x00" + "\x01r" + "\x00" + "\x01s" + // header: -0, reason, label, sourceRunId
		"\x03" + "\x01dd" + "\x01ff\x01k\xac\x02" + // two files: a directory, a file of size 300
		"\x01" + // a conversation
		"\x01" + // no artifacts, not nil
		"\x02[]" // the conversation, as a store may append it
	if string(enc) != want {
		t.Fatalf("encoding\n got %q\nwant %q", enc, want)
	}
	nilSlices := &ckptstore.Checkpoint{}
	if enc, _ := encode(nilSlices); string(enc) != "\x02"+strings.Repeat("\x00", 8)+"\x00\x00\x00"+"\x00\x00\x00" {
		t.Fatalf("nil slices encode as %q", enc)
	}
}

// Entries the layout cannot hold exactly are refused, and b comes back as
// it was; a valid checkpoint's entries are all accepted.
func TestAppendBodyRefusesInvalidEntries(t *testing.T) {
	for name, mutate := range map[string]func(cp *ckptstore.Checkpoint){
		"unknown kind":        func(cp *ckptstore.Checkpoint) { cp.Files[0].Kind = "link" },
		"empty kind":          func(cp *ckptstore.Checkpoint) { cp.Files[0].Kind = "" },
		"directory blobKey":   func(cp *ckptstore.Checkpoint) { cp.Files[1].BlobKey = "k" },
		"directory size":      func(cp *ckptstore.Checkpoint) { cp.Files[1].Size = 1 },
		"negative file size":  func(cp *ckptstore.Checkpoint) { cp.Files[0].Size = -1 },
		"file size too large": func(cp *ckptstore.Checkpoint) { cp.Files[0].Size = driver.MaxSize + 1 },
		"negative artifact":   func(cp *ckptstore.Checkpoint) { cp.Artifacts[0].Size = -1 },
		"artifact too large":  func(cp *ckptstore.Checkpoint) { cp.Artifacts[0].Size = math.MaxInt64 },
	} {
		cp := &ckptstore.Checkpoint{
			Files: []ckptstore.Entry{
				{Path: "f", Kind: ckptstore.KindFile, BlobKey: "k", Size: driver.MaxSize},
				{Path: "d", Kind: ckptstore.KindDir},
			},
			Artifacts: []ckptstore.Artifact{{ArtifactID: "a", Size: 0}},
		}
		if _, err := cpcodec.AppendBody(nil, cp); err != nil {
			t.Fatalf("%s: the valid checkpoint is refused: %v", name, err)
		}
		mutate(cp)
		prefix := []byte("prefix")
		b, err := cpcodec.AppendBody(prefix, cp)
		if !errors.Is(err, ckptstore.ErrInvalidEntry) {
			t.Errorf("%s: %v, want ErrInvalidEntry", name, err)
		}
		if string(b) != "prefix" {
			t.Errorf("%s: returned %q, want the buffer as it was", name, b)
		}
	}
}

// Hand-made corruptions that are the right length but wrong are refused.
func TestDecodeRefusesCorruption(t *testing.T) {
	header := "\x02" + strings.Repeat("\x00", 8) + "\x00\x00\x00"
	size := func(n uint64) string {
		var b []byte
		for ; n >= 0x80; n >>= 7 {
			b = append(b, byte(n)|0x80)
		}
		return string(append(b, byte(n)))
	}
	for name, enc := range map[string]string{
		"empty":                   "",
		"version 1":               "\x01" + header[1:] + "\x00\x00\x00",
		"unknown kind":            header + "\x02\x01fx" + "\x00\x00",
		"size above MaxSize":      header + "\x02\x01ff\x00" + size(driver.MaxSize+1) + "\x00\x00",
		"conversation flag 2":     header + "\x00\x02\x00",
		"present, no bytes":       header + "\x00\x01\x00",
		"too many files":          header + "\x04" + "\x01dd\x01ed" + "\x00\x00", // 3 claimed, 2 there
		"files beyond the input":  header + size(1<<62) + "\x00\x00",
		"artifacts beyond input":  header + "\x00\x00" + size(1<<40) + strings.Repeat("\x00", 13),
		"string beyond the input": "\x02" + strings.Repeat("\x00", 8) + size(1<<50) + "r",
		"overlong uvarint":        header + strings.Repeat("\xff", 11),
	} {
		if _, err := decode([]byte(enc), nil); !errors.Is(err, cpcodec.ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
	// The largest size decodes.
	if cp, err := decode([]byte(header+"\x02\x01ff\x00"+size(driver.MaxSize)+"\x00\x00"), nil); err != nil || cp.Files[0].Size != driver.MaxSize {
		t.Fatalf("size MaxSize: %+v, %v", cp, err)
	}
}

// A corrupt count cannot make the decoder allocate beyond the input: a
// count of one item more than the bytes left can hold is refused before
// the slice is made, and the refusal allocates only its error.
func TestCountBoundedByInput(t *testing.T) {
	d := cpcodec.NewDecoder([]byte("\x04\x00\x00\x00\x00\x00\x00"), nil) // 3 items claimed, 6 bytes left
	if n, isNil := d.Count("items", 2); d.Err() != nil || isNil || n != 3 {
		t.Fatalf("3 items of ≥ 2 bytes in 6: n=%d nil=%v err=%v", n, isNil, d.Err())
	}
	d = cpcodec.NewDecoder([]byte("\x04\x00\x00\x00\x00\x00"), nil) // 3 claimed, 5 left
	if _, isNil := d.Count("items", 2); d.Err() == nil || !isNil {
		t.Fatal("3 items of ≥ 2 bytes in 5 bytes were accepted")
	}
	huge := []byte("\x02" + strings.Repeat("\x00", 11) + "\xff\xff\xff\xff\xff\xff\xff\xff\x7f")
	// Bytes, not allocation counts: the race detector and the compiler
	// change the count, while a slice made for the claimed count would be
	// exabytes.
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := decode(huge, nil)
	runtime.ReadMemStats(&after)
	if err == nil {
		t.Fatal("a count of 2^63 was accepted")
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 64<<10 {
		t.Fatalf("refusing a huge count allocated %d bytes", n)
	}
}

// Without a sentinel of its own, the caller gets ErrCorrupt; with one, its
// own and not ErrCorrupt.
func TestSentinel(t *testing.T) {
	errMine := errors.New("mine")
	if _, err := decode(nil, nil); !errors.Is(err, cpcodec.ErrCorrupt) {
		t.Fatalf("no sentinel: %v", err)
	}
	_, err := decode([]byte{9}, errMine)
	if !errors.Is(err, errMine) || errors.Is(err, cpcodec.ErrCorrupt) {
		t.Fatalf("own sentinel: %v", err)
	}
}

// Bytes and String copy: nothing decoded aliases the input, and an empty
// Bytes is empty, not nil.
func TestDecodedValuesAreCopies(t *testing.T) {
	in := cpcodec.AppendString(cpcodec.AppendString(nil, "abc"), "")
	d := cpcodec.NewDecoder(in, nil)
	b := d.Bytes("b")
	e := d.Bytes("e")
	if err := d.End("in"); err != nil || string(b) != "abc" || e == nil || len(e) != 0 {
		t.Fatalf("Bytes = %q, %#v, %v", b, e, err)
	}
	clear(in)
	if string(b) != "abc" {
		t.Fatal("Bytes aliases its input")
	}
}

// FuzzDecode feeds arbitrary bytes to the decoder: it may fail, but never
// panics, never returns more items than the input could hold, and whatever
// it accepts encodes again into bytes that decode to the same checkpoint.
func FuzzDecode(f *testing.F) {
	for _, cp := range []*ckptstore.Checkpoint{
		{},
		{CreatedAt: math.Copysign(0, -1), Reason: "automatic", Label: "l", Files: []ckptstore.Entry{}, Conversation: []byte{}, Artifacts: []ckptstore.Artifact{}},
		{Files: []ckptstore.Entry{{Path: "d", Kind: ckptstore.KindDir}, {Path: "d/f", Kind: ckptstore.KindFile, BlobKey: "k", Size: 1 << 40}},
			Conversation: []byte(`[{"a":1}]`), Artifacts: []ckptstore.Artifact{{ArtifactID: "a", Name: "n", MimeType: "m", Size: 7, BlobKey: "b", CreatedAt: math.NaN()}}},
	} {
		enc, err := encode(cp)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(enc)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		cp, err := decode(bytes.Clone(in), nil)
		if err != nil {
			if !errors.Is(err, cpcodec.ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		if len(cp.Files) > len(in)/2 || len(cp.Artifacts) > len(in)/13 {
			t.Fatalf("%d files and %d artifacts from %d bytes", len(cp.Files), len(cp.Artifacts), len(in))
		}
		enc, err := encode(cp)
		if err != nil {
			t.Fatalf("a decoded checkpoint does not encode: %v", err)
		}
		again, err := decode(enc, nil)
		if err != nil || !same(again, cp) {
			t.Fatalf("re-encoding changed the checkpoint: %v\n got %#v\nwant %#v", err, again, cp)
		}
	})
}

// benchCheckpoint is a checkpoint of a typical size: 200 files, 20
// directories, 5 artifacts and a 16 KiB conversation.
func benchCheckpoint() *ckptstore.Checkpoint {
	cp := &ckptstore.Checkpoint{CreatedAt: 1.7e12, Reason: ckptstore.ReasonAutomatic, Label: "run", SourceRunID: "run-1",
		Conversation: bytes.Repeat([]byte("x"), 16<<10)}
	for i := range 220 {
		if i%11 == 0 {
			cp.Files = append(cp.Files, ckptstore.Entry{Path: fmt.Sprintf("src/pkg%d", i), Kind: ckptstore.KindDir})
			continue
		}
		cp.Files = append(cp.Files, ckptstore.Entry{Path: fmt.Sprintf("src/pkg%d/file%d.go", i/11*11, i), Kind: ckptstore.KindFile,
			BlobKey: testkit.FileKey(i), Size: int64(i * 100)})
	}
	for i := range 5 {
		cp.Artifacts = append(cp.Artifacts, ckptstore.Artifact{ArtifactID: fmt.Sprint(i), Name: "out.png", MimeType: "image/png",
			Size: 1 << 20, BlobKey: testkit.ArtifactKey(i), CreatedAt: 1.7e12})
	}
	return cp
}

func BenchmarkEncode(b *testing.B) {
	cp := benchCheckpoint()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := encode(cp); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	enc, err := encode(benchCheckpoint())
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(enc)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decode(enc, nil); err != nil {
			b.Fatal(err)
		}
	}
}
