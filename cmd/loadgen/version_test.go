package main

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/ckptstore/ckptstore/internal/version"
)

// TestVersion: --version prints the build and runs no load, whatever
// else the command line holds.
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"-version"}, {"--store", "nope://", "--version"}} {
		var stdout, stderr strings.Builder
		if code := run(context.Background(), args, &stdout, &stderr, nil); code != 0 || stdout.String() != version.Line("loadgen")+"\n" || stderr.Len() > 0 {
			t.Errorf("loadgen %q: exit %d, stdout %q, stderr %q; want 0 and %q", args, code, stdout.String(), stderr.String(), version.Line("loadgen"))
		}
	}
	var usage strings.Builder
	if code := run(context.Background(), []string{"-h"}, io.Discard, &usage, nil); code != 0 || !strings.Contains(usage.String(), "-version") {
		t.Errorf("loadgen -h: exit %d, usage without -version:\n%s", code, usage.String())
	}
}
