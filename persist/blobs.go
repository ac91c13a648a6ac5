package persist

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"maps"

	"github.com/ckptstore/ckptstore/blobs"
	"github.com/ckptstore/ckptstore/persist/driver"
)

// BlobPutOptions are the options of Blobs.Put (TanStack's BlobPutOptions).
type BlobPutOptions struct {
	ContentType    *string           `json:"contentType,omitempty"`
	CustomMetadata map[string]string `json:"customMetadata,omitempty"`
	// ExpectedLength is advisory: the store counts what arrives, and a
	// body of another length is stored as it is.
	ExpectedLength *int64 `json:"expectedLength,omitempty"`
}

// BlobRange is a byte range to read (TanStack's BlobRange): Offset inside
// the object, Length nil for "to the end" and clamped to the end.
type BlobRange struct {
	Offset int64  `json:"offset"`
	Length *int64 `json:"length,omitempty"`
}

// ServedRange is the slice a ranged read served: Offset as asked, Length as
// served after clamping.
type ServedRange struct {
	Offset int64 `json:"offset"`
	Length int64 `json:"length"`
}

// BlobObject is a blob's metadata and its bytes (TanStack's BlobObject).
// Size is the whole object's; Range is set only on a ranged read; Body
// yields the bytes read (the slice, on a ranged read) and must be closed.
type BlobObject struct {
	BlobRecord
	Range *ServedRange  `json:"range,omitempty"`
	Body  io.ReadCloser `json:"-"`
}

// BlobListOptions are the options of Blobs.List (TanStack's
// BlobListOptions). Limit nil means no limit; 0 an empty page.
type BlobListOptions struct {
	Prefix string `json:"prefix,omitempty"`
	Cursor string `json:"cursor,omitempty"`
	Limit  *int   `json:"limit,omitempty"`
}

// BlobListPage is one page of Blobs.List (TanStack's BlobListPage).
type BlobListPage struct {
	Objects   []BlobRecord `json:"objects"`
	Cursor    string       `json:"cursor,omitempty"`
	Truncated bool         `json:"truncated,omitempty"`
}

// RangeGetter is implemented by a bucket that can read a slice of an
// object without reading what comes before it (S3's Range header). Blobs
// uses it when the bucket has it and otherwise skips the first bytes.
type RangeGetter interface {
	// GetRange opens length bytes of key from offset (which is inside the
	// object; length already clamped).
	GetRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error)
}

// Blobs is TanStack's BlobStore. The bytes go to the bucket, one object per
// put under the store's blob prefix; the driver keeps each key's metadata
// and the name of the object holding its bytes, so a put replaces a key
// atomically: readers see the old bytes or the new, never a mix.
type Blobs struct {
	*core
	bucket blobs.Bucket
	prefix string
}

// Put stores the bytes read from body until io.EOF under key, with no
// length declared in advance, and returns the stored metadata: size is the
// count of what arrived, etag its SHA-256, createdAt kept from the object
// it replaces. A put that fails leaves the key as it was. Check order: ctx,
// key (ErrInvalidID), contentType, customMetadata names and values valid
// UTF-8, key, contentType and customMetadata together within
// MaxBlobMetaBytes, expectedLength a safe integer not negative
// (ErrInvalidEntry).
func (s *Blobs) Put(ctx context.Context, key string, body io.Reader, opts BlobPutOptions) (BlobRecord, error) {
	if err := firstErr(begin(ctx), checkBlobPut(key, opts)); err != nil {
		return BlobRecord{}, err
	}
	object := s.prefix + randomID()
	h := sha256.New()
	cr := &countingReader{r: body, h: h}
	if err := s.bucket.Put(ctx, object, cr); err != nil {
		return BlobRecord{}, fmt.Errorf("persist: blob %q: upload: %w", key, err)
	}
	now := s.nowMs()
	meta := &driver.BlobMeta{Object: object, BlobRecord: driver.BlobRecord{
		Key: key, Size: cr.n, ETag: hex.EncodeToString(h.Sum(nil)),
		ContentType: ptr(opts.ContentType), CreatedAt: now, UpdatedAt: now,
	}}
	if opts.CustomMetadata != nil {
		meta.CustomMetadata = maps.Clone(opts.CustomMetadata)
	}
	stored, replaced, err := s.d.PutBlob(ctx, meta)
	if err != nil {
		// The row was not written, so nobody can reach the new object.
		_ = s.bucket.Delete(context.WithoutCancel(ctx), object)
		return BlobRecord{}, err
	}
	if replaced != "" && replaced != object {
		// Readers that still hold the old row retry (see Get); an object
		// this delete leaves behind holds no key's bytes.
		_ = s.bucket.Delete(context.WithoutCancel(ctx), replaced)
	}
	return cloneBlobRecord(&stored.BlobRecord), nil
}

func checkBlobPut(key string, opts BlobPutOptions) error {
	if err := firstErr(checkID("key", key), checkOptText("contentType", opts.ContentType)); err != nil {
		return err
	}
	for k, v := range opts.CustomMetadata {
		if err := firstErr(checkText("customMetadata name", k), checkText("customMetadata value", v)); err != nil {
			return err
		}
	}
	if n := BlobMetaSize(key, opts); n > MaxBlobMetaBytes {
		return fmt.Errorf("%w: key, contentType and customMetadata take %d bytes encoded, more than %d (MaxBlobMetaBytes)", ErrInvalidEntry, n, MaxBlobMetaBytes)
	}
	return checkOptInt("expectedLength", opts.ExpectedLength, true)
}

// MaxBlobMetaBytes bounds what a put gives a blob besides its bytes: its
// key, contentType and customMetadata, measured by BlobMetaSize. A blob
// get over HTTP returns them in one reply header (Ckpt-Blob,
// encodeURIComponent of the record's JSON), and a client must be able to
// read that reply: Node's fetch refuses a reply whose header block reaches
// 16 KiB (UND_ERR_HEADERS_OVERFLOW), Go's client allows 10 MiB. 12 KiB
// leaves 4 KiB for the record's other members (size, etag, times, range),
// their names and the reply's other headers, which take under 1.5 KiB, so
// every blob that can be stored can be read back.
const MaxBlobMetaBytes = 12 << 10

// BlobMetaSize is the size MaxBlobMetaBytes bounds: the key, contentType
// and every customMetadata name and value, each counted as the most it can
// take once written as a JSON string and then percent-encoded. A byte
// counts 1 when it is an ASCII letter, digit, '-', '_', '.' or '~' (never
// encoded); 8 when it is a control character, '"' or '\' (a JSON escape
// such as \u001f, whose backslash is percent-encoded); 3 otherwise (one
// %XX). Each string adds 9: its two quotes and a separator, encoded. ASCII
// text of the safe kind thus gets 12 KiB, and any text at least 1.5 KiB.
func BlobMetaSize(key string, opts BlobPutOptions) int {
	n := encodedSize(key)
	if opts.ContentType != nil {
		n += encodedSize(*opts.ContentType)
	}
	for k, v := range opts.CustomMetadata {
		n += encodedSize(k) + encodedSize(v)
	}
	return n
}

// encodedSize is one string's share of BlobMetaSize.
func encodedSize(s string) int {
	n := 9
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '-', c == '_', c == '.', c == '~':
			n++
		case c < 0x20, c == '"', c == '\\':
			n += 8
		default:
			n += 3
		}
	}
	return n
}

// maxReadAttempts bounds Get's retries when a concurrent Put or Delete
// removes the object between reading the row and opening the bytes. Each
// retry follows a version committed after the one it missed (a row that
// still names a missing object fails at once), so only a key replaced
// faster than a read can open it uses them up.
const maxReadAttempts = 64

// Get returns the blob's metadata and bytes, or nil when the key holds
// none. With rng it serves only that slice and reports it in Range, while
// Size stays the whole object's. Check order: ctx, key (ErrInvalidID),
// range offset and length safe integers not negative (ErrInvalidEntry),
// then the offset inside the object (ErrRangeNotSatisfiable; an empty
// object has no satisfiable range).
func (s *Blobs) Get(ctx context.Context, key string, rng *BlobRange) (*BlobObject, error) {
	if err := firstErr(begin(ctx), CheckBlobGet(key, rng)); err != nil {
		return nil, err
	}
	missing := "" // the object a previous attempt found gone
	for attempt := 1; ; attempt++ {
		meta, err := s.d.GetBlob(ctx, key)
		if err != nil || meta == nil {
			return nil, err
		}
		if meta.Object == missing {
			// The row still names the object that is gone: not a
			// replacement racing this read, but a row without its bytes.
			return nil, fmt.Errorf("persist: blob %q: read: object %q: %w", key, missing, blobs.ErrNotFound)
		}
		obj := &BlobObject{BlobRecord: cloneBlobRecord(&meta.BlobRecord)}
		var rc io.ReadCloser
		if rng == nil {
			rc, err = s.bucket.Get(ctx, meta.Object)
		} else {
			if rng.Offset >= meta.Size {
				return nil, fmt.Errorf("%w: offset %d, object %q has %d bytes", ErrRangeNotSatisfiable, rng.Offset, key, meta.Size)
			}
			n := meta.Size - rng.Offset
			if rng.Length != nil && *rng.Length < n {
				n = *rng.Length
			}
			obj.Range = &ServedRange{Offset: rng.Offset, Length: n}
			rc, err = s.openRange(ctx, meta.Object, rng.Offset, n)
		}
		if errors.Is(err, blobs.ErrNotFound) && attempt < maxReadAttempts {
			// Replaced or deleted since the row was read: each retry
			// follows a newer committed version, so it makes progress.
			missing = meta.Object
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("persist: blob %q: read: %w", key, err)
		}
		obj.Body = rc
		return obj, nil
	}
}

// openRange opens n bytes of object from offset.
func (s *Blobs) openRange(ctx context.Context, object string, offset, n int64) (io.ReadCloser, error) {
	if rg, ok := s.bucket.(RangeGetter); ok {
		return rg.GetRange(ctx, object, offset, n)
	}
	rc, err := s.bucket.Get(ctx, object)
	if err != nil {
		return nil, err
	}
	if _, err := io.CopyN(io.Discard, rc, offset); err != nil {
		rc.Close()
		return nil, fmt.Errorf("skip to offset %d: %w", offset, err)
	}
	return struct {
		io.Reader
		io.Closer
	}{io.LimitReader(rc, n), rc}, nil
}

// Head returns the blob's metadata, or nil. Check order: ctx, key.
func (s *Blobs) Head(ctx context.Context, key string) (*BlobRecord, error) {
	if err := beginID(ctx, "key", key); err != nil {
		return nil, err
	}
	meta, err := s.d.GetBlob(ctx, key)
	if err != nil || meta == nil {
		return nil, err
	}
	r := cloneBlobRecord(&meta.BlobRecord)
	return &r, nil
}

// Delete removes the blob; an absent key is a no-op. Check order: ctx, key.
func (s *Blobs) Delete(ctx context.Context, key string) error {
	if err := beginID(ctx, "key", key); err != nil {
		return err
	}
	object, err := s.d.DeleteBlob(ctx, key)
	if err != nil {
		return err
	}
	if object != "" {
		// The key is gone once the row is; an object this leaves behind
		// holds no key's bytes.
		_ = s.bucket.Delete(context.WithoutCancel(ctx), object)
	}
	return nil
}

// List returns the blobs whose key starts with opts.Prefix (literally,
// case-sensitively) in ascending byte order of the key, after opts.Cursor.
// With a limit, a page that stops short of the matching keys is Truncated
// and its Cursor is its last key; limit 0 gives an empty, untruncated page.
// Check order: ctx, prefix and cursor valid UTF-8, limit not negative
// (ErrInvalidEntry).
func (s *Blobs) List(ctx context.Context, opts BlobListOptions) (BlobListPage, error) {
	if err := firstErr(begin(ctx), CheckBlobList(opts)); err != nil {
		return BlobListPage{}, err
	}
	want := -1 // no limit
	if opts.Limit != nil {
		want = *opts.Limit
	}
	page := BlobListPage{Objects: []BlobRecord{}}
	if want == 0 {
		return page, nil
	}
	after := opts.Cursor
	for {
		n := driver.MaxListLimit
		if want >= 0 && want+1-len(page.Objects) < n {
			n = want + 1 - len(page.Objects) // one more, to know whether more follow
		}
		rows, err := s.d.ListBlobs(ctx, opts.Prefix, after, n)
		if err != nil {
			return BlobListPage{}, err
		}
		for _, r := range rows {
			if r.Key <= after || len(r.Key) < len(opts.Prefix) || r.Key[:len(opts.Prefix)] != opts.Prefix {
				return BlobListPage{}, fmt.Errorf("%w: driver listed %q out of order or outside prefix %q", driver.ErrCorrupt, r.Key, opts.Prefix)
			}
			after = r.Key
			if want >= 0 && len(page.Objects) == want {
				page.Truncated, page.Cursor = true, page.Objects[want-1].Key
				return page, nil
			}
			page.Objects = append(page.Objects, cloneBlobRecord(&r.BlobRecord))
		}
		if len(rows) < n {
			return page, nil
		}
		if err := ctx.Err(); err != nil {
			return BlobListPage{}, err
		}
	}
}

// countingReader hashes and counts what it reads.
type countingReader struct {
	r io.Reader
	h hash.Hash
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.h.Write(p[:n])
	c.n += int64(n)
	return n, err
}

// randomID names one put's object: 128 random bits, so two puts never
// share an object.
func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
