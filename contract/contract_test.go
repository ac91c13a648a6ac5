package contract

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// Test sentinels, registered once for the whole test binary under codes no
// contract uses.
var (
	errTestA = NewError("test", "CONTRACT_TEST_A", "a went wrong")
	errTestB = NewError("other", "CONTRACT_TEST_B", "b went wrong")
)

func TestErrorCodeAndErrorFor(t *testing.T) {
	for _, c := range []struct {
		err  *Error
		code string
		text string
	}{
		{errTestA, "CONTRACT_TEST_A", "test: a went wrong"},
		{errTestB, "CONTRACT_TEST_B", "other: b went wrong"},
	} {
		if got := c.err.Error(); got != c.text {
			t.Errorf("Error() = %q, want %q", got, c.text)
		}
		if got := c.err.Code(); got != c.code {
			t.Errorf("Code() = %q, want %q", got, c.code)
		}
		twice := fmt.Errorf("engine: %w", fmt.Errorf("%w: thread %q", c.err, "t1"))
		if got := Code(twice); got != c.code {
			t.Errorf("Code(wrapped twice) = %q, want %q", got, c.code)
		}
		if got := ErrorFor(c.code); got != c.err {
			t.Errorf("ErrorFor(%s) = %v, want the sentinel", c.code, got)
		}
		if !errors.Is(twice, c.err) {
			t.Errorf("errors.Is(wrapped %s) = false", c.code)
		}
	}
	if errors.Is(errTestA, errTestB) || errors.Is(errTestB, errTestA) {
		t.Error("two sentinels match each other")
	}
	for _, err := range []error{nil, errors.New("CONTRACT_TEST_A"), context.Canceled, ErrCorrupt, ErrInvalidNamespace, Problem{Key: "k"}} {
		if got := Code(err); got != "" {
			t.Errorf("Code(%v) = %q, want \"\"", err, got)
		}
	}
	for _, code := range []string{"", "contract_test_a", "CONTRACT_TEST_A ", "NOPE"} {
		if got := ErrorFor(code); got != nil {
			t.Errorf("ErrorFor(%q) = %v, want nil", code, got)
		}
	}
}

// TestCodeInAndErrorIn: each contract's layer sees only its own errors,
// also when an error of another contract is wrapped with it.
func TestCodeInAndErrorIn(t *testing.T) {
	both := fmt.Errorf("outer: %w", errors.Join(fmt.Errorf("x: %w", errTestB), fmt.Errorf("y: %w", errTestA)))
	for _, c := range []struct {
		err          error
		prefix, want string
	}{
		{both, "test", "CONTRACT_TEST_A"},
		{both, "other", "CONTRACT_TEST_B"},
		{both, "nope", ""},
		{fmt.Errorf("%w", errTestB), "test", ""},
		{nil, "test", ""},
		{errors.New("plain"), "test", ""},
	} {
		if got := CodeIn(c.err, c.prefix); got != c.want {
			t.Errorf("CodeIn(%v, %s) = %q, want %q", c.err, c.prefix, got, c.want)
		}
	}
	if Code(both) != "CONTRACT_TEST_B" {
		t.Errorf("Code takes the first contract error, depth first: %q", Code(both))
	}
	if ErrorIn("CONTRACT_TEST_A", "test") != errTestA || ErrorIn("CONTRACT_TEST_A", "other") != nil || ErrorIn("NOPE", "test") != nil {
		t.Error("ErrorIn answers across contracts")
	}
	if errTestA.Prefix() != "test" {
		t.Errorf("Prefix() = %q", errTestA.Prefix())
	}
}

func TestNewErrorRefusesADuplicateCode(t *testing.T) {
	for _, code := range []string{"CONTRACT_TEST_A", ""} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewError(%q) did not panic", code)
				}
			}()
			NewError("dup", code, "again")
		}()
	}
	if ErrorFor("CONTRACT_TEST_A") != errTestA {
		t.Error("a refused registration replaced the sentinel")
	}
}

func TestCheckID(t *testing.T) {
	sentinel := errors.New("bad id")
	for _, c := range []struct {
		id   string
		ok   bool
		want string // in the message
	}{
		{"a", true, ""},
		{"é🙂 \x00{}*", true, ""},
		{strings.Repeat("x", MaxIDBytes), true, ""},
		{strings.Repeat("é", MaxIDBytes/2), true, ""},
		{"", false, "is empty"},
		{strings.Repeat("x", MaxIDBytes+1), false, "is longer than 1024 bytes"},
		{strings.Repeat("x", 40<<20), false, "(41943040 bytes)"},
		{"\xff", false, "is not valid UTF-8"},
		{"ok\xc3", false, "is not valid UTF-8"},
	} {
		err := CheckNamedID("thread id", c.id, sentinel)
		if (err == nil) != c.ok {
			t.Errorf("CheckNamedID(%s) = %v, want ok=%v", QuoteShort(c.id), err, c.ok)
			continue
		}
		if err == nil {
			continue
		}
		if !errors.Is(err, sentinel) {
			t.Errorf("CheckNamedID(%s) = %v, which does not wrap the sentinel", QuoteShort(c.id), err)
		}
		msg := err.Error()
		if !strings.Contains(msg, c.want) || !strings.Contains(msg, "thread id") {
			t.Errorf("CheckNamedID(%s) = %q, want it to name the field and say %q", QuoteShort(c.id), msg, c.want)
		}
		if len(msg) > 400 {
			t.Errorf("CheckNamedID of %d bytes: a %d-byte error", len(c.id), len(msg))
		}
		if got := CheckID(c.id, sentinel); got == nil || !strings.Contains(got.Error(), "id") {
			t.Errorf("CheckID(%s) = %v", QuoteShort(c.id), got)
		}
	}
}

func TestCheckNamespace(t *testing.T) {
	for _, name := range []string{"t", "tenant a", "{x}*?[", "\x00", strings.Repeat("n", MaxIDBytes)} {
		if err := CheckNamespace(name); err != nil {
			t.Errorf("CheckNamespace(%s) = %v", QuoteShort(name), err)
		}
	}
	for _, name := range []string{"", "\xff", strings.Repeat("n", MaxIDBytes+1), strings.Repeat("n", 1<<20)} {
		err := CheckNamespace(name)
		if !errors.Is(err, ErrInvalidNamespace) {
			t.Errorf("CheckNamespace(%s) = %v, want ErrInvalidNamespace", QuoteShort(name), err)
		} else if len(err.Error()) > 400 {
			t.Errorf("CheckNamespace of %d bytes: a %d-byte error", len(name), len(err.Error()))
		}
	}
}

func TestSafeInteger(t *testing.T) {
	for v, want := range map[int64]bool{
		0: true, MaxSafeInteger: true, -MaxSafeInteger: true, 1 << 52: true,
		MaxSafeInteger + 1: false, -MaxSafeInteger - 1: false, 1<<63 - 1: false, -1 << 63: false,
	} {
		if got := SafeInteger(v); got != want {
			t.Errorf("SafeInteger(%d) = %v, want %v", v, got, want)
		}
	}
}

func TestQuoteShortAndCutUTF8(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"ab", `"ab"`},
		{"", `""`},
		{strings.Repeat("z", 64), `"` + strings.Repeat("z", 64) + `"`},
		{strings.Repeat("z", 65), `"` + strings.Repeat("z", 64) + `"… (65 bytes)`},
		// é is 2 bytes: 63 bytes of z and the first byte of an é are cut back to 63.
		{strings.Repeat("z", 63) + "éé", `"` + strings.Repeat("z", 63) + `"… (67 bytes)`},
		{"a\x00\n", `"a\x00\n"`},
	} {
		if got := QuoteShort(c.in); got != c.want {
			t.Errorf("QuoteShort(%q) = %s, want %s", c.in, got, c.want)
		}
	}
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"abc", 5, "abc"}, {"abc", 2, "ab"}, {"aé", 2, "a"}, {"aé", 3, "aé"},
		{"🙂🙂", 7, "🙂"}, {"🙂", 3, ""}, {"abc", 0, ""}, {"\xff\xff\xff", 2, "\xff\xff"},
	} {
		if got := CutUTF8(c.in, c.n); got != c.want {
			t.Errorf("CutUTF8(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}

func TestShowID(t *testing.T) {
	for in, want := range map[string]string{
		"i-1": "i-1", "é 🙂": "é 🙂", "a\nb": `"a\nb"`, "\x00": `"\x00"`, "\xff": `"\xff"`,
	} {
		if got := ShowID(in); got != want {
			t.Errorf("ShowID(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestOpToken(t *testing.T) {
	if _, ok := OpToken(context.Background()); ok {
		t.Error("a bare context carries no token")
	}
	if _, ok := OpToken(WithOpToken(context.Background(), "")); ok {
		t.Error("an empty token is no token")
	}
	if got, ok := OpToken(WithOpToken(context.Background(), "abc_D-9")); !ok || got != "abc_D-9" {
		t.Errorf("OpToken = %q, %v", got, ok)
	}
	for tok, want := range map[string]bool{
		"a": true, "A-z_0": true, strings.Repeat("x", MaxIDBytes): true,
		"": false, strings.Repeat("x", MaxIDBytes+1): false, "a b": false, "é": false, "a/b": false, "a\x00": false,
	} {
		if got := ValidOpToken(tok); got != want {
			t.Errorf("ValidOpToken(%s) = %v, want %v", QuoteShort(tok), got, want)
		}
	}
}

func TestCheckOpToken(t *testing.T) {
	sentinel := errors.New("bad entry")
	if tok, err := CheckOpToken(context.Background(), sentinel); tok != "" || err != nil {
		t.Errorf("no token: %q, %v", tok, err)
	}
	if tok, err := CheckOpToken(WithOpToken(context.Background(), "t_1"), sentinel); tok != "t_1" || err != nil {
		t.Errorf("a valid token: %q, %v", tok, err)
	}
	for _, bad := range []string{"a b", strings.Repeat("x", MaxIDBytes+1)} {
		tok, err := CheckOpToken(WithOpToken(context.Background(), bad), sentinel)
		if tok != "" || !errors.Is(err, sentinel) || strings.Contains(err.Error(), bad) {
			t.Errorf("token %s: %q, %v", QuoteShort(bad), tok, err)
		}
	}
}

// TestOpTokenContext: an OpTokenContext carries its token as WithOpToken
// does, passes other values through and is cancelled with its parent
// (without a goroutine: context finds the parent's cancelCtx through it).
func TestOpTokenContext(t *testing.T) {
	type k struct{}
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), k{}, "v"))
	c := &OpTokenContext{Context: parent, Token: "tok_1"}
	if got, ok := OpToken(c); !ok || got != "tok_1" {
		t.Errorf("OpToken = %q %v, want tok_1", got, ok)
	}
	if c.Value(k{}) != "v" {
		t.Errorf("the parent's value is %v", c.Value(k{}))
	}
	child, stop := context.WithCancel(c)
	defer stop()
	cancel()
	<-child.Done()
	if c.Err() == nil || child.Err() == nil {
		t.Errorf("cancel did not reach: %v %v", c.Err(), child.Err())
	}
}

func TestProblem(t *testing.T) {
	p := Problem{Key: "k\x00", What: "dangling"}
	if got, want := p.Error(), `"k\x00": dangling`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	joined := errors.Join(p, Problem{Key: "b", What: "x"})
	if !errors.Is(joined, ErrCorrupt) {
		t.Error("joined problems are not ErrCorrupt")
	}
}

// maxQuoted bounds QuoteShort's result: 64 bytes each quoted as at most
// \U0001F642-style escapes' worst case per byte (\xNN, 4 bytes), the two
// quotes, and the suffix "… (N bytes)".
const maxQuoted = 4*quoteShortBytes + 2 + len("… ( bytes)") + 20

// FuzzQuoteShort: whatever s, the quote is bounded, is a prefix's quote,
// and names the length when it cuts.
func FuzzQuoteShort(f *testing.F) {
	for _, s := range []string{"", "a", strings.Repeat("é", 40), strings.Repeat("\xff", 100), "\x00\n🙂"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q := QuoteShort(s)
		if len(q) > maxQuoted {
			t.Fatalf("QuoteShort of %d bytes is %d bytes", len(s), len(q))
		}
		if len(s) <= quoteShortBytes {
			if q != fmt.Sprintf("%q", s) {
				t.Fatalf("QuoteShort(%q) = %s, want %%q", s, q)
			}
			return
		}
		if !strings.HasSuffix(q, fmt.Sprintf("… (%d bytes)", len(s))) {
			t.Fatalf("QuoteShort of %d bytes = %s: no length", len(s), q)
		}
		cut := CutUTF8(s, quoteShortBytes)
		if !strings.HasPrefix(s, cut) || len(cut) > quoteShortBytes || len(cut) < quoteShortBytes-utf8.UTFMax {
			t.Fatalf("CutUTF8 gave %d bytes", len(cut))
		}
		if utf8.ValidString(s) && !utf8.ValidString(cut) {
			t.Fatalf("CutUTF8 cut inside a UTF-8 sequence: %q", cut)
		}
	})
}

// FuzzCheckID: the rule holds exactly, and an error is bounded whatever
// the id (the id is grown past the limit so that both sides are reached).
func FuzzCheckID(f *testing.F) {
	for _, s := range []string{"", "a", "\xff", strings.Repeat("x", 300)} {
		f.Add(s, uint8(0))
		f.Add(s, uint8(4))
	}
	sentinel := errors.New("bad id")
	f.Fuzz(func(t *testing.T, s string, grow uint8) {
		n := 1 + int(grow) // up to 256 copies: past MaxIDBytes for most s
		if len(s) > 0 {
			n = min(n, 1+(64<<10)/len(s)) // and at most about 64 KiB, so each run is quick
		}
		id := strings.Repeat(s, n)
		err := CheckID(id, sentinel)
		want := id != "" && len(id) <= MaxIDBytes && utf8.ValidString(id)
		if (err == nil) != want {
			t.Fatalf("CheckID of %d bytes (valid UTF-8 %v) = %v", len(id), utf8.ValidString(id), err)
		}
		if err != nil && (!errors.Is(err, sentinel) || len(err.Error()) > maxQuoted+80) {
			t.Fatalf("CheckID of %d bytes: %d-byte error %v", len(id), len(err.Error()), err)
		}
	})
}

// TestCheckIDAllocatesNothingWhenValid: the id check runs on every call of
// every contract, so a valid id costs no allocation (CheckNamedID's doc).
func TestCheckIDAllocatesNothingWhenValid(t *testing.T) {
	sentinel := errors.New("bad id")
	id := strings.Repeat("é", MaxIDBytes/2)
	if n := testing.AllocsPerRun(100, func() {
		if CheckNamedID("thread id", id, sentinel) != nil || CheckNamespace(id) != nil || !ValidOpToken("tok_1") {
			t.Fatal("a valid input was refused")
		}
	}); n != 0 {
		t.Errorf("%v allocations per valid check", n)
	}
}

func BenchmarkCheckNamedID(b *testing.B) {
	sentinel := errors.New("bad id")
	for _, n := range []int{16, MaxIDBytes} {
		id := strings.Repeat("x", n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.SetBytes(int64(n))
			for b.Loop() {
				if CheckNamedID("thread id", id, sentinel) != nil {
					b.Fatal("refused")
				}
			}
		})
	}
}
