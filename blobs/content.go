package blobs

// Content-addressed uploads. Invariants: the key is the SHA-256 of exactly
// the bytes stored under it; the upload is skipped when Head finds the key
// with the same size; memory stays constant whatever the content's size.
// Freshening: when the object found is older than FreshenAfter it is
// touched (Toucher) or, on a bucket that cannot touch, uploaded again, so
// that once PutFile returns the object's ModTime is at least the time of
// its Head minus FreshenAfter. That bound is what the sweep's safety
// condition builds on (docs/sweep.md).
//
// The key must be known before the upload starts, so the content is read
// twice. A reader that can seek (an *os.File on a regular file, a
// bytes.Reader) is hashed in place and rewound; any other reader is copied
// to a temporary file while it is hashed. The second pass goes through a
// verifying reader that fails the Put, before its last bytes reach the
// bucket, when what it reads no longer hashes to the key (a file written to
// between the passes); since Put is atomic, nothing wrong is ever stored.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"strings"
	"time"
)

// The key prefixes of the two kinds of content. Keys are the prefix,
// "sha256/", and the 64 lowercase hex digits of the content's SHA-256.
const (
	FilesPrefix     = "sandbox-files/"
	ArtifactsPrefix = "sandbox-artifacts/"
)

// ErrContentChanged is returned by a content-addressed upload whose reader
// yielded different bytes on the upload pass than on the hashing pass.
var ErrContentChanged = errors.New("blobs: content changed while it was uploaded")

// FileKey returns the key of file content with the given SHA-256 digest.
func FileKey(sum [sha256.Size]byte) string {
	return FilesPrefix + "sha256/" + hex.EncodeToString(sum[:])
}

// ArtifactKey returns the key of artifact content with the given SHA-256
// digest.
func ArtifactKey(sum [sha256.Size]byte) string {
	return ArtifactsPrefix + "sha256/" + hex.EncodeToString(sum[:])
}

// IsContentKey reports whether key is a well-formed file or artifact key:
// one of the two prefixes, "sha256/", and 64 lowercase hex digits.
func IsContentKey(key string) bool {
	rest, ok := strings.CutPrefix(key, FilesPrefix+"sha256/")
	if !ok {
		rest, ok = strings.CutPrefix(key, ArtifactsPrefix+"sha256/")
	}
	return ok && len(rest) == 2*sha256.Size && strings.Trim(rest, "0123456789abcdef") == ""
}

// PutResult describes a content-addressed upload.
type PutResult struct {
	Key  string
	Size int64
	// Uploaded is false when the object was already stored and the upload
	// was skipped.
	Uploaded bool
	// Freshened is true when the object was already stored but older than
	// FreshenAfter, and was touched instead of uploaded.
	Freshened bool
}

// DefaultFreshenAfter is the freshen threshold F of PutFile, PutArtifact
// and an Uploader whose FreshenAfter is 0: one hour, 1/24 of the 24-hour
// grace period docs/sweep.md recommends. With it, a sweep is safe while
// captures run when its OlderThan exceeds one hour plus the longest
// capture, plus the terms docs/sweep.md gives for S3 and clock skew.
const DefaultFreshenAfter = time.Hour

// Uploader puts content under its SHA-256 key. The zero value, with Bucket
// set, spools to os.TempDir and freshens existing objects older than
// DefaultFreshenAfter.
type Uploader struct {
	Bucket Bucket
	// TempDir holds the temporary copy of a reader that cannot seek; ""
	// means os.TempDir().
	TempDir string
	// FreshenAfter is the freshen threshold F: an existing object whose
	// ModTime is more than F before Now is freshened instead of skipped.
	// 0 means DefaultFreshenAfter; negative turns freshening off, which is
	// safe only when no sweep runs while captures do.
	//
	// Why: the sweep deletes unreferenced objects older than its
	// OlderThan. A capture that finds an old, currently unreferenced
	// object (its last checkpoint was pruned) and only skips the upload
	// would lose it to a sweep that runs before the capture's checkpoint
	// is appended. Freshening restarts the object's grace period; a sweep
	// whose OlderThan exceeds F plus the longest capture (plus the terms
	// docs/sweep.md adds for S3 uploads and clock skew) then never deletes
	// what a capture reused. Smaller F costs more touches: each reused
	// object is touched at most once per F.
	FreshenAfter time.Duration
	// Now is the clock FreshenAfter is measured with; nil means time.Now.
	// It should be the bucket's clock, since ModTime comes from there.
	Now func() time.Time
}

// PutFile stores r's content under FileKey of its SHA-256, unless an object
// of the same size is already there, which it freshens when it is older
// than DefaultFreshenAfter. b's memory use is constant.
func PutFile(ctx context.Context, b Bucket, r io.Reader) (PutResult, error) {
	return (&Uploader{Bucket: b}).PutFile(ctx, r)
}

// PutArtifact stores r's content under ArtifactKey of its SHA-256, unless an
// object of the same size is already there, which it freshens when it is
// older than DefaultFreshenAfter.
func PutArtifact(ctx context.Context, b Bucket, r io.Reader) (PutResult, error) {
	return (&Uploader{Bucket: b}).PutArtifact(ctx, r)
}

// PutFile stores r's content under FileKey of its SHA-256, unless it is
// already stored; an old stored object is freshened (see FreshenAfter).
func (u *Uploader) PutFile(ctx context.Context, r io.Reader) (PutResult, error) {
	return u.put(ctx, FileKey, r)
}

// PutArtifact stores r's content under ArtifactKey of its SHA-256, unless
// it is already stored; an old stored object is freshened (see
// FreshenAfter).
func (u *Uploader) PutArtifact(ctx context.Context, r io.Reader) (PutResult, error) {
	return u.put(ctx, ArtifactKey, r)
}

func (u *Uploader) put(ctx context.Context, keyOf func([sha256.Size]byte) string, r io.Reader) (PutResult, error) {
	if u.Bucket == nil {
		return PutResult{}, errors.New("blobs: Uploader has no Bucket")
	}
	body, sum, size, cleanup, err := u.hash(ctx, r)
	if err != nil {
		return PutResult{}, err
	}
	defer cleanup()
	res := PutResult{Key: keyOf(sum), Size: size}
	obj, err := u.Bucket.Head(ctx, res.Key)
	switch {
	case err == nil && obj.Size == size:
		if !u.stale(obj) {
			return res, nil
		}
		fresh, err := u.freshen(ctx, res.Key)
		if err != nil || fresh {
			res.Freshened = fresh
			return res, err
		}
		// Deleted since the Head (a sweep), or not touchable: upload.
	case err == nil, errors.Is(err, ErrNotFound):
		// Missing, or of the wrong size (damaged by something that is not
		// this package): upload.
	default:
		return PutResult{}, err
	}
	v := &verifyReader{r: body, h: sha256.New(), want: sum, left: size}
	if err := u.Bucket.Put(ctx, res.Key, v); err != nil {
		return PutResult{}, err
	}
	res.Uploaded = true
	return res, nil
}

// freshen touches key and reports whether it did; false without an error
// means the caller must upload instead: the bucket cannot touch, or the
// object is gone (a sweep deleted it after the Head).
func (u *Uploader) freshen(ctx context.Context, key string) (bool, error) {
	t, ok := u.Bucket.(Toucher)
	if !ok {
		return false, nil
	}
	switch err := t.Touch(ctx, key); {
	case err == nil:
		return true, nil
	case errors.Is(err, ErrNotFound), errors.Is(err, errors.ErrUnsupported):
		return false, nil
	default:
		return false, err
	}
}

func (u *Uploader) stale(o Object) bool {
	f := u.FreshenAfter
	switch {
	case f < 0:
		return false
	case f == 0:
		f = DefaultFreshenAfter
	}
	now := time.Now
	if u.Now != nil {
		now = u.Now
	}
	return now().Sub(o.ModTime) > f
}

// hash reads r once and returns a reader of the same bytes for the upload
// pass, their digest and size, and a cleanup to call when done.
func (u *Uploader) hash(ctx context.Context, r io.Reader) (io.Reader, [sha256.Size]byte, int64, func(), error) {
	var sum [sha256.Size]byte
	h := sha256.New()
	if s, ok := r.(io.ReadSeeker); ok {
		// Seek fails on pipes and terminals, which then take the spool path.
		if start, err := s.Seek(0, io.SeekCurrent); err == nil {
			n, err := io.Copy(h, ctxReader{ctx, s})
			if err != nil {
				return nil, sum, 0, nil, err
			}
			if _, err := s.Seek(start, io.SeekStart); err != nil {
				return nil, sum, 0, nil, err
			}
			h.Sum(sum[:0])
			return s, sum, n, func() {}, nil
		}
	}
	f, err := os.CreateTemp(u.TempDir, "ckptstore-blob-*")
	if err != nil {
		return nil, sum, 0, nil, fmt.Errorf("blobs: spool upload: %w", err)
	}
	cleanup := func() {
		f.Close()
		os.Remove(f.Name())
	}
	n, err := io.Copy(io.MultiWriter(f, h), ctxReader{ctx, r})
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	if err != nil {
		cleanup()
		return nil, sum, 0, nil, err
	}
	h.Sum(sum[:0])
	return f, sum, n, cleanup, nil
}

// verifyReader yields exactly left bytes of r and fails instead of
// returning the last of them when they do not hash to want, so a consumer
// never reaches io.EOF with wrong content.
type verifyReader struct {
	r    io.Reader
	h    hash.Hash
	want [sha256.Size]byte
	left int64
}

func (v *verifyReader) Read(p []byte) (int, error) {
	switch {
	case v.left < 0:
		return 0, ErrContentChanged
	case v.left == 0:
		return 0, io.EOF
	case int64(len(p)) > v.left:
		p = p[:v.left]
	}
	n, err := v.r.Read(p)
	v.h.Write(p[:n])
	v.left -= int64(n)
	if v.left == 0 {
		var got [sha256.Size]byte
		if v.h.Sum(got[:0]); got != v.want {
			v.left = -1
			return 0, ErrContentChanged
		}
		return n, nil
	}
	if err == io.EOF {
		v.left = -1
		return 0, ErrContentChanged // shorter than on the hashing pass
	}
	return n, err
}
