// Package fdbstore is the FoundationDB engine: the ckptstore driver (every
// method of driver.Store; New returns the ckptstore.Store over it), an
// instance store, and the persistence driver (Persistence, persist.go),
// written against the transaction interface of package kv,
// so the same code runs on a real cluster (kv/fdbkv, build tag fdb) and on
// kv/memkv, the in-process engine the tests use. docs/contract.md gives
// the rules and the check order of every method.
//
// # Key layout
//
// Every key is a FoundationDB tuple-layer key under the raw prefix P
// (Options.Prefix; the zero value is the tuple ("ckptstore")), encoded by
// internal/tuple, byte for byte as the official tuple package, so that
// subspace.FromBytes(P).Unpack reads them back. B(x) is the bucket of an id
// (16 bits of its FNV-1a hash, keys.go), and T is (P, "t", B(thread), thread):
//
//	(P, "i", B(id), id)              → tuple(thread, createdAt, copied)      checkpoint index
//	(P, "i", B(id), id, i)           → chunk i of the checkpoint's value     the copy (when copied = 1)
//	(T, "c", createdAt, id, i)       → chunk i of the checkpoint's value     (codec.go)
//	(T, "p", id)                     → tuple(parent, createdAt, size, blobs) chain link
//	(T, "h")                         → head id (UTF-8 bytes)                 absent = no head
//	(T, "l")                         → tuple(token, fence, unixSec, nanos)   the writer lease
//	(T, "m", i)                      → chunk i of the thread's transcript    absent = none ("[]")
//	(T, "o", epoch, token)           → tuple(wallMillis) kind result         a write that committed
//	(P, "x", thread)                 → ""                                    the thread is listed
//	(P, "r", blobKey)                → reference count, int64 little endian
//	(P, "n", key)                    → tuple(…) an InstanceRecord (instance.go)
//
// The persistence keeps its keys under its own prefix Q (persist_keys.go),
// beside P: the default store's P and Q are ("ckptstore") and
// ("ckptstore.persist"), and a namespace's are the two halves of its
// subspace ("ckptstore.ns", name) (keys.go). Check walks Q
// (Options.PersistPrefix) after P, so the engine has one Check.
//
// This layout (buckets, copies, per-thread markers, listed keys) replaced
// the first one, which had none of them; this package does not read a
// store written in the first layout: copy it with ckptctl copy.
//
// A checkpoint's value is built from the parts of internal/cpcodec that
// redisstore stores too (codec.go: version, ids, header, body,
// conversation); it keeps createdAt's exact bits.
//
// createdAt in keys is the float64 with -0 mapped to +0 (sortKey); the
// tuple encoding orders doubles numerically, and strings by their UTF-8
// bytes, so the range (T, "c") holds the thread's checkpoints in List
// order: List is one range read, and a ListPage is one range read of
// Limit+1 pairs from its cursor's position.
//
// # Read rounds
//
// The value of a checkpoint is stored twice: under its thread, where List
// and ListPage read it in order, and under its index key, where Get reads
// it by id. That doubles the bytes of an Append (a 2 KB checkpoint writes
// about 5.3 KB instead of 2.9 KB) and is the price of one read round for
// Get: with one copy, Get must read the index before it knows where the
// chunks are. A checkpoint whose copy would not fit in the transaction
// (an encoding above about 4.4 MB) is stored once (copied = 0), and its Get
// takes a second round; Options.SingleCopy stores every checkpoint once,
// for deployments that would rather save the write bytes than the round.
// Rounds per operation, asserted in the tests:
//
//	Get, ListPage, Threads, LoadThread, Head, List         1
//	Restore (Head + Get of the head)                       1 when the head is the thread's newest checkpoint
//	                                                       (as a harness makes it) of at most 400 KB; else 2
//	Append, DeleteHead, ForkFromCheckpoint,
//	AcquireWriter, Import, one batch of DeleteThread       1, then the commit
//
// # No key range that every writer shares
//
// FoundationDB splits the key space into shards by key ranges; a range
// that every write touches lands on one storage team and caps the whole
// store's write rate. So:
//
//   - Op markers live under their thread, (T, "o", epoch, token); a
//     thread's writes clear its own expired markers with one blind range
//     clear (markers.go). The first layout's one global range (P, "o",
//     wallMillis, token), which grew at its end in time order, is gone;
//     Check reports any key left in it.
//   - Index and thread keys start with the id's bucket, so that ids made
//     in time order (ULIDs, UUIDv7, counters) spread over the key space
//     instead of piling up at its end.
//   - The listed key (P, "x", thread) is ordered by thread id, because
//     Threads pages in byte order; it is written only when a thread goes
//     from empty to not empty and back (the first Append, SaveThread,
//     fork, import; DeleteHead of the root, DeleteThread), never on the
//     Append path of a thread that has a head.
//   - A blob count (P, "r", blobKey) is shared by every thread whose
//     checkpoints hold that blob: a blob in every thread's checkpoints is
//     one key that every Append moves. That is inherent to sharing
//     content; the counts change only by atomic Add and CompareAndClear,
//     which take no read conflict, so the key is hot for its storage team
//     but never a source of conflicts. Content-hash keys spread the
//     counts of unshared blobs uniformly.
//
// # Invariants
//
//   - A checkpoint id has an index key iff the checkpoint is stored; then
//     its chunks and its link key exist under the indexed thread and
//     createdAt, and no other thread has them; with copied = 1 its value is
//     under the index key too, chunk for chunk. Chunks are numbered from 0
//     without gaps; each is at most kv.MaxValueSize bytes.
//   - A thread's listed key exists iff the thread has a head, a checkpoint
//     or a transcript. Every write that can change one of the three keeps
//     it exact in the same transaction (DeleteHead reads the thread's
//     first links and transcript chunk to know whether deleting a root
//     empties it).
//   - The reference count of a blob key equals the number of stored
//     checkpoints whose BlobKeys contain it, and the key is absent rather
//     than 0. Counts change only by Add(±1) followed, on −1, by
//     CompareAndClear(0): atomic operations that take no read conflict, so
//     writes on different threads that share blobs never conflict.
//   - The fence in a thread's lease value only grows (an absent lease key
//     is fence 0): a release keeps it with an empty token, an expired
//     lease keeps it until replaced, and a new lease takes fence + 1.
//     DeleteThread leaves the lease, and the thread's markers, in place.
//   - Every write of the contract (Append, DeleteHead, one transaction of
//     DeleteCheckpoints or DeleteThread, ForkFromCheckpoint,
//     AcquireWriter, RenewWriter, Import) reads and checks everything it depends on
//     inside one serializable transaction, and writes an op marker under
//     its thread in that same transaction. The token is fresh per call, or
//     the caller's (ckptstore.WithOpToken) for Append, DeleteHead,
//     ForkFromCheckpoint and AcquireWriter, whose lease then has the token
//     as its owner token. When a retry after commit_unknown_result, or a
//     caller's repeat within markerTTL, finds its marker, the earlier
//     attempt committed and the call reports that success instead of
//     re-running checks that its own write would now fail
//     (ErrDuplicateID, ErrConflict, ErrNotHead, ErrWriterConflict,
//     ErrForkDestinationNotEmpty). Renew writes a marker with its new
//     expiry too, so that a retry reports the renewal that committed
//     rather than renewing again (which no single renewal explains, as
//     the linearizability test found). SaveThread and Release are blind
//     or self-checking writes, idempotent by themselves.
//
// # Limits
//
// A checkpoint must fit in one transaction: its Append (all chunks, the
// copy when kept, index, link, head, +1 per distinct blob key) and its
// deletion (−1 and compare-and-clear per blob key) must each stay under
// MaxTransactionBytes, 9,000,000 of FoundationDB's 10,000,000, counting
// keys, values and conflict ranges (cost.go). In practice that is an
// encoding (conversation, files and artifacts together) of up to about
// 8.9 MB less about 0.35 KB per distinct blob key, and at most about
// 13,000 distinct blob keys; larger checkpoints fail with ErrInvalidEntry
// before any write. A transcript must fit in one transaction too, and so
// must a fork, which writes the conversation twice (the root and the
// destination's transcript): a checkpoint whose encoding is above about
// 4.4 MB cannot be forked (ErrInvalidEntry, nothing written). Thread
// and checkpoint ids and instance keys are limited to MaxIDBytes bytes (the
// contract's driver.MaxIDBytes), so that every key stays under
// FoundationDB's 10,000 bytes: ckptstore.Store refuses a longer id with
// ErrInvalidID before this driver sees it; called directly, the driver
// refuses it in writes and finds nothing for it in reads.
//
// DeleteCheckpoints deletes in transactions of at most Options.PruneBatch
// checkpoints (and MaxTransactionBytes). A prune that fits in one
// transaction is atomic; a longer one deletes from the far end of the
// chain, each transaction checking the lease again and recomputing the
// chain, so after a failure the chain is intact from the head and the
// call can simply be repeated. DeleteThread deletes from the oldest end in
// the same batches, and the batch that finds nothing left clears the head
// and the transcript. An Import batch is one transaction: a batch that
// would pass MaxTransactionBytes fails with ErrInvalidEntry before any
// write, so importers send batches of a few MB. ListBlobReferences reads
// Options.BlobPage keys per transaction, so it is not a snapshot of one
// instant when there are more keys than that.
package fdbstore

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/fdbstore/internal/tuple"
	"github.com/ckptstore/ckptstore/fdbstore/kv"
)

// Limits; see the package documentation.
const (
	// MaxTransactionBytes is the size budget of one write transaction, kept
	// under FoundationDB's 10,000,000-byte limit with room for overhead.
	MaxTransactionBytes = 9_000_000
	// MaxIDBytes is the longest thread id, checkpoint id or instance key:
	// the contract's limit, which ckptstore.Store enforces on every engine
	// before its driver; this driver checks it again for direct callers.
	MaxIDBytes = driver.MaxIDBytes
	// MaxPrefixBytes is the longest Options.Prefix: room for the prefix of
	// any namespace (NamespacePrefix of a name of up to
	// MaxIDBytes, whose NUL bytes pack to two), with every key of the
	// layout still well inside FoundationDB's 10 kB key limit.
	MaxPrefixBytes = 3 * MaxIDBytes
	// DefaultPruneBatch is the number of checkpoints one prune transaction
	// deletes at most, when Options.PruneBatch is 0.
	DefaultPruneBatch = 1000
	// DefaultBlobPage is the number of reference keys one ListBlobReferences
	// transaction reads, when Options.BlobPage is 0.
	DefaultBlobPage = 10_000
)

// DefaultPrefix is the key prefix when Options.Prefix is "": the packed
// tuple ("ckptstore").
const DefaultPrefix = "\x02ckptstore\x00"

// Options configure a Store. The zero value is valid.
type Options struct {
	// Options are the lease settings and the clock for every lease
	// decision; the zero value is a 120 s lease on the system clock.
	ckptstore.Options
	// Prefix is prepended verbatim to every key (it is a raw prefix, like
	// a subspace's or a directory's, not a tuple element); "" means
	// DefaultPrefix. It may not start with 0xff (the system keys) or be
	// longer than MaxPrefixBytes. Stores with the same prefix share data.
	Prefix string
	// PersistPrefix is the prefix of the persistence that belongs with
	// this store (its PersistenceOptions.Prefix), whose keys Check walks
	// and reports too, so that one Check covers the engine's whole state.
	// "" means DefaultPersistPrefix when Prefix is the default, and no
	// persistence otherwise. It follows Prefix's rules and may not overlap
	// it (neither a prefix of the other).
	PersistPrefix string
	// PruneBatch is the most checkpoints one DeleteCheckpoints transaction
	// deletes; 0 means DefaultPruneBatch.
	PruneBatch int
	// BlobPage is how many reference keys one ListBlobReferences transaction
	// reads; 0 means DefaultBlobPage.
	BlobPage int

	// SingleCopy stores each checkpoint's value once, under its thread,
	// without the copy under its index: an Append writes about half the
	// bytes (a 2 KB checkpoint: 2.9 KB instead of 5.3 KB), and Get,
	// ForkFromCheckpoint and DeleteHead take a second read round. Restore,
	// List and ListPage are not affected. Stores that share a prefix may
	// differ in it: every read handles both forms.
	SingleCopy bool

	// wallClock replaces time.Now for op markers in tests, which cannot
	// wait markerTTL; nil = time.Now.
	wallClock func() time.Time
}

// Driver is the FoundationDB driver.Store. It is safe for concurrent use;
// several Drivers (in several processes) may share one prefix of one
// database.
type Driver struct {
	db   kv.DB
	opts Options
	k    keys
}

var _ driver.Store = (*Driver)(nil)

// New returns the portable store over a Driver over db. It fails, with an
// error wrapping driver.ErrInvalidOptions, when the lease options or the
// prefix are invalid, or the batch sizes negative.
func New(db kv.DB, opts Options) (*ckptstore.Store, error) {
	d, err := NewDriver(db, opts)
	if err != nil {
		return nil, err
	}
	return ckptstore.New(d), nil
}

// NewDriver returns the driver over db that New wraps, for Check, Restore
// and the tests that count its rounds. It fails as New does.
func NewDriver(db kv.DB, opts Options) (*Driver, error) {
	if db == nil {
		return nil, fmt.Errorf("%w: fdbstore: db is nil", driver.ErrInvalidOptions)
	}
	lease, err := opts.Options.Resolve()
	if err != nil {
		return nil, err
	}
	opts.Options = lease
	prefix, err := resolvePrefix(opts.Prefix)
	if err != nil {
		return nil, err
	}
	opts.Prefix = prefix
	if opts.PersistPrefix == "" && prefix == DefaultPrefix {
		opts.PersistPrefix = DefaultPersistPrefix
	}
	if q := opts.PersistPrefix; q != "" {
		if _, err := resolvePrefix(q); err != nil {
			return nil, err
		}
		if strings.HasPrefix(q, prefix) || strings.HasPrefix(prefix, q) {
			return nil, fmt.Errorf("%w: fdbstore: the persistence prefix %q overlaps the prefix %q", driver.ErrInvalidOptions, q, prefix)
		}
	}
	if opts.PruneBatch < 0 || opts.BlobPage < 0 {
		return nil, fmt.Errorf("%w: fdbstore: PruneBatch %d and BlobPage %d must not be negative", driver.ErrInvalidOptions, opts.PruneBatch, opts.BlobPage)
	}
	if opts.PruneBatch == 0 {
		opts.PruneBatch = DefaultPruneBatch
	}
	if opts.BlobPage == 0 {
		opts.BlobPage = DefaultBlobPage
	}
	return &Driver{db: db, opts: opts, k: newKeys([]byte(prefix))}, nil
}

func resolvePrefix(p string) (string, error) {
	switch {
	case p == "":
		return DefaultPrefix, nil
	case p[0] == 0xff:
		return "", fmt.Errorf("%w: fdbstore: prefix %q starts with 0xff, the system key space", driver.ErrInvalidOptions, p)
	case len(p) > MaxPrefixBytes:
		return "", fmt.Errorf("%w: fdbstore: prefix is %d bytes, more than %d", driver.ErrInvalidOptions, len(p), MaxPrefixBytes)
	}
	return p, nil
}

// Options returns the store's options with their defaults filled in.
func (s *Driver) Options() Options { return s.opts }

// checkIDLengths returns ErrInvalidID for the first id longer than
// MaxIDBytes. Writes call it before the shared validation, which checks the
// same ids for emptiness and UTF-8: either way the error is ErrInvalidID.
func checkIDLengths(ids ...idArg) error {
	for _, id := range ids {
		if len(id.id) > MaxIDBytes {
			return fmt.Errorf("%w: %s is %d bytes, more than the limit of %d", ckptstore.ErrInvalidID, id.what, len(id.id), MaxIDBytes)
		}
	}
	return nil
}

// idArg is an id argument and what it is, for error messages.
type idArg struct{ what, id string }

func named(what, id string) idArg { return idArg{what, id} }

// Get implements driver.Store: one range read, of the id's index key
// and the copy of the value under it. A checkpoint too large to be stored
// twice in one transaction has no copy; its Get reads the chunks under its
// thread in a second round.
func (s *Driver) Get(ctx context.Context, id string) (*ckptstore.Checkpoint, error) {
	if len(id) > MaxIDBytes {
		return nil, nil // never stored: writes reject it
	}
	var out *ckptstore.Checkpoint
	err := s.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		var err error
		out, _, err = s.readByID(tr, id, s.startByID(tr, id))
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// startByID starts reading the index key of id and its copy.
func (s *Driver) startByID(tr kv.ReadTransaction, id string) kv.FutureRange {
	return tr.GetRange(s.k.idRange(id), kv.RangeOptions{})
}

// readByID waits for what startByID started and returns the checkpoint
// and its index, nil when id is not stored. Without a copy it reads the
// chunks under the thread, a second round.
func (s *Driver) readByID(tr kv.ReadTransaction, id string, f kv.FutureRange) (*ckptstore.Checkpoint, *indexValue, error) {
	cps, idxs, err := s.readByIDs(tr, []string{id}, []kv.FutureRange{f})
	if err != nil {
		return nil, nil, err
	}
	return cps[0], idxs[0], nil
}

// readByIDs is readByID for several ids at once: the checkpoints stored
// without a copy are read under their threads in one second round.
func (s *Driver) readByIDs(tr kv.ReadTransaction, ids []string, fs []kv.FutureRange) ([]*ckptstore.Checkpoint, []*indexValue, error) {
	cps := make([]*ckptstore.Checkpoint, len(ids))
	idxs := make([]*indexValue, len(ids))
	pending := map[int]pendingCheckpoint{}
	for i, id := range ids {
		kvs, err := fs[i].Get()
		if err != nil {
			return nil, nil, err
		}
		if len(kvs) == 0 {
			continue
		}
		ik := s.k.index(id)
		if string(kvs[0].Key) != string(ik) {
			return nil, nil, fmt.Errorf("%w: copy of checkpoint %q without its index", ErrCorrupt, id)
		}
		idx, err := decodeIndex(kvs[0].Value)
		if err != nil {
			return nil, nil, err
		}
		idxs[i] = &idx
		if !idx.copied {
			pending[i] = s.readCheckpoint(tr, idx.thread, idx.createdAt, id)
			continue
		}
		chunks := kvs[1:]
		if err := checkChunks(id, chunks, ik); err != nil {
			return nil, nil, err
		}
		if len(chunks) == 0 {
			return nil, nil, fmt.Errorf("%w: checkpoint %q has an empty copy", ErrCorrupt, id)
		}
		if cps[i], err = assemble(id, chunks); err != nil {
			return nil, nil, err
		}
	}
	for i, pc := range pending {
		cp, err := pc.get()
		if err != nil {
			return nil, nil, err
		}
		if cp == nil {
			return nil, nil, fmt.Errorf("%w: checkpoint %q is indexed but has no data", ErrCorrupt, ids[i])
		}
		cps[i] = cp
	}
	for i, cp := range cps {
		if cp != nil && cp.ThreadID != idxs[i].thread {
			return nil, nil, fmt.Errorf("%w: checkpoint %q is indexed in thread %q but holds %q", ErrCorrupt, ids[i], idxs[i].thread, cp.ThreadID)
		}
	}
	return cps, idxs, nil
}

// checkChunks checks that chunks are the keys (p, 0), (p, 1), … in order.
func checkChunks(id string, chunks []kv.KeyValue, p []byte) error {
	for i, c := range chunks {
		t, err := suffix(c.Key, p)
		if err != nil {
			return err
		}
		if n, ok := elem[int64](t, 0, 1); !ok || n != int64(i) {
			return fmt.Errorf("%w: checkpoint %q: chunk %d has key %x", ErrCorrupt, id, i, c.Key)
		}
	}
	return nil
}

// pendingCheckpoint is a checkpoint being read: the range future of its
// chunks.
type pendingCheckpoint struct {
	f      kv.FutureRange
	prefix []byte
	id     string
}

// readCheckpoint starts reading the chunks of one checkpoint.
func (s *Driver) readCheckpoint(tr kv.ReadTransaction, thread string, createdAt float64, id string) pendingCheckpoint {
	p := s.k.checkpointPrefix(thread, createdAt, id)
	return pendingCheckpoint{f: tr.GetRange(rangeOf(p), kv.RangeOptions{}), prefix: p, id: id}
}

// get waits for the chunks and decodes them; nil when there are none.
func (pc pendingCheckpoint) get() (*ckptstore.Checkpoint, error) {
	kvs, err := pc.f.Get()
	if err != nil || len(kvs) == 0 {
		return nil, err
	}
	if err := checkChunks(pc.id, kvs, pc.prefix); err != nil {
		return nil, err
	}
	return assemble(pc.id, kvs)
}

// assemble decodes the chunks of one checkpoint, in order.
func assemble(id string, chunks []kv.KeyValue) (*ckptstore.Checkpoint, error) {
	enc := chunks[0].Value
	if len(chunks) > 1 {
		n := 0
		for _, p := range chunks {
			n += len(p.Value)
		}
		enc = make([]byte, 0, n)
		for _, p := range chunks {
			enc = append(enc, p.Value...)
		}
	}
	cp, err := decodeCheckpoint(enc)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %q: %w", id, err)
	}
	if cp.ID != id {
		return nil, fmt.Errorf("%w: the data of checkpoint %q holds %q", ErrCorrupt, id, cp.ID)
	}
	return cp, nil
}

// List implements driver.Store: one range read of the thread's chunks,
// which the key layout keeps in List order.
func (s *Driver) List(ctx context.Context, threadID string) ([]*ckptstore.Checkpoint, error) {
	if len(threadID) > MaxIDBytes {
		return []*ckptstore.Checkpoint{}, nil
	}
	p := s.k.dataPrefix(threadID)
	var kvs []kv.KeyValue
	err := s.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		var err error
		kvs, err = tr.GetRange(rangeOf(p), kv.RangeOptions{}).Get()
		return err
	})
	if err != nil {
		return nil, err
	}
	groups, err := groupChunks(kvs, p, false)
	if err != nil {
		return nil, err
	}
	return decodeGroups(groups)
}

// chunkGroup is the chunks of one checkpoint in a range read of a
// thread's data, in chunk order.
type chunkGroup struct {
	createdAt float64 // sortKey form
	id        string
	chunks    []kv.KeyValue
	// complete: the group provably holds every chunk. Forward groups are
	// marked complete (a later group proves it, or the caller knows from
	// the read's limit whether the last one may be cut); a reverse group
	// is complete once its chunk 0 was read.
	complete  bool
	lastChunk int64 // the number of the chunk read last
}

// groupChunks splits a range read of the thread data under p (forward or
// reverse) into checkpoints. Keys are (createdAt, id, chunk) after p; the
// chunks of one checkpoint are adjacent and numbered from 0. Grouping
// compares parsed ids: the key of id "a" is a byte prefix of the key of
// "a\x00". The last group is marked complete only when it provably is (in
// reverse, its chunk 0 was read); the caller decides from the read's limit.
func groupChunks(kvs []kv.KeyValue, p []byte, reverse bool) ([]chunkGroup, error) {
	var out []chunkGroup
	for _, kvp := range kvs {
		t, err := suffix(kvp.Key, p)
		if err != nil {
			return nil, err
		}
		ca, ok0 := elem[float64](t, 0, 3)
		id, ok1 := elem[string](t, 1, 3)
		n, ok2 := elem[int64](t, 2, 3)
		if !ok0 || !ok1 || !ok2 {
			return nil, fmt.Errorf("%w: checkpoint key %x", ErrCorrupt, kvp.Key)
		}
		last := len(out) - 1
		if last < 0 || out[last].id != id || out[last].createdAt != ca {
			if last >= 0 && !out[last].complete && reverse {
				return nil, fmt.Errorf("%w: checkpoint %q lacks its first chunk", ErrCorrupt, out[last].id)
			}
			if !reverse && n != 0 {
				return nil, fmt.Errorf("%w: checkpoint key %x out of sequence", ErrCorrupt, kvp.Key)
			}
			out = append(out, chunkGroup{createdAt: ca, id: id, complete: !reverse})
			last++
		} else {
			want := out[last].lastChunk + 1
			if reverse {
				want = out[last].lastChunk - 1
			}
			if n != want {
				return nil, fmt.Errorf("%w: checkpoint key %x out of sequence", ErrCorrupt, kvp.Key)
			}
		}
		out[last].chunks = append(out[last].chunks, kvp)
		out[last].lastChunk = n
		if reverse && n == 0 {
			out[last].complete = true
		}
	}
	if reverse {
		for i := range out {
			slices.Reverse(out[i].chunks)
		}
	}
	return out, nil
}

// decodeGroups decodes complete groups into checkpoints.
func decodeGroups(groups []chunkGroup) ([]*ckptstore.Checkpoint, error) {
	out := make([]*ckptstore.Checkpoint, 0, len(groups))
	for _, g := range groups {
		cp, err := assemble(g.id, g.chunks)
		if err != nil {
			return nil, err
		}
		out = append(out, cp)
	}
	return out, nil
}

// elem returns element i of t as a T, when t has n elements.
func elem[T any](t tuple.Tuple, i, n int) (T, bool) {
	var zero T
	if len(t) != n {
		return zero, false
	}
	v, ok := t[i].(T)
	return v, ok
}

// GetHead implements driver.Store.
func (s *Driver) GetHead(ctx context.Context, threadID string) (string, error) {
	if len(threadID) > MaxIDBytes {
		return "", nil
	}
	var head []byte
	err := s.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		var err error
		head, err = tr.Get(s.k.head(threadID)).Get()
		return err
	})
	return string(head), err
}

// restoreChunks is how many keys of the thread's data Restore reads with
// the head: heads of up to 400 KB come in the first round. When values are
// small the extra keys are the head's predecessors, a few KB; at worst
// they are three full values, 300 KB, which on a data-centre network cost
// less than the round trip they save.
const restoreChunks = 4

// Restore returns the thread's head and the head's checkpoint, as one
// transaction, which is what a harness does to resume a thread: Head, then
// Get of the head. The checkpoint is nil when the thread has no head, or
// when the head names a checkpoint that is no longer in the thread (after
// pruning, or when another thread reused its id). Check order: thread id
// (ErrInvalidID).
//
// It takes one read round when the head is also the thread's newest
// checkpoint in List order, which is the case a harness makes (each
// checkpoint is newer than its parent), and its value is at most
// restoreChunks values: the round reads the head key and, in reverse, the
// last restoreChunks keys of the thread's data. Any other head takes a
// second round, by id.
func (s *Driver) Restore(ctx context.Context, threadID string) (headID string, cp *ckptstore.Checkpoint, err error) {
	if err := driver.ValidateID("thread id", threadID); err != nil {
		return "", nil, err
	}
	if err := ctx.Err(); err != nil {
		return "", nil, err
	}
	if len(threadID) > MaxIDBytes {
		return "", nil, nil
	}
	p := s.k.dataPrefix(threadID)
	err = s.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		headID, cp = "", nil
		hf := tr.Get(s.k.head(threadID))
		lastf := tr.GetRange(rangeOf(p), kv.RangeOptions{Limit: restoreChunks, Reverse: true})
		h, err := hf.Get()
		if err != nil {
			return err
		}
		last, err := lastf.Get()
		if err != nil || h == nil {
			return err
		}
		headID = string(h)
		groups, err := groupChunks(last, p, true)
		if err != nil {
			return err
		}
		if len(groups) > 0 && groups[0].id == headID && groups[0].complete {
			cp, err = assemble(headID, groups[0].chunks)
			return err
		}
		if len(headID) > MaxIDBytes {
			return nil
		}
		got, idx, err := s.readByID(tr, headID, s.startByID(tr, headID))
		if err != nil || idx == nil || idx.thread != threadID {
			return err
		}
		cp = got
		return nil
	})
	if err != nil {
		return "", nil, err
	}
	return headID, cp, nil
}

// ListBlobReferences implements driver.Store: one page of Options.BlobPage
// keys per transaction, each page starting after the last key of the one
// before, without holding more than one page.
func (s *Driver) ListBlobReferences(ctx context.Context) iter.Seq2[ckptstore.BlobRef, error] {
	return func(yield func(ckptstore.BlobRef, error) bool) {
		p := s.k.refsPrefix()
		r := rangeOf(p)
		for {
			var page []kv.KeyValue
			err := s.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
				var err error
				page, err = tr.GetRange(r, kv.RangeOptions{Limit: s.opts.BlobPage}).Get()
				return err
			})
			if err != nil {
				yield(ckptstore.BlobRef{}, err)
				return
			}
			for _, kvp := range page {
				t, err := suffix(kvp.Key, p)
				if err != nil {
					yield(ckptstore.BlobRef{}, err)
					return
				}
				key, ok := elem[string](t, 0, 1)
				if !ok {
					yield(ckptstore.BlobRef{}, fmt.Errorf("%w: reference key %x", ErrCorrupt, kvp.Key))
					return
				}
				if n := kv.DecodeInt64(kvp.Value); n > 0 {
					if !yield(ckptstore.BlobRef{Key: key, References: n}, nil) {
						return
					}
				}
			}
			if len(page) < s.opts.BlobPage {
				return
			}
			r.Begin = append(append([]byte(nil), page[len(page)-1].Key...), 0x00)
		}
	}
}
