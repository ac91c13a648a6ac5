package bench

// Every benchmark invocation (each family, each b.N probe, each Append
// round) writes into a namespace of its own and clears it afterwards, the
// way a harness fleet shares a cluster. The benchmarks make their ids
// from fixed seeds, so two invocations writing one key space would meet
// their own earlier checkpoints ("the checkpoint id is already used"), as
// they did on a real FoundationDB cluster, which keeps data between runs.
// To make that visible without a cluster, memkv is treated as one: each
// memkv backend is one engine for the whole process, opened once and
// shared by every invocation, and `make benchsmoke` runs every family
// twice in one process (-twice) and then checks that every namespace the
// run opened is empty again.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ckptstore/ckptstore/fdbstore" // memkv, fdb: (and HasClient)
	"github.com/ckptstore/ckptstore/fdbstore/kv"
	"github.com/ckptstore/ckptstore/internal/redistest"
	_ "github.com/ckptstore/ckptstore/memstore" // mem
	"github.com/ckptstore/ckptstore/redisstore" // redis://, and its namespace prefixes
	"github.com/ckptstore/ckptstore/storeurl"
)

// The latency model of a real FoundationDB cluster for memkv: one
// millisecond per read round trip, three per commit (a commit's
// resolution and log fsyncs across the transaction subsystem).
const (
	clusterReadLatency   = time.Millisecond
	clusterCommitLatency = 3 * time.Millisecond
)

// twice is the guard of `make benchsmoke`: every benchmark family runs a
// second time in the same process, on the same engines, so a benchmark
// that collides with what an earlier invocation wrote, or leaves data
// behind, fails without a real cluster.
var twice = flag.Bool("twice", false, "run every benchmark twice in this process on the same engines, then check that every namespace was cleared")

// backend is one store under benchmark: a name and open, which returns a
// store in a fresh, empty namespace and a function that clears it. open
// also registers the clearing with b.Cleanup, so a benchmark that stops
// early leaves nothing behind; calling the function first is allowed
// (and the second clear is a no-op).
type backend struct {
	name string
	open func(b *testing.B) (*storeurl.Opened, func())
}

// The engines of the run, one per backend that has one.
var (
	memkvEngine    = &engine{name: "memkv", spec: "memkv"}
	memkvLatEngine = &engine{name: "memkv-lat", spec: "memkv", opts: storeurl.Options{
		MemkvReadLatency: clusterReadLatency, MemkvCommitLatency: clusterCommitLatency,
	}}
	redisEngine = &engine{name: "redis"} // spec set by TestMain once its server runs
	fdbEngine   = &engine{name: "fdb", spec: "fdb:" + os.Getenv("FDB_CLUSTER_FILE")}
	engines     = []*engine{memkvEngine, memkvLatEngine, redisEngine, fdbEngine}
)

// backends lists every store this machine can run, in table order.
func backends() []backend {
	bs := []backend{
		{"mem", openMem},
		{"memkv", memkvEngine.open},
		{"memkv-lat", memkvLatEngine.open},
		{"redis", openRedis},
	}
	if fdbstore.HasClient && os.Getenv("FDB_CLUSTER_FILE") != "" {
		bs = append(bs, backend{"fdb", fdbEngine.open})
	}
	return bs
}

// openMem opens a fresh memstore. Its data lives in the store value and
// nowhere else, so the new store is the fresh namespace and dropping it
// clears it.
func openMem(b *testing.B) (*storeurl.Opened, func()) {
	o, err := storeurl.Open(context.Background(), "mem", storeurl.Options{})
	if err != nil {
		b.Fatalf("open mem: %v", err)
	}
	return o, func() {}
}

// openSpec returns a constructor of a store of its own on a fresh engine,
// for benchmarks that measure a whole engine (BenchmarkHotRange's shard
// model): a new engine is empty, and dropping it frees it.
func openSpec(spec string, cfg storeurl.Options) func(b *testing.B) (*storeurl.Opened, func()) {
	return func(b *testing.B) (*storeurl.Opened, func()) {
		o, err := storeurl.Open(context.Background(), spec, cfg)
		if err != nil {
			b.Fatalf("open %s: %v", spec, err)
		}
		return o, func() { _ = o.Close() }
	}
}

// engine is one backend of the run as a cluster is one: opened once, at
// the first benchmark that needs it, shared by every invocation (each in
// a namespace of its own), and closed by TestMain.
type engine struct {
	name string // the backend's
	spec string
	opts storeurl.Options

	once sync.Once
	o    *storeurl.Opened
	err  error

	mu     sync.Mutex
	spaces []string // every namespace opened, for the final check
}

// The namespaces of this process are "bench-<run>-<n>": run is unique per
// process, so two runs on one cluster never share one, even when a killed
// run left its namespaces behind.
var (
	runID    = fmt.Sprintf("%d.%x", os.Getpid(), time.Now().UnixNano())
	spaceSeq atomic.Int64
)

// open returns a store in a fresh namespace of the engine and the function
// that clears the namespace; the returned Opened is the engine's with its
// Store and Instances replaced by the namespace's.
func (e *engine) open(b *testing.B) (*storeurl.Opened, func()) {
	e.once.Do(func() { e.o, e.err = storeurl.Open(context.Background(), e.spec, e.opts) })
	if e.err != nil {
		b.Fatalf("open %s (%s): %v", e.name, e.spec, e.err)
	}
	name := fmt.Sprintf("bench-%s-%d", runID, spaceSeq.Add(1))
	t, err := e.o.Namespace(name, e.opts.Lease)
	if err != nil {
		b.Fatalf("open namespace %s of %s: %v", name, e.name, err)
	}
	e.mu.Lock()
	e.spaces = append(e.spaces, name)
	e.mu.Unlock()
	ns := *e.o
	ns.Tenant = *t
	free := sync.OnceFunc(func() {
		if err := e.clear(context.Background(), name); err != nil {
			b.Errorf("clear namespace %s of %s: %v", name, e.name, err)
		}
	})
	b.Cleanup(free)
	return &ns, free
}

// clear deletes every key of namespace name: the FoundationDB subspace of
// the name (one range clear), or the Redis keys of its hash tag.
func (e *engine) clear(ctx context.Context, name string) error {
	switch h := e.o.Handle.(type) {
	case kv.DB:
		r := kv.PrefixRange([]byte(fdbstore.NamespacePrefix(name)))
		return h.Transact(ctx, func(tr kv.Transaction) error {
			tr.ClearRange(r)
			return nil
		})
	case redis.UniversalClient:
		return redisScan(ctx, h, name, func(keys []string) error {
			return h.Unlink(ctx, keys...).Err()
		})
	}
	return fmt.Errorf("%s has no key space to clear", e.o.Kind)
}

// leftover returns how many keys namespace name still holds (for Redis,
// at least one when it holds any).
func (e *engine) leftover(ctx context.Context, name string) (int, error) {
	switch h := e.o.Handle.(type) {
	case kv.DB:
		n := 0
		err := h.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
			kvs, err := tr.GetRange(kv.PrefixRange([]byte(fdbstore.NamespacePrefix(name))), kv.RangeOptions{Limit: 1}).Get()
			n = len(kvs)
			return err
		})
		return n, err
	case redis.UniversalClient:
		n := 0
		err := redisScan(ctx, h, name, func(keys []string) error { n += len(keys); return nil })
		return n, err
	}
	return 0, nil
}

// redisScan calls f with the keys of namespace name, a batch at a time.
// Every key of a redisstore namespace starts with its hash tag
// "{prefix}:", and the prefix holds no glob character (storeurl's
// encoding), so the pattern matches exactly those keys.
func redisScan(ctx context.Context, c redis.UniversalClient, name string, f func([]string) error) error {
	match := "{" + redisstore.NamespacePrefix("", name) + "}:*"
	var cursor uint64
	for {
		keys, next, err := c.Scan(ctx, cursor, match, 1000).Result()
		if err != nil {
			return err
		}
		if len(keys) > 0 {
			if err := f(keys); err != nil {
				return err
			}
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}

// checkCleared reports every namespace of the run that still holds keys,
// and keys that an engine holds outside the namespaces (memkv and the
// run's own redis-server hold nothing else).
func checkCleared() error {
	ctx := context.Background()
	var errs []error
	for _, e := range engines {
		if e.o == nil {
			continue
		}
		for _, name := range e.spaces {
			n, err := e.leftover(ctx, name)
			switch {
			case err != nil:
				errs = append(errs, fmt.Errorf("%s: read namespace %s: %w", e.name, name, err))
			case n > 0:
				errs = append(errs, fmt.Errorf("%s: namespace %s was not cleared", e.name, name))
			}
		}
		if e.o.Kind == "memkv" || e.o.Kind == "redis" {
			if n, err := engineKeys(ctx, e.o); err != nil || n > 0 {
				errs = append(errs, fmt.Errorf("%s: %d keys left in the engine (%v)", e.name, n, err))
			}
		}
	}
	return errors.Join(errs...)
}

// engineKeys counts every key of a memkv engine or a redis database.
func engineKeys(ctx context.Context, o *storeurl.Opened) (int, error) {
	if rc, ok := o.Handle.(redis.UniversalClient); ok {
		n, err := rc.DBSize(ctx).Result()
		return int(n), err
	}
	db, ok := o.Handle.(kv.DB)
	if !ok {
		return 0, fmt.Errorf("%s has no key space to count", o.Kind)
	}
	n := 0
	err := db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		kvs, err := tr.GetRange(kv.KeyRange{Begin: []byte{}, End: []byte{0xff}}, kv.RangeOptions{}).Get()
		n = len(kvs)
		return err
	})
	return n, err
}

// The redis-server shared by every benchmark of the run, started by
// TestMain; redisSkip says why there is none.
var redisSkip string

// openRedis opens redisstore in a fresh namespace on the run's server.
func openRedis(b *testing.B) (*storeurl.Opened, func()) {
	if redisEngine.spec == "" {
		b.Skip(redisSkip)
	}
	return redisEngine.open(b)
}

func TestMain(m *testing.M) {
	flag.Parse()
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		os.Exit(m.Run()) // no benchmarks asked for (go test ./...): start no server
	}
	stop := startRedis()
	if redisSkip != "" {
		fmt.Fprintf(os.Stderr, "ckptstore bench — redis skipped: %s\n", redisSkip)
	}
	if !fdbstore.HasClient || os.Getenv("FDB_CLUSTER_FILE") == "" {
		fmt.Fprintln(os.Stderr, "ckptstore bench — fdb skipped: needs -tags fdb and FDB_CLUSTER_FILE naming a cluster file")
	}
	start := time.Now()
	code := m.Run()
	if *twice && code == 0 {
		// testing.M.Run may run again (go.dev/issue/23129): the second
		// pass meets the engines as the first left them.
		fmt.Fprintf(os.Stderr, "ckptstore bench — first pass done in %v; the second pass runs on the same engines\n", time.Since(start).Round(time.Millisecond))
		code = m.Run()
	}
	if err := checkCleared(); err != nil {
		fmt.Fprintf(os.Stderr, "ckptstore bench — FAIL: the benchmarks left data behind:\n%v\n", err)
		code = max(code, 1)
	} else if *twice && code == 0 {
		spaces := 0
		for _, e := range engines {
			spaces += len(e.spaces)
		}
		fmt.Fprintf(os.Stderr, "ckptstore bench — guard passed: every family ran twice on persistent engines in %v; all %d namespaces cleared\n", time.Since(start).Round(time.Millisecond), spaces)
	}
	for _, e := range engines {
		if e.o != nil {
			_ = e.o.Close()
		}
	}
	stop()
	os.Exit(code)
}

// startRedis starts the run's redis-server when the binary is installed;
// it returns the function that stops it.
func startRedis() func() {
	srv, err := redistest.Launch()
	if err != nil {
		redisSkip = err.Error()
		return func() {}
	}
	redisEngine.spec = fmt.Sprintf("redis://%s/0", srv.Addr)
	return srv.Stop
}
