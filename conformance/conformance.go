// Package conformance is the test suite every ckptstore store must pass, in
// the manner of testing/fstest.TestFS and golang.org/x/net/nettest.TestConn:
// a store's own test calls RunStore (and RunInstanceStore for its instance
// store) with a factory, and the suite proves, one subtest per rule of
// docs/contract.md, that the store keeps the contract. An engine's test
// calls RunEngine once instead, which runs every contract's suite (these
// two, persist/persisttest's and, for an engine that keeps streams,
// streams/streamstest's) on the tenants of one factory.
//
// RunStore proves:
//
//   - Empty, RoundTrip, CreatedAt, Conversation: a fresh store is empty;
//     every field comes back exactly as appended (createdAt to the bit
//     except the sign of zero, the conversation byte for byte, files and
//     artifacts in order).
//   - IDs: unusual but valid ids work (up to driver.MaxIDBytes, one and
//     two bytes a rune) and threads whose ids share a prefix stay apart;
//     empty, invalid UTF-8 and over-long ids fail with ErrInvalidID in
//     reads as in writes (TooLong: every method that takes an id, with an
//     error that quotes only a prefix of it, and nothing stored).
//   - Validation: every invalid input of docs/contract.md's Validation section, each
//     its own named case, fails with ErrInvalidEntry (ErrInvalidID for ids)
//     and changes nothing; the valid edge cases (2^53−1, "C:foo", empty
//     files, unicode paths…) are accepted and round-trip.
//   - AppendOrder, DeleteHeadOrder, DeleteCheckpointsOrder, ForkOrder,
//     AcquireWriterOrder, SaveThreadOrder,
//     DeleteThreadOrder, ImportOrder, ListPageOrder, ThreadsOrder: for each
//     check of a method alone and for each pair of checks, inputs failing
//     both get the earlier check's error, and every failed call leaves
//     heads, List, Get, ListBlobReferences, transcripts and the thread listing
//     exactly as they were.
//     RunStore runs the checks that need the store's state (and the pairs
//     whose earlier check is one); the pure half, which the portable
//     store decides before any driver, is RunPureChecks', which this
//     package's own test runs once, over memstore.
//   - Append: the chain, unique ids across threads, id reuse after delete.
//   - Immutability: changing an appended input or a returned value changes
//     nothing stored.
//   - Ordering: List sorts by createdAt (negative, fractional, ±0 equal),
//     then by the UTF-8 bytes of the id (é, a, B, 😀 list as B a é 😀).
//   - ListBlobReferences: distinct keys per checkpoint, shared keys across
//     checkpoints and threads, keys forgotten at 0, sorted by bytes.
//   - Leases: no waiting, threads independent, the expiry boundary to the
//     millisecond, renew = now + duration, takeover with a higher fence,
//     stale, released and wrong-thread writers fail every write with
//     ErrWriterLost and change nothing, a stale Release leaves the
//     replacement in place, a Release with a forged token or a fence ±1
//     changes nothing and a Renew with them fails, option defaults.
//   - DeleteHead, DeleteCheckpoints, Fork: their rules, including heads that
//     name a missing or foreign checkpoint and parent cycles made by id
//     reuse.
//   - Transcripts, ForkTranscript: SaveThread and
//     LoadThread byte for byte, "[]" by default, no lease needed; an empty
//     value, a non-array or invalid UTF-8 refused; a saved "[]" counts as a
//     transcript; a fork is refused by a destination's transcript and writes
//     the destination's transcript, atomically.
//   - DeleteThread, DeleteThreadSweep: every
//     checkpoint on and off the chain, the head and the transcript go, the
//     lease stays and can write again, counts drop, an empty thread gives 0,
//     stale and forged writers fail; then sweep.Run on a memory bucket frees
//     exactly the blobs only that thread used.
//   - ListPage: limits 0, 1, 1000, 1001, −1; List's order
//     and its reverse; cursors name positions (the cursor's checkpoint may be
//     deleted, one from another thread works); paging while appending,
//     deleting and pruning between pages skips and repeats nothing that
//     existed throughout.
//   - Threads: only threads with a head, a
//     checkpoint or a transcript (not a lease alone), in byte order, paged.
//   - Import: exact reproduction (createdAt bits, -0
//     included, off-chain checkpoints, heads naming missing ids, transcripts),
//     idempotent re-runs, ErrDuplicateID for another thread's id or other
//     content, the head rules, counts for new checkpoints only, and an
//     export–DeleteThread–import round trip that restores the store.
//   - OpTokens: Append, DeleteHead, ForkFromCheckpoint and AcquireWriter
//     repeated with the ckptstore.WithOpToken of a call that committed
//     report its success (the same lease for AcquireWriter, whose owner
//     token is the op token) and change nothing; a failed call's repeat
//     fails again.
//   - Concurrency: 16 goroutines race to acquire and append on one thread
//     and on many threads; at most one holder per thread at any moment,
//     every chain stays linear and counts equal a recount.
//   - Model: a pgregory.net/rapid state machine runs random sequences of
//     every operation of the contract (with writes with op tokens
//     repeated later), valid and invalid, with clock
//     moves, against the store and a plain in-package model; every result
//     and error must match, and at the end transcripts and Threads match the
//     model and ListBlobReferences equals a recount of the stored checkpoints.
//   - Context: a cancelled context fails every method with an error
//     wrapping context.Canceled and changes nothing.
//
// RunInstanceStore proves the instance store rules: Get, full-replace
// Upsert, Delete, last write wins, no other record changes, ErrInvalidID
// for bad keys, and copies on read and write.
//
// Time moves only through the Clock the suite puts in Options.Now; no test
// sleeps. Errors are checked with errors.Is against exactly the expected
// sentinel, the wire code of ckptstore.Code, and the absence of every other
// sentinel. Nil and empty slices are equal, and an empty conversation equals
// "[]", since the contract does not tell them apart.
//
// A store's test calls the suite with a factory that returns a fresh, empty
// store built with the options it is given:
//
//	func TestConformance(t *testing.T) {
//		conformance.RunStore(t, func(t *testing.T, opts ckptstore.Options) conformance.Store {
//			return memstore.New(opts)
//		})
//		conformance.RunInstanceStore(t, func(t *testing.T) conformance.InstanceStore {
//			return memstore.NewInstanceStore()
//		})
//	}
//
// The factory may register cleanups on the t it receives. Subtests run one
// after another, never in parallel, so stores that share a server may reset
// it in the factory. RunStoreWith takes Options for slow stores (fewer
// model sequences, fewer concurrent appends); -rapid.checks, -rapid.steps
// and -rapid.seed tune and replay the model-based test as usual.
package conformance

import (
	"testing"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

// The lease timing the suite gives every store, as in the TypeScript suite
// of @tanstack/ai-sandbox: short, so tests move the clock by a few
// milliseconds, and whole milliseconds, as stores keep lease times.
const (
	LeaseDuration = 100 * time.Millisecond
	RenewAfter    = 25 * time.Millisecond
)

// Start is the time every Clock of the suite starts at: a whole millisecond.
var Start = time.UnixMilli(1_700_000_000_000)

// Clock is the manual clock the suite puts in Options.Now: the module's one
// test clock (internal/testkit). It moves only when told to (Advance, Set,
// Tick) and is safe for concurrent use; Now has the signature of
// Options.Now. The suite moves it in whole milliseconds, as stores keep
// lease times.
type Clock = testkit.Clock

// NewClock returns a Clock showing start.
func NewClock(start time.Time) *Clock { return testkit.NewClock(start) }

// Options tune how hard RunStoreWith works. The zero value is the default
// that RunStore uses.
type Options struct {
	// ModelChecks caps the number of random operation sequences of the
	// model-based test. 0 means rapid's own count: -rapid.checks (or
	// RAPID_CHECKS), 100 unless set, a fifth of it under -short. Slow
	// stores (a real server with injected faults) may lower it.
	ModelChecks int
	// ConcurrentAppends is how many checkpoints each of the 16 goroutines
	// of the concurrency tests appends; 0 means 6.
	ConcurrentAppends int
}

// newStoreFunc returns a fresh, empty store that uses opts for its clock
// and lease timing. It may register cleanups on t.
type newStoreFunc = func(t *testing.T, opts ckptstore.Options) Store

// RunStore runs the whole checkpoint store suite, with the default Options,
// against stores made by newStore. Each call of newStore must return a
// fresh, empty store that uses the given options: the suite's Clock as Now,
// LeaseDuration and RenewAfter (occasionally zero, to test the defaults).
func RunStore(t *testing.T, newStore func(t *testing.T, opts ckptstore.Options) Store) {
	t.Helper()
	RunStoreWith(t, newStore, Options{})
}

// RunStoreWith is RunStore with tuning options.
func RunStoreWith(t *testing.T, newStore func(t *testing.T, opts ckptstore.Options) Store, o Options) {
	t.Helper()
	if o.ConcurrentAppends <= 0 {
		o.ConcurrentAppends = 6
	}
	s := &suite{newStore: newStore, opts: o}
	for _, st := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"Empty", s.testEmpty},
		{"RoundTrip", s.testRoundTrip},
		{"CreatedAt", s.testCreatedAt},
		{"Conversation", s.testConversation},
		{"IDs", s.testIDs},
		{"Validation", s.testValidation},
		{"AppendOrder", s.testAppendOrder},
		{"Append", s.testAppend},
		{"Immutability", s.testImmutability},
		{"Ordering", s.testOrdering},
		{"BlobReferences", s.testBlobReferences},
		{"Leases", s.testLeases},
		{"AcquireWriterOrder", s.testAcquireWriterOrder},
		{"DeleteHead", s.testDeleteHead},
		{"DeleteHeadOrder", s.testDeleteHeadOrder},
		{"DeleteCheckpoints", s.testDeleteCheckpoints},
		{"DeleteCheckpointsOrder", s.testDeleteCheckpointsOrder},
		{"Fork", s.testFork},
		{"ForkOrder", s.testForkOrder},
		{"SaveThreadOrder", s.testSaveThreadOrder},
		{"DeleteThreadOrder", s.testDeleteThreadOrder},
		{"ImportOrder", s.testImportOrder},
		{"ListPageOrder", s.testListPageOrder},
		{"ThreadsOrder", s.testThreadsOrder},
		{"Transcripts", s.testTranscripts},
		{"ForkTranscript", s.testForkTranscript},
		{"DeleteThread", s.testDeleteThread},
		{"DeleteThreadSweep", s.testDeleteThreadSweep},
		{"ListPage", s.testListPage},
		{"Threads", s.testThreads},
		{"Import", s.testImport},
		{"OpTokens", s.testOpTokens},
		{"Context", s.testContext},
		{"Concurrency", s.testConcurrency},
		{"Model", s.testModel},
	} {
		t.Run(st.name, st.run)
	}
}

// suite carries the factory through the subtests.
type suite struct {
	newStore newStoreFunc
	opts     Options
	// pure selects the half of every check order the suite runs: false,
	// RunStore's, the checks that need the store's state (and the pairs
	// whose earlier check is one of them); true, RunPureChecks', the checks
	// the portable store decides before any driver runs.
	pure bool
}

// RunPureChecks runs the half of every method's check order that the
// portable store (ckptstore.Store) decides alone: each pure check —
// ids, entries, limits, cursors, keep, createdAt, distinct fork threads,
// transcripts — and each pair whose earlier check is pure, every failing
// call changing nothing. Those checks run in one place, before any driver,
// so the conformance package runs them once, over memstore; RunStore runs
// the other half against every backend.
func RunPureChecks(t *testing.T, newStore func(t *testing.T, opts ckptstore.Options) Store) {
	t.Helper()
	s := &suite{newStore: newStore, opts: Options{ConcurrentAppends: 6}, pure: true}
	for _, st := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"AppendOrder", s.testAppendOrder},
		{"DeleteHeadOrder", s.testDeleteHeadOrder},
		{"DeleteCheckpointsOrder", s.testDeleteCheckpointsOrder},
		{"ForkOrder", s.testForkOrder},
		{"SaveThreadOrder", s.testSaveThreadOrder},
		{"DeleteThreadOrder", s.testDeleteThreadOrder},
		{"ImportOrder", s.testImportOrder},
		{"ListPageOrder", s.testListPageOrder},
		{"ThreadsOrder", s.testThreadsOrder},
	} {
		t.Run(st.name, st.run)
	}
}

// leaseOptions returns the suite's lease options on a new clock.
func leaseOptions() (ckptstore.Options, *Clock) {
	c := NewClock(Start)
	return ckptstore.Options{Now: c.Now, LeaseDuration: LeaseDuration, RenewAfter: RenewAfter}, c
}

// env returns a fresh store with the suite's lease options and its clock.
func (s *suite) env(t *testing.T) *env {
	t.Helper()
	opts, c := leaseOptions()
	st := s.newStore(t, opts)
	if st == nil {
		t.Fatal("newStore returned nil")
	}
	return newEnv(t, st, c)
}

// leased and withLease return a fresh store (see env) and a new lease on
// thread, its writer or the whole lease: the start of most tests.
func (s *suite) leased(t *testing.T, thread string) (*env, ckptstore.Writer) {
	t.Helper()
	e, l := s.withLease(t, thread)
	return e, l.Writer
}

func (s *suite) withLease(t *testing.T, thread string) (*env, *ckptstore.Lease) {
	t.Helper()
	e := s.env(t)
	return e, e.acquire(thread)
}

// chained returns a fresh store whose thread holds a chain of the ids (see
// env.chain), and the writer of thread's lease.
func (s *suite) chained(t *testing.T, thread string, ids ...string) (*env, ckptstore.Writer) {
	t.Helper()
	e := s.env(t)
	return e, e.chain(thread, nil, ids...)
}

// RunInstanceStore runs the instance store suite, as subtests of one
// subtest named InstanceStore, against stores made by newStore; each call
// must return a fresh, empty store. The subtest keeps the names apart from
// RunStore's when a test calls both.
func RunInstanceStore(t *testing.T, newStore func(t *testing.T) InstanceStore) {
	t.Helper()
	t.Run("InstanceStore", func(t *testing.T) { runInstanceStore(t, newStore) })
}
