// Package s3blobtest serves an in-memory S3 (gofakes3) over HTTP on
// loopback for tests of code that uses s3blob buckets, with an optional
// controlled clock and optional versioning.
package s3blobtest

import (
	"context"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"

	"github.com/ckptstore/ckptstore/blobs/s3blob"
)

// BucketName is the bucket every Server creates.
const BucketName = "ckpt"

// Options configures NewServer. The zero value serves an unversioned
// bucket on the real clock.
type Options struct {
	// Now, when set, is the server's clock: it stamps LastModified. The
	// request-signature time check is then turned off, since the SDK signs
	// with the real time.
	Now func() time.Time
	// Versioned enables versioning on the bucket, which makes
	// s3blob.Bucket.DeleteOlder one step against concurrent touches.
	Versioned bool
}

// Server is a running fake S3.
type Server struct {
	// URL opens the server's bucket through blobs.Open (with s3blob imported).
	URL string
	srv *httptest.Server
}

// timeSource adapts a clock function to gofakes3.TimeSource.
type timeSource func() time.Time

func (f timeSource) Now() time.Time                  { return f() }
func (f timeSource) Since(t time.Time) time.Duration { return f().Sub(t) }

// NewServer starts a fake S3 holding one empty bucket, BucketName, and
// points the AWS credential chain at static test credentials (through
// t.Setenv, so tests using it cannot run in parallel). It stops when the
// test ends.
func NewServer(t testing.TB, opts Options) *Server {
	t.Helper()
	setEnv(t)
	var beOpts []s3mem.Option
	var fsOpts []gofakes3.Option
	if opts.Now != nil {
		beOpts = append(beOpts, s3mem.WithTimeSource(timeSource(opts.Now)))
		fsOpts = append(fsOpts, gofakes3.WithTimeSource(timeSource(opts.Now)), gofakes3.WithTimeSkewLimit(0))
	}
	backend := s3mem.New(beOpts...)
	if err := backend.CreateBucket(BucketName); err != nil {
		t.Fatal(err)
	}
	if opts.Versioned {
		if err := backend.SetVersioningConfiguration(BucketName, gofakes3.VersioningConfiguration{Status: gofakes3.VersioningEnabled}); err != nil {
			t.Fatal(err)
		}
	} else {
		fsOpts = append(fsOpts, gofakes3.WithoutVersioning())
	}
	srv := httptest.NewServer(gofakes3.New(backend, fsOpts...).Server())
	t.Cleanup(srv.Close)
	return &Server{URL: "s3://" + BucketName + "?endpoint=" + url.QueryEscape(srv.URL) + "&region=us-east-1&use_path_style=true", srv: srv}
}

// Open opens the server's bucket.
func (s *Server) Open(t testing.TB) *s3blob.Bucket {
	t.Helper()
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s3blob.OpenURL(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func setEnv(t testing.TB) {
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": "test-key", "AWS_SECRET_ACCESS_KEY": "test-secret",
		"AWS_SESSION_TOKEN": "", "AWS_PROFILE": "", "AWS_REGION": "",
		"AWS_CONFIG_FILE":             filepath.Join(dir, "none"),
		"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "none"),
		"AWS_EC2_METADATA_DISABLED":   "true",
	} {
		t.Setenv(k, v)
	}
}
