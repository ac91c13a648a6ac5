package fdbtest_test

import (
	"context"
	"regexp"
	"testing"

	"github.com/ckptstore/ckptstore/fdbstore/kv"
	"github.com/ckptstore/ckptstore/fdbstore/kv/memkv"
	"github.com/ckptstore/ckptstore/internal/fdbtest"
)

func TestRandomHex(t *testing.T) {
	a, b := fdbtest.RandomHex(), fdbtest.RandomHex()
	if !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(a) || a == b {
		t.Fatalf("RandomHex: %q then %q, want two different 16-digit hex names", a, b)
	}
}

// TestClearAtEnd: the range is cleared when the (sub)test ends, and
// nothing outside it.
func TestClearAtEnd(t *testing.T) {
	ctx := context.Background()
	db := memkv.New()
	set := func(tr kv.Transaction) error {
		tr.Set([]byte("run/a"), []byte("1"))
		tr.Set([]byte("run/b"), []byte("2"))
		tr.Set([]byte("other"), []byte("3"))
		return nil
	}
	if err := db.Transact(ctx, set); err != nil {
		t.Fatal(err)
	}
	t.Run("run", func(t *testing.T) {
		fdbtest.ClearAtEnd(t, db, kv.PrefixRange([]byte("run/")), "the run")
	})
	var keys []string
	err := db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		kvs, err := tr.GetRange(kv.KeyRange{Begin: []byte{}, End: []byte{0xff}}, kv.RangeOptions{}).Get()
		for _, x := range kvs {
			keys = append(keys, string(x.Key))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 || keys[0] != "other" {
		t.Fatalf("keys after the run: %q, want only \"other\"", keys)
	}
}
