package memstore

// Transcripts, DeleteThread, ListPage, Threads and Import. Each takes the
// lock and runs its state checks in the order of docs/contract.md before it
// changes anything.

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
)

// LoadThread implements driver.Store.
func (s *Driver) LoadThread(ctx context.Context, threadID string) (json.RawMessage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if th := s.threads[threadID]; th != nil && th.transcript != nil {
		return slices.Clone(th.transcript), nil
	}
	return driver.EmptyTranscript(), nil
}

// SaveThread implements driver.Store.
func (s *Driver) SaveThread(ctx context.Context, threadID string, messages json.RawMessage) error {
	m := slices.Clone(messages)
	s.mu.Lock()
	defer s.mu.Unlock()
	th := s.thread(threadID, true)
	th.transcript = m
	s.relist(threadID, th)
	return nil
}

// DeleteThread implements driver.Store. The whole thread goes in one step
// under the lock, so memstore never needs the contract's batches.
func (s *Driver) DeleteThread(ctx context.Context, threadID string, w ckptstore.Writer) (int, error) {
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

// ListPage implements driver.Store. It reads the page from the thread's
// ordered list, starting at the cursor, and one checkpoint more to learn
// whether another page follows, then copies the page in one batch
// (cloneAll).
func (s *Driver) ListPage(ctx context.Context, threadID string, p driver.Page) ([]*ckptstore.Checkpoint, string, error) {
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

// Threads implements driver.Store. It reads one range of the listed
// threads, one id more than the page to learn whether more follow.
func (s *Driver) Threads(ctx context.Context, p driver.ThreadPage) ([]string, string, error) {
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

// Import implements driver.Store.
func (s *Driver) Import(ctx context.Context, b ckptstore.ImportBatch) (int, error) {
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
			return 0, driver.DuplicateInThreadError(c.ID, old.ThreadID)
		case !driver.EqualCheckpoints(old.Clone(), b.Checkpoints[i]):
			return 0, driver.DuplicateContentError(c.ID)
		}
	}
	th := s.threads[b.ThreadID] // not nil: it has a lease
	if b.SetHead && th.head != "" && th.head != b.Head {
		return 0, driver.ImportHeadError(b.ThreadID, th.head, b.Head)
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
