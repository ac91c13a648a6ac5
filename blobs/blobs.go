// Package blobs stores the bytes of checkpoint files and artifacts in a
// bucket: an in-process memory bucket (mem://), a directory (file:///dir) or,
// through a driver package that registers its scheme with Register, another
// store: package blobs/s3blob adds S3-compatible object stores such as AWS
// S3, Cloudflare R2 or MinIO (s3://bucket?endpoint=…&region=…). This package
// itself depends on nothing outside the module but a B-tree, so a program
// that uses only mem and file buckets does not link the AWS SDK.
//
// Two optional capabilities, found by type assertion like io.WriterTo,
// make a sweep safe while captures run (docs/sweep.md): Toucher freshens an
// object a capture reuses, and OlderDeleter deletes an object only if it is
// still old, in one step. The mem and file buckets implement both; so does
// s3blob (DeleteOlder is one step only on a versioned bucket).
//
// Invariants every Bucket keeps, proven by the conformance suite in
// blobs/blobstest:
//
//   - Keys follow ValidateKey everywhere, so a key that one bucket accepts
//     every other bucket accepts too, and no key can name a path outside a
//     file bucket's directory.
//   - Put is atomic: until it returns nil nobody sees the new bytes, and a
//     Put that fails (reader error, cancelled context) leaves the previous
//     object, or its absence, as it was.
//   - List yields the keys that start with the prefix in ascending byte order,
//     each with its size and upload time (ModTime), and holds a bounded
//     amount of memory whatever the number of keys. Objects put or deleted
//     while a listing runs may or may not appear; every other object appears
//     exactly once.
//   - Get and Head of a missing key fail with ErrNotFound; Delete of a
//     missing key succeeds, so deletes can be retried and can race.
package blobs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Object describes a stored object.
type Object struct {
	Key  string
	Size int64
	// ModTime is when the object's current bytes were uploaded or, later,
	// touched (Toucher). The sweep compares it with its grace period, so a
	// bucket must never report a time later than the upload or touch
	// finished by more than its clock skew.
	ModTime time.Time
}

// Bucket is a flat key space of immutable objects. Implementations are safe
// for concurrent use.
type Bucket interface {
	// Get opens the object for reading; the caller closes the reader. A
	// missing key fails with ErrNotFound.
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	// Head returns the object's size and upload time. A missing key fails
	// with ErrNotFound.
	Head(ctx context.Context, key string) (Object, error)
	// Put stores the bytes read from r until io.EOF under key, replacing
	// any object there, atomically: a Put that fails leaves the key as it was.
	Put(ctx context.Context, key string, r io.Reader) error
	// List yields the objects whose key starts with prefix, in ascending
	// order of the key's bytes. An error ends the sequence.
	List(ctx context.Context, prefix string) iter.Seq2[Object, error]
	// Delete removes the object. A missing key is not an error.
	Delete(ctx context.Context, key string) error
}

var (
	// ErrNotFound is returned by Get and Head for a key with no object.
	ErrNotFound = errors.New("blobs: object not found")
	// ErrInvalidKey is returned for a key that ValidateKey rejects.
	ErrInvalidKey = errors.New("blobs: invalid key")
	// ErrInvalidURL is returned by Open for a URL it cannot open.
	ErrInvalidURL = errors.New("blobs: invalid bucket URL")
	// ErrUnsorted is returned by a listing that a storage service returned
	// out of ascending key order, which List promises and the sweep relies on.
	ErrUnsorted = errors.New("blobs: listing is not in ascending key order")
)

// MaxKeyLen is the longest key in bytes, S3's limit.
const MaxKeyLen = 1024

// maxSegmentLen is the longest segment (text between slashes) of a key: the
// file bucket stores each segment as a file name, and file systems limit
// names to 255 bytes.
const maxSegmentLen = 255

// ValidateKey reports whether key can name an object in every bucket type,
// and fails with an error wrapping ErrInvalidKey when it cannot. A key is
// 1 to MaxKeyLen bytes of valid UTF-8 without control characters (U+0000 to
// U+001F and U+007F: S3 cannot list them in XML); it does not start with
// "/", and split at "/" each segment is 1 to 255 bytes and neither "." nor
// "..". Rejecting empty, "." and ".." segments is what keeps a file bucket's
// keys inside its directory; applying the rule to every bucket keeps them
// interchangeable.
func ValidateKey(key string) error {
	if key == "" {
		return fmt.Errorf("%w: empty key", ErrInvalidKey)
	}
	if len(key) > MaxKeyLen {
		return fmt.Errorf("%w: key is %d bytes, longer than %d", ErrInvalidKey, len(key), MaxKeyLen)
	}
	if !utf8.ValidString(key) {
		return fmt.Errorf("%w: %q is not valid UTF-8", ErrInvalidKey, key)
	}
	if strings.ContainsFunc(key, isControl) {
		return fmt.Errorf("%w: %q holds a control character", ErrInvalidKey, key)
	}
	for seg := range strings.SplitSeq(key, "/") {
		switch {
		case seg == "":
			return fmt.Errorf("%w: %q has an empty segment", ErrInvalidKey, key)
		case seg == "." || seg == "..":
			return fmt.Errorf("%w: %q has a %q segment", ErrInvalidKey, key, seg)
		case len(seg) > maxSegmentLen:
			return fmt.Errorf("%w: %q has a segment longer than %d bytes", ErrInvalidKey, key, maxSegmentLen)
		}
	}
	return nil
}

// Toucher is implemented by a Bucket that can freshen an object: set its
// ModTime to the bucket's current time without changing its bytes. It is
// the primitive that makes a sweep safe while captures run (see
// docs/sweep.md): a capture that reuses an old object touches it, so the
// sweep's grace period starts again.
//
// Touch of a missing key fails with ErrNotFound and never creates the
// object. A bucket that cannot touch one object (S3 cannot copy an object
// over 5 GiB onto itself in one request) fails with an error wrapping
// errors.ErrUnsupported; Uploader then uploads the content again, which
// freshens it too.
type Toucher interface {
	Touch(ctx context.Context, key string) error
}

// OlderDeleter is implemented by a Bucket that can delete an object only if
// it is old, in one step that no Put or Touch of the same key can split:
// DeleteOlder deletes key when its ModTime is strictly before before and
// reports whether it did. A missing key is (false, nil).
//
// The sweep uses it for its final decision. Without it the sweep reads the
// ModTime with Head and then calls Delete, and a capture that freshens the
// object between the two calls loses it; see docs/sweep.md.
type OlderDeleter interface {
	DeleteOlder(ctx context.Context, key string, before time.Time) (bool, error)
}

// URLOpener opens the bucket a URL names. Drivers register one per scheme
// with Register.
type URLOpener func(ctx context.Context, u *url.URL) (Bucket, error)

var (
	registryMu sync.RWMutex
	registry   = map[string]URLOpener{}
)

// Register makes Open hand URLs of the given scheme to open. Drivers call
// it from an init function, as gocloud's drivers do, so that importing the
// driver package (often with a blank import) is what enables its scheme:
//
//	import _ "github.com/ckptstore/ckptstore/blobs/s3blob" // s3://
//
// Register panics when the scheme is empty, built in (mem, file) or
// already registered: two drivers claiming one scheme is a program error.
func Register(scheme string, open URLOpener) {
	if scheme == "" || scheme == "mem" || scheme == "file" || open == nil {
		panic(fmt.Sprintf("blobs: Register(%q): scheme empty or built in, or opener nil", scheme))
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[scheme]; dup {
		panic(fmt.Sprintf("blobs: Register(%q): scheme already registered", scheme))
	}
	registry[scheme] = open
}

// knownDrivers names the import path of each driver in this module, so
// that Open can say what to import for a scheme nobody registered.
var knownDrivers = map[string]string{"s3": "github.com/ckptstore/ckptstore/blobs/s3blob"}

// Open opens the bucket that url names:
//
//   - mem:// or mem://NAME — a new, empty in-memory bucket (MemBucket). Each
//     Open returns a bucket of its own, even for the same URL: nothing is
//     shared through process-wide state, so tests cannot leak objects into
//     each other; pass the Bucket value to share it. NAME is only a label.
//   - file:///abs/dir — the directory /abs/dir, which must exist (FileBucket,
//     see OpenFile for its layout). Query: create=true makes the directory
//     when it is missing; nosync=true skips fsync (tests and benchmarks only).
//   - any scheme a driver registered with Register, such as
//     s3://BUCKET?endpoint=…&region=…&use_path_style=true once package
//     github.com/ckptstore/ckptstore/blobs/s3blob is imported. The mem and
//     file buckets need no third-party code; the S3 driver brings the AWS
//     SDK, so only programs that import it pay for it.
//
// Unknown schemes and query parameters fail with ErrInvalidURL, so a typo
// cannot silently open a different bucket.
func Open(ctx context.Context, rawURL string) (Bucket, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidURL, err)
	}
	switch u.Scheme {
	case "mem":
		if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
			return nil, fmt.Errorf("%w: %q: a mem URL is mem:// or mem://NAME, without path or query", ErrInvalidURL, rawURL)
		}
		return NewMem(MemOptions{}), nil
	case "file":
		return openFileURL(u)
	}
	registryMu.RLock()
	open := registry[u.Scheme]
	registryMu.RUnlock()
	if open != nil {
		return open(ctx, u)
	}
	if pkg, ok := knownDrivers[u.Scheme]; ok {
		return nil, fmt.Errorf("%w: %q: scheme %s is not registered; import _ %q", ErrInvalidURL, rawURL, u.Scheme, pkg)
	}
	return nil, fmt.Errorf("%w: %q: scheme must be mem, file or a registered one", ErrInvalidURL, rawURL)
}

// CheckQuery fails with ErrInvalidURL when q holds a parameter not in
// known, or one given twice. Drivers use it so that a mistyped parameter
// is an error everywhere.
func CheckQuery(q url.Values, known ...string) error {
	for k, vs := range q {
		if !slices.Contains(known, k) {
			return fmt.Errorf("%w: unknown query parameter %q (known: %s)", ErrInvalidURL, k, strings.Join(known, ", "))
		}
		if len(vs) != 1 {
			return fmt.Errorf("%w: query parameter %q given %d times", ErrInvalidURL, k, len(vs))
		}
	}
	return nil
}

// BoolParam parses an optional boolean query parameter ("" = false),
// failing with ErrInvalidURL on anything but true, false, 1 and 0.
func BoolParam(q url.Values, name string) (bool, error) {
	switch v := q.Get(name); v {
	case "", "false", "0":
		return false, nil
	case "true", "1":
		return true, nil
	default:
		return false, fmt.Errorf("%w: %s=%q: want true or false", ErrInvalidURL, name, v)
	}
}

// ContextReader returns a reader that fails once ctx is done, so that
// copying a long stream into a bucket stops when the caller gives up
// instead of running to the end.
func ContextReader(ctx context.Context, r io.Reader) io.Reader { return ctxReader{ctx, r} }

// ctxReader fails reads once ctx is done, so that copying a long stream into
// a bucket stops when the caller gives up instead of running to the end.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// ErrSeq is a listing that yields only err: what List returns for
// arguments it rejects before listing anything.
func ErrSeq(err error) iter.Seq2[Object, error] {
	return func(yield func(Object, error) bool) { yield(Object{}, err) }
}

// ValidatePrefix rejects list prefixes that no valid key can start with in
// a way that matters: bytes a key may not hold, with an error wrapping
// ErrInvalidKey. Other prefixes that match no key (such as "a//") simply
// list nothing. Every driver's List calls it first.
func ValidatePrefix(prefix string) error {
	if len(prefix) > MaxKeyLen || !utf8.ValidString(prefix) {
		return fmt.Errorf("%w: list prefix %q", ErrInvalidKey, prefix)
	}
	if strings.ContainsFunc(prefix, isControl) {
		return fmt.Errorf("%w: list prefix %q holds a control character", ErrInvalidKey, prefix)
	}
	return nil
}

// isControl reports whether r is a control character a key may not hold
// (U+0000 to U+001F, U+007F). The callers check UTF-8 first, and in valid
// UTF-8 those bytes stand only for themselves, so testing runes tests the
// bytes.
func isControl(r rune) bool { return r < 0x20 || r == 0x7f }
