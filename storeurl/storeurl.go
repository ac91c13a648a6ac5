// Package storeurl opens an engine handle from a URL: every contract's
// store (checkpoints, instances, persistence) of the URL's key space, and
// of each namespace. It is what loadgen, the benchmarks, ckptctl and
// ckptserver share, so that every one of them accepts the same forms. It is a registry, like
// database/sql's: each backend package registers its URL schemes from its
// init function, and a program links the backends it imports:
//
//	import (
//		_ "github.com/ckptstore/ckptstore/fdbstore"   // memkv, fdb:<cluster file>
//		_ "github.com/ckptstore/ckptstore/memstore"   // mem
//		_ "github.com/ckptstore/ckptstore/redisstore" // redis://, rediss://, unix://, redis+sentinel://, redis+cluster://
//	)
//
// The forms of the backends in this module:
//
//	mem | mem://                 memstore, in process
//	memkv | memkv://             fdbstore on memkv, the in-process FoundationDB engine
//	fdb:<cluster file>           fdbstore on FoundationDB (a build with -tags fdb)
//	redis://… rediss://… unix://… redisstore on one Redis server (a go-redis URL)
//	redis+sentinel://… rediss+sentinel://…  redisstore on the primary a Sentinel group names
//	redis+cluster://… rediss+cluster://…    redisstore on a Redis Cluster
//
// redisstore's package documentation gives the Redis forms in full; every
// one takes ?prefix=P (the key prefix), min_replicas=N and
// replica_timeout=D (Options.MinReplicas and ReplicaTimeout: each write
// waits until N replicas have it). Forms lists the forms of the schemes
// registered in the running program.
//
// An Opened handle also opens namespaces (Opened.Namespace): tenants of
// one backend, each a Tenant with every contract's store over its own key
// space (a Redis key prefix inside the hash tag, a FoundationDB subspace
// whose last element is the name, its own memstore). The map from a name
// to its key space is injective and prefix-free, so no name — not
// one with NUL, braces, glob characters, nor one that is a byte-prefix or
// the encoded prefix of another — reaches another tenant's keys.
package storeurl

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/contract"
	pdriver "github.com/ckptstore/ckptstore/persist/driver"
	"github.com/ckptstore/ckptstore/streams"
)

// ErrBadURL is wrapped by Open's errors for a URL or option it cannot
// accept (a usage error, as opposed to a store that cannot be reached),
// and by Namespace's for a name it cannot accept.
var ErrBadURL = errors.New("bad store URL")

// MaxNamespaceBytes is the longest namespace name: contract.MaxIDBytes,
// the one limit of every id, key, namespace and token.
const MaxNamespaceBytes = contract.MaxIDBytes

// Opener opens the store of url, whose scheme is one it was registered
// for. A URL or option it cannot accept fails with an error wrapping
// ErrBadURL (BadURL builds one); a store that cannot be reached fails with
// another error. opts has been checked: its lease options resolve.
type Opener func(ctx context.Context, url string, opts Options) (*Opened, error)

// registry is the schemes' openers and the forms they were registered
// with.
var registry struct {
	mu      sync.RWMutex
	openers map[string]Opener
	forms   []string
}

// Register makes Open hand the URLs of each scheme to open. A URL's scheme
// is what precedes its first ':', or the whole URL when it has none (so
// "mem" and "mem://" are both of scheme mem). form is the syntax of those
// URLs for usage messages, as Forms lists it. A backend package calls
// Register from its init function. Registering a scheme twice, or none,
// panics: two packages claiming one scheme is a build mistake.
func Register(form string, open Opener, schemes ...string) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if open == nil || len(schemes) == 0 {
		panic("storeurl: Register needs an opener and a scheme")
	}
	if registry.openers == nil {
		registry.openers = map[string]Opener{}
	}
	for _, s := range schemes {
		if _, dup := registry.openers[s]; dup {
			panic("storeurl: scheme " + s + " registered twice")
		}
		registry.openers[s] = open
	}
	registry.forms = append(registry.forms, form)
	slices.Sort(registry.forms)
}

// Forms lists the URL forms Open accepts in this program (those of the
// registered schemes), for usage messages and errors.
func Forms() string {
	registry.mu.RLock()
	defer registry.mu.RUnlock()
	if len(registry.forms) == 0 {
		return "(no store driver is linked into this program)"
	}
	return strings.Join(registry.forms, " | ")
}

// Options are what Open passes to the backend besides the URL. The zero
// value is valid: the contract's default leases and a memkv without latency
// or faults.
type Options struct {
	// Lease is the lease timing and the one lease clock of the tenant of
	// the URL's own key space (Opened.Tenant): its writer leases and its
	// lock leases alike. Namespaces take their own (see Opened.Namespace).
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
	// TracerProvider, when not nil, traces the engines' own work beneath
	// the caller's spans: a span per FoundationDB transaction attempt
	// (fdbstore, memkv included) and go-redis's spans (redisotel). nil:
	// no spans.
	TracerProvider trace.TracerProvider
}

// Tenant is every contract's store of one key space of an engine: a
// namespace, or the URL's own key space (Opened embeds it). Its stores
// share the key space and one lease clock, the Now of the lease options it
// was opened with: writer leases and lock leases are judged alike
// (docs/contract.md, "One lease clock").
type Tenant struct {
	// Store is the checkpoint store.
	Store *ckptstore.Store
	// Instances is the instance store beside Store.
	Instances *ckptstore.InstanceStore
	// Persistence is the persistence driver (runs, generation runs,
	// interrupts, metadata, artifacts, blob metadata, locks) beside the
	// checkpoints; nil when the engine keeps no persistence state (a caller
	// that needs it reports ErrNoPersistence). Its clock is the tenant's
	// lease clock: the lease options' Now, or when nil the engine's own
	// (the Redis server's TIME, time.Now elsewhere).
	Persistence pdriver.Driver
	// Streams is the Durable Streams driver of the tenant's streams; nil
	// when the engine keeps no streams (a caller that needs them reports
	// ErrNoStreams), and in Opened's own tenant: streams live in
	// namespaces only. The engine keeps one driver per name for the life
	// of the handle and hands it to every tenant of that name, so the
	// process's live readers wake on its own writes at once.
	Streams streams.Driver
}

// Opened is an open engine handle: the tenant of the URL's own key space,
// the hook that opens every other tenant (Namespace), and what a caller
// may need beside them.
type Opened struct {
	// Tenant is the URL's own key space (the prefix it names, or the
	// engine's default), opened with Options.Lease.
	Tenant
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
	// Handle is the backend's own client or engine, for tools and tests
	// that inspect the raw key space: a kv.DB (a *memkv.DB for memkv) for
	// the fdbstore forms, a redis.UniversalClient for the Redis forms, nil
	// for mem.
	Handle any
	// OpenTenant is the engine's one hook, set by its Opener and called by
	// Namespace (which checks name and lease first): it opens every
	// contract's store of the tenant name with the lease options lease,
	// whose Now is the tenant's one lease clock, its stream driver
	// included. An engine that keeps state in the process (memstore's
	// data; fdbstore's and redisstore's lock watchers, woken through the
	// persistence driver value; every engine's stream drivers, which wake
	// its live readers) keeps it per name and hands it to every later
	// call.
	OpenTenant func(name string, lease ckptstore.Options) (*Tenant, error)
}

// ErrNoPersistence is the error of a caller that needs a tenant's
// persistence driver from an engine that keeps none (Tenant.Persistence is
// nil). It wraps errors.ErrUnsupported.
var ErrNoPersistence = fmt.Errorf("storeurl: this store keeps no persistence state: %w", errors.ErrUnsupported)

// checkNamespace applies the namespace rule (contract.CheckNamespace) for
// Namespace; its error wraps ErrBadURL and
// contract.ErrInvalidNamespace.
func checkNamespace(name string) error {
	if err := contract.CheckNamespace(name); err != nil {
		return fmt.Errorf("%w: %w", ErrBadURL, err)
	}
	return nil
}

// DriverCache keeps one persistence driver per key space for an engine's
// OpenTenant: the first call for a name builds it with open, every
// later call returns it. Close closes those that have a Close method.
type DriverCache struct {
	mu      sync.Mutex
	drivers map[string]pdriver.Driver
	closed  bool
}

// Get returns the driver of name, building it with open on first use.
func (c *DriverCache) Get(name string, open func() (pdriver.Driver, error)) (pdriver.Driver, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errors.New("storeurl: the store is closed")
	}
	if d, ok := c.drivers[name]; ok {
		return d, nil
	}
	d, err := open()
	if err != nil {
		return nil, err
	}
	if c.drivers == nil {
		c.drivers = map[string]pdriver.Driver{}
	}
	c.drivers[name] = d
	return d, nil
}

// Close closes every cached driver that has a Close() error method (the
// Redis driver's lock subscription) and refuses later Gets.
func (c *DriverCache) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	var errs []error
	for _, d := range c.drivers {
		if cl, ok := d.(interface{ Close() error }); ok {
			errs = append(errs, cl.Close())
		}
	}
	c.drivers = nil
	return errors.Join(errs...)
}

// Namespace returns every contract's store of the tenant name, opened
// with the lease options lease (lease.Now is the tenant's one lease
// clock). Redis and FoundationDB keep their data on the server, so each
// call returns new stores over the same keys (and the persistence driver
// the first call for name made, which wakes this process's lock waiters);
// a memstore tenant is made by the first call for name, with that call's
// lease options, and every later call returns it. A name must be 1 to
// MaxNamespaceBytes bytes of valid UTF-8 (contract.CheckNamespace), else
// the error wraps ErrBadURL and contract.ErrInvalidNamespace; invalid lease
// options wrap driver.ErrInvalidOptions. It implements httpstore.Backend.
func (o *Opened) Namespace(name string, lease ckptstore.Options) (*Tenant, error) {
	if err := checkNamespace(name); err != nil {
		return nil, err
	}
	if _, err := lease.Resolve(); err != nil {
		return nil, err
	}
	if o.OpenTenant == nil {
		return nil, fmt.Errorf("storeurl: %s opens no namespaces: %w", o.Kind, errors.ErrUnsupported)
	}
	return o.OpenTenant(name, lease)
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
	scheme, _, _ := strings.Cut(url, ":")
	registry.mu.RLock()
	open := registry.openers[scheme]
	registry.mu.RUnlock()
	if open == nil {
		return nil, BadURL("%q is not a store URL", url)
	}
	return open(ctx, url, opts)
}

// BadURL is an error wrapping ErrBadURL, with the message of format and
// args followed by the accepted forms, for a driver's Opener to return.
func BadURL(format string, args ...any) error {
	return fmt.Errorf("%w: %s; the forms are %s", ErrBadURL, fmt.Sprintf(format, args...), Forms())
}

// NoOptions accepts exactly "kind" and "kind://", for drivers whose stores
// take no host, path or options.
func NoOptions(url, kind string) error {
	if url != kind && url != kind+"://" {
		return BadURL("%q: %s takes no host, path or options", url, kind)
	}
	return nil
}
