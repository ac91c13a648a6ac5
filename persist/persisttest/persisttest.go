// Package persisttest is the conformance suite of the persistence drivers
// (package persist/driver), in the manner of testing/fstest.TestFS: a
// driver's test calls Run with a factory, and the suite proves, through the
// portable stores of package persist and one subtest per rule of
// docs/persistence.md, that the driver keeps the contract.
//
// Run proves, for each store:
//
//   - Runs: createOrResume is an idempotent insert-if-absent that never
//     resurrects a finished run; update patches, clears on an explicit
//     clear, and is a no-op for an unknown run; findActiveRun is the newest
//     running run of the thread; listByThread is by startedAt;
//     listReclaimable has all three conditions and an inclusive cutoff; the
//     four durable-run fields round-trip and clear one by one and together;
//     lists longer than one driver page come back whole and in order.
//   - GenerationRuns: the same, with findLatestForThread counting terminal
//     runs.
//   - Interrupts: create is insert-if-absent and pending; resolve and cancel
//     stamp resolvedAt with the process clock; commitBatch is all-or-nothing
//     and rejects duplicates, missing and non-pending ids; an op token makes
//     a retried batch succeed; the four lists are by requestedAt.
//   - Metadata: (namespace, key) without composite-key collisions; a stored
//     null reads as absent.
//   - Artifacts: save upserts and moves a record between runs; lists by
//     createdAt then artifactId bytes; delete and deleteForRun.
//   - Blobs: streamed puts of unknown length, ranges (clamped, reported,
//     outside the object rejected), head, delete, overwrite, literal prefix
//     listing and cursor paging; a failed put keeps the old bytes and leaves
//     no object behind; replaced and deleted bytes leave the bucket;
//     concurrent readers see whole old or whole new bytes.
//   - Validation: every invalid input, each its own case, fails with its
//     typed error and changes nothing; a done context reaches no driver.
//   - Concurrency: racing creates, updates of different fields, interrupt
//     creates, commit batches and blob puts on one record are each one
//     atomic step: one winner, nothing lost, no bytes left behind.
//   - Immutability: changing an input after a call, or a returned record,
//     changes nothing stored.
//   - Port (driver.Porter): dump → load into an empty driver gives the
//     same records and the same reads of every store, without the locks
//     and op tokens; loading twice changes nothing; a differing record
//     fails with ErrRecordConflict and writes nothing; a dump resumed at
//     the position of any record it yielded yields exactly the rest, so a
//     dump in pieces is the one dump (RunPort runs these cases alone).
//   - Model: random sequences of the state stores' operations (runs,
//     interrupts and commit batches, artifacts, metadata, clock moves) on
//     small id pools, each result and every list equal to a plain model's.
//   - Locks (in a testing/synctest bubble, so that time is virtual and the
//     timing assertions are exact): two holders never overlap by the
//     store's clock; waiters are served in arrival order; a release wakes
//     the next waiter without a timer; a waiting caller makes a bounded
//     number of driver calls (no busy-polling); renewal keeps the lease
//     across many lease durations; a lost lease aborts fn's context and
//     WithLock reports it; an unconfirmed renewal aborts fn's context before
//     the store's lease can expire, by the holder's clock; a stale release
//     never frees the successor; a failing or panicking fn releases the lock
//     and returns its error; a waiter that gives up leaves the queue; fences
//     go up.
//
// The lock cases need a driver whose goroutines all live in the bubble and
// block only on the bubble's channels and timers (memstore.Persistence; an FDB driver
// on the in-process memkv engine). A driver that waits on network I/O in
// the bubble (a Redis subscriber) keeps virtual time from advancing; such a
// driver runs RunNetwork, whose lock cases run on real time and assert
// order, exclusion, lost leases, store-clock readings of the history and
// counts of driver calls, never tight timings (see RunRealTimeLocks).
//
// A store behind a server (httpstore's Go client) runs RunRemote: the
// suite builds the server-side portable store on the driver as Run does,
// the caller serves it, and every case runs on the client's store while
// it inspects the server's driver and bucket.
package persisttest

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/ckptstore/ckptstore/blobs"
	"github.com/ckptstore/ckptstore/persist"
	"github.com/ckptstore/ckptstore/persist/driver"
	"github.com/stretchr/testify/require"
)

// NewDriver returns a fresh, empty driver whose clock (the store's clock,
// by which lock leases expire) is now. It is called once per test; the
// lock tests call it inside a testing/synctest bubble.
type NewDriver func(t *testing.T, now func() time.Time) driver.Driver

// Run runs the whole suite against the drivers newDriver makes.
func Run(t *testing.T, newDriver NewDriver) {
	runGroups(t, newDriver, suiteGroups(lockTests))
}

type group struct {
	name  string
	tests []test
}

// suiteGroups is every group of the suite, with locks as its lock cases.
func suiteGroups(locks []test) []group {
	return []group{
		{"Runs", runTests},
		{"GenerationRuns", generationRunTests},
		{"Interrupts", interruptTests},
		{"Metadata", metadataTests},
		{"Artifacts", artifactTests},
		{"Blobs", blobTests},
		{"Validation", validationTests},
		{"Concurrency", concurrencyTests},
		{"Port", portTests},
		{"Locks", locks},
		{"Model", modelTests},
	}
}

func runGroups(t *testing.T, newDriver NewDriver, groups []group) {
	runGroupsOpt(t, newDriver, groups, false)
}

// runGroupsOpt runs groups; with parallel, the groups run side by side,
// and so do the real-time lock cases (each on its own store), whose
// seconds of leases are most of a remote run's time. They run in
// goroutines of their own rather than by t.Parallel, whose limit
// (-test.parallel, the number of cores) would queue cases that mostly
// sleep.
func runGroupsOpt(t *testing.T, newDriver NewDriver, groups []group, parallel bool) {
	var all sync.WaitGroup
	for _, g := range groups {
		run := func() {
			t.Run(g.name, func(t *testing.T) {
				var cases sync.WaitGroup
				for _, tc := range g.tests {
					one := func() { t.Run(tc.name, func(t *testing.T) { tc.run(t, newDriver) }) }
					if parallel && g.name == "Locks" {
						cases.Go(one)
					} else {
						one()
					}
				}
				cases.Wait()
			})
		}
		if parallel {
			all.Go(run)
		} else {
			run()
		}
	}
	all.Wait()
}

// test is one case of the suite.
type test struct {
	name string
	run  func(t *testing.T, newDriver NewDriver)
}

// onEnv is a case that runs on one store of newEnv's.
func onEnv(run func(t *testing.T, e *env)) func(t *testing.T, newDriver NewDriver) {
	return func(t *testing.T, newDriver NewDriver) { run(t, newEnv(t, newDriver)) }
}

// env is one test's store: the portable layer on the driver under test
// (wrapped by a recorder), a memory bucket, and the process clock.
type env struct {
	t      *testing.T
	ctx    context.Context
	s      *persist.Store // the store under test: server's, or a remote client of it
	server *persist.Store // the portable store on the driver
	d      *recorder
	bucket *blobs.MemBucket
	clock  *clock
	remote bool // s is a remote client of server
	// lease and renewAfter are the store's lease timing.
	lease, renewAfter time.Duration
	// settle returns once cond holds: in a synctest bubble when every
	// goroutine is blocked (which is when it holds), on real time by
	// polling (eventually). The lock cases shared by both variants use it.
	settle func(t *testing.T, what string, cond func() bool)
}

// clock is a settable clock. Outside a synctest bubble it stands still
// unless a test moves it; inside one it follows the bubble's time plus an
// offset a test can move.
type clock struct {
	mu     sync.Mutex
	fixed  time.Time // zero: follow time.Now
	offset time.Duration
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.fixed.IsZero() {
		return c.fixed.Add(c.offset)
	}
	return time.Now().Add(c.offset)
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}

// epoch is the fixed process clock of the non-lock tests.
var epoch = time.UnixMilli(1_700_000_000_000)

// The lease timing of the lock tests, in virtual time.
const (
	testLease      = 10 * time.Second
	testRenewAfter = 4 * time.Second
)

// newEnv makes a test's store. The process clock stands still at epoch;
// the store's clock too.
func newEnv(t *testing.T, newDriver NewDriver) *env {
	return makeEnv(t, newDriver, &clock{fixed: epoch}, &clock{fixed: epoch}, testLease, testRenewAfter)
}

// newLockEnv makes a lock test's store inside a synctest bubble: both
// clocks follow the bubble's time; storeClock can be moved apart.
func newLockEnv(t *testing.T, newDriver NewDriver) (*env, *clock) {
	store := &clock{}
	e := makeEnv(t, newDriver, &clock{}, store, testLease, testRenewAfter)
	e.settle = func(*testing.T, string, func() bool) { synctest.Wait() }
	return e, store
}

func makeEnv(t *testing.T, newDriver NewDriver, process, store *clock, lease, renewAfter time.Duration) *env {
	t.Helper()
	d, remote := unwrapRemote(newDriver(t, store.Now))
	rec := &recorder{Driver: d}
	bucket := blobs.NewMem(blobs.MemOptions{})
	s, err := persist.New(rec, persist.Options{
		Bucket: bucket, Now: process.Now,
		LeaseDuration: lease, RenewAfter: renewAfter,
	})
	require.NoError(t, err)
	e := &env{t: t, ctx: context.Background(), s: s, server: s, d: rec, bucket: bucket, clock: process,
		lease: lease, renewAfter: renewAfter}
	e.serveRemote(remote)
	return e
}

// jsonEq asserts that two values marshal to equal JSON.
func jsonEq(t interface {
	require.TestingT
	Helper()
}, want, got any, msg ...any) {
	t.Helper()
	w := must(json.Marshal(want)).of(t)
	g := must(json.Marshal(got)).of(t)
	require.JSONEq(t, string(w), string(g), msg...)
}

// errOf is the error of a call whose other result a case ignores.
func errOf[T any](_ T, err error) error { return err }

func i64(v int64) *int64   { return &v }
func str(v string) *string { return &v }
func raw(s string) json.RawMessage {
	return json.RawMessage(s)
}

// result is a call's value and error, so that a case can require the
// error nil and keep the value in one step: v := must(call()).of(t).
type result[T any] struct {
	v   T
	err error
}

func must[T any](v T, err error) result[T] { return result[T]{v, err} }

// of requires, on t, that the call did not fail, and returns its value.
func (r result[T]) of(t interface {
	require.TestingT
	Helper()
}) T {
	t.Helper()
	require.NoError(t, r.err)
	return r.v
}
