package blobs

// S3Bucket invariants: every call is one S3 API operation through the AWS
// SDK for Go v2; uploads go through the SDK's transfer manager, which sends
// a body below MultipartThreshold as one PutObject and a larger one as a
// multipart upload. Both are atomic on S3: the object appears only when the
// PutObject or CompleteMultipartUpload succeeds, and a failed multipart
// upload is aborted. List pages through ListObjectsV2, whose order is
// ascending UTF-8 bytes on S3, R2 and MinIO; the wrapper checks that order
// and fails with ErrUnsorted instead of passing a wrong order on (S3 Express
// directory buckets, for one, do not sort).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/feature/s3/transfermanager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
)

// S3Options configures NewS3. The zero value uses the transfer manager's
// defaults: 8 MiB parts, multipart from 16 MiB, 5 parts in flight.
type S3Options struct {
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
	// OpenS3URL sets WhenRequired for a custom endpoint.
	RequestChecksumCalculation aws.RequestChecksumCalculation
}

// S3Bucket is a Bucket in an S3-compatible object store. Create one with
// NewS3 or through Open.
type S3Bucket struct {
	client *s3.Client
	tm     *transfermanager.Client
	bucket string
}

// NewS3 returns the bucket named bucket, reached through client.
func NewS3(client *s3.Client, bucket string, opts S3Options) *S3Bucket {
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
	return &S3Bucket{client: client, tm: tm, bucket: bucket}
}

// OpenS3URL opens s3://BUCKET?PARAMS. Parameters, all optional:
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
func OpenS3URL(ctx context.Context, u *url.URL) (*S3Bucket, error) {
	if u.Scheme != "s3" || u.Host == "" || (u.Path != "" && u.Path != "/") || u.User != nil {
		return nil, fmt.Errorf("%w: %q: want s3://BUCKET?endpoint=…&region=…", ErrInvalidURL, u.String())
	}
	q := u.Query()
	if err := checkQuery(q, "endpoint", "region", "use_path_style", "s3ForcePathStyle"); err != nil {
		return nil, err
	}
	pathStyle, err := boolParam(q, "use_path_style")
	if err != nil {
		return nil, err
	}
	alias, err := boolParam(q, "s3ForcePathStyle")
	if err != nil {
		return nil, err
	}
	pathStyle = pathStyle || alias
	endpoint := q.Get("endpoint")
	if endpoint != "" {
		e, err := url.Parse(endpoint)
		if err != nil || (e.Scheme != "http" && e.Scheme != "https") || e.Host == "" {
			return nil, fmt.Errorf("%w: endpoint %q: want http(s)://host[:port]", ErrInvalidURL, endpoint)
		}
	}
	var loadOpts []func(*config.LoadOptions) error
	if r := q.Get("region"); r != "" {
		loadOpts = append(loadOpts, config.WithRegion(r))
	}
	cfg, err := config.LoadDefaultConfig(ctx, loadOpts...)
	if err != nil {
		return nil, fmt.Errorf("blobs: load AWS configuration: %w", err)
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.UsePathStyle = pathStyle
		if endpoint != "" {
			o.BaseEndpoint = aws.String(endpoint)
			o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
			o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		}
	})
	return NewS3(client, u.Host, S3Options{}), nil
}

// Client returns the S3 client the bucket uses.
func (b *S3Bucket) Client() *s3.Client { return b.client }

// Name returns the S3 bucket's name.
func (b *S3Bucket) Name() string { return b.bucket }

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

// Get implements Bucket.
func (b *S3Bucket) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := ValidateKey(key); err != nil {
		return nil, err
	}
	out, err := b.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &b.bucket, Key: &key})
	if isNotFound(err) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("blobs: get %q: %w", key, err)
	}
	return out.Body, nil
}

// Head implements Bucket.
func (b *S3Bucket) Head(ctx context.Context, key string) (Object, error) {
	if err := ValidateKey(key); err != nil {
		return Object{}, err
	}
	out, err := b.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &b.bucket, Key: &key})
	if isNotFound(err) {
		return Object{}, ErrNotFound
	}
	if err != nil {
		return Object{}, fmt.Errorf("blobs: head %q: %w", key, err)
	}
	return Object{Key: key, Size: aws.ToInt64(out.ContentLength), ModTime: aws.ToTime(out.LastModified)}, nil
}

// Put implements Bucket.
func (b *S3Bucket) Put(ctx context.Context, key string, r io.Reader) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	_, err := b.tm.UploadObject(ctx, &transfermanager.UploadObjectInput{Bucket: &b.bucket, Key: &key, Body: ctxReader{ctx, r}})
	if err != nil {
		return fmt.Errorf("blobs: put %q: %w", key, err)
	}
	return nil
}

// Delete implements Bucket.
func (b *S3Bucket) Delete(ctx context.Context, key string) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	_, err := b.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &b.bucket, Key: &key})
	if err != nil && !isNotFound(err) {
		return fmt.Errorf("blobs: delete %q: %w", key, err)
	}
	return nil
}

// List implements Bucket.
func (b *S3Bucket) List(ctx context.Context, prefix string) iter.Seq2[Object, error] {
	if err := validatePrefix(prefix); err != nil {
		return errSeq(err)
	}
	return func(yield func(Object, error) bool) {
		p := s3.NewListObjectsV2Paginator(b.client, &s3.ListObjectsV2Input{Bucket: &b.bucket, Prefix: &prefix})
		last, first := "", true
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				yield(Object{}, fmt.Errorf("blobs: list %q: %w", prefix, err))
				return
			}
			for _, o := range page.Contents {
				key := aws.ToString(o.Key)
				if !first && key <= last {
					yield(Object{}, fmt.Errorf("%w: %q listed after %q", ErrUnsorted, key, last))
					return
				}
				last, first = key, false
				if !yield(Object{Key: key, Size: aws.ToInt64(o.Size), ModTime: aws.ToTime(o.LastModified)}, nil) {
					return
				}
			}
		}
	}
}
