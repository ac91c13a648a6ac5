package kvtest_test

import (
	"testing"

	"github.com/ckptstore/ckptstore/fdbstore/kv/kvtest"
	"github.com/ckptstore/ckptstore/fdbstore/kv/memkv"
)

// TestMemKV holds memkv to the suite that fdbkv runs against a real
// cluster (build tag fdb).
func TestMemKV(t *testing.T) {
	kvtest.Run(t, func(t *testing.T) kvtest.Env { return kvtest.Env{DB: memkv.New(), Prefix: "kvtest/"} })
}

// TestMemKVWatch holds memkv's watches to the suite fdbkv runs against a
// real cluster, on two handles of one cluster.
func TestMemKVWatch(t *testing.T) {
	db := memkv.New()
	kvtest.RunWatch(t, kvtest.WatchEnv{
		DB: db, Watcher: db, Prefix: "kvtest/",
		SetMaxWatches: func(n int) error { db.SetMaxWatches(n); return nil },
	})
}
