package persist

import (
	"fmt"

	"github.com/ckptstore/ckptstore/persist/driver"
)

// The pure checks of each method, exported for a store that is not over a
// driver (a client of a remote store), so that it fails in the same order,
// with the same errors, before anything is sent. Each runs the checks of
// its method after ctx, in the order that method documents; the portable
// types run the same ones.

// CheckID fails with ErrInvalidID unless id is 1 to driver.MaxIDBytes of
// valid UTF-8; what names the field in the error.
func CheckID(what, id string) error { return checkID(what, id) }

// CheckRunStart checks the input of RunStore.CreateOrResume and fills its
// default status.
func CheckRunStart(in *RunStart) error {
	return checkStart(in.RunID, in.ThreadID, in.StartedAt, &in.Status)
}

// CheckRunUpdate checks the input of RunStore.Update.
func CheckRunUpdate(runID string, p RunPatch) error {
	return firstErr(checkID("runId", runID), checkRunPatch(p))
}

// CheckReclaimQuery checks the input of RunStore.ListReclaimable.
func CheckReclaimQuery(q ReclaimQuery) error {
	return firstErr(checkInt("now", q.Now, false), checkInt("ttlMs", q.TTLMs, true))
}

// CheckGenerationRunStart checks the input of
// GenerationRunStore.CreateOrResume and fills its default status.
func CheckGenerationRunStart(in *GenerationRunStart) error {
	// checkStart first: it fills the status before the rest run.
	if err := checkStart(in.RunID, in.ThreadID, in.StartedAt, &in.Status); err != nil {
		return err
	}
	return firstErr(checkValueText("activity", in.Activity), checkValueText("provider", in.Provider), checkValueText("model", in.Model))
}

// CheckGenerationRunUpdate checks the input of GenerationRunStore.Update.
func CheckGenerationRunUpdate(runID string, p GenerationRunPatch) error {
	return firstErr(checkID("runId", runID), checkGenerationRunPatch(p))
}

// CheckNewInterrupt checks the input of InterruptStore.Create.
func CheckNewInterrupt(in NewInterrupt) error {
	var missing error
	if in.Payload == nil {
		missing = fmt.Errorf("%w: payload is required", ErrInvalidEntry)
	}
	return firstErr(checkID("interruptId", in.InterruptID), checkID("runId", in.RunID), checkID("threadId", in.ThreadID),
		checkInt("requestedAt", in.RequestedAt, false), missing, checkJSON("payload", in.Payload, objectJSON),
		checkJSON("response", in.Response, anyJSON))
}

// CheckResolve checks the input of InterruptStore.Resolve.
func CheckResolve(interruptID string, response []byte) error {
	return firstErr(checkID("interruptId", interruptID), checkJSON("response", response, anyJSON))
}

// CheckCommitBatch checks the entries of InterruptStore.CommitBatch (the
// op token is checked before them, by whoever reads it).
func CheckCommitBatch(entries []InterruptCommitEntry) error {
	seen := make(map[string]bool, len(entries))
	for i, e := range entries {
		if err := checkID(fmt.Sprintf("entries[%d].interruptId", i), e.InterruptID); err != nil {
			return err
		}
		switch e.Status {
		case InterruptResolved:
			if err := checkJSON(fmt.Sprintf("entries[%d].response", i), e.Response, anyJSON); err != nil {
				return err
			}
		case InterruptCancelled:
			if e.Response != nil {
				return fmt.Errorf("%w: entries[%d] is cancelled and has a response", ErrInvalidEntry, i)
			}
		default:
			return fmt.Errorf("%w: entries[%d].status %s is not resolved or cancelled", ErrInvalidEntry, i, quoteShort(string(e.Status)))
		}
		if seen[e.InterruptID] {
			return fmt.Errorf("%w: %s", ErrDuplicateEntry, driver.ShowID(e.InterruptID))
		}
		seen[e.InterruptID] = true
	}
	return nil
}

// CheckMetadataKey checks the (namespace, key) of a MetadataStore method.
func CheckMetadataKey(namespace, key string) error {
	return firstErr(checkID("namespace", namespace), checkID("key", key))
}

// CheckMetadataValue checks the value of MetadataStore.Set.
func CheckMetadataValue(value []byte) error {
	if value == nil {
		return fmt.Errorf("%w: value is required (a JSON null stores null)", ErrInvalidEntry)
	}
	return checkJSON("value", value, anyJSON)
}

// CheckArtifact checks the record of ArtifactStore.Save.
func CheckArtifact(rec *ArtifactRecord) error { return checkArtifact(rec) }

// CheckBlobPut checks the key and options of BlobStore.Put.
func CheckBlobPut(key string, opts BlobPutOptions) error { return checkBlobPut(key, opts) }

// CheckBlobGet checks the key and range of BlobStore.Get (not the range
// against the object, which the store does).
func CheckBlobGet(key string, rng *BlobRange) error {
	if err := checkID("key", key); err != nil || rng == nil {
		return err
	}
	return firstErr(checkInt("range.offset", rng.Offset, true), checkOptInt("range.length", rng.Length, true))
}

// CheckBlobList checks the options of BlobStore.List.
func CheckBlobList(opts BlobListOptions) error {
	if err := firstErr(checkText("prefix", opts.Prefix), checkText("cursor", opts.Cursor)); err != nil || opts.Limit == nil {
		return err
	}
	return checkLimit(*opts.Limit)
}

// CheckText fails with ErrInvalidEntry unless s is valid UTF-8.
func CheckText(what, s string) error { return checkText(what, s) }
