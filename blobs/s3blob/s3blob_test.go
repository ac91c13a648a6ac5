package s3blob_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/ckptstore/ckptstore/blobs"
	"github.com/ckptstore/ckptstore/blobs/blobstest"
	"github.com/ckptstore/ckptstore/blobs/s3blob"
	"github.com/ckptstore/ckptstore/blobs/s3blob/s3blobtest"
)

func open(t *testing.T, opts s3blobtest.Options) blobs.Bucket {
	t.Helper()
	b, err := blobs.Open(context.Background(), s3blobtest.NewServer(t, opts).URL)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestS3Bucket(t *testing.T) {
	blobstest.RunBucket(t, func(t *testing.T, now func() time.Time) blobs.Bucket {
		return open(t, s3blobtest.Options{Now: now})
	}, blobstest.Options{
		// Unversioned: DeleteOlder is HeadObject then DeleteObject.
		DeleteOlderNotAtomic: true,
	})
}

func TestS3VersionedBucket(t *testing.T) {
	blobstest.RunBucket(t, func(t *testing.T, now func() time.Time) blobs.Bucket {
		return open(t, s3blobtest.Options{Now: now, Versioned: true})
	}, blobstest.Options{
		// Paging is the same code with versioning on; TestS3Bucket pages.
		ManyKeys: 10,
	})
}

// TestVersionedDeleteOlderFreesEveryVersion: the touches of an object
// leave noncurrent versions; deleting it as old removes them all, so the
// bytes are freed and no older version becomes current.
func TestVersionedDeleteOlderFreesEveryVersion(t *testing.T) {
	c := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	now := func() time.Time { return c }
	b := s3blobtest.NewServer(t, s3blobtest.Options{Now: now, Versioned: true}).Open(t)
	ctx := context.Background()
	if err := b.Put(ctx, "k", strings.NewReader("v")); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		c = c.Add(time.Hour)
		if err := b.Touch(ctx, "k"); err != nil {
			t.Fatal(err)
		}
	}
	if v, err := b.Versioned(ctx); err != nil || !v {
		t.Fatalf("Versioned = %v, %v", v, err)
	}
	if gone, err := b.DeleteOlder(ctx, "k", c); err != nil || gone {
		t.Errorf("DeleteOlder at the last touch's time = %v, %v; want kept", gone, err)
	}
	if gone, err := b.DeleteOlder(ctx, "k", c.Add(time.Second)); err != nil || !gone {
		t.Fatalf("DeleteOlder = %v, %v; want deleted", gone, err)
	}
	if _, err := b.Head(ctx, "k"); !errors.Is(err, blobs.ErrNotFound) {
		t.Errorf("Head after DeleteOlder = %v, want ErrNotFound (no older version may come back)", err)
	}
	out, err := b.Client().ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(s3blobtest.BucketName)})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(out.Versions) + len(out.DeleteMarkers); n != 0 {
		t.Errorf("%d versions or delete markers left after DeleteOlder, want 0", n)
	}
}

// TestS3Multipart sends a body above the multipart threshold, so the upload
// goes through CreateMultipartUpload/UploadPart/Complete, and one that
// fails halfway, which must abort and leave nothing.
func TestS3Multipart(t *testing.T) {
	b0 := s3blobtest.NewServer(t, s3blobtest.Options{}).Open(t)
	const part = 5 << 20
	b := s3blob.New(b0.Client(), s3blobtest.BucketName, s3blob.Options{PartSize: part, MultipartThreshold: part, Concurrency: 2})
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
	ups, err := b.Client().ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(s3blobtest.BucketName)})
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
	srv := s3blobtest.NewServer(t, s3blobtest.Options{})
	b, err := blobs.Open(context.Background(), strings.Replace(srv.URL, "s3://ckpt", "s3://absent", 1))
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
	for _, u := range []string{
		"s3://", "s3://b/path", "s3://b?endpoint=ftp://x", "s3://b?use_path_style=yes",
		"s3://b?regoin=x", "s3://b?region=a&region=b", "s3://user@b",
	} {
		if _, err := blobs.Open(context.Background(), u); !errors.Is(err, blobs.ErrInvalidURL) {
			t.Errorf("Open(%q) = %v, want ErrInvalidURL", u, err)
		}
	}
}
