//go:build fdb

package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ckptstore/ckptstore/fdbstore"
	"github.com/ckptstore/ckptstore/fdbstore/kv"
	"github.com/ckptstore/ckptstore/fdbstore/kv/fdbkv"
)

// TestStreamsKillFDB is TestStreamsKillRedis on a real FoundationDB (the
// cluster of $FDB_CLUSTER_FILE; make fdbreal starts one): the producer
// fault run through a ckptserver built with -tags fdb, killed with
// SIGKILL and restarted (3 times, or $CKPT_STREAMS_KILLS). The run's namespace has a random
// name, and its keys are cleared when the test ends.
func TestStreamsKillFDB(t *testing.T) {
	cf := os.Getenv("FDB_CLUSTER_FILE")
	if cf == "" {
		t.Skip("FDB_CLUSTER_FILE is not set: no FoundationDB cluster to test against (make fdbreal starts one)")
	}
	bin := filepath.Join(t.TempDir(), "ckptserver")
	if out, err := exec.Command("go", "build", "-tags", "fdb", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build -tags fdb: %v\n%s", err, out)
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	ns := "streamskill-" + hex.EncodeToString(b[:])
	db, err := fdbkv.Open(cf)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		err := db.Transact(context.Background(), func(tr kv.Transaction) error {
			// The packed ("ckptstore.ns", ns): the namespace's
			// checkpoints, persistence and streams.
			tr.ClearRange(kv.PrefixRange([]byte(strings.TrimSuffix(fdbstore.NamespacePrefix(ns), "\x00"))))
			return nil
		})
		if err != nil {
			t.Errorf("clear the run's namespace: %v", err)
		}
		db.Close()
	})
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
