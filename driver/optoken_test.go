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
