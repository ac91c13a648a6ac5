package blobs

// Content-addressed uploads. Invariants: the key is the SHA-256 of exactly
// the bytes stored under it; the upload is skipped when Head finds the key
// with the same size; memory stays constant whatever the content's size.
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
	if !ok || len(rest) != 2*sha256.Size {
		return false
	}
	for i := 0; i < len(rest); i++ {
		if c := rest[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// PutResult describes a content-addressed upload.
type PutResult struct {
	Key  string
	Size int64
	// Uploaded is false when the object was already stored and the upload
	// was skipped.
	Uploaded bool
}

// Uploader puts content under its SHA-256 key. The zero value, with Bucket
// set, spools to os.TempDir and never re-uploads an existing object.
type Uploader struct {
	Bucket Bucket
	// TempDir holds the temporary copy of a reader that cannot seek; ""
	// means os.TempDir().
	TempDir string
	// RefreshOlderThan, when positive, uploads the content again when the
	// existing object is older than this, so that its ModTime is fresh.
	//
	// Why: the sweep deletes unreferenced objects older than its OlderThan.
	// A capture that finds an old, currently unreferenced object (its last
	// checkpoint was pruned) and skips the upload would lose it to a sweep
	// that runs before the capture's checkpoint is appended. Setting
	// RefreshOlderThan to at most the sweep's OlderThan minus the longest a
	// capture takes closes that window. 0 skips every existing object.
	RefreshOlderThan time.Duration
	// Now is the clock for RefreshOlderThan; nil means time.Now.
	Now func() time.Time
}

// PutFile stores r's content under FileKey of its SHA-256, unless an object
// of the same size is already there. b's memory use is constant.
func PutFile(ctx context.Context, b Bucket, r io.Reader) (PutResult, error) {
	return (&Uploader{Bucket: b}).PutFile(ctx, r)
}

// PutArtifact stores r's content under ArtifactKey of its SHA-256, unless an
// object of the same size is already there.
func PutArtifact(ctx context.Context, b Bucket, r io.Reader) (PutResult, error) {
	return (&Uploader{Bucket: b}).PutArtifact(ctx, r)
}

// PutFile stores r's content under FileKey of its SHA-256, unless it is
// already stored.
func (u *Uploader) PutFile(ctx context.Context, r io.Reader) (PutResult, error) {
	return u.put(ctx, FileKey, r)
}

// PutArtifact stores r's content under ArtifactKey of its SHA-256, unless
// it is already stored.
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
	case err == nil && obj.Size == size && !u.stale(obj):
		return res, nil
	case err == nil, errors.Is(err, ErrNotFound):
		// Missing, stale, or of the wrong size (damaged by something that
		// is not this package): upload.
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

func (u *Uploader) stale(o Object) bool {
	if u.RefreshOlderThan <= 0 {
		return false
	}
	now := time.Now
	if u.Now != nil {
		now = u.Now
	}
	return now().Sub(o.ModTime) > u.RefreshOlderThan
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
