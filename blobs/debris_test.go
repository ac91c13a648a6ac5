package blobs_test

import (
	"bytes"
	"context"
	"io"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore/blobs"
	"github.com/ckptstore/ckptstore/blobs/blobstest"
)

func TestMain(m *testing.M) {
	blobstest.PutChild() // the writer KillPutMidStream kills, when it is one
	os.Exit(m.Run())
}

// later is a clock StalePartAge and a minute ahead of the real one: a
// part last written now is stale by it.
func later() time.Time { return time.Now().Add(blobs.StalePartAge + time.Minute) }

// TestFileDebrisOfAKilledPut: a put killed mid-stream leaves its part; a
// bucket opened within StalePartAge keeps it (it might be a live upload
// of another process), one opened later removes it, and the objects
// stored before are untouched.
func TestFileDebrisOfAKilledPut(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	b, err := blobs.OpenFile(dir, blobs.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	done := bytes.Repeat([]byte("done"), 1000)
	const doneKey = blobs.FilesPrefix + "sha256/done"
	if err := b.Put(ctx, doneKey, bytes.NewReader(done)); err != nil {
		t.Fatal(err)
	}
	doneObj, err := b.Head(ctx, doneKey)
	if err != nil {
		t.Fatal(err)
	}
	b.Close()

	part := blobstest.KillPutMidStream(t, dir)

	b, err = blobs.OpenFile(dir, blobs.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(part); err != nil {
		t.Fatalf("a fresh part was removed at open: %v", err)
	}
	b.Close()

	b, err = blobs.OpenFile(dir, blobs.FileOptions{Now: later})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := os.Stat(part); !os.IsNotExist(err) {
		t.Fatalf("the stale part of the killed put is still there: %v", err)
	}
	got, err := b.Head(ctx, doneKey)
	if err != nil || got != doneObj {
		t.Fatalf("the stored object changed: %+v, %v; was %+v", got, err, doneObj)
	}
	rc, err := b.Get(ctx, doneKey)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(rc)
	rc.Close()
	if !bytes.Equal(body, done) {
		t.Fatal("the stored object's bytes changed")
	}
	if _, err := b.Head(ctx, blobs.FilesPrefix+"sha256/killed"); err != blobs.ErrNotFound {
		t.Fatalf("the killed put published its object: %v", err)
	}
	var keys []string
	for o, err := range b.List(ctx, "") {
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, o.Key)
	}
	if len(keys) != 1 || keys[0] != doneKey {
		t.Fatalf("the bucket lists %q, want only %q", keys, doneKey)
	}
	if n, err := b.RemoveDebris(ctx); n != 0 || err != nil {
		t.Fatalf("a second removal removed %d (%v), want 0", n, err)
	}
}

// TestFileDebrisSparesLiveUploads: a put in flight whose part is older
// than StalePartAge by the bucket's clock keeps it, because it holds the
// part's lock, and completes; files of tmp/ that are not parts stay.
func TestFileDebrisSparesLiveUploads(t *testing.T) {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		t.Skip("no flock here: a part's age alone decides, so an old live part is debris by design")
	}
	dir := t.TempDir()
	ctx := context.Background()
	b, err := blobs.OpenFile(dir, blobs.FileOptions{Now: later})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	other := dir + "/tmp/not-a-part"
	if err := os.WriteFile(other, []byte("x"), 0o666); err != nil {
		t.Fatal(err)
	}
	pr, pw := io.Pipe()
	putErr := make(chan error, 1)
	const key = blobs.FilesPrefix + "sha256/live"
	go func() { putErr <- b.Put(ctx, key, pr) }()
	if _, err := pw.Write([]byte("first half ")); err != nil { // returns once Put has read it
		t.Fatal(err)
	}
	// A second bucket on the same directory: another process's sweep, as
	// far as the locks go (flock locks belong to open files).
	other2, err := blobs.OpenFile(dir, blobs.FileOptions{Now: later})
	if err != nil {
		t.Fatal(err)
	}
	defer other2.Close()
	if n, err := other2.RemoveDebris(ctx); n != 0 || err != nil {
		t.Fatalf("removed %d parts (%v) while their put is live", n, err)
	}
	if _, err := pw.Write([]byte("second half")); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	if err := <-putErr; err != nil {
		t.Fatalf("the live put failed: %v", err)
	}
	rc, err := b.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(rc)
	rc.Close()
	if string(body) != "first half second half" {
		t.Fatalf("the live put stored %q", body)
	}
	if _, err := os.Stat(other); err != nil {
		t.Fatalf("a file that is not a part was removed: %v", err)
	}
}
