package fdbstore

// Check, the consistency checker: it reads the whole keyspace of a store
// and reports every broken invariant of the package doc. It is for tests
// and operators (ckptctl check), not for hot paths: it reads every key
// under the prefix and keeps a few dozen bytes per checkpoint, thread and
// blob key in memory (not the values).

import (
	"bytes"
	"context"
	"fmt"
	"hash/maphash"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/fdbstore/internal/tuple"
	"github.com/ckptstore/ckptstore/fdbstore/kv"
)

// problem is one broken invariant as Check finds it: the driver.Problem
// it reports, and the thread and the checkpoint whose keys show it, for the
// confirming read; both "" for a problem of the whole store (a blob count,
// a key outside the layout).
type problem struct {
	driver.Problem
	thread, id string
}

// checkLimits bound the transactions of Check. FoundationDB ends a
// transaction after 5 seconds (transaction_too_old), so the scan reads the
// keyspace in pages, several transactions, each stopping after a time, a
// number of bytes or a number of keys.
type checkLimits struct {
	rangeKeys int           // pairs one GetRange returns at most
	txKeys    int           // pairs one scan transaction reads at most
	txBytes   int           // bytes of keys and values one scan transaction reads at most
	txTime    time.Duration // how long one scan transaction goes on reading
	// confirmBytes bounds one confirming transaction (a thread, its
	// checkpoints' index keys and copies): a subject larger than that keeps
	// the problems of the scan, unconfirmed.
	confirmBytes int
}

// defaultCheckLimits keep each transaction well inside FoundationDB's
// 5 s, the one limit of a read-only transaction (the 10 MB limit bounds
// what a commit writes, and Check never commits): a scan transaction reads
// for 2 s, 200,000 pairs or 64 MB at most, in calls of 1,000 pairs (at most
// 100 MB should every value be a full 100 KB chunk, about 3 MB with 2 KB
// checkpoints).
var defaultCheckLimits = checkLimits{rangeKeys: 1000, txKeys: 200_000, txBytes: 64 << 20, txTime: 2 * time.Second, confirmBytes: 64 << 20}

// Store is a driver.Checker: ckptctl check and the tests call it through
// that interface.
var _ driver.Checker = (*Driver)(nil)

// Check reads every key of the store and returns the broken invariants,
// sorted by key; none for a consistent store. The error is for a store
// that could not be read. It finds:
//
//   - a key of no kind this package writes (outside the layout, malformed,
//     or with a value of the wrong shape), and an index or thread key whose
//     bucket is not its id's;
//   - an index entry without its checkpoint's chunks, chunks (a checkpoint)
//     without an index entry, an index naming another thread or createdAt
//     than the chunks, a checkpoint whose value names another id, thread
//     or createdAt than its key, and one id stored twice;
//   - chunk gaps: a checkpoint's, a copy's or a transcript's chunks not
//     numbered 0, 1, …; a stray chunk after a value's end; a copy that
//     differs from the chunks, or copied = 1 without a copy (or 0 with one);
//   - a link without its checkpoint, a checkpoint without its link, and a
//     link whose parent, createdAt, size or blob count differ from the
//     stored value;
//   - a blob count at 0 or below, a count that differs from a recount of
//     the stored checkpoints' BlobKeys, and a blob key in use with no
//     count;
//   - a listed key (the thread index) for a thread with no head,
//     checkpoint or transcript, and a thread with one of them and no
//     listed key;
//   - a transcript that is not a JSON array;
//   - a lease whose fence went down: the AcquireWriter and RenewWriter
//     markers still stored record the fence they took or renewed, so a
//     lease (an absent lease is fence 0) below one of them went down, two
//     AcquireWriter markers with one fence took it twice, and a live lease
//     at the fence an AcquireWriter took must have that call's token; a
//     lease at fence 0 (every lease takes fence + 1);
//   - a leftover op marker: one of an epoch more than one before the
//     thread's newest marker (every write clears the epochs before the one
//     before its own, see checkMarkerExpiry); a marker whose epoch is not
//     its time's, of no known kind or result, or dated more than
//     markerTTL/2 after this clock (the writers' clocks must agree within
//     that);
//   - an instance record that does not decode;
//   - after the store's own keys, those of its persistence
//     (Options.PersistPrefix), with a What that starts "persistence: "
//     (persist_check.go): the engine has one Check.
//
// Not reported, because the contract reaches them: a head naming a
// checkpoint that is not stored, or one stored in another thread (prune
// the head's parent, DeleteHead the head, so that the head names the
// pruned id, then Append that id in another thread:
// TestCheckHeadOfAnotherThread does it through the API); and a marker
// older than markerTTL by Check's clock: a thread that stops writing keeps
// the markers of its last two epochs until its next write, and
// DeleteThread leaves them with the lease. Only a marker older than the
// thread's own newest write allows is a leftover.
//
// The fences a fence check can see are those of the markers not yet
// cleared (about two markerTTLs of a thread's writes): a fence that went
// down after every marker at or above it was cleared cannot be told from
// what is stored, since no key but the lease itself keeps the highest
// fence a thread ever had.
//
// # While writers run
//
// The scan takes several transactions (FoundationDB's 5 s limit), so it
// does not see one instant: a write between two pages can make a
// consistent store look broken (an index read before a DeleteThread, its
// chunks after). So every problem of one thread or checkpoint is
// confirmed: Check reads again, in one transaction, everything of that
// thread (its whole subspace and listed key), the index and copy of each
// of its checkpoints, and the threads those indexes name, and reports the
// problems of that read instead of the scan's: they are real problems of
// one instant. A subject too large to read in one transaction (above
// 64 MB or 2 s of reading) keeps the scan's problems, unconfirmed. On a
// consistent quiet store no problem is found and nothing is read twice.
//
// The blob counts cannot be confirmed that way: a count is shared by
// every thread whose checkpoints hold the blob, and a recount needs every
// checkpoint at one instant, which no FoundationDB transaction can read in
// a large store. The count problems (and a recount that would show a
// leak) are therefore exact only on a quiet store: the exact recount needs
// Check to run with no writer, and a count problem found while writers
// run is a reason to run Check again quietly. The other problems of the
// whole store, keys outside the layout (the first layout's global markers
// among them) and records that do not decode, are of one key each, which
// no write of this package makes.
func (s *Driver) Check(ctx context.Context) ([]driver.Problem, error) {
	return s.check(ctx, defaultCheckLimits, nil)
}

// CheckProgress is Check, calling report (when not nil) after each page
// of the scan with the keys read so far (driver.ProgressChecker). The
// share done is -1: an ordered key space gives no count of the keys
// ahead of a position.
func (s *Driver) CheckProgress(ctx context.Context, report func(driver.CheckProgress)) ([]driver.Problem, error) {
	return s.check(ctx, defaultCheckLimits, report)
}

// check is CheckProgress with the given limits (the tests' are small, to
// make many pages).
func (s *Driver) check(ctx context.Context, lim checkLimits, report func(driver.CheckProgress)) ([]driver.Problem, error) {
	scanned, err := s.scan(ctx, lim, report)
	if err != nil {
		return nil, err
	}
	problems, err := s.confirm(ctx, scanned, lim)
	if err != nil {
		return nil, err
	}
	problems = sortProblems(problems)
	out := make([]driver.Problem, len(problems))
	for i, p := range problems {
		out[i] = p.Problem
	}
	return out, nil
}

// sortProblems sorts by key and what, and drops duplicates (a confirming
// read can find the problem of another subject's read again).
func sortProblems(ps []problem) []problem {
	slices.SortFunc(ps, func(a, b problem) int {
		return strings.Compare(a.Key+"\x00"+a.What, b.Key+"\x00"+b.What)
	})
	return slices.CompactFunc(ps, func(a, b problem) bool { return a.Key == b.Key && a.What == b.What })
}

// scan reads the keyspace in pages and returns the problems it found,
// unconfirmed.
func (s *Driver) scan(ctx context.Context, lim checkLimits, report func(driver.CheckProgress)) ([]problem, error) {
	c := newChecker(s, false)
	keys := 0
	err := walk(ctx, s.db, kv.PrefixRange(s.k.p), lim, &keys, report, func(p kv.KeyValue) bool { c.key(p); return true })
	if err != nil {
		return nil, fmt.Errorf("fdbstore: check: %w", err)
	}
	c.finish()
	if s.opts.PersistPrefix == "" {
		return c.problems, nil
	}
	ps, err := checkPersistence(ctx, s.db, []byte(s.opts.PersistPrefix), lim, &keys, report)
	return append(c.problems, ps...), err
}

// walk reads the pairs of r in pages of one transaction each (scanPage),
// hands each to fn until fn returns false, and adds them to *keys,
// reporting the count after each page when report is not nil. Check and
// the persistence's Dump read through it.
func walk(ctx context.Context, db kv.DB, r kv.KeyRange, lim checkLimits, keys *int, report func(driver.CheckProgress), fn func(kv.KeyValue) bool) error {
	for begin := r.Begin; begin != nil; {
		var page []kv.KeyValue
		var next []byte
		err := db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
			var err error
			page, next, err = scanPage(tr, kv.KeyRange{Begin: begin, End: r.End}, lim)
			return err
		})
		if err != nil {
			return err
		}
		for _, p := range page {
			if !fn(p) {
				return nil
			}
		}
		if *keys += len(page); report != nil && len(page) > 0 {
			report(driver.CheckProgress{Keys: *keys, Done: -1})
		}
		begin = next
	}
	return nil
}

// scanPage reads the pairs of r from its start until a limit of lim; next
// is where the next page starts, nil at the end of r.
func scanPage(tr kv.ReadTransaction, r kv.KeyRange, lim checkLimits) (page []kv.KeyValue, next []byte, err error) {
	start := time.Now()
	size := 0
	for {
		kvs, err := tr.GetRange(r, kv.RangeOptions{Limit: lim.rangeKeys}).Get()
		if err != nil {
			return nil, nil, err
		}
		page = append(page, kvs...)
		for _, p := range kvs {
			size += len(p.Key) + len(p.Value)
		}
		if len(kvs) < lim.rangeKeys {
			return page, nil, nil
		}
		r.Begin = append(append([]byte(nil), kvs[len(kvs)-1].Key...), 0x00)
		if len(page) >= lim.txKeys || size >= lim.txBytes || time.Since(start) >= lim.txTime {
			return page, r.Begin, nil
		}
	}
}

// confirm replaces the scan's problems of each thread or checkpoint by
// those of one transaction that reads that subject whole (see Check). The
// scan's problems of the whole store are kept as they are.
func (s *Driver) confirm(ctx context.Context, scanned []problem, lim checkLimits) ([]problem, error) {
	type group struct {
		threads, ids map[string]bool
		problems     []problem
	}
	groups := map[string]*group{}
	var out []problem
	for _, p := range scanned {
		var name string
		switch {
		case p.thread != "":
			name = "t" + p.thread
		case p.id != "":
			name = "i" + p.id
		default:
			out = append(out, p)
			continue
		}
		g := groups[name]
		if g == nil {
			g = &group{threads: map[string]bool{}, ids: map[string]bool{}}
			groups[name] = g
		}
		if p.thread != "" {
			g.threads[p.thread] = true
		}
		if p.id != "" {
			g.ids[p.id] = true
		}
		g.problems = append(g.problems, p)
	}
	for _, name := range slices.Sorted(maps.Keys(groups)) {
		g := groups[name]
		pairs, ok, err := s.readSubject(ctx, g.threads, g.ids, lim)
		if err != nil {
			return nil, fmt.Errorf("fdbstore: check: %w", err)
		}
		if !ok {
			out = append(out, g.problems...)
			continue
		}
		c := newChecker(s, true)
		for _, p := range pairs {
			c.key(p)
		}
		c.finish()
		out = append(out, c.problems...)
	}
	return out, nil
}

// readSubject reads, in one transaction, every key of the given threads
// and the index ranges of the given ids, then the index ranges of the
// checkpoints found in those threads and the threads those indexes name,
// until nothing new is named. It returns the pairs in key order, and
// ok = false when they pass lim.confirmBytes or the reads lim.txTime.
func (s *Driver) readSubject(ctx context.Context, threads, ids map[string]bool, lim checkLimits) (pairs []kv.KeyValue, ok bool, err error) {
	err = s.db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		sr := &subjectReader{
			s: s, tr: tr, lim: lim, pairs: pairs[:0], start: time.Now(),
			seenT: map[string]bool{}, seenI: map[string]bool{},
			pendT: slices.Sorted(maps.Keys(threads)), pendI: slices.Sorted(maps.Keys(ids)),
		}
		ok, err = sr.read()
		pairs = sr.pairs
		return err
	})
	slices.SortFunc(pairs, func(a, b kv.KeyValue) int { return bytes.Compare(a.Key, b.Key) })
	return pairs, ok, err
}

// subjectReader is one attempt of readSubject's transaction.
type subjectReader struct {
	s            *Driver
	tr           kv.ReadTransaction
	lim          checkLimits
	pairs        []kv.KeyValue
	start        time.Time
	size         int             // the bytes of pairs
	seenT, seenI map[string]bool // threads and ids read
	pendT, pendI []string        // threads and ids named, to read
}

// over reports that the reads passed the limits.
func (sr *subjectReader) over() bool {
	return sr.size > sr.lim.confirmBytes || time.Since(sr.start) > sr.lim.txTime
}

func (sr *subjectReader) add(p kv.KeyValue) {
	sr.size += len(p.Key) + len(p.Value)
	sr.pairs = append(sr.pairs, p)
}

// read reads until nothing new is named; false when over the limits.
func (sr *subjectReader) read() (bool, error) {
	for len(sr.pendT)+len(sr.pendI) > 0 {
		if len(sr.pendT) > 0 {
			th := sr.pendT[0]
			sr.pendT = sr.pendT[1:]
			if sr.seenT[th] {
				continue
			}
			sr.seenT[th] = true
			if ok, err := sr.readThread(th); err != nil || !ok {
				return ok, err
			}
			continue
		}
		if err := sr.readIDs(); err != nil {
			return false, err
		}
		if sr.over() {
			return false, nil
		}
	}
	return true, nil
}

// readThread reads every key of thread th, naming the ids of its
// checkpoints, and its listed key; false when over the limits.
func (sr *subjectReader) readThread(th string) (bool, error) {
	s, lim := sr.s, sr.lim
	dp := s.k.dataPrefix(th)
	r := rangeOf(s.k.threadBase(th, 0))
	for {
		kvs, err := sr.tr.GetRange(r, kv.RangeOptions{Limit: lim.rangeKeys}).Get()
		if err != nil {
			return false, err
		}
		for _, p := range kvs {
			sr.add(p)
			if t, err := suffix(p.Key, dp); err == nil {
				if id, ok := elem[string](t, 1, 3); ok && !sr.seenI[id] {
					sr.pendI = append(sr.pendI, id)
				}
			}
		}
		if sr.over() {
			return false, nil
		}
		if len(kvs) < lim.rangeKeys {
			break
		}
		r.Begin = append(append([]byte(nil), kvs[len(kvs)-1].Key...), 0x00)
	}
	v, err := sr.tr.Get(s.k.listed(th)).Get()
	if err != nil {
		return false, err
	}
	if v != nil {
		sr.pairs = append(sr.pairs, kv.KeyValue{Key: s.k.listed(th), Value: v})
	}
	return true, nil
}

// readIDs reads the index ranges of the pending ids, together (each at
// most one checkpoint's index and copy, under 10 MB), naming the threads
// their indexes name.
func (sr *subjectReader) readIDs() error {
	s, n := sr.s, min(len(sr.pendI), sr.lim.rangeKeys)
	var ids []string
	var fs []kv.FutureRange
	for _, id := range sr.pendI[:n] {
		if !sr.seenI[id] {
			sr.seenI[id] = true
			ids = append(ids, id)
			fs = append(fs, sr.tr.GetRange(s.k.idRange(id), kv.RangeOptions{}))
		}
	}
	sr.pendI = sr.pendI[n:]
	for i, f := range fs {
		kvs, err := f.Get()
		if err != nil {
			return err
		}
		ixKey := s.k.index(ids[i])
		for _, p := range kvs {
			sr.add(p)
			if v, err := decodeIndex(p.Value); err == nil && bytes.Equal(p.Key, ixKey) && !sr.seenT[v.thread] {
				sr.pendT = append(sr.pendT, v.thread)
			}
		}
	}
	return nil
}

// subject is the thread and checkpoint of a problem.
type subject struct{ thread, id string }

// checker takes the keys of a store in key order and collects problems.
type checker struct {
	s *Driver
	// partial: only some threads and ids were read (a confirming read):
	// the checks that need every key (the blob counts) are left out.
	partial  bool
	seed     maphash.Seed
	problems []problem
	index    map[string]*checkedIndex
	threads  map[string]*checkedThread
	refs     map[string]int64 // stored counts
	badRefs  map[string]bool  // counts whose value is not 8 bytes (reported)
	counted  map[string]int64 // recount from the stored checkpoints
	// undecoded counts the checkpoints whose value does not decode: their
	// blob keys are unknown, so the counts are not compared with the recount.
	undecoded int
	listed    map[string]bool
	// The runs of consecutive keys being read: the copy chunks after an
	// index key, a checkpoint's chunks, a transcript's chunks.
	curIndex *checkedIndex
	copyHash maphash.Hash
	cur      *chunkRun
	curTr    *chunkRun
}

type checkedIndex struct {
	id      string
	key     []byte
	v       indexValue
	ok      bool // the value decoded
	copies  int  // copy chunks read
	copyGap bool // their numbers were not 0, 1, …
	copySum uint64
	hasData bool
}

type checkedThread struct {
	head, data, transcript bool
	lease                  *leaseValue // nil: no lease key
	links                  map[string]linkValue
	linkKeys               map[string][]byte
	cps                    map[string]checkedCP
	markers                []checkedMarker
}

type checkedCP struct {
	decoded   bool // the fields below are known
	parent    string
	createdAt float64
	size      int64
	blobs     int64
	key       []byte
}

type checkedMarker struct {
	key      []byte
	token    string
	epoch    int64
	kind     opKind
	hasFence bool // an AcquireWriter or RenewWriter marker, with the fence it recorded
	fence    int64
	future   bool // dated after this clock allows (reported; not the newest for expiry)
}

// chunkRun is a run of chunks being read: a checkpoint's (createdAt, id) or
// a transcript's.
type chunkRun struct {
	thread    string
	createdAt float64
	id        string
	key       []byte // the first chunk's
	nums      []int64
	values    [][]byte
}

// decode finds the value of the chunks: the longest run numbered 0, 1, …
// that decode accepts, or a shorter run when a stray chunk follows the
// value's end. end is the number of chunks of the value; on failure, gap
// is the first missing chunk number (-1 when the run has no gap).
func (d *chunkRun) decode(decode func([]byte) error) (v []byte, end, gap int, err error) {
	n := 0
	for n < len(d.nums) && d.nums[n] == int64(n) {
		n++
	}
	gap = -1
	if n < len(d.nums) {
		gap = n
	}
	v = bytes.Join(d.values[:n], nil)
	if err = decode(v); err == nil {
		return v, n, gap, nil
	}
	for k := n - 1; k >= 1; k-- {
		if w := bytes.Join(d.values[:k], nil); decode(w) == nil {
			return w, k, gap, nil
		}
	}
	return nil, 0, gap, err
}

func newChecker(s *Driver, partial bool) *checker {
	return &checker{s: s, partial: partial, seed: maphash.MakeSeed(), index: map[string]*checkedIndex{},
		threads: map[string]*checkedThread{}, refs: map[string]int64{}, badRefs: map[string]bool{}, counted: map[string]int64{}, listed: map[string]bool{}}
}

func (c *checker) bad(sub subject, key []byte, format string, args ...any) {
	c.problems = append(c.problems, problem{Problem: driver.Problem{Key: string(key), What: fmt.Sprintf(format, args...)}, thread: sub.thread, id: sub.id})
}

func (c *checker) thread(id string) *checkedThread {
	th := c.threads[id]
	if th == nil {
		th = &checkedThread{links: map[string]linkValue{}, linkKeys: map[string][]byte{}, cps: map[string]checkedCP{}}
		c.threads[id] = th
	}
	return th
}

// key files one key of the store; keys come in key order.
func (c *checker) key(p kv.KeyValue) {
	t, err := tuple.Unpack(p.Key[len(c.s.k.p):])
	if err != nil || len(t) < 2 {
		c.endRuns()
		c.bad(subject{}, p.Key, "not a key of this package")
		return
	}
	space, _ := t[0].(string)
	if space == spaceIndex {
		c.endData()
		c.endTranscript()
		c.indexKey(p, t[1:])
		return
	}
	if space != spaceThread {
		c.endRuns()
	}
	switch space {
	case spaceThread:
		c.endIndex()
		c.threadKey(p, t[1:])
	case spaceListed:
		if th, ok := elem[string](t[1:], 0, 1); ok && len(p.Value) == 0 {
			c.listed[th] = true
			return
		}
		c.bad(subject{}, p.Key, "malformed listed key or value")
	case spaceRefs:
		key, ok := elem[string](t[1:], 0, 1)
		if !ok || len(p.Value) != 8 {
			c.bad(subject{}, p.Key, "malformed blob count key or value (%d bytes)", len(p.Value))
			if ok {
				c.badRefs[key] = true
			}
			return
		}
		c.refs[key] = kv.DecodeInt64(p.Value)
	case spaceInstance:
		key, ok := elem[string](t[1:], 0, 1)
		if !ok {
			c.bad(subject{}, p.Key, "malformed instance key")
		} else if _, err := decodeInstance(key, p.Value); err != nil {
			c.bad(subject{}, p.Key, "instance record: %v", err)
		}
	default:
		c.bad(subject{}, p.Key, "not a key of this package")
	}
}

// endRuns ends every run of chunks.
func (c *checker) endRuns() {
	c.endIndex()
	c.endData()
	c.endTranscript()
}

func (c *checker) indexKey(p kv.KeyValue, t tuple.Tuple) {
	b, ok1 := elemAt[int64](t, 0)
	id, ok2 := elemAt[string](t, 1)
	if !ok1 || !ok2 || len(t) > 3 {
		c.endIndex()
		c.bad(subject{}, p.Key, "malformed index key")
		return
	}
	sub := subject{id: id}
	if len(t) == 2 {
		c.endIndex()
		if b != bucket(id) {
			// Of the whole store: the confirming read of id, by its
			// bucket, would not see this key.
			c.bad(subject{}, p.Key, "bucket %d, want %d", b, bucket(id))
		}
		ix := &checkedIndex{id: id, key: p.Key}
		c.index[id] = ix
		c.curIndex = ix
		c.copyHash.SetSeed(c.seed)
		v, err := decodeIndex(p.Value)
		if err != nil {
			c.bad(sub, p.Key, "index value: %v", err)
			return
		}
		ix.v, ix.ok = v, true
		return
	}
	n, ok := t[2].(int64)
	ix := c.curIndex
	if !ok {
		c.bad(sub, p.Key, "malformed copy key")
		return
	}
	if ix == nil || ix.id != id {
		c.endIndex()
		c.bad(sub, p.Key, "copy chunk of %q without an index", id)
		return
	}
	if n != int64(ix.copies) && !ix.copyGap {
		ix.copyGap = true
		c.bad(sub, p.Key, "copy chunk %d, want %d", n, ix.copies)
	}
	ix.copies++
	c.copyHash.Write(p.Value)
}

// endIndex ends the copy of the index read last.
func (c *checker) endIndex() {
	if ix := c.curIndex; ix != nil {
		ix.copySum = c.copyHash.Sum64()
		c.curIndex = nil
	}
}

func (c *checker) threadKey(p kv.KeyValue, t tuple.Tuple) {
	b, ok1 := elemAt[int64](t, 0)
	id, ok2 := elemAt[string](t, 1)
	sub, ok3 := elemAt[string](t, 2)
	if !ok1 || !ok2 || !ok3 {
		c.endRuns()
		c.bad(subject{}, p.Key, "malformed thread key")
		return
	}
	th := c.thread(id)
	at := subject{thread: id}
	if b != bucket(id) {
		c.bad(subject{}, p.Key, "bucket %d, want %d", b, bucket(id)) // as for index keys
	}
	rest := t[3:]
	if sub != threadData {
		c.endData()
	}
	if sub != threadTranscript {
		c.endTranscript()
	}
	switch sub {
	case threadHead:
		if len(rest) != 0 || len(p.Value) == 0 {
			c.bad(at, p.Key, "malformed head key or empty head (an absent key is no head)")
			return
		}
		th.head = true
	case threadLease:
		l, err := decodeLease(p.Value)
		switch {
		case err != nil || len(rest) != 0:
			c.bad(at, p.Key, "malformed lease key or value: %v", err)
		default:
			if l.fence < 1 {
				c.bad(at, p.Key, "lease at fence %d: every lease takes fence + 1 ≥ 1", l.fence)
			}
			th.lease = &l
		}
	case threadData:
		c.dataKey(p, id, rest)
	case threadLinks:
		cid, ok := elem[string](rest, 0, 1)
		l, err := decodeLink(p.Value)
		if !ok || err != nil {
			c.bad(at, p.Key, "malformed link: %v", err)
			return
		}
		th.links[cid], th.linkKeys[cid] = l, p.Key
	case threadTranscript:
		n, ok := elem[int64](rest, 0, 1)
		if !ok {
			c.bad(at, p.Key, "malformed transcript key")
			return
		}
		if d := c.curTr; d == nil || d.thread != id {
			c.endTranscript()
			c.curTr = &chunkRun{thread: id, key: p.Key}
		}
		c.curTr.nums = append(c.curTr.nums, n)
		c.curTr.values = append(c.curTr.values, p.Value)
	case threadOps:
		c.markerKey(p, id, th, rest)
	default:
		c.bad(at, p.Key, "not a key of this package")
	}
}

// markerKey files the marker (T, "o", epoch, token) → tuple(ms) kind
// result.
func (c *checker) markerKey(p kv.KeyValue, thread string, th *checkedThread, rest tuple.Tuple) {
	at := subject{thread: thread}
	epoch, ok1 := elem[int64](rest, 0, 2)
	tok, ok2 := elem[string](rest, 1, 2)
	ms, result, err := decodeMarker(p.Value)
	if !ok1 || !ok2 || err != nil || len(result) == 0 {
		c.bad(at, p.Key, "malformed marker: %v", err)
		return
	}
	if epoch != ms/markerTTL.Milliseconds() {
		c.bad(at, p.Key, "marker of epoch %d written at %d ms", epoch, ms)
	}
	m := checkedMarker{key: p.Key, token: tok, epoch: epoch, kind: opKind(result[0])}
	result = result[1:]
	switch {
	case m.kind == opAcquire || m.kind == opRenew:
		l, err := decodeTaken(tok, result)
		if err != nil {
			c.bad(at, p.Key, "marker of kind %c whose result is not a lease: %v", m.kind, err)
			return
		}
		m.hasFence, m.fence = true, l.fence
	case !strings.ContainsRune(opKinds, rune(m.kind)):
		c.bad(at, p.Key, "marker of no kind of write (%q)", byte(m.kind))
	case len(result) != 0:
		c.bad(at, p.Key, "marker of kind %c with a result of %d bytes", m.kind, len(result))
	}
	if now := c.s.wallNow(); ms > now.Add(markerTTL/2).UnixMilli() {
		m.future = true
		c.bad(at, p.Key, "a marker dated %v, more than markerTTL/2 after this clock (%v): it would outlive markerTTL",
			time.UnixMilli(ms).UTC(), now.UTC())
	}
	th.markers = append(th.markers, m)
}

// dataKey adds one chunk of a checkpoint's data; a checkpoint is checked
// when its last chunk has been read.
func (c *checker) dataKey(p kv.KeyValue, thread string, rest tuple.Tuple) {
	ca, ok1 := elem[float64](rest, 0, 3)
	id, ok2 := elem[string](rest, 1, 3)
	n, ok3 := elem[int64](rest, 2, 3)
	if !ok1 || !ok2 || !ok3 {
		c.endData()
		c.bad(subject{thread: thread}, p.Key, "malformed checkpoint key")
		return
	}
	if d := c.cur; d == nil || d.thread != thread || d.id != id || d.createdAt != ca {
		c.endData()
		c.cur = &chunkRun{thread: thread, createdAt: ca, id: id, key: p.Key}
	}
	c.cur.nums = append(c.cur.nums, n)
	c.cur.values = append(c.cur.values, p.Value)
}

// endData checks the checkpoint whose chunks were read last.
func (c *checker) endData() {
	d := c.cur
	if d == nil {
		return
	}
	c.cur = nil
	at := subject{thread: d.thread, id: d.id}
	th := c.thread(d.thread)
	th.data = true
	if _, dup := th.cps[d.id]; dup {
		c.bad(at, d.key, "checkpoint %q stored twice in its thread", d.id)
		return
	}
	ccp := checkedCP{createdAt: d.createdAt, key: d.key}
	ix := c.index[d.id]
	switch {
	case ix == nil:
		c.bad(at, d.key, "checkpoint %q has no index", d.id)
	case !ix.ok:
	case ix.v.thread != d.thread || ix.v.createdAt != d.createdAt:
		c.bad(at, d.key, "the index of %q names thread %q at %v", d.id, ix.v.thread, ix.v.createdAt)
		ix = nil
	default:
		ix.hasData = true
	}
	var cp *ckptstore.Checkpoint
	enc, end, gap, err := d.decode(func(b []byte) (err error) { cp, err = decodeCheckpoint(b); return err })
	if err != nil {
		c.undecoded++
		if gap >= 0 {
			c.bad(at, d.key, "checkpoint %q: chunk %d is missing (chunks %v)", d.id, gap, d.nums)
		} else {
			c.bad(at, d.key, "checkpoint %q: the value does not decode (the blob counts are not recounted): %v", d.id, err)
		}
		th.cps[d.id] = ccp
		return
	}
	if end < len(d.nums) {
		c.bad(at, d.key, "checkpoint %q: stray chunks %v after the end of its value (chunk %d)", d.id, d.nums[end:], end-1)
	}
	if cp.ID != d.id || cp.ThreadID != d.thread || sortKey(cp.CreatedAt) != d.createdAt {
		c.bad(at, d.key, "the value holds checkpoint %q of thread %q at %v", cp.ID, cp.ThreadID, cp.CreatedAt)
	}
	blobs := cp.BlobKeys()
	ccp.decoded, ccp.parent, ccp.size, ccp.blobs = true, cp.ParentCheckpointID, int64(len(enc)), int64(len(blobs))
	th.cps[d.id] = ccp
	for _, b := range blobs {
		c.counted[b]++
	}
	if ix != nil && ix.ok && ix.v.copied && ix.copies > 0 && !ix.copyGap && ix.copySum != maphash.Bytes(c.seed, enc) {
		c.bad(at, ix.key, "the copy of %q differs from its data", d.id)
	}
}

// endTranscript checks the transcript whose chunks were read last.
func (c *checker) endTranscript() {
	d := c.curTr
	if d == nil {
		return
	}
	c.curTr = nil
	c.thread(d.thread).transcript = true
	at := subject{thread: d.thread}
	_, end, gap, err := d.decode(driver.ValidateTranscript)
	switch {
	case err != nil && gap >= 0:
		c.bad(at, d.key, "transcript chunk %d is missing (chunks %v)", gap, d.nums)
	case err != nil:
		c.bad(at, d.key, "transcript: %v", err)
	case end < len(d.nums):
		c.bad(at, d.key, "stray transcript chunks %v after the end of its value (chunk %d)", d.nums[end:], end-1)
	}
}

// finish ends the last runs and checks what needs every key read.
func (c *checker) finish() {
	c.endRuns()
	c.checkIndexes()
	for _, id := range slices.Sorted(maps.Keys(c.threads)) {
		c.checkThread(id, c.threads[id])
	}
	for id := range c.listed {
		if _, ok := c.threads[id]; !ok {
			c.bad(subject{thread: id}, c.s.k.listed(id), "listed thread %q has no keys", id)
		}
	}
	if c.partial {
		return
	}
	c.checkCounts()
}

// checkIndexes checks every index against the data and copy read.
func (c *checker) checkIndexes() {
	for id, ix := range c.index {
		if !ix.ok {
			continue
		}
		at := subject{thread: ix.v.thread, id: id}
		if !ix.hasData {
			if th := c.threads[ix.v.thread]; th != nil && th.linkKeys[id] != nil {
				// One problem, not also "link without its checkpoint".
				c.bad(at, ix.key, "the index and the link of %q have no chunks in thread %q", id, ix.v.thread)
				delete(th.linkKeys, id)
				delete(th.links, id)
			} else {
				c.bad(at, ix.key, "index of %q without its chunks in thread %q", id, ix.v.thread)
			}
		}
		if ix.v.copied != (ix.copies > 0) {
			c.bad(at, ix.key, "copied = %v with %d copy chunks", ix.v.copied, ix.copies)
		}
	}
}

// checkThread checks one thread's links, listed key, lease and markers.
func (c *checker) checkThread(id string, th *checkedThread) {
	at := subject{thread: id}
	for cid, l := range th.links {
		cp, ok := th.cps[cid]
		if !ok {
			c.bad(at, th.linkKeys[cid], "link of %q without its checkpoint", cid)
			continue
		}
		if cp.decoded && (l.parent != cp.parent || l.createdAt != cp.createdAt || l.size != cp.size || l.blobs != cp.blobs) {
			c.bad(at, th.linkKeys[cid], "link %+v, checkpoint has parent %q, createdAt %v, size %d, %d blobs", l, cp.parent, cp.createdAt, cp.size, cp.blobs)
		}
	}
	for cid, cp := range th.cps {
		if _, ok := th.links[cid]; !ok {
			c.bad(at, cp.key, "checkpoint %q has no link", cid)
		}
	}
	if nonEmpty := th.head || th.data || th.transcript; nonEmpty != c.listed[id] {
		c.bad(at, c.s.k.listed(id), "listed = %v for a thread with head %v, checkpoints %v, transcript %v", c.listed[id], th.head, th.data, th.transcript)
	}
	c.checkMarkerExpiry(id, th)
	c.checkFence(id, th)
}

// checkMarkerExpiry reports the markers that the thread's newest write
// cleared: every write clears its thread's markers of the epochs before
// the one before its own, and a marker written after it is of that epoch
// or later (a write gives up after retrying for markerTTL/2, and the
// writers' clocks agree within less), so no marker is more than one epoch
// older than the newest.
func (c *checker) checkMarkerExpiry(id string, th *checkedThread) {
	newest := int64(math.MinInt64)
	for _, m := range th.markers {
		if !m.future {
			newest = max(newest, m.epoch)
		}
	}
	for _, m := range th.markers {
		if !m.future && m.epoch < newest-1 {
			c.bad(subject{thread: id}, m.key, "a marker of epoch %d left over: the thread's writes of epoch %d cleared the epochs before %d", m.epoch, newest, newest-1)
		}
	}
}

// checkFence compares the thread's lease with the fences its AcquireWriter
// and RenewWriter markers recorded.
func (c *checker) checkFence(id string, th *checkedThread) {
	at := subject{thread: id}
	leaseKey := c.s.k.lease(id)
	fence := int64(0) // an absent lease is fence 0
	if th.lease != nil {
		fence = th.lease.fence
	}
	acquired := map[int64]string{} // fence → token of the AcquireWriter
	var top checkedMarker
	for _, m := range th.markers {
		if !m.hasFence {
			continue
		}
		if m.kind == opAcquire {
			if other, dup := acquired[m.fence]; !dup {
				acquired[m.fence] = m.token
			} else if other != m.token {
				c.bad(at, m.key, "AcquireWriter calls %q and %q both took fence %d", other, m.token, m.fence)
			}
		}
		if m.fence > top.fence {
			top = m
		}
	}
	switch {
	case top.fence > fence:
		c.bad(at, leaseKey, "fence %d went down: marker %q recorded fence %d", fence, top.key, top.fence)
	case th.lease != nil && th.lease.token != "":
		if tok, ok := acquired[fence]; ok && tok != th.lease.token {
			c.bad(at, leaseKey, "the lease at fence %d has owner token %q, the AcquireWriter that took that fence %q", fence, th.lease.token, tok)
		}
	}
}

// checkCounts compares the blob counts with a recount of the checkpoints.
func (c *checker) checkCounts() {
	for key, n := range c.refs {
		switch {
		case n <= 0:
			c.bad(subject{}, c.s.k.ref(key), "count %d: a count at 0 is cleared", n)
		case c.undecoded > 0:
		case n != c.counted[key]:
			c.bad(subject{}, c.s.k.ref(key), "count %d, %d stored checkpoints use it", n, c.counted[key])
		}
	}
	if c.undecoded > 0 {
		return
	}
	for key, n := range c.counted {
		if _, ok := c.refs[key]; !ok && !c.badRefs[key] {
			c.bad(subject{}, c.s.k.ref(key), "no count, %d stored checkpoints use it", n)
		}
	}
}

// elemAt is element i of t, when there is one of type T.
func elemAt[T any](t tuple.Tuple, i int) (T, bool) {
	var zero T
	if i >= len(t) {
		return zero, false
	}
	v, ok := t[i].(T)
	return v, ok
}
