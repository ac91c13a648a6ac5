package sweep_test

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/blobs"
	"github.com/ckptstore/ckptstore/blobs/blobstest"
	"github.com/ckptstore/ckptstore/memstore"
	"github.com/ckptstore/ckptstore/sweep"
)

func TestMain(m *testing.M) {
	blobstest.PutChild() // the writer KillPutMidStream kills, when it is one
	os.Exit(m.Run())
}

// TestSweepRemovesDebrisOfAKilledPut: a put to a file bucket killed
// mid-stream leaves a part; a dry run and a sweep within StalePartAge keep
// it, a sweep after it removes it and counts it, and no blob is touched.
func TestSweepRemovesDebrisOfAKilledPut(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	var now time.Time
	clock := func() time.Time { return now }
	now = time.Now()
	b, err := blobs.OpenFile(dir, blobs.FileOptions{Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	s := memstore.New(ckptstore.Options{})
	kept := fileKey("kept")
	if err := b.Put(ctx, kept, bytes.NewReader([]byte("kept bytes"))); err != nil {
		t.Fatal(err)
	}
	keptObj, err := b.Head(ctx, kept)
	if err != nil {
		t.Fatal(err)
	}

	part := blobstest.KillPutMidStream(t, dir)
	// OlderThan keeps the unreferenced blob: only the part is at stake.
	opts := sweep.Options{OlderThan: 24 * time.Hour, Now: clock}
	_, st, err := sweep.RunStats(ctx, s, b, opts)
	if err != nil || st.Debris != 0 {
		t.Fatalf("a sweep within StalePartAge removed %d parts (%v)", st.Debris, err)
	}
	if _, err := os.Stat(part); err != nil {
		t.Fatalf("a fresh part was removed: %v", err)
	}

	now = now.Add(blobs.StalePartAge + time.Minute)
	opts.DryRun = true
	if _, st, err = sweep.RunStats(ctx, s, b, opts); err != nil || st.Debris != 0 {
		t.Fatalf("a dry run removed %d parts (%v)", st.Debris, err)
	}
	if _, err := os.Stat(part); err != nil {
		t.Fatalf("a dry run removed the part: %v", err)
	}
	opts.DryRun = false
	deleted, st, err := sweep.RunStats(ctx, s, b, opts)
	if err != nil || st.Debris != 1 || len(deleted) != 0 {
		t.Fatalf("sweep: deleted %q, %d parts, %v; want only the part", deleted, st.Debris, err)
	}
	if _, err := os.Stat(part); !os.IsNotExist(err) {
		t.Fatalf("the stale part is still there: %v", err)
	}
	if got, err := b.Head(ctx, kept); err != nil || got != keptObj {
		t.Fatalf("the stored blob changed: %+v, %v; was %+v", got, err, keptObj)
	}
}
