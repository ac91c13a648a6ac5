// Package memkv is an in-process key-value engine with FoundationDB's
// transaction semantics, written so that code tested against it (fdbstore)
// behaves the same on a real cluster. It is not a map behind a mutex: it
// keeps MVCC snapshots, detects read-write conflicts like FoundationDB's
// resolvers, enforces FoundationDB's limits and can inject FoundationDB's
// failures deterministically.
//
// Invariants:
//
//   - Committed data is a sequence of immutable snapshots. A snapshot is a
//     copy-on-write clone of a B-tree (github.com/google/btree), so
//     publishing one costs O(1) and readers never lock: a transaction holds
//     the snapshot that was latest when it began (its read version is that
//     snapshot's version) and reads only that. Snapshots no transaction
//     holds are reclaimed by Go's collector.
//   - Commits are group commits, as a FoundationDB proxy batches them:
//     committing goroutines queue their commits, and one of them at a time
//     (the leader) runs every queued commit in queue order under DB.mu
//     (fault draw, conflict check, mutations, conflict-history entry, one
//     version each), then publishes one snapshot at the batch's last
//     version, wakes the others and passes the lead to the first commit
//     queued meanwhile. So version order is commit order, a later commit
//     of a batch is checked against the earlier ones, and DB.mu is never
//     handed to a goroutine that is not running (the lock convoy that a
//     contended mutex forms). Version counts applied commits; versions
//     inside a batch are never published, so no transaction reads at one.
//   - Nothing but the leader takes DB.mu (and SetFaults). Begin, the end
//     of a transaction and Version load the published (version, snapshot)
//     pair atomically and register read versions under DB.activeMu, whose
//     critical sections are a few map operations: a transaction's reads
//     and buffering never wait for a commit.
//   - A commit that carries writes yields the processor before it returns
//     (runtime.Gosched), as the round trip to a cluster would, so that
//     CPU-bound writers take turns per commit.
//   - A commit fails with not_committed (1020) when a read-conflict range of
//     the transaction (every non-snapshot read, every AddReadConflictRange)
//     intersects the write ranges of any commit with a version above the
//     transaction's read version. Every mutation (Set, Clear, ClearRange,
//     Add, CompareAndClear) writes its key or range. That is FoundationDB's
//     rule and makes committed transactions serialisable: lost updates, write
//     skew and phantoms are refused.
//   - The conflict history keeps the write ranges of every commit newer than
//     the oldest open transaction's read version and younger than Lifetime
//     on the engine clock, in version order. floor is the newest version
//     dropped from it; a transaction whose read version is below floor
//     cannot be checked and fails with transaction_too_old (1007), as on a
//     cluster. A commit checks only the commits after its own read version
//     (those that ran while it did, however long a slow transaction pins
//     the rest), each by binary search: O(reads × log writes) per commit.
//   - A read version is registered in DB.active before the batch that
//     could drop the history it needs computes the oldest one: a
//     transaction's first read (Tx.firstRead; FoundationDB too takes the
//     read version then, not at the start) loads the published version and
//     registers it in one DB.activeMu section, and a batch publishes its
//     version before it reads DB.active. A transaction that never read
//     commits at the version current at its commit.
//   - A transaction buffers its writes (read-your-writes): reads see them,
//     atomic operations on keys of unknown value are kept as operations and
//     applied to the value current at commit, so Add and CompareAndClear add
//     no read conflict.
//   - Values handed in are copied and values handed out are copies: nothing
//     a caller holds aliases engine memory.
//   - Limits (kv.MaxKeySize, kv.MaxValueSize, kv.MaxTransactionSize, Lifetime)
//     give FoundationDB's error codes; a write that breaks one is not
//     applied and its error is returned by later reads and by Commit, as the
//     real client defers it.
//   - Faults are drawn from a seeded generator, one draw per commit that
//     carries writes, under DB.mu: a single-goroutine run with a given seed
//     sees the same faults every time.
//   - Two test instruments change no semantics. The shard model
//     (shards.go: Shards, ShardStats) counts, under DB.mu while a commit is
//     applied, the mutations landing in each range of a key-count cut, to
//     show where a cluster's write load would go. The BeforeCommit hook
//     (interleave.go) runs other operations between a transaction's reads
//     and its commit; their commits get later versions, and the hooked
//     commit is resolved against them by the ordinary conflict check.
package memkv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/btree"

	"github.com/ckptstore/ckptstore/fdbstore/kv"
)

// Lifetime is how long a transaction may live on the engine clock from its
// read version: after it, reads and a Commit with writes fail with
// transaction_too_old (1007), as FoundationDB's five-second MVCC window
// makes them. As on a cluster, the read version counts from the first read
// (a transaction idle for longer before it is not too old), a transaction
// that never read takes its read version at commit, and a read-only commit
// always succeeds.
const Lifetime = 5 * time.Second

// Defaults of Options' backoff.
const (
	DefaultBackoffBase = time.Millisecond
	DefaultBackoffMax  = 100 * time.Millisecond
)

// Options configure a DB. The zero value is a fault-free engine on the
// wall clock with unlimited retries.
type Options struct {
	// Now is the engine clock. It decides transaction age (Lifetime) only;
	// latency and backoff are real waits. nil = time.Now.
	Now func() time.Time
	// Faults to inject. The zero value injects none and adds no latency.
	// SetFaults changes them later.
	Faults Faults
	// BackoffBase is the first delay before Transact runs fn again; each
	// further retry doubles it up to BackoffMax. Each delay is drawn
	// uniformly from [d/2, d] by a generator seeded with Faults.Seed.
	// 0 = DefaultBackoffBase. Negative is invalid.
	BackoffBase time.Duration
	// BackoffMax caps the backoff delay. 0 = DefaultBackoffMax (or
	// BackoffBase when that is larger). Negative is invalid.
	BackoffMax time.Duration
	// MaxRetries bounds how many times Transact and ReadTransact run fn
	// again after a retryable error; when exhausted they return that error.
	// 0 = no bound (only ctx ends the retries). Negative is invalid.
	MaxRetries int
}

// Faults configure fault injection. Rates are probabilities in [0, 1] whose
// sum is at most 1; each commit that carries writes draws one number and
// falls in at most one band. Read-only commits never fail, as on a cluster.
type Faults struct {
	// Seed seeds the fault draws (reseeded by SetFaults); the backoff
	// jitter is seeded once, from Options.Faults.Seed. 0 is a valid seed.
	Seed int64
	// NotCommittedRate: the commit fails with not_committed (1020) and
	// nothing is written.
	NotCommittedRate float64
	// UnknownResultAppliedRate: the commit is applied (when it has no real
	// conflict) and the caller gets commit_unknown_result (1021).
	UnknownResultAppliedRate float64
	// UnknownResultNotAppliedRate: nothing is written and the caller gets
	// commit_unknown_result (1021).
	UnknownResultNotAppliedRate float64
	// ReadLatency is waited once per read round (see Stats.ReadRounds),
	// honouring the transaction's context. 0 = none.
	ReadLatency time.Duration
	// CommitLatency is waited by every commit that carries writes before it
	// reaches the engine, honouring the context. 0 = none.
	CommitLatency time.Duration
}

func (f Faults) validate() error {
	for _, r := range []float64{f.NotCommittedRate, f.UnknownResultAppliedRate, f.UnknownResultNotAppliedRate} {
		if !(r >= 0 && r <= 1) { // also refuses NaN
			return fmt.Errorf("memkv: fault rate %v outside [0, 1]", r)
		}
	}
	if f.NotCommittedRate+f.UnknownResultAppliedRate+f.UnknownResultNotAppliedRate > 1 {
		return errors.New("memkv: fault rates sum above 1")
	}
	if f.ReadLatency < 0 || f.CommitLatency < 0 {
		return errors.New("memkv: negative latency")
	}
	return nil
}

func (f Faults) anyRate() bool {
	return f.NotCommittedRate > 0 || f.UnknownResultAppliedRate > 0 || f.UnknownResultNotAppliedRate > 0
}

// Stats are the engine's counters since New or the last ResetStats. Every
// counter is exact (no sampling), so a benchmark can assert on them.
type Stats struct {
	// Transactions begun: each attempt of Transact or ReadTransact, and
	// each Begin.
	Transactions int64
	// ReadRounds counts round trips to the engine. Reads issued before a
	// wait form one batch; the first wait on any future of the batch starts
	// the round (and its ReadLatency), the others of the batch join it. So
	// three Gets issued and then waited on are one round. Reads answered
	// from the transaction's own writes, and reads that fail at issue, are
	// in no round.
	ReadRounds int64
	// Reads issued to the engine (Get and GetRange, snapshot or not).
	Reads int64
	// Commits applied to the engine: every commit that carried writes and
	// changed the data, including those that then reported
	// commit_unknown_result. Read-only commits are local and not counted.
	Commits int64
	// Conflicts: commits refused with not_committed because of a real
	// read-write conflict (injected ones are in InjectedFaults).
	Conflicts int64
	// InjectedFaults: commits that failed by fault injection.
	InjectedFaults int64
	// Retries: times Transact or ReadTransact ran fn again.
	Retries int64
	// KeysWritten: distinct keys set, cleared or changed by an atomic
	// operation, summed over applied commits (several writes of one key in
	// one transaction count once).
	KeysWritten int64
	// BytesWritten: mutation bytes of applied commits: per written key its
	// length plus the final value's length (0 for a clear, the operands'
	// lengths for atomic operations), plus begin and end lengths of each
	// cleared range.
	BytesWritten int64
	// RangesCleared: ClearRange ranges applied (after merging overlaps).
	RangesCleared int64
}

type counters struct {
	transactions, readRounds, reads, commits, conflicts, faults, retries,
	keysWritten, bytesWritten, rangesCleared atomic.Int64
}

// btreeDegree trades read depth against the bytes every commit copies: a
// commit clones the root-to-leaf path of each key it writes, so smaller
// nodes make commits cheaper.
const btreeDegree = 16

// item is one committed key. The tree holds pointers, so the nodes that a
// commit copies after a snapshot (copy-on-write) are a sixth of the size
// they would be with the slices inline. An item and its slices are never
// modified once a snapshot holds them, which is what lets snapshots share
// them; a new value is a new item.
type item struct {
	key, value []byte
}

func itemLess(a, b *item) bool { return bytes.Compare(a.key, b.key) < 0 }

// published is a committed version and its snapshot, swapped as one.
type published struct {
	version uint64
	snap    *btree.BTreeG[*item]
}

// commitRecord is the conflict-history entry of one commit.
type commitRecord struct {
	version uint64
	at      time.Time     // engine clock at commit
	writes  []kv.KeyRange // sorted, disjoint, non-empty
}

// DB is an in-process FoundationDB-like database. It implements kv.DB and
// is safe for concurrent use.
type DB struct {
	watch watchSet // outstanding watches (watch.go)

	now                     func() time.Time
	backoffBase, backoffMax time.Duration
	maxRetries              int

	faultCfg atomic.Pointer[Faults] // read without mu by the latency paths

	mu       sync.Mutex           // the commit lock; guards the fields below
	master   *btree.BTreeG[*item] // latest data, written only under mu, never read outside it
	probe    item                 // search key of master
	version  uint64               // latest applied; published at the end of its batch
	history  []commitRecord       // ascending version
	floor    uint64
	faultRNG *rand.Rand
	shards   *shardModel // nil: no shard model (shards.go)

	// state is the latest committed version and a clone of master at it;
	// stored under mu, loaded without it.
	state atomic.Pointer[published]

	activeMu sync.Mutex     // guards active only; never held while taking mu
	active   map[uint64]int // read version -> open transactions at it

	queueMu sync.Mutex   // guards the commit queue; never held while taking mu
	queue   []*commitReq // commits waiting for the leader
	leading bool         // a goroutine is leading: it will run the queue

	backoffMu  sync.Mutex
	backoffRNG *rand.Rand

	stats counters

	hook atomic.Pointer[beforeCommit] // interleave.go
}

var _ kv.DB = (*DB)(nil)

// New returns an empty fault-free engine on the wall clock.
func New() *DB {
	db, err := NewWithOptions(Options{})
	if err != nil {
		panic(err) // unreachable: zero Options are valid
	}
	return db
}

// NewWithOptions returns an empty engine configured by opts, or an error
// when opts are invalid (negative durations or retries, bad fault rates).
func NewWithOptions(opts Options) (*DB, error) {
	if err := opts.Faults.validate(); err != nil {
		return nil, err
	}
	if opts.BackoffBase < 0 || opts.BackoffMax < 0 || opts.MaxRetries < 0 {
		return nil, errors.New("memkv: negative backoff or retry option")
	}
	db := &DB{
		now:         opts.Now,
		backoffBase: opts.BackoffBase,
		backoffMax:  opts.BackoffMax,
		maxRetries:  opts.MaxRetries,
		master:      btree.NewG(btreeDegree, itemLess),
		active:      make(map[uint64]int),
	}
	if db.now == nil {
		db.now = time.Now
	}
	if db.backoffBase == 0 {
		db.backoffBase = DefaultBackoffBase
	}
	if db.backoffMax == 0 {
		db.backoffMax = max(DefaultBackoffMax, db.backoffBase)
	}
	if db.backoffMax < db.backoffBase {
		return nil, errors.New("memkv: BackoffMax below BackoffBase")
	}
	db.state.Store(&published{snap: db.master.Clone()})
	db.backoffRNG = rand.New(rand.NewPCG(uint64(opts.Faults.Seed), 0x6d656d6b76))
	db.setFaults(opts.Faults)
	return db, nil
}

// SetFaults replaces the fault configuration and reseeds the fault
// generator from f.Seed, so a test can load data fault-free and then turn
// faults on. It returns an error, and changes nothing, when f is invalid.
func (db *DB) SetFaults(f Faults) error {
	if err := f.validate(); err != nil {
		return err
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	db.setFaults(f)
	return nil
}

func (db *DB) setFaults(f Faults) {
	db.faultRNG = rand.New(rand.NewPCG(uint64(f.Seed), 0x6661756c7473))
	db.faultCfg.Store(&f)
}

// Stats returns the counters. Each is read atomically; a Stats taken while
// transactions run may mix moments.
func (db *DB) Stats() Stats {
	c := &db.stats
	return Stats{
		Transactions:   c.transactions.Load(),
		ReadRounds:     c.readRounds.Load(),
		Reads:          c.reads.Load(),
		Commits:        c.commits.Load(),
		Conflicts:      c.conflicts.Load(),
		InjectedFaults: c.faults.Load(),
		Retries:        c.retries.Load(),
		KeysWritten:    c.keysWritten.Load(),
		BytesWritten:   c.bytesWritten.Load(),
		RangesCleared:  c.rangesCleared.Load(),
	}
}

// ResetStats sets every counter to zero.
func (db *DB) ResetStats() {
	c := &db.stats
	for _, a := range []*atomic.Int64{&c.transactions, &c.readRounds, &c.reads, &c.commits,
		&c.conflicts, &c.faults, &c.retries, &c.keysWritten, &c.bytesWritten, &c.rangesCleared} {
		a.Store(0)
	}
}

// Version returns the latest committed version: 0 for a new DB, +1 per
// applied commit.
func (db *DB) Version() uint64 { return db.state.Load().version }

// Begin starts a transaction at the latest committed version. ctx bounds
// its latency waits and its commit. The caller must end it with Commit or
// Cancel: an open transaction pins conflict history (for at most Lifetime).
// Transact and ReadTransact are the usual way in; Begin is for tests that
// interleave transactions by hand.
func (db *DB) Begin(ctx context.Context) *Tx {
	db.stats.transactions.Add(1)
	// The read version is taken at the first read (Tx.firstRead).
	return &Tx{db: db, ctx: ctx}
}

// Transact runs fn in a transaction and commits it, retrying on retryable
// errors (kv.IsRetryable) with jittered exponential backoff, as described
// by kv.DB. A non-retryable error from fn or the commit is returned as is.
// When ctx ends, the retries stop and an error wrapping ctx.Err() (and
// naming the last error) is returned.
func (db *DB) Transact(ctx context.Context, fn func(tr kv.Transaction) error) error {
	return db.run(ctx, func(tr *Tx) error {
		if err := fn(tr); err != nil {
			return err
		}
		return tr.Commit()
	})
}

// ReadTransact runs fn in a transaction that is never committed, retrying
// like Transact.
func (db *DB) ReadTransact(ctx context.Context, fn func(tr kv.ReadTransaction) error) error {
	return db.run(ctx, func(tr *Tx) error { return fn(tr) })
}

func (db *DB) run(ctx context.Context, attempt func(*Tx) error) error {
	var last error
	for retry := 0; ; retry++ {
		if err := ctx.Err(); err != nil {
			return abandoned(err, last)
		}
		err := db.once(ctx, attempt)
		if err == nil {
			return nil
		}
		if !kv.IsRetryable(err) {
			return err
		}
		last = err
		if cerr := ctx.Err(); cerr != nil {
			return abandoned(cerr, last)
		}
		if db.maxRetries > 0 && retry >= db.maxRetries {
			return fmt.Errorf("memkv: giving up after %d retries: %w", retry, err)
		}
		db.stats.retries.Add(1)
		if werr := sleepUntil(ctx, time.Now().Add(db.backoff(retry))); werr != nil {
			return abandoned(ctx.Err(), last)
		}
	}
}

func (db *DB) once(ctx context.Context, attempt func(*Tx) error) error {
	tr := db.Begin(ctx)
	// Cancel unpins the read version whatever fn did; after Commit it is a no-op.
	defer tr.Cancel()
	return attempt(tr)
}

func abandoned(ctxErr, last error) error {
	if last == nil {
		return fmt.Errorf("memkv: transaction abandoned: %w", ctxErr)
	}
	return fmt.Errorf("memkv: transaction abandoned (last error: %v): %w", last, ctxErr)
}

// backoff returns the delay before retry number n (0-based).
func (db *DB) backoff(n int) time.Duration {
	d := db.backoffBase
	for i := 0; i < n && d < db.backoffMax; i++ {
		d *= 2
	}
	d = min(d, db.backoffMax)
	half := d / 2
	db.backoffMu.Lock()
	j := db.backoffRNG.Int64N(int64(d-half) + 1)
	db.backoffMu.Unlock()
	return half + time.Duration(j)
}

// sleepUntil waits until t or until ctx ends (then it returns an error
// wrapping ctx.Err()).
func sleepUntil(ctx context.Context, t time.Time) error {
	d := time.Until(t)
	if d <= 0 {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("memkv: %w", err)
		}
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("memkv: %w", ctx.Err())
	}
}

// release unpins a read version.
func (db *DB) release(rv uint64) {
	db.activeMu.Lock()
	defer db.activeMu.Unlock()
	if db.active[rv]--; db.active[rv] <= 0 {
		delete(db.active, rv)
	}
}

// commitPlan is what a transaction hands to the engine.
type commitPlan struct {
	rv      uint64
	reads   []kv.KeyRange // sorted, disjoint
	writes  []kv.KeyRange // sorted, disjoint
	clears  []kv.KeyRange // sorted, disjoint
	entries []*wentry     // ascending key
}

// commitReq is a commit waiting in the queue. Its transaction holds it, so
// queueing allocates nothing.
type commitReq struct {
	plan *commitPlan
	// Set by a leader before wg.Done: the outcome, or lead when the
	// request's own goroutine must lead the next batch (then err is unset).
	err  error
	lead bool
	wg   sync.WaitGroup
}

// commit queues p and returns its outcome. Commits are group commits, as a
// FoundationDB proxy batches them: one goroutine at a time, the leader,
// runs every queued commit in order under DB.mu, publishes one snapshot
// for the batch and wakes the others. Then it passes the lead to the
// first commit queued meanwhile. So DB.mu is never handed to a goroutine
// that is not running: with a plain contended mutex, which turns fair
// (FIFO hand-off) after a waiter has waited 1 ms, every hand-off goes to a
// goroutine that must first be scheduled, and the lock sits idle while
// the goroutines that could run queue behind it (a lock convoy). A batch
// also clones its snapshot once, however many commits it holds.
func (db *DB) commit(req *commitReq) error {
	req.wg.Add(1)
	db.queueMu.Lock()
	db.queue = append(db.queue, req)
	lead := !db.leading
	db.leading = true
	db.queueMu.Unlock()
	if !lead {
		req.wg.Wait()
		if !req.lead {
			return req.err
		}
	}
	db.lead(req)
	return req.err
}

// lead runs the queued commits, own among them, and hands the lead on.
func (db *DB) lead(own *commitReq) {
	db.queueMu.Lock()
	batch := db.queue
	db.queue = nil
	db.queueMu.Unlock()

	db.mu.Lock()
	applied := false
	for _, r := range batch {
		r.err = db.commitOne(r.plan, &applied)
	}
	if applied {
		db.publish()
		db.fireWatches()
	}
	db.mu.Unlock()

	db.queueMu.Lock()
	var next *commitReq
	if len(db.queue) > 0 {
		next = db.queue[0]
	} else {
		db.leading = false
	}
	db.queueMu.Unlock()
	for _, r := range batch {
		if r != own {
			r.wg.Done()
		}
	}
	if next != nil {
		next.lead = true
		next.wg.Done()
	}
}

// commitOne is one commit of a batch: fault draw, conflict check, apply.
// It sets *applied when it changed the data. Called with mu held.
func (db *DB) commitOne(p *commitPlan, applied *bool) error {
	if p.rv < db.floor {
		return kv.NewError(kv.CodeTransactionTooOld)
	}
	cfg := db.faultCfg.Load()
	u := 1.0 // above every band
	if cfg.anyRate() {
		u = db.faultRNG.Float64()
	}
	nc := cfg.NotCommittedRate
	una := nc + cfg.UnknownResultNotAppliedRate
	ua := una + cfg.UnknownResultAppliedRate
	if u < nc {
		db.stats.faults.Add(1)
		return kv.NewError(kv.CodeNotCommitted)
	}
	if db.conflicts(p.rv, p.reads) {
		db.stats.conflicts.Add(1)
		return kv.NewError(kv.CodeNotCommitted)
	}
	if u < una {
		db.stats.faults.Add(1)
		return kv.NewError(kv.CodeCommitUnknownResult)
	}
	db.apply(p)
	*applied = true
	if u < ua {
		db.stats.faults.Add(1)
		return kv.NewError(kv.CodeCommitUnknownResult)
	}
	return nil
}

func (db *DB) apply(p *commitPlan) {
	m := db.master
	sm := db.shards
	var bytesW int64
	var doomed []*item
	for _, c := range p.clears {
		if sm != nil {
			sm.countRange(c.Begin, c.End)
		}
		doomed = doomed[:0]
		m.AscendRange(&item{key: c.Begin}, &item{key: c.End}, func(it *item) bool {
			doomed = append(doomed, it)
			return true
		})
		for _, it := range doomed {
			m.Delete(it)
		}
		bytesW += int64(len(c.Begin) + len(c.End))
	}
	for _, e := range p.entries {
		if e.known {
			bytesW += int64(len(e.key) + len(e.value))
			if sm != nil {
				sm.count(e.key, len(e.key)+len(e.value))
			}
			if e.present {
				m.ReplaceOrInsert(&item{key: e.key, value: e.value})
			} else {
				db.probe.key = e.key
				m.Delete(&db.probe)
			}
			continue
		}
		n := len(e.key)
		for _, op := range e.ops {
			n += op.size()
		}
		bytesW += int64(n)
		if sm != nil {
			sm.count(e.key, n)
		}
		// One descent: insert a new item and fill its value from the one
		// it replaced. No snapshot holds it before publish clones master,
		// so setting its value now keeps items immutable to readers.
		it := &item{key: e.key}
		old, ok := m.ReplaceOrInsert(it)
		var base []byte
		if ok {
			base = old.value
		}
		var present bool
		if it.value, present = applyOps(base, ok, e.ops); !present {
			m.Delete(it)
		}
	}
	db.probe.key = nil
	db.watch.noteWrites(p)
	db.version++
	// Later commits of the batch check against this one: its record goes
	// in now, and publish prunes what no open transaction needs.
	db.history = append(db.history, commitRecord{version: db.version, at: db.now(), writes: p.writes})
	db.stats.commits.Add(1)
	db.stats.keysWritten.Add(int64(len(p.entries)))
	db.stats.rangesCleared.Add(int64(len(p.clears)))
	db.stats.bytesWritten.Add(bytesW)
}

// publish makes the commits applied so far visible to new transactions,
// and drops the conflict history no open transaction can need: commits at
// or below the oldest open read version, and commits older than Lifetime
// (any transaction that could need those is too old to commit anyway).
// The version is published before the oldest read version is read, so a
// transaction that began at an older one is registered by then.
func (db *DB) publish() {
	db.state.Store(&published{version: db.version, snap: db.master.Clone()})
	oldest := db.version
	db.activeMu.Lock()
	for rv := range db.active {
		oldest = min(oldest, rv)
	}
	db.activeMu.Unlock()
	now := db.now()
	cut := 0
	for cut < len(db.history) {
		h := db.history[cut]
		if h.version > oldest && now.Sub(h.at) <= Lifetime {
			break
		}
		cut++
	}
	if cut > 0 {
		db.floor = max(db.floor, db.history[cut-1].version)
		clear(db.history[:cut])
		db.history = db.history[cut:]
	}
}

// conflicts reports whether reads intersect a write of any commit after rv.
func (db *DB) conflicts(rv uint64, reads []kv.KeyRange) bool {
	if len(reads) == 0 {
		return false
	}
	i := sort.Search(len(db.history), func(i int) bool { return db.history[i].version > rv })
	for _, h := range db.history[i:] {
		if intersects(reads, h.writes) {
			return true
		}
	}
	return false
}
