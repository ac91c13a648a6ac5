package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/internal/testkit"
	"github.com/ckptstore/ckptstore/memstore"
)

// summaryRE reads the counts of a copy or import summary line.
var summaryRE = regexp.MustCompile(`(\d+) threads \((\d+) already complete\), (\d+) checkpoints written, (\d+) already present, (\d+) batches`)

type summary struct{ threads, complete, written, present, batches int }

func parseSummary(t testing.TB, out string) summary {
	t.Helper()
	m := summaryRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no summary in %q", out)
	}
	n := func(i int) int { v, _ := strconv.Atoi(m[i]); return v }
	return summary{n(1), n(2), n(3), n(4), n(5)}
}

// equalStores fails t unless verifyStores finds a and b equal.
func equalStores(t testing.TB, a, b *ckptstore.Store) {
	t.Helper()
	var out, errb syncBuffer
	e := defaultEnv(nil, &out, &errb)
	if err := verifyStores(context.Background(), e, &store{Store: a, desc: "a"}, &store{Store: b, desc: "b"}, nil, nil); err != nil {
		t.Fatalf("%v\n%s", err, errb.String())
	}
}

func TestExportImportReproducesTheStore(t *testing.T) {
	h := newHarness(t)
	src, dst := newMem(), newMem()
	srcURL, dstURL := h.add("src", src), h.add("dst", dst)
	threads, n := seed(t, src, 40)

	exp := h.ok("export", "--store", srcURL)
	if !strings.Contains(exp.stderr, fmt.Sprintf("export: %d threads, %d checkpoints", len(threads), n)) {
		t.Errorf("export summary: %v", exp)
	}
	if !strings.HasPrefix(exp.stdout, `{"thread":"chain","head":"chain-0011","transcript":[{"role":"user","content":"hi"}]}`+"\n") {
		t.Errorf("export starts with %.200q", exp.stdout)
	}
	for _, want := range []string{
		`{"thread":"odd","head":"gone","transcript":null}`,
		`{"thread":"empty-transcript","head":null,"transcript":[]}`,
		"{\"thread\":\"only-transcript\",\"head\":null,\"transcript\":[\n\t{\"role\":\"assistant\"} ]}",
	} {
		if !strings.Contains(exp.stdout, want+"\n") {
			t.Errorf("export lacks the header %q", want)
		}
	}

	h.stdin = exp.stdout
	r := h.ok("import", "--store", dstURL, "--batch", "7")
	if s := parseSummary(t, r.stdout); s.threads != len(threads) || s.written != n || s.present != 0 || s.batches < 40/7 {
		t.Errorf("import summary %+v, want %d threads and %d checkpoints written: %v", s, len(threads), n, r)
	}
	equalStores(t, src, dst)
	testkit.CheckRefs(t, dst, threads...)
	// Every createdAt to the bit, -0 included.
	if cp := mustGet(t, dst, "o-a"); strconv.FormatFloat(cp.CreatedAt, 'g', -1, 64) != "-0" {
		t.Errorf("o-a createdAt = %v, want -0", cp.CreatedAt)
	}
	// The destination exports to the same bytes.
	if again := h.ok("export", "--store", dstURL); again.stdout != exp.stdout {
		t.Error("export of the imported store differs from the original export")
	}

	// Importing again writes nothing: every thread is complete, except
	// that the saved "[]" of empty-transcript, which LoadThread cannot tell
	// from none, is sent again (one batch that changes nothing).
	r = h.ok("import", "--store", dstURL)
	if s := parseSummary(t, r.stdout); s.written != 0 || s.present != n || s.complete != len(threads)-1 || s.batches != 1 {
		t.Errorf("second import: %+v", s)
	}
	equalStores(t, src, dst)
}

func TestExportOneThreadToAFile(t *testing.T) {
	h := newHarness(t)
	src, dst := newMem(), newMem()
	srcURL, dstURL := h.add("src", src), h.add("dst", dst)
	seed(t, src, 0)
	file := filepath.Join(t.TempDir(), "odd.jsonl")
	h.ok("export", "--store", srcURL, "--thread", "odd", "--out", file)
	b, err := os.ReadFile(file)
	must(t, err)
	if !strings.HasPrefix(string(b), `{"thread":"odd",`) || strings.Contains(string(b), `"thread":"chain"`) {
		t.Errorf("export --thread odd wrote %q", b)
	}
	// A named thread that does not exist exports as an empty header, and
	// imports as nothing (no transcript is made up for it).
	if r := h.ok("export", "--store", srcURL, "--thread", "nobody"); r.stdout != `{"thread":"nobody","head":null,"transcript":null}`+"\n" {
		t.Errorf("export of a missing thread: %q", r.stdout)
	}
	h.ok("import", "--store", dstURL, "--in", file)
	if got := lines(h.ok("threads", "--store", dstURL).stdout); len(got) != 1 || got[0] != "odd" {
		t.Errorf("threads after importing odd: %q", got)
	}
	testkit.CheckRefs(t, dst, "odd")
	h.fails(2, "--in:", "import", "--store", dstURL, "--in", filepath.Join(t.TempDir(), "missing"))
}

func TestImportRejectsMalformedStreams(t *testing.T) {
	h := newHarness(t)
	dst := newMem()
	url := h.add("dst", dst)
	good := `{"id":"a","threadId":"t","parentCheckpointId":null,"createdAt":1,"reason":"automatic","files":[],"conversation":[],"artifacts":[]}`
	for _, tc := range []struct{ name, in, want string }{
		{"not json", "{", "input value 1"},
		{"checkpoint first", good, "before the first thread header"},
		{"header without thread", `{"thread":null}`, "without a thread id"},
		{"unknown header field", `{"thread":"t","extra":1}`, "unknown field"},
		{"bad thread id", `{"thread":""}`, "INVALID_ID"},
		{"transcript not an array", `{"thread":"t","transcript":{}}`, "not a JSON array"},
		{"twice", `{"thread":"t"}` + "\n" + `{"thread":"t"}`, "comes twice"},
		{"foreign checkpoint", `{"thread":"u"}` + "\n" + good, `checkpoint "a" of thread "t" under the header of thread "u"`},
		{"invalid checkpoint", `{"thread":"t"}` + "\n" + strings.Replace(good, `"automatic"`, `"sometimes"`, 1), "INVALID_ENTRY"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h.stdin = tc.in
			h.fails(2, tc.want, "import", "--store", url)
			if n := countAll(t, dst, []string{"t", "u"}); n != 0 {
				t.Errorf("a refused stream wrote %d checkpoints", n)
			}
		})
	}
}

func TestImportRefusesADifferentDestination(t *testing.T) {
	ctx := context.Background()
	src := newMem()
	seed(t, src, 0)
	h := newHarness(t)
	srcURL := h.add("src", src)
	exp := h.ok("export", "--store", srcURL).stdout

	for _, tc := range []struct {
		name, want string
		prepare    func(t *testing.T, dst *ckptstore.Store)
	}{
		{"extra checkpoint", `the destination holds checkpoint "intruder", which the source does not`, func(t *testing.T, dst *ckptstore.Store) {
			importAll(t, dst, "odd", "", nil, testkit.Checkpoint("odd", "intruder", "", 3, 9))
		}},
		{"other content", `the destination's checkpoint "o-b" differs from the source's`, func(t *testing.T, dst *ckptstore.Store) {
			cp := testkit.Checkpoint("odd", "o-b", "o-a", 0, 2, 3)
			importAll(t, dst, "odd", "", nil, cp) // not named, no label: differs
		}},
		{"other head", `the destination's head is "elsewhere"`, func(t *testing.T, dst *ckptstore.Store) {
			importAll(t, dst, "odd", "elsewhere", nil)
		}},
		{"other transcript", "the destination's transcript differs", func(t *testing.T, dst *ckptstore.Store) {
			must(t, dst.SaveThread(ctx, "odd", json.RawMessage(`["mine"]`)))
		}},
		{"id in another thread", "refused by the destination", func(t *testing.T, dst *ckptstore.Store) {
			importAll(t, dst, "elsewhere", "", nil, testkit.Checkpoint("elsewhere", "o-c", "", 1, 1))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := newMem()
			tc.prepare(t, dst)
			before, err := dst.List(ctx, "odd")
			must(t, err)
			beforeHead, err := dst.GetHead(ctx, "odd")
			must(t, err)
			h.stdin = exp
			r := h.fails(1, tc.want, "import", "--store", h.add("dst-"+tc.name, dst))
			if !strings.Contains(r.stderr, "1 threads not written") {
				t.Errorf("want one thread refused: %v", r)
			}
			after, err := dst.List(ctx, "odd")
			must(t, err)
			afterHead, err := dst.GetHead(ctx, "odd")
			must(t, err)
			if len(after) != len(before) || afterHead != beforeHead {
				t.Errorf("the refused thread changed: %d → %d checkpoints, head %q → %q", len(before), len(after), beforeHead, afterHead)
			}
			// The other threads were imported.
			if n := countAll(t, dst, []string{"chain"}); n != 12 {
				t.Errorf("thread chain has %d of 12 checkpoints", n)
			}
		})
	}
}

func TestImportSkipsAThreadHeldByAWriter(t *testing.T) {
	ctx := context.Background()
	src, dst := newMem(), newMem()
	seed(t, src, 0)
	h := newHarness(t)
	h.stdin = h.ok("export", "--store", h.add("src", src)).stdout
	dstURL := h.add("dst", dst)
	l, err := dst.AcquireWriter(ctx, "odd")
	must(t, err)
	r := h.fails(1, `thread "odd": skipped: another writer holds its lease`, "import", "--store", dstURL)
	if s := parseSummary(t, r.stdout); s.written != 12 {
		t.Errorf("the other threads: %+v", s)
	}
	l.Release(ctx)
	r = h.ok("import", "--store", dstURL)
	if s := parseSummary(t, r.stdout); s.written != 5 || s.present != 12 {
		t.Errorf("rerun after the writer left: %+v", s)
	}
	equalStores(t, src, dst)
}

// TestCopyInterruptedAndResumed stops a copy after each possible number
// of batches and resumes it: the resumed run writes exactly what the
// first did not, and the stores end equal.
func TestCopyInterruptedAndResumed(t *testing.T) {
	src := newMem()
	threads, n := seed(t, src, 50)
	for _, c := range []struct{ stopAfter, parallel int }{{1, 1}, {3, 1}, {6, 1}, {9, 1}, {2, 8}, {5, 8}} {
		stopAfter := c.stopAfter
		t.Run(fmt.Sprintf("after=%d/parallel=%d", c.stopAfter, c.parallel), func(t *testing.T) {
			h := newHarness(t)
			dst := newMem()
			srcURL, dstURL := h.add("src", src), h.add("dst", dst)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			batches := 0
			h.afterBatch = func() error {
				if batches++; batches == stopAfter {
					cancel()
				}
				return nil
			}
			r := h.runCtx(ctx, "copy", "--from", srcURL, "--to", dstURL, "--batch", "8", "--parallel", strconv.Itoa(c.parallel))
			if r.code != 1 || !strings.Contains(r.stderr, "interrupted") {
				t.Fatalf("interrupted copy: %v", r)
			}
			first := countAll(t, dst, threads)
			// In parallel, the batches that came first may have been those
			// of threads without checkpoints.
			if (first == 0 && c.parallel == 1) || first >= n {
				t.Fatalf("the interrupted copy wrote %d of %d checkpoints", first, n)
			}
			testkit.CheckRefs(t, dst, threads...)

			h.afterBatch = nil
			r = h.ok("copy", "--from", srcURL, "--to", dstURL, "--batch", "8", "--verify")
			s := parseSummary(t, r.stdout)
			if s.written != n-first || s.present != first {
				t.Errorf("resumed copy wrote %d and found %d present; the first run had written %d of %d", s.written, s.present, first, n)
			}
			if !strings.Contains(r.stdout, fmt.Sprintf("verify: equal: %d threads, %d checkpoints", len(threads), n)) {
				t.Errorf("verify: %v", r)
			}
			testkit.CheckRefs(t, dst, threads...)
			testkit.CheckRefs(t, src, threads...)
		})
	}
}

func TestVerifyReportsDifferences(t *testing.T) {
	ctx := context.Background()
	a, b := newMem(), newMem()
	seed(t, a, 0)
	seed(t, b, 0)
	equalStores(t, a, b)
	// One difference of each kind.
	must(t, b.SaveThread(ctx, "chain", json.RawMessage(`[1]`)))
	must(t, b.DeleteHead(ctx, "chain", "chain-0011", mustLease(t, b, "chain")))
	appendChain(t, b, "extra", 1, 7000)

	var out, errb syncBuffer
	err := verifyStores(ctx, defaultEnv(nil, &out, &errb), &store{Store: a, desc: "a"}, &store{Store: b, desc: "b"}, nil, nil)
	if err == nil {
		t.Fatal("verify found two different stores equal")
	}
	for _, want := range []string{
		`thread "chain": head "chain-0011" in the source, "chain-0010" in the destination`,
		`thread "chain": the transcripts differ`,
		`thread "chain": checkpoint "chain-0011" is only in the source`,
		`thread "extra" is only in the destination`,
		"none in the source, 1 references in the destination",
	} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("verify did not report %q:\n%s", want, errb.String())
		}
	}
}

func mustLease(t testing.TB, s *ckptstore.Store, thread string) ckptstore.Writer {
	t.Helper()
	l, err := s.AcquireWriter(context.Background(), thread)
	must(t, err)
	t.Cleanup(func() { l.Release(context.Background()) })
	return l.Writer
}

// smallBatches is memstore's driver refusing, as invalid, an import batch
// of more than max checkpoints, as fdbstore refuses one too large for a
// transaction.
type smallBatches struct {
	driver.Store
	max     int
	refused atomic.Int64 // copy runs threads in parallel
}

func (s *smallBatches) Import(ctx context.Context, b ckptstore.ImportBatch) (int, error) {
	if len(b.Checkpoints) > s.max {
		s.refused.Add(1)
		return 0, fmt.Errorf("%w: batch of %d is too large", ckptstore.ErrInvalidEntry, len(b.Checkpoints))
	}
	return s.Store.Import(ctx, b)
}

func TestImportSplitsABatchTheStoreFindsTooLarge(t *testing.T) {
	src := newMem()
	threads, n := seed(t, src, 40)
	small := &smallBatches{Store: newMem().Driver(), max: 5}
	dst := ckptstore.New(small)
	h := newHarness(t)
	r := h.ok("copy", "--from", h.add("src", src), "--to", h.add("dst", dst), "--batch", "32", "--verify")
	if s := parseSummary(t, r.stdout); s.written != n || small.refused.Load() == 0 {
		t.Errorf("copy into a store of small batches: %+v, %d refused", s, small.refused.Load())
	}
	testkit.CheckRefs(t, dst, threads...)

	// A checkpoint that is invalid on its own still fails, alone, with
	// nothing of its thread's head set.
	bad := ckptstore.New(&smallBatches{Store: newMem().Driver(), max: 0})
	h.fails(2, "INVALID_ENTRY", "copy", "--from", h.add("src2", src), "--to", h.add("bad", bad))
	if head, err := bad.GetHead(context.Background(), "chain"); err != nil || head != "" {
		t.Errorf("head after a refused copy = %q, %v", head, err)
	}
}

// TestCopyRenewsTheLease copies a thread of many batches into a store
// whose lease would expire halfway without renewal: the clock moves by
// more than RenewAfter at each batch, so only renewing keeps the lease.
func TestCopyRenewsTheLease(t *testing.T) {
	clock := testkit.NewClock(time.Unix(1_700_000_000, 0))
	src := newMem()
	seed(t, src, 60)
	dst := memstore.New(ckptstore.Options{Now: clock.Now, LeaseDuration: 10 * time.Second, RenewAfter: 4 * time.Second})
	h := newHarness(t)
	h.now = clock.Now
	h.afterBatch = func() error { clock.Advance(5 * time.Second); return nil }
	r := h.ok("copy", "--from", h.add("src", src), "--to", h.add("dst", dst), "--batch", "4", "--parallel", "1", "--verify")
	if s := parseSummary(t, r.stdout); s.batches < 15 {
		t.Errorf("want a thread of many batches: %+v", s)
	}
}

// failingImport is memstore's driver whose Import fails, as an unreachable
// store does, from the failAt-th call on.
type failingImport struct {
	driver.Store
	mu     sync.Mutex
	calls  int
	failAt int
}

func (s *failingImport) Import(ctx context.Context, b ckptstore.ImportBatch) (int, error) {
	s.mu.Lock()
	s.calls++
	fail := s.calls >= s.failAt
	s.mu.Unlock()
	if fail {
		return 0, errors.New("connection refused")
	}
	return s.Store.Import(ctx, b)
}

// TestCopyStopsAtAStoreErrorAndReleasesEveryLease: a store error ends a
// parallel copy with exit 1, and every worker releases its lease on the
// way out, so a rerun can start at once.
func TestCopyStopsAtAStoreErrorAndReleasesEveryLease(t *testing.T) {
	ctx := context.Background()
	src := newMem()
	threads, n := seed(t, src, 40)
	failing := &failingImport{Store: newMem().Driver(), failAt: 4}
	dst := ckptstore.New(failing)
	h := newHarness(t)
	srcURL, dstURL := h.add("src", src), h.add("dst", dst)
	h.fails(1, "connection refused", "copy", "--from", srcURL, "--to", dstURL, "--batch", "8", "--parallel", "4")
	for _, th := range threads {
		l, err := dst.AcquireWriter(ctx, th)
		if err != nil {
			t.Fatalf("thread %s after the failed copy: %v", th, err)
		}
		l.Release(ctx)
	}
	failing.failAt = 1 << 30
	r := h.ok("copy", "--from", srcURL, "--to", dstURL, "--verify")
	if s := parseSummary(t, r.stdout); s.written+s.present != n {
		t.Errorf("rerun: %+v", s)
	}
}
