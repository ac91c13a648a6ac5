// Package memstore is the in-memory ckptstore: the reference implementation
// of the contract and the embedded default. It keeps nothing across
// restarts.
//
// New returns the portable *ckptstore.Store over this package's Driver,
// which implements every method of driver.Store and honours caller op
// tokens. The portable store runs the pure checks (ids, entries, limits,
// the writer's thread, ctx, op tokens) before a Driver method is called, so
// a Driver runs only the state checks (see package driver).
//
// A Driver and its Persistence (Driver.Persistence) are one key space of
// the engine: they share one lock, one clock and one op-token table (type
// space), so every lease of the key space — writer leases and lock leases
// alike — is judged by one clock.
//
// Invariants, all guarded by the key space's lock (space.mu):
//
//   - checkpoints holds every stored checkpoint by id, packed (rec): a
//     private copy that is never modified and never handed out; reads
//     unpack copies of it.
//   - threads[t].cps holds exactly the checkpoints (the same pointers as in
//     checkpoints) whose ThreadID is t, ordered by
//     driver.CompareCheckpoints, so List and ListPage read one thread in
//     order without sorting and never look at other threads.
//   - refs counts, for each key k, the stored checkpoints whose BlobKeys
//     contain k; a key at 0 is absent. It keeps the keys in byte order as
//     a sorted run plus the keys added since, so ListBlobReferences sorts only
//     those (see blobRefs).
//   - threads[t].fence is the highest fence ever issued for t; it only grows.
//   - threads[t].transcript is nil until SaveThread, a fork or an import
//     sets it, and then a private copy of a JSON array.
//   - listed holds exactly the ids of the threads that have a head, a
//     checkpoint or a transcript (a lease alone does not list a thread), so
//     Threads reads one range of it per page.
//   - ops holds the op token of every Append, DeleteHead, fork and
//     AcquireWriter that succeeded with one in the last opTokenTTL, and
//     of every commit batch of the key space's Persistence: one table.
//
// Every method takes the lock, reads the clock once,
// answers a repeat of a committed call by its op token, runs its state
// checks in the order of docs/contract.md, and only then mutates, so a
// failed call changes nothing. One clock reading per call means every
// lease and op-token decision of the call is made at the same instant.
package memstore

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"iter"
	"slices"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/google/btree"
)

// Driver is the in-memory driver.Store. It is safe for concurrent use.
type Driver struct {
	*space // the key space's lock, clock (opts.Now) and op tokens
	opts   ckptstore.Options

	checkpoints map[string]*rec
	threads     map[string]*thread
	refs        blobRefs
	listed      *btree.BTreeG[string] // threads with a head, a checkpoint or a transcript
	persist     *Persistence          // made by the first call of Persistence
}

type thread struct {
	head       string
	cps        cpList          // in List order
	lease      *lease          // nil when released; may be expired
	fence      int64           // highest fence issued, survives release and expiry
	transcript json.RawMessage // nil: none saved
}

// btreeDegree is the degree of the store's B-trees (the listed threads, the
// blob keys): a few levels deep at a million entries.
const btreeDegree = 16

// listLess orders a thread's checkpoints as List returns them, as
// driver.CompareCheckpoints does: by CreatedAt, then by the bytes of the
// id. Ids are unique, so no two stored checkpoints compare equal.
func listLess(a, b *rec) bool {
	if c := cmp.Compare(a.CreatedAt, b.CreatedAt); c != 0 {
		return c < 0
	}
	return a.ID < b.ID
}

type lease struct {
	token     string
	fence     int64
	expiresAt time.Time
}

var _ driver.Store = (*Driver)(nil)

// New returns an empty store. It panics when opts are invalid (see
// ckptstore.Options.Resolve), as a programming error.
func New(opts ckptstore.Options) *ckptstore.Store { return ckptstore.New(NewDriver(opts)) }

// NewDriver returns an empty in-memory driver, for a program that wraps
// it before it builds the portable store (ckptstore.New). It panics as New
// does.
func NewDriver(opts ckptstore.Options) *Driver {
	o, err := opts.Resolve()
	if err != nil {
		panic(err)
	}
	return &Driver{
		space:       newSpace(o.Now),
		opts:        o,
		checkpoints: make(map[string]*rec),
		threads:     make(map[string]*thread),
		refs:        newBlobRefs(),
		listed:      btree.NewG(btreeDegree, func(a, b string) bool { return a < b }),
	}
}

// Persistence returns the persistence driver of s's key space: runs,
// interrupts, metadata, artifacts, blob metadata and locks beside the
// checkpoints. It shares s's lock, clock (the lease clock of s's options)
// and op-token table, so one clock judges writer leases and lock leases
// alike. Every call returns the same value.
func (s *Driver) Persistence() *Persistence {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.persist == nil {
		s.persist = newPersistence(s.space)
	}
	return s.persist
}

// thread returns t's state, creating it when create is set; nil otherwise.
func (s *Driver) thread(id string, create bool) *thread {
	th := s.threads[id]
	if th == nil && create {
		th = &thread{}
		s.threads[id] = th
	}
	return th
}

// relist puts thread id into listed when it has a head, a checkpoint or a
// transcript, and takes it out otherwise. Every write that changes one of
// the three calls it. The caller holds s.mu.
func (s *Driver) relist(id string, th *thread) {
	if th.head != "" || th.cps.Len() > 0 || th.transcript != nil {
		s.listed.ReplaceOrInsert(id)
	} else {
		s.listed.Delete(id)
	}
}

// Get implements driver.Store.
func (s *Driver) Get(ctx context.Context, id string) (*ckptstore.Checkpoint, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.checkpoints[id].Clone(), nil
}

// List implements driver.Store.
func (s *Driver) List(ctx context.Context, threadID string) ([]*ckptstore.Checkpoint, error) {
	s.mu.Lock()
	th := s.threads[threadID]
	var stored []*rec
	if th != nil {
		stored = make([]*rec, 0, th.cps.Len())
		th.cps.Ascend(func(c *rec) bool {
			stored = append(stored, c)
			return true
		})
	}
	s.mu.Unlock()
	return cloneAll(stored), nil // outside the lock: stored checkpoints never change
}

// GetHead implements driver.Store.
func (s *Driver) GetHead(ctx context.Context, threadID string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if th := s.threads[threadID]; th != nil {
		return th.head, nil
	}
	return "", nil
}

// checkWriter returns ErrWriterLost unless w is its thread's live lease at
// now, the clock reading of the call. The writer's thread against the
// write's thread is a pure check, done by the portable store. The caller holds
// s.mu.
func (s *Driver) checkWriter(w ckptstore.Writer, now time.Time) error {
	threadID := w.ThreadID
	th := s.threads[threadID]
	if th == nil || th.lease == nil {
		return driver.NoLeaseError(threadID)
	}
	l := th.lease
	if l.token != w.OwnerToken || l.fence != w.Fence {
		return driver.NewerLeaseError(threadID, l.fence, w.Fence)
	}
	if !now.Before(l.expiresAt) {
		return driver.LeaseExpiredError(threadID, l.expiresAt)
	}
	return nil
}

// Append implements driver.Store.
func (s *Driver) Append(ctx context.Context, cp *ckptstore.Checkpoint, expectedHeadID string, w ckptstore.Writer, token string) error {
	hasToken := token != ""
	c, err := pack(cp) // before the lock: the caller may not change cp meanwhile, but copying is the slow part
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Now()
	if hasToken && s.ops.done(token, opAppend, now) != nil {
		return nil // a retry of an Append that committed
	}
	if err := s.checkWriter(w, now); err != nil {
		return err
	}
	if _, dup := s.checkpoints[c.ID]; dup {
		return driver.DuplicateIDError(c.ID)
	}
	th := s.thread(c.ThreadID, true)
	if th.head != expectedHeadID {
		return driver.StaleHeadError(c.ThreadID, th.head, expectedHeadID)
	}
	if c.ParentCheckpointID != expectedHeadID {
		return driver.ParentMismatchError(c.ParentCheckpointID, expectedHeadID)
	}
	s.insert(th, c, cp, s.checkpoints[expectedHeadID]) // the parent: its files mostly keep their keys
	th.head = c.ID
	s.relist(c.ThreadID, th)
	if hasToken {
		s.ops.record(token, &opRecord{kind: opAppend}, now)
	}
	return nil
}

// insert stores r, packed from c, in th and counts its blobs; it leaves
// the head to the caller. The count table keeps the key strings of c that
// it did not have, and like (nil, or a stored checkpoint whose files r
// likely shares index for index) saves it lookups (see blobRefs.add). The
// caller holds s.mu and calls relist after.
func (s *Driver) insert(th *thread, r *rec, c *ckptstore.Checkpoint, like *rec) {
	s.checkpoints[r.ID] = r
	th.cps.ReplaceOrInsert(r)
	s.refs.add(r, c, like)
}

// remove deletes the stored checkpoint id of th and drops its blob counts.
// The caller holds s.mu and calls relist after.
func (s *Driver) remove(th *thread, id string) {
	c := s.checkpoints[id]
	delete(s.checkpoints, id)
	th.cps.Delete(c)
	s.refs.drop(c)
}

// DeleteHead implements driver.Store.
func (s *Driver) DeleteHead(ctx context.Context, threadID, checkpointID string, w ckptstore.Writer, token string) error {
	hasToken := token != ""
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Now()
	if hasToken && s.ops.done(token, opDeleteHead, now) != nil {
		return nil // a retry of a DeleteHead that committed
	}
	if err := s.checkWriter(w, now); err != nil {
		return err
	}
	th := s.threads[threadID]
	c, ok := s.checkpoints[checkpointID]
	if th.head != checkpointID || !ok || c.ThreadID != threadID {
		return driver.NotHeadError(checkpointID, threadID)
	}
	s.remove(th, checkpointID)
	th.head = c.ParentCheckpointID
	s.relist(threadID, th)
	if hasToken {
		s.ops.record(token, &opRecord{kind: opDeleteHead}, now)
	}
	return nil
}

// DeleteCheckpoints implements driver.Store.
func (s *Driver) DeleteCheckpoints(ctx context.Context, threadID string, keep int, w ckptstore.Writer) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkWriter(w, s.opts.Now()); err != nil {
		return nil, err
	}
	th := s.threads[threadID]
	// The chain from the head back, through checkpoints of this thread.
	// Ids are reusable once deleted, so a parent id can name a newer
	// checkpoint of the same thread (x → y, prune x, append x on y): the
	// walk stops at the first checkpoint it has seen, or it would loop.
	var chain []string
	seen := make(map[string]bool)
	for id := th.head; id != "" && !seen[id]; {
		c, ok := s.checkpoints[id]
		if !ok || c.ThreadID != threadID {
			break
		}
		seen[id] = true
		chain = append(chain, id)
		id = c.ParentCheckpointID
	}
	if len(chain) <= keep {
		return []string{}, nil
	}
	doomed := chain[keep:]
	slices.Reverse(doomed)
	for _, id := range doomed {
		s.remove(th, id)
	}
	s.relist(threadID, th)
	return doomed, nil
}

// ForkFromCheckpoint implements driver.Store.
func (s *Driver) ForkFromCheckpoint(ctx context.Context, f driver.Fork) (*ckptstore.Checkpoint, error) {
	in, token, hasToken := f.ForkInput, f.OpToken, f.OpToken != ""
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Now()
	if hasToken {
		if r := s.ops.done(token, opFork, now); r != nil {
			return r.root.Clone(), nil // a retry of a fork that committed
		}
	}
	src, ok := s.checkpoints[in.SourceCheckpointID]
	if !ok {
		return nil, driver.ForkSourceNotFoundError(in.SourceCheckpointID)
	}
	if src.ThreadID != in.SourceThreadID {
		return nil, driver.ForkSourceThreadError(src.ID, src.ThreadID, in.SourceThreadID)
	}
	if f.WriterThreadErr != nil {
		return nil, f.WriterThreadErr
	}
	if err := s.checkWriter(in.Writer, now); err != nil {
		return nil, err
	}
	th := s.thread(in.DestinationThreadID, true)
	if th.head != "" || th.cps.Len() > 0 {
		return nil, driver.ForkDestinationCheckpointsError(in.DestinationThreadID)
	}
	if th.transcript != nil {
		return nil, driver.ForkDestinationTranscriptError(in.DestinationThreadID)
	}
	if _, used := s.checkpoints[in.DestinationCheckpointID]; used {
		return nil, driver.ForkDestinationIDError(in.DestinationCheckpointID)
	}
	// The root's blob keys are src's, all counted already: the count
	// table keeps no string of root (a substring of src's text).
	root := driver.ForkRoot(src.Clone(), in)
	stored, err := pack(root) // cannot fail: src packed
	if err != nil {
		return nil, err
	}
	s.insert(th, stored, root, src) // the root has src's files
	th.head = root.ID
	// The destination's transcript is the conversation it starts from,
	// as TanStack's fork conformance expects.
	th.transcript = slices.Clone(root.Conversation)
	if len(th.transcript) == 0 {
		th.transcript = driver.EmptyTranscript()
	}
	s.relist(in.DestinationThreadID, th)
	if hasToken {
		s.ops.record(token, &opRecord{kind: opFork, root: stored}, now)
	}
	return root, nil // the caller's: ForkRoot copied it, and the store keeps stored
}

// AcquireWriter implements driver.Store.
func (s *Driver) AcquireWriter(ctx context.Context, threadID, token string) (driver.Lease, error) {
	// A caller's op token becomes the owner token, so that a retry can
	// be recognised and answered with the same lease.
	hasToken := token != ""
	if !hasToken {
		token = rand.Text()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opts.Now()
	if hasToken {
		if r := s.ops.done(token, opAcquire, now); r != nil {
			return driver.Lease{Writer: r.writer, ExpiresAt: r.expiresAt, RenewAfter: s.opts.RenewAfter}, nil
		}
	}
	th := s.thread(threadID, true)
	if th.lease != nil && now.Before(th.lease.expiresAt) {
		return driver.Lease{}, driver.WriterConflictError(threadID, th.lease.expiresAt)
	}
	th.fence++
	th.lease = &lease{token: token, fence: th.fence, expiresAt: now.Add(s.opts.LeaseDuration)}
	w := ckptstore.Writer{ThreadID: threadID, OwnerToken: token, Fence: th.fence}
	if hasToken {
		s.ops.record(token, &opRecord{kind: opAcquire, writer: w, expiresAt: th.lease.expiresAt}, now)
	}
	return driver.Lease{Writer: w, ExpiresAt: th.lease.expiresAt, RenewAfter: s.opts.RenewAfter}, nil
}

// Renew implements driver.Store.
func (s *Driver) Renew(ctx context.Context, w ckptstore.Writer) (time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// One reading for both decisions: a renew checked live at one instant
	// must not extend from a later one (nor a lease expire in between).
	now := s.opts.Now()
	if err := s.checkWriter(w, now); err != nil {
		return time.Time{}, err
	}
	l := s.threads[w.ThreadID].lease
	l.expiresAt = now.Add(s.opts.LeaseDuration)
	return l.expiresAt, nil
}

// Release implements driver.Store.
func (s *Driver) Release(ctx context.Context, w ckptstore.Writer) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	th := s.threads[w.ThreadID]
	if th != nil && th.lease != nil && th.lease.token == w.OwnerToken && th.lease.fence == w.Fence {
		th.lease = nil
	}
	return nil
}

// ListBlobReferences implements driver.Store.
func (s *Driver) ListBlobReferences(ctx context.Context) iter.Seq2[ckptstore.BlobRef, error] {
	s.mu.Lock()
	refs := s.refs.list()
	s.mu.Unlock()
	return func(yield func(ckptstore.BlobRef, error) bool) {
		for _, r := range refs {
			if !yield(r, nil) {
				return
			}
		}
	}
}
