package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/fdbstore"
	"github.com/ckptstore/ckptstore/fdbstore/kv"
	"github.com/ckptstore/ckptstore/fdbstore/kv/memkv"
	"github.com/ckptstore/ckptstore/internal/redistest"
	"github.com/ckptstore/ckptstore/internal/testkit"
	"github.com/ckptstore/ckptstore/internal/workload"
	"github.com/ckptstore/ckptstore/storeurl"
)

// faults is the fault mix of the fdbstore tests: 20 % not_committed and
// 10 % commit_unknown_result, half of those applied.
func faults(seed int64) memkv.Faults {
	return memkv.Faults{Seed: seed, NotCommittedRate: 0.20, UnknownResultAppliedRate: 0.05, UnknownResultNotAppliedRate: 0.05}
}

// newMemkvStore is fdbstore on a memkv engine with faults.
func newMemkvStore(t testing.TB, f memkv.Faults) (*ckptstore.Store, *memkv.DB) {
	t.Helper()
	db, err := memkv.NewWithOptions(memkv.Options{Faults: f})
	must(t, err)
	st, err := fdbstore.New(db, fdbstore.Options{})
	must(t, err)
	return st, db
}

// openURL opens a store URL the way ckptctl does, for seeding and
// checking.
func openURL(t testing.TB, url string) *ckptstore.Store {
	t.Helper()
	o, err := storeurl.Open(context.Background(), url, storeurl.Options{})
	must(t, err)
	t.Cleanup(func() { _ = o.Close() })
	return o.Store
}

// checkStore runs the store's own consistency checker when it has one.
func checkStore(t testing.TB, s *ckptstore.Store, what string) {
	t.Helper()
	problems, err := callCheck(context.Background(), s, nil)
	if errors.Is(err, errNoChecker) {
		t.Logf("%s: no checker in this build", what)
		return
	}
	must(t, err)
	if len(problems) > 0 {
		t.Errorf("%s: the checker found %q", what, problems)
	}
}

// TestCopyRedisToMemkvAndBack copies a Redis store into fdbstore on a
// memkv engine that injects commit faults, interrupts the copy halfway,
// resumes it, verifies, and copies the result back into Redis under
// another prefix.
func TestCopyRedisToMemkvAndBack(t *testing.T) {
	srv := redistest.Start(t)
	srcURL := "redis://" + srv.Addr + "/0?prefix=src"
	backURL := "redis://" + srv.Addr + "/0?prefix=back"
	src := openURL(t, srcURL)
	threads, n := seed(t, src, 200)

	h := newHarness(t)
	mk, db := newMemkvStore(t, faults(1))
	mkURL := h.add("memkv", mk)
	first := copyInterrupted(t, h, srcURL, mkURL, mk, threads, n)
	resumeCopy(t, h, srcURL, mkURL, src, mk, db, threads, n, first)
	copyBack(t, h, srcURL, mkURL, backURL, src, threads, n)
	checkFindsAStrayKey(t, h, mkURL, mk, db)
}

// copyInterrupted copies srcURL to mkURL (store mk) in batches of 16,
// cancelled after the fourth, and returns how many of the n checkpoints
// of threads it left, some but not all.
func copyInterrupted(t *testing.T, h *harness, srcURL, mkURL string, mk *ckptstore.Store, threads []string, n int) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	batches := 0
	h.afterBatch = func() error {
		if batches++; batches == 4 {
			cancel()
		}
		return nil
	}
	r := h.runCtx(ctx, "copy", "--from", srcURL, "--to", mkURL, "--batch", "16")
	if r.code != 1 || !strings.Contains(r.stderr, "interrupted") {
		t.Fatalf("interrupted copy: %v", r)
	}
	first := countAll(t, mk, threads)
	if first == 0 || first >= n {
		t.Fatalf("the interrupted copy left %d of %d checkpoints", first, n)
	}
	testkit.CheckRefs(t, mk, threads...)
	h.afterBatch = nil
	return first
}

// resumeCopy runs the copy again with --verify: it writes the rest of the
// n checkpoints (first were copied before), through memkv's faults.
func resumeCopy(t *testing.T, h *harness, srcURL, mkURL string, src, mk *ckptstore.Store, db *memkv.DB, threads []string, n, first int) {
	r := h.ok("copy", "--from", srcURL, "--to", mkURL, "--batch", "16", "--verify")
	s := parseSummary(t, r.stdout)
	// A commit_unknown_result that was applied makes fdbstore's retry find
	// its checkpoints stored, so they count as present, not written: the
	// sum is what is exact.
	if s.written+s.present != n || s.present < first {
		t.Errorf("resumed copy: %+v, after %d of %d were copied", s, first, n)
	}
	if !strings.Contains(r.stdout, fmt.Sprintf("verify: equal: %d threads, %d checkpoints", len(threads), n)) {
		t.Errorf("verify: %v", r)
	}
	if db.Stats().InjectedFaults == 0 {
		t.Error("memkv injected no fault")
	}
	if got := countAll(t, mk, threads); got != n {
		t.Errorf("memkv holds %d checkpoints, the source %d", got, n)
	}
	testkit.CheckRefs(t, src, threads...)
	testkit.CheckRefs(t, mk, threads...)
	checkStore(t, mk, "memkv")
}

// copyBack copies mkURL to backURL, with the faults still on, and checks
// that the three stores hold and export the same.
func copyBack(t *testing.T, h *harness, srcURL, mkURL, backURL string, src *ckptstore.Store, threads []string, n int) {
	r := h.ok("copy", "--from", mkURL, "--to", backURL, "--batch", "64", "--verify")
	if s := parseSummary(t, r.stdout); s.written != n || s.present != 0 {
		t.Errorf("copy back: %+v", s)
	}
	back := openURL(t, backURL)
	equalStores(t, src, back)
	testkit.CheckRefs(t, back, threads...)
	checkStore(t, src, "redis src")
	checkStore(t, back, "redis back")
	// All three stores export to the same bytes: every checkpoint, head
	// and transcript as the source held them.
	want := h.ok("export", "--store", srcURL).stdout
	for _, url := range []string{mkURL, backURL} {
		if got := h.ok("export", "--store", url).stdout; got != want {
			t.Errorf("export of %s differs from the source's", url)
		}
	}
	if r := h.run("check", "--store", backURL); r.code != 0 && !strings.Contains(r.stderr, "no checker") {
		t.Errorf("ckptctl check on the copy: %v", r)
	}
}

// checkFindsAStrayKey: ckptctl check on memkv is clean, then finds a key
// fdbstore never writes.
func checkFindsAStrayKey(t *testing.T, h *harness, mkURL string, mk *ckptstore.Store, db *memkv.DB) {
	if _, err := callCheck(context.Background(), mk, nil); errors.Is(err, errNoChecker) {
		return
	}
	h.ok("check", "--store", mkURL)
	must(t, db.SetFaults(memkv.Faults{}))
	must(t, db.Transact(context.Background(), func(tr kv.Transaction) error {
		tr.Set([]byte(fdbstore.DefaultPrefix+"\x02stray\x00"), []byte("x"))
		return nil
	}))
	if r := h.fails(1, "1 broken invariants", "check", "--store", mkURL); !strings.Contains(r.stdout, "stray") {
		t.Errorf("check did not name the stray key: %v", r)
	}
}

// TestCopyKilledBinaryResumes runs the ckptctl binary on a Redis-to-Redis
// copy that stops itself after 50 batches (CKPTCTL_TEST_STOP_AFTER_BATCHES)
// and waits there, so the signal always lands mid-copy, then reruns it:
//
//   - sigkill: killed with SIGKILL, it cannot release the lease of the
//     thread it was writing; the rerun, with --wait, waits that lease out
//     (--lease 1s), writes the rest and verifies;
//   - sigint: interrupted, it releases its leases on the way out (on a
//     context that outlives the cancelled one), so a rerun without --wait
//     skips no thread.
//
// The rerun must find present exactly what the stopped copy wrote and
// write exactly the rest.
func TestCopyKilledBinaryResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	t.Parallel()
	srv := redistest.Start(t)
	bin := buildBinary(t)
	const stopAfter, batch = 50, 2
	for _, c := range []struct {
		name string
		sig  os.Signal
		wait []string
	}{{"sigkill", os.Kill, []string{"--wait"}}, {"sigint", os.Interrupt, nil}} {
		t.Run(c.name, func(t *testing.T) {
			srcURL := "redis://" + srv.Addr + "/0?prefix=" + c.name + "-src"
			dstURL := "redis://" + srv.Addr + "/0?prefix=" + c.name + "-dst"
			src := openURL(t, srcURL)
			threads, n := seed(t, src, 1000)

			args := []string{"copy", "--from", srcURL, "--to", dstURL, "--batch", strconv.Itoa(batch), "--lease", "1s"}
			cmd, stderr := startBinary(t, bin, args...)
			cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", stopAfterEnv, stopAfter))
			must(t, cmd.Start())
			deadline := time.After(time.Minute)
			for !strings.Contains(stderr.String(), "ckptctl: stopped after") {
				select {
				case <-deadline:
					t.Fatalf("the copy did not stop after %d batches:\n%s", stopAfter, stderr.String())
				case <-time.After(5 * time.Millisecond):
				}
			}
			must(t, cmd.Process.Signal(c.sig))
			err := cmd.Wait()
			if c.sig == os.Interrupt && (err == nil || !strings.Contains(stderr.String(), "interrupted; rerun the command to resume")) {
				t.Errorf("interrupted copy: %v\n%s", err, stderr.String())
			}
			dst := openURL(t, dstURL)
			first := countAll(t, dst, threads)
			// Each batch holds 1 or 2 checkpoints; the other workers'
			// batches in flight may land too, and none starts after the
			// stop.
			if first < stopAfter || first >= n {
				t.Fatalf("the copy stopped after %d batches of at most %d left %d of %d checkpoints", stopAfter, batch, first, n)
			}
			testkit.CheckRefs(t, dst, threads...)

			out, err := runBinary(t, bin, append([]string{"copy", "--from", srcURL, "--to", dstURL, "--verify", "--lease", "1s"}, c.wait...)...)
			if err != nil {
				t.Fatalf("resumed copy: %v\n%s", err, out)
			}
			s := parseSummary(t, out)
			if s.present != first || s.written != n-first {
				t.Errorf("resumed copy: %+v; the stopped one had left %d of %d, so want %d present and %d written", s, first, n, first, n-first)
			}
			if !strings.Contains(out, fmt.Sprintf("verify: equal: %d threads, %d checkpoints", len(threads), n)) {
				t.Errorf("verify: %s", out)
			}
			t.Logf("%s after %d of %d checkpoints; the rerun wrote %d and found %d present", c.name, first, n, s.written, s.present)
			testkit.CheckRefs(t, src, threads...)
			testkit.CheckRefs(t, dst, threads...)
			checkStore(t, dst, "redis dst")
		})
	}
}

// BenchmarkCopyRedisToMemkv measures copy throughput from redisstore on a
// local redis-server into fdbstore on memkv, for checkpoints shaped like
// loadgen's (2 KB, a dozen files), in threads of 100 ("threads=100") and
// of 5 ("threads=5", where the per-thread lease and reads dominate). The
// "latency" cases (CKPTCTL_BENCH_LATENCY=1) give memkv loadgen's model of
// a real cluster: 1 ms per read round, 3 ms per commit. Set
// CKPTCTL_BENCH_CHECKPOINTS for a larger store (default 2000).
func BenchmarkCopyRedisToMemkv(b *testing.B) {
	total := 2000
	if v, err := strconv.Atoi(os.Getenv("CKPTCTL_BENCH_CHECKPOINTS")); err == nil && v > 0 {
		total = v
	}
	srv := redistest.Start(b)
	for _, perThread := range []int{100, 5} {
		srcURL := fmt.Sprintf("redis://%s/0?prefix=bench%d", srv.Addr, perThread)
		seedWorkload(b, openURL(b, srcURL), total, perThread)
		for _, latency := range []bool{false, true} {
			for _, parallel := range []int{1, 8} {
				name := fmt.Sprintf("threads=%d/latency=%v/parallel=%d", perThread, latency, parallel)
				b.Run(name, func(b *testing.B) {
					if latency && os.Getenv("CKPTCTL_BENCH_LATENCY") == "" {
						b.Skip("the cluster latency model takes seconds per iteration: set CKPTCTL_BENCH_LATENCY=1")
					}
					var f memkv.Faults
					if latency {
						f.ReadLatency, f.CommitLatency = time.Millisecond, 3*time.Millisecond
					}
					var copied int
					for b.Loop() {
						b.StopTimer()
						mk, _ := newMemkvStore(b, f)
						h := newHarness(b)
						mkURL := h.add("memkv", mk)
						b.StartTimer()
						r := h.ok("copy", "--from", srcURL, "--to", mkURL, "--parallel", strconv.Itoa(parallel))
						copied += parseSummary(b, r.stdout).written
					}
					b.ReportMetric(float64(copied)/b.Elapsed().Seconds(), "checkpoints/s")
				})
			}
		}
	}
}

// seedWorkload fills s with total checkpoints of workload.Gen's shape, in
// threads of perThread, through Import.
func seedWorkload(t testing.TB, s *ckptstore.Store, total, perThread int) []string {
	t.Helper()
	dist, err := workload.ParseSizeDist("2KB")
	must(t, err)
	g := workload.NewGenSeed(workload.GenOptions{Payload: dist, BlobShare: 0.8, GlobalBlobs: 2, ArtifactRate: 0.25}, 1, 2)
	var threads []string
	for i := 0; i*perThread < total; i++ {
		th := fmt.Sprintf("bench-%04d", i)
		threads = append(threads, th)
		var cps []*ckptstore.Checkpoint
		var prev *ckptstore.Checkpoint
		for j := 0; j < perThread && i*perThread+j < total; j++ {
			parent := ""
			if prev != nil {
				parent = prev.ID
			}
			cp, _ := g.Next(th, g.NewID(), parent, prev)
			cps = append(cps, cp)
			prev = cp
		}
		importAll(t, s, th, prev.ID, nil, cps...)
	}
	return threads
}

// buildBinary builds ckptctl into a temporary directory.
func buildBinary(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "ckptctl")
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command on PATH to build ckptctl: %v", err)
	}
	out, err := exec.Command(gobin, "build", "-o", bin, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// startBinary prepares bin with args for the caller to start; its
// stderr collects in the buffer, and it is killed when the test ends.
func startBinary(t testing.TB, bin string, args ...string) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	var stderr syncBuffer
	cmd := exec.Command(bin, args...)
	cmd.Stderr = &stderr
	t.Cleanup(func() {
		if cmd.Process != nil && cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd, &stderr
}

// runBinary runs bin to its end and returns stdout and stderr together.
func runBinary(t testing.TB, bin string, args ...string) (string, error) {
	t.Helper()
	out, err := exec.Command(bin, args...).CombinedOutput()
	return string(out), err
}

// TestCheckOnRedis runs ckptctl check on a consistent redisstore, then on
// one with a key redisstore never writes.
func TestCheckOnRedis(t *testing.T) {
	srv := redistest.Start(t)
	url := "redis://" + srv.Addr + "/0?prefix=chk"
	s := openURL(t, url)
	seed(t, s, 10)
	h := newHarness(t)
	if r := h.ok("check", "--store", url); !strings.Contains(r.stdout, "no broken invariant") {
		t.Fatalf("check on a consistent store: %v", r)
	}
	// The thread index key ends in "threads"; a sibling key of no kind is
	// a broken invariant.
	c := srv.Client(t, nil)
	ctx := context.Background()
	keys, err := c.Keys(ctx, "*threads").Result()
	must(t, err)
	if len(keys) != 1 {
		t.Fatalf("want one thread index key, got %q", keys)
	}
	junk := strings.TrimSuffix(keys[0], "threads") + "junk"
	must(t, c.Set(ctx, junk, "x", 0).Err())
	r := h.fails(1, "1 broken invariants", "check", "--store", url)
	if !strings.Contains(r.stdout, junk) {
		t.Errorf("check did not name %q: %v", junk, r)
	}
}

// TestCopyLongRun is the kill-and-resume test at scale, behind
// CKPTCTL_LONG=1 (CKPTCTL_LONG_CHECKPOINTS, default 50,000): a Redis store
// of loadgen-shaped checkpoints is copied into fdbstore on a faulty memkv,
// interrupted after a random number of batches again and again until a
// run finishes; then --verify, CheckRefs on both sides and the export
// bytes must agree. CKPTCTL_LONG_SEED seeds the faults and the
// interruption points.
func TestCopyLongRun(t *testing.T) {
	if os.Getenv("CKPTCTL_LONG") == "" {
		t.Skip("a long copy: set CKPTCTL_LONG=1 (and CKPTCTL_LONG_CHECKPOINTS=N, default 50000; CKPTCTL_LONG_SEED=S)")
	}
	total := 50_000
	if v, err := strconv.Atoi(os.Getenv("CKPTCTL_LONG_CHECKPOINTS")); err == nil && v > 0 {
		total = v
	}
	srv := redistest.Start(t)
	srcURL := "redis://" + srv.Addr + "/0?prefix=long"
	src := openURL(t, srcURL)
	threads := seedWorkload(t, src, total, 250)
	seed := int64(7)
	if v, err := strconv.ParseInt(os.Getenv("CKPTCTL_LONG_SEED"), 10, 64); err == nil {
		seed = v
	}
	mk, db := newMemkvStore(t, faults(seed))
	h := newHarness(t)
	mkURL := h.add("memkv", mk)
	rng := rand.New(rand.NewPCG(uint64(seed), 7))
	runs := 0
	for {
		runs++
		ctx, cancel := context.WithCancel(context.Background())
		stopAfter, batches := 1+rng.IntN(60), 0
		h.afterBatch = func() error {
			if batches++; batches == stopAfter {
				cancel()
			}
			return nil
		}
		start := time.Now()
		r := h.runCtx(ctx, "copy", "--from", srcURL, "--to", mkURL, "--progress", "0")
		cancel()
		if r.code == 0 {
			t.Logf("run %d finished: %s", runs, strings.TrimSpace(r.stdout))
			break
		}
		if !strings.Contains(r.stderr, "interrupted") {
			t.Fatalf("run %d: %v", runs, r)
		}
		t.Logf("run %d interrupted after %d batches, %v; %d checkpoints copied so far", runs, stopAfter, time.Since(start).Round(time.Millisecond), countAll(t, mk, threads))
	}
	h.afterBatch = nil
	r := h.ok("copy", "--from", srcURL, "--to", mkURL, "--verify")
	if s := parseSummary(t, r.stdout); s.written != 0 || s.present != total {
		t.Errorf("a final copy after completion: %+v", s)
	}
	t.Logf("%d runs, %d injected faults; %s", runs, db.Stats().InjectedFaults, strings.TrimSpace(r.stdout))
	testkit.CheckRefs(t, src, threads...)
	testkit.CheckRefs(t, mk, threads...)
	checkStore(t, mk, "memkv")
	if h.ok("export", "--store", srcURL).stdout != h.ok("export", "--store", mkURL).stdout {
		t.Error("the exports differ")
	}
}

// TestRedisTopologies runs ckptctl on the Sentinel and Cluster URL forms:
// threads and check on a three-master Cluster, then a copy with --verify
// from it onto a primary with a replica under a Sentinel, whose writes
// wait for the replica (min_replicas=1), and check there.
func TestRedisTopologies(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	clusterURL := "redis+cluster://" + strings.Join(cl.Addrs, ",") + "?prefix=ctl"
	threads, n := seed(t, openURL(t, clusterURL), 30)
	h := newHarness(t)
	r := h.ok("threads", "--store", clusterURL)
	if got := strings.Fields(r.stdout); len(got) != len(threads) {
		t.Errorf("threads on the cluster listed %d, want %d", len(got), len(threads))
	}
	if r := h.ok("check", "--store", clusterURL); !strings.Contains(r.stdout, "no broken invariant") {
		t.Errorf("check on the cluster: %v", r)
	}

	g := redistest.StartGroup(t, redistest.GroupOptions{Replicas: 1, Sentinels: 1, Quorum: 1, DownAfter: time.Second})
	// 10 s for the replica's acknowledgement, not the default second: a
	// loaded CI machine has taken longer, and this test is about the URL
	// forms, not the timeout.
	sentinelURL := g.URL("prefix=ctl&min_replicas=1&replica_timeout=10s")
	h.ok("copy", "--from", clusterURL, "--to", sentinelURL, "--verify")
	if r := h.ok("check", "--store", sentinelURL); !strings.Contains(r.stdout, "no broken invariant") {
		t.Errorf("check behind the Sentinel: %v", r)
	}
	// The replica has every checkpoint: each copied write waited for it.
	onReplica := openURL(t, "redis://"+g.Replicas[0].Addr+"?prefix=ctl")
	stored := 0
	for _, th := range threads {
		cps, err := onReplica.List(context.Background(), th)
		must(t, err)
		stored += len(cps)
	}
	if stored != n {
		t.Errorf("the replica holds %d checkpoints, the copy wrote %d", stored, n)
	}
}
