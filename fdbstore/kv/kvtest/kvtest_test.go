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
