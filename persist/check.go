package persist

import "fmt"

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
	if err := checkID("runId", runID); err != nil {
		return err
	}
	return checkRunPatch(p)
}

// CheckReclaimQuery checks the input of RunStore.ListReclaimable.
func CheckReclaimQuery(q ReclaimQuery) error {
	if err := checkInt("now", q.Now, false); err != nil {
		return err
	}
	return checkInt("ttlMs", q.TTLMs, true)
}

// CheckGenerationRunStart checks the input of
// GenerationRunStore.CreateOrResume and fills its default status.
func CheckGenerationRunStart(in *GenerationRunStart) error {
	if err := checkStart(in.RunID, in.ThreadID, in.StartedAt, &in.Status); err != nil {
		return err
	}
	for _, f := range [...]struct{ what, v string }{{"activity", in.Activity}, {"provider", in.Provider}, {"model", in.Model}} {
		if err := checkText(f.what, f.v); err != nil {
			return err
		}
	}
	return nil
}

// CheckGenerationRunUpdate checks the input of GenerationRunStore.Update.
func CheckGenerationRunUpdate(runID string, p GenerationRunPatch) error {
	if err := checkID("runId", runID); err != nil {
		return err
	}
	return checkGenerationRunPatch(p)
}

// CheckNewInterrupt checks the input of InterruptStore.Create.
func CheckNewInterrupt(in NewInterrupt) error {
	for _, f := range [...]struct{ what, v string }{{"interruptId", in.InterruptID}, {"runId", in.RunID}, {"threadId", in.ThreadID}} {
		if err := checkID(f.what, f.v); err != nil {
			return err
		}
	}
	if err := checkInt("requestedAt", in.RequestedAt, false); err != nil {
		return err
	}
	if in.Payload == nil {
		return fmt.Errorf("%w: payload is required", ErrInvalidEntry)
	}
	if err := checkJSON("payload", in.Payload, objectJSON); err != nil {
		return err
	}
	return checkJSON("response", in.Response, anyJSON)
}

// CheckResolve checks the input of InterruptStore.Resolve.
func CheckResolve(interruptID string, response []byte) error {
	if err := checkID("interruptId", interruptID); err != nil {
		return err
	}
	return checkJSON("response", response, anyJSON)
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
			return fmt.Errorf("%w: entries[%d].status %q is not resolved or cancelled", ErrInvalidEntry, i, e.Status)
		}
		if seen[e.InterruptID] {
			return fmt.Errorf("%w: %q", ErrDuplicateEntry, e.InterruptID)
		}
		seen[e.InterruptID] = true
	}
	return nil
}

// CheckMetadataKey checks the (namespace, key) of a MetadataStore method.
func CheckMetadataKey(namespace, key string) error {
	if err := checkID("namespace", namespace); err != nil {
		return err
	}
	return checkID("key", key)
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
	if err := checkID("key", key); err != nil {
		return err
	}
	if rng != nil {
		if err := checkInt("range.offset", rng.Offset, true); err != nil {
			return err
		}
		return checkOptInt("range.length", rng.Length, true)
	}
	return nil
}

// CheckBlobList checks the options of BlobStore.List.
func CheckBlobList(opts BlobListOptions) error {
	if err := checkText("prefix", opts.Prefix); err != nil {
		return err
	}
	if err := checkText("cursor", opts.Cursor); err != nil {
		return err
	}
	if opts.Limit != nil {
		return checkLimit(*opts.Limit)
	}
	return nil
}

// CheckText fails with ErrInvalidEntry unless s is valid UTF-8.
func CheckText(what, s string) error { return checkText(what, s) }
