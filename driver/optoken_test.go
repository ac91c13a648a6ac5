package driver

import (
	"context"
	"strings"
	"testing"
)

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
		"a": true, "A-z_0": true, strings.Repeat("x", MaxOpTokenBytes): true,
		"": false, strings.Repeat("x", MaxOpTokenBytes+1): false, "a b": false, "é": false, "a/b": false, "a\x00": false,
	} {
		if got := ValidOpToken(tok); got != want {
			t.Errorf("ValidOpToken(%q) = %v, want %v", tok, got, want)
		}
	}
}
