package persist

import (
	"context"
	"fmt"

	"github.com/ckptstore/ckptstore/persist/driver"
)

// RunStart is the input of Runs.CreateOrResume (TanStack's
// Pick<RunRecord, 'runId' | 'threadId' | 'startedAt'> & { status? }).
type RunStart struct {
	RunID     string    `json:"runId"`
	ThreadID  string    `json:"threadId"`
	StartedAt int64     `json:"startedAt"`
	Status    RunStatus `json:"status,omitempty"` // "" means running
}

// ReclaimQuery is the input of Runs.ListReclaimable.
type ReclaimQuery struct {
	Now   int64 `json:"now"`
	TTLMs int64 `json:"ttlMs"`
}

// Runs is TanStack's RunStore: the records of chat runs.
type Runs struct{ c *core }

// CreateOrResume stores a new run (status running unless in.Status says
// otherwise) when in.RunID is unknown, and returns the stored run. For a
// known RunID it returns the stored run unchanged, ignoring in's thread,
// time and status: resuming never resurrects a finished run. Check order:
// ctx, runId, threadId (ErrInvalidID), startedAt, status (ErrInvalidEntry).
func (s *Runs) CreateOrResume(ctx context.Context, in RunStart) (*RunRecord, error) {
	if err := firstErr(begin(ctx), CheckRunStart(&in)); err != nil {
		return nil, err
	}
	rec, err := s.c.d.CreateOrResumeRun(ctx, &RunRecord{RunID: in.RunID, ThreadID: in.ThreadID, Status: in.Status, StartedAt: in.StartedAt})
	return cloneRun(rec), err
}

// checkStart is the shared check of both createOrResume methods; it fills
// the default status.
func checkStart(runID, threadID string, startedAt int64, status *RunStatus) error {
	if err := firstErr(checkID("runId", runID), checkID("threadId", threadID), checkInt("startedAt", startedAt, false)); err != nil {
		return err
	}
	if *status == "" {
		*status = RunRunning
	}
	return checkRunStatus("status", *status)
}

// Update applies patch to the run. An unknown run is a no-op: no error, no
// record. Check order: ctx, runId (ErrInvalidID), then the patch's fields
// in the order status, finishedAt, error, usage, sandboxKey, detachedSince,
// driverEpoch (ErrInvalidEntry): status may be set but not cleared, times
// and driverEpoch are safe integers (driverEpoch not negative), usage is a
// JSON object.
func (s *Runs) Update(ctx context.Context, runID string, patch RunPatch) error {
	if err := firstErr(begin(ctx), CheckRunUpdate(runID, patch)); err != nil {
		return err
	}
	_, err := s.c.d.UpdateRun(ctx, runID, cloneRunPatch(patch))
	return err
}

func checkRunPatch(p RunPatch) error {
	// A sandboxKey the patch does not set is "", which passes.
	return firstErr(checkStatusPatch(p.Status), checkIntPatch("patch finishedAt", p.FinishedAt, false),
		checkErrorPatch(p.Error), checkJSONPatch("patch usage", p.Usage, objectJSON),
		checkValueText("patch sandboxKey", p.SandboxKey.Value()), checkIntPatch("patch detachedSince", p.DetachedSince, false),
		checkIntPatch("patch driverEpoch", p.DriverEpoch, true))
}

// Get returns the run, or nil when it is unknown. Check order: ctx, runId.
func (s *Runs) Get(ctx context.Context, runID string) (*RunRecord, error) {
	return readOne(ctx, "runId", runID, s.c.d.GetRun, cloneRun)
}

// FindActiveRun returns the thread's running run with the greatest
// startedAt (ties: the greatest runId in byte order), or nil. Check order:
// ctx, threadId.
func (s *Runs) FindActiveRun(ctx context.Context, threadID string) (*RunRecord, error) {
	return readOne(ctx, "threadId", threadID, s.c.d.ActiveRun, cloneRun)
}

// ListByThread returns every run of the thread by startedAt ascending (ties
// by runId bytes). Check order: ctx, threadId.
func (s *Runs) ListByThread(ctx context.Context, threadID string) ([]*RunRecord, error) {
	if err := beginID(ctx, "threadId", threadID); err != nil {
		return nil, err
	}
	return collect(ctx, func(after *driver.Position) ([]*RunRecord, error) {
		return s.c.d.ThreadRuns(ctx, threadID, after, driver.MaxListLimit)
	}, func(r *RunRecord) driver.Position { return driver.Position{At: r.StartedAt, ID: r.RunID} }, cloneRun)
}

// ListReclaimable returns the runs a reaper may reclaim: status running,
// detachedSince set, and detachedSince ≤ now − ttlMs (inclusive). They come
// by detachedSince, then runId bytes; TanStack leaves the order open. Check
// order: ctx, now (a safe integer), ttlMs (a safe integer, not negative)
// (ErrInvalidEntry).
func (s *Runs) ListReclaimable(ctx context.Context, q ReclaimQuery) ([]*RunRecord, error) {
	if err := firstErr(begin(ctx), CheckReclaimQuery(q)); err != nil {
		return nil, err
	}
	cutoff := q.Now - q.TTLMs
	return collect(ctx, func(after *driver.Position) ([]*RunRecord, error) {
		return s.c.d.ReclaimableRuns(ctx, cutoff, after, driver.MaxListLimit)
	}, func(r *RunRecord) driver.Position { return driver.Position{At: *r.DetachedSince, ID: r.RunID} }, cloneRun)
}

// collect reads a whole list through pages of driver.MaxListLimit, each one
// atomic step. The whole list is not one snapshot: a record written while
// the pages are read may or may not appear, every other one appears once.
func collect[T any](ctx context.Context, page func(after *driver.Position) ([]*T, error), pos func(*T) driver.Position, clone func(*T) *T) ([]*T, error) {
	var out []*T
	var after *driver.Position
	for {
		recs, err := page(after)
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			p := pos(r)
			if !after.After(p.At, p.ID) {
				return nil, fmt.Errorf("%w: driver listed %q out of order", driver.ErrCorrupt, p.ID)
			}
			after = &p
			out = append(out, clone(r))
		}
		if len(recs) < driver.MaxListLimit {
			if out == nil {
				out = []*T{}
			}
			return out, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}
