package blobs

// MemBucket invariants: objects live in a B-tree ordered by key bytes, so
// List is an in-order walk. Stored byte slices are never written after Put
// publishes them, so Get hands out readers over them without copying. List
// holds the lock only while it copies one page of at most memListPage
// entries, never while it yields: the consumer may Put or Delete (the sweep
// deletes while it lists) without deadlocking, and memory stays bounded.
// Put, Touch, Delete and DeleteOlder change the tree only under the write
// lock, so DeleteOlder's check and deletion are one step for the others.
// An object's bytes are held in pieces of at most memMaxPiece bytes, each
// allocated once at the size it ends up with (the last trimmed), so a Put
// of n bytes holds n plus one piece at its peak, not the two or three times
// n that growing one slice costs.

import (
	"bytes"
	"context"
	"io"
	"iter"
	"strings"
	"sync"
	"time"

	"github.com/google/btree"
)

// memListPage is how many entries List copies per lock hold.
const memListPage = 256

// memFirstPiece and memMaxPiece bound the pieces an object's bytes are read
// into: small objects take one small allocation, large ones pieces of 1 MiB.
const (
	memFirstPiece = 4 << 10
	memMaxPiece   = 1 << 20
)

// MemOptions configures a memory bucket. The zero value is valid.
type MemOptions struct {
	// Now stamps each Put's ModTime; nil means time.Now. Tests pass their
	// own clock to make objects old without sleeping.
	Now func() time.Time
}

// MemBucket is a Bucket held in process memory. Create one with NewMem.
type MemBucket struct {
	now  func() time.Time
	mu   sync.RWMutex
	tree *btree.BTreeG[*memObject]
}

type memObject struct {
	key     string
	pieces  [][]byte // the bytes, in order; never written after Put
	size    int64
	modTime time.Time
}

// reader returns a reader over the object's bytes.
func (o *memObject) reader() io.Reader {
	if len(o.pieces) == 1 {
		return bytes.NewReader(o.pieces[0])
	}
	rs := make([]io.Reader, len(o.pieces))
	for i, p := range o.pieces {
		rs[i] = bytes.NewReader(p)
	}
	return io.MultiReader(rs...)
}

// readPieces reads r to its end into pieces that double from memFirstPiece
// to memMaxPiece; the last one is trimmed when it wastes more than an
// eighth of itself.
func readPieces(r io.Reader) ([][]byte, int64, error) {
	var pieces [][]byte
	var size int64
	n := memFirstPiece
	for {
		p := make([]byte, n)
		k, err := io.ReadFull(r, p)
		size += int64(k)
		if err == nil {
			pieces = append(pieces, p)
			n = min(2*n, memMaxPiece)
			continue
		}
		if err != io.EOF && err != io.ErrUnexpectedEOF {
			return nil, 0, err
		}
		if k > 0 || len(pieces) == 0 {
			if n-k > n/8 {
				p = append([]byte(nil), p[:k]...)
			}
			pieces = append(pieces, p[:k])
		}
		return pieces, size, nil
	}
}

func memLess(a, b *memObject) bool { return a.key < b.key }

// NewMem returns an empty memory bucket.
func NewMem(opts MemOptions) *MemBucket {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	return &MemBucket{now: now, tree: btree.NewG(32, memLess)}
}

// checkKey is the start of every keyed operation: an invalid key is
// reported before a done context.
func checkKey(ctx context.Context, key string) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	return ctx.Err()
}

func (m *MemBucket) lookup(key string) (*memObject, bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.tree.Get(&memObject{key: key})
}

// Get implements Bucket.
func (m *MemBucket) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := checkKey(ctx, key); err != nil {
		return nil, err
	}
	o, ok := m.lookup(key)
	if !ok {
		return nil, ErrNotFound
	}
	return io.NopCloser(o.reader()), nil
}

// Head implements Bucket.
func (m *MemBucket) Head(ctx context.Context, key string) (Object, error) {
	if err := checkKey(ctx, key); err != nil {
		return Object{}, err
	}
	o, ok := m.lookup(key)
	if !ok {
		return Object{}, ErrNotFound
	}
	return Object{Key: o.key, Size: o.size, ModTime: o.modTime}, nil
}

// Put implements Bucket. The bytes are read completely before the object is
// published, which is what makes Put atomic.
func (m *MemBucket) Put(ctx context.Context, key string, r io.Reader) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	pieces, size, err := readPieces(ctxReader{ctx, r})
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tree.ReplaceOrInsert(&memObject{key: key, pieces: pieces, size: size, modTime: m.stamp(key)})
	return nil
}

// stamp is the ModTime of a Put or Touch of key published now; the caller
// holds the write lock. The clock is read under the lock, so stamps follow
// the order in which objects are published, and never below the object's
// current ModTime: a Put that read the clock early and published late
// would otherwise set back an object that a capture had just freshened,
// and the sweep's safety condition (docs/sweep.md) relies on a ModTime
// never going down.
func (m *MemBucket) stamp(key string) time.Time {
	now := m.now()
	if o, ok := m.tree.Get(&memObject{key: key}); ok && o.modTime.After(now) {
		return o.modTime
	}
	return now
}

// Delete implements Bucket.
func (m *MemBucket) Delete(ctx context.Context, key string) error {
	if err := checkKey(ctx, key); err != nil {
		return err
	}
	m.mu.Lock()
	m.tree.Delete(&memObject{key: key})
	m.mu.Unlock()
	return nil
}

// List implements Bucket.
func (m *MemBucket) List(ctx context.Context, prefix string) iter.Seq2[Object, error] {
	if err := ValidatePrefix(prefix); err != nil {
		return ErrSeq(err)
	}
	return func(yield func(Object, error) bool) {
		page := make([]Object, 0, memListPage)
		from, inclusive := prefix, true
		for {
			if err := ctx.Err(); err != nil {
				yield(Object{}, err)
				return
			}
			page = page[:0]
			done := true
			m.mu.RLock()
			m.tree.AscendGreaterOrEqual(&memObject{key: from}, func(o *memObject) bool {
				if !inclusive && o.key == from {
					return true
				}
				if !strings.HasPrefix(o.key, prefix) {
					return false
				}
				if len(page) == memListPage {
					done = false
					return false
				}
				page = append(page, Object{Key: o.key, Size: o.size, ModTime: o.modTime})
				return true
			})
			m.mu.RUnlock()
			for _, o := range page {
				if !yield(o, nil) {
					return
				}
			}
			if done {
				return
			}
			from, inclusive = page[len(page)-1].Key, false
		}
	}
}

// Len returns the number of objects in the bucket.
func (m *MemBucket) Len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.tree.Len()
}

// Touch implements Toucher: it stamps the object with the bucket's clock.
// The object is replaced by a copy with the new time, never changed in
// place, because List and Head hand out what they read without a lock.
func (m *MemBucket) Touch(ctx context.Context, key string) error {
	if err := checkKey(ctx, key); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.tree.Get(&memObject{key: key})
	if !ok {
		return ErrNotFound
	}
	m.tree.ReplaceOrInsert(&memObject{key: key, pieces: o.pieces, size: o.size, modTime: m.stamp(key)})
	return nil
}

// DeleteOlder implements OlderDeleter: the ModTime check and the deletion
// happen under one hold of the lock that Put and Touch take.
func (m *MemBucket) DeleteOlder(ctx context.Context, key string, before time.Time) (bool, error) {
	if err := checkKey(ctx, key); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.tree.Get(&memObject{key: key})
	if !ok || !o.modTime.Before(before) {
		return false, nil
	}
	m.tree.Delete(o)
	return true, nil
}
