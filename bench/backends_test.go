package bench

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ckptstore/ckptstore/fdbstore" // memkv, fdb: (and HasClient)
	"github.com/ckptstore/ckptstore/internal/redistest"
	_ "github.com/ckptstore/ckptstore/memstore"   // mem
	_ "github.com/ckptstore/ckptstore/redisstore" // redis://
	"github.com/ckptstore/ckptstore/storeurl"
)

// The latency model of a real FoundationDB cluster for memkv: one
// millisecond per read round trip, three per commit (a commit's
// resolution and log fsyncs across the transaction subsystem).
const (
	clusterReadLatency   = time.Millisecond
	clusterCommitLatency = 3 * time.Millisecond
)

// backend is one store under benchmark: a name and a constructor that
// returns an empty store and a function that frees its data.
type backend struct {
	name string
	open func(b *testing.B) (*storeurl.Opened, func())
}

// backends lists every store this machine can run, in table order.
func backends() []backend {
	bs := []backend{
		{"mem", openSpec("mem", storeurl.Options{})},
		{"memkv", openSpec("memkv", storeurl.Options{})},
		{"memkv-lat", openSpec("memkv", storeurl.Options{
			MemkvReadLatency: clusterReadLatency, MemkvCommitLatency: clusterCommitLatency,
		})},
		{"redis", openRedis},
	}
	if file := os.Getenv("FDB_CLUSTER_FILE"); fdbstore.HasClient && file != "" {
		bs = append(bs, backend{"fdb", openSpec("fdb:"+file, storeurl.Options{})})
	}
	return bs
}

// openSpec returns a constructor of the store spec names.
func openSpec(spec string, cfg storeurl.Options) func(b *testing.B) (*storeurl.Opened, func()) {
	return func(b *testing.B) (*storeurl.Opened, func()) {
		o, err := storeurl.Open(context.Background(), spec, cfg)
		if err != nil {
			b.Fatalf("open %s: %v", spec, err)
		}
		return o, func() { _ = o.Close() }
	}
}

// The redis-server shared by every benchmark of the run, started by
// TestMain; redisAddr is "" when none could be started, and redisSkip
// says why.
var (
	redisAddr string
	redisSkip string
	prefixSeq int
)

// openRedis opens redisstore on the run's server under a fresh prefix;
// freeing it flushes the server (it serves this process alone).
func openRedis(b *testing.B) (*storeurl.Opened, func()) {
	if redisAddr == "" {
		b.Skip(redisSkip)
	}
	prefixSeq++
	spec := fmt.Sprintf("redis://%s/0?prefix=bench%d", redisAddr, prefixSeq)
	o, err := storeurl.Open(context.Background(), spec, storeurl.Options{})
	if err != nil {
		b.Fatalf("open %s: %v", spec, err)
	}
	return o, func() {
		c := redis.NewClient(&redis.Options{Addr: redisAddr})
		_ = c.FlushDB(context.Background()).Err()
		_ = c.Close()
		_ = o.Close()
	}
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
	code := m.Run()
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
	redisAddr = srv.Addr
	return srv.Stop
}
