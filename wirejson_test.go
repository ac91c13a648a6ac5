package ckptstore_test

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore"
)

func TestWriterJSON(t *testing.T) {
	w := ckptstore.Writer{ThreadID: "t<é>", OwnerToken: "tok", Fence: 7}
	b, err := w.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"threadId":"t<é>","ownerToken":"tok","fence":7}` {
		t.Errorf("Writer JSON = %s", b)
	}
	var back ckptstore.Writer
	if err := json.Unmarshal(b, &back); err != nil || back != w {
		t.Errorf("round trip: %+v, %v", back, err)
	}
	for in, want := range map[string]error{
		`{"ownerToken":"x","fence":1}`:                     ckptstore.ErrInvalidID,
		`{"threadId":"\ud800","ownerToken":"x","fence":1}`: ckptstore.ErrInvalidID,
		`{"threadId":5,"ownerToken":"x","fence":1}`:        ckptstore.ErrInvalidID,
		`{"threadId":"t","ownerToken":1,"fence":1}`:        ckptstore.ErrInvalidEntry,
		`{"threadId":"t","fence":1}`:                       ckptstore.ErrInvalidEntry,
		`{"threadId":"t","ownerToken":"x","fence":1.5}`:    ckptstore.ErrInvalidEntry,
		`{"threadId":"t","ownerToken":"x","fence":"1"}`:    ckptstore.ErrInvalidEntry,
		`{"threadId":"t","ownerToken":"x","fence":1e300}`:  ckptstore.ErrInvalidEntry,
		`[1]`: ckptstore.ErrInvalidEntry,
	} {
		var w ckptstore.Writer
		if err := json.Unmarshal([]byte(in), &w); !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", in, err, want)
		}
	}
}

func TestLeaseJSON(t *testing.T) {
	exp := time.UnixMilli(1_700_000_000_123).Add(456 * time.Microsecond)
	l := ckptstore.NewLease(ckptstore.Writer{ThreadID: "t", OwnerToken: "o", Fence: 2}, exp, 45*time.Second, nil)
	b, err := l.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"threadId":"t","ownerToken":"o","fence":2,"expiresAt":1700000000123.456,"renewAfterMs":45000}`
	if string(b) != want {
		t.Errorf("Lease JSON = %s, want %s", b, want)
	}
	var w ckptstore.Writer
	if err := json.Unmarshal(b, &w); err != nil || w != l.Writer {
		t.Errorf("a lease does not decode as its writer: %+v, %v", w, err)
	}
}

func TestMillis(t *testing.T) {
	for _, ns := range []int64{0, 1, -1, 999_999, 1e6, -1e6, 1_700_000_000_123_456_789, -1_700_000_000_000_000_001, math.MaxInt64 / 2} {
		s := string(ckptstore.AppendMillis(nil, ns))
		back, err := ckptstore.ParseMillis(s)
		// Six fraction digits are the nanoseconds of a millisecond, so
		// the round trip is exact.
		if err != nil || back != ns {
			t.Errorf("%d → %q → %d, %v", ns, s, back, err)
		}
	}
	for s, want := range map[string]int64{"1e3": 1e9, "1.5": 1_500_000, "-0.5": -500_000, "12.0000019": 12_000_001, "1700000000123": 1_700_000_000_123_000_000} {
		if got, err := ckptstore.ParseMillis(s); err != nil || got != want {
			t.Errorf("ParseMillis(%q) = %d, %v, want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "x", "1.", ".5", "01", "NaN", "Infinity", "1e400", "+1", " 1", "1e300", "0x10"} {
		if _, err := ckptstore.ParseMillis(s); err == nil {
			t.Errorf("ParseMillis(%q) accepted", s)
		}
	}
}

// TestReaderString: JSONReader.String decodes ids strictly, naming the
// field and its offset.
func TestReaderString(t *testing.T) {
	read := func(in string) (string, bool, error) {
		r := ckptstore.NewJSONReader([]byte(in))
		defer r.Close()
		return r.String("/id", ckptstore.ErrInvalidID)
	}
	if s, ok, err := read(`"a\u00e9\ud83d\ude00"`); err != nil || !ok || s != "aé😀" {
		t.Errorf("valid: %q %v %v", s, ok, err)
	}
	if _, ok, err := read(`null`); ok || err != nil {
		t.Errorf("null: %v %v", ok, err)
	}
	for _, in := range []string{`"\ud800"`, `"\udc00x"`, `1`, `["a"]`, "\"\xff\""} {
		_, _, err := read(in)
		if !errors.Is(err, ckptstore.ErrInvalidID) {
			t.Errorf("%s: %v", in, err)
		} else if !strings.Contains(err.Error(), "/id") || !strings.Contains(err.Error(), "offset 0") {
			t.Errorf("%s: error %q does not name /id and offset 0", in, err)
		}
	}
}
