package main

import (
	"context"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/ckptstore/ckptstore/httpstore"
	"github.com/ckptstore/ckptstore/internal/workload"
	"github.com/ckptstore/ckptstore/storeurl"
)

// config is a parsed, validated command line.
type config struct {
	store    string
	threads  int
	workers  int
	duration time.Duration // 0 = until ops
	ops      int64         // appends; 0 = until duration

	payload      workload.SizeDist
	blobShare    float64
	globalBlobs  int
	artifactRate float64

	appendsPerLease int
	think           time.Duration
	undoRate        float64
	pruneRate       float64
	keep            int
	forkRate        float64
	stallRate       float64
	lease           time.Duration
	renewAfter      time.Duration
	maxClockSkew    time.Duration
	opTimeout       time.Duration // deadline of each store call of the load; 0 = none

	sweep          bool
	blobURL        string
	sweepOlderThan time.Duration

	namespace string

	token, serverNamespace string // --store http://…
	caFile                 string // --store https://…: the CA bundle to trust
	caPool                 *x509.CertPool
	contend                int
	contendTimeout         time.Duration

	verify bool
	json   bool
	quiet  bool

	memkvReadLatency, memkvCommitLatency time.Duration
	memkvNotCommitted, memkvUnknown      float64

	// open replaces storeurl.Open in tests, which share one store between
	// two runs or wrap it to break it on purpose.
	open func(context.Context, string, storeurl.Options) (*storeurl.Opened, error)
	// interrupted, when closed, ends the load early (the first Ctrl-C).
	interrupted <-chan struct{}
}

// usageError is a command line that cannot run; main exits 2 for it.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usageErr(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

const usageHead = `loadgen drives a ckptstore store with the workload of sandbox harness runs:
each worker takes a thread's writer lease, reads the head, appends checkpoints
(renewing the lease when RenewAfter passes, undoing some), sometimes prunes or
forks the thread, and releases the lease. A closing sweep and an invariant
check (--verify) end the run. The report gives per-operation latencies,
errors by code and the longest stall: the longest gap with no acknowledged
append, and when it began. --op-timeout puts a deadline on each store call
(none by default); a call past it counts as DEADLINE_EXCEEDED.

Usage: loadgen [flags]

Stores (--store):
  mem                            the in-memory store (default)
  memkv                          fdbstore on memkv, the in-process FoundationDB engine
  redis://host:port/db?prefix=P  redisstore on a Redis server (a go-redis URL)
  redis+sentinel://s1:26379,s2:26379,s3:26379/0?master_name=NAME&prefix=P
                                 redisstore on the primary a Sentinel group names,
                                 following failovers (rediss+sentinel:// for TLS)
  redis+cluster://n1:6379,n2:6379?prefix=P
                                 redisstore on a Redis Cluster (rediss+cluster://)
                                 Every Redis form takes min_replicas=N (each write
                                 waits until N replicas have it; NOT_REPLICATED
                                 errors otherwise) and replica_timeout=D (default 1s)
  fdb:<cluster file>             fdbstore on a FoundationDB cluster (build with -tags fdb)
  http://host:port               a ckptserver, through the Go client (httpstore);
                                 --token for a server with --tokens, else --lease
                                 and --renew-after go to the --dev server

Several processes may target one store: each uses its own random namespace
by default. With --contend N --namespace NAME, N processes share the threads
of NAME and fight over their leases; they meet at a barrier in the store
before verifying, so start them within --contend-timeout of each other.

Flags:
`

// parseFlags parses args. It returns a *usageError for bad
// input, flag.ErrHelp for -h, and writes usage text to out.
func parseFlags(args []string, out io.Writer) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprint(out, usageHead)
		fs.PrintDefaults()
	}
	var payload string
	fs.StringVar(&c.store, "store", "mem", "the store: "+storeurl.Forms()+" | http[s]://host:port (a ckptserver)")
	fs.StringVar(&c.token, "token", "", "bearer token of a ckptserver --store (default $CKPT_TOKEN; none for a --dev server)")
	fs.StringVar(&c.caFile, "ca-file", "", "PEM CA bundle an https:// --store's certificate must chain to, instead of the system's roots")
	fs.StringVar(&c.serverNamespace, "server-namespace", "", "namespace on a --dev ckptserver (default: the server's default namespace)")
	fs.IntVar(&c.threads, "threads", 64, "threads (sandbox conversations) to write")
	fs.IntVar(&c.workers, "workers", 16, "concurrent harness runs; each owns threads[i] with i % workers == its number")
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "how long to run (0 = until --ops)")
	fs.Int64Var(&c.ops, "ops", 0, "stop after this many appends (0 = until --duration)")
	fs.StringVar(&payload, "payload", "2KB:0.9,50KB:0.1", "checkpoint size distribution: 2KB | 2KB-50KB (uniform) | 2KB:0.9,50KB:0.1 (weighted)")
	fs.Float64Var(&c.blobShare, "blob-share", 0.8, "probability that a file keeps its parent checkpoint's blob key")
	fs.IntVar(&c.globalBlobs, "global-blobs", 2, "namespace-wide blobs every checkpoint references (hot reference counts)")
	fs.Float64Var(&c.artifactRate, "artifact-rate", 0.25, "probability that a checkpoint carries an artifact")
	fs.IntVar(&c.appendsPerLease, "appends-per-lease", 8, "checkpoints appended per lease (one harness run)")
	fs.DurationVar(&c.think, "think", 0, "pause between two appends of a run (the agent's work)")
	fs.Float64Var(&c.undoRate, "undo-rate", 0.05, "probability that an append is undone at once (DeleteHead)")
	fs.Float64Var(&c.pruneRate, "prune-rate", 0.1, "probability that a run ends by pruning its thread (DeleteCheckpoints)")
	fs.IntVar(&c.keep, "keep", 10, "checkpoints a prune keeps")
	fs.Float64Var(&c.forkRate, "fork-rate", 0.02, "probability that a run ends by forking its head into a new thread")
	fs.Float64Var(&c.stallRate, "stall-rate", 0, "probability that a run stalls past its lease before an append, which must then fail with WRITER_LOST; 0.05 when --contend is given and --stall-rate is not")
	fs.DurationVar(&c.lease, "lease", 5*time.Second, "writer lease duration; 1s when --contend is given and --lease is not")
	fs.DurationVar(&c.renewAfter, "renew-after", 0, "renew a lease this long after taking or renewing it (0 = 3/8 of --lease)")
	fs.DurationVar(&c.opTimeout, "op-timeout", 0, "deadline of each store call of the load (0 = none): a call still running then fails with DEADLINE_EXCEEDED, its outcome unknown (--verify treats a timed-out write as maybe stored)")
	fs.DurationVar(&c.maxClockSkew, "max-clock-skew", 50*time.Millisecond, "clock skew between loadgen and the store that --verify tolerates in lease checks")
	fs.BoolVar(&c.sweep, "sweep", true, "end with a blob sweep over the blobs this process uploaded")
	fs.StringVar(&c.blobURL, "blob-url", "mem://", "bucket for the run's blobs (mem://, file:///dir, s3://…); the sweep deletes unreferenced blobs there")
	fs.DurationVar(&c.sweepOlderThan, "sweep-older-than", 0, "the sweep's grace period; unless set, 0 for mem:// and 1h for other buckets")
	fs.StringVar(&c.namespace, "namespace", "", "thread namespace (default: random per process; required with --contend)")
	fs.IntVar(&c.contend, "contend", 0, "number of processes sharing --namespace's threads (0 = no contention)")
	fs.DurationVar(&c.contendTimeout, "contend-timeout", 2*time.Minute, "how long a contending process waits for the others at the closing barrier")
	fs.BoolVar(&c.verify, "verify", false, "check invariants at the end: linear chains, exact reference counts, no lost acknowledged append, fencing (default true for mem and memkv)")
	fs.BoolVar(&c.json, "json", false, "print the result as JSON on stdout")
	fs.BoolVar(&c.quiet, "quiet", false, "no progress line")
	fs.DurationVar(&c.memkvReadLatency, "memkv-read-latency", 0, "memkv: latency of each read round (e.g. 1ms for a real cluster)")
	fs.DurationVar(&c.memkvCommitLatency, "memkv-commit-latency", 0, "memkv: latency of each commit that writes (e.g. 3ms)")
	fs.Float64Var(&c.memkvNotCommitted, "memkv-not-committed-rate", 0, "memkv: probability that a commit fails with not_committed (1020)")
	fs.Float64Var(&c.memkvUnknown, "memkv-unknown-result-rate", 0, "memkv: probability that a commit ends with commit_unknown_result (1021), half applied")

	fs.Bool("version", false, "print the version and exit (run answers it before parsing)")

	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, &usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return nil, usageErr("unexpected argument %q (flags only)", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })

	var err error
	if c.caFile != "" {
		if !strings.HasPrefix(c.store, "https://") {
			return nil, usageErr("--ca-file is for an https:// --store")
		}
		pem, err := os.ReadFile(c.caFile)
		if err != nil {
			return nil, usageErr("--ca-file: %v", err)
		}
		if c.caPool, err = httpstore.CertPool(pem); err != nil {
			return nil, usageErr("--ca-file %s: %v", c.caFile, err)
		}
	}
	if c.payload, err = workload.ParseSizeDist(payload); err != nil {
		return nil, usageErr("--payload: %v", err)
	}
	if !set["verify"] {
		c.verify = c.store == "mem" || c.store == "memkv"
	}
	if c.contend > 0 {
		if !set["lease"] {
			c.lease = time.Second
		}
		if !set["stall-rate"] {
			c.stallRate = 0.05
		}
	}
	if !set["token"] {
		// Read here, not as the flag's default, so -h never prints a token.
		c.token = os.Getenv("CKPT_TOKEN")
	}
	if !set["sweep-older-than"] && !strings.HasPrefix(c.blobURL, "mem:") {
		c.sweepOlderThan = time.Hour
	}
	if !set["duration"] && c.ops > 0 {
		c.duration = 0 // --ops alone: run until the ops are done
	}
	return c, c.validate(set)
}

func (c *config) validate(set map[string]bool) error {
	switch {
	case c.threads < 1:
		return usageErr("--threads must be at least 1, got %d", c.threads)
	case c.workers < 1:
		return usageErr("--workers must be at least 1, got %d", c.workers)
	case c.workers > c.threads:
		return usageErr("--workers (%d) must not exceed --threads (%d): each worker owns its own threads", c.workers, c.threads)
	case c.duration < 0:
		return usageErr("--duration must not be negative")
	case c.ops < 0:
		return usageErr("--ops must not be negative")
	case c.duration == 0 && c.ops == 0:
		return usageErr("give --duration or --ops (or both), so the run ends")
	case c.appendsPerLease < 1:
		return usageErr("--appends-per-lease must be at least 1")
	case c.keep < 1:
		return usageErr("--keep must be at least 1")
	case c.globalBlobs < 0 || c.globalBlobs > 1000:
		return usageErr("--global-blobs must be in 0..1000")
	case c.think < 0:
		return usageErr("--think must not be negative")
	case c.lease <= 0:
		return usageErr("--lease must be positive")
	case c.renewAfter < 0 || (c.renewAfter > 0 && c.renewAfter >= c.lease):
		return usageErr("--renew-after must be in [0, --lease)")
	case c.opTimeout < 0:
		return usageErr("--op-timeout must not be negative (0 = no deadline)")
	case c.maxClockSkew < 0:
		return usageErr("--max-clock-skew must not be negative")
	case c.sweepOlderThan < 0:
		return usageErr("--sweep-older-than must not be negative")
	case c.contend < 0:
		return usageErr("--contend must not be negative")
	case c.contend > 0 && c.namespace == "":
		return usageErr("--contend needs --namespace: the contending processes must name the same, fresh namespace")
	case c.contendTimeout <= 0:
		return usageErr("--contend-timeout must be positive")
	case c.memkvReadLatency < 0 || c.memkvCommitLatency < 0:
		return usageErr("memkv latencies must not be negative")
	}
	for name, v := range map[string]float64{
		"blob-share": c.blobShare, "artifact-rate": c.artifactRate, "undo-rate": c.undoRate,
		"prune-rate": c.pruneRate, "fork-rate": c.forkRate, "stall-rate": c.stallRate,
		"memkv-not-committed-rate": c.memkvNotCommitted, "memkv-unknown-result-rate": c.memkvUnknown,
	} {
		if !(v >= 0 && v <= 1) { // NaN included
			return usageErr("--%s must be a probability in [0, 1], got %v", name, v)
		}
	}
	if c.memkvNotCommitted+c.memkvUnknown > 1 {
		return usageErr("--memkv-not-committed-rate and --memkv-unknown-result-rate add up to more than 1")
	}
	if c.store != "memkv" {
		for _, f := range []string{"memkv-read-latency", "memkv-commit-latency", "memkv-not-committed-rate", "memkv-unknown-result-rate"} {
			if set[f] {
				return usageErr("--%s applies only to --store memkv", f)
			}
		}
	}
	if c.stallRate > 0 && c.renewAfter == 0 && c.lease > time.Minute {
		return usageErr("--stall-rate stalls for a whole lease: use a --lease of at most 1m with it")
	}
	return nil
}
