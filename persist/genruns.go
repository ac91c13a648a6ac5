package persist

import "context"

// GenerationRunStart is the input of GenerationRuns.CreateOrResume
// (TanStack's Pick<GenerationRunRecord, 'runId' | 'threadId' | 'activity' |
// 'provider' | 'model' | 'startedAt'> & { status? }).
type GenerationRunStart struct {
	RunID     string    `json:"runId"`
	ThreadID  string    `json:"threadId"`
	Activity  string    `json:"activity"`
	Provider  string    `json:"provider"`
	Model     string    `json:"model"`
	StartedAt int64     `json:"startedAt"`
	Status    RunStatus `json:"status,omitempty"` // "" means running
}

// GenerationRuns is TanStack's GenerationRunStore: one record per
// generateImage, generateVideo, … call, filed under a thread (the slot).
type GenerationRuns struct{ c *core }

// CreateOrResume stores a new generation run (status running unless
// in.Status says otherwise) when in.RunID is unknown, and returns the stored
// run; for a known RunID it returns the stored run unchanged. Check order:
// ctx, runId, threadId (ErrInvalidID), startedAt, status, then activity,
// provider and model valid UTF-8 (ErrInvalidEntry).
func (s *GenerationRuns) CreateOrResume(ctx context.Context, in GenerationRunStart) (*GenerationRunRecord, error) {
	if err := firstErr(begin(ctx), CheckGenerationRunStart(&in)); err != nil {
		return nil, err
	}
	rec, err := s.c.d.CreateOrResumeGenerationRun(ctx, &GenerationRunRecord{
		RunID: in.RunID, ThreadID: in.ThreadID, Activity: in.Activity, Provider: in.Provider,
		Model: in.Model, Status: in.Status, StartedAt: in.StartedAt,
	})
	return cloneGenerationRun(rec), err
}

// Update applies patch to the generation run; an unknown run is a no-op.
// Check order: ctx, runId (ErrInvalidID), then the patch's fields in the
// order status, finishedAt, error, result (any JSON), artifacts (a JSON
// array), usage (a JSON object) (ErrInvalidEntry).
func (s *GenerationRuns) Update(ctx context.Context, runID string, patch GenerationRunPatch) error {
	if err := firstErr(begin(ctx), CheckGenerationRunUpdate(runID, patch)); err != nil {
		return err
	}
	_, err := s.c.d.UpdateGenerationRun(ctx, runID, cloneGenerationRunPatch(patch))
	return err
}

func checkGenerationRunPatch(p GenerationRunPatch) error {
	return firstErr(checkStatusPatch(p.Status), checkIntPatch("patch finishedAt", p.FinishedAt, false),
		checkErrorPatch(p.Error), checkJSONPatch("patch result", p.Result, anyJSON),
		checkJSONPatch("patch artifacts", p.Artifacts, arrayJSON), checkJSONPatch("patch usage", p.Usage, objectJSON))
}

// Get returns the generation run, or nil. Check order: ctx, runId.
func (s *GenerationRuns) Get(ctx context.Context, runID string) (*GenerationRunRecord, error) {
	return readOne(ctx, "runId", runID, s.c.d.GetGenerationRun, cloneGenerationRun)
}

// FindLatestForThread returns the thread's generation run with the
// greatest startedAt whatever its status (ties: the greatest runId bytes),
// or nil. Check order: ctx, threadId.
func (s *GenerationRuns) FindLatestForThread(ctx context.Context, threadID string) (*GenerationRunRecord, error) {
	return readOne(ctx, "threadId", threadID, s.c.d.LatestGenerationRun, cloneGenerationRun)
}
