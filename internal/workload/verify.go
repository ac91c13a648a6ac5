package workload

import (
	"context"
	"fmt"
	"strings"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
)

// maxProblems caps how many violations a check lists; the count is exact.
const maxProblems = 20

// Problems collects invariant violations. The zero value is empty.
type Problems struct {
	List  []string // the first maxProblems, in order found
	Count int      // all of them
}

// Addf records a violation.
func (p *Problems) Addf(format string, args ...any) {
	p.Count++
	if len(p.List) < maxProblems {
		p.List = append(p.List, fmt.Sprintf(format, args...))
	}
}

// OK reports whether no violation was recorded.
func (p *Problems) OK() bool { return p.Count == 0 }

// Census is what CheckChains saw: every checkpoint of the threads it
// walked and the recount of the blob references they make.
type Census struct {
	Threads     int
	Checkpoints int
	// Alive maps each listed checkpoint id to its thread.
	Alive map[string]string
	// Refs counts, per blob key whose digest starts with the tag, the
	// listed checkpoints that use it: what ListBlobReferences must report.
	Refs map[string]int64
}

// Reader is what the checks read from a store: a *ckptstore.Store, or a
// test's fake that serves fixed answers.
type Reader interface {
	List(ctx context.Context, threadID string) ([]*ckptstore.Checkpoint, error)
	GetHead(ctx context.Context, threadID string) (string, error)
	ListBlobReferences(ctx context.Context) ([]ckptstore.BlobRef, error)
}

// CheckChains lists every thread and checks that each is one linear
// chain: its checkpoints belong to it, List orders them by createdAt then
// id, and walking parents from the head visits every one of them exactly
// once (the walk stops at a parent that pruning removed). It adds the
// thread's checkpoints to a recount of the blob keys owned by tag. An
// error means the store could not be read; violations go to p.
func CheckChains(ctx context.Context, s Reader, threads []string, tag string, p *Problems) (*Census, error) {
	c := &Census{Alive: map[string]string{}, Refs: map[string]int64{}}
	for _, t := range threads {
		list, err := s.List(ctx, t)
		if err != nil {
			return nil, fmt.Errorf("list %q: %w", t, err)
		}
		head, err := s.GetHead(ctx, t)
		if err != nil {
			return nil, fmt.Errorf("head %q: %w", t, err)
		}
		c.Threads++
		c.Checkpoints += len(list)
		byID := make(map[string]*ckptstore.Checkpoint, len(list))
		for i, cp := range list {
			if cp.ThreadID != t {
				p.Addf("thread %q: List returned checkpoint %q of thread %q", t, cp.ID, cp.ThreadID)
			}
			if _, dup := byID[cp.ID]; dup {
				p.Addf("thread %q: List returned checkpoint %q twice", t, cp.ID)
			}
			if i > 0 && driver.CompareCheckpoints(list[i-1], cp) >= 0 {
				p.Addf("thread %q: List is out of order at %q", t, cp.ID)
			}
			if other, dup := c.Alive[cp.ID]; dup {
				p.Addf("checkpoint id %q is stored in threads %q and %q", cp.ID, other, t)
			}
			byID[cp.ID] = cp
			c.Alive[cp.ID] = t
			for _, k := range cp.BlobKeys() {
				if OwnsKey(tag, k) {
					c.Refs[k]++
				}
			}
		}
		seen := 0
		for id := head; id != ""; {
			cp, ok := byID[id]
			if !ok {
				break // a pruned parent (or, after pruning and undo, a pruned head)
			}
			if seen++; seen > len(list) {
				p.Addf("thread %q: the parent chain from head %q has a cycle", t, head)
				break
			}
			id = cp.ParentCheckpointID
		}
		if seen < len(list) {
			p.Addf("thread %q is not one linear chain: %d of its %d checkpoints are not on the chain from head %q", t, len(list)-seen, len(list), head)
		}
	}
	return c, nil
}

// CheckRefs compares ListBlobReferences, restricted to keys owned by tag, with
// the census's recount, and checks that ListBlobReferences is sorted and holds
// no count below 1. Violations go to p.
func CheckRefs(ctx context.Context, s Reader, tag string, c *Census, p *Problems) error {
	refs, err := s.ListBlobReferences(ctx)
	if err != nil {
		return fmt.Errorf("blob references: %w", err)
	}
	seen := 0
	for i, r := range refs {
		if i > 0 && strings.Compare(refs[i-1].Key, r.Key) >= 0 {
			p.Addf("BlobReferences is not sorted at %q", r.Key)
		}
		if r.References < 1 {
			p.Addf("BlobReferences reports %q with count %d", r.Key, r.References)
		}
		if !OwnsKey(tag, r.Key) {
			continue
		}
		seen++
		if want := c.Refs[r.Key]; r.References != want {
			p.Addf("blob %q: the store counts %d references, a recount finds %d", r.Key, r.References, want)
		}
	}
	if seen != len(c.Refs) {
		stored := make(map[string]bool, seen)
		for _, r := range refs {
			stored[r.Key] = true
		}
		for k, n := range c.Refs {
			if !stored[k] {
				p.Addf("blob %q: the store has no count, a recount finds %d", k, n)
			}
		}
	}
	return nil
}
