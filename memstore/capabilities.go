package memstore

// The capabilities beyond Store, Pruner and Forker: transcripts,
// DeleteThread, ListPage, Threads and Import. Each runs its pure checks in
// precheck, then takes the lock and runs its state checks in the order of
// docs/contract.md before it changes anything.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/precheck"
)

// LoadThread implements ckptstore.Transcripts.
func (s *Store) LoadThread(ctx context.Context, threadID string) (json.RawMessage, error) {
	if err := precheck.LoadThread(ctx, threadID); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if th := s.threads[threadID]; th != nil && th.transcript != nil {
		return slices.Clone(th.transcript), nil
	}
	return driver.EmptyTranscript(), nil
}

// SaveThread implements ckptstore.Transcripts.
func (s *Store) SaveThread(ctx context.Context, threadID string, messages json.RawMessage) error {
	if err := precheck.SaveThread(ctx, threadID, messages); err != nil {
		return err
	}
	m := slices.Clone(messages)
	s.mu.Lock()
	defer s.mu.Unlock()
	th := s.thread(threadID, true)
	th.transcript = m
	s.relist(threadID, th)
	return nil
}

// DeleteThread implements ckptstore.ThreadDeleter. The whole thread goes in
// one step under the lock, so memstore never needs the contract's batches.
func (s *Store) DeleteThread(ctx context.Context, threadID string, w ckptstore.Writer) (int, error) {
	if err := precheck.DeleteThread(ctx, threadID, w); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkWriter(w, s.opts.Now()); err != nil {
		return 0, err
	}
	th := s.threads[threadID] // not nil: it has a lease
	var doomed []string
	th.cps.Ascend(func(c *rec) bool {
		doomed = append(doomed, c.ID)
		return true
	})
	for _, id := range doomed {
		s.remove(th, id)
	}
	th.head = ""
	th.transcript = nil
	s.relist(threadID, th)
	return len(doomed), nil
}

// ListPage implements ckptstore.Pager. It reads the page from the thread's
// ordered list, starting at the cursor, and one checkpoint more to learn
// whether another page follows, then copies the page in one batch
// (cloneAll).
func (s *Store) ListPage(ctx context.Context, threadID string, opt ckptstore.ListOptions) ([]*ckptstore.Checkpoint, string, error) {
	p, err := precheck.ListPage(ctx, threadID, opt)
	if err != nil {
		return nil, "", err
	}
	var page []*rec
	more := false
	visit := func(c *rec) bool {
		if !p.Includes(&ckptstore.Checkpoint{ID: c.ID, CreatedAt: c.CreatedAt}) {
			return true // the checkpoint at the cursor's own position
		}
		if len(page) == p.Limit {
			more = true
			return false
		}
		page = append(page, c)
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	th := s.threads[threadID]
	if th == nil {
		return []*ckptstore.Checkpoint{}, "", nil
	}
	switch {
	case p.After == nil && !p.Reverse:
		th.cps.Ascend(visit)
	case p.After == nil:
		th.cps.Descend(visit)
	case !p.Reverse:
		th.cps.AscendGreaterOrEqual(pivot(*p.After), visit)
	default:
		th.cps.DescendLessOrEqual(pivot(*p.After), visit)
	}
	out := cloneAll(page)
	return out, p.Next(out, more), nil
}

// pivot is a checkpoint at position pos, to seek a thread's list with.
func pivot(pos driver.Position) *rec {
	return &rec{CreatedAt: pos.CreatedAt, ID: pos.ID}
}

// Threads implements ckptstore.ThreadLister. It reads one range of the
// listed threads, one id more than the page to learn whether more follow.
func (s *Store) Threads(ctx context.Context, after string, limit int) ([]string, string, error) {
	p, err := precheck.Threads(ctx, after, limit)
	if err != nil {
		return nil, "", err
	}
	page := []string{}
	more := false
	s.mu.Lock()
	defer s.mu.Unlock()
	s.listed.AscendGreaterOrEqual(p.After, func(id string) bool {
		if id == p.After {
			return true // the cursor's own thread ("" is never listed)
		}
		if len(page) == p.Limit {
			more = true
			return false
		}
		page = append(page, id)
		return true
	})
	return page, p.Next(page, more), nil
}

// Import implements ckptstore.Importer.
func (s *Store) Import(ctx context.Context, b ckptstore.ImportBatch) (int, error) {
	if err := precheck.Import(ctx, b); err != nil {
		return 0, err
	}
	cps := make([]*rec, len(b.Checkpoints))
	var err error
	for i, c := range b.Checkpoints {
		if cps[i], err = pack(c); err != nil {
			return 0, err
		}
	}
	var transcript json.RawMessage
	if b.Transcript != nil {
		transcript = slices.Clone(b.Transcript)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.checkWriter(b.Writer, s.opts.Now()); err != nil {
		return 0, err
	}
	var fresh []int // indexes into cps and b.Checkpoints
	for i, c := range cps {
		old, ok := s.checkpoints[c.ID]
		switch {
		case !ok:
			fresh = append(fresh, i)
		case old.ThreadID != b.ThreadID:
			return 0, fmt.Errorf("%w: %q is stored in thread %q", ckptstore.ErrDuplicateID, c.ID, old.ThreadID)
		case !driver.EqualCheckpoints(old.Clone(), b.Checkpoints[i]):
			return 0, fmt.Errorf("%w: %q is stored with other content", ckptstore.ErrDuplicateID, c.ID)
		}
	}
	th := s.threads[b.ThreadID] // not nil: it has a lease
	if b.SetHead && th.head != "" && th.head != b.Head {
		return 0, fmt.Errorf("%w: head of thread %q is %q, the import sets %q", ckptstore.ErrConflict, b.ThreadID, th.head, b.Head)
	}
	for _, i := range fresh {
		s.insert(th, cps[i], b.Checkpoints[i], nil)
	}
	if b.SetHead {
		th.head = b.Head
	}
	if transcript != nil {
		th.transcript = transcript
	}
	s.relist(b.ThreadID, th)
	return len(fresh), nil
}
