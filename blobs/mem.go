package blobs

// MemBucket invariants: objects live in a B-tree ordered by key bytes, so
// List is an in-order walk. Stored byte slices are never written after Put
// publishes them, so Get hands out readers over them without copying. List
// holds the lock only while it copies one page of at most memListPage
// entries, never while it yields: the consumer may Put or Delete (the sweep
// deletes while it lists) without deadlocking, and memory stays bounded.
// Put, Touch, Delete and DeleteOlder change the tree only under the write
// lock, so DeleteOlder's check and deletion are one step for the others.

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
	data    []byte
	modTime time.Time
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
	return io.NopCloser(bytes.NewReader(o.data)), nil
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
	return Object{Key: o.key, Size: int64(len(o.data)), ModTime: o.modTime}, nil
}

// Put implements Bucket. The bytes are read completely before the object is
// published, which is what makes Put atomic.
func (m *MemBucket) Put(ctx context.Context, key string, r io.Reader) error {
	if err := ValidateKey(key); err != nil {
		return err
	}
	data, err := io.ReadAll(ctxReader{ctx, r})
	if err != nil {
		return err
	}
	if cap(data)-len(data) > len(data)/8 {
		// ReadAll grows its buffer geometrically; keep only what is used,
		// since the object stays in memory as long as the bucket.
		data = append([]byte(nil), data...)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tree.ReplaceOrInsert(&memObject{key: key, data: data, modTime: m.stamp(key)})
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
				page = append(page, Object{Key: o.key, Size: int64(len(o.data)), ModTime: o.modTime})
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
	m.tree.ReplaceOrInsert(&memObject{key: key, data: o.data, modTime: m.stamp(key)})
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
