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
