// Package storetest holds the fdbstore tests that need no particular
// engine: chunking, the size limit, multi-transaction prunes and
// ListBlobReferences pages, id limits and prefixes. fdbstore's own tests run
// them on memkv, and fdbkv's (build tag fdb) on a real cluster, which
// checks the transaction-size estimates against FoundationDB's own limit.
//
// The suite has the shape of every suite of this module
// (conformance.RunStore, blobstest.RunBucket, kvtest.Run): Run takes a
// factory that each subtest calls once, with its own *testing.T, for a
// fresh Env (the same type as kvtest's); the factory registers any cleanup
// with t.Cleanup.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/fdbstore"
	"github.com/ckptstore/ckptstore/fdbstore/kv"
	"github.com/ckptstore/ckptstore/fdbstore/kv/kvtest"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

// Env is one subtest's database and the raw key prefix it may use: every
// key the subtest writes starts with it (stores use it and longer
// prefixes; "" means fdbstore.DefaultPrefix).
type Env = kvtest.Env

// Run runs the suite; newEnv returns a database and an unused prefix for
// each subtest, and clears the prefix when the subtest ends if it must.
func Run(t *testing.T, newEnv func(t *testing.T) Env) {
	t.Helper()
	for _, tc := range []struct {
		name string
		run  func(*suite, *testing.T)
	}{
		{"Chunking", (*suite).testChunking},
		{"TooLarge", (*suite).testTooLarge},
		{"LongPrune", (*suite).testLongPrune},
		{"BlobPages", (*suite).testBlobPages},
		{"LongIDs", (*suite).testLongIDs},
		{"Prefixes", (*suite).testPrefixes},
		{"ChunkedTranscripts", (*suite).testChunkedTranscripts},
		{"PagesOfBigCheckpoints", (*suite).testPagesOfBigCheckpoints},
		{"LongDeleteThread", (*suite).testLongDeleteThread},
		{"ImportTooLarge", (*suite).testImportTooLarge},
		{"UncopiedCheckpoint", (*suite).testUncopiedCheckpoint},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := newEnv(t)
			if env.Prefix == "" {
				env.Prefix = fdbstore.DefaultPrefix
			}
			tc.run(&suite{env: env}, t)
		})
	}
}

// suite is one subtest's state: its Env.
type suite struct{ env Env }

// prefix is the subtest's key prefix.
func (e *suite) prefix() string { return e.env.Prefix }

// store returns a store with opts under the test's prefix (unless opts
// names one) over a counting view of the test's database.
func (e *suite) store(t *testing.T, opts fdbstore.Options) (*ckptstore.Store, *countingDB) {
	t.Helper()
	env := e.env
	if opts.Prefix == "" {
		opts.Prefix = env.Prefix
	}
	db := &countingDB{DB: env.DB}
	s, err := fdbstore.New(db, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s, db
}

// countingDB counts the transactions run through it and calls after once
// each Transact has committed.
type countingDB struct {
	kv.DB
	after                     func()
	nTransact, nRead, nCommit atomic.Int64
}

func (d *countingDB) Transact(ctx context.Context, fn func(kv.Transaction) error) error {
	d.nTransact.Add(1)
	err := d.DB.Transact(ctx, fn)
	if err == nil {
		d.nCommit.Add(1)
		if d.after != nil {
			d.after()
		}
	}
	return err
}

func (d *countingDB) ReadTransact(ctx context.Context, fn func(kv.ReadTransaction) error) error {
	d.nRead.Add(1)
	return d.DB.ReadTransact(ctx, fn)
}

func (d *countingDB) transactions() int64 { return d.nTransact.Load() + d.nRead.Load() }
func (d *countingDB) commits() int64      { return d.nCommit.Load() }
func (d *countingDB) reads() int64        { return d.nRead.Load() }

var ctx = context.Background()

var (
	fileKey, artifactKey = testkit.FileKey, testkit.ArtifactKey
	must                 = testkit.Must
)

// Chain appends n checkpoints (testkit.Checkpoint) c0..c(n-1) to thread, each sharing blob 0
// and owning blob 1000+i, and returns their ids.
func Chain(t testing.TB, s *ckptstore.Store, w ckptstore.Writer, thread string, n int) []string {
	t.Helper()
	var ids []string
	head := ""
	for i := range n {
		id := fmt.Sprintf("%s-c%d", thread, i)
		must(t, s.Append(ctx, testkit.Checkpoint(thread, id, head, float64(i), 0, 1000+i), head, w))
		ids = append(ids, id)
		head = id
	}
	return ids
}

// testChunking stores a conversation many values long and reads it back
// byte for byte through Get and List.
func (e *suite) testChunking(t *testing.T) {
	s, db := e.store(t, fdbstore.Options{})
	lease, err := s.AcquireWriter(ctx, "t")
	must(t, err)
	var b strings.Builder
	b.WriteString("[")
	for i := 0; b.Len() < 3*kv.MaxValueSize+12345; i++ {
		if i > 0 {
			b.WriteString(",\n ")
		}
		fmt.Fprintf(&b, `{"role":"assistant","content":"message %d %s"}`, i, strings.Repeat("x", i%97))
	}
	b.WriteString("]")
	cp := testkit.Checkpoint("t", "big", "", 1, 1, 2)
	cp.Conversation = []byte(b.String())
	must(t, s.Append(ctx, cp, "", lease.Writer))

	got, err := s.Get(ctx, "big")
	must(t, err)
	if got == nil || !bytes.Equal(got.Conversation, cp.Conversation) || len(got.Files) != 2 {
		t.Fatalf("Get returned a different checkpoint (conversation %d bytes, want %d)", len(got.Conversation), len(cp.Conversation))
	}
	list, err := s.List(ctx, "t")
	must(t, err)
	if len(list) != 1 || !bytes.Equal(list[0].Conversation, cp.Conversation) {
		t.Fatalf("List returned %d checkpoints or a different conversation", len(list))
	}
	// Every stored value is within the limit, and the conversation took
	// several of them.
	var chunks int
	must(t, db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		kvs, err := tr.GetRange(kv.PrefixRange([]byte(e.prefix())), kv.RangeOptions{}).Get()
		chunks = 0
		for _, p := range kvs {
			if len(p.Value) > kv.MaxValueSize {
				return fmt.Errorf("value of %d bytes stored", len(p.Value))
			}
			if len(p.Value) == kv.MaxValueSize {
				chunks++
			}
		}
		return err
	}))
	if chunks < 3 {
		t.Fatalf("%d full chunks stored, want ≥ 3", chunks)
	}
	// Deleting it clears every chunk.
	must(t, s.DeleteHead(ctx, "t", "big", lease.Writer))
	if got, err := s.Get(ctx, "big"); err != nil || got != nil {
		t.Fatalf("Get after DeleteHead = %v, %v", got, err)
	}
	testkit.CheckRefs(t, s, "t")
}

// testTooLarge: a checkpoint that cannot fit in one transaction
// fails with ErrInvalidEntry before anything is written.
func (e *suite) testTooLarge(t *testing.T) {
	s, db := e.store(t, fdbstore.Options{})
	lease, err := s.AcquireWriter(ctx, "t")
	must(t, err)
	cp := testkit.Checkpoint("t", "huge", "", 1, 1)
	cp.Conversation = []byte(`["` + strings.Repeat("y", fdbstore.MaxTransactionBytes) + `"]`)
	writes := db.transactions()
	if err := s.Append(ctx, cp, "", lease.Writer); !errors.Is(err, ckptstore.ErrInvalidEntry) || !strings.Contains(err.Error(), "too large") {
		t.Fatalf("Append of a %d-byte conversation: %v, want ErrInvalidEntry (too large)", len(cp.Conversation), err)
	}
	if db.transactions() != writes {
		t.Fatal("a rejected Append ran a transaction")
	}
	// Just under the limit works, and can be deleted again.
	cp.Conversation = []byte(`["` + strings.Repeat("y", fdbstore.MaxTransactionBytes-200_000) + `"]`)
	must(t, s.Append(ctx, cp, "", lease.Writer))
	must(t, s.DeleteHead(ctx, "t", "huge", lease.Writer))

	// Many blob keys count too: each costs bytes in Append and delete.
	many := testkit.Checkpoint("t", "many", "", 2)
	for i := range 20_000 {
		many.Files = append(many.Files, ckptstore.Entry{Path: fmt.Sprintf("d/f%d", i), Kind: ckptstore.KindFile, BlobKey: fileKey(i), Size: 1})
	}
	require.ErrorIs(t, s.Append(ctx, many, "", lease.Writer), ckptstore.ErrInvalidEntry, "Append with 20,000 blob keys")
	many.Files = many.Files[:5000]
	must(t, s.Append(ctx, many, "", lease.Writer))
	must(t, s.DeleteHead(ctx, "t", "many", lease.Writer))
	testkit.CheckRefs(t, s, "t")
}

// testLongPrune: a prune longer than PruneBatch runs in
// several transactions under the same lease and deletes farthest first;
// each batch checks the lease again.
func (e *suite) testLongPrune(t *testing.T) {
	s, db := e.store(t, fdbstore.Options{PruneBatch: 3})
	lease, err := s.AcquireWriter(ctx, "t")
	must(t, err)
	ids := Chain(t, s, lease.Writer, "t", 12)
	before := db.commits()
	deleted, err := s.DeleteCheckpoints(ctx, "t", 2, lease.Writer)
	require.NoError(t, err)
	require.Equal(t, ids[:10], deleted, "deleted, farthest first")
	require.Equal(t, int64(4), db.commits()-before, "transactions committed: 4 batches of ≤ 3")
	testkit.CheckRefs(t, s, "t")
	cps, err := s.List(ctx, "t")
	require.NoError(t, err)
	require.Equal(t, ids[10:], testkit.IDs(cps), "List after prune")

	// A lease lost between batches stops the prune with ErrWriterLost and
	// returns what it deleted; the chain stays intact from the head.
	clock := testkit.NewClock(time.UnixMilli(1_700_000_000_000))
	s2, hooked := e.store(t, fdbstore.Options{Options: ckptstore.Options{Now: clock.Now}, PruneBatch: 2, Prefix: e.prefix() + "2"})
	lease2, err := s2.AcquireWriter(ctx, "u")
	must(t, err)
	ids2 := Chain(t, s2, lease2.Writer, "u", 8)
	commits := 0
	hooked.after = func() {
		if commits++; commits == 2 {
			clock.Advance(time.Hour) // the lease expires after the second batch
		}
	}
	deleted, err = s2.DeleteCheckpoints(ctx, "u", 1, lease2.Writer)
	require.ErrorIs(t, err, ckptstore.ErrWriterLost, "prune with a lease lost mid-way")
	require.Equal(t, ids2[:4], deleted, "the prune stops after deleting the 4 farthest")
	cps, err = s2.List(ctx, "u")
	require.NoError(t, err)
	require.Equal(t, ids2[4:], testkit.IDs(cps), "List after the stopped prune: the 4 nearest")
	assert.Equal(t, ids2[3], cps[0].ParentCheckpointID, "the oldest left keeps its parent")
	testkit.CheckRefs(t, s2, "u")
}

// testBlobPages lists more reference keys than one page holds,
// across several transactions, in byte order.
func (e *suite) testBlobPages(t *testing.T) {
	s, db := e.store(t, fdbstore.Options{BlobPage: 4})
	lease, err := s.AcquireWriter(ctx, "t")
	must(t, err)
	cp := testkit.Checkpoint("t", "a", "", 1)
	for i := range 17 {
		cp.Files = append(cp.Files, ckptstore.Entry{Path: fmt.Sprintf("f%d", i), Kind: ckptstore.KindFile, BlobKey: fileKey(i * 7919 % 101), Size: 1})
	}
	cp.Artifacts = []ckptstore.Artifact{{ArtifactID: "x", Name: "x", MimeType: "text/plain", BlobKey: artifactKey(3)}}
	must(t, s.Append(ctx, cp, "", lease.Writer))
	before := db.reads()
	refs, err := s.ListBlobReferences(ctx)
	must(t, err)
	if n := db.reads() - before; n != 5 {
		t.Fatalf("BlobReferences of 18 keys in pages of 4: %d transactions, want 5", n)
	}
	if len(refs) != 18 || !slices.IsSortedFunc(refs, func(a, b ckptstore.BlobRef) int { return strings.Compare(a.Key, b.Key) }) {
		t.Fatalf("BlobReferences = %v: want 18 keys in byte order", refs)
	}
	// The streaming form reads only the pages it yields from.
	before = db.reads()
	var got []ckptstore.BlobRef
	for ref, err := range s.BlobReferencesSeq(ctx) {
		must(t, err)
		if got = append(got, ref); len(got) == 6 {
			break
		}
	}
	assert.Equal(t, refs[:6], got, "BlobReferencesSeq stopped after 6 keys")
	assert.Equal(t, int64(2), db.reads()-before, "transactions of the 6 keys")
	testkit.CheckRefs(t, s, "t")
}

// testLongIDs: ids over MaxIDBytes (the contract's bound, which keeps
// every FoundationDB key small) fail writes and reads with ErrInvalidID,
// and the longest, of the bytes a tuple key doubles, works.
func (e *suite) testLongIDs(t *testing.T) {
	s, db := e.store(t, fdbstore.Options{})
	long := strings.Repeat("\x00", fdbstore.MaxIDBytes+1) // NUL doubles in a tuple key: the worst case
	okID := strings.Repeat("\x00", fdbstore.MaxIDBytes)
	_, err := s.AcquireWriter(ctx, long)
	require.ErrorIs(t, err, ckptstore.ErrInvalidID, "AcquireWriter(long id)")
	lease, err := s.AcquireWriter(ctx, okID)
	must(t, err)
	must(t, s.Append(ctx, testkit.Checkpoint(okID, okID, "", 1, 1), "", lease.Writer))
	require.ErrorIs(t, s.Append(ctx, testkit.Checkpoint(okID, long, okID, 2), okID, lease.Writer), ckptstore.ErrInvalidID, "Append(long id)")
	// The store refuses a long id in reads too (the contract's bound);
	// the driver, called directly, finds nothing for it.
	_, err = s.Get(ctx, long)
	require.ErrorIs(t, err, ckptstore.ErrInvalidID, "Get(long id)")
	_, err = s.List(ctx, long)
	require.ErrorIs(t, err, ckptstore.ErrInvalidID, "List(long id)")
	if cp, err := s.Driver().Get(ctx, long); cp != nil || err != nil {
		t.Fatalf("driver Get(long id) = %v, %v; want nil, nil", cp, err)
	}
	if cp, err := s.Get(ctx, okID); cp == nil || err != nil {
		t.Fatalf("Get(longest id) = %v, %v", cp, err)
	}
	is := fdbstore.NewInstanceStore(db, e.prefix()+"instances")
	require.ErrorIs(t, is.Upsert(ctx, &ckptstore.InstanceRecord{Key: long}), ckptstore.ErrInvalidID, "Upsert(long key)")
}

// testPrefixes: stores under different prefixes of one
// database share nothing, and a store and an instance store may share one.
func (e *suite) testPrefixes(t *testing.T) {
	p := e.prefix()
	a, db := e.store(t, fdbstore.Options{Prefix: p + "a"})
	ab, err := fdbstore.New(db, fdbstore.Options{Prefix: p + "ab"})
	must(t, err)
	la, err := a.AcquireWriter(ctx, "t")
	must(t, err)
	if _, err := ab.AcquireWriter(ctx, "t"); err != nil {
		t.Fatalf("a lease under another prefix blocked: %v", err)
	}
	must(t, a.Append(ctx, testkit.Checkpoint("t", "c", "", 1, 1), "", la.Writer))
	if cps, _ := ab.List(ctx, "t"); len(cps) != 0 {
		t.Fatal("a checkpoint leaked to another prefix")
	}
	if refs, _ := ab.ListBlobReferences(ctx); len(refs) != 0 {
		t.Fatal("a reference leaked to another prefix")
	}
	is := fdbstore.NewInstanceStore(db, p+"a")
	must(t, is.Upsert(ctx, &ckptstore.InstanceRecord{Key: "t", Provider: "p", UpdatedAt: 5}))
	if cps, _ := a.List(ctx, "t"); len(cps) != 1 {
		t.Fatal("the instance store disturbed the checkpoint store")
	}
	rec, err := is.Get(ctx, "t")
	if err != nil || rec == nil || rec.Provider != "p" || rec.UpdatedAt != 5 {
		t.Fatalf("instance record = %+v, %v", rec, err)
	}
}

// conversation returns a JSON array of at least n bytes with varied content.
func conversation(n int) []byte {
	var b strings.Builder
	b.WriteString("[")
	for i := 0; b.Len() < n; i++ {
		if i > 0 {
			b.WriteString(",")
		}
		// Few, long messages: validating the JSON is the slow part under -race.
		fmt.Fprintf(&b, `{"role":"assistant","content":"message %d %s"}`, i, strings.Repeat("z", 20_000+i%89))
	}
	b.WriteString("]")
	return []byte(b.String())
}

// testChunkedTranscripts: a transcript of several values comes back byte
// for byte, a saved "[]" counts as a transcript, and one too large for a
// transaction fails before any write.
func (e *suite) testChunkedTranscripts(t *testing.T) {
	s, db := e.store(t, fdbstore.Options{})
	msgs := conversation(3*kv.MaxValueSize + 777)
	must(t, s.SaveThread(ctx, "t", msgs))
	got, err := s.LoadThread(ctx, "t")
	must(t, err)
	if !bytes.Equal(got, msgs) {
		t.Fatalf("LoadThread returned %d bytes, want the %d saved", len(got), len(msgs))
	}
	short := []byte(`[1]`)
	must(t, s.SaveThread(ctx, "t", short)) // replaces every chunk
	if got, _ := s.LoadThread(ctx, "t"); !bytes.Equal(got, short) {
		t.Fatalf("LoadThread after a shorter save = %d bytes", len(got))
	}
	must(t, s.SaveThread(ctx, "u", []byte("[]")))
	threads, _, err := s.Threads(ctx, "", 0)
	require.NoError(t, err)
	require.Equal(t, []string{"t", "u"}, threads, "Threads: a saved [] counts")
	huge := []byte(`["` + strings.Repeat("y", fdbstore.MaxTransactionBytes) + `"]`)
	before := db.transactions()
	if err := s.SaveThread(ctx, "t", huge); !errors.Is(err, ckptstore.ErrInvalidEntry) {
		t.Fatalf("SaveThread of %d bytes: %v, want ErrInvalidEntry", len(huge), err)
	}
	if db.transactions() != before {
		t.Fatal("a refused SaveThread ran a transaction")
	}
}

// testPagesOfBigCheckpoints pages through checkpoints of several chunks:
// pages may hold fewer than the limit but never skip or repeat one, in
// both directions, and a limit of 1 over a checkpoint of 3 chunks works.
func (e *suite) testPagesOfBigCheckpoints(t *testing.T) {
	s, _ := e.store(t, fdbstore.Options{})
	lease, err := s.AcquireWriter(ctx, "t")
	must(t, err)
	var want []string
	head := ""
	for i := range 7 {
		cp := testkit.Checkpoint("t", fmt.Sprintf("c%d", i), head, float64(i), i)
		if i%2 == 1 {
			cp.Conversation = conversation((i/2 + 1) * kv.MaxValueSize) // 2, 3 and 4 chunks
		}
		must(t, s.Append(ctx, cp, head, lease.Writer))
		want = append(want, cp.ID)
		head = cp.ID
	}
	for _, limit := range []int{1, 2, 3, 100} {
		for _, reverse := range []bool{false, true} {
			var got []string
			cursor := ""
			for pages := 0; ; pages++ {
				if pages > 20 {
					t.Fatalf("limit %d: more than 20 pages", limit)
				}
				cps, next, err := s.ListPage(ctx, "t", ckptstore.ListOptions{After: cursor, Limit: limit, Reverse: reverse})
				must(t, err)
				if len(cps) == 0 || len(cps) > limit {
					t.Fatalf("limit %d, reverse %v: a page of %d checkpoints", limit, reverse, len(cps))
				}
				for _, cp := range cps {
					got = append(got, cp.ID)
				}
				if cursor = next; cursor == "" {
					break
				}
			}
			w := slices.Clone(want)
			if reverse {
				slices.Reverse(w)
			}
			require.Equal(t, w, got, "limit %d, reverse %v: the ids paged", limit, reverse)
		}
	}
}

// testLongDeleteThread deletes a thread of big and small checkpoints, on
// and off the chain, in several batches, each checking the lease; a lease
// lost between batches stops it, and repeating it finishes the job.
func (e *suite) testLongDeleteThread(t *testing.T) {
	clock := testkit.NewClock(time.UnixMilli(1_700_000_000_000))
	s, db := e.store(t, fdbstore.Options{Options: ckptstore.Options{Now: clock.Now}, PruneBatch: 3})
	lease, err := s.AcquireWriter(ctx, "t")
	must(t, err)
	ids := Chain(t, s, lease.Writer, "t", 8)
	must(t, s.DeleteHead(ctx, "t", ids[7], lease.Writer))
	big := testkit.Checkpoint("t", "big", ids[6], 100, 5)
	big.Conversation = conversation(2 * kv.MaxValueSize)
	must(t, s.Append(ctx, big, ids[6], lease.Writer))
	must(t, s.SaveThread(ctx, "t", []byte(`["m"]`)))
	commits := 0
	db.after = func() {
		if commits++; commits == 2 {
			clock.Advance(time.Hour) // the lease expires after the second batch
		}
	}
	n, err := s.DeleteThread(ctx, "t", lease.Writer)
	require.ErrorIs(t, err, ckptstore.ErrWriterLost, "DeleteThread with the lease lost after two batches")
	require.Equal(t, 6, n, "deleted before the lease was lost")
	db.after = nil
	cps, err := s.List(ctx, "t")
	require.NoError(t, err)
	require.Equal(t, []string{ids[6], "big"}, testkit.IDs(cps), "List after the stopped delete: the 2 newest")
	testkit.CheckRefs(t, s, "t")
	l2, err := s.AcquireWriter(ctx, "t")
	must(t, err)
	before := db.commits()
	n, err = s.DeleteThread(ctx, "t", l2.Writer)
	must(t, err)
	if n != 2 || db.commits()-before != 1 {
		t.Fatalf("the repeated DeleteThread: %d deleted in %d transactions, want 2 in 1", n, db.commits()-before)
	}
	if head, _ := s.GetHead(ctx, "t"); head != "" {
		t.Fatalf("head after DeleteThread = %q", head)
	}
	if m, _ := s.LoadThread(ctx, "t"); string(m) != "[]" {
		t.Fatalf("transcript after DeleteThread = %s", m)
	}
	if threads, _, _ := s.Threads(ctx, "", 0); len(threads) != 0 {
		t.Fatalf("Threads after DeleteThread = %v", threads)
	}
	testkit.CheckRefs(t, s, "t")
	if n, err := s.DeleteThread(ctx, "t", l2.Writer); err != nil || n != 0 {
		t.Fatalf("DeleteThread of the empty thread = %d, %v", n, err)
	}
}

// testImportTooLarge: a batch too large for one transaction fails with
// ErrInvalidEntry before any transaction; its halves go through.
func (e *suite) testImportTooLarge(t *testing.T) {
	s, db := e.store(t, fdbstore.Options{})
	lease, err := s.AcquireWriter(ctx, "t")
	must(t, err)
	var cps []*ckptstore.Checkpoint
	for i := range 6 {
		cp := testkit.Checkpoint("t", fmt.Sprintf("c%d", i), "", float64(i), i)
		cp.Conversation = conversation(kv.MaxValueSize * 9 / 10 * 10) // about 0.9 MB, copied: 1.8 MB a checkpoint
		cps = append(cps, cp)
	}
	before := db.transactions()
	_, err = s.Import(ctx, ckptstore.ImportBatch{ThreadID: "t", Checkpoints: cps, Writer: lease.Writer})
	require.ErrorIs(t, err, ckptstore.ErrInvalidEntry, "Import of about 11 MB in one batch")
	if db.transactions() != before {
		t.Fatal("a refused Import ran a transaction")
	}
	for _, half := range [][]*ckptstore.Checkpoint{cps[:3], cps[3:]} {
		n, err := s.Import(ctx, ckptstore.ImportBatch{ThreadID: "t", Checkpoints: half, Writer: lease.Writer})
		must(t, err)
		if n != 3 {
			t.Fatalf("Import of half the batch wrote %d, want 3", n)
		}
	}
	testkit.CheckRefs(t, s, "t")
}

// testUncopiedCheckpoint: a checkpoint too large to be stored twice is
// stored once; Get, Restore, fork and Import still read it (by its thread).
func (e *suite) testUncopiedCheckpoint(t *testing.T) {
	s, _ := e.store(t, fdbstore.Options{})
	lease, err := s.AcquireWriter(ctx, "t")
	must(t, err)
	cp := testkit.Checkpoint("t", "huge", "", 1, 1)
	cp.Conversation = conversation(5_000_000)
	must(t, s.Append(ctx, cp, "", lease.Writer))
	got, err := s.Get(ctx, "huge")
	must(t, err)
	if got == nil || !bytes.Equal(got.Conversation, cp.Conversation) {
		t.Fatal("Get of an uncopied checkpoint returned another conversation")
	}
	if head, got, err := s.Driver().(*fdbstore.Driver).Restore(ctx, "t"); err != nil || head != "huge" || got == nil || !bytes.Equal(got.Conversation, cp.Conversation) {
		t.Fatalf("Restore = %q, %v", head, err)
	}
	fl, err := s.AcquireWriter(ctx, "f")
	must(t, err)
	// A fork writes the conversation twice (the root and the transcript):
	// 10 MB do not fit in one transaction, and the fork changes nothing.
	_, err = s.ForkFromCheckpoint(ctx, ckptstore.ForkInput{SourceThreadID: "t", SourceCheckpointID: "huge",
		DestinationThreadID: "f", DestinationCheckpointID: "root", CreatedAt: 2, Writer: fl.Writer})
	if !errors.Is(err, ckptstore.ErrInvalidEntry) || !strings.Contains(err.Error(), "too large") {
		t.Fatalf("fork of a 5 MB checkpoint: %v, want ErrInvalidEntry (too large)", err)
	}
	if m, _ := s.LoadThread(ctx, "f"); string(m) != "[]" {
		t.Fatal("the refused fork wrote a transcript")
	}
	if head, _ := s.GetHead(ctx, "f"); head != "" {
		t.Fatal("the refused fork wrote a head")
	}
	// A smaller one (stored with a copy) forks in one transaction.
	small := testkit.Checkpoint("t", "small", "huge", 3, 2)
	small.Conversation = conversation(2_000_000)
	must(t, s.Append(ctx, small, "huge", lease.Writer))
	root, err := s.ForkFromCheckpoint(ctx, ckptstore.ForkInput{SourceThreadID: "t", SourceCheckpointID: "small",
		DestinationThreadID: "f", DestinationCheckpointID: "root", CreatedAt: 4, Writer: fl.Writer})
	must(t, err)
	if m, _ := s.LoadThread(ctx, "f"); !bytes.Equal(m, small.Conversation) || !bytes.Equal(root.Conversation, small.Conversation) {
		t.Fatal("the fork lost its conversation")
	}
	must(t, s.DeleteHead(ctx, "t", "small", lease.Writer))
	if n, err := s.Import(ctx, ckptstore.ImportBatch{ThreadID: "t", Checkpoints: []*ckptstore.Checkpoint{cp}, Writer: lease.Writer}); err != nil || n != 0 {
		t.Fatalf("re-import of the stored checkpoint = %d, %v; want 0, nil", n, err)
	}
	must(t, s.DeleteHead(ctx, "t", "huge", lease.Writer))
	testkit.CheckRefs(t, s, "t", "f")
}
