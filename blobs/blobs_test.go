package blobs_test

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/ckptstore/ckptstore/blobs"
	"github.com/ckptstore/ckptstore/blobs/blobstest"
)

func TestMemBucket(t *testing.T) {
	blobstest.RunBucket(t, func(t *testing.T) blobs.Bucket {
		b, err := blobs.Open(context.Background(), "mem://conformance")
		if err != nil {
			t.Fatal(err)
		}
		return b
	}, blobstest.Options{})
}

func TestFileBucket(t *testing.T) {
	blobstest.RunBucket(t, func(t *testing.T) blobs.Bucket {
		b, err := blobs.Open(context.Background(), "file://"+filepath.ToSlash(t.TempDir())+"/bucket?create=true")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { b.(*blobs.FileBucket).Close() })
		return b
	}, blobstest.Options{})
}

// s3Server serves a fresh in-memory S3 on loopback and points the AWS
// credential chain at static test credentials.
func s3Server(t *testing.T) *httptest.Server {
	t.Helper()
	t.Setenv("AWS_ACCESS_KEY_ID", "test-key")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test-secret")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	backend := s3mem.New()
	if err := backend.CreateBucket("ckpt"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend, gofakes3.WithoutVersioning()).Server())
	t.Cleanup(srv.Close)
	return srv
}

func s3URL(srv *httptest.Server) string {
	return "s3://ckpt?endpoint=" + url.QueryEscape(srv.URL) + "&region=us-east-1&use_path_style=true"
}

func TestS3Bucket(t *testing.T) {
	blobstest.RunBucket(t, func(t *testing.T) blobs.Bucket {
		srv := s3Server(t)
		b, err := blobs.Open(context.Background(), s3URL(srv))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}, blobstest.Options{})
}

// TestS3Multipart sends a body above the multipart threshold, so the upload
// goes through CreateMultipartUpload/UploadPart/Complete, and one that
// fails halfway, which must abort and leave nothing.
func TestS3Multipart(t *testing.T) {
	srv := s3Server(t)
	b0, err := blobs.Open(context.Background(), s3URL(srv))
	if err != nil {
		t.Fatal(err)
	}
	const part = 5 << 20
	b := blobs.NewS3(b0.(*blobs.S3Bucket).Client(), "ckpt", blobs.S3Options{PartSize: part, MultipartThreshold: part, Concurrency: 2})
	ctx := context.Background()
	data := make([]byte, 2*part+123)
	for i := range data {
		data[i] = byte(i % 251)
	}
	if err := b.Put(ctx, "big", onlyReader{strings.NewReader(string(data))}); err != nil {
		t.Fatalf("multipart Put: %v", err)
	}
	rc, err := b.Get(ctx, "big")
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || string(got) != string(data) {
		t.Fatalf("multipart round trip: %d bytes, %v", len(got), err)
	}
	fail := io.MultiReader(strings.NewReader(string(data[:part+1])), failAfter{})
	if err := b.Put(ctx, "broken", fail); err == nil {
		t.Fatal("multipart Put with a failing reader succeeded")
	}
	if _, err := b.Head(ctx, "broken"); !errors.Is(err, blobs.ErrNotFound) {
		t.Errorf("failed multipart Put left an object: %v", err)
	}
	ups, err := b.Client().ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String("ckpt")})
	if err != nil {
		t.Fatal(err)
	}
	if len(ups.Uploads) != 0 {
		t.Errorf("failed multipart Put left %d uploads open", len(ups.Uploads))
	}
}

type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

type failAfter struct{}

func (failAfter) Read([]byte) (int, error) { return 0, errors.New("source broke") }

func TestS3MissingBucketIsNotNotFound(t *testing.T) {
	srv := s3Server(t)
	b, err := blobs.Open(context.Background(), strings.Replace(s3URL(srv), "s3://ckpt", "s3://absent", 1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(context.Background(), "k"); err == nil || errors.Is(err, blobs.ErrNotFound) {
		t.Errorf("Get from a missing bucket = %v, want an error other than ErrNotFound", err)
	}
	var last error
	for _, err := range b.List(context.Background(), "") {
		last = err
	}
	if last == nil {
		t.Error("List of a missing bucket reported no error")
	}
}

func TestOpenRejects(t *testing.T) {
	dir := filepath.ToSlash(t.TempDir())
	for _, u := range []string{
		"", "ftp://x", "mem://x/path", "mem://?a=b", "file://host/dir", "file:relative",
		"file://" + dir + "?create=maybe", "file://" + dir + "?typo=1",
		"s3://", "s3://b/path", "s3://b?endpoint=ftp://x", "s3://b?use_path_style=yes",
		"s3://b?regoin=x", "s3://b?region=a&region=b",
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
