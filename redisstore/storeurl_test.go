package redisstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/internal/redistest"
	"github.com/ckptstore/ckptstore/internal/testkit"
	"github.com/ckptstore/ckptstore/redisstore"
	"github.com/ckptstore/ckptstore/storeurl"
)

// TestURLRefusals: a bad Redis form fails at open, before any connection,
// with an ErrBadURL that names what is wrong.
func TestURLRefusals(t *testing.T) {
	ctx := context.Background()
	for url, want := range map[string]string{
		"redis+sentinel://127.0.0.1:1":                                 "master_name is required",
		"redis+sentinel://127.0.0.1:1,127.0.0.1:2/0?master_name=m&x=1": "unexpected option: x",
		"rediss+sentinel://127.0.0.1:1?master_name=m&addr=nope":        "addr param: nope",
		"redis+sentinel://127.0.0.1:1/zero?master_name=m":              "invalid database number",
		"redis+cluster://127.0.0.1:1/0":                                "has no database number",
		"redis+cluster://[::1]:1,[::1]:2?x=1":                          "unexpected option: x",
		"redis+cluster://127.0.0.1:1,nope":                             "addr param: nope",
		"redis+cluster://127.0.0.1:1?prefix=a&prefix=b":                "prefix is given 2 times",
		"redis://127.0.0.1:1?min_replicas=-1":                          "min_replicas",
		"redis://127.0.0.1:1?min_replicas=two":                         "min_replicas",
		"unix:///tmp/x.sock?replica_timeout=soon":                      "replica_timeout",
		"redis://127.0.0.1:1?replica_timeout=0s":                       "replica_timeout",
		"redis+bogus://127.0.0.1:1":                                    "is not a store URL",
	} {
		_, err := storeurl.Open(ctx, url, storeurl.Options{})
		if !errors.Is(err, storeurl.ErrBadURL) || !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%q) = %v, want ErrBadURL naming %q", url, err, want)
		}
	}
}

// TestURLMinReplicas: min_replicas and replica_timeout reach the store.
// On a primary with one replica, min_replicas=1 writes; min_replicas=2
// fails with ErrNotReplicated within the replica_timeout, and the write is
// on the primary, as MinReplicas documents.
func TestURLMinReplicas(t *testing.T) {
	primary := redistest.Start(t, "--repl-diskless-sync-delay", "0") // the replica syncs at once
	host, port, _ := strings.Cut(primary.Addr, ":")
	replica := redistest.Start(t, "--replicaof", host, port)
	ctx := context.Background()
	testkit.Must(t, replica.WaitLog(ctx, "MASTER <-> REPLICA sync: Finished with success"))

	one, err := storeurl.Open(ctx, "redis://"+primary.Addr+"?prefix=p&min_replicas=1", storeurl.Options{})
	testkit.Must(t, err)
	defer one.Close()
	if !strings.Contains(one.Desc, "wait for 1 replicas") {
		t.Errorf("Desc %q does not say that writes wait", one.Desc)
	}
	l, err := one.Store.AcquireWriter(ctx, "t")
	testkit.Must(t, err)
	testkit.Must(t, one.Store.Append(ctx, testkit.Checkpoint("t", "a", "", 1), "", l.Writer))

	two, err := storeurl.Open(ctx, "redis://"+primary.Addr+"?prefix=p&min_replicas=2&replica_timeout=50ms", storeurl.Options{})
	testkit.Must(t, err)
	defer two.Close()
	err = two.Store.Append(ctx, testkit.Checkpoint("t", "b", "a", 2), "a", l.Writer)
	if !errors.Is(err, redisstore.ErrNotReplicated) || !errors.Is(err, ckptstore.ErrNotReplicated) || !strings.Contains(err.Error(), "50ms") {
		t.Fatalf("Append with min_replicas=2 and one replica = %v, want ErrNotReplicated within 50ms", err)
	}
	if cp, err := one.Store.Get(ctx, "b"); err != nil || cp == nil {
		t.Errorf("the unreplicated append is not on the primary: %v, %v", cp, err)
	}
	if _, err := two.Store.AcquireWriter(ctx, "u"); !errors.Is(err, ckptstore.ErrNotReplicated) {
		t.Errorf("AcquireWriter with min_replicas=2 and one replica = %v, want ErrNotReplicated", err)
	}
}
