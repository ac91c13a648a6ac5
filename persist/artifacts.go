package persist

import (
	"context"
	"fmt"

	"github.com/ckptstore/ckptstore/persist/driver"
)

// Artifacts is TanStack's ArtifactStore: the metadata records of persisted
// artifacts, whose bytes are blobs.
type Artifacts struct{ c *core }

// Save stores rec, replacing any record with its artifactId (an upsert:
// re-saving corrects a record, and fields it leaves out are gone). Check
// order: ctx, artifactId, runId, threadId (ErrInvalidID), blobKey (an id
// when present) (ErrInvalidID), name, mimeType, sourceUrl valid UTF-8,
// size a safe integer not negative, createdAt a safe integer
// (ErrInvalidEntry).
func (s *Artifacts) Save(ctx context.Context, rec *ArtifactRecord) error {
	if err := firstErr(begin(ctx), checkArtifact(rec)); err != nil {
		return err
	}
	return s.c.d.SaveArtifact(ctx, cloneArtifact(rec))
}

// checkArtifact is Save's pure check. A nil record is refused like any
// other bad input (ErrInvalidEntry), before the fields are read.
func checkArtifact(r *ArtifactRecord) error {
	if r == nil {
		return fmt.Errorf("%w: the artifact record is missing (nil)", ErrInvalidEntry)
	}
	return firstErr(checkID("artifactId", r.ArtifactID), checkID("runId", r.RunID), checkID("threadId", r.ThreadID),
		checkOptID("blobKey", r.BlobKey), checkValueText("name", r.Name), checkValueText("mimeType", r.MimeType),
		checkOptValueText("sourceUrl", r.SourceURL), checkInt("size", r.Size, true), checkInt("createdAt", r.CreatedAt, false))
}

// Get returns the artifact, or nil. Check order: ctx, artifactId.
func (s *Artifacts) Get(ctx context.Context, artifactID string) (*ArtifactRecord, error) {
	return readOne(ctx, "artifactId", artifactID, s.c.d.GetArtifact, cloneArtifact)
}

// List returns the run's artifacts by createdAt ascending, then artifactId
// by its UTF-8 bytes; [] when there are none. Check order: ctx, runId.
func (s *Artifacts) List(ctx context.Context, runID string) ([]*ArtifactRecord, error) {
	return s.list(ctx, "runId", driver.ArtifactScope{RunID: runID})
}

// ListForThread is List for the artifacts of a thread. Check order: ctx,
// threadId.
func (s *Artifacts) ListForThread(ctx context.Context, threadID string) ([]*ArtifactRecord, error) {
	return s.list(ctx, "threadId", driver.ArtifactScope{ThreadID: threadID})
}

func (s *Artifacts) list(ctx context.Context, what string, scope driver.ArtifactScope) ([]*ArtifactRecord, error) {
	if err := beginID(ctx, what, scope.ThreadID+scope.RunID); err != nil {
		return nil, err
	}
	return collect(ctx, func(after *driver.Position) ([]*ArtifactRecord, error) {
		return s.c.d.ListArtifacts(ctx, scope, after, driver.MaxListLimit)
	}, func(r *ArtifactRecord) driver.Position { return driver.Position{At: r.CreatedAt, ID: r.ArtifactID} }, cloneArtifact)
}

// Delete removes one artifact record; an absent one is a no-op. It does
// not touch the blob: the two are written and deleted as a pair by the
// caller. Check order: ctx, artifactId.
func (s *Artifacts) Delete(ctx context.Context, artifactID string) error {
	if err := beginID(ctx, "artifactId", artifactID); err != nil {
		return err
	}
	return s.c.d.DeleteArtifact(ctx, artifactID)
}

// DeleteForRun removes every artifact record of the run; a run with none
// is a no-op. A run with more than driver.MaxListLimit artifacts is
// deleted in steps of that many; after a failure the call can be repeated.
// Check order: ctx, runId.
func (s *Artifacts) DeleteForRun(ctx context.Context, runID string) error {
	if err := beginID(ctx, "runId", runID); err != nil {
		return err
	}
	for {
		n, err := s.c.d.DeleteRunArtifacts(ctx, runID, driver.MaxListLimit)
		if err != nil || n < driver.MaxListLimit {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}
