package main

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/fdbstore/kv/memkv"
	"github.com/ckptstore/ckptstore/internal/redistest"
)

// tickingClock is a clock that moves on by step at every reading, so that
// every progress check of a command finds its interval passed. The copy's
// workers read it at the same time.
func tickingClock(step time.Duration) func() time.Time {
	var mu sync.Mutex
	t := time.Unix(1_700_000_000, 0)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(step)
		return t
	}
}

// progressLines returns the progress lines of stderr (those that start
// with verb+": " and give a rate, but not export's summary, which names
// the persistence records) and fails t unless each matches re.
func progressLines(t *testing.T, stderr, verb string, re *regexp.Regexp) []string {
	t.Helper()
	var got []string
	for l := range strings.Lines(stderr) {
		l = strings.TrimSuffix(l, "\n")
		if !strings.HasPrefix(l, verb+": ") || !strings.Contains(l, "/s") || strings.Contains(l, "persistence records") {
			continue
		}
		if !re.MatchString(l) {
			t.Errorf("a %s progress line of another shape: %q", verb, l)
		}
		got = append(got, l)
	}
	return got
}

var verifyLine = regexp.MustCompile(`^verify: (\d+)/(\d+) threads, (\d+)/(\d+) checkpoints \((\d+)%\), \d+ checkpoints/s, ETA (\d+h)?(\d+m)?\d+s; at thread "[^"]+"$`)

// TestVerifyProgress: copy --verify prints verify progress lines, each
// with the copy's totals, a percentage and an ETA, counting up to those
// totals.
func TestVerifyProgress(t *testing.T) {
	h := newHarness(t)
	src := newMem()
	threads, cps := seed(t, src, 200)
	h.now = tickingClock(time.Second)
	r := h.ok("copy", "--from", h.add("src", src), "--to", h.add("dst", newMem()), "--verify", "--progress", "1s")
	lines := progressLines(t, r.stderr, "verify", verifyLine)
	if len(lines) < cps/2 {
		t.Fatalf("%d verify progress lines for %d checkpoints, a clock that moves 1s a reading and --progress 1s:\n%s", len(lines), cps, r.stderr)
	}
	last := verifyLine.FindStringSubmatch(lines[len(lines)-1])
	if want := fmt.Sprint(len(threads)); last[2] != want {
		t.Errorf("the thread total is %s, want %s: %q", last[2], want, lines[len(lines)-1])
	}
	if want := fmt.Sprint(cps); last[4] != want || last[3] != want || last[5] != "100" {
		t.Errorf("the last line is at %s/%s checkpoints (%s%%), want %d/%d (100%%): %q", last[3], last[4], last[5], cps, cps, lines[len(lines)-1])
	}
	if r := h.ok("copy", "--from", "test:src", "--to", "test:dst", "--verify", "--progress", "0"); strings.Contains(r.stderr, "verify: ") {
		t.Errorf("--progress 0 printed verify progress:\n%s", r.stderr)
	}
}

var (
	checkShareLine = regexp.MustCompile(`^check: (\d+) of about (\d+) keys read \((\d+)%\), \d+ keys/s, ETA (\d+h)?(\d+m)?\d+s$`)
	checkKeysLine  = regexp.MustCompile(`^check: \d+ keys read, \d+ keys/s$`)
)

// TestCheckProgress: check prints progress lines: on redis-server with
// the share of the key space read, the keys in all and an ETA, ending at
// 100%; on fdbstore (memkv), whose checker cannot tell the share, the
// keys read and the rate.
func TestCheckProgress(t *testing.T) {
	srv := redistest.Start(t)
	url := "redis://" + srv.Addr + "/0?prefix=progress"
	seed(t, openURL(t, url), 3000) // several SCAN pages
	h := newHarness(t)
	h.now = tickingClock(time.Second)
	r := h.ok("check", "--store", url, "--progress", "1s")
	lines := progressLines(t, r.stderr, "check", checkShareLine)
	if len(lines) < 2 {
		t.Fatalf("%d check progress lines on redis-server:\n%s", len(lines), r.stderr)
	}
	last := checkShareLine.FindStringSubmatch(lines[len(lines)-1])
	if last[3] != "100" || last[1] != last[2] {
		t.Errorf("the last line is not at 100%% of the keys: %q", lines[len(lines)-1])
	}

	mk, _ := newMemkvStore(t, memkv.Faults{})
	seed(t, mk, 100)
	r = h.ok("check", "--store", h.add("memkv", mk), "--progress", "1s")
	if lines := progressLines(t, r.stderr, "check", checkKeysLine); len(lines) == 0 {
		t.Errorf("no check progress line on memkv:\n%s", r.stderr)
	}
	if r := h.ok("check", "--store", url, "--progress", "0"); r.stderr != "" {
		t.Errorf("check --progress 0 printed %q", r.stderr)
	}
	h.fails(2, "--progress must not be negative", "check", "--store", url, "--progress", "-1s")
}

var (
	copyLine   = regexp.MustCompile(`^copy: (\d+)/(\d+) threads, \d+ checkpoints \((\d+)%\), \d+ checkpoints/s, ETA (unknown|(\d+h)?(\d+m)?\d+s); \d+ written, \d+ already present, at thread "[^"]+"$`)
	exportLine = regexp.MustCompile(`^export: (\d+)/(\d+) threads, \d+ checkpoints \((\d+)%\), \d+ checkpoints/s, ETA (\d+h)?(\d+m)?\d+s$`)
	importLine = regexp.MustCompile(`^import: \d+ threads, \d+ checkpoints, \d+ checkpoints/s; \d+ written, \d+ already present, at thread "[^"]+"$`)
)

// TestCopyExportImportProgress: copy's and export's progress lines carry
// the source's thread total (counted first), the share done and an ETA,
// ending at all the threads; import's, whose stream has no total, the
// counts and the rate.
func TestCopyExportImportProgress(t *testing.T) {
	h := newHarness(t)
	src := newMem()
	threads, _ := seed(t, src, 200)
	h.now = tickingClock(time.Second)
	for _, tc := range []struct {
		verb string
		re   *regexp.Regexp
		args []string
	}{
		{"copy", copyLine, []string{"copy", "--from", h.add("src", src), "--to", h.add("dst", newMem()), "--batch", "16"}},
		{"export", exportLine, []string{"export", "--store", "test:src"}},
	} {
		r := h.ok(append(tc.args, "--progress", "1s")...)
		lines := progressLines(t, r.stderr, tc.verb, tc.re)
		if len(lines) == 0 {
			t.Fatalf("no %s progress line:\n%s", tc.verb, r.stderr)
		}
		last := tc.re.FindStringSubmatch(lines[len(lines)-1])
		if want := fmt.Sprint(len(threads)); last[1] != want || last[2] != want || last[3] != "100" {
			t.Errorf("the last %s line is not at %s/%s threads (100%%): %q", tc.verb, want, want, lines[len(lines)-1])
		}
		if tc.verb == "export" {
			h.stdin = r.stdout
		}
	}
	r := h.ok("import", "--store", h.add("imported", newMem()), "--progress", "1s", "--batch", "16")
	if lines := progressLines(t, r.stderr, "import", importLine); len(lines) == 0 {
		t.Errorf("no import progress line:\n%s", r.stderr)
	}
}

// TestProgressLine: the line's parts when totals are known, and without
// them.
func TestProgressLine(t *testing.T) {
	e := defaultEnv(nil, nil, nil)
	start := time.Unix(0, 0)
	p := &progress{e: e, verb: "check", start: start, threads: 10, cps: 1000}
	if got, want := p.line(start.Add(10*time.Second), 2, 250, "at x"), "check: 2/10 threads, 250/1000 checkpoints (25%), 25 checkpoints/s, ETA 30s; at x"; got != want {
		t.Errorf("line %q, want %q", got, want)
	}
	p.cps = 0
	if got, want := p.line(start.Add(10*time.Second), 5, 250, ""), "check: 5/10 threads, 250 checkpoints (50%), 25 checkpoints/s, ETA 10s"; got != want {
		t.Errorf("line %q, want %q", got, want)
	}
	p.threads = 0
	if got, want := p.line(start.Add(10*time.Second), 5, 250, ""), "check: 5 threads, 250 checkpoints, 25 checkpoints/s"; got != want {
		t.Errorf("line %q, want %q", got, want)
	}
	if got, want := p.checkLine(start.Add(20*time.Second), driver.CheckProgress{Keys: 4000, Done: 0.4}), "check: 4000 of about 10000 keys read (40%), 200 keys/s, ETA 30s"; got != want {
		t.Errorf("check line %q, want %q", got, want)
	}
	if got, want := p.checkLine(start.Add(20*time.Second), driver.CheckProgress{Keys: 4000, Done: -1}), "check: 4000 keys read, 200 keys/s"; got != want {
		t.Errorf("check line %q, want %q", got, want)
	}
}
