package fdbstore_test

import (
	"github.com/ckptstore/ckptstore/fdbstore"
	"sync"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore/fdbstore/kv/memkv"
	"github.com/ckptstore/ckptstore/memstore"
	pdriver "github.com/ckptstore/ckptstore/persist/driver"
	"pgregory.net/rapid"
)

// TestLocksWithFaults: random lock steps (acquire, renew, release by three
// tokens on two keys, with the store's clock moving) give, through 20 %
// not_committed and 10 % commit_unknown_result, exactly the results of the
// reference driver: a retried step whose first attempt committed neither
// grants twice, bumps the fence twice, nor reports a release as a stale
// one. The conformance suite's lock cases run fault-free (their virtual
// times are exact), so this is where lock steps meet faults.
func TestLocksWithFaults(t *testing.T) {
	var seed int64
	var mu sync.Mutex
	var faultsSeen int64
	rapid.Check(t, func(t *rapid.T) {
		mu.Lock()
		seed++
		s := seed
		mu.Unlock()
		var clockMu sync.Mutex
		now := time.UnixMilli(1_700_000_000_000)
		clock := func() time.Time { clockMu.Lock(); defer clockMu.Unlock(); return now }
		db, err := memkv.NewWithOptions(memkv.Options{Faults: faults(s), BackoffBase: time.Microsecond, BackoffMax: 10 * time.Microsecond})
		if err != nil {
			t.Fatal(err)
		}
		fd, err := fdbstore.NewPersistence(db, fdbstore.PersistenceOptions{Now: clock})
		if err != nil {
			t.Fatal(err)
		}
		md := memstore.NewPersistence(memstore.PersistenceOptions{Now: clock})
		token := rapid.SampledFrom([]string{"a", "b", "c"})
		key := rapid.SampledFrom([]string{"k1", "k2"})
		lease := rapid.SampledFrom([]time.Duration{time.Second, 5 * time.Second})
		for i := range rapid.IntRange(1, 40).Draw(t, "steps") {
			var got, want pdriver.LockState
			var gerr, werr error
			switch op := rapid.IntRange(0, 3).Draw(t, "op"); op {
			case 0:
				req := pdriver.LockRequest{Key: key.Draw(t, "key"), Token: token.Draw(t, "token"), Lease: lease.Draw(t, "lease")}
				got, gerr = fd.AcquireLock(ctx, req)
				want, werr = md.AcquireLock(ctx, req)
			case 1:
				k, tok, l := key.Draw(t, "key"), token.Draw(t, "token"), lease.Draw(t, "lease")
				got, gerr = fd.RenewLock(ctx, k, tok, l)
				want, werr = md.RenewLock(ctx, k, tok, l)
			case 2:
				k, tok := key.Draw(t, "key"), token.Draw(t, "token")
				got, gerr = fd.ReleaseLock(ctx, k, tok)
				want, werr = md.ReleaseLock(ctx, k, tok)
			case 3:
				d := rapid.SampledFrom([]time.Duration{500 * time.Millisecond, 2 * time.Second, 6 * time.Second}).Draw(t, "advance")
				clockMu.Lock()
				now = now.Add(d)
				clockMu.Unlock()
				continue
			}
			if (gerr == nil) != (werr == nil) || got.Held != want.Held || got.Fence != want.Fence || got.Ahead != want.Ahead ||
				!got.ExpiresAt.Equal(want.ExpiresAt) || !got.Now.Equal(want.Now) {
				t.Fatalf("step %d: fdbstore %+v, %v; memstore %+v, %v", i, got, gerr, want, werr)
			}
		}
		mu.Lock()
		faultsSeen += db.Stats().InjectedFaults
		mu.Unlock()
	})
	if faultsSeen == 0 {
		t.Fatal("no fault was injected: the test proved nothing")
	}
	t.Logf("%d injected faults", faultsSeen)
}
