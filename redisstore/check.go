package redisstore

// Check, the engine's one consistency checker: it reads the whole
// keyspace of a store, checkpoints, instances and persistence state
// (persist_check.go), and reports every broken invariant of the package
// doc and of Persistence. It is for tests
// and operators (ckptctl check), not for hot paths: it scans every key
// under the prefix and keeps the checkpoints' metadata in memory.

import (
	"context"
	"fmt"
	"maps"
	"math/bits"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/ckptstore/ckptstore/driver"
	pdriver "github.com/ckptstore/ckptstore/persist/driver"
)

// storedCP is what Check reads of one checkpoint hash.
type storedCP struct {
	thread, member, blobs string
}

// Store is a driver.Checker: ckptctl check and the tests call it through
// that interface.
var _ driver.Checker = (*Driver)(nil)

// Check reads every key of the store and returns the broken invariants,
// sorted by key; none for a consistent store. It finds:
//
//   - a checkpoint hash with missing fields, that does not decode, whose
//     blob keys or list member do not match its content, or that is not in
//     its thread's list index;
//   - a list index entry without its checkpoint, or naming a checkpoint of
//     another thread, or with a score other than 0;
//   - a blob count at 0 or below, one that differs from a recount of the
//     stored checkpoints, a key used by a checkpoint and not counted, and
//     refkeys differing from the keys of refs;
//   - a lease without a fence or expiry, a fence that is not a positive
//     integer, and a fence that went down: one below the fence an
//     AcquireWriter still on record (its op key) issued for that thread;
//   - a thread index that differs from the threads with a head, a
//     checkpoint or a transcript;
//   - a transcript that is not a JSON array;
//   - an op key without an expiry or with one beyond its TTL (Options.OpTTL
//     for a checkpoint or instance write, persist/driver.OpTokenTTL for a
//     persistence write);
//   - a key of no kind this package writes;
//   - every broken invariant of the persistence keys, "{prefix}:p:…", that
//     Persistence's check finds (see there).
//
// Heads are not checked against checkpoints: the contract lets a head
// name a pruned checkpoint whose id was then reused, in this thread or in
// another, so a head naming another thread's checkpoint is a state the API
// reaches (the conformance suite does), not a broken invariant.
//
// The store should be quiet while Check runs: a write between its reads
// can show as a problem that is not one.
func (s *Driver) Check(ctx context.Context) ([]driver.Problem, error) {
	return s.CheckProgress(ctx, nil)
}

// CheckProgress is Check, calling report (when not nil) after each SCAN
// page with the keys read so far and the share of the database's hash
// table the SCAN has passed (driver.ProgressChecker). The share comes from
// the cursor, which walks the table in reversed-bit order, so reversing
// its bits gives the position; on a Redis Cluster the cursor carries the
// slot too, and the share is -1 (unknown).
func (s *Driver) CheckProgress(ctx context.Context, report func(driver.CheckProgress)) ([]driver.Problem, error) {
	c := &checker{s: s, report: report, cps: map[string]storedCP{}, lists: map[string]map[string]bool{},
		heads: map[string]string{}, fences: map[string]int64{}, transcripts: map[string]bool{}}
	node, err := s.node(ctx)
	if err != nil {
		return nil, err
	}
	if err := c.scan(ctx, node); err != nil {
		return nil, fmt.Errorf("redisstore: check: %w", err)
	}
	if err := c.crossCheck(ctx); err != nil {
		return nil, fmt.Errorf("redisstore: check: %w", err)
	}
	pps, err := (&Persistence{c: s.c, k: newPersistKeys(s.opts.Prefix)}).check(ctx)
	if err != nil {
		return nil, fmt.Errorf("redisstore: check: persistence: %w", err)
	}
	c.problems = append(c.problems, pps...)
	slices.SortFunc(c.problems, func(a, b driver.Problem) int {
		return strings.Compare(a.Key+"\x00"+a.What, b.Key+"\x00"+b.What)
	})
	return c.problems, nil
}

// node is the server that holds the store's keys: on a cluster, the
// master of the store's slot (every key shares one hash tag).
func (s *Driver) node(ctx context.Context) (redis.Cmdable, error) {
	if cc, ok := s.c.(*redis.ClusterClient); ok {
		return cc.MasterForKey(ctx, s.keys.refs)
	}
	return s.c, nil
}

type checker struct {
	s           *Driver
	problems    []driver.Problem
	cps         map[string]storedCP        // checkpoint id →
	lists       map[string]map[string]bool // thread → members of its list index
	heads       map[string]string          // thread → head
	fences      map[string]int64           // thread → f
	transcripts map[string]bool
	acquired    []acquired // AcquireWriter records
	refs        map[string]string
	refKeys     []string
	threads     []string
	// report is CheckProgress's callback (nil: none); keys and done what
	// it was last told.
	report func(driver.CheckProgress)
	keys   int
	done   float64
}

// progress reports a page of n keys, after which SCAN returned cursor.
func (c *checker) progress(n int, cursor uint64, cluster bool) {
	if c.report == nil {
		return
	}
	c.keys += n
	switch {
	case cluster:
		c.done = -1
	case cursor == 0:
		c.done = 1
	default:
		// Reversed, the cursor is the position in the table (its bits
		// above the table's size are 0); a rehash between pages may move
		// it back a little, and the share never goes back.
		c.done = max(c.done, float64(bits.Reverse64(cursor))/(1<<64))
	}
	c.report(driver.CheckProgress{Keys: c.keys, Done: c.done})
}

type acquired struct {
	key, thread string
	fence       int64
}

func (c *checker) add(key, format string, args ...any) {
	c.problems = append(c.problems, driver.Problem{Key: key, What: fmt.Sprintf(format, args...)})
}

// scan reads every key under the prefix, by kind.
func (c *checker) scan(ctx context.Context, node redis.Cmdable) error {
	base := c.s.keys.base
	pattern := globEscape(base) + "*"
	var cursor uint64
	seen := map[string]bool{} // SCAN may return a key twice
	for {
		keys, next, err := node.Scan(ctx, cursor, pattern, 1000).Result()
		if err != nil {
			return err
		}
		keys = slices.DeleteFunc(keys, func(k string) bool { dup := seen[k]; seen[k] = true; return dup })
		// Checkpoints, the bulk of the keys, are read in one pipeline
		// per page; the rest one by one.
		var cps []string
		for _, k := range keys {
			if strings.HasPrefix(k, c.s.keys.cp) {
				cps = append(cps, k)
				continue
			}
			switch err := c.read(ctx, node, k, strings.TrimPrefix(k, base)); {
			case redis.HasErrorPrefix(err, "WRONGTYPE"):
				c.add(k, "a key of the wrong type for its kind")
			case err != nil:
				return err
			}
		}
		if err := c.readCheckpoints(ctx, node, cps); err != nil {
			return err
		}
		_, cluster := c.s.c.(*redis.ClusterClient)
		c.progress(len(keys), next, cluster)
		if next == 0 {
			return nil
		}
		cursor = next
	}
}

// read reads one key; rest is the key after the prefix.
func (c *checker) read(ctx context.Context, node redis.Cmdable, k, rest string) error {
	kind, id, _ := strings.Cut(rest, ":")
	switch {
	case rest == "refs":
		m, err := node.HGetAll(ctx, k).Result()
		c.refs = m
		return err
	case rest == "refkeys":
		return c.zeroScored(ctx, node, k, &c.refKeys)
	case rest == "threads":
		return c.zeroScored(ctx, node, k, &c.threads)
	case kind == "l":
		var ms []string
		if err := c.zeroScored(ctx, node, k, &ms); err != nil {
			return err
		}
		set := make(map[string]bool, len(ms))
		for _, m := range ms {
			set[m] = true
		}
		c.lists[id] = set
	case kind == "t":
		return c.readThread(ctx, node, k, id)
	case kind == "v":
		v, err := node.Get(ctx, k).Bytes()
		if err != nil {
			return err
		}
		c.transcripts[id] = true
		if driver.ValidateTranscript(v) != nil {
			c.add(k, "the transcript is not a JSON array")
		}
	case kind == "o":
		return c.readOp(ctx, node, k, id)
	case kind == "m":
		c.add(k, "a thread of the first layout: run Upgrade")
	case kind == "i":
		// Instance records: InstanceStore's, checked by its own reads.
	case kind == "p":
		// The tenant's persistence state (Persistence keeps every key of
		// it under "{prefix}:p:"), read by its own check after the scan.
	case kind == "s":
		// The tenant's Durable Streams (Streams keeps every key of them
		// under "{prefix}:s:"), checked by streams.Check through their
		// driver.
	default:
		c.add(k, "a key of no kind this package writes")
	}
	return nil
}

// zeroScored reads a sorted set whose scores must all be 0.
func (c *checker) zeroScored(ctx context.Context, node redis.Cmdable, k string, into *[]string) error {
	zs, err := node.ZRangeWithScores(ctx, k, 0, -1).Result()
	if err != nil {
		return err
	}
	for _, z := range zs {
		m, _ := z.Member.(string)
		if z.Score != 0 {
			c.add(k, "member %q has score %v, not 0: the set would not sort by bytes", m, z.Score)
		}
		*into = append(*into, m)
	}
	return nil
}

// readCheckpoints reads the checkpoint hashes keys in one pipeline.
func (c *checker) readCheckpoints(ctx context.Context, node redis.Cmdable, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	cmds := make([]*redis.SliceCmd, len(keys))
	// The pipeline's error is its first command's; each is looked at.
	_, _ = node.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			cmds[i] = p.HMGet(ctx, k, "t", "p", "h", "b", "v", "k", "l")
		}
		return nil
	})
	for i, k := range keys {
		switch err := cmds[i].Err(); {
		case redis.HasErrorPrefix(err, "WRONGTYPE"):
			c.add(k, "a checkpoint key that is not a hash")
		case err != nil:
			return err
		default:
			c.checkCheckpoint(k, strings.TrimPrefix(k, c.s.keys.cp), cmds[i].Val())
		}
	}
	return nil
}

// checkCheckpoint checks one checkpoint hash's fields v and records it.
func (c *checker) checkCheckpoint(k, id string, v []any) {
	for i, f := range []string{"t", "p", "h", "b", "v", "k", "l"} {
		if v[i] == nil {
			c.add(k, "the checkpoint has no field %s", f)
			return
		}
	}
	cp, err := decodeCheckpoint(id, v[0], v[1], v[2], v[3], v[4])
	if err != nil {
		c.add(k, "the checkpoint does not decode: %v", err)
		return
	}
	st := storedCP{thread: v[0].(string), blobs: v[5].(string), member: v[6].(string)}
	if want := strings.Join(cp.BlobKeys(), "\n"); st.blobs != want {
		c.add(k, "blob keys %q, but the content uses %q", st.blobs, want)
	}
	if want := orderMember(cp.CreatedAt, id); st.member != want {
		c.add(k, "list member %q, but createdAt and id make %q", st.member, want)
	}
	c.cps[id] = st
}

func (c *checker) readThread(ctx context.Context, node redis.Cmdable, k, id string) error {
	m, err := node.HGetAll(ctx, k).Result()
	if err != nil {
		return err
	}
	if h, ok := m["h"]; ok {
		c.heads[id] = h
	}
	f, hasF := m["f"]
	_, hasO := m["o"]
	_, hasX := m["x"]
	if hasF {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil || n < 1 {
			c.add(k, "fence %q is not a positive integer", f)
		}
		c.fences[id] = n
	}
	switch {
	case hasO && !hasF:
		c.add(k, "a lease without a fence")
	case hasO != hasX:
		c.add(k, "a lease owner token and expiry must come together (o %v, x %v)", hasO, hasX)
	}
	for f := range m {
		if f != "h" && f != "f" && f != "o" && f != "x" {
			c.add(k, "unknown thread field %q", f)
		}
	}
	return nil
}

func (c *checker) readOp(ctx context.Context, node redis.Cmdable, k, rest string) error {
	ttl, err := node.PTTL(ctx, k).Result()
	if err != nil {
		return err
	}
	switch {
	case ttl < 0: // -1: no expiry (-2, gone meanwhile, is fine)
		if ttl == -1 {
			c.add(k, "an op key without an expiry: it outlives Options.OpTTL")
		}
	case isPersistOp(rest) && ttl > pdriver.OpTokenTTL:
		c.add(k, "a persistence op key expiring in %v, beyond OpTokenTTL %v", ttl, pdriver.OpTokenTTL)
	case !isPersistOp(rest) && ttl > c.s.opts.OpTTL:
		c.add(k, "an op key expiring in %v, beyond Options.OpTTL %v", ttl, c.s.opts.OpTTL)
	}
	if strings.HasPrefix(rest, string(opAcquire)+":") {
		v, err := node.Get(ctx, k).Result()
		if err == redis.Nil {
			return nil
		}
		if err != nil {
			return err
		}
		parts := strings.SplitN(v, ":", 3)
		f, ferr := strconv.ParseInt(parts[0], 10, 64)
		if len(parts) != 3 || ferr != nil {
			c.add(k, "an AcquireWriter record %q is not fence:expiry:thread", v)
			return nil
		}
		c.acquired = append(c.acquired, acquired{key: k, thread: parts[2], fence: f})
	}
	return nil
}

// isPersistOp reports whether rest ("<kind>:<token>") is the op key of a
// persistence write, whose kinds are upper-case.
func isPersistOp(rest string) bool { return rest != "" && 'A' <= rest[0] && rest[0] <= 'Z' }

// crossCheck compares what scan read: indexes against checkpoints, counts
// against a recount, heads, fences and the thread index.
func (c *checker) crossCheck(ctx context.Context) error {
	c.checkLists()
	c.checkCounts()
	c.checkThreads()
	return ctx.Err()
}

// checkLists compares the list indexes with the checkpoints.
func (c *checker) checkLists() {
	k := c.s.keys
	for id, cp := range c.cps {
		if !c.lists[cp.thread][cp.member] {
			c.add(string(k.checkpoint(id)), "not in the list index of its thread %q", cp.thread)
		}
	}
	for thread, ms := range c.lists {
		for m := range ms {
			if len(m) < 8 {
				c.add(string(k.list(thread)), "member %q is too short to hold a position", m)
				continue
			}
			id := m[8:]
			switch cp, ok := c.cps[id]; {
			case !ok:
				c.add(string(k.list(thread)), "an entry for checkpoint %q, which is not stored", id)
			case cp.thread != thread:
				c.add(string(k.list(thread)), "an entry for checkpoint %q of thread %q", id, cp.thread)
			case cp.member != m:
				c.add(string(k.list(thread)), "an entry for checkpoint %q at another position", id)
			}
		}
	}
}

// checkCounts compares the blob counts with a recount of the checkpoints.
func (c *checker) checkCounts() {
	k := c.s.keys
	recount := map[string]int64{}
	for _, cp := range c.cps {
		for _, b := range strings.Split(cp.blobs, "\n") {
			if b != "" {
				recount[b]++
			}
		}
	}
	for key, n := range c.refs {
		count, err := strconv.ParseInt(n, 10, 64)
		switch {
		case err != nil:
			c.add(k.refs, "blob %q has count %q, not an integer", key, n)
		case count <= 0:
			c.add(k.refs, "blob %q has count %d: a count at 0 or below must be removed", key, count)
		case count != recount[key]:
			c.add(k.refs, "blob %q has count %d, a recount %d", key, count, recount[key])
		}
	}
	for key, n := range recount {
		if _, ok := c.refs[key]; !ok {
			c.add(k.refs, "blob %q is used by %d checkpoints and not counted", key, n)
		}
	}
	if want := slices.Sorted(maps.Keys(c.refs)); !slices.Equal(c.refKeys, want) && len(c.refKeys)+len(want) > 0 {
		c.add(k.refKeys, "refkeys holds %d keys, refs %d: they must be the same", len(c.refKeys), len(want))
	}
}

// checkThreads checks the fences against the leases on record and the
// thread index against the threads.
func (c *checker) checkThreads() {
	k := c.s.keys
	for _, a := range c.acquired {
		if f, ok := c.fences[a.thread]; !ok || f < a.fence {
			c.add(string(k.thread(a.thread)), "fence %d went down: AcquireWriter issued %d (%s)", f, a.fence, a.key)
		}
	}
	// want: the threads with a head, a checkpoint or a transcript (every
	// value of c.transcripts is true). Check sorts the problems, so the
	// order of these loops does not show.
	want := maps.Clone(c.transcripts)
	for th := range c.heads {
		want[th] = true
	}
	for th, ms := range c.lists {
		want[th] = want[th] || len(ms) > 0
	}
	listed := map[string]bool{}
	for _, th := range c.threads {
		listed[th] = true
	}
	for th, ok := range want {
		if ok && !listed[th] {
			c.add(k.threads, "thread %q has a head, a checkpoint or a transcript but is not in the thread index", th)
		}
	}
	for th := range listed {
		if !want[th] {
			c.add(k.threads, "thread %q is in the thread index but has no head, checkpoint or transcript", th)
		}
	}
}
