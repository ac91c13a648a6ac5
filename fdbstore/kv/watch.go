package kv

import "context"

// CodeTooManyWatches is FoundationDB's too_many_watches: a Watch past the
// limit of outstanding watches.
const CodeTooManyWatches = 1032

// DefaultMaxWatches is FoundationDB's default limit of outstanding watches
// per database handle.
const DefaultMaxWatches = 10_000

// Watcher is a DB with FoundationDB's watches.
type Watcher interface {
	// Watch returns a channel closed after a commit that changes key
	// (its value, or whether it exists), or when ctx ends. It may also
	// close spuriously; a caller reads again either way. A change that
	// commits after Watch returns is never missed. Past the limit of
	// outstanding watches it fails with CodeTooManyWatches.
	Watch(ctx context.Context, key []byte) (<-chan struct{}, error)
}

func init() { messages[CodeTooManyWatches] = "Too many watches are currently set" }
