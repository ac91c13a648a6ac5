package memkv_test

import (
	"context"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore/fdbstore/kv"
	"github.com/ckptstore/ckptstore/fdbstore/kv/memkv"
)

func set(t *testing.T, db *memkv.DB, k, v string) {
	t.Helper()
	if err := db.Transact(context.Background(), func(tr kv.Transaction) error {
		tr.Set([]byte(k), []byte(v))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func fired(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestWatch(t *testing.T) {
	ctx := context.Background()
	db := memkv.New()
	set(t, db, "r/2", "v")
	a, err := db.Watch(ctx, []byte("a"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := db.Watch(ctx, []byte("b"))
	r, _ := db.Watch(ctx, []byte("r/2"))
	set(t, db, "b", "1")
	if fired(a) || !fired(b) {
		t.Fatalf("a commit of b fired a %v, b %v", fired(a), fired(b))
	}
	// A fired watch has seen the commit: a new transaction reads it.
	if err := db.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
		v, err := tr.Get([]byte("b")).Get()
		if string(v) != "1" {
			t.Fatalf("read %q after the watch fired", v)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Transact(ctx, func(tr kv.Transaction) error {
		tr.ClearRange(kv.KeyRange{Begin: []byte("r/"), End: []byte("r0")})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !fired(r) || fired(a) {
		t.Fatal("a range clear over r/2 did not fire its watch, or fired a's")
	}
	// A write of the value the key had when the watch was set, or a clear
	// of a key that does not exist, changes nothing: the watch stays.
	s, _ := db.Watch(ctx, []byte("b"))
	set(t, db, "b", "1")
	gone, _ := db.Watch(ctx, []byte("gone"))
	if err := db.Transact(ctx, func(tr kv.Transaction) error {
		tr.Clear([]byte("gone"))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if fired(s) || fired(gone) {
		t.Fatalf("an unchanged value fired its watch: b %v, gone %v", fired(s), fired(gone))
	}
	set(t, db, "b", "2")
	set(t, db, "gone", "")
	if !fired(s) || !fired(gone) {
		t.Fatalf("a new value, or an empty one where there was none, did not fire: b %v, gone %v", fired(s), fired(gone))
	}
	// A watch ends with its context.
	cctx, cancel := context.WithCancel(ctx)
	c, _ := db.Watch(cctx, []byte("c"))
	cancel()
	select {
	case <-c:
	case <-time.After(5 * time.Second):
		t.Fatal("a cancelled watch did not end")
	}
	// Outstanding watches are limited.
	db.SetMaxWatches(1) // a is outstanding
	if _, err := db.Watch(ctx, []byte("x")); kv.ErrorCode(err) != kv.CodeTooManyWatches {
		t.Fatalf("a watch past the limit: %v", err)
	}
	set(t, db, "a", "1")
	if !fired(a) {
		t.Fatal("a's watch did not fire")
	}
	if _, err := db.Watch(ctx, []byte("x")); err != nil {
		t.Fatalf("a watch under the limit again: %v", err)
	}
}
