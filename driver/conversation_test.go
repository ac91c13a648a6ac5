package driver

// The conversation check is a fast validator standing in for the predicate
// the contract was first written with:
//
//	len(b) == 0 || json.Valid(b) && utf8.Valid(b) && first non-space byte is '['
//
// and the contract's nesting bound (contract.MaxJSONDepth). These tests
// hold the two equal: a table of the cases where JSON validators are known
// to differ, an exhaustive sweep of short inputs, a differential fuzz
// target, and the nesting limits (deeper is invalid, not a crash).

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ckptstore/ckptstore/contract"
)

// refConversationValid is the reference predicate, built only from the
// standard library.
func refConversationValid(b []byte) bool {
	if len(b) == 0 {
		return true
	}
	t := bytes.TrimLeft(b, " \t\r\n")
	return len(t) > 0 && t[0] == '[' && utf8.Valid(b) && json.Valid(b) && refDepth(b) <= maxJSONDepth
}

// refDepth is the deepest nesting of arrays and objects in b, a valid
// JSON text, as encoding/json's tokens show it.
func refDepth(b []byte) int {
	dec := json.NewDecoder(bytes.NewReader(b))
	depth, deepest := 0, 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return deepest
		}
		switch tok {
		case json.Delim('['), json.Delim('{'):
			depth++
			deepest = max(deepest, depth)
		case json.Delim(']'), json.Delim('}'):
			depth--
		}
	}
}

// conversationValid reports whether validateConversation accepts b, and
// fails t when it rejects b with an error other than ErrInvalidEntry.
func conversationValid(t testing.TB, b []byte) bool {
	t.Helper()
	err := validateConversation(b)
	if err != nil && !errors.Is(err, ErrInvalidEntry) {
		t.Fatalf("validateConversation(%q) = %v, want nil or ErrInvalidEntry", b, err)
	}
	return err == nil
}

// conversationCases are inputs on which JSON validators have been seen to
// disagree, with what json.Valid && utf8.Valid && '[' says of each.
var conversationCases = []struct {
	in   string
	want bool
}{
	// framing
	{"", true}, {"[]", true}, {" \t\r\n[ ]\r\n\t ", true}, {"[", false}, {"]", false},
	{"  ", false}, {"{}", false}, {"null", false}, {`"[]"`, false}, {"1", false},
	{"[] ", true}, {"[][]", false}, {"[] []", false}, {"[]x", false}, {"[],", false},
	{"[1,]", false}, {"[,1]", false}, {"[1 2]", false}, {"[,]", false},
	{`[{"a":1,}]`, false}, {`[{"a" 1}]`, false}, {`[{1:1}]`, false}, {`[{'a':1}]`, false},
	{`[{"a":1,"a":2}]`, true}, // duplicate names are valid JSON
	{"[1]\x00", false}, {"\x00[]", false}, {"[\x00]", false},
	// whitespace: only the four JSON ones
	{"[\f]", false}, {"[\v]", false}, {"[\u00a0]", false}, {"\u2028[]", false}, {"[\u0085]", false},
	{"\uFEFF[]", false}, // a BOM is not whitespace
	// literals
	{"[true,false,null]", true}, {"[tru]", false}, {"[nul]", false}, {"[True]", false},
	{"[truex]", false}, {"[NaN]", false}, {"[Infinity]", false}, {"[-Infinity]", false},
	{"[undefined]", false},
	// numbers
	{"[0]", true}, {"[-0]", true}, {"[-0.0e-0]", true}, {"[1E+2]", true}, {"[1e-2]", true},
	{"[123.456e789]", true}, {"[1e400]", true}, {"[" + strings.Repeat("9", 400) + "]", true},
	{"[-]", false}, {"[01]", false}, {"[-01]", false}, {"[00]", false}, {"[1.]", false},
	{"[.1]", false}, {"[1e]", false}, {"[1e+]", false}, {"[1.e1]", false}, {"[+1]", false},
	{"[0x10]", false}, {"[1_000]", false}, {"[--1]", false}, {"[1.5.5]", false}, {"[1e5e5]", false},
	{"[0.0]", true}, {"[0e0]", true}, {"[- 1]", false},
	// strings and escapes
	{`[""]`, true}, {`["\"\\\/\b\f\n\r\t"]`, true}, {`["\u0000"]`, true}, {`["\uFFFF"]`, true},
	{`["\uD83D\uDE00"]`, true}, {`["\ud800"]`, true}, {`["\udc00\ud800"]`, true}, // escaped lone surrogates are valid
	{`["\u00zz"]`, false}, {`["\u00e"]`, false}, {`["\u+123"]`, false}, {`["\u 123"]`, false},
	{`["\U0041"]`, false}, {`["\x41"]`, false}, {`["\a"]`, false}, {`["\'"]`, false}, {`["\0"]`, false},
	{`["\`, false}, {`["\"]`, false}, {`["\\"]`, true}, {`["\\\"]`, false}, {`["abc]`, false},
	{"[\"\t\"]", false}, {"[\"\n\"]", false}, {"[\"\x00\"]", false}, {"[\"\x1f\"]", false},
	{"[\"\x7f\"]", true}, // DEL is not a control character for JSON
	{"[{\"\x01\":1}]", false}, {"[{\"\\u0001\":1}]", true},
	// UTF-8
	{"[\"é日本😀\"]", true}, {"[\"\xff\"]", false}, {"[\"\xc3\"]", false}, {"[\"\xc3\x28\"]", false},
	{"[\"\xed\xa0\x80\"]", false}, // a surrogate encoded as UTF-8
	{"[\"\xc0\xaf\"]", false},     // overlong
	{"[\"\xf4\x90\x80\x80\"]", false}, {"[\"\xf4\x8f\xbf\xbf\"]", true},
	{"[]\xff", false}, {"[] \xc3", false},
	// nesting
	{"[[[]]]", true}, {"[[]", false}, {"[]]", false}, {`[{"a":[{"b":{}}]}]`, true}, {"[{]}", false},
	// at the contract's bound (contract.MaxJSONDepth) and at the wire
	// reader's (maxNesting, which jsonValid is held to json.Valid at)
	{"[" + strings.Repeat("[", maxJSONDepth-1) + strings.Repeat("]", maxJSONDepth-1) + "]", true},
	{"[" + strings.Repeat("[", maxJSONDepth) + strings.Repeat("]", maxJSONDepth) + "]", false},
	{"[" + strings.Repeat(`{"a":`, maxJSONDepth-1) + "1" + strings.Repeat("}", maxJSONDepth-1) + "]", true},
	{"[" + strings.Repeat(`{"a":`, maxJSONDepth) + "1" + strings.Repeat("}", maxJSONDepth) + "]", false},
	{"[" + strings.Repeat("[", maxNesting-1) + strings.Repeat("]", maxNesting-1) + "]", false},
	{"[" + strings.Repeat("[", maxNesting) + strings.Repeat("]", maxNesting) + "]", false},
	{"[" + strings.Repeat(`{"a":`, maxNesting-1) + "1" + strings.Repeat("}", maxNesting-1) + "]", false},
	{"[" + strings.Repeat(`{"a":`, maxNesting) + "1" + strings.Repeat("}", maxNesting) + "]", false},
	{"[" + strings.Repeat(`[{"a":`, maxNesting/2) + strings.Repeat("}]", maxNesting/2) + "]", false},
	{"[" + strings.Repeat(`"]]",[`, maxNesting) + strings.Repeat("]", maxNesting) + "]", false},
	{"[" + strings.Repeat(`"[[",`, 3*maxNesting) + "1]", true}, // brackets inside strings do not nest
}

// maxNesting is the depth of arrays and objects encoding/json accepts,
// and the wire reader; maxJSONDepth the contract's, which a conversation
// is held to.
const (
	maxNesting   = 10000
	maxJSONDepth = contract.MaxJSONDepth
)

func TestConversationCases(t *testing.T) {
	for _, c := range conversationCases {
		name := c.in
		if len(name) > 40 {
			name = fmt.Sprintf("%.40q…(%d bytes)", c.in, len(c.in))
		}
		if ref := refConversationValid([]byte(c.in)); ref != c.want {
			t.Errorf("reference(%s) = %v, the table says %v", name, ref, c.want)
		}
		if got := conversationValid(t, []byte(c.in)); got != c.want {
			t.Errorf("validateConversation(%s) accepts = %v, want %v", name, got, c.want)
		}
		// jsonValid is also what MarshalJSON checks with: it must be json.Valid.
		if got, want := jsonValid([]byte(c.in)), json.Valid([]byte(c.in)); got != want {
			t.Errorf("jsonValid(%s) = %v, json.Valid says %v", name, got, want)
		}
	}
}

// TestConversationShortInputs compares the check with the reference on
// every input of "[" followed by up to four bytes of an alphabet that
// covers the JSON grammar's decision points, plus bytes it must refuse.
func TestConversationShortInputs(t *testing.T) {
	alphabet := []byte("[]{}\":,\\u0-1.eE tx\x00\x1f\x80\xff")
	n := 4
	if testing.Short() {
		n = 3
	}
	buf := []byte{'['}
	var walk func(depth int)
	walk = func(depth int) {
		if got, want := conversationValid(t, buf), refConversationValid(buf); got != want {
			t.Fatalf("validateConversation(%q) accepts = %v, reference says %v", buf, got, want)
		}
		if depth == n {
			return
		}
		for _, c := range alphabet {
			buf = append(buf, c)
			walk(depth + 1)
			buf = buf[:len(buf)-1]
		}
	}
	walk(0)
}

// A conversation nested far beyond the limit is rejected, not a crash:
// the validator's recursion stops at level contract.MaxJSONDepth+1, so the stack it takes is
// bounded whatever the input. BenchmarkValidateConversation/deep-1M and
// deep-10M measure the time: the same for both but for utf8.Valid, as the
// scan stops at the limit.
func TestConversationDeepNesting(t *testing.T) {
	const n = 1_000_000
	for _, in := range [][]byte{
		bytes.Repeat([]byte("["), n),
		append(bytes.Repeat([]byte("["), n), bytes.Repeat([]byte("]"), n)...),
		[]byte("[" + strings.Repeat(`{"a":[`, n/2) + strings.Repeat("]}", n/2) + "]"),
	} {
		if conversationValid(t, in) {
			t.Errorf("validateConversation accepts %d bytes nested %d deep", len(in), n)
		}
	}
}

// FuzzConversation is the differential test: any input the reference and
// the check disagree on is a bug. Run it with
//
//	go test -run '^$' -fuzz FuzzConversation -fuzztime 3m .
func FuzzConversation(f *testing.F) {
	for _, c := range conversationCases {
		if len(c.in) < 256 {
			f.Add([]byte(c.in))
		}
	}
	f.Add(chatConversation(2 << 10))
	f.Add(textConversation(300))
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := conversationValid(t, b), refConversationValid(b); got != want {
			t.Fatalf("validateConversation(%q) accepts = %v, reference says %v", b, got, want)
		}
		if got, want := jsonValid(b), json.Valid(b); got != want {
			t.Fatalf("jsonValid(%q) = %v, json.Valid says %v", b, got, want)
		}
	})
}

// textConversation is a conversation of about n bytes shaped like the load
// generator's: one message whose content is a long plain string.
func textConversation(n int) []byte {
	const head, tail = `[{"role":"user","content":"`, `"}]`
	words := "the agent read the file ran the tests and wrote a patch "
	pad := max(0, n-len(head)-len(tail))
	return []byte(head + strings.Repeat(words, pad/len(words)+1)[:pad] + tail)
}

// chatConversation is a conversation of about n bytes shaped like a real
// agent's: user, assistant and tool messages, escapes, non-ASCII text,
// nested tool calls and numbers.
func chatConversation(n int) []byte {
	var b strings.Builder
	b.WriteString("[\n")
	for i := 0; b.Len() < n; i++ {
		if i > 0 {
			b.WriteString(",\n")
		}
		switch i % 3 {
		case 0:
			fmt.Fprintf(&b, `  {"role":"user","content":[{"type":"text","text":"Please fix the bug in main.go line %d.\nIt says \"index out of range\" — café 日本語 \u00e9\ud83d\ude00\tthanks"}]}`, i)
		case 1:
			fmt.Fprintf(&b, `  {"role":"assistant","content":"Let me read the file.","toolCalls":[{"id":"call_%d","type":"function","function":{"name":"read_file","arguments":"{\"path\":\"src/main.go\",\"offset\":%d,\"limit\":200}"}}],"usage":{"input":12345,"output":-0.5e-3,"ratio":1.25E+2,"cached":true,"stop":null}}`, i, i*10)
		default:
			fmt.Fprintf(&b, `  {"role":"tool","toolCallId":"call_%d","content":"package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfor i := 0; i < 10; i++ {\n\t\tfmt.Println(i)\n\t}\n}\n// a longer line of code, the kind a file read returns, to pad the message out\n"}`, i-1)
		}
	}
	b.WriteString("\n]")
	return []byte(b.String())
}

var benchSizes = []struct {
	name string
	n    int
}{{"2KB", 2 << 10}, {"50KB", 50 << 10}, {"1MB", 1 << 20}}

func BenchmarkValidateConversation(b *testing.B) {
	for _, shape := range []struct {
		name string
		gen  func(int) []byte
	}{{"chat", chatConversation}, {"text", textConversation}} {
		for _, size := range benchSizes {
			conv := shape.gen(size.n)
			b.Run(shape.name+"-"+size.name, func(b *testing.B) {
				b.SetBytes(int64(len(conv)))
				for b.Loop() {
					if err := validateConversation(conv); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
	for _, n := range []struct {
		name string
		n    int
	}{{"1M", 1_000_000}, {"10M", 10_000_000}} {
		deep := bytes.Repeat([]byte("["), n.n)
		b.Run("deep-"+n.name, func(b *testing.B) {
			b.SetBytes(int64(len(deep)))
			for b.Loop() {
				if validateConversation(deep) == nil {
					b.Fatal("accepted")
				}
			}
		})
	}
}

// BenchmarkValidateAppend is the whole of Append's stateless checks on a
// checkpoint of 20 files and a chat conversation of each size.
func BenchmarkValidateAppend(b *testing.B) {
	for _, size := range benchSizes {
		cp := &Checkpoint{ID: "cp-2", ThreadID: "thread-1", ParentCheckpointID: "cp-1",
			CreatedAt: 1.7e12, Reason: ReasonAutomatic, Conversation: chatConversation(size.n)}
		for i := range 20 {
			cp.Files = append(cp.Files, Entry{Path: fmt.Sprintf("src/file%d.go", i), Kind: KindFile,
				BlobKey: fmt.Sprintf("sandbox-files/sha256/%064x", i), Size: 100})
		}
		w := Writer{ThreadID: "thread-1", OwnerToken: "tok", Fence: 1}
		b.Run(size.name, func(b *testing.B) {
			b.SetBytes(int64(len(cp.Conversation)))
			for b.Loop() {
				if err := ValidateAppend(cp, "cp-1", w); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestJSONReaderTranscript holds the one-pass transcript check to
// ValidateTranscript: a transcript in a request body is accepted exactly
// when ValidateTranscript accepts its bytes, and is then those bytes, with
// their whitespace, as a view of the body (no copy).
func TestJSONReaderTranscript(t *testing.T) {
	ins := []string{"[\"\xff\"]", "[\"é\"]", " [1, {\"a\":2}] ", "[\"\xed\xa0\x80\"]", "\t[]\n"}
	for _, c := range conversationCases {
		ins = append(ins, c.in)
	}
	for _, in := range ins {
		name := in
		if len(name) > 40 {
			name = fmt.Sprintf("%.40q…(%d bytes)", in, len(in))
		}
		body := []byte(`{"messages":` + in + `}`)
		var got Transcript
		var ok bool
		var fieldErr error
		r := NewJSONReader(body)
		err := r.Object("", func(n []byte) error {
			got, ok, fieldErr = r.Transcript()
			if r.Err() != nil {
				return r.Err()
			}
			return nil
		})
		if err == nil {
			err = r.End()
		}
		r.Close()
		accepted := err == nil && ok && fieldErr == nil
		want := ValidateTranscript([]byte(in)) == nil
		if want && !accepted && err != nil && strings.Contains(err.Error(), "nesting deeper") {
			continue // the body's object is one level more: a transcript at the nesting limit cannot be sent
		}
		if accepted != want {
			t.Errorf("%s: accepted %v (object %v, present %v, field %v), ValidateTranscript says %v", name, accepted, err, ok, fieldErr, want)
			continue
		}
		if fieldErr != nil && !errors.Is(fieldErr, ErrInvalidEntry) {
			t.Errorf("%s: %v, want ErrInvalidEntry", name, fieldErr)
		}
		if !accepted {
			continue
		}
		if string(got.Bytes()) != in {
			t.Errorf("%s: got %q, want the bytes as they came", name, got.Bytes())
		}
		if &got.Bytes()[0] != &body[len(`{"messages":`)] {
			t.Errorf("%s: the transcript is a copy, not a view of the body", name)
		}
	}
}

// TestValidateAppendDecoded holds ValidateAppendDecoded, which skips the
// conversation's scan, to ValidateAppend: for every conversation of the
// table in a checkpoint read by a JSONReader, the checkpoint decodes and
// passes ValidateAppendDecoded exactly when ValidateAppend accepts the
// conversation's bytes, and the two agree on every decoded checkpoint.
func TestValidateAppendDecoded(t *testing.T) {
	w := Writer{ThreadID: "t", OwnerToken: "o", Fence: 1}
	ins := []string{"[\"\xff\"]", "[\"é\"]", " [1, {\"a\":2}] ", "[\"\xed\xa0\x80\"]"}
	for _, c := range conversationCases {
		if c.in != "" { // an empty value is not JSON; absent is tested by the checkpoint codec
			ins = append(ins, c.in)
		}
	}
	for _, in := range ins {
		name := in
		if len(name) > 40 {
			name = fmt.Sprintf("%.40q…(%d bytes)", in, len(in))
		}
		body := []byte(`{"id":"c","threadId":"t","createdAt":1,"reason":"automatic","conversation":` + in + `}`)
		r := NewJSONReader(body)
		d, err := r.Decoded("")
		if err == nil {
			err = r.End()
		}
		r.Close()
		conv := []byte(in)
		if in == "null" {
			conv = nil // the codec reads null as no conversation
		}
		ref := ValidateAppend(&Checkpoint{ID: "c", ThreadID: "t", CreatedAt: 1, Reason: ReasonAutomatic, Conversation: conv}, "", w)
		accepted := err == nil && ValidateAppendDecoded(d, "", w) == nil
		if want := ref == nil; accepted != want {
			if want && err != nil && strings.Contains(err.Error(), "nesting deeper") {
				continue // the checkpoint's object is one level more
			}
			t.Errorf("%s: decoded and validated %v (%v), ValidateAppend says %v", name, accepted, err, ref)
		}
		if err == nil {
			if a, b := ValidateAppend(d.Checkpoint(), "", w), ValidateAppendDecoded(d, "", w); (a == nil) != (b == nil) {
				t.Errorf("%s: ValidateAppend %v, ValidateAppendDecoded %v", name, a, b)
			}
		}
	}
	// The other checks still run, in order.
	r := NewJSONReader([]byte(`{"id":"c","threadId":"t","createdAt":1,"reason":"other","conversation":[]}`))
	d, err := r.Decoded("")
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := ValidateAppendDecoded(d, "", w); !errors.Is(err, ErrInvalidEntry) {
		t.Errorf("a bad reason: %v, want ErrInvalidEntry", err)
	}
	if err := ValidateAppendDecoded(d, "", Writer{}); !errors.Is(err, ErrInvalidID) {
		t.Errorf("a writer of no thread before the reason: %v, want ErrInvalidID", err)
	}
	if err := ValidateAppendDecoded(Decoded{}, "", w); !errors.Is(err, ErrInvalidEntry) {
		t.Errorf("no checkpoint: %v, want ErrInvalidEntry", err)
	}
}

// TestCheckJSON: the contract's JSON-validity rule accepts what json.Valid
// accepts nested at most contract.MaxJSONDepth levels, and says why not.
func TestCheckJSON(t *testing.T) {
	for _, c := range conversationCases {
		b := []byte(c.in)
		want := json.Valid(b) && refDepth(b) <= maxJSONDepth
		if err := CheckJSON(b); (err == nil) != want {
			t.Errorf("CheckJSON(%.40q) = %v, want valid %v", c.in, err, want)
		}
	}
	for _, in := range []string{
		strings.Repeat("[", maxJSONDepth+1) + strings.Repeat("]", maxJSONDepth+1),
		strings.Repeat(`{"a":`, maxJSONDepth+1) + "1" + strings.Repeat("}", maxJSONDepth+1),
	} {
		err := CheckJSON([]byte(in))
		if err == nil || !strings.Contains(err.Error(), "nesting deeper than 1000 levels") {
			t.Errorf("CheckJSON(%.20q…) = %v, want the depth bound's error", in, err)
		}
	}
	if err := CheckJSON([]byte(`{} x`)); err == nil || !strings.Contains(err.Error(), "after the top-level value") {
		t.Errorf("CheckJSON of trailing garbage = %v", err)
	}
	if err := CheckJSON([]byte(" 1 ")); err != nil {
		t.Errorf("CheckJSON of a spaced number = %v", err)
	}
}
