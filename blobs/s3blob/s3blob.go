// Package s3blob is the blobs driver for S3-compatible object stores: AWS
// S3, Cloudflare R2, MinIO and the like. Importing it registers the s3://
// scheme with blobs.Open, as gocloud's s3blob registers its own:
//
//	import _ "github.com/ckptstore/ckptstore/blobs/s3blob"
//	b, err := blobs.Open(ctx, "s3://my-bucket?region=us-east-1")
//
// It lives apart from package blobs so that programs using only the mem
// and file buckets do not link the AWS SDK.
//
// Invariants: every call is one S3 API operation through the AWS SDK for Go
// v2, except DeleteOlder (see there); uploads go through the SDK's transfer
// manager, which sends a body below MultipartThreshold as one PutObject and
// a larger one as a multipart upload. Both are atomic on S3: the object
// appears only when the PutObject or CompleteMultipartUpload succeeds, and a
// failed multipart upload is aborted. List pages through ListObjectsV2,
// whose order is ascending UTF-8 bytes on S3, R2 and MinIO; the wrapper
// checks that order and fails with blobs.blobs.ErrUnsorted instead of passing a
// wrong order on (S3 Express directory buckets, for one, do not sort).
//
// Freshness: Touch copies the object onto itself, which gives it a new
// LastModified. DeleteOlder is one step against concurrent touches and
// uploads only on a bucket with versioning enabled, where it deletes the
// exact versions it found old; see DeleteOlder and docs/sweep.md.
package s3blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/ckptstore/ckptstore/blobs"
)

// Scheme is the URL scheme this package registers with blobs.Open.
const Scheme = "s3"

func init() {
	blobs.Register(Scheme, func(ctx context.Context, u *url.URL) (blobs.Bucket, error) {
		return OpenURL(ctx, u)
	})
}

// Options configures New. The zero value uses the transfer manager's
// defaults: 8 MiB parts, multipart from 16 MiB, 5 parts in flight.
type Options struct {
	// PartSize is the multipart part size in bytes; 0 means 8 MiB. S3's
	// minimum is 5 MiB. Each upload buffers up to PartSize×(Concurrency+1).
	PartSize int64
	// MultipartThreshold is the body size from which Put uses a multipart
	// upload; 0 means 16 MiB. Smaller bodies are buffered and sent at once.
	MultipartThreshold int64
	// Concurrency is the number of parts one Put sends at once; 0 means 5.
	Concurrency int
	// RequestChecksumCalculation chooses when uploads carry a CRC checksum;
	// Unset means the S3 client's own setting. Many S3-compatible services
	// reject the SDK's default (a checksum on every upload), which is why
	// OpenURL sets WhenRequired for a custom endpoint.
	RequestChecksumCalculation aws.RequestChecksumCalculation
}

// Bucket is a blobs.Bucket, blobs.Toucher and blobs.OlderDeleter in an
// S3-compatible object store. Create one with New or through blobs.Open.
type Bucket struct {
	client *s3.Client
	tm     *transfermanager.Client
	bucket string

	// versioning caches whether the bucket has versioning enabled, which
	// DeleteOlder asks once per Bucket value.
	versioningMu    sync.Mutex
	versioningKnown bool
	versioned       bool
}

// New returns the bucket named bucket, reached through client.
func New(client *s3.Client, bucket string, opts Options) *Bucket {
	sum := opts.RequestChecksumCalculation
	if sum == aws.RequestChecksumCalculationUnset {
		sum = client.Options().RequestChecksumCalculation
	}
	tm := transfermanager.New(client, func(o *transfermanager.Options) {
		o.PartSizeBytes = opts.PartSize
		o.MultipartUploadThreshold = opts.MultipartThreshold
		o.Concurrency = opts.Concurrency
		o.RequestChecksumCalculation = sum
		// Abort a failed multipart upload even when the caller's context
		// is done; orphaned parts are stored, and billed, until aborted.
		o.FailTimeout = 30 * time.Second
	})
	return &Bucket{client: client, tm: tm, bucket: bucket}
}

// OpenURL opens s3://BUCKET?PARAMS; blobs.Open calls it for s3:// URLs. Parameters, all optional:
//
//   - endpoint: the service's base URL, e.g. https://<account>.r2.cloudflarestorage.com
//     for R2 or http://127.0.0.1:9000 for MinIO; absent means AWS S3.
//   - region: the signing region (R2 uses "auto"); absent means the AWS
//     configuration's region (AWS_REGION, shared config).
//   - use_path_style=true (alias s3ForcePathStyle=true): address the bucket
//     as ENDPOINT/BUCKET/KEY instead of BUCKET.ENDPOINT/KEY, as MinIO and
//     most local servers need.
//
// Credentials come from the standard AWS chain (AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY, AWS_PROFILE and the shared files, SSO, web
// identity, IMDS). With a custom endpoint, upload checksums are sent only
// when an operation requires them, since many S3-compatible services reject
// the SDK's default CRC checksum headers.
func OpenURL(ctx context.Context, u *url.URL) (*Bucket, error) {
	if u.Scheme != "s3" || u.Host == "" || (u.Path != "" && u.Path != "/") || u.User != nil {
		return nil, fmt.Errorf("%w: %q: want s3://BUCKET?endpoint=…&region=…", blobs.ErrInvalidURL, u.String())
	}
	q := u.Query()
	if err := blobs.CheckQuery(q, "endpoint", "region", "use_path_style", "s3ForcePathStyle"); err != nil {
		return nil, err
	}
	pathStyle, err := blobs.BoolParam(q, "use_path_style")
	if err != nil {
		return nil, err
	}
	alias, err := blobs.BoolParam(q, "s3ForcePathStyle")
	if err != nil {
		return nil, err
	}
	pathStyle = pathStyle || alias
	endpoint := q.Get("endpoint")
	if endpoint != "" {
		e, err := url.Parse(endpoint)
		if err != nil || (e.Scheme != "http" && e.Scheme != "https") || e.Host == "" {
			return nil, fmt.Errorf("%w: endpoint %q: want http(s)://host[:port]", blobs.ErrInvalidURL, endpoint)
		}
	}
	var loadOpts []func(*config.LoadOptions) error
	if r := q.Get("region"); r != "" {
		loadOpts = append(loadOpts, config.WithRegion(r))
	}
	cfg, err := config.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, fmt.Errorf("s3blob: load AWS configuration: %w", err)
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.UsePathStyle = pathStyle
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
			o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
			o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		}
	})
	return New(client, u.Host, Options{}), nil
}

// Client returns the S3 client the bucket uses.
func (b *Bucket) Client() *s3.Client { return b.client }

// Name returns the S3 bucket's name.
func (b *Bucket) Name() string { return b.bucket }

// isNotFound reports whether err says the object is missing; a missing
// bucket is not a missing object and stays an error.
func isNotFound(err error) bool {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch ae.ErrorCode() {
		case "NoSuchKey", "NotFound":
			return true
		case "NoSuchBucket":
			return false
		}
	}
	var re *awshttp.ResponseError
	return errors.As(err, &re) && re.HTTPStatusCode() == http.StatusNotFound
}

// Get implements blobs.Bucket.
func (b *Bucket) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := blobs.ValidateKey(key); err != nil {
		return nil, err
	}
	out, err := b.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &b.bucket, Key: &key})
	if isNotFound(err) {
		return nil, blobs.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("s3blob: get %q: %w", key, err)
	}
	return out.Body, nil
}

// Head implements blobs.Bucket.
func (b *Bucket) Head(ctx context.Context, key string) (blobs.Object, error) {
	if err := blobs.ValidateKey(key); err != nil {
		return blobs.Object{}, err
	}
	out, err := b.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b.bucket, Key: &key})
	if isNotFound(err) {
		return blobs.Object{}, blobs.ErrNotFound
	}
	if err != nil {
		return blobs.Object{}, fmt.Errorf("s3blob: head %q: %w", key, err)
	}
	return blobs.Object{Key: key, Size: aws.ToInt64(out.ContentLength), ModTime: aws.ToTime(out.LastModified)}, nil
}

// Put implements blobs.Bucket.
func (b *Bucket) Put(ctx context.Context, key string, r io.Reader) error {
	if err := blobs.ValidateKey(key); err != nil {
		return err
	}
	_, err := b.tm.UploadObject(ctx, &transfermanager.UploadObjectInput{Bucket: &b.bucket, Key: &key, Body: blobs.ContextReader(ctx, r)})
	if err != nil {
		return fmt.Errorf("s3blob: put %q: %w", key, err)
	}
	return nil
}

// Delete implements blobs.Bucket.
func (b *Bucket) Delete(ctx context.Context, key string) error {
	if err := blobs.ValidateKey(key); err != nil {
		return err
	}
	_, err := b.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b.bucket, Key: &key})
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("s3blob: delete %q: %w", key, err)
	}
	return nil
}

// List implements blobs.Bucket.
func (b *Bucket) List(ctx context.Context, prefix string) iter.Seq2[blobs.Object, error] {
	if err := blobs.ValidatePrefix(prefix); err != nil {
		return blobs.ErrSeq(err)
	}
	return func(yield func(blobs.Object, error) bool) {
		p := s3.NewListObjectsV2Paginator(b.client, &s3.ListObjectsV2Input{Bucket: &b.bucket, Prefix: &prefix})
		last, first := "", true
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				yield(blobs.Object{}, fmt.Errorf("s3blob: list %q: %w", prefix, err))
				return
			}
			for _, o := range page.Contents {
				key := aws.ToString(o.Key)
				if !first && key <= last {
					yield(blobs.Object{}, fmt.Errorf("%w: %q listed after %q", blobs.ErrUnsorted, key, last))
					return
				}
				last, first = key, false
				if !yield(blobs.Object{Key: key, Size: aws.ToInt64(o.Size), ModTime: aws.ToTime(o.LastModified)}, nil) {
					return
				}
			}
		}
	}
}

// copySource is the URL-encoded bucket/key that CopyObject reads. Each
// segment is path-escaped and "+" too, which some servers would otherwise
// decode as a space.
func (b *Bucket) copySource(key string) string {
	segs := strings.Split(key, "/")
	for i, s := range segs {
		segs[i] = strings.ReplaceAll(url.PathEscape(s), "+", "%2B")
	}
	return url.PathEscape(b.bucket) + "/" + strings.Join(segs, "/")
}

// Touch implements blobs.Toucher by copying the object onto itself, which
// S3 allows when the request replaces the metadata; this package stores no
// metadata of its own, so nothing is lost. The copy is done inside the
// service, without the bytes crossing the network, but S3 copies at most
// 5 GiB in one request: a larger object fails with an error wrapping
// errors.ErrUnsupported, and the uploader uploads it again instead.
func (b *Bucket) Touch(ctx context.Context, key string) error {
	if err := blobs.ValidateKey(key); err != nil {
		return err
	}
	_, err := b.client.CopyObject(ctx, &s3.CopyObjectInput{
		Bucket: &b.bucket, Key: &key, CopySource: aws.String(b.copySource(key)),
		MetadataDirective: types.MetadataDirectiveReplace,
	})
	switch {
	case err == nil:
		return nil
	case isNotFound(err):
		return blobs.ErrNotFound
	case isTooLargeToCopy(err):
		return fmt.Errorf("s3blob: touch %q: %w: %v", key, errors.ErrUnsupported, err)
	default:
		return fmt.Errorf("s3blob: touch %q: %w", key, err)
	}
}

// isTooLargeToCopy reports S3's refusal to copy a source over 5 GiB.
func isTooLargeToCopy(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && (ae.ErrorCode() == "EntityTooLarge" ||
		ae.ErrorCode() == "InvalidRequest" && strings.Contains(ae.ErrorMessage(), "maximum allowable size"))
}

// Versioned reports whether the bucket has versioning enabled, asking the
// service once per Bucket value. A service without the versioning API (R2)
// or a caller without permission to read it counts as unversioned.
func (b *Bucket) Versioned(ctx context.Context) (bool, error) {
	b.versioningMu.Lock()
	defer b.versioningMu.Unlock()
	if b.versioningKnown {
		return b.versioned, nil
	}
	out, err := b.client.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: &b.bucket})
	var ae smithy.APIError
	switch {
	case err == nil:
		b.versioned = out.Status == types.BucketVersioningStatusEnabled
	case errors.As(err, &ae):
		b.versioned = false
	default:
		return false, fmt.Errorf("s3blob: get bucket versioning: %w", err)
	}
	b.versioningKnown = true
	return b.versioned, nil
}

// DeleteOlder implements blobs.OlderDeleter.
//
// On a bucket with versioning enabled it is one step against concurrent
// touches and uploads of the key: it lists the key's versions, and when the
// current one is strictly older than before it deletes exactly the versions
// it listed, by version id, the current one last. A touch or upload that
// lands after the listing makes a new version, which stays current. Pair
// such a bucket with a lifecycle rule that expires noncurrent versions,
// since every touch leaves one behind until the object is deleted.
//
// On an unversioned bucket S3 offers no "delete if unchanged" that a touch
// would defeat (a copy keeps the ETag, and conditional deletes on
// LastModified exist only for directory buckets), so it is HeadObject then
// DeleteObject, and a touch between the two is lost. docs/sweep.md states
// what that leaves.
func (b *Bucket) DeleteOlder(ctx context.Context, key string, before time.Time) (bool, error) {
	if err := blobs.ValidateKey(key); err != nil {
		return false, err
	}
	versioned, err := b.Versioned(ctx)
	if err != nil {
		return false, err
	}
	if !versioned {
		o, err := b.Head(ctx, key)
		if errors.Is(err, blobs.ErrNotFound) {
			return false, nil
		}
		if err != nil || !o.ModTime.Before(before) {
			return false, err
		}
		return true, b.Delete(ctx, key)
	}
	ids, current, err := b.versionsOf(ctx, key)
	if err != nil || current == nil || !current.Before(before) {
		return false, err
	}
	for _, id := range ids {
		if _, err := b.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b.bucket, Key: &key, VersionId: aws.String(id)}); err != nil && !isNotFound(err) {
			return false, fmt.Errorf("s3blob: delete %q version %s: %w", key, id, err)
		}
	}
	return true, nil
}

// versionsOf lists the version ids of key (delete markers included), the
// current version last, and the current version's LastModified; nil when
// the key has no current object.
func (b *Bucket) versionsOf(ctx context.Context, key string) ([]string, *time.Time, error) {
	var ids []string
	var current *time.Time
	var currentID string
	p := s3.NewListObjectVersionsPaginator(b.client, &s3.ListObjectVersionsInput{Bucket: &b.bucket, Prefix: &key})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("s3blob: list versions of %q: %w", key, err)
		}
		for _, v := range page.Versions {
			if aws.ToString(v.Key) != key {
				continue
			}
			if aws.ToBool(v.IsLatest) {
				current, currentID = v.LastModified, aws.ToString(v.VersionId)
				continue
			}
			ids = append(ids, aws.ToString(v.VersionId))
		}
		for _, m := range page.DeleteMarkers {
			if aws.ToString(m.Key) == key {
				if aws.ToBool(m.IsLatest) {
					return nil, nil, nil // the key is deleted already
				}
				ids = append(ids, aws.ToString(m.VersionId))
			}
		}
	}
	if current == nil {
		return nil, nil, nil
	}
	return append(ids, currentID), current, nil
}
