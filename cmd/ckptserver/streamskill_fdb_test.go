//go:build fdb

package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckptstore/ckptstore/fdbstore"
	"github.com/ckptstore/ckptstore/fdbstore/kv"
	"github.com/ckptstore/ckptstore/fdbstore/kv/fdbkv"
	"github.com/ckptstore/ckptstore/internal/fdbtest"
)

// TestStreamsKillFDB is TestStreamsKillRedis on a real FoundationDB (the
// cluster of $FDB_CLUSTER_FILE; make fdbreal starts one): the producer
// fault run through a ckptserver built with -tags fdb, killed with
// SIGKILL and restarted (3 times, or $CKPT_STREAMS_KILLS). The run's namespace has a random
// name, and its keys are cleared when the test ends.
func TestStreamsKillFDB(t *testing.T) {
	cf := fdbtest.ClusterFile(t)
	bin := filepath.Join(t.TempDir(), "ckptserver")
	if out, err := exec.Command("go", "build", "-tags", "fdb", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build -tags fdb: %v\n%s", err, out)
	}
	ns := "streamskill-" + fdbtest.RandomHex()
	db, err := fdbkv.Open(cf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close) // after the clear below: cleanups run last first
	// The packed ("ckptstore.ns", ns): the namespace's checkpoints,
	// persistence and streams.
	fdbtest.ClearAtEnd(t, db, kv.PrefixRange([]byte(strings.TrimSuffix(fdbstore.NamespacePrefix(ns), "\x00"))), "the run's namespace")
	srv := startKillable(t, bin, "--dev", "--store", "fdb:"+cf)
	faults := make([]func(), serverKills(t))
	for i := range faults {
		faults[i] = func() {
			srv.kill()
			srv.start(t)
		}
	}
	rep := killRun(t, srv, ns, "fdb", 300, faults)
	t.Logf("kills: %d of ckptserver, on FoundationDB; %v", len(faults), rep)
	if rep.Failures["cut"] == 0 {
		t.Errorf("no append was cut by a kill: the kills did not land mid-append")
	}
}
