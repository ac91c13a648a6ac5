package kvtest

import (
	"context"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore/fdbstore/kv"
)

// WatchEnv is RunWatch's database: DB writes, Watcher watches the same
// data through another handle (as another server would: on FoundationDB a
// second database connection; on memkv the same engine), and
// SetMaxWatches sets Watcher's limit of outstanding watches, which no
// other test shares.
type WatchEnv struct {
	DB            kv.DB
	Watcher       kv.Watcher
	SetMaxWatches func(n int) error
	Prefix        string
}

// watchWait bounds the wait for a watch that must fire: a liveness bound
// for a failing engine, never a measure of speed.
const watchWait = 30 * time.Second

// RunWatch holds a kv.Watcher to FoundationDB's watch semantics, as
// fdbstore's live stream reads use them: a watch set on one handle fires
// after a commit through another that changes its key, and the new value
// is readable once it has; it ends with its context; and outstanding
// watches are limited per handle, with a watch past the limit failing at
// once with too_many_watches and a fired or cancelled one freeing its
// place. (A write that leaves the value unchanged may or may not fire a
// watch; memkv's own tests pin that it does not, as on FoundationDB.)
func RunWatch(t *testing.T, env WatchEnv) {
	ctx := context.Background()
	key := func(name string) []byte { return []byte(env.Prefix + "watch/" + name) }
	set := func(name, v string) {
		t.Helper()
		if err := env.DB.Transact(ctx, func(tr kv.Transaction) error {
			tr.Set(key(name), []byte(v))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	watch := func(ctx context.Context, name string) <-chan struct{} {
		t.Helper()
		ch, err := env.Watcher.Watch(ctx, key(name))
		if err != nil {
			t.Fatalf("watch %s: %v", name, err)
		}
		return ch
	}
	ended := func(ch <-chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(watchWait):
			t.Fatalf("%s: the watch did not end within %v", what, watchWait)
		}
	}
	all, cancelAll := context.WithCancel(ctx)
	defer cancelAll()

	// A commit through the other handle fires it, after which a read
	// through the watching handle sees the commit.
	set("a", "1")
	a := watch(all, "a")
	set("a", "2")
	ended(a, "a commit that changed the key")
	if w, ok := env.Watcher.(kv.DB); ok {
		var got []byte
		if err := w.ReadTransact(ctx, func(tr kv.ReadTransaction) error {
			v, err := tr.Get(key("a")).Get()
			got = v
			return err
		}); err != nil {
			t.Fatal(err)
		}
		if string(got) != "2" {
			t.Fatalf("after the watch fired the watching handle read %q, want %q", got, "2")
		}
	}
	// A key that does not exist yet: its creation fires the watch.
	n := watch(all, "new")
	set("new", "")
	ended(n, "the creation of the key")

	// Cancelled through its context.
	cctx, cancel := context.WithCancel(all)
	c := watch(cctx, "c")
	cancel()
	ended(c, "a cancelled watch")

	// The limit, per handle.
	if err := env.SetMaxWatches(2); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := env.SetMaxWatches(kv.DefaultMaxWatches); err != nil {
			t.Error(err)
		}
	}()
	xctx, cancelX := context.WithCancel(all)
	x := watch(xctx, "x")
	y := watch(all, "y")
	if _, err := env.Watcher.Watch(all, key("z")); kv.ErrorCode(err) != kv.CodeTooManyWatches {
		t.Fatalf("a third watch under a limit of 2: %v, want code %d", err, kv.CodeTooManyWatches)
	}
	cancelX()
	ended(x, "a cancelled watch at the limit")
	z := watch(all, "z") // the cancelled watch's place
	if _, err := env.Watcher.Watch(all, key("w")); kv.ErrorCode(err) != kv.CodeTooManyWatches {
		t.Fatalf("a third watch after a cancel and a new watch: %v, want code %d", err, kv.CodeTooManyWatches)
	}
	set("y", "1")
	ended(y, "a commit at the limit")
	w := watch(all, "w") // the fired watch's place
	set("z", "1")
	set("w", "1")
	ended(z, "z")
	ended(w, "w")
}
