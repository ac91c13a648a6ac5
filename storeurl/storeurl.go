// Package storeurl opens a ckptstore store, and its instance store, from a
// URL. It is what loadgen, the benchmarks and ckptserver share, so that
// every one of them accepts the same forms:
//
//	mem | mem://                 memstore, in process
//	memkv | memkv://             fdbstore on memkv, the in-process FoundationDB engine
//	redis://… rediss://… unix://… redisstore on Redis (a go-redis URL; ?prefix=P sets the key prefix)
//	fdb:<cluster file>           fdbstore on FoundationDB (a build with -tags fdb)
//
// An Opened store also opens namespaces: tenants of one backend, each with
// its own key space (a Redis key prefix inside the hash tag, a FoundationDB
// subspace whose last element is the name, its own memstore). The map from
// a name to its key space is injective and prefix-free, so no name — not
// one with NUL, braces, glob characters, nor one that is a byte-prefix or
// the encoded prefix of another — reaches another tenant's keys.
package storeurl

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/redis/go-redis/v9"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/fdbstore/kv"
)

// ErrBadURL is wrapped by Open's errors for a URL or option it cannot
// accept (a usage error, as opposed to a store that cannot be reached),
// and by Namespace's for a name it cannot accept.
var ErrBadURL = errors.New("bad store URL")

// Forms lists the URL forms Open accepts, for usage messages and errors.
const Forms = "mem | mem:// | memkv | memkv:// | redis://[user:password@]host:port[/db][?prefix=P&<go-redis options>] | rediss://… | unix:///path/to/socket[?db=N&prefix=P] | fdb:<cluster file> (a build with -tags fdb)"

// MaxNamespaceBytes is the longest namespace name.
const MaxNamespaceBytes = 256

// Options are what Open passes to the backend besides the URL. The zero
// value is valid: the contract's default leases and a memkv without latency
// or faults.
type Options struct {
	// Lease is the lease timing (and clock) of the store Open returns.
	// Namespaces take their own (see Opened.Namespace).
	Lease ckptstore.Options
	// MemkvReadLatency is waited once per memkv read round; 0 = none.
	MemkvReadLatency time.Duration
	// MemkvCommitLatency is waited by every memkv commit that writes; 0 = none.
	MemkvCommitLatency time.Duration
	// MemkvNotCommittedRate is the probability that a memkv commit fails
	// with not_committed (1020), which fdbstore retries.
	MemkvNotCommittedRate float64
	// MemkvUnknownResultRate is the probability that a memkv commit ends
	// with commit_unknown_result (1021), half of them applied and half not:
	// the case that makes fdbstore's transactions prove idempotent.
	MemkvUnknownResultRate float64
}

// Opened is an open store, its instance store, and what a caller may need
// beside them.
type Opened struct {
	// Store is the store of the URL's own key space (the prefix it names,
	// or the backend's default).
	Store ckptstore.Store
	// Instances is the instance store beside Store.
	Instances *ckptstore.PortableInstances
	// Kind is the backend: "mem", "memkv", "redis" or "fdb".
	Kind string
	// Desc names the target for reports, without credentials.
	Desc string
	// Close releases the store's connections (and stops nothing else).
	Close func() error
	// ReadRounds returns the engine's read rounds so far, for memkv (whose
	// engine counts them); nil for every other backend.
	ReadRounds func() int64
	// SetLatency turns the modelled latency of memkv on or off, so a caller
	// can load data at full speed and then measure; nil for other backends.
	SetLatency func(on bool) error
	// KV is the key-value engine of memkv and fdb stores (nil for the
	// others), for tools and tests that inspect the raw key space.
	KV kv.DB
	// Redis is the client of redis stores (nil for the others).
	Redis redis.UniversalClient

	// namespace opens the store and instance store of one tenant; name is
	// already checked.
	namespace func(name string, lease ckptstore.Options) (ckptstore.Store, *ckptstore.PortableInstances, error)
}

// Namespace returns the store and instance store of the tenant name, built
// with the lease options lease. Redis and FoundationDB stores keep nothing
// in the process, so each call returns new values over the same keys; a
// memstore namespace is created by its first call (with that call's lease
// options) and every later call returns it. A name must be 1 to
// MaxNamespaceBytes bytes of valid UTF-8, else the error wraps ErrBadURL;
// invalid lease options wrap driver.ErrInvalidOptions.
func (o *Opened) Namespace(name string, lease ckptstore.Options) (ckptstore.Store, *ckptstore.PortableInstances, error) {
	if name == "" || len(name) > MaxNamespaceBytes || !utf8.ValidString(name) {
		return nil, nil, fmt.Errorf("%w: namespace %q: want 1 to %d bytes of valid UTF-8", ErrBadURL, name, MaxNamespaceBytes)
	}
	if _, err := lease.Resolve(); err != nil {
		return nil, nil, err
	}
	return o.namespace(name, lease)
}

// Ping checks that the store answers: one read of a head.
func (o *Opened) Ping(ctx context.Context) error {
	_, err := o.Store.GetHead(ctx, "storeurl-ping")
	return err
}

// Open opens the store that url names (see the package documentation for
// the forms). A URL or option it cannot accept fails with an error wrapping
// ErrBadURL that names the accepted forms; a store that cannot be reached
// fails with another error.
func Open(ctx context.Context, url string, opts Options) (*Opened, error) {
	if _, err := opts.Lease.Resolve(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadURL, err)
	}
	switch {
	case url == "mem" || strings.HasPrefix(url, "mem://"):
		if err := noOptions(url, "mem"); err != nil {
			return nil, err
		}
		return openMem(opts), nil
	case url == "memkv" || strings.HasPrefix(url, "memkv://"):
		if err := noOptions(url, "memkv"); err != nil {
			return nil, err
		}
		return openMemkv(opts)
	case strings.HasPrefix(url, "redis://"), strings.HasPrefix(url, "rediss://"), strings.HasPrefix(url, "unix://"):
		return openRedis(ctx, url, opts)
	case strings.HasPrefix(url, "fdb:"):
		return openFDB(ctx, strings.TrimPrefix(url, "fdb:"), opts)
	}
	return nil, badURL("%q is not a store URL", url)
}

// badURL is an ErrBadURL error that ends with the accepted forms.
func badURL(format string, args ...any) error {
	return fmt.Errorf("%w: %s; the forms are %s", ErrBadURL, fmt.Sprintf(format, args...), Forms)
}

// noOptions accepts exactly "kind" and "kind://": these backends take no
// host, path or options.
func noOptions(url, kind string) error {
	if url != kind && url != kind+"://" {
		return badURL("%q: %s takes no host, path or options", url, kind)
	}
	return nil
}

// memNamespaces keeps the memstores of a mem backend's namespaces: the
// store is its data, so a name must always get the same one.
type memNamespaces struct {
	mu sync.Mutex
	m  map[string]memNamespace
}

type memNamespace struct {
	store     ckptstore.Store
	instances *ckptstore.PortableInstances
}
