package tuple

import (
	"bytes"
	"encoding/hex"
	"math"
	"math/rand"
	"slices"
	"strings"
	"testing"
)

func mustHex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSpecEncodings checks the test cases published in the tuple spec
// (design/tuple.md of apple/foundationdb) and encodings that follow
// directly from its rules.
func TestSpecEncodings(t *testing.T) {
	for _, tc := range []struct {
		name string
		elem any
		want string
	}{
		// The spec's own test cases.
		{"spec byte string", []byte("foo\x00bar"), "\x01foo\x00\xffbar\x00"},
		{"spec unicode string", "F\u00d4O\u0000bar", "\x02F\xc3\x94O\x00\xffbar\x00"},
		{"spec integer", -5551212, "\x11\xabK\x93"},
		{"spec minus one", -1, "\x13\xfe"},
		{"spec float", float32(-42), "\x20\x3d\xd7\xff\xff"},
		{"null", nil, "\x00"},
		{"false", false, "\x26"},
		{"true", true, "\x27"},
		// Integers: typecode 0x14±n, big endian, negatives one's complement.
		{"zero", 0, "\x14"},
		{"one", 1, "\x15\x01"},
		{"255", 255, "\x15\xff"},
		{"256", 256, "\x16\x01\x00"},
		{"-255", -255, "\x13\x00"},
		{"-256", -256, "\x12\xfe\xff"},
		{"max int64", int64(math.MaxInt64), "\x1c\x7f\xff\xff\xff\xff\xff\xff\xff"},
		{"min int64", int64(math.MinInt64), "\x0c\x7f\xff\xff\xff\xff\xff\xff\xff"},
		{"max uint64", uint64(math.MaxUint64), "\x1c\xff\xff\xff\xff\xff\xff\xff\xff"},
		// Doubles: big-endian IEEE; sign bit flipped, or every bit when negative.
		{"double 1", 1.0, "\x21\xbf\xf0\x00\x00\x00\x00\x00\x00"},
		{"double -1", -1.0, "\x21\x40\x0f\xff\xff\xff\xff\xff\xff"},
		{"double +0", 0.0, "\x21\x80\x00\x00\x00\x00\x00\x00\x00"},
		{"double -0", math.Copysign(0, -1), "\x21\x7f\xff\xff\xff\xff\xff\xff\xff"},
		{"double +inf", math.Inf(1), "\x21\xff\xf0\x00\x00\x00\x00\x00\x00"},
		{"double -inf", math.Inf(-1), "\x21\x00\x0f\xff\xff\xff\xff\xff\xff"},
		{"empty string", "", "\x02\x00"},
		{"empty bytes", []byte{}, "\x01\x00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Pack(tc.elem)
			if !bytes.Equal(got, []byte(tc.want)) {
				t.Fatalf("Pack(%#v) = %x, want %x", tc.elem, got, tc.want)
			}
			back, err := Unpack(got)
			if err != nil {
				t.Fatalf("Unpack(%x): %v", got, err)
			}
			if len(back) != 1 || !sameElem(back[0], tc.elem) {
				t.Fatalf("Unpack(Pack(%#v)) = %#v", tc.elem, back)
			}
		})
	}
}

// TestOfficialGolden checks the cases of the official Go binding's
// testdata/tuples.golden that use only supported types. The expected bytes
// were read from that file (binding version v0.0.0-20260629183922-51e1c42eb9a8);
// the random inputs are regenerated with the same seeded generator.
func TestOfficialGolden(t *testing.T) {
	r := rand.New(rand.NewSource(1)) // the binding's test generator, in its case order
	gen := func(n int, f func() any) Tuple {
		out := make(Tuple, n)
		for i := range out {
			out[i] = f()
		}
		return out
	}
	ints := gen(20, func() any { return r.Int63() })
	floats := gen(20, func() any { return float32(r.NormFloat64()) })
	doubles := gen(20, func() any { return r.NormFloat64() })
	rep := func(n int, e any) Tuple { return gen(n, func() any { return e }) }

	for _, tc := range []struct {
		name  string
		tuple Tuple
		want  string
	}{
		{"NilCases", Tuple{"\x00", "\x00\xFF", "\x00\x00\x00", "\xFF\x00", ""},
			"0200ff000200ffff000200ff00ff00ff0002ff00ff000200"},
		{"ManyStrings", rep(8, "namespace"), strings.Repeat("026e616d65737061636500", 8)},
		{"ManyStringsNil", rep(8, "nam\x00es\xFFpace"), strings.Repeat("026e616d00ff6573ff7061636500", 8)},
		{"ManyBytes", rep(20, []byte("namespace")), strings.Repeat("016e616d65737061636500", 20)},
		{"ManyBytesNil", rep(20, []byte{0xFF, 0x00, 0xFF}), strings.Repeat("01ff00ffff00", 20)},
		// "Simple" without its leading UUID element (17 bytes).
		{"Simple", Tuple{"foobarbaz", 1234, nil}, "02666f6f62617262617a001604d200"},
		{"Integers", ints, "1c4d65822107fcfd521c78629a0f5f3f164f1c55104dc76695721d1c380704bb7b4d7c031c365a858149c6e2d11c57e9d1860d1d68d81c0866cb397916001e1c1408d2ac22c4d2941c0c697f48392907a01c268447a4189deb991c41f27cc6f3875d041c68255aaf95e946271c1b6cffa2ba5179361c30b95ff183c471d41c28b621587cb3ad0b1c3c04951aa42655d91c243a768b7c4e0b681c25845c95d4491d1b1c56ec3f25256321861c1bf98be2a9d78d73"},
		{"Floats", floats, "20bedcf19820bf7fe77f20403ceea020415deed420bff1d9f720bf8ce4b2204081db9420bf7d5da92040e280b62040485061203ff64edc20be0ca59420bee2b9a62040a7665b2042566f8e20be1fdfa020404651f920be8f3a922040216b8320bf33e771"},
		{"Doubles", doubles, "21bfd62723c1b6f6dd21400ee3245c34e7e5214015560017966a8721bfd52376175b073621bffbee8ee1d3faa021400e118e1992974a21bfe837b2346c3b4921bfedac6dd7b20068214008b63f89d1a90e21bfef2318fffccd4421402d1b3830df2bfd21bfe052df057667ba214021c882b2116f8721bfd0193b69b7949a21404b06255772469721bfc5561f1926812821bfd74c83e596dc08214005c8204b0b973d21bfeabdcb90f74ea621bff277babaceb8a4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.tuple.Pack()
			if want := mustHex(t, tc.want); !bytes.Equal(got, want) {
				t.Fatalf("Pack = %x\nwant   %x", got, want)
			}
			back, err := Unpack(got)
			if err != nil {
				t.Fatal(err)
			}
			if !sameTuple(back, tc.tuple) {
				t.Fatalf("Unpack(Pack(t)) = %#v, want %#v", back, tc.tuple)
			}
		})
	}
}

// TestOrder checks that the encoding orders tuples as their elements do,
// which List and the blob index rely on.
func TestOrder(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	floats := []float64{math.Inf(-1), -math.MaxFloat64, -1e300, -2, -1, -math.SmallestNonzeroFloat64,
		math.Copysign(0, -1), 0, math.SmallestNonzeroFloat64, 1, 1.5, 1e300, math.MaxFloat64, math.Inf(1)}
	for i := 0; i < 2000; i++ {
		floats = append(floats, r.NormFloat64()*math.Pow(10, float64(r.Intn(40)-20)))
	}
	slices.SortFunc(floats, func(a, b float64) int { // IEEE total order: -0 before +0
		switch {
		case a < b || (a == b && math.Signbit(a) && !math.Signbit(b)):
			return -1
		case a > b || (a == b && !math.Signbit(a) && math.Signbit(b)):
			return 1
		}
		return 0
	})
	for i := 1; i < len(floats); i++ {
		if bytes.Compare(Pack(floats[i-1]), Pack(floats[i])) > 0 {
			t.Fatalf("%v encodes after %v", floats[i-1], floats[i])
		}
	}

	ints := []int64{math.MinInt64, math.MinInt64 + 1, -1 << 40, -65536, -65535, -256, -255, -1, 0, 1, 255, 256, 1 << 40, math.MaxInt64}
	for i := 0; i < 2000; i++ {
		ints = append(ints, r.Int63()>>uint(r.Intn(63))*int64(1-2*r.Intn(2)))
	}
	slices.Sort(ints)
	for i := 1; i < len(ints); i++ {
		if bytes.Compare(Pack(ints[i-1]), Pack(ints[i])) > 0 {
			t.Fatalf("%d encodes after %d", ints[i-1], ints[i])
		}
	}

	// Strings, followed by another element as in a key: the terminator and
	// the escape keep byte order even with embedded NULs.
	alphabet := []byte{0x00, 0x01, 'a', 0xfe, 0xff}
	var strs []string
	for i := 0; i < 3000; i++ {
		b := make([]byte, r.Intn(5))
		for j := range b {
			b[j] = alphabet[r.Intn(len(alphabet))]
		}
		strs = append(strs, string(b))
	}
	slices.Sort(strs)
	for i := 1; i < len(strs); i++ {
		a, b := Pack(strs[i-1], 0), Pack(strs[i], 0)
		if c := bytes.Compare(a, b); c > 0 || (c == 0) != (strs[i-1] == strs[i]) {
			t.Fatalf("(%q, 0) vs (%q, 0): compare %d", strs[i-1], strs[i], c)
		}
	}
}

func TestRoundTripAndPrefix(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	for i := 0; i < 2000; i++ {
		tup := randomTuple(r)
		p := tup.Pack()
		back, err := Unpack(p)
		if err != nil {
			t.Fatalf("Unpack(%x): %v", p, err)
		}
		if !sameTuple(back, tup) {
			t.Fatalf("round trip of %#v gave %#v", tup, back)
		}
		if len(tup) > 1 {
			head := tup[:len(tup)-1].Pack()
			begin, end := Range(head)
			if !bytes.HasPrefix(p, head) || bytes.Compare(p, begin) < 0 || bytes.Compare(p, end) >= 0 {
				t.Fatalf("%x is not in the range of its prefix %x", p, head)
			}
		}
	}
}

func TestUnpackRejectsGarbage(t *testing.T) {
	for _, b := range []string{
		"\x02abc",                              // unterminated string
		"\x01a\x00\xff",                        // escape at the end, no terminator
		"\x16\x01",                             // truncated integer
		"\x21\x00\x00",                         // truncated double
		"\x20\x00",                             // truncated float
		"\x05\x00",                             // nested tuples are not supported
		"\x30" + "0123456",                     // UUIDs are not supported
		"\x0c\x00\x00\x00\x00\x00\x00\x00\x00", // below math.MinInt64
	} {
		if tup, err := Unpack([]byte(b)); err == nil {
			t.Errorf("Unpack(%x) = %#v, want an error", b, tup)
		}
	}
}

func TestPackPanicsOnUnsupported(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("Pack of a struct did not panic")
		}
	}()
	Pack(struct{}{})
}

// randomTuple returns a tuple of random supported elements, in the
// normalized types Unpack returns.
func randomTuple(r *rand.Rand) Tuple {
	n := r.Intn(6)
	t := make(Tuple, n)
	for i := range t {
		switch r.Intn(8) {
		case 0:
			t[i] = nil
		case 1:
			b := make([]byte, r.Intn(8))
			r.Read(b)
			t[i] = b
		case 2:
			b := make([]byte, r.Intn(8))
			r.Read(b)
			t[i] = string(b)
		case 3:
			t[i] = r.Int63() >> uint(r.Intn(63)) * int64(1-2*r.Intn(2))
		case 4:
			t[i] = uint64(1<<63) + uint64(r.Int63())
		case 5:
			t[i] = math.Float64frombits(r.Uint64())
		case 6:
			t[i] = math.Float32frombits(r.Uint32())
		case 7:
			t[i] = r.Intn(2) == 0
		}
	}
	return t
}

func sameTuple(a, b Tuple) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !sameElem(a[i], b[i]) {
			return false
		}
	}
	return true
}

// sameElem compares elements after Unpack's normalization (int → int64);
// floats by their bits, so NaNs and -0 compare exactly.
func sameElem(got, want any) bool {
	switch w := want.(type) {
	case int:
		want = int64(w)
	case []byte:
		g, ok := got.([]byte)
		return ok && bytes.Equal(g, w)
	case float64:
		g, ok := got.(float64)
		return ok && math.Float64bits(g) == math.Float64bits(w)
	case float32:
		g, ok := got.(float32)
		return ok && math.Float32bits(g) == math.Float32bits(w)
	}
	return got == want
}

// The typed appenders are Append without interfaces: same bytes, and the
// lengths they announce are exact.
func TestTypedAppenders(t *testing.T) {
	for _, s := range []string{"", "a", "\x00", "a\x00b\x00\x00", "héllo", "\xff\x00\xff"} {
		got := AppendString([]byte("p"), s)
		if want := Append([]byte("p"), s); !bytes.Equal(got, want) {
			t.Errorf("AppendString(%q) = %x, want %x", s, got, want)
		}
		if n := StringLen(s); n != len(got)-1 {
			t.Errorf("StringLen(%q) = %d, encoding has %d bytes", s, n, len(got)-1)
		}
	}
	for _, i := range []int64{0, 1, -1, 255, 256, -256, math.MaxInt64, math.MinInt64} {
		got := AppendInt(nil, i)
		if want := Pack(i); !bytes.Equal(got, want) || len(got) > MaxIntLen {
			t.Errorf("AppendInt(%d) = %x, want %x (at most %d bytes)", i, got, want, MaxIntLen)
		}
	}
	for _, f := range []float64{0, math.Copysign(0, -1), 1.5, -1e300, math.Inf(1), math.NaN()} {
		got := AppendFloat64(nil, f)
		if want := Pack(f); !bytes.Equal(got, want) || len(got) != Float64Len {
			t.Errorf("AppendFloat64(%v) = %x, want %x (%d bytes)", f, got, want, Float64Len)
		}
	}
}
