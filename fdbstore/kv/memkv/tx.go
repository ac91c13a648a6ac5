package memkv

// Transactions: reads at one snapshot, a write buffer for read-your-writes,
// conflict ranges and size accounting.
//
// Invariants of Tx (all guarded by Tx.mu):
//   - writes holds at most one entry per key, the key's net effect: known
//     (a value or absent) or a list of atomic operations on the value the
//     engine will hold at commit.
//   - clears is sorted and disjoint. A key inside a cleared range has a
//     known value: its entry if any, else absent. So an entry with atomic
//     operations never lies inside a cleared range (Add and CompareAndClear
//     there resolve at once), and ClearRange drops the entries it covers.
//   - Reads are evaluated when issued, against the snapshot and the write
//     buffer at that moment (FoundationDB's futures see the writes made
//     before the read was issued); waiting on the future only accounts the
//     round and its latency.
//   - The first limit or argument error is kept in err and returned by every
//     later read and by Commit; the offending write has no effect.

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/google/btree"

	"github.com/ckptstore/ckptstore/fdbstore/kv"
)

type txState int

const (
	txOpen txState = iota
	txCommitting
	txDone
	txCancelled
)

// Tx is a memkv transaction; it implements kv.Transaction. Its methods are
// safe for concurrent use, and its futures may be waited on from any
// goroutine.
type Tx struct {
	db    *DB
	ctx   context.Context
	rv    uint64
	snap  *btree.BTreeG[*item]
	start time.Time // engine clock when rv was taken

	mu       sync.Mutex
	state    txState
	pinned   bool  // rv and snap are taken and rv is registered in db.active
	released bool  // rv unpinned in db.active (or never pinned), at the end
	err      error // deferred error
	writes   *btree.BTreeG[*wentry]
	clears   []kv.KeyRange
	reads    []kv.KeyRange // read-conflict ranges, unsorted
	size     int           // approximate transaction size, as FoundationDB counts it
	open     *round        // batch that reads issued now join
	probe    item          // search key of snap
	wprobe   wentry        // search key of writes
	req      commitReq     // this transaction in the commit queue
}

var _ kv.Transaction = (*Tx)(nil)

// ReadVersion returns the version the transaction reads at, taking it
// now if no read has yet (as FoundationDB's GetReadVersion does).
func (tr *Tx) ReadVersion() uint64 {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.firstRead()
	return tr.rv
}

// firstRead takes the read version at the transaction's first read, as
// FoundationDB does: the reads see every commit that ended before it, and
// Lifetime counts from it. The version is registered in db.active in the
// same section that loads it (see memkv.go). Called with tr.mu held.
func (tr *Tx) firstRead() {
	if tr.pinned || tr.state != txOpen || tr.released {
		return
	}
	db := tr.db
	db.activeMu.Lock()
	st := db.state.Load()
	db.active[st.version]++
	db.activeMu.Unlock()
	tr.rv, tr.snap, tr.start, tr.pinned = st.version, st.snap, db.now(), true
}

// failTooOld keeps a read's transaction_too_old as the deferred error: on
// a cluster, a transaction whose read found it too old fails its commit
// too, even a read-only one. Called with tr.mu held.
func (tr *Tx) failTooOld(err error) {
	if kv.ErrorCode(err) == kv.CodeTransactionTooOld {
		tr.fail(kv.CodeTransactionTooOld)
	}
}

// readOnly reports whether the transaction has no write to commit. Called
// with tr.mu held.
func (tr *Tx) readOnly() bool {
	return (tr.writes == nil || tr.writes.Len() == 0) && len(tr.clears) == 0
}

// opKind is an atomic operation kind.
type opKind uint8

const (
	opAdd opKind = iota
	opCompareAndClear
)

type atomicOp struct {
	kind    opKind
	delta   int64  // opAdd
	operand []byte // opCompareAndClear
}

// size is the operand's length as a mutation carries it.
func (o atomicOp) size() int {
	if o.kind == opAdd {
		return 8
	}
	return len(o.operand)
}

// applyOps applies ops in order to a value (present or not) and returns the
// result. It never modifies base.
func applyOps(base []byte, present bool, ops []atomicOp) ([]byte, bool) {
	for _, o := range ops {
		switch o.kind {
		case opAdd:
			base, present = kv.EncodeInt64(kv.DecodeInt64(base)+o.delta), true
		case opCompareAndClear:
			if present && bytes.Equal(base, o.operand) {
				base, present = nil, false
			}
		}
	}
	return base, present
}

// wentry is a buffered write of one key. Its value slice is replaced, never
// modified, so futures may keep references to it.
type wentry struct {
	key     []byte
	known   bool
	present bool        // known: the key has value
	value   []byte      // known && present
	ops     []atomicOp  // !known
	op1     [1]atomicOp // backs ops while it holds one operation, the usual case
}

func wentryLess(a, b *wentry) bool { return bytes.Compare(a.key, b.key) < 0 }

// resolve returns the entry's value over a base read from the snapshot.
func (e *wentry) resolve(base []byte, present bool) ([]byte, bool) {
	if e.known {
		return e.value, e.present
	}
	return applyOps(base, present, e.ops)
}

// round is one batch of reads sent to the engine together.
type round struct {
	started bool
	readyAt time.Time // zero: no latency
}

var maxLegalKey = []byte{0xff}

func clone(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append(make([]byte, 0, len(b)), b...)
}

func keyAfter(k []byte) []byte {
	return append(append(make([]byte, 0, len(k)+1), k...), 0)
}

// pointRange returns [k, keyAfter(k)) as copies of k sharing one
// allocation (each capped at its length, so appending to one cannot
// reach the other).
func pointRange(k []byte) kv.KeyRange {
	n := len(k)
	b := make([]byte, 2*n+1)
	copy(b, k)
	copy(b[n:], k)
	return kv.KeyRange{Begin: b[:n:n], End: b[n:]}
}

// usable reports why the transaction can no longer read or commit.
// Called with tr.mu held.
func (tr *Tx) usable() error {
	switch tr.state {
	case txCommitting, txDone:
		return kv.NewError(kv.CodeUsedDuringCommit)
	case txCancelled:
		return kv.NewError(kv.CodeTransactionCancelled)
	}
	if tr.err != nil {
		return tr.err
	}
	if tr.pinned && tr.db.now().Sub(tr.start) > Lifetime {
		return kv.NewError(kv.CodeTransactionTooOld)
	}
	return nil
}

// fail records the first deferred error. Called with tr.mu held.
func (tr *Tx) fail(code int) {
	if tr.err == nil {
		tr.err = kv.NewError(code)
	}
}

// writable reports whether a write may be buffered; a write after the end
// has nowhere to report its error and is dropped. Called with tr.mu held.
func (tr *Tx) writable() bool { return tr.state == txOpen && tr.err == nil }

func checkWriteKey(k []byte) int {
	if bytes.Compare(k, maxLegalKey) >= 0 {
		return kv.CodeKeyOutsideLegalRange
	}
	if len(k) > kv.MaxKeySize {
		return kv.CodeKeyTooLarge
	}
	return 0
}

// checkRange validates a range argument: 0 or an error code.
func checkRange(r kv.KeyRange) int {
	if bytes.Compare(r.Begin, r.End) > 0 {
		return kv.CodeInvertedRange
	}
	if bytes.Compare(r.End, maxLegalKey) > 0 {
		return kv.CodeKeyOutsideLegalRange
	}
	return 0
}

// batch returns the round that a read issued now belongs to.
func (tr *Tx) batch() *round {
	if tr.open == nil {
		tr.open = &round{}
	}
	tr.db.stats.reads.Add(1)
	return tr.open
}

func (tr *Tx) addRead(r kv.KeyRange) {
	tr.reads = append(tr.reads, r)
	tr.size += len(r.Begin) + len(r.End)
}

func (tr *Tx) entry(k []byte) *wentry {
	if tr.writes == nil {
		return nil
	}
	tr.wprobe.key = k
	e, _ := tr.writes.Get(&tr.wprobe)
	tr.wprobe.key = nil
	return e
}

// entryFor returns the key's entry, creating an empty known-absent one.
func (tr *Tx) entryFor(k []byte) *wentry {
	if e := tr.entry(k); e != nil {
		return e
	}
	if tr.writes == nil {
		tr.writes = btree.NewG(16, wentryLess)
	}
	e := &wentry{key: clone(k), known: true}
	tr.writes.ReplaceOrInsert(e)
	return e
}

// cleared reports whether k lies in a range this transaction cleared.
func (tr *Tx) cleared(k []byte) bool {
	i := sort.Search(len(tr.clears), func(i int) bool { return bytes.Compare(tr.clears[i].End, k) > 0 })
	return i < len(tr.clears) && bytes.Compare(tr.clears[i].Begin, k) <= 0
}

// coveredByClear reports whether all of the non-empty range r was cleared.
func (tr *Tx) coveredByClear(r kv.KeyRange) bool {
	i := sort.Search(len(tr.clears), func(i int) bool { return bytes.Compare(tr.clears[i].End, r.Begin) > 0 })
	return i < len(tr.clears) && bytes.Compare(tr.clears[i].Begin, r.Begin) <= 0 &&
		bytes.Compare(tr.clears[i].End, r.End) >= 0
}

// Get reads key at the read version, seeing this transaction's writes, and
// adds a read-conflict on key unless the writes alone decide the value.
func (tr *Tx) Get(key []byte) kv.FutureValue { return tr.get(key, false) }

func (tr *Tx) get(key []byte, snapshot bool) kv.FutureValue {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.firstRead()
	if err := tr.usable(); err != nil {
		tr.failTooOld(err)
		return &futureValue{err: err}
	}
	if bytes.Compare(key, maxLegalKey) >= 0 {
		return &futureValue{err: kv.NewError(kv.CodeKeyOutsideLegalRange)}
	}
	if len(key) > kv.MaxKeySize {
		return &futureValue{} // no such key can exist; FoundationDB answers absent
	}
	e := tr.entry(key)
	if e != nil && e.known {
		return &futureValue{val: e.value, present: e.present}
	}
	if e == nil && tr.cleared(key) {
		return &futureValue{}
	}
	tr.probe.key = key
	it, ok := tr.snap.Get(&tr.probe)
	tr.probe.key = nil
	var v []byte
	present := ok
	if ok {
		v = it.value
	}
	if e != nil {
		v, present = e.resolve(v, present)
	}
	if !snapshot {
		tr.addRead(pointRange(key))
	}
	return &futureValue{waiter: waiter{tr: tr, round: tr.batch()}, val: v, present: present}
}

// GetRange reads the pairs of r at the read version merged with this
// transaction's writes. A non-snapshot read adds r as a read-conflict range,
// trimmed to the last key returned when the limit cut the read short (so
// keys beyond it do not conflict), as FoundationDB does. An empty or
// inverted range reads nothing.
func (tr *Tx) GetRange(r kv.KeyRange, opts kv.RangeOptions) kv.FutureRange {
	return tr.getRange(r, opts, false)
}

func (tr *Tx) getRange(r kv.KeyRange, opts kv.RangeOptions, snapshot bool) kv.FutureRange {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.firstRead()
	if err := tr.usable(); err != nil {
		tr.failTooOld(err)
		return &futureRange{err: err}
	}
	// FoundationDB checks a read's bounds against the legal range, then
	// answers an empty or inverted range with no pairs (and no error, unlike
	// a clear or a conflict range); -1 is its "unlimited" row limit.
	if bytes.Compare(r.Begin, maxLegalKey) > 0 || bytes.Compare(r.End, maxLegalKey) > 0 {
		return &futureRange{err: kv.NewError(kv.CodeKeyOutsideLegalRange)}
	}
	if opts.Limit < -1 {
		return &futureRange{err: kv.NewError(kv.CodeRangeLimitsInvalid)}
	}
	if opts.Limit == -1 {
		opts.Limit = 0
	}
	if bytes.Compare(r.Begin, r.End) >= 0 {
		return &futureRange{}
	}
	local := tr.coveredByClear(r)
	pairs, hitLimit := tr.scan(r, opts, local)
	if local {
		return &futureRange{pairs: pairs}
	}
	if !snapshot {
		cr := kv.KeyRange{Begin: clone(r.Begin), End: clone(r.End)}
		if hitLimit {
			last := pairs[len(pairs)-1].Key
			if opts.Reverse {
				cr.Begin = clone(last)
			} else {
				cr.End = keyAfter(last)
			}
		}
		tr.addRead(cr)
	}
	return &futureRange{waiter: waiter{tr: tr, round: tr.batch()}, pairs: pairs}
}

// scan merges the snapshot (unless local) with the write buffer over r in
// the requested order. The returned pairs alias engine and buffer memory;
// the future copies them out. hitLimit reports that the limit stopped it.
func (tr *Tx) scan(r kv.KeyRange, opts kv.RangeOptions, local bool) (pairs []kv.KeyValue, hitLimit bool) {
	m := &merge{tr: tr, rev: opts.Reverse, limit: opts.Limit}
	if tr.writes != nil {
		walk(tr.writes, r, m.rev, wentryProbe, func(e *wentry) []byte { return e.key }, func(e *wentry) bool {
			m.buffered = append(m.buffered, e)
			return true
		})
	}
	if !local {
		walk(tr.snap, r, m.rev, itemProbe, func(it *item) []byte { return it.key }, m.visit)
	}
	if !m.hitLimit {
		m.flush(nil)
	}
	return m.pairs, m.hitLimit
}

func wentryProbe(k []byte) *wentry { return &wentry{key: k} }
func itemProbe(k []byte) *item     { return &item{key: k} }

// walk visits the entries of t whose keys are in r, in key order or (rev)
// its reverse, until visit returns false. probe makes an entry to seek
// with; key reads an entry's key.
func walk[T any](t *btree.BTreeG[T], r kv.KeyRange, rev bool, probe func([]byte) T, key func(T) []byte, visit func(T) bool) {
	if !rev {
		t.AscendRange(probe(r.Begin), probe(r.End), visit)
		return
	}
	// DescendLessOrEqual includes End, which r does not; below Begin the
	// walk is done.
	t.DescendLessOrEqual(probe(r.End), func(e T) bool {
		k := key(e)
		if bytes.Equal(k, r.End) {
			return true
		}
		if bytes.Compare(k, r.Begin) < 0 {
			return false
		}
		return visit(e)
	})
}

// merge is one scan's merge of the snapshot's pairs with the buffered
// writes of the range, both in scan order.
type merge struct {
	tr       *Tx
	rev      bool
	limit    int       // 0: none
	buffered []*wentry // the writes of the range, in scan order
	i        int       // the next buffered entry to merge
	pairs    []kv.KeyValue
	hitLimit bool
}

// before reports whether a comes before b in scan order.
func (m *merge) before(a, b []byte) bool {
	if m.rev {
		return bytes.Compare(a, b) > 0
	}
	return bytes.Compare(a, b) < 0
}

// emit adds a pair; false when the limit is reached.
func (m *merge) emit(k, v []byte) bool {
	m.pairs = append(m.pairs, kv.KeyValue{Key: k, Value: v})
	if m.limit > 0 && len(m.pairs) >= m.limit {
		m.hitLimit = true
		return false
	}
	return true
}

// flush emits the buffered entries that come before k (all when k is
// nil); false when the limit stopped it.
func (m *merge) flush(k []byte) bool {
	for ; m.i < len(m.buffered) && (k == nil || m.before(m.buffered[m.i].key, k)); m.i++ {
		e := m.buffered[m.i]
		if v, ok := e.resolve(nil, false); ok && !m.emit(e.key, v) {
			m.i++
			return false
		}
	}
	return true
}

// visit merges one snapshot pair: the buffered entries before it, then the
// pair as a buffered write of its key changes it, unless a clear removed
// it.
func (m *merge) visit(it *item) bool {
	if !m.flush(it.key) {
		return false
	}
	if m.i < len(m.buffered) && bytes.Equal(m.buffered[m.i].key, it.key) {
		e := m.buffered[m.i]
		m.i++
		if v, ok := e.resolve(it.value, true); ok {
			return m.emit(it.key, v)
		}
		return true
	}
	if m.tr.cleared(it.key) {
		return true
	}
	return m.emit(it.key, it.value)
}

// Snapshot returns a view of this transaction whose reads add no
// read-conflict range. They still see the transaction's writes.
func (tr *Tx) Snapshot() kv.ReadTransaction { return snapshotView{tr} }

type snapshotView struct{ tr *Tx }

func (s snapshotView) Get(key []byte) kv.FutureValue { return s.tr.get(key, true) }
func (s snapshotView) GetRange(r kv.KeyRange, opts kv.RangeOptions) kv.FutureRange {
	return s.tr.getRange(r, opts, true)
}
func (s snapshotView) Snapshot() kv.ReadTransaction { return s }

// canWrite reports whether a write of key with value (nil for none) may be
// buffered; an invalid key or value fails the transaction, as FoundationDB
// defers such errors to the next read or the commit. The caller holds tr.mu.
func (tr *Tx) canWrite(key, value []byte) bool {
	if !tr.writable() {
		return false
	}
	if code := checkWriteKey(key); code != 0 {
		tr.fail(code)
		return false
	}
	if len(value) > kv.MaxValueSize {
		tr.fail(kv.CodeValueTooLarge)
		return false
	}
	return true
}

// Set buffers key = value.
func (tr *Tx) Set(key, value []byte) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if !tr.canWrite(key, value) {
		return
	}
	e := tr.entryFor(key)
	e.known, e.present, e.value, e.ops = true, true, append(make([]byte, 0, len(value)), value...), nil
	tr.size += len(key) + len(value) + 2*len(key) + 1 // mutation + write-conflict range
}

// Clear buffers the removal of key. A key over kv.MaxKeySize cannot exist,
// so its clear is dropped without an error, as FoundationDB drops it.
func (tr *Tx) Clear(key []byte) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(key) > kv.MaxKeySize && checkWriteKey(key) == kv.CodeKeyTooLarge {
		return // no such key can exist: FoundationDB drops the clear, without an error
	}
	if !tr.canWrite(key, nil) {
		return
	}
	e := tr.entryFor(key)
	e.known, e.present, e.value, e.ops = true, false, nil, nil
	tr.size += len(key) + 2*len(key) + 1
}

// ClearRange buffers the removal of every key in r. An inverted range is
// error 2005, a range reaching past \xff error 2004 (at commit).
func (tr *Tx) ClearRange(r kv.KeyRange) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if !tr.writable() {
		return
	}
	if code := checkRange(r); code != 0 {
		tr.fail(code)
		return
	}
	if bytes.Equal(r.Begin, r.End) {
		return
	}
	if tr.writes != nil {
		var doomed []*wentry
		tr.writes.AscendRange(&wentry{key: r.Begin}, &wentry{key: r.End}, func(e *wentry) bool {
			doomed = append(doomed, e)
			return true
		})
		for _, e := range doomed {
			tr.writes.Delete(e)
		}
	}
	tr.clears = insertRange(tr.clears, kv.KeyRange{Begin: clone(r.Begin), End: clone(r.End)})
	tr.size += 2 * (len(r.Begin) + len(r.End))
}

// Add buffers an atomic little-endian add of delta to key. When the
// transaction already knows key's value (it wrote or cleared it) the sum is
// computed now; otherwise it is applied at commit to the value current then.
func (tr *Tx) Add(key []byte, delta int64) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if !tr.canWrite(key, nil) {
		return
	}
	tr.atomic(key, atomicOp{kind: opAdd, delta: delta})
}

// CompareAndClear buffers an atomic clear of key if its value equals value.
func (tr *Tx) CompareAndClear(key, value []byte) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if !tr.canWrite(key, value) {
		return
	}
	tr.atomic(key, atomicOp{kind: opCompareAndClear, operand: clone(value)})
}

// atomic buffers op on key. Called with tr.mu held.
func (tr *Tx) atomic(key []byte, op atomicOp) {
	tr.size += len(key) + op.size() + 2*len(key) + 1
	e := tr.entry(key)
	switch {
	case e == nil && tr.cleared(key):
		e = tr.entryFor(key) // known absent
		fallthrough
	case e != nil && e.known:
		e.value, e.present = applyOps(e.value, e.present, []atomicOp{op})
	case e == nil:
		e = tr.entryFor(key)
		e.known = false
		e.op1[0] = op
		e.ops = e.op1[:]
	default:
		if n := len(e.ops); op.kind == opAdd && e.ops[n-1].kind == opAdd {
			e.ops[n-1].delta += op.delta // two's-complement sums commute and wrap like FoundationDB's
		} else {
			e.ops = append(e.ops, op)
		}
	}
}

// AddReadConflictRange makes the commit conflict with writes to r committed
// after the read version, as if r had been read.
func (tr *Tx) AddReadConflictRange(r kv.KeyRange) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if !tr.writable() {
		return
	}
	if bytes.Compare(r.Begin, r.End) > 0 {
		tr.fail(kv.CodeInvertedRange)
		return
	}
	if bytes.Equal(r.Begin, r.End) {
		return
	}
	tr.addRead(kv.KeyRange{Begin: clone(r.Begin), End: clone(r.End)})
}

// Cancel ends the transaction without committing; later operations fail
// with transaction_cancelled (1025). Cancel after Commit does nothing.
func (tr *Tx) Cancel() {
	tr.mu.Lock()
	if tr.state == txOpen {
		tr.state = txCancelled
	}
	tr.mu.Unlock()
	tr.release()
}

func (tr *Tx) release() {
	tr.mu.Lock()
	done, rv := tr.released || !tr.pinned, tr.rv
	tr.released = true
	tr.mu.Unlock()
	if !done {
		tr.db.release(rv)
	}
}

// Commit applies the buffered writes atomically at a new version, or fails:
// with a deferred error; transaction_too_old (1007) past Lifetime after its
// first read (a transaction that has not read takes its read version here);
// transaction_too_large (2101) above kv.MaxTransactionSize; not_committed
// (1020) on a conflict; an error wrapping ctx.Err() when the transaction's
// context ended first; or an injected fault. A transaction without writes
// commits locally and always succeeds. The transaction is finished after
// Commit, whatever its result.
func (tr *Tx) Commit() error {
	tr.runHook() // interleave.go: other commits may land here, as on a cluster
	defer tr.release()
	tr.mu.Lock()
	// A read-only commit is local on a cluster too: however old its read
	// version, it succeeds, unless a read found it too old.
	if err := tr.usable(); err != nil && (tr.err != nil || kv.ErrorCode(err) != kv.CodeTransactionTooOld || !tr.readOnly()) {
		if tr.state == txOpen {
			tr.state = txDone
		}
		tr.mu.Unlock()
		return err
	}
	tr.state = txCommitting
	p, size := tr.plan()
	tr.mu.Unlock()
	defer func() {
		tr.mu.Lock()
		tr.state = txDone
		tr.mu.Unlock()
	}()

	if err := tr.ctx.Err(); err != nil {
		return fmt.Errorf("memkv: commit abandoned: %w", err)
	}
	if size > kv.MaxTransactionSize {
		return kv.NewError(kv.CodeTransactionTooLarge)
	}
	if len(p.entries) == 0 && len(p.clears) == 0 {
		return nil // read-only: nothing to resolve, as in FoundationDB
	}
	if lat := tr.db.faultCfg.Load().CommitLatency; lat > 0 {
		if err := sleepUntil(tr.ctx, time.Now().Add(lat)); err != nil {
			return fmt.Errorf("memkv: commit abandoned: %w", err)
		}
	}
	tr.req.plan = p
	err := tr.db.commit(&tr.req)
	// A commit is a round trip on a cluster: the client waits and other
	// goroutines run. Yield here likewise, so that CPU-bound transactions
	// take turns per commit rather than per scheduler time slice (10 ms),
	// which would give a few of them long runs of commits and the others
	// latencies of many slices.
	runtime.Gosched()
	return err
}

// plan freezes the buffered writes for the engine. Called with tr.mu held;
// the entries are not touched again by the transaction.
func (tr *Tx) plan() (*commitPlan, int) {
	p := &commitPlan{rv: tr.rv, clears: tr.clears, reads: mergeRanges(tr.reads)}
	if !tr.pinned {
		// A transaction that never read takes its read version at commit
		// on a cluster: its conflict ranges (AddReadConflictRange) count
		// from now, and it cannot be too old.
		p.rv = tr.db.state.Load().version
	}
	var points []kv.KeyRange
	if tr.writes != nil {
		p.entries = make([]*wentry, 0, tr.writes.Len())
		n := 0
		tr.writes.Ascend(func(e *wentry) bool {
			p.entries = append(p.entries, e)
			n += len(e.key) + 1
			return true
		})
		// The ends of the point ranges, carved from one allocation; the
		// history keeps them until the commit is pruned.
		ends := make([]byte, 0, n)
		points = make([]kv.KeyRange, len(p.entries), len(p.entries)+len(tr.clears))
		for i, e := range p.entries {
			from := len(ends)
			ends = append(append(ends, e.key...), 0)
			points[i] = kv.KeyRange{Begin: e.key, End: ends[from:len(ends):len(ends)]}
		}
	}
	p.writes = mergeRanges(append(points, tr.clears...))
	return p, tr.size
}

// waiter accounts the read round of a future.
type waiter struct {
	tr    *Tx
	round *round // nil: answered locally, or failed at issue
}

func (w waiter) wait() error {
	if w.round == nil {
		return nil
	}
	readyAt := w.tr.startRound(w.round)
	if readyAt.IsZero() {
		return nil
	}
	return sleepUntil(w.tr.ctx, readyAt)
}

// startRound starts r if no wait started it yet and returns when its
// answers arrive (zero without latency).
func (tr *Tx) startRound(r *round) time.Time {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if !r.started {
		r.started = true
		if tr.open == r {
			tr.open = nil
		}
		tr.db.stats.readRounds.Add(1)
		if lat := tr.db.faultCfg.Load().ReadLatency; lat > 0 {
			r.readyAt = time.Now().Add(lat)
		}
	}
	return r.readyAt
}

type futureValue struct {
	waiter
	val     []byte
	present bool
	err     error
}

// Get waits for the value; it returns a fresh copy on each call.
func (f *futureValue) Get() ([]byte, error) {
	if f.err != nil {
		return nil, f.err
	}
	if err := f.wait(); err != nil {
		return nil, err
	}
	if !f.present {
		return nil, nil
	}
	return append(make([]byte, 0, len(f.val)), f.val...), nil
}

type futureRange struct {
	waiter
	pairs []kv.KeyValue
	err   error
}

// Get waits for the pairs; it returns fresh copies on each call.
func (f *futureRange) Get() ([]kv.KeyValue, error) {
	if f.err != nil {
		return nil, f.err
	}
	if err := f.wait(); err != nil {
		return nil, err
	}
	out := make([]kv.KeyValue, len(f.pairs))
	for i, p := range f.pairs {
		out[i] = kv.KeyValue{Key: clone(p.Key), Value: append(make([]byte, 0, len(p.Value)), p.Value...)}
	}
	return out, nil
}
