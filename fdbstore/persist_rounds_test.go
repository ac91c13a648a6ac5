package fdbstore_test

// Read rounds per call, on memkv's exact counters (as fdbstore's
// rounds_test): every read issued before a wait is one round trip, which
// on a cluster is the latency a caller pays.

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/ckptstore/ckptstore/fdbstore"
	"sync"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore/fdbstore/kv"
	"github.com/ckptstore/ckptstore/fdbstore/kv/memkv"
	pdriver "github.com/ckptstore/ckptstore/persist/driver"
	"github.com/stretchr/testify/require"
)

// spy wraps a kv.DB and records, per transaction attempt, the limits of
// its range reads, the pairs they returned and the keys it wrote. It
// answers nothing itself: every call goes to the engine.
type spy struct {
	kv.DB
	mu      sync.Mutex
	ranges  []rangeRead
	written map[string]map[int]bool // key → the turns that set or cleared it
	turn    int
}

type rangeRead struct{ limit, got int }

func (s *spy) Transact(ctx context.Context, fn func(tr kv.Transaction) error) error {
	return s.DB.Transact(ctx, func(tr kv.Transaction) error { return fn(&spyTx{Transaction: tr, s: s}) })
}

func (s *spy) ReadTransact(ctx context.Context, fn func(tr kv.ReadTransaction) error) error {
	return s.DB.ReadTransact(ctx, func(tr kv.ReadTransaction) error { return fn(&spyRead{ReadTransaction: tr, s: s}) })
}

func (s *spy) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ranges, s.written = nil, map[string]map[int]bool{}
}

type spyRead struct {
	kv.ReadTransaction
	s *spy
}

func (r *spyRead) GetRange(rg kv.KeyRange, opts kv.RangeOptions) kv.FutureRange {
	return r.s.record(r.ReadTransaction.GetRange(rg, opts), opts)
}

type spyTx struct {
	kv.Transaction
	s *spy
}

func (t *spyTx) GetRange(rg kv.KeyRange, opts kv.RangeOptions) kv.FutureRange {
	return t.s.record(t.Transaction.GetRange(rg, opts), opts)
}
func (t *spyTx) Set(k, v []byte) { t.s.wrote(k); t.Transaction.Set(k, v) }
func (t *spyTx) Clear(k []byte)  { t.s.wrote(k); t.Transaction.Clear(k) }

func (s *spy) wrote(k []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.written != nil {
		if s.written[string(k)] == nil {
			s.written[string(k)] = map[int]bool{}
		}
		s.written[string(k)][s.turn] = true
	}
}

type spyRange struct {
	kv.FutureRange
	s     *spy
	limit int
}

func (s *spy) record(f kv.FutureRange, opts kv.RangeOptions) kv.FutureRange {
	return &spyRange{FutureRange: f, s: s, limit: opts.Limit}
}

func (f *spyRange) Get() ([]kv.KeyValue, error) {
	kvs, err := f.FutureRange.Get()
	f.s.mu.Lock()
	f.s.ranges = append(f.s.ranges, rangeRead{f.limit, len(kvs)})
	f.s.mu.Unlock()
	return kvs, err
}

// measured is one call's cost.
type measured struct {
	name                 string
	transactions, rounds int64
	reads                int64
	ranges               []rangeRead
}

func measure(t *testing.T, db *memkv.DB, sp *spy, name string, op func() error) measured {
	t.Helper()
	db.ResetStats()
	sp.reset()
	require.NoError(t, op(), name)
	st := db.Stats()
	return measured{name, st.Transactions, st.ReadRounds, st.Reads, sp.ranges}
}

// TestReadRounds: every call is one transaction of at most one read round
// (metadata writes none), and every list or index read is one range read
// whose limit is the page's.
func TestPersistReadRounds(t *testing.T) {
	db := memkv.New()
	sp := &spy{DB: db}
	d, err := fdbstore.NewPersistence(sp, fdbstore.PersistenceOptions{Now: func() time.Time { return time.UnixMilli(1_700_000_000_000) }})
	require.NoError(t, err)
	// A thread with more runs, interrupts and artifacts than a page.
	for i := range 5 {
		id := fmt.Sprintf("r%d", i)
		_, err := d.CreateOrResumeRun(ctx, &pdriver.RunRecord{RunID: id, ThreadID: "t", Status: pdriver.RunRunning, StartedAt: int64(i)})
		require.NoError(t, err)
		require.NoError(t, d.CreateInterrupt(ctx, &pdriver.InterruptRecord{InterruptID: "i" + id, RunID: "r0", ThreadID: "t", Status: pdriver.InterruptPending, RequestedAt: int64(i), Payload: json.RawMessage(`{}`)}))
		require.NoError(t, d.SaveArtifact(ctx, &pdriver.ArtifactRecord{ArtifactID: "a" + id, RunID: "r0", ThreadID: "t", Name: "n", MimeType: "m", CreatedAt: int64(i)}))
		_, _, err = d.PutBlob(ctx, &pdriver.BlobMeta{BlobRecord: pdriver.BlobRecord{Key: "b/" + id, ETag: "e"}, Object: "o" + id})
		require.NoError(t, err)
		_, err = d.CreateOrResumeGenerationRun(ctx, &pdriver.GenerationRunRecord{RunID: "g" + id, ThreadID: "t", Status: pdriver.RunRunning, StartedAt: int64(i)})
		require.NoError(t, err)
	}
	ds := int64(1)
	after := &pdriver.Position{At: 1, ID: "r1"}
	lock := pdriver.LockRequest{Key: "k", Token: "a", Lease: time.Minute}
	ops := []struct {
		name   string
		rounds int64
		op     func() error
	}{
		{"CreateOrResumeRun (new)", 1, func() error {
			_, err := d.CreateOrResumeRun(ctx, &pdriver.RunRecord{RunID: "new", ThreadID: "t2", Status: pdriver.RunRunning, StartedAt: 9})
			return err
		}},
		{"CreateOrResumeRun (existing)", 1, func() error {
			_, err := d.CreateOrResumeRun(ctx, &pdriver.RunRecord{RunID: "r0", ThreadID: "t", Status: pdriver.RunRunning})
			return err
		}},
		{"UpdateRun", 1, func() error {
			_, err := d.UpdateRun(ctx, "r1", pdriver.RunPatch{DetachedSince: pdriver.Set(ds)})
			return err
		}},
		{"GetRun", 1, func() error { _, err := d.GetRun(ctx, "r1"); return err }},
		{"ActiveRun", 1, func() error { _, err := d.ActiveRun(ctx, "t"); return err }},
		{"ThreadRuns", 1, func() error { _, err := d.ThreadRuns(ctx, "t", after, 2); return err }},
		{"ReclaimableRuns", 1, func() error { _, err := d.ReclaimableRuns(ctx, 5, nil, 2); return err }},
		{"CreateOrResumeGenerationRun", 1, func() error {
			_, err := d.CreateOrResumeGenerationRun(ctx, &pdriver.GenerationRunRecord{RunID: "gnew", ThreadID: "t", Status: pdriver.RunRunning})
			return err
		}},
		{"UpdateGenerationRun", 1, func() error {
			_, err := d.UpdateGenerationRun(ctx, "gr0", pdriver.GenerationRunPatch{Status: pdriver.Set(pdriver.RunCompleted)})
			return err
		}},
		{"GetGenerationRun", 1, func() error { _, err := d.GetGenerationRun(ctx, "gr0"); return err }},
		{"LatestGenerationRun", 1, func() error { _, err := d.LatestGenerationRun(ctx, "t"); return err }},
		{"CreateInterrupt", 1, func() error {
			return d.CreateInterrupt(ctx, &pdriver.InterruptRecord{InterruptID: "inew", RunID: "r0", ThreadID: "t", Status: pdriver.InterruptPending, Payload: json.RawMessage(`{}`)})
		}},
		{"ResolveInterrupt", 1, func() error { _, err := d.ResolveInterrupt(ctx, "ir0", 1, nil); return err }},
		{"CancelInterrupt", 1, func() error { _, err := d.CancelInterrupt(ctx, "ir1", 1); return err }},
		{"CommitInterrupts (3 entries, op token)", 1, func() error {
			return d.CommitInterrupts(ctx, []pdriver.InterruptCommitEntry{
				{InterruptID: "ir2", Status: pdriver.InterruptResolved}, {InterruptID: "ir3", Status: pdriver.InterruptCancelled},
				{InterruptID: "ir4", Status: pdriver.InterruptResolved},
			}, 2, "tok")
		}},
		{"GetInterrupt", 1, func() error { _, err := d.GetInterrupt(ctx, "ir0"); return err }},
		{"ListInterrupts", 1, func() error {
			_, err := d.ListInterrupts(ctx, pdriver.InterruptScope{RunID: "r0"}, nil, 2)
			return err
		}},
		{"ListInterrupts (pending)", 1, func() error {
			_, err := d.ListInterrupts(ctx, pdriver.InterruptScope{ThreadID: "t", PendingOnly: true}, nil, 2)
			return err
		}},
		{"SetMetadata", 0, func() error { return d.SetMetadata(ctx, "n", "k", json.RawMessage(`1`)) }},
		{"GetMetadata", 1, func() error { _, err := d.GetMetadata(ctx, "n", "k"); return err }},
		{"DeleteMetadata", 0, func() error { return d.DeleteMetadata(ctx, "n", "k") }},
		{"SaveArtifact", 1, func() error {
			return d.SaveArtifact(ctx, &pdriver.ArtifactRecord{ArtifactID: "ar0", RunID: "r1", ThreadID: "t", Name: "n", MimeType: "m"})
		}},
		{"GetArtifact", 1, func() error { _, err := d.GetArtifact(ctx, "ar0"); return err }},
		{"ListArtifacts", 1, func() error { _, err := d.ListArtifacts(ctx, pdriver.ArtifactScope{ThreadID: "t"}, nil, 2); return err }},
		{"DeleteArtifact", 1, func() error { return d.DeleteArtifact(ctx, "ar1") }},
		{"DeleteRunArtifacts", 1, func() error { _, err := d.DeleteRunArtifacts(ctx, "r0", 2); return err }},
		{"PutBlob", 1, func() error {
			_, _, err := d.PutBlob(ctx, &pdriver.BlobMeta{BlobRecord: pdriver.BlobRecord{Key: "b/r0", ETag: "f"}, Object: "new"})
			return err
		}},
		{"GetBlob", 1, func() error { _, err := d.GetBlob(ctx, "b/r0"); return err }},
		{"ListBlobs", 1, func() error { _, err := d.ListBlobs(ctx, "b/", "b/r0", 2); return err }},
		{"DeleteBlob", 1, func() error { _, err := d.DeleteBlob(ctx, "b/r1"); return err }},
		{"AcquireLock", 1, func() error { _, err := d.AcquireLock(ctx, lock); return err }},
		{"AcquireLock (queued)", 1, func() error {
			_, err := d.AcquireLock(ctx, pdriver.LockRequest{Key: "k", Token: "b", Lease: time.Minute})
			return err
		}},
		{"RenewLock", 1, func() error { _, err := d.RenewLock(ctx, "k", "a", time.Minute); return err }},
		{"WatchLock", 1, func() error {
			wctx, cancel := context.WithCancel(ctx)
			defer cancel()
			_, err := d.WatchLock(wctx, "k")
			return err
		}},
		{"ReleaseLock", 1, func() error { _, err := d.ReleaseLock(ctx, "k", "a"); return err }},
	}
	for _, o := range ops {
		m := measure(t, db, sp, o.name, o.op)
		t.Logf("%-40s %d transaction, %d read round, %d reads, range reads %v", m.name, m.transactions, m.rounds, m.reads, m.ranges)
		require.Equal(t, int64(1), m.transactions, "%s: transactions", o.name)
		require.Equal(t, o.rounds, m.rounds, "%s: read rounds", o.name)
		require.LessOrEqual(t, len(m.ranges), 1, "%s: at most one range read", o.name)
		for _, r := range m.ranges {
			require.True(t, r.limit > 0 && r.got <= r.limit, "%s: a range read of limit %d returned %d pairs", o.name, r.limit, r.got)
		}
	}
}

// TestNoHotKey: a chat turn's calls (createOrResume, update to detached,
// update to completed, findActiveRun) on many threads write no key that
// more than one turn writes: no counter or shared key that every call
// touches.
func TestNoHotKey(t *testing.T) {
	sp := &spy{DB: memkv.New()}
	d, err := fdbstore.NewPersistence(sp, fdbstore.PersistenceOptions{})
	require.NoError(t, err)
	sp.reset()
	const turns = 200
	for i := range turns {
		id, thread := fmt.Sprintf("run-%d", i), fmt.Sprintf("thread-%d", i)
		sp.mu.Lock()
		sp.turn = i
		sp.mu.Unlock()
		_, err := d.CreateOrResumeRun(ctx, &pdriver.RunRecord{RunID: id, ThreadID: thread, Status: pdriver.RunRunning, StartedAt: int64(i)})
		require.NoError(t, err)
		_, err = d.UpdateRun(ctx, id, pdriver.RunPatch{DetachedSince: pdriver.Set(int64(i))})
		require.NoError(t, err)
		_, err = d.UpdateRun(ctx, id, pdriver.RunPatch{Status: pdriver.Set(pdriver.RunCompleted)})
		require.NoError(t, err)
		_, err = d.ActiveRun(ctx, thread)
		require.NoError(t, err)
	}
	require.NotEmpty(t, sp.written)
	for k, turns := range sp.written {
		// A run's keys are its turn's; a call's marker is cleared by the
		// next call, which may be the next turn's first.
		require.LessOrEqual(t, len(turns), 2, "key %x was written by %d turns", k, len(turns))
	}
}
