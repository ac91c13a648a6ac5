package driver_test

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore/driver"
)

func TestWriterJSON(t *testing.T) {
	w := driver.Writer{ThreadID: "t<é>", OwnerToken: "tok", Fence: 7}
	b, err := w.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `{"threadId":"t<é>","ownerToken":"tok","fence":7}` {
		t.Errorf("Writer JSON = %s", b)
	}
	var back driver.Writer
	if err := json.Unmarshal(b, &back); err != nil || back != w {
		t.Errorf("round trip: %+v, %v", back, err)
	}
	for in, want := range map[string]error{
		`{"ownerToken":"x","fence":1}`:                     driver.ErrInvalidID,
		`{"threadId":"\ud800","ownerToken":"x","fence":1}`: driver.ErrInvalidID,
		`{"threadId":5,"ownerToken":"x","fence":1}`:        driver.ErrInvalidID,
		`{"threadId":"t","ownerToken":1,"fence":1}`:        driver.ErrInvalidEntry,
		`{"threadId":"t","fence":1}`:                       driver.ErrInvalidEntry,
		`{"threadId":"t","ownerToken":"x","fence":1.5}`:    driver.ErrInvalidEntry,
		`{"threadId":"t","ownerToken":"x","fence":"1"}`:    driver.ErrInvalidEntry,
		`{"threadId":"t","ownerToken":"x","fence":1e300}`:  driver.ErrInvalidEntry,
		`[1]`: driver.ErrInvalidEntry,
	} {
		var w driver.Writer
		if err := json.Unmarshal([]byte(in), &w); !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", in, err, want)
		}
	}
}

func TestLeaseJSON(t *testing.T) {
	exp := time.UnixMilli(1_700_000_000_123).Add(456 * time.Microsecond)
	l := driver.Lease{Writer: driver.Writer{ThreadID: "t", OwnerToken: "o", Fence: 2}, ExpiresAt: exp, RenewAfter: 45 * time.Second}
	b, err := l.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"threadId":"t","ownerToken":"o","fence":2,"expiresAt":1700000000123.456,"renewAfterMs":45000}`
	if string(b) != want {
		t.Errorf("Lease JSON = %s, want %s", b, want)
	}
	var w driver.Writer
	if err := json.Unmarshal(b, &w); err != nil || w != l.Writer {
		t.Errorf("a lease does not decode as its writer: %+v, %v", w, err)
	}
}

func TestMillis(t *testing.T) {
	for _, ns := range []int64{0, 1, -1, 999_999, 1e6, -1e6, 1_700_000_000_123_456_789, -1_700_000_000_000_000_001, math.MaxInt64 / 2} {
		s := string(driver.AppendMillis(nil, ns))
		back, err := driver.ParseMillis(s)
		// Six fraction digits are the nanoseconds of a millisecond, so
		// the round trip is exact.
		if err != nil || back != ns {
			t.Errorf("%d → %q → %d, %v", ns, s, back, err)
		}
	}
	for s, want := range map[string]int64{"1e3": 1e9, "1.5": 1_500_000, "-0.5": -500_000, "12.0000019": 12_000_001, "1700000000123": 1_700_000_000_123_000_000} {
		if got, err := driver.ParseMillis(s); err != nil || got != want {
			t.Errorf("ParseMillis(%q) = %d, %v, want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "x", "1.", ".5", "01", "NaN", "Infinity", "1e400", "+1", " 1", "1e300", "0x10"} {
		if _, err := driver.ParseMillis(s); err == nil {
			t.Errorf("ParseMillis(%q) accepted", s)
		}
	}
}

// TestReaderString: JSONReader.String decodes ids strictly, naming the
// field and its offset.
func TestReaderString(t *testing.T) {
	read := func(in string) (string, bool, error) {
		r := driver.NewJSONReader([]byte(in))
		defer r.Close()
		return r.String("/id", driver.ErrInvalidID)
	}
	if s, ok, err := read(`"a\u00e9\ud83d\ude00"`); err != nil || !ok || s != "aé😀" {
		t.Errorf("valid: %q %v %v", s, ok, err)
	}
	if _, ok, err := read(`null`); ok || err != nil {
		t.Errorf("null: %v %v", ok, err)
	}
	for _, in := range []string{`"\ud800"`, `"\udc00x"`, `1`, `["a"]`, "\"\xff\""} {
		_, _, err := read(in)
		if !errors.Is(err, driver.ErrInvalidID) {
			t.Errorf("%s: %v", in, err)
		} else if !strings.Contains(err.Error(), "/id") || !strings.Contains(err.Error(), "offset 0") {
			t.Errorf("%s: error %q does not name /id and offset 0", in, err)
		}
	}
}
