package memkv

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ckptstore/ckptstore/fdbstore/kv"
)

// keysN stores k000..k(n-1), values "v".
func keysN(t *testing.T, db *DB, n int) {
	t.Helper()
	var pairs []string
	for i := range n {
		pairs = append(pairs, fmt.Sprintf("k%03d", i), "v")
	}
	put(t, db, pairs...)
}

func quoted(bs [][]byte) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b)
	}
	return out
}

// TestShardCutIsKeyCountQuantiles cuts 100 keys into 4, 3 and more ranges
// than keys, and an empty database.
func TestShardCutIsKeyCountQuantiles(t *testing.T) {
	db := New()
	if got := db.Shards(4); len(got) != 0 {
		t.Fatalf("empty database: boundaries %q, want none", quoted(got))
	}
	if r := db.ShardStats(); len(r.Shards) != 1 || r.Shards[0].Keys != 0 || r.Hottest != -1 {
		t.Fatalf("empty database: %+v, want one empty range", r)
	}
	keysN(t, db, 100)
	require.Equal(t, []string{"k025", "k050", "k075"}, quoted(db.Shards(4)))
	require.Equal(t, []string{"k033", "k066"}, quoted(db.Shards(3)))
	r := db.ShardStats()
	if len(r.Shards) != 3 || r.Shards[0].Keys != 33 || r.Shards[1].Keys != 33 || r.Shards[2].Keys != 34 {
		t.Fatalf("3 ranges of 100 keys: %+v", r.Shards)
	}
	if string(r.Shards[0].Begin) != "" || string(r.Shards[1].Begin) != "k033" || r.Shards[2].End != nil {
		t.Fatalf("range ends: %+v", r.Shards)
	}

	small := New()
	keysN(t, small, 3)
	require.Equal(t, []string{"k000", "k001", "k002"}[1:], quoted(small.Shards(10)))
	if r := small.ShardStats(); len(r.Shards) != 3 {
		t.Fatalf("3 keys in 10 ranges: %d ranges, want 3 (no empty ones)", len(r.Shards))
	}
	if small.Shards(0) != nil || len(small.ShardStats().Shards) != 0 {
		t.Fatal("Shards(0) must turn the model off")
	}
}

// TestShardCountersExact checks every kind of mutation lands in its range
// with its bytes, a ClearRange in every range it overlaps, and refused
// commits nowhere.
func TestShardCountersExact(t *testing.T) {
	db := New()
	keysN(t, db, 100) // ranges [, k050) and [k050, )
	db.Shards(2)
	ctx := context.Background()
	err := db.Transact(ctx, func(tr kv.Transaction) error {
		tr.Set(b("k001"), b("xyz"))                                  // range 0: 4+3 bytes
		tr.Clear(b("k002"))                                          // range 0: 4
		tr.Add(b("k060"), 1)                                         // range 1: 4+8
		tr.CompareAndClear(b("k061"), b("v"))                        // range 1: 4+1
		tr.ClearRange(kv.KeyRange{Begin: b("k040"), End: b("k055")}) // both: 8 each
		return nil
	})
	must(t, err)
	// A conflicting commit is not applied, so it is not counted.
	tr := db.Begin(ctx)
	mustGet(t, tr, "k003")
	tr.Set(b("k070"), b("w"))
	put(t, db, "k003", "changed") // range 0: 4+7
	wantCode(t, tr.Commit(), kv.CodeNotCommitted)

	r := db.ShardStats()
	if got, want := []int64{r.Shards[0].Mutations, r.Shards[1].Mutations}, []int64{4, 3}; got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("mutations %v, want %v", got, want)
	}
	if got, want := []int64{r.Shards[0].Bytes, r.Shards[1].Bytes}, []int64{7 + 4 + 8 + 11, 12 + 5 + 8}; got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("bytes %v, want %v", got, want)
	}
	if r.Mutations != 7 || r.Hottest != 0 || r.HottestShare != 4.0/7 || r.HottestBytesShare != 30.0/55 {
		t.Fatalf("report %+v", r)
	}
	if s := r.String(); !strings.HasPrefix(s, "hottest range: 57.1 % of writes") {
		t.Fatalf("summary %q", s)
	}
	db.ResetShardStats()
	if r := db.ShardStats(); r.Mutations != 0 || r.Hottest != -1 || len(r.Shards) != 2 {
		t.Fatalf("after reset: %+v", r)
	}
}

// TestShardModelFindsAnAppendOnlyRange writes, from many "threads", one
// key under the thread and one time-ordered log key per write: the log's
// range takes half of every write, whatever the cut.
func TestShardModelFindsAnAppendOnlyRange(t *testing.T) {
	db := New()
	seq := 0
	write := func(thread int) {
		seq++
		put(t, db, fmt.Sprintf("t/%03d/%06d", thread, seq), "x", fmt.Sprintf("log/%08d", seq), "")
	}
	for i := range 2000 {
		write(i * 7919 % 100)
	}
	db.Shards(16)
	for i := range 2000 {
		write(i * 7919 % 100)
	}
	r := db.ShardStats()
	if r.HottestShare < 0.49 || !strings.HasPrefix(string(r.Shards[r.Hottest].Begin), "log/") {
		t.Fatalf("the log range should take half the writes: %v", r)
	}
	// Without the log, no range takes more than twice its share.
	db2 := New()
	for i := range 4000 {
		put(t, db2, fmt.Sprintf("t/%03d/%06d", i*7919%100, i), "x")
		if i == 1999 {
			db2.Shards(16)
		}
	}
	if r := db2.ShardStats(); r.HottestShare > 2*r.FairShare() {
		t.Fatalf("per-thread keys only: %v", r)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
