package persisttest

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/ckptstore/ckptstore/persist/driver"
)

// recorder wraps the driver under test. It counts calls, keeps the history
// of lock steps with the store's clock readings (for the overlap check),
// and injects the faults some tests need: a renewal that never answers (a
// partition), a blob row write that fails. It never answers in the
// driver's place otherwise: the state is the driver's.
type recorder struct {
	driver.Driver

	mu           sync.Mutex
	calls        int
	history      []lockStep
	acquires     map[string]int // AcquireLock calls per token
	stallRenew   bool
	failPutBlob  bool
	afterGetBlob func() // runs once after the next GetBlob, then is cleared
}

// lockStep is one lock step that changed or confirmed a holder.
type lockStep struct {
	op    string // acquire, renew, release
	key   string
	token string
	st    driver.LockState
}

var errInjected = errors.New("persisttest: injected fault")

func (r *recorder) count() {
	r.mu.Lock()
	r.calls++
	r.mu.Unlock()
}

// Calls returns how many driver calls were made.
func (r *recorder) Calls() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls
}

func (r *recorder) log(op, key, token string, st driver.LockState) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.history = append(r.history, lockStep{op, key, token, st})
}

func (r *recorder) steps() []lockStep {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]lockStep(nil), r.history...)
}

func (r *recorder) acquireCalls(token string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.acquires[token]
}

func (r *recorder) setStallRenew(v bool) {
	r.mu.Lock()
	r.stallRenew = v
	r.mu.Unlock()
}

// AcquireLock records the call and, when granted, the grant.
func (r *recorder) AcquireLock(ctx context.Context, req driver.LockRequest) (driver.LockState, error) {
	r.count()
	r.mu.Lock()
	if r.acquires == nil {
		r.acquires = map[string]int{}
	}
	r.acquires[req.Token]++
	r.mu.Unlock()
	st, err := r.Driver.AcquireLock(ctx, req)
	if err == nil {
		op := "wait"
		if st.Held {
			op = "acquire"
		}
		r.log(op, req.Key, req.Token, st)
	}
	return st, err
}

// RenewLock records confirmed renewals; when stallRenew is set it blocks
// until ctx is done, as a renewal lost in a partition does.
func (r *recorder) RenewLock(ctx context.Context, key, token string, lease time.Duration) (driver.LockState, error) {
	r.count()
	r.mu.Lock()
	stall := r.stallRenew
	r.mu.Unlock()
	if stall {
		<-ctx.Done()
		return driver.LockState{}, ctx.Err()
	}
	st, err := r.Driver.RenewLock(ctx, key, token, lease)
	if err == nil {
		r.log("renew", key, token, st)
	}
	return st, err
}

// ReleaseLock records releases.
func (r *recorder) ReleaseLock(ctx context.Context, key, token string) (driver.LockState, error) {
	r.count()
	st, err := r.Driver.ReleaseLock(ctx, key, token)
	if err == nil {
		r.log("release", key, token, st)
	}
	return st, err
}

// WatchLock counts the call.
func (r *recorder) WatchLock(ctx context.Context, key string) (<-chan struct{}, error) {
	r.count()
	return r.Driver.WatchLock(ctx, key)
}

// PutBlob fails with errInjected when failPutBlob is set.
func (r *recorder) PutBlob(ctx context.Context, meta *driver.BlobMeta) (*driver.BlobMeta, string, error) {
	r.count()
	r.mu.Lock()
	fail := r.failPutBlob
	r.mu.Unlock()
	if fail {
		return nil, "", errInjected
	}
	return r.Driver.PutBlob(ctx, meta)
}

// The remaining methods only count.

func (r *recorder) CreateOrResumeRun(ctx context.Context, rec *driver.RunRecord) (*driver.RunRecord, error) {
	r.count()
	return r.Driver.CreateOrResumeRun(ctx, rec)
}

func (r *recorder) UpdateRun(ctx context.Context, id string, p driver.RunPatch) (bool, error) {
	r.count()
	return r.Driver.UpdateRun(ctx, id, p)
}

func (r *recorder) GetRun(ctx context.Context, id string) (*driver.RunRecord, error) {
	r.count()
	return r.Driver.GetRun(ctx, id)
}

func (r *recorder) ActiveRun(ctx context.Context, threadID string) (*driver.RunRecord, error) {
	r.count()
	return r.Driver.ActiveRun(ctx, threadID)
}

func (r *recorder) ThreadRuns(ctx context.Context, threadID string, after *driver.Position, limit int) ([]*driver.RunRecord, error) {
	r.count()
	return r.Driver.ThreadRuns(ctx, threadID, after, limit)
}

func (r *recorder) ReclaimableRuns(ctx context.Context, cutoff int64, after *driver.Position, limit int) ([]*driver.RunRecord, error) {
	r.count()
	return r.Driver.ReclaimableRuns(ctx, cutoff, after, limit)
}

func (r *recorder) CreateOrResumeGenerationRun(ctx context.Context, rec *driver.GenerationRunRecord) (*driver.GenerationRunRecord, error) {
	r.count()
	return r.Driver.CreateOrResumeGenerationRun(ctx, rec)
}

func (r *recorder) UpdateGenerationRun(ctx context.Context, id string, p driver.GenerationRunPatch) (bool, error) {
	r.count()
	return r.Driver.UpdateGenerationRun(ctx, id, p)
}

func (r *recorder) GetGenerationRun(ctx context.Context, id string) (*driver.GenerationRunRecord, error) {
	r.count()
	return r.Driver.GetGenerationRun(ctx, id)
}

func (r *recorder) LatestGenerationRun(ctx context.Context, threadID string) (*driver.GenerationRunRecord, error) {
	r.count()
	return r.Driver.LatestGenerationRun(ctx, threadID)
}

func (r *recorder) CreateInterrupt(ctx context.Context, rec *driver.InterruptRecord) error {
	r.count()
	return r.Driver.CreateInterrupt(ctx, rec)
}

func (r *recorder) ResolveInterrupt(ctx context.Context, id string, at int64, resp json.RawMessage) (bool, error) {
	r.count()
	return r.Driver.ResolveInterrupt(ctx, id, at, resp)
}

func (r *recorder) CancelInterrupt(ctx context.Context, id string, at int64) (bool, error) {
	r.count()
	return r.Driver.CancelInterrupt(ctx, id, at)
}

func (r *recorder) CommitInterrupts(ctx context.Context, e []driver.InterruptCommitEntry, at int64, tok string) error {
	r.count()
	return r.Driver.CommitInterrupts(ctx, e, at, tok)
}

func (r *recorder) GetInterrupt(ctx context.Context, id string) (*driver.InterruptRecord, error) {
	r.count()
	return r.Driver.GetInterrupt(ctx, id)
}

func (r *recorder) ListInterrupts(ctx context.Context, s driver.InterruptScope, after *driver.Position, limit int) ([]*driver.InterruptRecord, error) {
	r.count()
	return r.Driver.ListInterrupts(ctx, s, after, limit)
}

func (r *recorder) GetMetadata(ctx context.Context, ns, key string) (json.RawMessage, error) {
	r.count()
	return r.Driver.GetMetadata(ctx, ns, key)
}

func (r *recorder) SetMetadata(ctx context.Context, ns, key string, v json.RawMessage) error {
	r.count()
	return r.Driver.SetMetadata(ctx, ns, key, v)
}

func (r *recorder) DeleteMetadata(ctx context.Context, ns, key string) error {
	r.count()
	return r.Driver.DeleteMetadata(ctx, ns, key)
}

func (r *recorder) SaveArtifact(ctx context.Context, rec *driver.ArtifactRecord) error {
	r.count()
	return r.Driver.SaveArtifact(ctx, rec)
}

func (r *recorder) GetArtifact(ctx context.Context, id string) (*driver.ArtifactRecord, error) {
	r.count()
	return r.Driver.GetArtifact(ctx, id)
}

func (r *recorder) ListArtifacts(ctx context.Context, s driver.ArtifactScope, after *driver.Position, limit int) ([]*driver.ArtifactRecord, error) {
	r.count()
	return r.Driver.ListArtifacts(ctx, s, after, limit)
}

func (r *recorder) DeleteArtifact(ctx context.Context, id string) error {
	r.count()
	return r.Driver.DeleteArtifact(ctx, id)
}

func (r *recorder) DeleteRunArtifacts(ctx context.Context, runID string, limit int) (int, error) {
	r.count()
	return r.Driver.DeleteRunArtifacts(ctx, runID, limit)
}

// GetBlob runs afterGetBlob, once, between reading the row and returning
// it: the window in which a concurrent put or delete removes the bytes the
// row names.
func (r *recorder) GetBlob(ctx context.Context, key string) (*driver.BlobMeta, error) {
	r.count()
	m, err := r.Driver.GetBlob(ctx, key)
	r.mu.Lock()
	hook := r.afterGetBlob
	r.afterGetBlob = nil
	r.mu.Unlock()
	if hook != nil {
		hook()
	}
	return m, err
}

func (r *recorder) DeleteBlob(ctx context.Context, key string) (string, error) {
	r.count()
	return r.Driver.DeleteBlob(ctx, key)
}

func (r *recorder) ListBlobs(ctx context.Context, prefix, after string, limit int) ([]*driver.BlobMeta, error) {
	r.count()
	return r.Driver.ListBlobs(ctx, prefix, after, limit)
}
