package persist

import (
	"context"
	"encoding/json"
	"io"
)

// The stores of a Store, one interface per TanStack store. The portable
// types of this package (Runs, GenerationRuns, …, over a driver) implement
// them, and so does a client of a remote store (httpstore), so that code
// written against a Store runs on either. Each method's contract is the
// portable type's: its checks, in their order, and its errors.

// RunStore is TanStack's RunStore; Runs documents each method.
type RunStore interface {
	CreateOrResume(ctx context.Context, in RunStart) (*RunRecord, error)
	Update(ctx context.Context, runID string, patch RunPatch) error
	Get(ctx context.Context, runID string) (*RunRecord, error)
	FindActiveRun(ctx context.Context, threadID string) (*RunRecord, error)
	ListByThread(ctx context.Context, threadID string) ([]*RunRecord, error)
	ListReclaimable(ctx context.Context, q ReclaimQuery) ([]*RunRecord, error)
}

// GenerationRunStore is TanStack's GenerationRunStore; GenerationRuns
// documents each method.
type GenerationRunStore interface {
	CreateOrResume(ctx context.Context, in GenerationRunStart) (*GenerationRunRecord, error)
	Update(ctx context.Context, runID string, patch GenerationRunPatch) error
	Get(ctx context.Context, runID string) (*GenerationRunRecord, error)
	FindLatestForThread(ctx context.Context, threadID string) (*GenerationRunRecord, error)
}

// InterruptStore is TanStack's InterruptStore; Interrupts documents each
// method.
type InterruptStore interface {
	Create(ctx context.Context, in NewInterrupt) error
	Resolve(ctx context.Context, interruptID string, response json.RawMessage) error
	Cancel(ctx context.Context, interruptID string) error
	CommitBatch(ctx context.Context, entries []InterruptCommitEntry) error
	Get(ctx context.Context, interruptID string) (*InterruptRecord, error)
	List(ctx context.Context, threadID string) ([]*InterruptRecord, error)
	ListPending(ctx context.Context, threadID string) ([]*InterruptRecord, error)
	ListByRun(ctx context.Context, runID string) ([]*InterruptRecord, error)
	ListPendingByRun(ctx context.Context, runID string) ([]*InterruptRecord, error)
}

// MetadataStore is TanStack's MetadataStore; Metadata documents each
// method.
type MetadataStore interface {
	Get(ctx context.Context, namespace, key string) (json.RawMessage, error)
	Set(ctx context.Context, namespace, key string, value json.RawMessage) error
	Delete(ctx context.Context, namespace, key string) error
}

// ArtifactStore is TanStack's ArtifactStore; Artifacts documents each
// method.
type ArtifactStore interface {
	Save(ctx context.Context, rec *ArtifactRecord) error
	Get(ctx context.Context, artifactID string) (*ArtifactRecord, error)
	List(ctx context.Context, runID string) ([]*ArtifactRecord, error)
	ListForThread(ctx context.Context, threadID string) ([]*ArtifactRecord, error)
	Delete(ctx context.Context, artifactID string) error
	DeleteForRun(ctx context.Context, runID string) error
}

// BlobStore is TanStack's BlobStore; Blobs documents each method.
type BlobStore interface {
	Put(ctx context.Context, key string, body io.Reader, opts BlobPutOptions) (BlobRecord, error)
	Get(ctx context.Context, key string, rng *BlobRange) (*BlobObject, error)
	Head(ctx context.Context, key string) (*BlobRecord, error)
	Delete(ctx context.Context, key string) error
	List(ctx context.Context, opts BlobListOptions) (BlobListPage, error)
}

var (
	_ RunStore           = (*Runs)(nil)
	_ GenerationRunStore = (*GenerationRuns)(nil)
	_ InterruptStore     = (*Interrupts)(nil)
	_ MetadataStore      = (*Metadata)(nil)
	_ ArtifactStore      = (*Artifacts)(nil)
	_ BlobStore          = (*Blobs)(nil)
	_ LockStore          = (*Locks)(nil)
	_ LockSteps          = (*DriverLockSteps)(nil)
)
