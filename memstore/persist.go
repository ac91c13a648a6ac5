package memstore

// The persistence driver: the in-memory reference driver of the
// persistence contract (package persist/driver). Every method is one step
// under the key space's lock, over maps that are sorted when listed. It is
// the model the other engines' persistence drivers are compared with, so
// it is written to be obviously right rather than fast; state lives as
// long as the Persistence value.
//
// Invariants, guarded by the key space's lock (space.mu):
//   - a stored record is never modified in place: an update stores a new
//     value, so a record handed out stays as it was;
//   - threadRuns and threadGenRuns hold exactly the ids of the runs and
//     generation runs of each thread;
//   - activeRuns holds exactly the ids of the running runs of each thread,
//     and no thread without one;
//   - a lock's fence only grows, and its entry is never dropped;
//   - ops holds the op token of every commit batch that succeeded with one
//     in the last contract.OpTokenTTL, in the key space's one table, beside
//     the checkpoint driver's tokens.

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/ckptstore/ckptstore/persist/driver"
)

// PersistenceOptions configure a Persistence made by NewPersistence.
type PersistenceOptions struct {
	// Now is the store's clock, by which lock leases expire and op tokens
	// are forgotten; nil means time.Now. Tests pass their own to move the
	// store's time apart from the holder's.
	Now func() time.Time
}

// Persistence is the in-memory persistence driver (persist/driver.Driver
// and Porter). It is safe for concurrent use.
type Persistence struct {
	*space // the key space's lock, clock and op tokens

	runs    map[string]*driver.RunRecord
	genRuns map[string]*driver.GenerationRunRecord
	// threadRuns and threadGenRuns index run ids by thread, so that the
	// per-turn calls (findActiveRun, findLatestForThread) cost the
	// thread's runs, not the store's. A run's thread never changes.
	threadRuns    map[string][]string
	threadGenRuns map[string][]string
	// activeRuns indexes the running runs by thread, so that findActiveRun,
	// once per chat turn, costs the thread's running runs (none or one, as
	// a rule), not every run the thread ever had.
	activeRuns map[string]map[string]struct{}
	interrupts map[string]*driver.InterruptRecord
	metadata   map[metaKey]json.RawMessage
	artifacts  map[string]*driver.ArtifactRecord
	blobs      map[string]*driver.BlobMeta
	locks      map[string]*lock
}

// metaKey is the (namespace, key) identity as two fields, so no two pairs
// can collide.
type metaKey struct{ namespace, key string }

// lock is one key's lease and queue.
type lock struct {
	holder  string
	expires time.Time
	fence   int64
	queue   []waiter
	changed chan struct{} // closed and replaced when the lock changes
}

type waiter struct {
	token   string
	expires time.Time
}

var _ driver.Driver = (*Persistence)(nil)

// NewPersistence returns an empty persistence driver of a key space of its
// own, with a lock, clock and op-token table of its own. Driver.Persistence
// returns the one that shares a checkpoint driver's.
func NewPersistence(opts PersistenceOptions) *Persistence {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return newPersistence(newSpace(opts.Now))
}

// newPersistence returns an empty persistence driver over sp.
func newPersistence(sp *space) *Persistence {
	return &Persistence{
		space:         sp,
		runs:          map[string]*driver.RunRecord{},
		genRuns:       map[string]*driver.GenerationRunRecord{},
		threadRuns:    map[string][]string{},
		activeRuns:    map[string]map[string]struct{}{},
		threadGenRuns: map[string][]string{},
		interrupts:    map[string]*driver.InterruptRecord{},
		metadata:      map[metaKey]json.RawMessage{},
		artifacts:     map[string]*driver.ArtifactRecord{},
		blobs:         map[string]*driver.BlobMeta{},
		locks:         map[string]*lock{},
	}
}

// page returns the records of all that come strictly after `after` in
// cmp's order, at most limit of them.
func page[T any](all []*T, cmp func(a, b *T) int, pos func(*T) (int64, string), after *driver.Position, limit int) []*T {
	slices.SortFunc(all, cmp)
	out := []*T{}
	for _, r := range all {
		if at, id := pos(r); after.After(at, id) {
			out = append(out, r)
			if len(out) == limit {
				break
			}
		}
	}
	return out
}

// get is m[id], read under the lock. The maps are made by New and never
// replaced, so passing one in needs no lock.
func get[K comparable, V any](d *Persistence, m map[K]V, id K) (V, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return m[id], nil
}

// change replaces m[id] with next(m[id]) when m holds id, under the lock;
// it reports whether m held it.
func change[T any](d *Persistence, m map[string]*T, id string, next func(*T) *T) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	cur, ok := m[id]
	if ok {
		m[id] = next(cur)
	}
	return ok, nil
}

// createOrResume returns m[id] when m holds id, and otherwise stores rec
// as m[id], indexed under its thread in byThread, and returns it.
func createOrResume[T any](d *Persistence, m map[string]*T, byThread map[string][]string, id, threadID string, rec *T) (*T, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if cur, ok := m[id]; ok {
		return cur, nil
	}
	m[id] = rec
	byThread[threadID] = append(byThread[threadID], id)
	return rec, nil
}

// Runs.

// CreateOrResumeRun implements driver.Runs.
func (d *Persistence) CreateOrResumeRun(_ context.Context, rec *driver.RunRecord) (*driver.RunRecord, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if cur, ok := d.runs[rec.RunID]; ok {
		return cur, nil
	}
	d.storeRun(rec)
	return rec, nil
}

// storeRun stores a new run and indexes it by thread (and as running when
// it is). d.mu is held.
func (d *Persistence) storeRun(r *driver.RunRecord) {
	d.runs[r.RunID] = r
	d.threadRuns[r.ThreadID] = append(d.threadRuns[r.ThreadID], r.RunID)
	d.indexActive(r)
}

// indexActive puts r in its thread's set of running runs, or takes it out,
// by its status. d.mu is held.
func (d *Persistence) indexActive(r *driver.RunRecord) {
	set := d.activeRuns[r.ThreadID]
	if r.Status == driver.RunRunning {
		if set == nil {
			set = map[string]struct{}{}
			d.activeRuns[r.ThreadID] = set
		}
		set[r.RunID] = struct{}{}
		return
	}
	if set != nil {
		delete(set, r.RunID)
		if len(set) == 0 {
			delete(d.activeRuns, r.ThreadID)
		}
	}
}

// UpdateRun implements driver.Runs. A patch never moves a run to another
// thread, so only its status can change its place in activeRuns.
func (d *Persistence) UpdateRun(_ context.Context, runID string, patch driver.RunPatch) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	cur, ok := d.runs[runID]
	if !ok {
		return false, nil
	}
	next := patch.Apply(cur)
	d.runs[runID] = next
	d.indexActive(next)
	return true, nil
}

// GetRun implements driver.Runs.
func (d *Persistence) GetRun(_ context.Context, runID string) (*driver.RunRecord, error) {
	return get(d, d.runs, runID)
}

// ActiveRun implements driver.Runs.
func (d *Persistence) ActiveRun(_ context.Context, threadID string) (*driver.RunRecord, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var best *driver.RunRecord
	for id := range d.activeRuns[threadID] {
		if r := d.runs[id]; best == nil || driver.RunOrder(r, best) > 0 {
			best = r
		}
	}
	return best, nil
}

func runPos(r *driver.RunRecord) (int64, string) { return r.StartedAt, r.RunID }

// ThreadRuns implements driver.Runs.
func (d *Persistence) ThreadRuns(_ context.Context, threadID string, after *driver.Position, limit int) ([]*driver.RunRecord, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var all []*driver.RunRecord
	for _, id := range d.threadRuns[threadID] {
		all = append(all, d.runs[id])
	}
	return page(all, driver.RunOrder, runPos, after, limit), nil
}

// ReclaimableRuns implements driver.Runs.
func (d *Persistence) ReclaimableRuns(_ context.Context, cutoff int64, after *driver.Position, limit int) ([]*driver.RunRecord, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var all []*driver.RunRecord
	for _, r := range d.runs {
		if r.Status == driver.RunRunning && r.DetachedSince != nil && *r.DetachedSince <= cutoff {
			all = append(all, r)
		}
	}
	return page(all, driver.ReclaimOrder, func(r *driver.RunRecord) (int64, string) { return *r.DetachedSince, r.RunID }, after, limit), nil
}

// Generation runs.

// CreateOrResumeGenerationRun implements driver.GenerationRuns.
func (d *Persistence) CreateOrResumeGenerationRun(_ context.Context, rec *driver.GenerationRunRecord) (*driver.GenerationRunRecord, error) {
	return createOrResume(d, d.genRuns, d.threadGenRuns, rec.RunID, rec.ThreadID, rec)
}

// UpdateGenerationRun implements driver.GenerationRuns.
func (d *Persistence) UpdateGenerationRun(_ context.Context, runID string, patch driver.GenerationRunPatch) (bool, error) {
	return change(d, d.genRuns, runID, patch.Apply)
}

// GetGenerationRun implements driver.GenerationRuns.
func (d *Persistence) GetGenerationRun(_ context.Context, runID string) (*driver.GenerationRunRecord, error) {
	return get(d, d.genRuns, runID)
}

// LatestGenerationRun implements driver.GenerationRuns.
func (d *Persistence) LatestGenerationRun(_ context.Context, threadID string) (*driver.GenerationRunRecord, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var best *driver.GenerationRunRecord
	for _, id := range d.threadGenRuns[threadID] {
		if r := d.genRuns[id]; best == nil || r.StartedAt > best.StartedAt || r.StartedAt == best.StartedAt && r.RunID > best.RunID {
			best = r
		}
	}
	return best, nil
}

// Interrupts.

// CreateInterrupt implements driver.Interrupts.
func (d *Persistence) CreateInterrupt(_ context.Context, rec *driver.InterruptRecord) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.interrupts[rec.InterruptID]; !ok {
		d.interrupts[rec.InterruptID] = rec
	}
	return nil
}

// ResolveInterrupt implements driver.Interrupts.
func (d *Persistence) ResolveInterrupt(_ context.Context, id string, at int64, response json.RawMessage) (bool, error) {
	return change(d, d.interrupts, id, func(cur *driver.InterruptRecord) *driver.InterruptRecord { return cur.Resolved(at, response) })
}

// CancelInterrupt implements driver.Interrupts.
func (d *Persistence) CancelInterrupt(_ context.Context, id string, at int64) (bool, error) {
	return change(d, d.interrupts, id, func(cur *driver.InterruptRecord) *driver.InterruptRecord { return cur.Cancelled(at) })
}

// CommitInterrupts implements driver.Interrupts.
func (d *Persistence) CommitInterrupts(_ context.Context, entries []driver.InterruptCommitEntry, at int64, opToken string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now()
	if opToken != "" && d.ops.done(opToken, opCommit, now) != nil {
		return nil
	}
	for _, e := range entries {
		if err := driver.Committable(e.InterruptID, d.interrupts[e.InterruptID]); err != nil {
			return err
		}
	}
	for _, e := range entries {
		d.interrupts[e.InterruptID] = e.Commit(d.interrupts[e.InterruptID], at)
	}
	if opToken != "" {
		d.ops.record(opToken, &opRecord{kind: opCommit}, now)
	}
	return nil
}

// GetInterrupt implements driver.Interrupts.
func (d *Persistence) GetInterrupt(_ context.Context, id string) (*driver.InterruptRecord, error) {
	return get(d, d.interrupts, id)
}

// ListInterrupts implements driver.Interrupts.
func (d *Persistence) ListInterrupts(_ context.Context, scope driver.InterruptScope, after *driver.Position, limit int) ([]*driver.InterruptRecord, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var all []*driver.InterruptRecord
	for _, r := range d.interrupts {
		in := scope.ThreadID != "" && r.ThreadID == scope.ThreadID || scope.RunID != "" && r.RunID == scope.RunID
		if in && (!scope.PendingOnly || r.Status == driver.InterruptPending) {
			all = append(all, r)
		}
	}
	return page(all, driver.InterruptOrder, func(r *driver.InterruptRecord) (int64, string) { return r.RequestedAt, r.InterruptID }, after, limit), nil
}

// Metadata.

// GetMetadata implements driver.Metadata.
func (d *Persistence) GetMetadata(_ context.Context, namespace, key string) (json.RawMessage, error) {
	return get(d, d.metadata, metaKey{namespace, key})
}

// SetMetadata implements driver.Metadata.
func (d *Persistence) SetMetadata(_ context.Context, namespace, key string, value json.RawMessage) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.metadata[metaKey{namespace, key}] = value
	return nil
}

// DeleteMetadata implements driver.Metadata.
func (d *Persistence) DeleteMetadata(_ context.Context, namespace, key string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.metadata, metaKey{namespace, key})
	return nil
}

// Artifacts.

// SaveArtifact implements driver.Artifacts.
func (d *Persistence) SaveArtifact(_ context.Context, rec *driver.ArtifactRecord) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.artifacts[rec.ArtifactID] = rec
	return nil
}

// GetArtifact implements driver.Artifacts.
func (d *Persistence) GetArtifact(_ context.Context, artifactID string) (*driver.ArtifactRecord, error) {
	return get(d, d.artifacts, artifactID)
}

// ListArtifacts implements driver.Artifacts.
func (d *Persistence) ListArtifacts(_ context.Context, scope driver.ArtifactScope, after *driver.Position, limit int) ([]*driver.ArtifactRecord, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var all []*driver.ArtifactRecord
	for _, r := range d.artifacts {
		if scope.ThreadID != "" && r.ThreadID == scope.ThreadID || scope.RunID != "" && r.RunID == scope.RunID {
			all = append(all, r)
		}
	}
	return page(all, driver.ArtifactOrder, func(r *driver.ArtifactRecord) (int64, string) { return r.CreatedAt, r.ArtifactID }, after, limit), nil
}

// DeleteArtifact implements driver.Artifacts.
func (d *Persistence) DeleteArtifact(_ context.Context, artifactID string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.artifacts, artifactID)
	return nil
}

// DeleteRunArtifacts implements driver.Artifacts.
func (d *Persistence) DeleteRunArtifacts(_ context.Context, runID string, limit int) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for id, r := range d.artifacts {
		if n == limit {
			break
		}
		if r.RunID == runID {
			delete(d.artifacts, id)
			n++
		}
	}
	return n, nil
}

// Blobs.

// PutBlob implements driver.Blobs.
func (d *Persistence) PutBlob(_ context.Context, meta *driver.BlobMeta) (*driver.BlobMeta, string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	replaced := ""
	if cur, ok := d.blobs[meta.Key]; ok {
		next := *meta
		next.CreatedAt = cur.CreatedAt
		meta, replaced = &next, cur.Object
	}
	d.blobs[meta.Key] = meta
	return meta, replaced, nil
}

// GetBlob implements driver.Blobs.
func (d *Persistence) GetBlob(_ context.Context, key string) (*driver.BlobMeta, error) {
	return get(d, d.blobs, key)
}

// DeleteBlob implements driver.Blobs.
func (d *Persistence) DeleteBlob(_ context.Context, key string) (string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	cur, ok := d.blobs[key]
	if !ok {
		return "", nil
	}
	delete(d.blobs, key)
	return cur.Object, nil
}

// ListBlobs implements driver.Blobs.
func (d *Persistence) ListBlobs(_ context.Context, prefix, after string, limit int) ([]*driver.BlobMeta, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var keys []string
	for k := range d.blobs {
		if strings.HasPrefix(k, prefix) && k > after {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	out := []*driver.BlobMeta{}
	for _, k := range keys[:min(limit, len(keys))] {
		out = append(out, d.blobs[k])
	}
	return out, nil
}

// Locks.

// state returns key's lock with the expired waiters dropped (and the
// watchers told when that changed the queue), creating it when absent. A
// key's entry is never dropped: it keeps the fence, which must never go
// back.
func (d *Persistence) state(key string, now time.Time) *lock {
	l := d.locks[key]
	if l == nil {
		l = &lock{}
		d.locks[key] = l
	}
	live := l.queue[:0]
	for _, w := range l.queue {
		if now.Before(w.expires) {
			live = append(live, w)
		}
	}
	if len(live) != len(l.queue) {
		clear(l.queue[len(live):])
		l.queue = live
		l.notify()
	}
	return l
}

// notify wakes the watchers of a change.
func (l *lock) notify() {
	if l.changed != nil {
		close(l.changed)
		l.changed = nil
	}
}

// live reports whether the lease is held and unexpired at now.
func (l *lock) live(now time.Time) bool { return l.holder != "" && now.Before(l.expires) }

func (l *lock) place(token string) int {
	return slices.IndexFunc(l.queue, func(w waiter) bool { return w.token == token })
}

// AcquireLock implements driver.Locks.
func (d *Persistence) AcquireLock(_ context.Context, req driver.LockRequest) (driver.LockState, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now()
	l := d.state(req.Key, now)
	st := driver.LockState{Now: now, Fence: l.fence}
	if l.live(now) {
		if l.holder == req.Token {
			st.Held, st.ExpiresAt = true, l.expires
			return st, nil
		}
		st.ExpiresAt = l.expires
	}
	i := l.place(req.Token)
	if !l.live(now) && (len(l.queue) == 0 || i == 0) {
		if i == 0 {
			l.queue = slices.Delete(l.queue, 0, 1)
		}
		l.holder, l.expires = req.Token, now.Add(req.Lease)
		l.fence++
		l.notify()
		st.Held, st.Fence, st.ExpiresAt = true, l.fence, l.expires
		return st, nil
	}
	if i < 0 {
		l.queue = append(l.queue, waiter{req.Token, now.Add(req.Lease)})
		i = len(l.queue) - 1
	} else {
		l.queue[i].expires = now.Add(req.Lease)
	}
	st.Ahead = i
	return st, nil
}

// RenewLock implements driver.Locks.
func (d *Persistence) RenewLock(_ context.Context, key, token string, lease time.Duration) (driver.LockState, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now()
	l := d.state(key, now)
	if l.holder != token || !l.live(now) {
		return driver.LockState{Now: now, Fence: l.fence}, fmt.Errorf("%w: %q", driver.ErrLockLost, key)
	}
	l.expires = now.Add(lease)
	return driver.LockState{Held: true, Fence: l.fence, Now: now, ExpiresAt: l.expires}, nil
}

// ReleaseLock implements driver.Locks.
func (d *Persistence) ReleaseLock(_ context.Context, key, token string) (driver.LockState, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now()
	l := d.state(key, now)
	st := driver.LockState{Now: now, Fence: l.fence}
	if l.holder == token {
		st.Held = l.live(now)
		l.holder, l.expires = "", time.Time{}
		l.notify()
	} else if i := l.place(token); i >= 0 {
		l.queue = slices.Delete(l.queue, i, i+1)
		l.notify()
	}
	return st, nil
}

// WatchLock implements driver.Locks: the channel closes on the next grant,
// release, or removal from the queue. A lease that expires changes nothing
// until a step notices it, so a waiter wakes for that by its own timer.
func (d *Persistence) WatchLock(_ context.Context, key string) (<-chan struct{}, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	l := d.state(key, d.now())
	if l.changed == nil {
		l.changed = make(chan struct{})
	}
	return l.changed, nil
}

// Export and import (driver.Porter).

var _ driver.Porter = (*Persistence)(nil)

// dumpPage is how many records one locked read of Dump takes: one pass
// over a kind's map a page, so a large page makes few passes, and the
// page is pointers (some 50 bytes a record).
var dumpPage = 4096

// Dump implements driver.Porter: page by page, each page one read under
// the lock that selects the dumpPage smallest resume keys after the
// position from the kind's map (one pass over the map, memory bounded by
// the page), each kind in resume key order (PositionOf). A resume costs
// one pass over the map of its kind a page, nothing of the records
// before it.
func (d *Persistence) Dump(ctx context.Context, after driver.DumpPosition) iter.Seq2[driver.Record, error] {
	return func(yield func(driver.Record, error) bool) {
		kinds, err := after.KindsAfter()
		if err != nil {
			yield(driver.Record{}, err)
			return
		}
		for _, at := range kinds {
			for {
				if err := ctx.Err(); err != nil {
					yield(driver.Record{}, err)
					return
				}
				page := d.dumpPage(at)
				// Stored records are never modified in place, so the
				// page's pointers stay valid after the lock.
				for _, r := range page {
					if !yield(r, nil) {
						return
					}
				}
				if len(page) < dumpPage {
					break
				}
				at = d.PositionOf(page[len(page)-1])
			}
		}
	}
}

// dumpPage reads the records of at.Kind after at.Key, at most dumpPage,
// in resume key order.
func (d *Persistence) dumpPage(at driver.DumpPosition) []driver.Record {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch at.Kind {
	case driver.KindRun:
		return pageOf(d.runs, at.Key, ident, func(r *driver.RunRecord) driver.Record { return driver.Record{Kind: driver.KindRun, Run: r} })
	case driver.KindGenerationRun:
		return pageOf(d.genRuns, at.Key, ident, func(r *driver.GenerationRunRecord) driver.Record {
			return driver.Record{Kind: driver.KindGenerationRun, GenerationRun: r}
		})
	case driver.KindInterrupt:
		return pageOf(d.interrupts, at.Key, ident, func(r *driver.InterruptRecord) driver.Record {
			return driver.Record{Kind: driver.KindInterrupt, Interrupt: r}
		})
	case driver.KindMetadata:
		var out []driver.Record
		for _, k := range smallestAfter(d.metadata, at.Key, metaResumeKey) {
			out = append(out, driver.Record{Kind: driver.KindMetadata, Metadata: &driver.MetadataEntry{Namespace: k.namespace, Key: k.key, Value: d.metadata[k]}})
		}
		return out
	case driver.KindArtifact:
		return pageOf(d.artifacts, at.Key, ident, func(r *driver.ArtifactRecord) driver.Record {
			return driver.Record{Kind: driver.KindArtifact, Artifact: r}
		})
	case driver.KindBlob:
		return pageOf(d.blobs, at.Key, ident, func(r *driver.BlobMeta) driver.Record { return driver.Record{Kind: driver.KindBlob, Blob: r} })
	}
	return nil
}

func ident(s string) string { return s }

// pageOf is the records of m under the dumpPage smallest resume keys
// after after, in order.
func pageOf[K comparable, V any](m map[K]V, after string, rk func(K) string, rec func(V) driver.Record) []driver.Record {
	ks := smallestAfter(m, after, rk)
	out := make([]driver.Record, len(ks))
	for i, k := range ks {
		out[i] = rec(m[k])
	}
	return out
}

// smallestAfter is the keys of m with the dumpPage smallest resume keys
// (rk) greater than after, in order: one pass, keeping them in a max-heap
// of at most dumpPage keys (a key enters only below its top), then one
// sort of the heap.
func smallestAfter[K comparable, V any](m map[K]V, after string, rk func(K) string) []K {
	type entry struct {
		rk string
		k  K
	}
	h := make([]entry, 0, min(dumpPage, len(m)))
	down := func(i int) { // restores the heap below i
		for {
			c := 2*i + 1
			if c >= len(h) {
				return
			}
			if c+1 < len(h) && h[c+1].rk > h[c].rk {
				c++
			}
			if h[i].rk >= h[c].rk {
				return
			}
			h[i], h[c] = h[c], h[i]
			i = c
		}
	}
	for k := range m {
		r := rk(k)
		switch {
		case r <= after:
		case len(h) < dumpPage:
			h = append(h, entry{r, k})
			for i := len(h) - 1; i > 0 && h[(i-1)/2].rk < h[i].rk; i = (i - 1) / 2 {
				h[i], h[(i-1)/2] = h[(i-1)/2], h[i]
			}
		case r < h[0].rk:
			h[0] = entry{r, k}
			down(0)
		}
	}
	slices.SortFunc(h, func(a, b entry) int { return strings.Compare(a.rk, b.rk) })
	out := make([]K, len(h))
	for i, e := range h {
		out[i] = e.k
	}
	return out
}

// metaResumeKey is a metadata identity's resume key: the namespace with
// each NUL as NUL 0xff, then NUL NUL, then the key, so that byte order is
// the order of (namespace, key) whatever bytes the namespace holds.
func metaResumeKey(k metaKey) string {
	return strings.ReplaceAll(k.namespace, "\x00", "\x00\xff") + "\x00\x00" + k.key
}

// PositionOf implements driver.Porter: the kind and the record's id (the
// blob key; for metadata, metaResumeKey).
func (d *Persistence) PositionOf(r driver.Record) driver.DumpPosition {
	if r.Kind == driver.KindMetadata && r.Metadata != nil {
		return driver.DumpPosition{Kind: r.Kind, Key: metaResumeKey(metaKey{r.Metadata.Namespace, r.Metadata.Key})}
	}
	return driver.DumpPosition{Kind: r.Kind, Key: r.ID()}
}

// stored returns what the driver holds under r's identity, as a Record,
// or ok false. d.mu is held.
func (d *Persistence) stored(r driver.Record) (driver.Record, bool) {
	out := driver.Record{Kind: r.Kind}
	var ok bool
	switch r.Kind {
	case driver.KindRun:
		out.Run, ok = d.runs[r.Run.RunID]
	case driver.KindGenerationRun:
		out.GenerationRun, ok = d.genRuns[r.GenerationRun.RunID]
	case driver.KindInterrupt:
		out.Interrupt, ok = d.interrupts[r.Interrupt.InterruptID]
	case driver.KindMetadata:
		var v json.RawMessage
		v, ok = d.metadata[metaKey{r.Metadata.Namespace, r.Metadata.Key}]
		out.Metadata = &driver.MetadataEntry{Namespace: r.Metadata.Namespace, Key: r.Metadata.Key, Value: v}
	case driver.KindArtifact:
		out.Artifact, ok = d.artifacts[r.Artifact.ArtifactID]
	case driver.KindBlob:
		out.Blob, ok = d.blobs[r.Blob.Key]
	}
	return out, ok
}

// Load implements driver.Porter: every record is checked before the first
// is stored, under one lock.
func (d *Persistence) Load(ctx context.Context, recs []driver.Record) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	// Checks and repeats first, outside the lock, then the stored
	// content: the order redisstore's and fdbstore's Load report in.
	var uniq []driver.Record
	if err := driver.Distinct(recs, func(r driver.Record) error { uniq = append(uniq, r); return nil }); err != nil {
		return 0, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	var fresh []driver.Record
	for _, r := range uniq {
		cur, ok := d.stored(r)
		switch {
		case !ok:
			fresh = append(fresh, r)
		case !driver.Equal(cur, r):
			return 0, fmt.Errorf("%w: %s %q", driver.ErrRecordConflict, r.Kind, r.ID())
		}
	}
	for _, r := range fresh {
		switch r.Kind {
		case driver.KindRun:
			d.storeRun(r.Run)
		case driver.KindGenerationRun:
			g := r.GenerationRun
			d.genRuns[g.RunID] = g
			d.threadGenRuns[g.ThreadID] = append(d.threadGenRuns[g.ThreadID], g.RunID)
		case driver.KindInterrupt:
			d.interrupts[r.Interrupt.InterruptID] = r.Interrupt
		case driver.KindMetadata:
			d.metadata[metaKey{r.Metadata.Namespace, r.Metadata.Key}] = r.Metadata.Value
		case driver.KindArtifact:
			d.artifacts[r.Artifact.ArtifactID] = r.Artifact
		case driver.KindBlob:
			d.blobs[r.Blob.Key] = r.Blob
		}
	}
	return len(fresh), nil
}
