package fdbstore_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/fdbstore"
	"github.com/ckptstore/ckptstore/fdbstore/internal/storetest"
	"github.com/ckptstore/ckptstore/fdbstore/kv/memkv"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

// newMemStore returns a Store over a fresh memkv engine.
func newMemStore(t testing.TB, opts fdbstore.Options, mopts memkv.Options) (*ckptstore.Store, *memkv.DB) {
	t.Helper()
	db, err := memkv.NewWithOptions(mopts)
	if err != nil {
		t.Fatal(err)
	}
	s, err := fdbstore.New(db, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s, db
}

// ---- helpers ----

// faults is the fault mix of the issue: 20 % not_committed and 10 %
// commit_unknown_result, half of those applied.
func faults(seed int64) memkv.Faults {
	return memkv.Faults{
		Seed:                        seed,
		NotCommittedRate:            0.20,
		UnknownResultAppliedRate:    0.05,
		UnknownResultNotAppliedRate: 0.05,
	}
}

// faultyEngine is memkv with the fault mix (faults) and short backoffs.
// With maxRetries > 0 a call gives up after that many retries, so that
// some calls end with the commit's outcome unknown; 0 retries until ctx
// ends.
func faultyEngine(t *testing.T, seed int64, maxRetries int) *memkv.DB {
	t.Helper()
	db, err := memkv.NewWithOptions(memkv.Options{Faults: faults(seed), BackoffBase: 10 * time.Microsecond, BackoffMax: 100 * time.Microsecond, MaxRetries: maxRetries})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// faultyEngines opens faulty engines, each with the next seed, for suites
// that open engines from parallel cases, and keeps them so that the test
// can then require that the suites ran through faults.
type faultyEngines struct {
	mu   sync.Mutex
	seed int64
	dbs  []*memkv.DB
}

// open returns a fresh faulty engine with no bound on its retries.
func (f *faultyEngines) open(t *testing.T) *memkv.DB {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seed++
	db := faultyEngine(t, f.seed, 0)
	f.dbs = append(f.dbs, db)
	return db
}

// requireFaults logs the engines' summed stats and fails t when fewer than
// one commit in ten met a fault: faults are 30 % of write commits, and a
// silently fault-free run would prove nothing.
func (f *faultyEngines) requireFaults(t *testing.T) {
	t.Helper()
	var st memkv.Stats
	for _, db := range f.dbs {
		s := db.Stats()
		st.Commits += s.Commits
		st.InjectedFaults += s.InjectedFaults
		st.Retries += s.Retries
	}
	t.Logf("%d engines: %d commits applied, %d injected faults, %d retries", len(f.dbs), st.Commits, st.InjectedFaults, st.Retries)
	if st.InjectedFaults < st.Commits/10 {
		t.Fatalf("only %d injected faults for %d commits: the suites did not run through faults", st.InjectedFaults, st.Commits)
	}
}

var ctx = context.Background()

var must = testkit.Must

// TestStore runs the engine-independent store tests (chunking, the size
// limit, batched prunes, ListBlobReferences pages, ids, prefixes) on memkv;
// fdbkv runs them on a real cluster.
func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Env { return storetest.Env{DB: memkv.New()} })
}

// ---- design points ----

// TestAppendIsOneReadRoundAndOneCommit measures Append on memkv's exact
// counters: one transaction, one read round, one commit.
func TestAppendIsOneReadRoundAndOneCommit(t *testing.T) {
	s, db := newMemStore(t, fdbstore.Options{}, memkv.Options{})
	lease, err := s.AcquireWriter(ctx, "t")
	must(t, err)
	head := ""
	for i := range 5 {
		id := fmt.Sprintf("c%d", i)
		db.ResetStats()
		must(t, s.Append(ctx, testkit.Checkpoint("t", id, head, float64(i), i, i+1, 99), head, lease.Writer))
		st := db.Stats()
		if st.Transactions != 1 || st.ReadRounds != 1 || st.Commits != 1 || st.Retries != 0 {
			t.Fatalf("Append %d: %d transactions, %d read rounds, %d commits, %d retries; want 1, 1, 1, 0",
				i, st.Transactions, st.ReadRounds, st.Commits, st.Retries)
		}
		head = id
	}
}

// TestSharedBlobsDoNotConflict appends, from many goroutines, checkpoints
// of different threads that all share blob keys: the counts are atomic
// operations, so no commit may conflict.
func TestSharedBlobsDoNotConflict(t *testing.T) {
	s, db := newMemStore(t, fdbstore.Options{}, memkv.Options{})
	const threads, each = 8, 10
	names := make([]string, threads)
	var wg sync.WaitGroup
	errs := make(chan error, threads)
	for g := range threads {
		names[g] = fmt.Sprintf("thread-%d", g)
		lease, err := s.AcquireWriter(ctx, names[g])
		must(t, err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			head := ""
			for i := range each {
				id := fmt.Sprintf("%s-%d", names[g], i)
				if err := s.Append(ctx, testkit.Checkpoint(names[g], id, head, float64(i), 1, 2, 3), head, lease.Writer); err != nil {
					errs <- err
					return
				}
				head = id
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if st := db.Stats(); st.Conflicts != 0 || st.Retries != 0 {
		t.Fatalf("%d commits conflicted, %d retried; threads that share blobs must not", st.Conflicts, st.Retries)
	}
	refs, err := s.ListBlobReferences(ctx)
	must(t, err)
	for _, r := range refs {
		if r.References != threads*each {
			t.Fatalf("%s has %d references, want %d", r.Key, r.References, threads*each)
		}
	}
}

// unknownApplied makes every commit of db apply and then report
// commit_unknown_result, until the returned func restores fault-free
// commits. The retry of a marked write is read-only and so succeeds.
func unknownApplied(t *testing.T, db *memkv.DB) func() {
	t.Helper()
	must(t, db.SetFaults(memkv.Faults{UnknownResultAppliedRate: 1}))
	return func() { must(t, db.SetFaults(memkv.Faults{})) }
}

// TestWritesAreIdempotentAfterUnknownResult runs every write whose checks
// its own success would fail with a commit that is applied but reported
// as commit_unknown_result: each must report success, once, with counts
// neither doubled nor dropped.
func TestWritesAreIdempotentAfterUnknownResult(t *testing.T) {
	s, db := newMemStore(t, fdbstore.Options{}, memkv.Options{})

	// AcquireWriter: no ErrWriterConflict against the lease it just took.
	restore := unknownApplied(t, db)
	db.ResetStats()
	lease, err := s.AcquireWriter(ctx, "t")
	restore()
	must(t, err)
	if st := db.Stats(); st.Commits != 1 || st.Retries != 1 {
		t.Fatalf("AcquireWriter: %d commits, %d retries; want 1 applied commit and 1 retry", st.Commits, st.Retries)
	}
	w := lease.Writer
	if _, err := s.AcquireWriter(ctx, "t"); !errors.Is(err, ckptstore.ErrWriterConflict) {
		t.Fatalf("second AcquireWriter: %v, want ErrWriterConflict (the first lease is live)", err)
	}

	// Append: no false ErrDuplicateID or ErrConflict, blob counted once.
	restore = unknownApplied(t, db)
	err = s.Append(ctx, testkit.Checkpoint("t", "a", "", 1, 1, 2), "", w)
	restore()
	must(t, err)
	restore = unknownApplied(t, db)
	err = s.Append(ctx, testkit.Checkpoint("t", "b", "a", 2, 2, 3), "a", w)
	restore()
	must(t, err)
	testkit.CheckRefs(t, s, "t")
	if head, _ := s.GetHead(ctx, "t"); head != "b" {
		t.Fatalf("head = %q, want b", head)
	}
	// A different Append with a used id still fails, with the right error.
	restore = unknownApplied(t, db)
	err = s.Append(ctx, testkit.Checkpoint("t", "a", "b", 3), "b", w)
	restore()
	if !errors.Is(err, ckptstore.ErrDuplicateID) {
		t.Fatalf("Append of a used id: %v, want ErrDuplicateID", err)
	}

	// DeleteHead: no false ErrNotHead, counts dropped once.
	restore = unknownApplied(t, db)
	err = s.DeleteHead(ctx, "t", "b", w)
	restore()
	must(t, err)
	testkit.CheckRefs(t, s, "t")
	if head, _ := s.GetHead(ctx, "t"); head != "a" {
		t.Fatalf("head after DeleteHead = %q, want a", head)
	}

	// DeleteCheckpoints: the deleted ids are reported, not an empty list.
	pl, err := s.AcquireWriter(ctx, "p")
	must(t, err)
	ids := storetest.Chain(t, s, pl.Writer, "p", 6)
	restore = unknownApplied(t, db)
	deleted, err := s.DeleteCheckpoints(ctx, "p", 2, pl.Writer)
	restore()
	must(t, err)
	if want := ids[:4]; !slices.Equal(deleted, want) {
		t.Fatalf("DeleteCheckpoints = %v, want %v", deleted, want)
	}
	testkit.CheckRefs(t, s, "t", "p")

	// ForkFromCheckpoint: no false ErrForkDestinationNotEmpty.
	dl, err := s.AcquireWriter(ctx, "fork")
	must(t, err)
	restore = unknownApplied(t, db)
	root, err := s.ForkFromCheckpoint(ctx, ckptstore.ForkInput{
		SourceThreadID: "p", SourceCheckpointID: ids[5],
		DestinationThreadID: "fork", DestinationCheckpointID: "root", CreatedAt: 42, Writer: dl.Writer,
	})
	restore()
	must(t, err)
	if root.ID != "root" || root.ThreadID != "fork" || root.Reason != ckptstore.ReasonForkRoot || len(root.Files) != 2 {
		t.Fatalf("fork root = %+v", root)
	}
	testkit.CheckRefs(t, s, "t", "p", "fork")
}

// TestWritesUnderFaults drives every write through many commits with the
// issue's fault mix and checks the outcome against a fault-free run: the
// same heads, lists and counts.
func TestWritesUnderFaults(t *testing.T) {
	for seed := int64(1); seed <= 5; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			s, _ := newMemStore(t, fdbstore.Options{PruneBatch: 2, BlobPage: 4},
				memkv.Options{Faults: faults(seed), BackoffBase: time.Microsecond, BackoffMax: 10 * time.Microsecond})
			threads := []string{"x", "y"}
			for _, th := range threads {
				lease, err := s.AcquireWriter(ctx, th)
				must(t, err)
				ids := storetest.Chain(t, s, lease.Writer, th, 12)
				must(t, s.DeleteHead(ctx, th, ids[11], lease.Writer))
				deleted, err := s.DeleteCheckpoints(ctx, th, 3, lease.Writer)
				must(t, err)
				if want := ids[:8]; !slices.Equal(deleted, want) { // farthest first
					t.Fatalf("DeleteCheckpoints = %v, want %v", deleted, want)
				}
				if _, err := lease.Renew(ctx); err != nil {
					t.Fatal(err)
				}
				lease.Release(ctx)
				cps, err := s.List(ctx, th)
				must(t, err)
				var got []string
				for _, cp := range cps {
					got = append(got, cp.ID)
				}
				if want := ids[8:11]; !slices.Equal(got, want) {
					t.Fatalf("List = %v, want %v", got, want)
				}
			}
			testkit.CheckRefs(t, s, threads...)
		})
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	db := memkv.New()
	for name, o := range map[string]fdbstore.Options{
		"system prefix":  {Prefix: "\xffx"},
		"long prefix":    {Prefix: strings.Repeat("p", fdbstore.MaxPrefixBytes+1)},
		"negative batch": {PruneBatch: -1},
		"negative page":  {BlobPage: -1},
		"renew ≥ lease":  {Options: ckptstore.Options{LeaseDuration: time.Second, RenewAfter: time.Second}},
		"negative lease": {Options: ckptstore.Options{LeaseDuration: -time.Second}},
	} {
		if _, err := fdbstore.New(db, o); !errors.Is(err, driver.ErrInvalidOptions) {
			t.Errorf("%s: New returned %v, want ErrInvalidOptions", name, err)
		}
		_, err := fdbstore.NewInstances(db, o)
		assert.ErrorIs(t, err, driver.ErrInvalidOptions, "%s: NewInstances", name)
	}
	if _, err := fdbstore.New(nil, fdbstore.Options{}); err == nil {
		t.Error("New(nil db) succeeded")
	}
	_, err := fdbstore.NewInstances(nil, fdbstore.Options{})
	assert.ErrorIs(t, err, driver.ErrInvalidOptions, "NewInstances(nil db)")
	assert.Panics(t, func() { fdbstore.NewInstanceStore(db, "\xffx") }, "the shorthand panics on a system prefix")
	s, err := fdbstore.New(db, fdbstore.Options{})
	must(t, err)
	if o := fdbDriver(s).Options(); o.Prefix != fdbstore.DefaultPrefix || o.PruneBatch != fdbstore.DefaultPruneBatch ||
		o.BlobPage != fdbstore.DefaultBlobPage || o.LeaseDuration != driver.DefaultLeaseDuration {
		t.Errorf("defaults: %+v", o)
	}
}

// NewInstances takes the Store's Options: records written under
// Options.Prefix are the ones NewInstanceStore(db, Prefix) reads, and
// another prefix does not see them.
func TestNewInstancesTakesStoreOptions(t *testing.T) {
	db := memkv.New()
	in, err := fdbstore.NewInstances(db, fdbstore.Options{Prefix: "tenant/"})
	require.NoError(t, err)
	rec := &ckptstore.InstanceRecord{Key: "k", Provider: "p", ThreadID: "t", UpdatedAt: 5}
	require.NoError(t, in.Upsert(ctx, rec))
	got, err := fdbstore.NewInstanceStore(db, "tenant/").Get(ctx, "k")
	require.NoError(t, err)
	assert.Equal(t, rec, got, "the shorthand with the same prefix reads the record")
	got, err = fdbstore.NewInstanceStore(db, "").Get(ctx, "k")
	require.NoError(t, err)
	assert.Nil(t, got, "the default prefix does not see it")
}

// fdbDriver is the driver under s, for what only fdbstore has: Check,
// Restore and the resolved Options.
func fdbDriver(s *ckptstore.Store) *fdbstore.Driver { return s.Driver().(*fdbstore.Driver) }
