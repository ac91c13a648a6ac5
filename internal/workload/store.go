package workload

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/memstore"
)

// ErrBadSpec is wrapped by Open's errors for a store spec or option it
// cannot accept (a usage error, as opposed to a store that is unreachable).
var ErrBadSpec = errors.New("bad store spec")

// StoreConfig holds the settings Open passes to the backend. The zero
// value is valid: the contract's default leases and a memkv without
// latency or faults.
type StoreConfig struct {
	// Lease is the lease timing (and clock) of the store.
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

// Opened is an open store and what its caller may need beside it.
type Opened struct {
	// Store is the store.
	Store ckptstore.Store
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
}

// Specs lists the store specs Open accepts, for usage messages.
const Specs = "mem | memkv | redis://[:password@]host:port[/db][?prefix=P] | fdb:<cluster file>"

// Open opens the store that spec names:
//
//	mem                         the in-memory store (memstore)
//	memkv                       fdbstore on memkv, the in-process FoundationDB engine
//	redis://host:port/db?...    redisstore on a Redis server (go-redis URL; prefix=P sets the key prefix)
//	fdb:<cluster file>          fdbstore on a FoundationDB cluster (needs a build with -tags fdb)
//
// A spec or option it cannot accept fails with an error wrapping
// ErrBadSpec; an unreachable store fails with another error.
func Open(ctx context.Context, spec string, cfg StoreConfig) (*Opened, error) {
	if _, err := cfg.Lease.Resolve(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadSpec, err)
	}
	switch {
	case spec == "mem":
		return openMem(cfg)
	case spec == "memkv":
		return openMemkv(ctx, cfg)
	case strings.HasPrefix(spec, "redis://"), strings.HasPrefix(spec, "rediss://"), strings.HasPrefix(spec, "unix://"):
		return openRedis(ctx, spec, cfg)
	case strings.HasPrefix(spec, "fdb:"):
		return openFDB(ctx, strings.TrimPrefix(spec, "fdb:"), cfg)
	}
	return nil, fmt.Errorf("%w: %q is not one of %s", ErrBadSpec, spec, Specs)
}

func openMem(cfg StoreConfig) (*Opened, error) {
	return &Opened{
		Store: memstore.New(cfg.Lease),
		Kind:  "mem",
		Desc:  "mem (memstore, in process)",
		Close: func() error { return nil },
	}, nil
}
