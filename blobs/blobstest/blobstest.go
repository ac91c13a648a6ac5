// Package blobstest is the conformance suite every blobs.Bucket passes.
//
// It checks the promises of the blobs package documentation: the key rules,
// atomic Put, ErrNotFound, idempotent Delete, List order across pages and
// under concurrent deletes, the content-addressed helpers and their
// freshening, and the optional capabilities Toucher and OlderDeleter
// (a Touch racing a DeleteOlder never both succeeds and is deleted). It assumes
// only what the Bucket interface promises, so a new bucket type is
// conformant when RunBucket passes against it.
//
// The suite has the shape of every suite of this module
// (conformance.RunStore, fdbstore's storetest, kvtest.Run): RunBucket
// takes a factory that each subtest calls once, with its own *testing.T
// and the clock it needs, for a new, empty bucket; the factory registers
// any cleanup with t.Cleanup.
package blobstest

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore/blobs"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

// Options tunes RunBucket for a bucket type. The zero value suits every
// bucket in this module.
type Options struct {
	// ModTimeSlack is how far a ModTime may lie from the wall clock around
	// the Put, and how far Head's and List's ModTime may differ (S3's Head
	// has one-second resolution, its List milliseconds); 0 means 2 s.
	ModTimeSlack time.Duration
	// ManyKeys is the number of keys of the paging tests; 0 means 1,100,
	// more than one page of every bucket (S3 pages hold 1,000 keys).
	ManyKeys int
	// NoClock says the bucket cannot take the suite's clock (its factory
	// ignores now), which skips the Toucher tests: they need one to see a
	// touch move ModTime without sleeping.
	NoClock bool
	// DeleteOlderNotAtomic says the bucket's DeleteOlder is a check and a
	// delete that a Touch can come between (s3blob on an unversioned
	// bucket), which skips the race test that would otherwise catch it.
	DeleteOlderNotAtomic bool
}

// RunBucket runs the conformance suite. newBucket returns a new, empty
// bucket for each subtest, whose ModTimes (of Put and Touch) come from now;
// now is nil when the subtest wants the bucket's own clock (as a nil
// ckptstore.Options.Now means time.Now). It registers any cleanup with
// t.Cleanup.
func RunBucket(t *testing.T, newBucket func(t *testing.T, now func() time.Time) blobs.Bucket, opts Options) {
	opts.ModTimeSlack = cmp.Or(opts.ModTimeSlack, 2*time.Second)
	opts.ManyKeys = cmp.Or(opts.ManyKeys, 1100)
	s := suite{opts: opts, newBucket: newBucket}
	t.Run("InvalidKeys", s.invalidKeys)
	t.Run("PutGetHead", s.putGetHead)
	t.Run("Missing", s.missing)
	t.Run("Overwrite", s.overwrite)
	t.Run("FailedPutStoresNothing", s.failedPut)
	t.Run("ListOrderAndPrefixes", s.listOrder)
	t.Run("ListPagesWhileDeleting", s.listWhileDeleting)
	t.Run("ListStopsEarly", s.listStopsEarly)
	t.Run("ListCancelled", s.listCancelled)
	t.Run("ConcurrentPutsAreAtomic", s.concurrentPuts)
	t.Run("ContentAddressed", s.contentAddressed)
	t.Run("ContentChangedDuringUpload", s.contentChanged)
	t.Run("Touch", s.touch)
	t.Run("DeleteOlder", s.deleteOlder)
	t.Run("TouchVersusDeleteOlder", s.touchVersusDelete)
}

type suite struct {
	opts      Options
	newBucket func(t *testing.T, now func() time.Time) blobs.Bucket
}

// bucket returns the subtest's bucket, on its own clock.
func (s suite) bucket(t *testing.T) blobs.Bucket { return s.newBucket(t, nil) }

// clockedBucket returns the subtest's bucket on a clock the subtest moves,
// or skips when the bucket cannot take one.
func (s suite) clockedBucket(t *testing.T) (blobs.Bucket, *testkit.Clock) {
	if s.opts.NoClock {
		t.Skip("Options.NoClock: this test needs the bucket on the suite's clock")
	}
	c := testkit.NewClock(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC))
	return s.newBucket(t, c.Now), c
}

func put(t *testing.T, b blobs.Bucket, key string, data []byte) {
	t.Helper()
	if err := b.Put(context.Background(), key, bytes.NewReader(data)); err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
}

func get(t *testing.T, b blobs.Bucket, key string) []byte {
	t.Helper()
	rc, err := b.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("Get(%q): read: %v", key, err)
	}
	return data
}

func list(t *testing.T, b blobs.Bucket, prefix string) []blobs.Object {
	t.Helper()
	var out []blobs.Object
	for o, err := range b.List(context.Background(), prefix) {
		if err != nil {
			t.Fatalf("List(%q): %v", prefix, err)
		}
		out = append(out, o)
	}
	return out
}

func keysOf(objs []blobs.Object) []string {
	keys := make([]string, len(objs))
	for i, o := range objs {
		keys[i] = o.Key
	}
	return keys
}

func (s suite) invalidKeys(t *testing.T) {
	b := s.bucket(t)
	ctx := context.Background()
	bad := []string{
		"", "/a", "a/", "a//b", ".", "..", "./a", "a/.", "../a", "a/../b", "a/..",
		"a\x00b", "a\nb", "a\x7fb", "\xff", strings.Repeat("k", blobs.MaxKeyLen+1),
		strings.Repeat("s", 256) + "/x",
	}
	for _, key := range bad {
		if err := b.Put(ctx, key, strings.NewReader("x")); !errors.Is(err, blobs.ErrInvalidKey) {
			t.Errorf("Put(%q) = %v, want ErrInvalidKey", key, err)
		}
		if _, err := b.Get(ctx, key); !errors.Is(err, blobs.ErrInvalidKey) {
			t.Errorf("Get(%q) = %v, want ErrInvalidKey", key, err)
		}
		if _, err := b.Head(ctx, key); !errors.Is(err, blobs.ErrInvalidKey) {
			t.Errorf("Head(%q) = %v, want ErrInvalidKey", key, err)
		}
		if err := b.Delete(ctx, key); !errors.Is(err, blobs.ErrInvalidKey) {
			t.Errorf("Delete(%q) = %v, want ErrInvalidKey", key, err)
		}
	}
	for _, prefix := range []string{"a\x00", "\xff"} {
		var got error
		for _, err := range b.List(ctx, prefix) {
			got = err
		}
		if !errors.Is(got, blobs.ErrInvalidKey) {
			t.Errorf("List(%q) error = %v, want ErrInvalidKey", prefix, got)
		}
	}
	if objs := list(t, b, ""); len(objs) != 0 {
		t.Errorf("rejected keys left objects: %v", keysOf(objs))
	}
	// The longest valid key and segment work.
	long := strings.Repeat("s", 255) + "/" + strings.Repeat("k", 255)
	put(t, b, long, []byte("ok"))
	if got := get(t, b, long); string(got) != "ok" {
		t.Errorf("Get(long key) = %q", got)
	}
}

func (s suite) checkModTime(t *testing.T, what string, got, before, after time.Time) {
	t.Helper()
	if got.Before(before.Add(-s.opts.ModTimeSlack)) || got.After(after.Add(s.opts.ModTimeSlack)) {
		t.Errorf("%s ModTime %v not within %v of the Put (%v to %v)", what, got, s.opts.ModTimeSlack, before, after)
	}
}

func (s suite) putGetHead(t *testing.T) {
	b := s.bucket(t)
	ctx := context.Background()
	big := make([]byte, 1<<20+7)
	for i := range big {
		big[i] = byte(i * 7)
	}
	cases := map[string][]byte{
		"empty":          {},
		"text/hello.txt": []byte("hello, world\n"),
		"bin/all-bytes": func() []byte {
			b := make([]byte, 256)
			for i := range b {
				b[i] = byte(i)
			}
			return b
		}(),
		"big/1MiB+7":              big,
		"unicode/日本語 ü+%20~!'()*": []byte("κείμενο"),
	}
	for key, data := range cases {
		before := time.Now()
		put(t, b, key, data)
		after := time.Now()
		if got := get(t, b, key); !bytes.Equal(got, data) {
			t.Errorf("Get(%q) = %d bytes, want the %d put", key, len(got), len(data))
		}
		o, err := b.Head(ctx, key)
		if err != nil {
			t.Fatalf("Head(%q): %v", key, err)
		}
		if o.Key != key || o.Size != int64(len(data)) {
			t.Errorf("Head(%q) = %+v, want key and size %d", key, o, len(data))
		}
		s.checkModTime(t, "Head("+key+")", o.ModTime, before, after)
	}
}

func (s suite) missing(t *testing.T) {
	b := s.bucket(t)
	ctx := context.Background()
	put(t, b, "a/b", []byte("x"))
	for _, key := range []string{"nope", "a", "a/b/c", "a/bb", "b/a"} {
		if _, err := b.Get(ctx, key); !errors.Is(err, blobs.ErrNotFound) {
			t.Errorf("Get(%q) = %v, want ErrNotFound", key, err)
		}
		if _, err := b.Head(ctx, key); !errors.Is(err, blobs.ErrNotFound) {
			t.Errorf("Head(%q) = %v, want ErrNotFound", key, err)
		}
		if err := b.Delete(ctx, key); err != nil {
			t.Errorf("Delete(missing %q) = %v, want nil", key, err)
		}
	}
	if err := b.Delete(ctx, "a/b"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if err := b.Delete(ctx, "a/b"); err != nil {
		t.Errorf("second Delete = %v, want nil", err)
	}
	if _, err := b.Head(ctx, "a/b"); !errors.Is(err, blobs.ErrNotFound) {
		t.Errorf("Head after Delete = %v, want ErrNotFound", err)
	}
}

func (s suite) overwrite(t *testing.T) {
	b := s.bucket(t)
	put(t, b, "k", []byte("first, longer content"))
	put(t, b, "k", []byte("second"))
	if got := get(t, b, "k"); string(got) != "second" {
		t.Errorf("Get after overwrite = %q", got)
	}
	if o, err := b.Head(context.Background(), "k"); err != nil || o.Size != 6 {
		t.Errorf("Head after overwrite = %+v, %v; want size 6", o, err)
	}
	if objs := list(t, b, ""); len(objs) != 1 || objs[0].Size != 6 {
		t.Errorf("List after overwrite = %+v, want one object of size 6", objs)
	}
}

// failingReader yields n bytes and then fails.
type failingReader struct{ n int }

var errReader = errors.New("reader broke")

func (f *failingReader) Read(p []byte) (int, error) {
	if f.n == 0 {
		return 0, errReader
	}
	k := min(len(p), f.n)
	for i := range p[:k] {
		p[i] = 'x'
	}
	f.n -= k
	return k, nil
}

func (s suite) failedPut(t *testing.T) {
	b := s.bucket(t)
	ctx := context.Background()
	if err := b.Put(ctx, "new", &failingReader{n: 100 << 10}); err == nil {
		t.Fatal("Put with a failing reader succeeded")
	}
	if _, err := b.Head(ctx, "new"); !errors.Is(err, blobs.ErrNotFound) {
		t.Errorf("failed Put of a new key left an object: Head = %v", err)
	}
	put(t, b, "old", []byte("keep me"))
	if err := b.Put(ctx, "old", &failingReader{n: 10}); err == nil {
		t.Fatal("Put with a failing reader succeeded")
	}
	if got := get(t, b, "old"); string(got) != "keep me" {
		t.Errorf("failed Put changed the object to %q", got)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := b.Put(cctx, "cancelled", strings.NewReader("data")); err == nil {
		t.Error("Put with a cancelled context succeeded")
	}
	if _, err := b.Head(ctx, "cancelled"); !errors.Is(err, blobs.ErrNotFound) {
		t.Errorf("cancelled Put left an object: Head = %v", err)
	}
	if objs := list(t, b, ""); !slices.Equal(keysOf(objs), []string{"old"}) {
		t.Errorf("List = %v, want [old]: failed Puts must leave nothing behind", keysOf(objs))
	}
}

// orderKeys are the keys whose byte order trips naive implementations: a
// key that is also a prefix of others, "/" (0x2f) against the smaller '-'
// and '.', and multi-byte UTF-8 against ASCII.
var orderKeys = []string{
	"a", "a/b", "a/b/c", "a/bc", "a-b", "a.b", "a0", "ab", "a/b-c", "a/b/c/d",
	"A", "Z/z", "z", "é", "日本/語", "sp ace", "p%2F", "plus+", "tilde~", "~",
	"sandbox-files/sha256/0f", "sandbox-files/sha256/f0", "sandbox-files/x",
	"sandbox-filesX/y", "sandbox-artifacts/sha256/00", "sandbox-artifacts", "other/x",
}

func (s suite) listOrder(t *testing.T) {
	b := s.bucket(t)
	ctx := context.Background()
	keys := slices.Clone(orderKeys)
	rand.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	for i, k := range keys {
		put(t, b, k, bytes.Repeat([]byte{'x'}, i))
	}
	sorted := slices.Clone(orderKeys)
	slices.Sort(sorted)
	for _, prefix := range []string{"", "a", "a/", "a/b", "a/b/", "a-", "sandbox-", "sandbox-files/",
		"sandbox-files/sha256/", "sandbox-files/sha256/0", "sandbox-artifacts/", "日", "é", "none", "a/b/c/d/e", "z"} {
		var want []string
		for _, k := range sorted {
			if strings.HasPrefix(k, prefix) {
				want = append(want, k)
			}
		}
		objs := list(t, b, prefix)
		if got := keysOf(objs); !slices.Equal(got, want) {
			t.Errorf("List(%q) =\n  %q\nwant\n  %q", prefix, got, want)
		}
		for _, o := range objs {
			h, err := b.Head(ctx, o.Key)
			if err != nil {
				t.Fatalf("Head(%q): %v", o.Key, err)
			}
			if h.Size != o.Size {
				t.Errorf("List size of %q = %d, Head says %d", o.Key, o.Size, h.Size)
			}
			if d := h.ModTime.Sub(o.ModTime).Abs(); d > s.opts.ModTimeSlack {
				t.Errorf("List ModTime of %q = %v, Head says %v", o.Key, o.ModTime, h.ModTime)
			}
		}
	}
}

func (s suite) putMany(t *testing.T, b blobs.Bucket, prefix string) []string {
	t.Helper()
	keys := make([]string, s.opts.ManyKeys)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s%x/%d", prefix, sha256.Sum256([]byte{byte(i), byte(i >> 8)}), i)
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(keys))
	work := make(chan string)
	for range 8 {
		wg.Go(func() {
			for k := range work {
				if err := b.Put(context.Background(), k, strings.NewReader(k)); err != nil {
					errs <- err
				}
			}
		})
	}
	for _, k := range keys {
		work <- k
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("Put: %v", err)
	}
	slices.Sort(keys)
	return keys
}

func (s suite) listWhileDeleting(t *testing.T) {
	b := s.bucket(t)
	ctx := context.Background()
	keys := s.putMany(t, b, "many/")
	put(t, b, "many", []byte("outside the prefix"))
	put(t, b, "manz", []byte("outside the prefix"))
	var got []string
	for o, err := range b.List(ctx, "many/") {
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		got = append(got, o.Key)
		// Deleting what was listed, as the sweep does, must not disturb the
		// listing of the rest.
		if err := b.Delete(ctx, o.Key); err != nil {
			t.Fatalf("Delete(%q): %v", o.Key, err)
		}
	}
	if !slices.Equal(got, keys) {
		t.Errorf("List while deleting yielded %d keys, want the %d put, in order", len(got), len(keys))
	}
	if rest := keysOf(list(t, b, "")); !slices.Equal(rest, []string{"many", "manz"}) {
		t.Errorf("after deleting the prefix, List = %q", rest)
	}
}

func (s suite) listStopsEarly(t *testing.T) {
	b := s.bucket(t)
	for _, k := range []string{"k1", "k2", "k3", "k4"} {
		put(t, b, k, nil)
	}
	var got []string
	for o, err := range b.List(context.Background(), "k") {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, o.Key)
		if len(got) == 2 {
			break
		}
	}
	if !slices.Equal(got, []string{"k1", "k2"}) {
		t.Errorf("first two = %q", got)
	}
	if all := keysOf(list(t, b, "k")); len(all) != 4 {
		t.Errorf("List after an early stop = %q", all)
	}
}

func (s suite) listCancelled(t *testing.T) {
	b := s.bucket(t)
	put(t, b, "k", nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var last error
	n := 0
	for _, err := range b.List(ctx, "") {
		n++
		last = err
		if n > 10 {
			break
		}
	}
	if !errors.Is(last, context.Canceled) {
		t.Errorf("List with a cancelled context ended with %v after %d items, want context.Canceled", last, n)
	}
}

func (s suite) concurrentPuts(t *testing.T) {
	b := s.bucket(t)
	ctx := context.Background()
	const size = 64 << 10
	content := func(v byte) []byte { return bytes.Repeat([]byte{v}, size+int(v)) }
	put(t, b, "race", content(0))
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 4 {
		wg.Go(func() {
			for i := range 5 {
				if err := b.Put(ctx, "race", bytes.NewReader(content(byte(1+w*5+i)))); err != nil {
					errs <- err
				}
			}
		})
	}
	for range 2 {
		wg.Go(func() {
			for range 20 {
				rc, err := b.Get(ctx, "race")
				if err != nil {
					errs <- err
					return
				}
				data, err := io.ReadAll(rc)
				rc.Close()
				if err != nil {
					errs <- err
					return
				}
				if len(data) < size || len(data) != size+int(data[0]) || bytes.Count(data, data[:1]) != len(data) {
					errs <- fmt.Errorf("concurrent Get saw a torn object of %d bytes", len(data))
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	data := get(t, b, "race")
	if len(data) == 0 || !bytes.Equal(data, content(data[0])) {
		t.Errorf("final object is not one whole Put")
	}
}

// onceReader hides every method but Read, forcing the spooling path.
type onceReader struct{ r io.Reader }

func (o onceReader) Read(p []byte) (int, error) { return o.r.Read(p) }

func (s suite) contentAddressed(t *testing.T) {
	b := s.bucket(t)
	ctx := context.Background()
	data := bytes.Repeat([]byte("file content "), 10000)
	sum := sha256.Sum256(data)
	res, err := blobs.PutFile(ctx, b, bytes.NewReader(data))
	if err != nil {
		t.Fatalf("PutFile: %v", err)
	}
	want := blobs.PutResult{Key: blobs.FileKey(sum), Size: int64(len(data)), Uploaded: true}
	if res != want {
		t.Errorf("PutFile = %+v, want %+v", res, want)
	}
	if !strings.HasPrefix(res.Key, "sandbox-files/sha256/") || !blobs.IsContentKey(res.Key) {
		t.Errorf("file key %q is not sandbox-files/sha256/<hex>", res.Key)
	}
	if got := get(t, b, res.Key); !bytes.Equal(got, data) {
		t.Error("stored content differs")
	}
	before, err := b.Head(ctx, res.Key)
	if err != nil {
		t.Fatal(err)
	}
	// Again, through a reader that cannot seek: same key, upload skipped.
	res2, err := blobs.PutFile(ctx, b, onceReader{bytes.NewReader(data)})
	if err != nil {
		t.Fatalf("PutFile again: %v", err)
	}
	if want.Uploaded = false; res2 != want {
		t.Errorf("second PutFile = %+v, want %+v", res2, want)
	}
	if after, err := b.Head(ctx, res.Key); err != nil || !after.ModTime.Equal(before.ModTime) {
		t.Errorf("skipped upload changed the object: %+v (was %+v), %v", after, before, err)
	}
	putArtifacts(t, b, data)
	putEdges(t, b)
	putFreshens(t, b, data, res.Key)
}

// putArtifacts: PutArtifact keys data under sandbox-artifacts/, apart from
// its file key, and an empty artifact under the digest of nothing.
func putArtifacts(t *testing.T, b blobs.Bucket, data []byte) {
	ctx := context.Background()
	sum := sha256.Sum256(data)
	art, err := blobs.PutArtifact(ctx, b, onceReader{bytes.NewReader(data)})
	if err != nil {
		t.Fatalf("PutArtifact: %v", err)
	}
	if art.Key != blobs.ArtifactKey(sum) || !art.Uploaded || !strings.HasPrefix(art.Key, "sandbox-artifacts/sha256/") {
		t.Errorf("PutArtifact = %+v", art)
	}
	empty, err := blobs.PutArtifact(ctx, b, strings.NewReader(""))
	if err != nil || empty.Key != blobs.ArtifactKey(sha256.Sum256(nil)) || empty.Size != 0 {
		t.Errorf("PutArtifact(empty) = %+v, %v", empty, err)
	}
}

// putEdges: a reader positioned mid-stream is hashed from where it stands,
// and an object under the key with the wrong size is replaced.
func putEdges(t *testing.T, b blobs.Bucket) {
	ctx := context.Background()
	r := bytes.NewReader([]byte("skip:payload"))
	r.Seek(5, io.SeekStart)
	mid, err := blobs.PutFile(ctx, b, r)
	if err != nil || mid.Key != blobs.FileKey(sha256.Sum256([]byte("payload"))) {
		t.Errorf("PutFile(mid-stream reader) = %+v, %v", mid, err)
	}
	if got := get(t, b, mid.Key); string(got) != "payload" {
		t.Errorf("mid-stream content = %q", got)
	}
	// An object under the key with the wrong size is replaced.
	put(t, b, blobs.FileKey(sha256.Sum256([]byte("healed"))), []byte("damaged"))
	healed, err := blobs.PutFile(ctx, b, strings.NewReader("healed"))
	if err != nil || !healed.Uploaded {
		t.Errorf("PutFile over a damaged object = %+v, %v; want an upload", healed, err)
	}
	if got := get(t, b, healed.Key); string(got) != "healed" {
		t.Errorf("damaged object not replaced: %q", got)
	}
}

// putFreshens: an existing object (data, stored under key) older than
// FreshenAfter is touched, or uploaded again by a bucket that cannot
// touch; a fresh one, or any with freshening off, is skipped.
func putFreshens(t *testing.T, b blobs.Bucket, data []byte, key string) {
	ctx := context.Background()
	u := blobs.Uploader{Bucket: b, FreshenAfter: time.Hour, Now: func() time.Time { return time.Now().Add(2 * time.Hour) }}
	ref, err := u.PutFile(ctx, bytes.NewReader(data))
	_, touches := b.(blobs.Toucher)
	if err != nil || ref.Uploaded == touches || ref.Freshened != touches {
		t.Errorf("PutFile with a stale object = %+v, %v; want it freshened (bucket is a Toucher: %v)", ref, err, touches)
	}
	if got := get(t, b, key); !bytes.Equal(got, data) {
		t.Error("freshening changed the content")
	}
	u.Now = nil
	if ref, err := u.PutFile(ctx, bytes.NewReader(data)); err != nil || ref.Uploaded || ref.Freshened {
		t.Errorf("PutFile with a fresh object = %+v, %v; want it skipped", ref, err)
	}
	u.FreshenAfter = -1
	u.Now = func() time.Time { return time.Now().Add(1000 * time.Hour) }
	if ref, err := u.PutFile(ctx, bytes.NewReader(data)); err != nil || ref.Uploaded || ref.Freshened {
		t.Errorf("PutFile with freshening off = %+v, %v; want it skipped", ref, err)
	}
}

// touchKeys are keys whose spelling a copy-onto-itself must encode right.
var touchKeys = []string{"sandbox-files/sha256/" + strings.Repeat("ab", 32), "t/plus+and space", "t/日本/%2F~'()*&=:@$"}

func (s suite) touch(t *testing.T) {
	b, c := s.clockedBucket(t)
	tb, ok := b.(blobs.Toucher)
	if !ok {
		t.Skip("bucket does not implement blobs.Toucher")
	}
	ctx := context.Background()
	for _, k := range touchKeys {
		put(t, b, k, []byte(k))
	}
	c.Advance(3 * time.Hour)
	for _, k := range touchKeys {
		if err := tb.Touch(ctx, k); err != nil {
			t.Fatalf("Touch(%q): %v", k, err)
		}
		o, err := b.Head(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		s.checkModTime(t, "Head after Touch("+k+")", o.ModTime, c.Now(), c.Now())
		if got := get(t, b, k); string(got) != k || o.Size != int64(len(k)) {
			t.Errorf("Touch(%q) changed the content to %q (size %d)", k, got, o.Size)
		}
	}
	for _, o := range list(t, b, "") {
		s.checkModTime(t, "List after Touch("+o.Key+")", o.ModTime, c.Now(), c.Now())
	}
	if err := tb.Touch(ctx, "t/missing"); !errors.Is(err, blobs.ErrNotFound) {
		t.Errorf("Touch(missing) = %v, want ErrNotFound", err)
	}
	if _, err := b.Head(ctx, "t/missing"); !errors.Is(err, blobs.ErrNotFound) {
		t.Errorf("Touch of a missing key created it: Head = %v", err)
	}
	if err := tb.Touch(ctx, "a//b"); !errors.Is(err, blobs.ErrInvalidKey) {
		t.Errorf("Touch(invalid) = %v, want ErrInvalidKey", err)
	}
}

func (s suite) deleteOlder(t *testing.T) {
	b := s.bucket(t)
	od, ok := b.(blobs.OlderDeleter)
	if !ok {
		t.Skip("bucket does not implement blobs.OlderDeleter")
	}
	ctx := context.Background()
	put(t, b, "old", []byte("x"))
	put(t, b, "keep", []byte("y"))
	o, err := b.Head(ctx, "keep")
	if err != nil {
		t.Fatal(err)
	}
	// Strictly before: an object exactly at the bound stays.
	if gone, err := od.DeleteOlder(ctx, "keep", o.ModTime); err != nil || gone {
		t.Errorf("DeleteOlder(keep, its own ModTime) = %v, %v; want kept", gone, err)
	}
	if gone, err := od.DeleteOlder(ctx, "keep", o.ModTime.Add(-time.Hour)); err != nil || gone {
		t.Errorf("DeleteOlder(keep, an hour before it) = %v, %v; want kept", gone, err)
	}
	if got := get(t, b, "keep"); string(got) != "y" {
		t.Errorf("a kept object reads %q", got)
	}
	future := time.Now().Add(time.Hour)
	if gone, err := od.DeleteOlder(ctx, "old", future); err != nil || !gone {
		t.Errorf("DeleteOlder(old) = %v, %v; want deleted", gone, err)
	}
	if _, err := b.Head(ctx, "old"); !errors.Is(err, blobs.ErrNotFound) {
		t.Errorf("Head after DeleteOlder = %v, want ErrNotFound", err)
	}
	if gone, err := od.DeleteOlder(ctx, "old", future); err != nil || gone {
		t.Errorf("DeleteOlder(missing) = %v, %v; want false, nil", gone, err)
	}
	if _, err := od.DeleteOlder(ctx, "../x", future); !errors.Is(err, blobs.ErrInvalidKey) {
		t.Errorf("DeleteOlder(invalid) = %v, want ErrInvalidKey", err)
	}
	if keys := keysOf(list(t, b, "")); !slices.Equal(keys, []string{"keep"}) {
		t.Errorf("after DeleteOlder the bucket lists %q, want [keep]", keys)
	}
}

// touchVersusDelete races Touch against DeleteOlder on many old keys: for
// every key, either the touch came first and the object survives with a
// fresh ModTime, or the delete came first and the touch reports
// ErrNotFound. Never both a successful touch and a deletion: that is the
// lost freshen that would let a sweep delete a blob a capture reuses.
func (s suite) touchVersusDelete(t *testing.T) {
	b, c := s.clockedBucket(t)
	tb, ok1 := b.(blobs.Toucher)
	od, ok2 := b.(blobs.OlderDeleter)
	if !ok1 || !ok2 {
		t.Skip("bucket is not both a Toucher and an OlderDeleter")
	}
	if s.opts.DeleteOlderNotAtomic {
		t.Skip("Options.DeleteOlderNotAtomic: this bucket's DeleteOlder is not one step")
	}
	ctx := context.Background()
	const n = 200
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("race/%03d", i)
		put(t, b, keys[i], []byte{byte(i)})
	}
	c.Advance(time.Hour)
	cutoff := c.Now().Add(-time.Minute) // every object is older than this
	touched := make([]error, n)
	deleted := make([]bool, n)
	var wg sync.WaitGroup
	wg.Go(func() {
		for i, k := range keys {
			touched[i] = tb.Touch(ctx, k)
		}
	})
	wg.Go(func() {
		// In reverse, so that the two meet in the middle whatever their
		// relative speed, and each wins on some keys.
		for i, k := range slices.Backward(keys) {
			gone, err := od.DeleteOlder(ctx, k, cutoff)
			if err != nil {
				t.Errorf("DeleteOlder(%q): %v", k, err)
			}
			deleted[i] = gone
		}
	})
	wg.Wait()
	lost, gone := 0, 0
	for i, k := range keys {
		_, herr := b.Head(ctx, k)
		switch {
		case touched[i] != nil && !errors.Is(touched[i], blobs.ErrNotFound):
			t.Errorf("Touch(%q): %v", k, touched[i])
		case touched[i] == nil && errors.Is(herr, blobs.ErrNotFound):
			lost++ // the touch succeeded, yet the old object was deleted
		case herr != nil && !errors.Is(herr, blobs.ErrNotFound):
			t.Errorf("Head(%q): %v", k, herr)
		}
		if deleted[i] {
			gone++
		}
	}
	t.Logf("%d of %d keys deleted before their touch", gone, n)
	if lost > 0 {
		t.Errorf("%d of %d keys were touched and then deleted as old", lost, n)
	}
}

// mutatingReader is a ReadSeeker whose content changes after its first
// full read, like a file written to while it is captured.
type mutatingReader struct {
	data  []byte
	off   int64
	reads int
}

func (m *mutatingReader) Read(p []byte) (int, error) {
	if m.off >= int64(len(m.data)) {
		if m.reads++; m.reads == 1 {
			m.data[len(m.data)-1] ^= 0xff // changed between the passes
		}
		return 0, io.EOF
	}
	n := copy(p, m.data[m.off:])
	m.off += int64(n)
	return n, nil
}

func (m *mutatingReader) Seek(off int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
		m.off = off
	case io.SeekCurrent:
		m.off += off
	default:
		return 0, errors.New("unsupported whence")
	}
	return m.off, nil
}

func (s suite) contentChanged(t *testing.T) {
	b := s.bucket(t)
	ctx := context.Background()
	for _, size := range []int{10, 300 << 10} {
		m := &mutatingReader{data: bytes.Repeat([]byte{'a'}, size)}
		_, err := blobs.PutFile(ctx, b, m)
		if !errors.Is(err, blobs.ErrContentChanged) {
			t.Errorf("PutFile of content that changed (%d bytes) = %v, want ErrContentChanged", size, err)
		}
	}
	if objs := list(t, b, ""); len(objs) != 0 {
		t.Errorf("changed content was stored: %q", keysOf(objs))
	}
}
