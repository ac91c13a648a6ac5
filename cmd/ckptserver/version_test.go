package main

import (
	"context"
	"io"
	"strings"
	"testing"

	"github.com/ckptstore/ckptstore/internal/version"
)

// TestVersion: --version answers without the flags a run requires, and
// /metrics carries the same build as ckptstore_build_info.
func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"--version"}, {"-version"}, {"--store", "postgres://x", "--version"}} {
		var stdout, stderr strings.Builder
		if code := run(context.Background(), args, &stdout, &stderr); code != 0 || stdout.String() != version.Line("ckptserver")+"\n" || stderr.Len() > 0 {
			t.Errorf("ckptserver %q: exit %d, stdout %q, stderr %q; want 0 and %q", args, code, stdout.String(), stderr.String(), version.Line("ckptserver"))
		}
	}
	var usage strings.Builder
	if code := run(context.Background(), []string{"-h"}, io.Discard, &usage); code != 0 || !strings.Contains(usage.String(), "-version") {
		t.Errorf("ckptserver -h: exit %d, usage without -version:\n%s", code, usage.String())
	}

	s := start(t, "--dev", "--listen", "127.0.0.1:0", "--store", "mem")
	in := version.Get()
	want := `ckptstore_build_info{goversion="` + in.GoVersion + `",revision="` + in.Revision + `",version="` + in.Version + `"} 1`
	if code, body := get(t, s.url+"/metrics"); code != 200 || !strings.Contains(body, want) {
		t.Errorf("/metrics: %d, lacks %s", code, want)
	}
}
