package redisstore

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/internal/redistest"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

// With MinReplicas, a write returns only once a replica has it; without
// enough replicas it fails with ErrNotReplicated (the primary has it).
func TestMinReplicasWaitsForReplica(t *testing.T) {
	ctx := context.Background()
	primary := redistest.Start(t, "--repl-diskless-sync-delay", "0")
	port := primary.Addr[len("127.0.0.1:"):]
	replica := redistest.Start(t, "--replicaof", "127.0.0.1", port)
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := replica.WaitLog(wctx, "MASTER <-> REPLICA sync: Finished with success"); err != nil {
		t.Fatalf("%v\n%s", err, replica.Log())
	}
	pc := primary.Client(t, nil)
	rc := replica.Client(t, nil)
	s := newStore(t, pc, Options{MinReplicas: 1, ReplicaTimeout: 5 * time.Second})
	onReplica := newStore(t, rc, Options{Prefix: s.opts.Prefix})

	w := acquire(t, s, "t")
	head := ""
	for i := range 20 { // the first one loads the script inside the pipeline
		id := "c" + strconv.Itoa(i)
		must(t, s.p().Append(ctx, testkit.Checkpoint("t", id, head, float64(i), i), head, w))
		head = id
		// WAIT returned: the replica has applied the write.
		got, err := onReplica.p().Get(ctx, id)
		must(t, err)
		if got == nil {
			t.Fatalf("%s is not on the replica after a write that waited for it", id)
		}
	}

	two := newStore(t, pc, Options{Prefix: s.opts.Prefix, MinReplicas: 2, ReplicaTimeout: 50 * time.Millisecond})
	err := two.p().Append(ctx, testkit.Checkpoint("t", "x", head, 99), head, w)
	if !errors.Is(err, ErrNotReplicated) || ckptstore.Code(err) != "" {
		t.Fatalf("Append with MinReplicas 2 and one replica = %v, want ErrNotReplicated", err)
	}
	if h, err := s.p().GetHead(ctx, "t"); err != nil || h != "x" {
		t.Fatalf("head %q, %v: the primary should have the write", h, err)
	}
}

// miniredis answers WAIT with 0: every write with MinReplicas fails with
// ErrNotReplicated after it happened.
func TestMinReplicasWithoutReplicas(t *testing.T) {
	ctx := context.Background()
	c := miniClient(t)
	s := newStore(t, c, Options{MinReplicas: 1})
	w := acquire(t, s, "t")
	if err := s.p().Append(ctx, testkit.Checkpoint("t", "a", "", 1), "", w); !errors.Is(err, ErrNotReplicated) {
		t.Fatalf("Append = %v, want ErrNotReplicated", err)
	}
	if _, err := s.p().DeleteCheckpoints(ctx, "t", 1, w); !errors.Is(err, ErrNotReplicated) {
		t.Fatalf("DeleteCheckpoints = %v, want ErrNotReplicated", err)
	}
	// A contract error is reported as such, replicas or not.
	if err := s.p().Append(ctx, testkit.Checkpoint("t", "b", "", 1), "", w); !errors.Is(err, ckptstore.ErrConflict) {
		t.Fatalf("Append with a stale head = %v, want ErrConflict", err)
	}
}
