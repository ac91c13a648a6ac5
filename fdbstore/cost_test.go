package fdbstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/fdbstore/kv"
	"github.com/ckptstore/ckptstore/fdbstore/kv/memkv"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

// sizingDB records, per committed transaction, its size as FoundationDB
// accounts it: each mutation's key and value (operand), each write
// conflict range (a key k is [k, k+"\x00")), and each read conflict range
// of a non-snapshot read.
type sizingDB struct {
	kv.DB
	mu    sync.Mutex
	sizes []int
}

type sizingTx struct {
	kv.Transaction
	size int
}

func (t *sizingTx) Get(key []byte) kv.FutureValue {
	t.size += 2*len(key) + 1
	return t.Transaction.Get(key)
}
func (t *sizingTx) GetRange(r kv.KeyRange, o kv.RangeOptions) kv.FutureRange {
	t.size += len(r.Begin) + len(r.End)
	return t.Transaction.GetRange(r, o)
}
func (t *sizingTx) Set(key, value []byte) {
	t.size += len(key) + len(value) + 2*len(key) + 1
	t.Transaction.Set(key, value)
}
func (t *sizingTx) Clear(key []byte) {
	t.size += len(key) + 2*len(key) + 1
	t.Transaction.Clear(key)
}
func (t *sizingTx) ClearRange(r kv.KeyRange) {
	t.size += 2 * (len(r.Begin) + len(r.End))
	t.Transaction.ClearRange(r)
}
func (t *sizingTx) Add(key []byte, delta int64) {
	t.size += len(key) + 8 + 2*len(key) + 1
	t.Transaction.Add(key, delta)
}
func (t *sizingTx) CompareAndClear(key, value []byte) {
	t.size += len(key) + len(value) + 2*len(key) + 1
	t.Transaction.CompareAndClear(key, value)
}

func (d *sizingDB) Transact(ctx context.Context, fn func(kv.Transaction) error) error {
	var last *sizingTx
	err := d.DB.Transact(ctx, func(tr kv.Transaction) error {
		last = &sizingTx{Transaction: tr}
		return fn(last)
	})
	if err == nil {
		d.mu.Lock()
		d.sizes = append(d.sizes, last.size)
		d.mu.Unlock()
	}
	return err
}

// last returns the size of the last committed transaction.
func (d *sizingDB) last() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.sizes[len(d.sizes)-1]
}

// sizedCheckpoint has conv bytes of conversation and blobs distinct files.
func sizedCheckpoint(thread, id, parent string, createdAt float64, conv, blobs int) *ckptstore.Checkpoint {
	cp := testkit.Checkpoint(thread, id, parent, createdAt)
	cp.Conversation = []byte(`["` + strings.Repeat("x", conv) + `"]`)
	for i := range blobs {
		cp.Files = append(cp.Files, ckptstore.Entry{Path: fmt.Sprintf("f%d", i), Kind: ckptstore.KindFile, BlobKey: testkit.FileKey(i), Size: 1})
	}
	return cp
}

// TestSizeEstimatesBoundTransactions checks each estimate against the
// recorded size of the transaction it stands for: never below it (the
// estimate is what keeps a write under FoundationDB's limit), and not far
// above it (an estimate twice the truth would refuse checkpoints that fit;
// the slack is the marker bound, which assumes the longest op token of
// contract.MaxIDBytes, and 9,000 bytes).
func TestSizeEstimatesBoundTransactions(t *testing.T) {
	ctx := context.Background()
	for _, shape := range []struct{ conv, blobs int }{{0, 0}, {2000, 3}, {250_000, 50}, {4_000, 2000}} {
		t.Run(fmt.Sprintf("conv%d-blobs%d", shape.conv, shape.blobs), func(t *testing.T) {
			db := &sizingDB{DB: memkv.New()}
			s, err := NewDriver(db, Options{})
			testkit.Must(t, err)
			lease, err := s.p().AcquireWriter(ctx, "thread")
			testkit.Must(t, err)
			w := lease.Writer
			testkit.Must(t, s.p().Append(ctx, sizedCheckpoint("thread", "root", "", 1, 10, 1), "", w))
			cp := sizedCheckpoint("thread", "checkpoint", "root", 2, shape.conv, shape.blobs)
			st, err := s.newStored(cp)
			testkit.Must(t, err)
			testkit.Must(t, s.fit(st, 0))
			if !st.copied {
				t.Fatal("a checkpoint this small is stored without a copy")
			}
			slack := 9_000 + s.markerCost("thread")
			bound := func(what string, est, got int) {
				t.Helper()
				if est < got || est > 2*got+slack {
					t.Errorf("%s: estimate %d bytes, transaction %d bytes; want est ≥ got and est ≤ 2·got + %d (markers are bounded for the longest op token)", what, est, got, slack)
				}
			}

			testkit.Must(t, s.p().Append(ctx, cp, "root", w))
			bound("Append", s.insertCost(st)+s.markerCost("thread"), db.last())

			testkit.Must(t, s.p().DeleteHead(ctx, "thread", "checkpoint", w))
			bound("DeleteHead", s.removeCost("thread", cp.CreatedAt, cp.ID, cp.ParentCheckpointID, len(st.blobs))+
				s.markerCost("thread")+costRead(st.leaseKey)+costRead(st.headKey), db.last())

			msgs := []byte(`["` + strings.Repeat("m", shape.conv) + `"]`)
			testkit.Must(t, s.p().SaveThread(ctx, "thread", msgs))
			bound("SaveThread", s.transcriptCost("thread", len(msgs)), db.last())

			testkit.Must(t, s.p().Append(ctx, cp, "root", w))
			cps, err := s.p().List(ctx, "thread")
			testkit.Must(t, err)
			if _, err := s.p().DeleteThread(ctx, "thread", w); err != nil {
				t.Fatal(err)
			}
			bound("DeleteThread", s.deleteCost("thread", cps), db.last())

			il, err := s.p().AcquireWriter(ctx, "imported")
			testkit.Must(t, err)
			icp := sizedCheckpoint("imported", "i1", "gone", 3, shape.conv, shape.blobs)
			ist, err := s.newStored(icp)
			testkit.Must(t, err)
			testkit.Must(t, s.fit(ist, 0))
			_, err = s.p().Import(ctx, ckptstore.ImportBatch{ThreadID: "imported", Checkpoints: []*ckptstore.Checkpoint{icp},
				SetHead: true, Head: "i1", Transcript: msgs, Writer: il.Writer})
			testkit.Must(t, err)
			bound("Import", s.importCost("imported", []*stored{ist}, msgs), db.last())

			fl, err := s.p().AcquireWriter(ctx, "fork")
			testkit.Must(t, err)
			in := ckptstore.ForkInput{SourceThreadID: "imported", SourceCheckpointID: "i1", DestinationThreadID: "fork",
				DestinationCheckpointID: "fork-root", CreatedAt: 9, Writer: fl.Writer}
			root, err := s.p().ForkFromCheckpoint(ctx, in)
			testkit.Must(t, err)
			rst, err := s.newStored(root)
			testkit.Must(t, err)
			extra := s.forkExtraCost(in, len(transcriptOf(root)))
			testkit.Must(t, s.fit(rst, extra))
			bound("ForkFromCheckpoint", s.insertCost(rst)+s.markerCost("fork")+extra, db.last())
		})
	}
}

// TestFitDropsTheCopy: a checkpoint too large to be stored twice in one
// transaction is stored once, and one too large for that fails.
func TestFitDropsTheCopy(t *testing.T) {
	s, err := NewDriver(memkv.New(), Options{})
	testkit.Must(t, err)
	for _, c := range []struct {
		conv         int
		copied, fits bool
	}{{1000, true, true}, {4_000_000, true, true}, {5_000_000, false, true}, {8_800_000, false, true}, {9_000_000, false, false}} {
		st, err := s.newStored(sizedCheckpoint("t", "c", "", 1, c.conv, 2))
		testkit.Must(t, err)
		err = s.fit(st, 0)
		if (err == nil) != c.fits || (err == nil && st.copied != c.copied) {
			t.Errorf("conversation of %d bytes: fit = %v, copied %v; want fits %v, copied %v", c.conv, err, st.copied, c.fits, c.copied)
		}
	}
}

func TestChainFrom(t *testing.T) {
	links := map[string]linkValue{
		"c3": {parent: "c2"}, "c2": {parent: "c1"}, "c1": {parent: ""},
		"x":  {parent: "c1"},                       // off the chain
		"l1": {parent: "l2"}, "l2": {parent: "l1"}, // a loop through a reused id
		"g1": {parent: "gone"}, // a parent that was pruned
	}
	for head, want := range map[string][]string{
		"c3": {"c3", "c2", "c1"}, "c1": {"c1"}, "": nil, "missing": nil,
		"l1": {"l1", "l2"}, "g1": {"g1"},
	} {
		if got := chainFrom(head, links); !slices.Equal(got, want) {
			t.Errorf("chainFrom(%q) = %v, want %v", head, got, want)
		}
	}
}

func TestPruneBatchSize(t *testing.T) {
	s, err := NewDriver(memkv.New(), Options{PruneBatch: 3})
	testkit.Must(t, err)
	links := map[string]linkValue{}
	var doomed []string
	for i := range 10 {
		id := fmt.Sprintf("c%d", i)
		links[id] = linkValue{createdAt: float64(i), size: 100, blobs: 2}
		doomed = append(doomed, id)
	}
	if n := s.pruneBatchSize("t", doomed, links); n != 3 {
		t.Errorf("small checkpoints: batch of %d, want PruneBatch 3", n)
	}
	if n := s.pruneBatchSize("t", doomed[:2], links); n != 2 {
		t.Errorf("two left: batch of %d, want 2", n)
	}
	// Reads are bounded by maxPruneReadBytes: big checkpoints go one by one,
	links["c0"] = linkValue{size: maxPruneReadBytes - 50}
	if n := s.pruneBatchSize("t", doomed, links); n != 1 {
		t.Errorf("a big first checkpoint: batch of %d, want 1", n)
	}
	// and so is the transaction: a checkpoint with many blob keys alone.
	links["c0"] = linkValue{size: 100, blobs: 1}
	links["c1"] = linkValue{size: 100, blobs: 40_000}
	if n := s.pruneBatchSize("t", doomed, links); n != 1 {
		t.Errorf("a second checkpoint over the byte budget: batch of %d, want 1", n)
	}
	// At least one, even when that one is over every budget.
	links["c0"] = linkValue{size: 2 * maxPruneReadBytes, blobs: 100_000}
	if n := s.pruneBatchSize("t", doomed, links); n != 1 {
		t.Errorf("an oversized checkpoint: batch of %d, want 1", n)
	}
}

func TestDeleteReadLimit(t *testing.T) {
	most := maxPruneReadBytes / kv.MaxValueSize
	for batch, want := range map[int]int{1: maxChunksPerCheckpoint + 1, 2: maxChunksPerCheckpoint + 1, 200: 201, 1000: most} {
		if got := deleteReadLimit(batch); got != want {
			t.Errorf("deleteReadLimit(%d) = %d, want %d", batch, got, want)
		}
	}
	// Whatever the batch, the largest checkpoint fits in one read whole
	// (with one pair more), and a read of full chunks stays in budget.
	for _, batch := range []int{1, 90, 5000} {
		n := deleteReadLimit(batch)
		if n <= maxChunksPerCheckpoint || n*kv.MaxValueSize > maxPruneReadBytes {
			t.Errorf("deleteReadLimit(%d) = %d", batch, n)
		}
	}
}

func TestDeleteBatchSize(t *testing.T) {
	s, err := NewDriver(memkv.New(), Options{PruneBatch: 4})
	testkit.Must(t, err)
	var cps []*ckptstore.Checkpoint
	for i := range 6 {
		cps = append(cps, sizedCheckpoint("t", fmt.Sprintf("c%d", i), "", float64(i), 10, 2))
	}
	if n := s.deleteBatchSize("t", cps); n != 4 {
		t.Errorf("batch of %d, want PruneBatch 4", n)
	}
	if n := s.deleteBatchSize("t", nil); n != 0 {
		t.Errorf("batch of %d for nothing, want 0", n)
	}
	// 8,000 blob keys take about 5 MB to delete: two do not fit together.
	cps[1] = sizedCheckpoint("t", "many", "", 1, 10, 8000)
	cps[2] = sizedCheckpoint("t", "many2", "", 2, 10, 8000)
	if n := s.deleteBatchSize("t", cps); n != 2 {
		t.Errorf("batch of %d with two checkpoints of 8,000 blob keys next, want 2", n)
	}
	if n := s.deleteBatchSize("t", cps[1:]); n != 1 {
		t.Errorf("batch of %d starting with the two of 8,000 blob keys, want 1", n)
	}
}
