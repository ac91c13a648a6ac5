package blobs_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"github.com/ckptstore/ckptstore/blobs"
	"github.com/ckptstore/ckptstore/blobs/blobstest"
)

func TestMemBucket(t *testing.T) {
	blobstest.RunBucket(t, func(t *testing.T, now func() time.Time) blobs.Bucket {
		if now != nil {
			return blobs.NewMem(blobs.MemOptions{Now: now})
		}
		b, err := blobs.Open(context.Background(), "mem://conformance")
		if err != nil {
			t.Fatal(err)
		}
		return b
	}, blobstest.Options{})
}

func openFile(t *testing.T, dir string, opts blobs.FileOptions) *blobs.FileBucket {
	t.Helper()
	b, err := blobs.OpenFile(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

func TestFileBucket(t *testing.T) {
	blobstest.RunBucket(t, func(t *testing.T, now func() time.Time) blobs.Bucket {
		if now != nil {
			return openFile(t, t.TempDir(), blobs.FileOptions{Now: now, NoSync: true})
		}
		b, err := blobs.Open(context.Background(), "file://"+filepath.ToSlash(t.TempDir())+"/bucket?create=true")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.(*blobs.FileBucket).Close() })
		return b
	}, blobstest.Options{})
}

func TestOpenRejects(t *testing.T) {
	dir := filepath.ToSlash(t.TempDir())
	for _, u := range []string{
		"", "ftp://x", "mem://x/path", "mem://?a=b", "file://host/dir", "file:relative",
		"file://" + dir + "?create=maybe", "file://" + dir + "?typo=1",
		"s3://bucket", // s3blob is not imported by this test binary
	} {
		if _, err := blobs.Open(context.Background(), u); !errors.Is(err, blobs.ErrInvalidURL) {
			t.Errorf("Open(%q) = %v, want ErrInvalidURL", u, err)
		}
	}
	if _, err := blobs.Open(context.Background(), "file://"+dir+"/missing"); err == nil {
		t.Error("Open of a missing directory without create=true succeeded")
	}
}

func TestMemBucketsAreNotShared(t *testing.T) {
	ctx := context.Background()
	a, _ := blobs.Open(ctx, "mem://same")
	b, _ := blobs.Open(ctx, "mem://same")
	if err := a.Put(ctx, "k", strings.NewReader("v")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Head(ctx, "k"); !errors.Is(err, blobs.ErrNotFound) {
		t.Errorf("a second Open of mem://same sees the first bucket's object: %v", err)
	}
}

func TestFileBucketLayout(t *testing.T) {
	dir := t.TempDir()
	b, err := blobs.OpenFile(dir, blobs.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ctx := context.Background()
	key := "sandbox-files/sha256/3fa9" + strings.Repeat("0", 60)
	if err := b.Put(ctx, key, strings.NewReader("x")); err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(dir, "d", "sandbox-files", "d", "sha256", "o", "3366", "3fa9"+strings.Repeat("0", 60))
	if _, err := os.Stat(want); err != nil {
		t.Errorf("object not at %s: %v", want, err)
	}
	tmp, err := os.ReadDir(filepath.Join(dir, "tmp"))
	if err != nil || len(tmp) != 0 {
		t.Errorf("tmp/ holds %d entries after Put (%v), want none", len(tmp), err)
	}
	// Reopening works; a non-empty foreign directory is refused.
	b2, err := blobs.OpenFile(dir, blobs.FileOptions{})
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	b2.Close()
	foreign := t.TempDir()
	os.WriteFile(filepath.Join(foreign, "notes.txt"), []byte("mine"), 0o644)
	if _, err := blobs.OpenFile(foreign, blobs.FileOptions{}); !errors.Is(err, blobs.ErrNotBucket) {
		t.Errorf("OpenFile(foreign dir) = %v, want ErrNotBucket", err)
	}
}

// TestFileBucketStaysInside plants a symlink to a directory outside the
// bucket where a key directory would be: every operation through it must
// fail rather than touch the outside.
func TestFileBucketStaysInside(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	secret := filepath.Join(outside, "o", "7365", "secret")
	os.MkdirAll(filepath.Dir(secret), 0o755)
	os.WriteFile(secret, []byte("outside"), 0o644)
	b, err := blobs.OpenFile(dir, blobs.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	os.MkdirAll(filepath.Join(dir, "d"), 0o755)
	if err := os.Symlink(outside, filepath.Join(dir, "d", "escape")); err != nil {
		t.Skip("symlinks unsupported here: " + err.Error())
	}
	ctx := context.Background()
	if _, err := b.Get(ctx, "escape/secret"); err == nil {
		t.Error("Get through a symlink out of the bucket succeeded")
	}
	if err := b.Delete(ctx, "escape/secret"); err == nil {
		if _, serr := os.Stat(secret); serr != nil {
			t.Error("Delete through a symlink removed a file outside the bucket")
		}
	}
	if err := b.Put(ctx, "escape/new", strings.NewReader("x")); err == nil {
		t.Error("Put through a symlink out of the bucket succeeded")
	}
	if _, err := os.Stat(secret); err != nil {
		t.Errorf("file outside the bucket was touched: %v", err)
	}
	if ents, _ := os.ReadDir(filepath.Join(outside, "o")); len(ents) != 1 {
		t.Errorf("Put wrote outside the bucket: %d entries", len(ents))
	}
}

// TestContentHelpersStream checks that a non-seekable reader is hashed
// through a temporary file in TempDir that is removed afterwards.
func TestContentHelpersStream(t *testing.T) {
	tmp := t.TempDir()
	var reads atomic.Int64
	r := countingReader{strings.NewReader(strings.Repeat("z", 1<<20)), &reads}
	u := blobs.Uploader{Bucket: blobs.NewMem(blobs.MemOptions{}), TempDir: tmp}
	res, err := u.PutFile(context.Background(), r)
	if err != nil || !res.Uploaded || res.Size != 1<<20 {
		t.Fatalf("PutFile = %+v, %v", res, err)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("spool files left behind: %d", len(ents))
	}
	if reads.Load() != 1<<20 {
		t.Errorf("the source was read %d bytes, want exactly once through", reads.Load())
	}
}

type countingReader struct {
	r *strings.Reader
	n *atomic.Int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func TestIsContentKey(t *testing.T) {
	h := strings.Repeat("ab", 32)
	good := []string{"sandbox-files/sha256/" + h, "sandbox-artifacts/sha256/" + h}
	bad := []string{"sandbox-files/sha256/" + strings.ToUpper(h), "sandbox-files/sha256/" + h[:63],
		"sandbox-files/sha1/" + h, "other/sha256/" + h, "sandbox-files/sha256/" + h + "0"}
	for _, k := range good {
		if !blobs.IsContentKey(k) {
			t.Errorf("IsContentKey(%q) = false", k)
		}
	}
	for _, k := range bad {
		if blobs.IsContentKey(k) {
			t.Errorf("IsContentKey(%q) = true", k)
		}
	}
	if !slices.IsSorted([]string{blobs.ArtifactsPrefix, blobs.FilesPrefix}) {
		t.Error("the sweep relies on sandbox-artifacts/ sorting before sandbox-files/")
	}
}

// TestOpenNamesTheDriverToImport: without the s3blob import, an s3 URL
// fails with ErrInvalidURL and says which package registers the scheme.
func TestOpenNamesTheDriverToImport(t *testing.T) {
	_, err := blobs.Open(context.Background(), "s3://bucket?region=us-east-1")
	if !errors.Is(err, blobs.ErrInvalidURL) || !strings.Contains(err.Error(), "blobs/s3blob") {
		t.Errorf("Open(s3://…) without the driver = %v, want ErrInvalidURL naming blobs/s3blob", err)
	}
}

func TestRegister(t *testing.T) {
	var got *url.URL
	blobs.Register("testscheme", func(_ context.Context, u *url.URL) (blobs.Bucket, error) {
		got = u
		return blobs.NewMem(blobs.MemOptions{}), nil
	})
	if b, err := blobs.Open(context.Background(), "testscheme://x?y=1"); err != nil || b == nil || got == nil || got.Host != "x" {
		t.Errorf("Open of a registered scheme = %v, %v; opener saw %v", b, err, got)
	}
	for _, scheme := range []string{"testscheme", "mem", "file", ""} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%q) did not panic", scheme)
				}
			}()
			blobs.Register(scheme, func(context.Context, *url.URL) (blobs.Bucket, error) { return nil, nil })
		}()
	}
}

// vanishingBucket's Touch reports ErrNotFound, as when a sweep deletes the
// object between the uploader's Head and its Touch.
type vanishingBucket struct{ *blobs.MemBucket }

func (v vanishingBucket) Touch(ctx context.Context, key string) error {
	if err := v.Delete(ctx, key); err != nil {
		return err
	}
	return blobs.ErrNotFound
}

// plainBucket hides the capabilities of the bucket it wraps.
type plainBucket struct{ blobs.Bucket }

func TestFreshenFallsBackToUpload(t *testing.T) {
	ctx := context.Background()
	c := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	mem := blobs.NewMem(blobs.MemOptions{Now: func() time.Time { return c }})
	res, err := blobs.PutFile(ctx, mem, strings.NewReader("content"))
	if err != nil || !res.Uploaded {
		t.Fatalf("PutFile = %+v, %v", res, err)
	}
	later := func() time.Time { return c.Add(2 * blobs.DefaultFreshenAfter) }
	// Deleted between Head and Touch: the content is uploaded again.
	u := blobs.Uploader{Bucket: vanishingBucket{mem}, Now: later}
	if res, err := u.PutFile(ctx, strings.NewReader("content")); err != nil || !res.Uploaded || res.Freshened {
		t.Errorf("PutFile when the object vanishes before its Touch = %+v, %v; want an upload", res, err)
	}
	if _, err := mem.Head(ctx, res.Key); err != nil {
		t.Errorf("object missing after the fallback upload: %v", err)
	}
	// A bucket without Touch freshens by uploading, with a new ModTime.
	c = c.Add(time.Minute)
	u = blobs.Uploader{Bucket: plainBucket{mem}, Now: func() time.Time { return c.Add(2 * blobs.DefaultFreshenAfter) }}
	if res, err := u.PutFile(ctx, strings.NewReader("content")); err != nil || !res.Uploaded {
		t.Errorf("PutFile on a bucket without Touch = %+v, %v; want an upload", res, err)
	}
	if o, _ := mem.Head(ctx, res.Key); !o.ModTime.Equal(c) {
		t.Errorf("ModTime after the re-upload = %v, want %v", o.ModTime, c)
	}
}

// twoHandles is one file bucket directory opened twice, as by two
// processes: Touch goes through one handle, everything else through the
// other, so the suite's race of Touch against DeleteOlder checks that the
// lock holds across open files, not only within one FileBucket.
type twoHandles struct {
	*blobs.FileBucket
	toucher *blobs.FileBucket
}

func (h twoHandles) Touch(ctx context.Context, key string) error { return h.toucher.Touch(ctx, key) }

func TestFileBucketTwoHandles(t *testing.T) {
	blobstest.RunBucket(t, func(t *testing.T, now func() time.Time) blobs.Bucket {
		dir := t.TempDir()
		o := blobs.FileOptions{Now: now, NoSync: now != nil} // the clocked tests need no fsync
		return twoHandles{openFile(t, dir, o), openFile(t, dir, o)}
	}, blobstest.Options{ManyKeys: 10})
}

// TestMemBucketPieceEdges round-trips objects whose sizes fall at and
// around the edges of the pieces a memory bucket holds its bytes in, and
// checks the allocation a large Put costs: its size and one piece, not the
// twice or thrice that growing one slice costs.
func TestMemBucketPieceEdges(t *testing.T) {
	ctx := context.Background()
	b := blobs.NewMem(blobs.MemOptions{})
	for _, n := range []int{0, 1, 4<<10 - 1, 4 << 10, 4<<10 + 1, 12 << 10, 1<<20 - 1, 1 << 20, 3<<20 + 7} {
		want := make([]byte, n)
		for i := range want {
			want[i] = byte(i*7 + i>>9)
		}
		key := "k" + strconv.Itoa(n)
		if err := b.Put(ctx, key, iotest.OneByteReader(bytes.NewReader(want))); err != nil {
			t.Fatal(err)
		}
		rc, err := b.Get(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(rc)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("size %d: read %d bytes back (err %v), not the bytes put", n, len(got), err)
		}
		if o, err := b.Head(ctx, key); err != nil || o.Size != int64(n) {
			t.Fatalf("size %d: Head says %d (err %v)", n, o.Size, err)
		}
	}
	const size = 64 << 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if err := b.Put(ctx, "large", io.LimitReader(zeros{}, size)); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > size+size/8 {
		t.Errorf("a Put of %d bytes allocated %d bytes; want at most its size and an eighth", size, got)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }
