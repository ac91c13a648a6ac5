package memkv

// Tests of the commit path's structure: group commits, the conflict check's
// range search, and readers that never wait for the commit lock.

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"

	"github.com/ckptstore/ckptstore/fdbstore/kv"
)

// TestIntersects compares the binary-search intersection of range sets
// with a key-by-key answer on random sets over a small key space.
func TestIntersects(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const keys = 12 // keys "a".."l"; ranges end at most at "m"
	randomSet := func() []kv.KeyRange {
		var rs []kv.KeyRange
		for range rng.IntN(5) {
			i := rng.IntN(keys)
			j := i + 1 + rng.IntN(3)
			rs = append(rs, kv.KeyRange{Begin: []byte{byte('a' + i)}, End: []byte{byte('a' + min(j, keys))}})
		}
		return mergeRanges(rs)
	}
	covers := func(s []kv.KeyRange, k byte) bool {
		for _, r := range s {
			if r.Begin[0] <= k && k < r.End[0] {
				return true
			}
		}
		return false
	}
	for n := range 20000 {
		a, b := randomSet(), randomSet()
		want := false
		for k := byte('a'); k < 'a'+keys; k++ {
			want = want || covers(a, k) && covers(b, k)
		}
		if got := intersects(a, b); got != want {
			t.Fatalf("case %d: intersects(%q, %q) = %v, want %v", n, a, b, got, want)
		}
		if got := intersects(b, a); got != want {
			t.Fatalf("case %d: intersects(%q, %q) = %v, want %v", n, b, a, got, want)
		}
	}
}

// TestReadsNeverTakeTheCommitLock holds DB.mu, as a leader running a
// batch does, and begins, reads and ends transactions: none of that may
// wait for it (if it did, this test would deadlock).
func TestReadsNeverTakeTheCommitLock(t *testing.T) {
	db := New()
	put(t, db, "k", "v")
	db.mu.Lock()
	tr := db.Begin(context.Background())
	v, err := tr.Get(b("k")).Get()
	kvs, rerr := tr.GetRange(kv.KeyRange{Begin: b("a"), End: b("z")}, kv.RangeOptions{}).Get()
	tr.Set(b("k"), b("w"))
	tr.Cancel()
	ver := db.Version()
	ro := db.Begin(context.Background())
	roErr := ro.Commit() // read-only: local
	db.mu.Unlock()
	if err != nil || rerr != nil || roErr != nil || string(v) != "v" || len(kvs) != 1 || ver != 1 {
		t.Fatalf("reads under a held commit lock: %q %v, %d pairs %v, version %d, read-only commit %v", v, err, len(kvs), rerr, ver, roErr)
	}
}

// waitQueued spins until n commits wait in db's queue (the leader's batch
// taken out of it is not counted).
func waitQueued(db *DB, n int) {
	for {
		db.queueMu.Lock()
		q := len(db.queue)
		db.queueMu.Unlock()
		if q >= n {
			return
		}
		runtime.Gosched()
	}
}

// TestConflictInsideABatch queues two transactions that read and write
// one key behind a leader held at the commit lock, so that they run in one
// batch: the second must be checked against the first, which it did not
// see, and fail.
func TestConflictInsideABatch(t *testing.T) {
	db := New()
	put(t, db, "k", "0")
	ctx := context.Background()
	first := db.Begin(ctx)
	a, c := db.Begin(ctx), db.Begin(ctx)
	for _, tr := range []*Tx{a, c} {
		if _, err := tr.Get(b("k")).Get(); err != nil {
			t.Fatal(err)
		}
		tr.Set(b("k"), b(fmt.Sprint(tr == a)))
	}
	first.Set(b("other"), b("x"))

	db.mu.Lock() // the leader will wait here with first's batch
	errs := make([]error, 3)
	var wg sync.WaitGroup
	wg.Go(func() { errs[0] = first.Commit() })
	for {
		db.queueMu.Lock()
		leading := db.leading && len(db.queue) == 0
		db.queueMu.Unlock()
		if leading {
			break // first's goroutine leads, its batch taken
		}
		runtime.Gosched()
	}
	wg.Go(func() { errs[1] = a.Commit() })
	wg.Go(func() { errs[2] = c.Commit() })
	waitQueued(db, 2)
	db.mu.Unlock()
	wg.Wait()

	if errs[0] != nil {
		t.Fatalf("first commit: %v", errs[0])
	}
	failed := 0
	for _, err := range errs[1:] {
		switch kv.ErrorCode(err) {
		case 0:
		case kv.CodeNotCommitted:
			failed++
		default:
			t.Fatalf("commit: %v", err)
		}
	}
	st := db.Stats()
	if failed != 1 || st.Conflicts != 1 || st.Commits != 3 || db.Version() != 3 {
		t.Fatalf("%d of two conflicting commits failed, stats %+v, version %d; want 1, 1 conflict, 3 commits, version 3",
			failed, st, db.Version())
	}
}

// TestGroupCommitsUnderLoad: many writers on disjoint keys, each reading
// its key and adding to one shared counter, commit in batches: every
// commit applies, in its own version, with no conflict and no retry.
func TestGroupCommitsUnderLoad(t *testing.T) {
	db := New()
	const writers, each = 16, 50
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				key := b(fmt.Sprintf("w%02d/%03d", w, i))
				err := db.Transact(context.Background(), func(tr kv.Transaction) error {
					if v, err := tr.Get(key).Get(); err != nil || v != nil {
						return fmt.Errorf("fresh key %s: %q, %v", key, v, err)
					}
					tr.Set(key, b("x"))
					tr.Add(b("hot"), 1)
					return nil
				})
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	st := db.Stats()
	if st.Commits != writers*each || st.Conflicts != 0 || st.Retries != 0 || db.Version() != writers*each {
		t.Fatalf("stats %+v, version %d: want %d commits and versions, no conflict or retry", st, db.Version(), writers*each)
	}
	if got := kv.DecodeInt64([]byte(read(t, db, "hot"))); got != writers*each {
		t.Fatalf("counter = %d, want %d", got, writers*each)
	}
	tr := db.Begin(context.Background())
	defer tr.Cancel()
	kvs, err := tr.GetRange(kv.KeyRange{Begin: b("w"), End: b("x")}, kv.RangeOptions{}).Get()
	if err != nil || len(kvs) != writers*each {
		t.Fatalf("%d keys written, want %d (%v)", len(kvs), writers*each, err)
	}
}
