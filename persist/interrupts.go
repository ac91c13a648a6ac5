package persist

import (
	"context"
	"encoding/json"

	"github.com/ckptstore/ckptstore/persist/driver"
)

// NewInterrupt is the input of Interrupts.Create (TanStack's
// Omit<InterruptRecord, 'status' | 'resolvedAt'>): an interrupt is born
// pending, never resolved.
type NewInterrupt struct {
	InterruptID string          `json:"interruptId"`
	RunID       string          `json:"runId"`
	ThreadID    string          `json:"threadId"`
	RequestedAt int64           `json:"requestedAt"`
	Payload     json.RawMessage `json:"payload"`
	Response    json.RawMessage `json:"response,omitempty"`
}

// Interrupts is TanStack's InterruptStore: human-in-the-loop interrupts.
type Interrupts struct{ c *core }

// Create stores the interrupt as pending when its id is unknown, and does
// nothing when it is known: a repeated create never clobbers a resolved
// interrupt back to pending. Check order: ctx, interruptId, runId, threadId
// (ErrInvalidID), requestedAt (a safe integer), payload (a JSON object,
// required), response (any JSON) (ErrInvalidEntry).
func (s *Interrupts) Create(ctx context.Context, in NewInterrupt) error {
	if err := firstErr(begin(ctx), CheckNewInterrupt(in)); err != nil {
		return err
	}
	return s.c.d.CreateInterrupt(ctx, &InterruptRecord{
		InterruptID: in.InterruptID, RunID: in.RunID, ThreadID: in.ThreadID,
		Status: InterruptPending, RequestedAt: in.RequestedAt,
		Payload: rawClone(in.Payload), Response: rawClone(in.Response),
	})
}

// Resolve moves the interrupt to resolved, stamping resolvedAt with this
// process's clock and storing response (nil: none). An unknown id is a
// no-op. Check order: ctx, interruptId (ErrInvalidID), response (any JSON)
// (ErrInvalidEntry).
func (s *Interrupts) Resolve(ctx context.Context, interruptID string, response json.RawMessage) error {
	if err := firstErr(begin(ctx), CheckResolve(interruptID, response)); err != nil {
		return err
	}
	_, err := s.c.d.ResolveInterrupt(ctx, interruptID, s.c.nowMs(), rawClone(response))
	return err
}

// Cancel moves the interrupt to cancelled, stamping resolvedAt. An unknown
// id is a no-op. Check order: ctx, interruptId.
func (s *Interrupts) Cancel(ctx context.Context, interruptID string) error {
	if err := beginID(ctx, "interruptId", interruptID); err != nil {
		return err
	}
	_, err := s.c.d.CancelInterrupt(ctx, interruptID, s.c.nowMs())
	return err
}

// CommitBatch applies every entry or none, stamping one resolvedAt. It is
// stricter than Resolve and Cancel: it rejects the whole batch when an entry
// names an interrupt twice (ErrDuplicateEntry), names one that does not
// exist (ErrNotFound) or one that is not pending (ErrNotPending). An empty
// batch does nothing. With an op token on ctx (ckptstore.WithOpToken), a
// retry of a batch that committed reports success instead of
// ErrNotPending.
//
// Check order: ctx, op token (ErrInvalidEntry); then entry by entry: its
// interruptId (ErrInvalidID), its status resolved or cancelled, its
// response any JSON and absent when cancelled (ErrInvalidEntry), its id
// not named before (ErrDuplicateEntry); then, in the driver, entry by
// entry: exists (ErrNotFound), pending (ErrNotPending).
func (s *Interrupts) CommitBatch(ctx context.Context, entries []InterruptCommitEntry) error {
	if err := begin(ctx); err != nil {
		return err
	}
	token, err := opToken(ctx)
	if err != nil {
		return err
	}
	if err := CheckCommitBatch(entries); err != nil {
		return err
	}
	batch := make([]InterruptCommitEntry, len(entries))
	for i, e := range entries {
		batch[i] = InterruptCommitEntry{InterruptID: e.InterruptID, Status: e.Status, Response: rawClone(e.Response)}
	}
	if len(batch) == 0 {
		return nil
	}
	return s.c.d.CommitInterrupts(ctx, batch, s.c.nowMs(), token)
}

// Get returns the interrupt, or nil. Check order: ctx, interruptId.
func (s *Interrupts) Get(ctx context.Context, interruptID string) (*InterruptRecord, error) {
	return readOne(ctx, "interruptId", interruptID, s.c.d.GetInterrupt, cloneInterrupt)
}

// List returns the thread's interrupts by requestedAt ascending (ties by
// interruptId bytes). Check order: ctx, threadId.
func (s *Interrupts) List(ctx context.Context, threadID string) ([]*InterruptRecord, error) {
	return s.list(ctx, "threadId", driver.InterruptScope{ThreadID: threadID})
}

// ListPending is List of the pending interrupts only.
func (s *Interrupts) ListPending(ctx context.Context, threadID string) ([]*InterruptRecord, error) {
	return s.list(ctx, "threadId", driver.InterruptScope{ThreadID: threadID, PendingOnly: true})
}

// ListByRun returns the run's interrupts by requestedAt ascending. Check
// order: ctx, runId.
func (s *Interrupts) ListByRun(ctx context.Context, runID string) ([]*InterruptRecord, error) {
	return s.list(ctx, "runId", driver.InterruptScope{RunID: runID})
}

// ListPendingByRun is ListByRun of the pending interrupts only.
func (s *Interrupts) ListPendingByRun(ctx context.Context, runID string) ([]*InterruptRecord, error) {
	return s.list(ctx, "runId", driver.InterruptScope{RunID: runID, PendingOnly: true})
}

func (s *Interrupts) list(ctx context.Context, what string, scope driver.InterruptScope) ([]*InterruptRecord, error) {
	if err := beginID(ctx, what, scope.ThreadID+scope.RunID); err != nil {
		return nil, err
	}
	return collect(ctx, func(after *driver.Position) ([]*InterruptRecord, error) {
		return s.c.d.ListInterrupts(ctx, scope, after, driver.MaxListLimit)
	}, func(r *InterruptRecord) driver.Position { return driver.Position{At: r.RequestedAt, ID: r.InterruptID} }, cloneInterrupt)
}
