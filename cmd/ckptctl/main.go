// Command ckptctl is the operator's tool for a ckptstore store: it lists
// threads and checkpoints, deletes and prunes threads, sweeps blobs,
// exports a store to JSON Lines, imports such a stream, copies one store
// into another (a migration from Redis to FoundationDB, say) and runs a
// store's consistency checker. A store is a storeurl URL, or a
// ckptserver's http(s):// URL with a tenant's token: the commands a tenant
// may run then go through the server. docs/ckptctl.md is the manual.
//
// Invariants:
//
//   - Every write takes the thread's writer lease first and releases it on
//     the way out, also when the command is interrupted (the release runs
//     on a context that outlives the cancelled one), so an interrupted
//     import or copy can be rerun at once.
//   - import and copy write only through Importer, which is idempotent by
//     content: a rerun after any interruption sends the missing
//     checkpoints again and nothing is stored twice. A destination thread
//     is first compared with the source, and one that differs (a
//     checkpoint the source does not hold or holds otherwise, another
//     non-empty head, another transcript) is refused before anything is
//     written to it.
//   - Checkpoint bytes go through Checkpoint.MarshalJSON and UnmarshalJSON
//     only (never a re-encoding), so conversations and transcripts keep
//     their bytes; the stream reader reads JSON values, not lines, so a
//     conversation stored with raw newlines in its whitespace survives.
//
// Exit codes: 0 success; 1 the store failed, was unreachable, refused the
// write, or a comparison found a difference; 2 bad input (command line,
// ids, a malformed import stream).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/blobs"
	_ "github.com/ckptstore/ckptstore/blobs/s3blob" // --bucket s3://…
	"github.com/ckptstore/ckptstore/driver"
	_ "github.com/ckptstore/ckptstore/fdbstore" // memkv, fdb:
	"github.com/ckptstore/ckptstore/httpstore"  // http://, https://: a ckptserver
	"github.com/ckptstore/ckptstore/internal/version"
	_ "github.com/ckptstore/ckptstore/memstore" // mem
	pdriver "github.com/ckptstore/ckptstore/persist/driver"
	_ "github.com/ckptstore/ckptstore/redisstore" // redis://, rediss://, unix://, redis+sentinel://, redis+cluster://
	"github.com/ckptstore/ckptstore/storeurl"
	"github.com/ckptstore/ckptstore/streams"
)

// quietRedis drops go-redis's own log lines: ckptctl reports each failure
// once, with its command.
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

func main() {
	redis.SetLogger(quietRedis{})
	// An interrupt cancels the context: the command in flight stops after
	// its current store call and releases its lease.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	e := defaultEnv(os.Stdin, os.Stdout, os.Stderr)
	if n, err := strconv.Atoi(os.Getenv(stopAfterEnv)); err == nil && n > 0 {
		e.afterBatch = stopAfter(ctx, e.stderr, n)
	}
	code := run(ctx, os.Args[1:], e)
	stop()
	os.Exit(code)
}

// stopAfterEnv is for the tests of the binary only: set to n, an import
// or copy stops after its n-th committed batch, says so on stderr and
// waits there for a signal, so that a test kills or interrupts it at a
// known point, mid-copy, however fast the copy runs.
const stopAfterEnv = "CKPTCTL_TEST_STOP_AFTER_BATCHES"

// stopAfter is the afterBatch of stopAfterEnv: it blocks the n-th batch's
// bookkeeping (and with it every other worker's) until ctx is done, then
// fails the batch with ctx's error, as an interrupt would.
func stopAfter(ctx context.Context, stderr io.Writer, n int) func() error {
	batches := 0
	return func() error {
		batches++
		if batches < n {
			return nil
		}
		if batches == n {
			fmt.Fprintf(stderr, "ckptctl: stopped after %d batches (%s)\n", n, stopAfterEnv)
		}
		<-ctx.Done()
		return ctx.Err()
	}
}

// env is what a command runs against: its streams, how it opens stores
// and buckets, and the knobs tests turn.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// open opens the store a --store, --from or --to URL names, with the
	// lease options of --lease.
	open func(ctx context.Context, url string, lease ckptstore.Options) (*store, error)
	// lease is the duration of the leases the command takes (--lease; 0 =
	// the contract's default).
	lease time.Duration
	// namespace is --namespace: the tenant of every store URL the command
	// opens ("" = the URL's own key space).
	namespace string
	// token and caFile are --token and --ca-file, for the http:// and
	// https:// URLs of a ckptserver.
	token, caFile string
	// openBucket opens a --bucket URL.
	openBucket func(ctx context.Context, url string) (blobs.Bucket, error)
	// poll is how long --wait sleeps between two lease attempts.
	poll time.Duration
	// afterBatch, when set, runs after every committed import batch; an
	// error it returns stops the import as a store error would. Tests use
	// it to interrupt a copy at a chosen point.
	afterBatch func() error
	// now is the clock of progress lines and throughput figures.
	now func() time.Time
}

func defaultEnv(stdin io.Reader, stdout, stderr io.Writer) *env {
	e := &env{
		stdin: stdin, stdout: stdout, stderr: stderr,
		open:       nil, // set below: it reads the --namespace flag
		openBucket: blobs.Open,
		poll:       250 * time.Millisecond,
		now:        time.Now,
	}
	e.open = func(ctx context.Context, url string, lease ckptstore.Options) (*store, error) {
		if httpstore.IsURL(url) {
			return openServer(ctx, url, lease, e)
		}
		return openStore(ctx, url, lease, e.namespace)
	}
	return e
}

// store is an open store, the persistence driver of its key space, and
// how to close them.
type store struct {
	*ckptstore.Store
	// persist is the persistence driver (runs, interrupts, metadata,
	// artifacts, blob rows, locks) of the store's key space; nil for a
	// store that keeps none.
	persist pdriver.Driver
	// streams is the stream driver of the --namespace tenant; nil without
	// --namespace (streams live in namespaces only) or on an engine that
	// keeps none.
	streams streams.Driver
	// desc names the store in messages, without credentials.
	desc string
	// server is set for the store of a ckptserver (--store http://…): its
	// tenant's checkpoints through the server's routes, and no persistence
	// driver: its persistence records go through the server's
	// persist/export and persist/import routes (serverPorter).
	server bool
	// client is the ckptserver client of a server store (nil otherwise),
	// for the routes beyond the store's methods (check).
	client *httpstore.Client
	close  func() error
}

// openStore opens a store through storeurl, the opener loadgen and
// ckptserver share: the URL's own key space, or with namespace the key
// space of that tenant (as ckptserver serves it), checkpoints and
// persistence state alike.
func openStore(ctx context.Context, url string, lease ckptstore.Options, namespace string) (*store, error) {
	o, err := storeurl.Open(ctx, url, storeurl.Options{Lease: lease})
	if err != nil {
		if errors.Is(err, storeurl.ErrBadURL) {
			return nil, usageErr("%v", err)
		}
		return nil, err
	}
	// One tenant, every contract: the URL's own key space, or the one
	// namespace names. Its lease clock is lease.Now (nil: the engine's own,
	// the Redis server's TIME); ckptctl takes no lock leases, so the clock
	// decides nothing here. A nil Persistence: the engine keeps none.
	t, desc := &o.Tenant, o.Desc
	if namespace != "" {
		desc = fmt.Sprintf("%s, namespace %q", desc, namespace)
		if t, err = o.Namespace(namespace, lease); err != nil {
			_ = o.Close()
			if errors.Is(err, storeurl.ErrBadURL) {
				return nil, usageErr("--namespace: %v", err)
			}
			return nil, err
		}
	}
	// Streams live only in namespaces: the URL's own tenant has none.
	return &store{Store: t.Store, persist: t.Persistence, streams: t.Streams, desc: desc, close: o.Close}, nil
}

// tokenEnv is the environment variable --token defaults to, as in
// loadgen and the clients' examples.
const tokenEnv = "CKPT_TOKEN"

// openServer opens the tenant of a ckptserver through httpstore's client
// (httpstore.OpenURL, loadgen's opener too): the tenant --token names, or
// on a --dev server the one --namespace names.
func openServer(ctx context.Context, url string, lease ckptstore.Options, e *env) (*store, error) {
	o := httpstore.URLOptions{Token: e.token, Namespace: e.namespace, Lease: lease}
	if o.Token == "" {
		o.Token = os.Getenv(tokenEnv)
	}
	// --ca-file applies to the https:// URLs only, so that one copy can
	// read an http:// server and write an https:// one.
	if e.caFile != "" && strings.HasPrefix(url, "https://") {
		pem, err := os.ReadFile(e.caFile)
		if err != nil {
			return nil, usageErr("--ca-file: %v", err)
		}
		if o.RootCAs, err = httpstore.CertPool(pem); err != nil {
			return nil, usageErr("--ca-file %s: %v", e.caFile, err)
		}
	}
	op, err := httpstore.OpenURL(ctx, url, o)
	if err != nil {
		if errors.Is(err, storeurl.ErrBadURL) {
			return nil, usageErr("%v", err)
		}
		return nil, err
	}
	return &store{Store: op.Store, desc: op.Desc, server: true, client: op.Handle.(*httpstore.Client), close: op.Close}, nil
}

// usageError is input that cannot run (a bad flag, a malformed stream);
// run exits 2 for it.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usageErr(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// command is one subcommand.
type command struct {
	name, args, summary string
	run                 func(ctx context.Context, e *env, args []string) error
}

var commands []command

func init() {
	// Filled in init, because the usage text of each command reads the
	// table.
	commands = []command{
		{"threads", "--store URL", "list the store's thread ids, in byte order", onStore("threads", 0, runThreads)},
		{"list", "--store URL [--json] [--reverse] [--page N] THREAD", "list a thread's checkpoints, page by page", runList},
		{"get", "--store URL ID", "print one checkpoint as JSON", onStore("get", 1, runGet)},
		{"head", "--store URL THREAD", "print a thread's head id (nothing when it has none)", onStore("head", 1, runHead)},
		{"refs", "--store URL", "print every blob key with its reference count", onStore("refs", 0, runRefs)},
		{"delete-thread", "--store URL [--wait] THREAD", "delete a whole thread under its writer lease", runDeleteThread},
		{"prune", "--store URL --keep N [--wait] THREAD", "keep the head and the N-1 checkpoints before it", runPrune},
		{"sweep", "--store URL --bucket URL --older-than D [--dry-run]", "delete the blobs no checkpoint uses", runSweep},
		{"export", "--store URL [--out FILE] [--thread T]…", "write the store (or some threads) and its persistence records as JSON Lines", runExport},
		{"import", "--store URL [--in FILE] [--wait]", "read an export stream into the store", runImport},
		{"copy", "--from URL --to URL [--from-token T] [--to-token T] [--bucket URL --to-bucket URL] [--verify] [--wait]", "copy every thread and persistence record of one store into another", runCopy},
		{"check", "--store URL [--progress D]", "run the store's and its persistence driver's consistency checkers", runCheck},
	}
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "ckptctl operates a ckptstore store.\n\nUsage: ckptctl COMMAND [flags] [args]\n\nCommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-14s %s\n", c.name, c.summary)
	}
	fmt.Fprintf(w, "\nStores (--store, --from, --to): %s | http://host:port and https://host:port (a ckptserver, with --token)\nRun 'ckptctl COMMAND -h' for a command's flags; docs/ckptctl.md is the manual.\n'ckptctl --version' prints the version.\n", storeurl.Forms())
}

// run is the whole command; it returns the exit code.
func run(ctx context.Context, args []string, e *env) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(e.stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] == "--version" || args[0] == "-version" {
		fmt.Fprintln(e.stdout, version.Line("ckptctl"))
		return 0
	}
	i := slices.IndexFunc(commands, func(c command) bool { return c.name == args[0] })
	if i < 0 {
		fmt.Fprintf(e.stderr, "ckptctl: unknown command %q\n\n", args[0])
		usage(e.stderr)
		return 2
	}
	c := commands[i]
	err := c.run(ctx, e, args[1:])
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	code := exitCode(err)
	msg := err.Error()
	wire := ckptstore.Code(err)
	if wire == "" {
		wire = pdriver.Code(err) // a persistence contract error
	}
	if wire != "" && !strings.Contains(msg, wire) {
		msg += " (" + wire + ")"
	}
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		msg += " (interrupted; rerun the command to resume)"
	}
	fmt.Fprintf(e.stderr, "ckptctl %s: %s\n", c.name, msg)
	if code == 2 {
		if _, ok := errors.AsType[*usageError](err); ok {
			fmt.Fprintf(e.stderr, "Usage: ckptctl %s %s\n", c.name, c.args)
		}
	}
	return code
}

// exitCode is 2 for bad input, 1 for everything else.
func exitCode(err error) int {
	if _, ok := errors.AsType[*usageError](err); ok {
		return 2
	}
	for _, bad := range []error{ckptstore.ErrInvalidID, ckptstore.ErrInvalidEntry, driver.ErrInvalidOptions, blobs.ErrInvalidURL, pdriver.ErrInvalidID, pdriver.ErrInvalidEntry} {
		if errors.Is(err, bad) {
			return 2
		}
	}
	return 1
}

// flags is a command's flag set with the flags every command shares.
type flags struct {
	*flag.FlagSet
	e *env
	// store is the --store URL of a command on one store (newStoreFlags).
	store *string
}

// newStoreFlags is newFlags with --store, described as usage: the flags
// of a command on one store.
func newStoreFlags(e *env, name, usage string) *flags {
	f := newFlags(e, name)
	f.store = f.String("store", "", usage)
	return f
}

// openStore opens the --store of a newStoreFlags command.
func (f *flags) openStore(ctx context.Context) (*store, error) {
	return openFlag(ctx, f.e, "store", *f.store)
}

// onStore is the run of command name when it takes no flag of its own
// beside --store: it parses nargs positional arguments, opens the store,
// runs body on them and closes the store.
func onStore(name string, nargs int, body func(ctx context.Context, e *env, s *store, pos []string) error) func(context.Context, *env, []string) error {
	return func(ctx context.Context, e *env, args []string) error {
		f := newStoreFlags(e, name, "the store URL")
		pos, err := f.parse(args, nargs)
		if err != nil {
			return err
		}
		s, err := f.openStore(ctx)
		if err != nil {
			return err
		}
		defer s.Close()
		return body(ctx, e, s, pos)
	}
}

func newFlags(e *env, name string) *flags {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	f := &flags{FlagSet: fs, e: e}
	fs.StringVar(&e.namespace, "namespace", "", "the tenant (a ckptserver namespace) of every store URL the command opens: its checkpoints and\npersistence state; default: the URL's own key space")
	// The default is read when a server URL is opened, not here, so that
	// -h never prints a token.
	fs.StringVar(&e.token, "token", "", "bearer token of a ckptserver URL (http:// or https://): the tenant whose namespace the\ncommand reads or writes (default $CKPT_TOKEN; none for a --dev server)")
	fs.StringVar(&e.caFile, "ca-file", "", "PEM CA bundle an https:// ckptserver's certificate must chain to, instead of the system's roots")
	fs.DurationVar(&e.lease, "lease", 0, "duration of the writer leases this command takes (default 120s); a run killed\nwithout a chance to release its lease blocks the thread this long")
	fs.Usage = func() {
		i := slices.IndexFunc(commands, func(c command) bool { return c.name == name })
		fmt.Fprintf(e.stderr, "Usage: ckptctl %s %s\n\n%s.\n\nFlags:\n", name, commands[i].args, commands[i].summary)
		fs.PrintDefaults()
	}
	return f
}

// parse parses args, flags and positional arguments in any order ("--"
// ends the flags), and checks that exactly nargs positional arguments
// came. It returns them.
func (f *flags) parse(args []string, nargs int) ([]string, error) {
	flagArgs, tail := args, []string(nil)
	if i := slices.Index(args, "--"); i >= 0 {
		flagArgs, tail = args[:i], args[i+1:]
	}
	pos, err := f.parseInterspersed(flagArgs)
	if err != nil {
		return nil, err
	}
	pos = append(pos, tail...)
	if len(pos) != nargs {
		switch {
		case nargs == 0:
			return nil, usageErr("unexpected argument %q", pos[0])
		case len(pos) < nargs:
			return nil, usageErr("missing argument")
		default:
			return nil, usageErr("unexpected argument %q", pos[nargs])
		}
	}
	return pos, nil
}

func (f *flags) parseInterspersed(args []string) ([]string, error) {
	var pos []string
	for {
		if err := f.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, &usageError{err.Error()}
		}
		args = f.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// openFlag opens the store of a required URL flag.
func openFlag(ctx context.Context, e *env, name, url string) (*store, error) {
	if url == "" {
		return nil, usageErr("--%s is required (%s)", name, storeurl.Forms())
	}
	if e.lease < 0 {
		return nil, usageErr("--lease must not be negative")
	}
	s, err := e.open(ctx, url, ckptstore.Options{LeaseDuration: e.lease})
	if err != nil {
		if _, ok := errors.AsType[*usageError](err); ok {
			return nil, usageErr("--%s: %v", name, err)
		}
		return nil, fmt.Errorf("--%s: %w", name, err)
	}
	return s, nil
}

func (s *store) Close() {
	if s.close != nil {
		_ = s.close()
	}
}
