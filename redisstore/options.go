package redisstore

// Options and the key prefix. Options are resolved once, in New; a Store
// never changes them.

import (
	"fmt"
	"strings"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
)

// DefaultPrefix is the key prefix of a store whose Options.Prefix is empty.
const DefaultPrefix = "ckptstore"

// Defaults of the zero Options.
const (
	DefaultReplicaTimeout = time.Second
	DefaultOpTTL          = 10 * time.Minute
	DefaultPageSize       = 1000
	DefaultBatchSize      = 256
	// MaxBatchSize bounds Options.BatchSize: a batch is one script, and
	// the server serves nothing else while a script runs.
	MaxBatchSize = 4096
	// MaxPageSize bounds Options.PageSize: a page's keys are unpacked onto
	// the Lua stack of the server's script, which holds about 8000 values.
	MaxPageSize = 4096
)

// Options configure a Store. The zero value is valid: the server's clock,
// 120 s leases, prefix "ckptstore", no waiting for replicas.
type Options struct {
	// Options are the lease settings and the clock. A nil Now (the
	// default, and what a server should use) means the Redis server's
	// TIME, read inside every script that takes, renews or checks a
	// lease, so every process sharing the prefix judges each lease by one
	// clock whatever its own clock says. A non-nil Now is a test clock: its
	// reading is passed to the scripts instead, so tests can move time.
	// A Lease's ExpiresAt is on that clock (see AcquireWriter).
	ckptstore.Options

	// Prefix names the store's keys. Every key of the store lives under
	// the Redis Cluster hash tag {Prefix}, so all of them hash to one slot
	// and every script is legal on a cluster; different prefixes are
	// separate tenants on one server. Any string is allowed ('{', '}' and
	// '%' are escaped inside the tag). "" means DefaultPrefix.
	Prefix string

	// MinReplicas makes every write wait (WAIT) until at least this many
	// replicas have acknowledged it. A write that is not acknowledged in
	// time fails with an error wrapping ErrNotReplicated; it has happened
	// on the primary, and may be lost if the primary fails over before
	// the replicas catch up. It needs a *redis.Client (single server or
	// Sentinel) or a *redis.ClusterClient, whose connection to the key's
	// primary carries both the script and the WAIT. 0 means don't wait.
	MinReplicas int

	// ReplicaTimeout bounds the WAIT of a write when MinReplicas > 0. It
	// must be shorter than the client's ReadTimeout. 0 means
	// DefaultReplicaTimeout (1 s).
	ReplicaTimeout time.Duration

	// OpTTL is how long the server remembers the outcome of a successful
	// write under its random operation token, so that a retry of the same
	// call (go-redis resends a command whose reply was lost) returns that
	// outcome instead of failing or applying twice. It must outlast the
	// client's retries; each remembered write costs one small key for
	// OpTTL. 0 means DefaultOpTTL (10 min).
	OpTTL time.Duration

	// PageSize is how many blob keys ListBlobReferences reads per round trip,
	// at most MaxPageSize. 0 means DefaultPageSize (1000).
	PageSize int

	// BatchSize is how many checkpoints one script reads or deletes when a
	// call spans a whole thread: a page of List, a batch of DeleteThread
	// or of a long DeleteCheckpoints, a stretch of the prune's walk of the
	// chain. It bounds how long one call holds the server (Redis runs one
	// script at a time) whatever the size of the thread, at most
	// MaxBatchSize. 0 means DefaultBatchSize (256).
	BatchSize int
}

// resolve returns o with its defaults filled in, or an error wrapping
// driver.ErrInvalidOptions.
func (o Options) resolve() (Options, error) {
	lease, err := o.Options.Resolve()
	if err != nil {
		return o, err
	}
	o.Options = lease
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if o.MinReplicas < 0 || o.ReplicaTimeout < 0 || o.OpTTL < 0 || o.PageSize < 0 || o.BatchSize < 0 {
		return o, fmt.Errorf("%w: MinReplicas %d, ReplicaTimeout %v, OpTTL %v, PageSize %d and BatchSize %d must not be negative",
			driver.ErrInvalidOptions, o.MinReplicas, o.ReplicaTimeout, o.OpTTL, o.PageSize, o.BatchSize)
	}
	if o.PageSize > MaxPageSize {
		return o, fmt.Errorf("%w: PageSize %d is above %d", driver.ErrInvalidOptions, o.PageSize, MaxPageSize)
	}
	if o.BatchSize > MaxBatchSize {
		return o, fmt.Errorf("%w: BatchSize %d is above %d", driver.ErrInvalidOptions, o.BatchSize, MaxBatchSize)
	}
	if o.BatchSize == 0 {
		o.BatchSize = DefaultBatchSize
	}
	if o.ReplicaTimeout == 0 {
		o.ReplicaTimeout = DefaultReplicaTimeout
	}
	if o.OpTTL == 0 {
		o.OpTTL = DefaultOpTTL
	}
	if o.PageSize == 0 {
		o.PageSize = DefaultPageSize
	}
	return o, nil
}

// tagEscaper escapes a prefix for keyBase.
var tagEscaper = strings.NewReplacer("%", "%25", "{", "%7B", "}", "%7D")

// keyBase returns "{tag}:" for prefix: the hash tag that puts every key of
// one store in one cluster slot. Redis takes the tag from the first '{' to
// the next '}', so both are escaped, and '%' too so that the escaping is
// injective and two prefixes never share keys.
func keyBase(prefix string) string {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	esc := tagEscaper.Replace(prefix)
	return "{" + esc + "}:"
}

// NamespacePrefix is the store prefix of namespace name under
// the base prefix base ("" = DefaultPrefix): base + "/ns/" + the
// name with every byte outside [A-Za-z0-9._-] written as =XX (upper-case
// hex). keyBase puts the prefix inside the hash tag {…} (escaping '{',
// '}' and '%'), so every key of the namespace starts with "{prefix}:" and
// the tag ends at the only '}'. The =XX encoding is injective and leaves no
// glob character (* ? [ ] \) in the tag, so a KEYS or SCAN pattern built
// from one tenant's prefix cannot match another's keys.
func NamespacePrefix(base, name string) string {
	if base == "" {
		base = DefaultPrefix
	}
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(base) + 4 + 3*len(name))
	b.WriteString(base)
	b.WriteString("/ns/")
	for i := 0; i < len(name); i++ {
		c := name[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('=')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// ceilMillis returns d in whole milliseconds, rounded up so that a positive
// lease never rounds to zero.
func ceilMillis(d time.Duration) int64 {
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}
