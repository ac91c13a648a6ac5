package ckptstore_test

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// goComment is a trailing line comment: gofmt aligns them differently in
// the README (no tabs) and in the example, so they are not compared.
var goComment = regexp.MustCompile(`\s+// .*$`)

// TestReadmeExample checks that the README's "Use it" block is what
// Example_readme runs: every statement line of the block, in order, is a
// line of the example, whose error checks and printing are the only lines
// it adds. (`if err != nil { … }` is the README's shorthand for them.)
func TestReadmeExample(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "## Use it\n\n```go\n")
	block, _, ok2 := strings.Cut(block, "```\n")
	if !ok || !ok2 {
		t.Fatal("README.md has no ```go block under \"## Use it\"")
	}
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, body, ok := strings.Cut(string(src), "func Example_readme() {\n")
	body, _, ok2 = strings.Cut(body, "\n}\n")
	if !ok || !ok2 {
		t.Fatal("example_test.go has no Example_readme")
	}
	lines := func(s string) []string {
		var out []string
		for l := range strings.Lines(s) {
			l = strings.TrimSpace(goComment.ReplaceAllString(strings.TrimRight(l, "\n"), ""))
			if l != "" && l != "if err != nil { … }" {
				out = append(out, l)
			}
		}
		return out
	}
	want, got := lines(block), lines(body)
	if len(want) < 10 {
		t.Fatalf("the README block has %d statement lines; the test reads the wrong block", len(want))
	}
	i := 0
	for _, l := range got {
		if i < len(want) && l == want[i] {
			i++
		}
	}
	if i < len(want) {
		t.Fatalf("Example_readme lacks the README's line %q (or has it out of order); keep README.md's \"Use it\" block and Example_readme the same", want[i])
	}
}
