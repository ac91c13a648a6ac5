package mutation

// The seam the mutants wrap, and the helpers they share.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/conformance"
	"github.com/ckptstore/ckptstore/driver"
)

// store is what a mutant wraps and returns: the interface the conformance
// suite exercises today. A mutant embeds it and overrides the one method
// whose behaviour it breaks, so retargeting the mutants onto another seam
// (a driver interface) is changing this line and the few calls that
// differ.
type store = conformance.Store

// instances is the instance store seam, wrapped the same way.
type instances = conformance.InstanceStore

// errorf returns an error that satisfies errors.Is with sentinel only, as a
// store's own error does.
func errorf(sentinel error, format string, args ...any) error {
	return fmt.Errorf("%w: %s", sentinel, fmt.Sprintf(format, args...))
}

// is reports whether err is sentinel.
func is(err, sentinel error) bool { return errors.Is(err, sentinel) }

// tracked is a wrapped store that remembers the newest lease it granted
// per thread, for the mutants that use a lease the caller did not pass.
type tracked struct {
	store
	mu     sync.Mutex
	latest map[string]ckptstore.Writer
}

func track(s store) *tracked { return &tracked{store: s, latest: map[string]ckptstore.Writer{}} }

func (t *tracked) AcquireWriter(ctx context.Context, thread string) (*ckptstore.Lease, error) {
	l, err := t.store.AcquireWriter(ctx, thread)
	if err == nil {
		t.mu.Lock()
		t.latest[thread] = l.Writer
		t.mu.Unlock()
	}
	return l, err
}

// newest returns the newest lease granted on thread.
func (t *tracked) newest(thread string) (ckptstore.Writer, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	w, ok := t.latest[thread]
	return w, ok
}

// rekeep returns l backed by k, so that Lease.Renew and Lease.Release go
// through a mutant's RenewWriter and ReleaseWriter.
func rekeep(l *ckptstore.Lease, err error, k driver.LeaseKeeper) (*ckptstore.Lease, error) {
	if err != nil {
		return l, err
	}
	return driver.NewLease(l.Writer, l.ExpiresAt, l.RenewAfter, k), nil
}

// chain returns the ids on the parent chain from head through checkpoints
// of list, stopping at a missing parent or a repeat, as a prune walks it.
func chain(head string, list []*ckptstore.Checkpoint) map[string]bool {
	byID := map[string]*ckptstore.Checkpoint{}
	for _, c := range list {
		byID[c.ID] = c
	}
	on := map[string]bool{}
	for id := head; id != "" && !on[id]; {
		c, ok := byID[id]
		if !ok {
			break
		}
		on[id] = true
		id = c.ParentCheckpointID
	}
	return on
}

// allThreads returns every thread id of s.
func allThreads(ctx context.Context, s store) []string {
	var ids []string
	after := ""
	for {
		page, next, err := s.Threads(ctx, after, driver.MaxPageLimit)
		if err != nil {
			return ids
		}
		ids = append(ids, page...)
		if next == "" {
			return ids
		}
		after = next
	}
}

// clock returns the lease clock and duration of opts, as the store
// resolves them.
func clock(opts ckptstore.Options) (func() time.Time, time.Duration) {
	o, err := opts.Resolve()
	if err != nil {
		panic(err)
	}
	return o.Now, o.LeaseDuration
}

// shared hands out one pointer per checkpoint id for as long as the store
// holds what that pointer held when it was first handed out: a store that
// returns its own data instead of a copy.
type shared struct {
	mu     sync.Mutex
	handed map[string]*ckptstore.Checkpoint // what callers got, and may have changed
	orig   map[string]*ckptstore.Checkpoint // what it was then
}

// keep makes c the pointer handed out for c.ID.
func (s *shared) keep(c *ckptstore.Checkpoint) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.handed == nil {
		s.handed, s.orig = map[string]*ckptstore.Checkpoint{}, map[string]*ckptstore.Checkpoint{}
	}
	s.handed[c.ID], s.orig[c.ID] = c, c.Clone()
}

// share returns the pointer handed out for c's id when the store still
// holds the same checkpoint, else c (and hands c out from now on).
func (s *shared) share(c *ckptstore.Checkpoint) *ckptstore.Checkpoint {
	if c == nil {
		return nil
	}
	s.mu.Lock()
	if h, ok := s.handed[c.ID]; ok && driver.EqualCheckpoints(s.orig[c.ID], c) {
		s.mu.Unlock()
		return h
	}
	s.mu.Unlock()
	s.keep(c)
	return c
}

// sharedBytes is shared for transcripts, by thread.
type sharedBytes struct {
	mu           sync.Mutex
	handed, orig map[string]json.RawMessage
}

func (s *sharedBytes) keep(thread string, b json.RawMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.handed == nil {
		s.handed, s.orig = map[string]json.RawMessage{}, map[string]json.RawMessage{}
	}
	s.handed[thread], s.orig[thread] = b, bytes.Clone(b)
}

func (s *sharedBytes) share(thread string, b json.RawMessage) json.RawMessage {
	if b == nil {
		return nil
	}
	s.mu.Lock()
	if h, ok := s.handed[thread]; ok && bytes.Equal(s.orig[thread], b) {
		s.mu.Unlock()
		return h
	}
	s.mu.Unlock()
	s.keep(thread, b)
	return b
}

// sharedRecords is shared for instance records, by key.
type sharedRecords struct {
	mu           sync.Mutex
	handed, orig map[string]*ckptstore.InstanceRecord
}

func (s *sharedRecords) keep(r *ckptstore.InstanceRecord) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.handed == nil {
		s.handed, s.orig = map[string]*ckptstore.InstanceRecord{}, map[string]*ckptstore.InstanceRecord{}
	}
	s.handed[r.Key], s.orig[r.Key] = r, r.Clone()
}

func (s *sharedRecords) share(r *ckptstore.InstanceRecord) *ckptstore.InstanceRecord {
	if r == nil {
		return nil
	}
	s.mu.Lock()
	if h, ok := s.handed[r.Key]; ok && *s.orig[r.Key] == *r {
		s.mu.Unlock()
		return h
	}
	s.mu.Unlock()
	s.keep(r)
	return r
}
