package memkv_test

import (
	"context"
	"fmt"

	"github.com/ckptstore/ckptstore/fdbstore/kv"
	"github.com/ckptstore/ckptstore/fdbstore/kv/memkv"
)

// A transaction that issues its reads together costs one read round.
func ExampleDB_Transact() {
	db := memkv.New()
	ctx := context.Background()
	_ = db.Transact(ctx, func(tr kv.Transaction) error {
		tr.Set([]byte("head"), []byte("cp1"))
		return nil
	})
	db.ResetStats()
	err := db.Transact(ctx, func(tr kv.Transaction) error {
		head := tr.Get([]byte("head"))                                         // issued
		refs := tr.GetRange(kv.PrefixRange([]byte("ref/")), kv.RangeOptions{}) // issued
		h, err := head.Get()                                                   // one round for both
		if err != nil {
			return err
		}
		if _, err := refs.Get(); err != nil {
			return err
		}
		tr.Set([]byte("head"), append(h, '+'))
		tr.Add([]byte("ref/count"), 1)
		return nil
	})
	s := db.Stats()
	fmt.Println(err, s.ReadRounds, s.Commits, s.KeysWritten)
	// Output: <nil> 1 1 2
}

// The shard model counts where a cluster's write load would land: here
// every write also appends to one time-ordered log, whose range takes half
// of all mutations.
func ExampleDB_Shards() {
	db := memkv.New()
	ctx := context.Background()
	write := func(i int) {
		_ = db.Transact(ctx, func(tr kv.Transaction) error {
			tr.Set(fmt.Appendf(nil, "user/%03d", i*37%100), []byte("x"))
			tr.Set(fmt.Appendf(nil, "log/%06d", i), nil)
			return nil
		})
	}
	for i := range 100 {
		write(i)
	}
	db.Shards(4) // four ranges of 50 keys
	for i := 100; i < 200; i++ {
		write(i)
	}
	r := db.ShardStats()
	fmt.Printf("%.0f %% of %d mutations in range %d of %d\n", 100*r.HottestShare, r.Mutations, r.Hottest, len(r.Shards))
	// Output: 50 % of 200 mutations in range 1 of 4
}

// BeforeCommit runs another client's commit between a transaction's reads
// and its commit: the transaction conflicts and Transact runs it again.
func ExampleDB_BeforeCommit() {
	db := memkv.New()
	ctx := context.Background()
	once := false
	remove := db.BeforeCommit(func(*memkv.Tx) {
		if !once {
			once = true
			_ = db.Transact(ctx, func(tr kv.Transaction) error { tr.Set([]byte("n"), []byte("other")); return nil })
		}
	})
	defer remove()
	attempts := 0
	_ = db.Transact(ctx, func(tr kv.Transaction) error {
		attempts++
		v, err := tr.Get([]byte("n")).Get()
		if err != nil {
			return err
		}
		tr.Set([]byte("n"), append(v, '+'))
		return nil
	})
	fmt.Println(attempts, db.Stats().Conflicts)
	// Output: 2 1
}
