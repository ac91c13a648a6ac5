package driver_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ckptstore/ckptstore/driver"
)

// readsWhole reports whether a JSONReader reads b as one JSON value and
// nothing after it.
func readsWhole(b []byte) bool {
	r := driver.NewJSONReader(b)
	defer r.Close()
	err := r.Skip()
	if err == nil {
		err = r.End()
	}
	return err == nil
}

// scanCases are edges of the JSON grammar, each accepted or refused by
// encoding/json.Valid, the reference the reader's scanner is held to.
var scanCases = []string{
	``, ` `, `null`, `nul`, `nullx`, `true`, `false`, `tru`, `1`, `-`, `-0`, `-01`, `01`, `0.`, `0.5`, `.5`, `1e`, `1e+`,
	`1E-7`, `1e+07`, `1.5e3x`, `[1,]`, `[,1]`, `[1 2]`, `[]`, `[ ]`, ` [ 1 , 2 ] `, `{}`, `{ }`, `{"a"}`, `{"a":}`,
	`{"a":1,}`, `{"a":1 "b":2}`, `{"a" : 1 , "a" : 2}`, `{1:2}`, `{"a":1}}`, `[1]]`, `"a"`, `"a`, `"\"`, `"\\"`,
	`"\/\b\f\n\r\t"`, `"\u00e9"`, `"\u00G9"`, `"\u00e"`, `"\x"`, "\"\x01\"", "\"\x7f\"", "\"\xff\"", `"\ud800"`,
	"\xef\xbb\xbf1", "1\x00", "\t\n\r 1 \t\n\r", "\v1", `{"a":[{"b":{"c":[null,true,false,"x",-1.5e-3]}}]}`,
	`[1] [2]`, `{"a":1}{"b":2}`, `"a" "b"`, `[`, `{`, `{"a":`, `{"a":1`, `[1,`, `{"a":{"b":[1,{"c":}]}}`,
	strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000),
	strings.Repeat(`{"a":`, 10001) + "1" + strings.Repeat("}", 10001),
}

// TestScannerAcceptsWhatValidAccepts: the reader accepts a text exactly
// when encoding/json.Valid does.
func TestScannerAcceptsWhatValidAccepts(t *testing.T) {
	for _, in := range scanCases {
		if got, want := readsWhole([]byte(in)), json.Valid([]byte(in)); got != want {
			t.Errorf("%.60q: the reader accepts it %v, json.Valid %v", in, got, want)
		}
	}
}

// FuzzScanner is TestScannerAcceptsWhatValidAccepts over any input.
func FuzzScanner(f *testing.F) {
	for _, in := range scanCases {
		if len(in) < 1000 {
			f.Add([]byte(in))
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if got, want := readsWhole(in), json.Valid(in); got != want {
			t.Fatalf("%q: the reader accepts it %v, json.Valid %v", in, got, want)
		}
	})
}
