package persist

import (
	"bytes"
	"encoding/json"
	"maps"

	"github.com/ckptstore/ckptstore/persist/driver"
)

// Clone-on-read and clone-on-write, done here once so that no driver has
// to: a record a user passes in or gets back shares nothing with what a
// driver keeps, so changing it changes nothing stored.

func ptr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func rawClone(r json.RawMessage) json.RawMessage {
	if r == nil {
		return nil
	}
	return bytes.Clone(r)
}

func cloneRunError(e *driver.RunError) *driver.RunError {
	if e == nil {
		return nil
	}
	return &driver.RunError{Message: e.Message, Code: ptr(e.Code)}
}

func cloneRun(r *RunRecord) *RunRecord {
	if r == nil {
		return nil
	}
	c := *r
	c.FinishedAt, c.Error, c.Usage = ptr(r.FinishedAt), cloneRunError(r.Error), rawClone(r.Usage)
	c.SandboxKey, c.DetachedSince = ptr(r.SandboxKey), ptr(r.DetachedSince)
	c.CancelRequested, c.DriverEpoch = ptr(r.CancelRequested), ptr(r.DriverEpoch)
	return &c
}

func cloneGenerationRun(r *GenerationRunRecord) *GenerationRunRecord {
	if r == nil {
		return nil
	}
	c := *r
	c.FinishedAt, c.Error = ptr(r.FinishedAt), cloneRunError(r.Error)
	c.Result, c.Artifacts, c.Usage = rawClone(r.Result), rawClone(r.Artifacts), rawClone(r.Usage)
	return &c
}

func cloneInterrupt(r *InterruptRecord) *InterruptRecord {
	if r == nil {
		return nil
	}
	c := *r
	c.ResolvedAt, c.Payload, c.Response = ptr(r.ResolvedAt), rawClone(r.Payload), rawClone(r.Response)
	return &c
}

func cloneArtifact(r *ArtifactRecord) *ArtifactRecord {
	if r == nil {
		return nil
	}
	c := *r
	c.BlobKey, c.SourceURL = ptr(r.BlobKey), ptr(r.SourceURL)
	return &c
}

func cloneBlobRecord(r *driver.BlobRecord) BlobRecord {
	c := *r
	c.ContentType = ptr(r.ContentType)
	if r.CustomMetadata != nil {
		c.CustomMetadata = maps.Clone(r.CustomMetadata)
	}
	return c
}

// cloneRunPatch copies the values a patch sets, so the driver may keep them.
func cloneRunPatch(p RunPatch) RunPatch {
	if p.Error.IsSet() {
		e := p.Error.Value()
		p.Error = driver.Set(*cloneRunError(&e))
	}
	if p.Usage.IsSet() {
		p.Usage = driver.Set(rawClone(p.Usage.Value()))
	}
	return p
}

func cloneGenerationRunPatch(p GenerationRunPatch) GenerationRunPatch {
	if p.Error.IsSet() {
		e := p.Error.Value()
		p.Error = driver.Set(*cloneRunError(&e))
	}
	for _, f := range []*Field[json.RawMessage]{&p.Result, &p.Artifacts, &p.Usage} {
		if f.IsSet() {
			*f = driver.Set(rawClone(f.Value()))
		}
	}
	return p
}
