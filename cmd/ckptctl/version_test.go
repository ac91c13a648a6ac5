package main

import (
	"context"
	"strings"
	"testing"

	"github.com/ckptstore/ckptstore/internal/version"
)

func TestVersion(t *testing.T) {
	for _, flag := range []string{"--version", "-version"} {
		var stdout, stderr strings.Builder
		e := defaultEnv(strings.NewReader(""), &stdout, &stderr)
		if code := run(context.Background(), []string{flag}, e); code != 0 || stdout.String() != version.Line("ckptctl")+"\n" || stderr.Len() > 0 {
			t.Errorf("ckptctl %s: exit %d, stdout %q, stderr %q; want 0 and %q", flag, code, stdout.String(), stderr.String(), version.Line("ckptctl"))
		}
	}
	var stderr strings.Builder
	if run(context.Background(), []string{"-h"}, defaultEnv(strings.NewReader(""), &stderr, &stderr)); !strings.Contains(stderr.String(), "ckptctl --version") {
		t.Errorf("ckptctl -h does not mention --version:\n%s", stderr.String())
	}
}
