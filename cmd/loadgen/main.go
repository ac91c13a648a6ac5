// Command loadgen drives a ckptstore store with the workload of sandbox
// harness runs and reports throughput, latency percentiles and errors; with
// --verify it ends with an invariant check. `go run ./cmd/loadgen` runs
// ten seconds against the embedded in-memory store.
//
// Invariants of a run:
//
//   - Each worker owns a fixed set of threads (thread i belongs to worker
//     i % workers), so a process never contends with itself; contention
//     comes only from other processes (--contend).
//   - A worker acts only under a lease it believes live, renews it once
//     RenewAfter has passed since it was sent, and ends its run at the
//     first error, re-reading the head in the next run: its view of a head
//     is never stale except after a deliberate stall.
//   - An append counts as acknowledged only when Append returned nil; a
//     checkpoint may vanish afterwards only through an undo or prune that
//     some process recorded (or a delete whose outcome is unknown, whose
//     thread is then exempt from the lost-append check).
//   - Every load loop is bounded by --duration or --ops; the closing
//     barrier of contention mode by --contend-timeout.
//
// Exit codes: 0 success, 1 the store failed or --verify found a violation,
// 2 a bad command line.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/blobs"
	_ "github.com/ckptstore/ckptstore/blobs/s3blob" // --blob-url s3://…
	_ "github.com/ckptstore/ckptstore/fdbstore"     // memkv, fdb:
	"github.com/ckptstore/ckptstore/internal/version"
	"github.com/ckptstore/ckptstore/internal/workload"
	_ "github.com/ckptstore/ckptstore/memstore"   // mem
	_ "github.com/ckptstore/ckptstore/redisstore" // redis://, rediss://, unix://, redis+sentinel://, redis+cluster://
	"github.com/ckptstore/ckptstore/storeurl"
	"github.com/ckptstore/ckptstore/sweep"
)

// quietRedis drops go-redis's own log lines (dial retries and the like):
// loadgen reports each failure once, with its operation, in its error table.
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

func main() {
	redis.SetLogger(quietRedis{})
	// The first interrupt ends the load gracefully (the runs in flight
	// finish, then the sweep, the check and the report run); the second
	// aborts.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	interrupted := make(chan struct{})
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sig
		close(interrupted)
		fmt.Fprintln(os.Stderr, "\nloadgen: interrupted: finishing the runs in flight, then reporting (interrupt again to abort)")
		<-sig
		cancel()
	}()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr, interrupted))
}

// run is the whole command; it returns the exit code. Closing interrupted
// ends the load early.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, interrupted <-chan struct{}) int {
	if version.Requested(args) {
		fmt.Fprintln(stdout, version.Line("loadgen"))
		return 0
	}
	return runWith(ctx, args, stdout, stderr, interrupted, nil)
}

// runWith is run with hook, when set, applied to the parsed flags (tests
// put their own store in).
func runWith(ctx context.Context, args []string, stdout, stderr io.Writer, interrupted <-chan struct{}, hook func(*config)) int {
	cfg, err := parseFlags(args, stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err != nil:
		fmt.Fprintf(stderr, "loadgen: %v\nRun 'loadgen -h' for the flags.\n", err)
		return 2
	}
	cfg.interrupted = interrupted
	if hook != nil {
		hook(cfg)
	}
	res, err := load(ctx, cfg, stderr)
	if errors.Is(err, storeurl.ErrBadURL) {
		fmt.Fprintf(stderr, "loadgen: --store: %v\nRun 'loadgen -h' for the flags.\n", err)
		return 2
	}
	code := 0
	if res != nil {
		// The load ran: report it, also when what followed it failed.
		if cfg.json {
			if err := writeJSON(stdout, res); err != nil {
				fmt.Fprintf(stderr, "loadgen: %v\n", err)
				code = 1
			}
		} else {
			writeTable(stdout, res)
		}
		if res.Verify != nil && !res.Verify.OK {
			code = 1
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "loadgen: %v\n", err)
		code = 1
	}
	return code
}

// load opens the store, runs the workers, closes with the barrier (in
// contention mode), the sweep and the check, and returns the result. When
// the load ran but the sweep or the check failed, it returns the result
// and the error both.
func load(ctx context.Context, cfg *config, progress io.Writer) (*result, error) {
	ns := cfg.namespace
	if ns == "" {
		ns = randomHex(4)
	}
	proc := randomHex(4)
	r, opened, err := openRunner(ctx, cfg, ns)
	if err != nil {
		return nil, err
	}
	defer func() { _ = opened.Close() }()
	if err := r.prepare(ctx); err != nil {
		return nil, err
	}
	res := &result{
		Store: opened.Desc, Kind: opened.Kind, Namespace: ns, Proc: proc,
		Threads: cfg.threads, Workers: cfg.workers, Contend: cfg.contend,
		Payload: cfg.payload.String(), Lease: r.leaseDur, RenewAfter: r.renewAfter,
	}
	if !cfg.quiet {
		fmt.Fprintf(progress, "loadgen: %s, namespace %s, %d threads, %d workers, %s\n", opened.Desc, ns, cfg.threads, cfg.workers, limitText(cfg))
	}
	workers := r.drive(ctx, opened, res, progress)
	o, err := r.gather(ctx, workers, proc, progress)
	if err != nil {
		return nil, err
	}
	res.Fenced = o.fenced
	// A failed closing sweep ends nothing: the load's figures are already
	// measured, so the report still comes (with the failure in it) and
	// load returns the error beside it.
	var sweepErr error
	if cfg.sweep {
		if o.sweep, sweepErr = r.closingSweep(ctx); sweepErr != nil {
			res.SweepError = sweepErr.Error()
		} else {
			res.Swept = len(o.sweep.deleted)
		}
	}
	res.Ops = r.lat.Summary(res.Elapsed, opOrder...)
	for i := range res.Ops {
		if res.Ops[i].Op == "sweep" { // once, after the load: a rate would mean nothing
			res.Ops[i].PerSec = 0
		}
	}
	if cfg.verify {
		v, err := verify(ctx, r, o)
		if err != nil {
			return res, errors.Join(sweepErr, fmt.Errorf("verify: %w", err))
		}
		v.Acked, v.Deleted, v.Fenced = o.ackedN, v.Deleted+o.deletedN, o.fenced
		res.Verify = v
	}
	return res, sweepErr
}

// openRunner opens the store and the bucket --store and --blob-url name,
// and returns the runner of namespace ns over them; the caller closes the
// store.
func openRunner(ctx context.Context, cfg *config, ns string) (*runner, *storeurl.Opened, error) {
	lease := ckptstore.Options{LeaseDuration: cfg.lease, RenewAfter: cfg.renewAfter}
	open := storeurl.Open
	if isHTTP(cfg.store) {
		open = func(ctx context.Context, url string, opts storeurl.Options) (*storeurl.Opened, error) {
			return openHTTP(ctx, url, cfg.token, cfg.serverNamespace, cfg.caPool, opts)
		}
	}
	if cfg.open != nil {
		open = cfg.open
	}
	opened, err := open(ctx, cfg.store, storeurl.Options{
		Lease:                  lease,
		MemkvReadLatency:       cfg.memkvReadLatency,
		MemkvCommitLatency:     cfg.memkvCommitLatency,
		MemkvNotCommittedRate:  cfg.memkvNotCommitted,
		MemkvUnknownResultRate: cfg.memkvUnknown,
	})
	if err != nil {
		return nil, nil, err
	}
	bucket, err := blobs.Open(ctx, cfg.blobURL)
	if err != nil {
		_ = opened.Close()
		if errors.Is(err, blobs.ErrInvalidURL) {
			return nil, nil, fmt.Errorf("%w: --blob-url: %v", storeurl.ErrBadURL, err)
		}
		return nil, nil, fmt.Errorf("--blob-url: %w", err)
	}
	resolved, _ := lease.Resolve() // Open validated it
	r := &runner{
		cfg: cfg, st: opened.Store, bucket: bucket, lat: workload.NewLatencies(), ns: ns,
		leaseDur: resolved.LeaseDuration, renewAfter: resolved.RenewAfter,
		gen: workload.GenOptions{
			Namespace: ns, Payload: cfg.payload, BlobShare: cfg.blobShare,
			GlobalBlobs: cfg.globalBlobs, ArtifactRate: cfg.artifactRate,
		},
	}
	r.budget.Store(cfg.ops)
	for i := range cfg.threads {
		r.threads = append(r.threads, threadName(ns, i))
	}
	return r, opened, nil
}

// prepare readies the store for the load: in contention mode it checks
// that the namespace's barrier is not already complete, and it uploads the
// blobs every thread shares.
func (r *runner) prepare(ctx context.Context) error {
	if r.cfg.contend > 0 {
		procs, err := arrived(ctx, r.st, r.ns)
		if err != nil {
			return fmt.Errorf("read the barrier: %w", err)
		}
		if len(procs) >= r.cfg.contend {
			return fmt.Errorf("namespace %q was used by an earlier contention run (%d processes finished in it): pick a fresh --namespace", r.ns, len(procs))
		}
	}
	for _, k := range workload.NewGen(r.gen).GlobalKeys() {
		if err := r.bucket.Put(ctx, k, bytes.NewReader(blobBody)); err != nil {
			return fmt.Errorf("upload a global blob: %w", err)
		}
	}
	return nil
}

// drive runs the load phase: the workers until --duration, --ops or the
// first interrupt, with the progress line. It fills in res what the load
// measured and returns the workers, for gather.
func (r *runner) drive(ctx context.Context, opened *storeurl.Opened, res *result, progress io.Writer) []*worker {
	cfg := r.cfg
	var rounds0 int64
	if opened.ReadRounds != nil {
		rounds0 = opened.ReadRounds()
	}
	hot := startShardWatch(opened.Handle) // memkv only (hotrange.go)
	workers := make([]*worker, cfg.workers)
	for i := range workers {
		g := workload.NewGen(r.gen)
		workers[i] = &worker{
			r: r, gen: g, rng: g.Rand(),
			acked: map[string]string{}, uncertain: map[string]bool{},
		}
	}
	for i, t := range r.threads {
		w := workers[i%cfg.workers]
		w.threads = append(w.threads, t)
	}

	start := time.Now()
	r.gaps.begin(start)
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Go(func() { w.run(ctx) })
	}
	done := make(chan struct{})
	var pg sync.WaitGroup
	pg.Go(func() { r.progress(ctx, start, done, progress) })
	if cfg.duration > 0 {
		t := time.AfterFunc(cfg.duration, r.halt)
		defer t.Stop()
	}
	if cfg.interrupted != nil {
		go func() {
			select {
			case <-cfg.interrupted:
				r.halt()
			case <-done:
			}
		}()
	}
	wg.Wait()
	end := time.Now()
	res.Elapsed = end.Sub(start)
	res.LongestStall = r.gaps.end(end)
	close(done)
	pg.Wait()
	if opened.ReadRounds != nil {
		n := opened.ReadRounds() - rounds0
		res.ReadRounds = &n
	}
	if h := hot.finish(); h != nil {
		res.HotRange, res.HotRangeShare = h.String(), &h.HottestShare
	}
	res.Appends = r.appends.Load()
	res.Sessions = r.sessions.Load()
	return workers
}

// outcome is what the load did, as verify checks it: this process's
// workers merged, and (in contention mode) what every process reported.
type outcome struct {
	// threads are every thread written: the load's and every fork's.
	threads []string
	// acked holds the acknowledged checkpoints (id -> thread) that their
	// own worker did not delete.
	acked map[string]string
	// ackedN, deletedN and fenced are the workers' counts.
	ackedN, deletedN, fenced int64
	// gone holds the ids some process's prunes removed.
	gone map[string]bool
	// uncertain holds the threads where a delete's outcome is unknown.
	uncertain map[string]bool
	// sweep is what the closing sweep did, nil without --sweep.
	sweep *sweepOutcome
}

// gather merges what the workers of process proc did and, in contention
// mode, meets the other processes at the barrier to add their reports.
func (r *runner) gather(ctx context.Context, workers []*worker, proc string, progress io.Writer) (*outcome, error) {
	rep := procReport{Proc: proc}
	o := &outcome{acked: map[string]string{}, gone: map[string]bool{}, uncertain: map[string]bool{}}
	for _, w := range workers {
		maps.Copy(o.acked, w.acked)
		o.ackedN += w.ackedN
		o.deletedN += w.deletedN
		rep.Forks = append(rep.Forks, w.forks...)
		rep.Pruned = append(rep.Pruned, w.pruned...)
		rep.Uncertain = slices.AppendSeq(rep.Uncertain, maps.Keys(w.uncertain))
		o.fenced += w.fenced
	}
	reports := []procReport{rep}
	if r.cfg.contend > 0 {
		if !r.cfg.quiet {
			fmt.Fprintf(progress, "loadgen: waiting for %d contending processes at the barrier\n", r.cfg.contend)
		}
		var err error
		if reports, err = meet(ctx, r.st, r.ns, r.cfg.contend, rep, r.cfg.contendTimeout); err != nil {
			return nil, err
		}
	}
	o.threads = slices.Clone(r.threads)
	for _, p := range reports {
		o.threads = append(o.threads, p.Forks...)
		for _, id := range p.Pruned {
			o.gone[id] = true
		}
		for _, t := range p.Uncertain {
			o.uncertain[t] = true
		}
	}
	return o, nil
}

// sweepOutcome is what the closing sweep did.
type sweepOutcome struct {
	deleted   []string
	olderThan time.Duration
}

// closingSweep runs the sweep of --sweep, timed as the operation "sweep":
// it deletes the bucket's blobs that no checkpoint uses and that are older
// than --sweep-older-than.
func (r *runner) closingSweep(ctx context.Context) (*sweepOutcome, error) {
	t := time.Now()
	deleted, err := sweep.Run(ctx, r.st, r.bucket, sweep.Options{OlderThan: r.cfg.sweepOlderThan})
	r.lat.Record("sweep", time.Since(t), err)
	if err != nil {
		return nil, fmt.Errorf("sweep: %w", err)
	}
	return &sweepOutcome{deleted: deleted, olderThan: r.cfg.sweepOlderThan}, nil
}

// verify runs the closing invariant check. The store is quiescent for
// everything it reads: this process's writes are over, other processes
// write other namespaces (whose blob keys carry other tags) or, in
// contention mode, have passed the barrier.
func verify(ctx context.Context, r *runner, o *outcome) (*verifyResult, error) {
	v := &verifyResult{}
	p := r.problems // problems seen during the load (fencing, early lease loss, unexpected errors)
	tag := workload.Tag(r.ns)
	census, err := workload.CheckChains(ctx, r.st, o.threads, tag, &p)
	if err != nil {
		return nil, err
	}
	if err := workload.CheckRefs(ctx, r.st, tag, census, &p); err != nil {
		return nil, err
	}
	v.Threads, v.Checkpoints, v.BlobKeys = census.Threads, census.Checkpoints, len(census.Refs)
	for id, t := range o.acked { // what this process acknowledged and did not delete itself
		switch {
		case o.gone[id]:
			v.Deleted++
		case o.uncertain[t]:
			v.Unchecked++
		case census.Alive[id] != t:
			p.Addf("lost acknowledged append: checkpoint %q of thread %q is gone, and no undo or prune removed it", id, t)
		}
	}
	if o.sweep != nil {
		if err := r.checkSweep(ctx, census, o.sweep, &p); err != nil {
			return nil, err
		}
	}
	v.Problems, v.ProblemCount, v.OK = p.List, p.Count, p.OK()
	return v, nil
}

// checkSweep checks the closing sweep, which saw the same quiescent store
// as verify: it must have deleted only unreferenced blobs and, with no
// grace period, all of them.
func (r *runner) checkSweep(ctx context.Context, census *workload.Census, sw *sweepOutcome, p *workload.Problems) error {
	tag := workload.Tag(r.ns)
	for _, k := range sw.deleted {
		if census.Refs[k] > 0 {
			p.Addf("the sweep deleted blob %q, which %d checkpoints use", k, census.Refs[k])
		}
	}
	if sw.olderThan != 0 {
		return nil
	}
	for _, prefix := range []string{workload.FilesKeyPrefix, workload.ArtifactsKeyPrefix} {
		for o, err := range r.bucket.List(ctx, prefix) {
			if err != nil {
				return fmt.Errorf("list the bucket: %w", err)
			}
			if workload.OwnsKey(tag, o.Key) && census.Refs[o.Key] == 0 {
				p.Addf("the sweep left blob %q, which no checkpoint uses", o.Key)
			}
		}
	}
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails (Go 1.24+)
	return hex.EncodeToString(b)
}

func limitText(cfg *config) string {
	switch {
	case cfg.ops > 0 && cfg.duration > 0:
		return fmt.Sprintf("%d appends or %v", cfg.ops, cfg.duration)
	case cfg.ops > 0:
		return fmt.Sprintf("%d appends", cfg.ops)
	}
	return cfg.duration.String()
}
