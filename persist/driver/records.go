package driver

import (
	"encoding/json"
	"fmt"
	"strings"
)

// The records, in the JSON shapes of @tanstack/ai and
// @tanstack/ai-persistence: the field names are theirs, an optional field is
// a pointer (or a nil RawMessage) and is left out of the JSON when absent,
// times are epoch milliseconds. Values the store never interprets (usage,
// result, payload, response, artifact references) are kept as raw JSON,
// byte for byte.

// RunStatus is the lifecycle status of a run (TanStack's RunStatus).
type RunStatus string

// The run statuses. Interrupted is a pause, not an end; the last three are
// terminal.
const (
	RunRunning     RunStatus = "running"
	RunInterrupted RunStatus = "interrupted"
	RunCompleted   RunStatus = "completed"
	RunFailed      RunStatus = "failed"
	RunAborted     RunStatus = "aborted"
)

// Valid reports whether s is one of the five statuses.
func (s RunStatus) Valid() bool {
	switch s {
	case RunRunning, RunInterrupted, RunCompleted, RunFailed, RunAborted:
		return true
	}
	return false
}

// Terminal reports whether s is completed, failed or aborted.
func (s RunStatus) Terminal() bool {
	return s == RunCompleted || s == RunFailed || s == RunAborted
}

// RunError says why a run failed: a provider's message and, when it gave
// one, a stable code to branch on.
type RunError struct {
	Message string  `json:"message"`
	Code    *string `json:"code,omitempty"`
}

// RunRecord is one chat run (TanStack's RunRecord). The last four fields are
// the durable-run fields of @tanstack/ai-sandbox; each is absent until set.
type RunRecord struct {
	RunID      string          `json:"runId"`
	ThreadID   string          `json:"threadId"`
	Status     RunStatus       `json:"status"`
	StartedAt  int64           `json:"startedAt"`
	FinishedAt *int64          `json:"finishedAt,omitempty"`
	Error      *RunError       `json:"error,omitempty"`
	Usage      json.RawMessage `json:"usage,omitempty"`
	// SandboxKey is the compound key of the sandbox the run was bound to.
	SandboxKey *string `json:"sandboxKey,omitempty"`
	// DetachedSince is when the last viewer detached; absent while attached.
	DetachedSince *int64 `json:"detachedSince,omitempty"`
	// CancelRequested records an explicit cancel; false is distinct from
	// absent.
	CancelRequested *bool `json:"cancelRequested,omitempty"`
	// DriverEpoch is the fencing token a host bumps when it claims the run.
	DriverEpoch *int64 `json:"driverEpoch,omitempty"`
}

// GenerationRunRecord is one generation run (TanStack's GenerationRunRecord):
// one generateImage, generateVideo, … call, filed under the slot ThreadID.
type GenerationRunRecord struct {
	RunID      string    `json:"runId"`
	ThreadID   string    `json:"threadId"`
	Activity   string    `json:"activity"`
	Provider   string    `json:"provider"`
	Model      string    `json:"model"`
	Status     RunStatus `json:"status"`
	StartedAt  int64     `json:"startedAt"`
	FinishedAt *int64    `json:"finishedAt,omitempty"`
	Error      *RunError `json:"error,omitempty"`
	// Result is terminal result metadata (ids, model, urls), never bytes.
	Result json.RawMessage `json:"result,omitempty"`
	// Artifacts is a JSON array of PersistedArtifactRef objects.
	Artifacts json.RawMessage `json:"artifacts,omitempty"`
	Usage     json.RawMessage `json:"usage,omitempty"`
}

// InterruptStatus is the lifecycle status of an interrupt.
type InterruptStatus string

// The interrupt statuses. Every interrupt starts pending.
const (
	InterruptPending   InterruptStatus = "pending"
	InterruptResolved  InterruptStatus = "resolved"
	InterruptCancelled InterruptStatus = "cancelled"
)

// InterruptRecord is one human-in-the-loop interrupt (TanStack's
// InterruptRecord).
type InterruptRecord struct {
	InterruptID string          `json:"interruptId"`
	RunID       string          `json:"runId"`
	ThreadID    string          `json:"threadId"`
	Status      InterruptStatus `json:"status"`
	RequestedAt int64           `json:"requestedAt"`
	ResolvedAt  *int64          `json:"resolvedAt,omitempty"`
	// Payload is a JSON object.
	Payload json.RawMessage `json:"payload"`
	// Response is any JSON value, absent when none was given; a JSON null
	// is kept as null.
	Response json.RawMessage `json:"response,omitempty"`
}

// InterruptCommitEntry is one terminal write of a commit batch (TanStack's
// InterruptCommitEntry): status resolved with an optional response, or
// cancelled with none.
type InterruptCommitEntry struct {
	InterruptID string          `json:"interruptId"`
	Status      InterruptStatus `json:"status"`
	Response    json.RawMessage `json:"response,omitempty"`
}

// Resolved returns a copy of r resolved at at with response: the write of
// resolveInterrupt and of a resolving commit entry, in every driver that
// writes records from Go.
func (r *InterruptRecord) Resolved(at int64, response json.RawMessage) *InterruptRecord {
	next := *r
	next.Status, next.ResolvedAt, next.Response = InterruptResolved, &at, response
	return &next
}

// Cancelled returns a copy of r cancelled at at.
func (r *InterruptRecord) Cancelled(at int64) *InterruptRecord {
	next := *r
	next.Status, next.ResolvedAt = InterruptCancelled, &at
	return &next
}

// Commit returns cur with e's terminal write applied at at.
func (e InterruptCommitEntry) Commit(cur *InterruptRecord, at int64) *InterruptRecord {
	if e.Status == InterruptResolved {
		return cur.Resolved(at, e.Response)
	}
	return cur.Cancelled(at)
}

// Committable is a commit batch's check of one entry's interrupt, cur
// (nil: it does not exist): ErrNotFound, ErrNotPending, or nil.
func Committable(id string, cur *InterruptRecord) error {
	if cur == nil {
		return fmt.Errorf("%w: %s", ErrNotFound, ShowID(id))
	}
	if cur.Status != InterruptPending {
		return fmt.Errorf("%w: %s is %s", ErrNotPending, ShowID(id), cur.Status)
	}
	return nil
}

// ArtifactRecord is the metadata of one persisted artifact (TanStack's
// ArtifactRecord); its bytes are a blob.
type ArtifactRecord struct {
	ArtifactID string `json:"artifactId"`
	RunID      string `json:"runId"`
	ThreadID   string `json:"threadId"`
	// BlobKey is the blob key of the bytes; absent on old records, which
	// use artifacts/<runId>/<artifactId>.
	BlobKey   *string `json:"blobKey,omitempty"`
	Name      string  `json:"name"`
	MimeType  string  `json:"mimeType"`
	Size      int64   `json:"size"`
	SourceURL *string `json:"sourceUrl,omitempty"`
	CreatedAt int64   `json:"createdAt"`
}

// BlobRecord is a stored blob's metadata (TanStack's BlobRecord). TanStack
// marks every field but key optional; this store always knows and sends
// size, etag, createdAt and updatedAt.
type BlobRecord struct {
	Key  string `json:"key"`
	Size int64  `json:"size"`
	// ETag is the hex SHA-256 of the bytes: new bytes, new etag.
	ETag           string            `json:"etag"`
	ContentType    *string           `json:"contentType,omitempty"`
	CustomMetadata map[string]string `json:"customMetadata,omitempty"`
	CreatedAt      int64             `json:"createdAt"`
	UpdatedAt      int64             `json:"updatedAt"`
}

// BlobMeta is a driver's blob row: the record plus the bucket object that
// holds its bytes. Object never leaves the server.
type BlobMeta struct {
	BlobRecord
	Object string `json:"-"`
}

// fieldState is what a patch does with one field.
type fieldState uint8

const (
	fieldKeep fieldState = iota
	fieldSet
	fieldClear
)

// Field is one field of a patch. The zero value leaves the field alone;
// Set gives it a value; Clear removes it, which is what TanStack's explicit
// `undefined` means and what a JSON null says on the wire.
type Field[T any] struct {
	state fieldState
	value T
}

// Set returns a Field that sets the field to v.
func Set[T any](v T) Field[T] { return Field[T]{state: fieldSet, value: v} }

// Clear returns a Field that removes the field.
func Clear[T any]() Field[T] { return Field[T]{state: fieldClear} }

// Named reports whether the patch names the field (sets or clears it).
func (f Field[T]) Named() bool { return f.state != fieldKeep }

// IsSet reports whether the patch sets the field.
func (f Field[T]) IsSet() bool { return f.state == fieldSet }

// IsClear reports whether the patch clears the field.
func (f Field[T]) IsClear() bool { return f.state == fieldClear }

// Value is the value a setting Field sets (the zero value otherwise).
func (f Field[T]) Value() T { return f.value }

// apply returns the field's new value given its current one.
func apply[T any](f Field[T], cur *T) *T {
	switch f.state {
	case fieldSet:
		v := f.value
		return &v
	case fieldClear:
		return nil
	}
	return cur
}

func applyRaw(f Field[json.RawMessage], cur json.RawMessage) json.RawMessage {
	switch f.state {
	case fieldSet:
		return f.value
	case fieldClear:
		return nil
	}
	return cur
}

// RunPatch is the mutable fields of a run that an update names (TanStack's
// update patch). Status can be set but not cleared.
type RunPatch struct {
	Status          Field[RunStatus]
	FinishedAt      Field[int64]
	Error           Field[RunError]
	Usage           Field[json.RawMessage]
	SandboxKey      Field[string]
	DetachedSince   Field[int64]
	CancelRequested Field[bool]
	DriverEpoch     Field[int64]
}

// Apply returns a new record: rec with p applied. rec is not modified;
// the result shares rec's unchanged values, which are never modified either.
func (p RunPatch) Apply(rec *RunRecord) *RunRecord {
	out := *rec
	if p.Status.IsSet() {
		out.Status = p.Status.Value()
	}
	out.FinishedAt = apply(p.FinishedAt, rec.FinishedAt)
	out.Error = apply(p.Error, rec.Error)
	out.Usage = applyRaw(p.Usage, rec.Usage)
	out.SandboxKey = apply(p.SandboxKey, rec.SandboxKey)
	out.DetachedSince = apply(p.DetachedSince, rec.DetachedSince)
	out.CancelRequested = apply(p.CancelRequested, rec.CancelRequested)
	out.DriverEpoch = apply(p.DriverEpoch, rec.DriverEpoch)
	return &out
}

// GenerationRunPatch is the mutable fields of a generation run that an
// update names. Status can be set but not cleared.
type GenerationRunPatch struct {
	Status     Field[RunStatus]
	FinishedAt Field[int64]
	Error      Field[RunError]
	Result     Field[json.RawMessage]
	Artifacts  Field[json.RawMessage]
	Usage      Field[json.RawMessage]
}

// Apply returns a new record: rec with p applied, rec unmodified.
func (p GenerationRunPatch) Apply(rec *GenerationRunRecord) *GenerationRunRecord {
	out := *rec
	if p.Status.IsSet() {
		out.Status = p.Status.Value()
	}
	out.FinishedAt = apply(p.FinishedAt, rec.FinishedAt)
	out.Error = apply(p.Error, rec.Error)
	out.Result = applyRaw(p.Result, rec.Result)
	out.Artifacts = applyRaw(p.Artifacts, rec.Artifacts)
	out.Usage = applyRaw(p.Usage, rec.Usage)
	return &out
}

// Orders. Every list of the contract is in one of these; drivers sort (or
// index) by them, and paging Positions follow them.

// RunOrder orders runs by StartedAt, then RunID bytes.
func RunOrder(a, b *RunRecord) int { return order(a.StartedAt, a.RunID, b.StartedAt, b.RunID) }

// ReclaimOrder orders reclaimable runs by DetachedSince, then RunID bytes.
// Both runs must have DetachedSince set.
func ReclaimOrder(a, b *RunRecord) int {
	return order(*a.DetachedSince, a.RunID, *b.DetachedSince, b.RunID)
}

// InterruptOrder orders interrupts by RequestedAt, then InterruptID bytes.
func InterruptOrder(a, b *InterruptRecord) int {
	return order(a.RequestedAt, a.InterruptID, b.RequestedAt, b.InterruptID)
}

// ArtifactOrder orders artifacts by CreatedAt, then ArtifactID bytes (the
// unsigned UTF-8 bytes, which is Go's string order).
func ArtifactOrder(a, b *ArtifactRecord) int {
	return order(a.CreatedAt, a.ArtifactID, b.CreatedAt, b.ArtifactID)
}

// After reports whether the sort key (at, id) comes strictly after p; a nil
// p comes before everything.
func (p *Position) After(at int64, id string) bool {
	return p == nil || order(at, id, p.At, p.ID) > 0
}

func order(at1 int64, id1 string, at2 int64, id2 string) int {
	switch {
	case at1 < at2:
		return -1
	case at1 > at2:
		return 1
	}
	return strings.Compare(id1, id2)
}
