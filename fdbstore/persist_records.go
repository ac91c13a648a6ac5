package fdbstore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/ckptstore/ckptstore/fdbstore/kv"
	pdriver "github.com/ckptstore/ckptstore/persist/driver"
)

// ---- record kinds ----

// kind is what the record steps shared by runs, generation runs,
// interrupts and artifacts need of one record type: its name in errors,
// its key space, its id and its index entries, each a copy of the record.
type kind[T any] struct {
	what    string
	space   string
	id      func(*T) string
	entries func(k persistKeys, rec *T) [][]byte
}

var (
	runKind = kind[pdriver.RunRecord]{"run", spaceRun,
		func(r *pdriver.RunRecord) string { return r.RunID }, persistKeys.runEntries}
	genKind = kind[pdriver.GenerationRunRecord]{"generation run", spaceGen,
		func(r *pdriver.GenerationRunRecord) string { return r.RunID }, persistKeys.genEntries}
	intKind = kind[pdriver.InterruptRecord]{"interrupt", spaceInt,
		func(r *pdriver.InterruptRecord) string { return r.InterruptID }, persistKeys.intEntries}
	artKind = kind[pdriver.ArtifactRecord]{"artifact", spaceArt,
		func(r *pdriver.ArtifactRecord) string { return r.ArtifactID }, persistKeys.artEntries}
)

// runEntries is every index entry of a run: the thread's runs, and while
// it runs the thread's running runs and, when detached, the reclaim index.
func (k persistKeys) runEntries(rec *pdriver.RunRecord) [][]byte {
	out := [][]byte{k.entry(spaceRunThread, rec.ThreadID, rec.StartedAt, rec.RunID)}
	if rec.Status == pdriver.RunRunning {
		out = append(out, k.entry(spaceRunActive, rec.ThreadID, rec.StartedAt, rec.RunID))
		if rec.DetachedSince != nil {
			out = append(out, k.reclaim(*rec.DetachedSince, rec.RunID))
		}
	}
	return out
}

func (k persistKeys) genEntries(rec *pdriver.GenerationRunRecord) [][]byte {
	return [][]byte{k.entry(spaceGenThread, rec.ThreadID, rec.StartedAt, rec.RunID)}
}

func (k persistKeys) intEntries(rec *pdriver.InterruptRecord) [][]byte {
	out := [][]byte{
		k.entry(spaceIntThread, rec.ThreadID, rec.RequestedAt, rec.InterruptID),
		k.entry(spaceIntRun, rec.RunID, rec.RequestedAt, rec.InterruptID),
	}
	if rec.Status == pdriver.InterruptPending {
		out = append(out, k.entry(spaceIntThreadPend, rec.ThreadID, rec.RequestedAt, rec.InterruptID),
			k.entry(spaceIntRunPend, rec.RunID, rec.RequestedAt, rec.InterruptID))
	}
	return out
}

func (k persistKeys) artEntries(rec *pdriver.ArtifactRecord) [][]byte {
	return [][]byte{
		k.entry(spaceArtRun, rec.RunID, rec.CreatedAt, rec.ArtifactID),
		k.entry(spaceArtThread, rec.ThreadID, rec.CreatedAt, rec.ArtifactID),
	}
}

// setIndex writes val under every entry, or clears them when val is nil.
func setIndex(tr kv.Transaction, entries [][]byte, val []byte) {
	for _, k := range entries {
		if val == nil {
			tr.Clear(k)
		} else {
			tr.Set(k, val)
		}
	}
}

// store writes next at key with its index entries, in place of cur (nil:
// none), whose entries it clears first.
func store[T any](tr kv.Transaction, k persistKeys, kd kind[T], key []byte, cur, next *T) error {
	val, err := encode(kd.what, next)
	if err != nil {
		return err
	}
	if cur != nil {
		setIndex(tr, kd.entries(k, cur), nil)
	}
	tr.Set(key, val)
	setIndex(tr, kd.entries(k, next), val)
	return nil
}

// createOrResume stores rec and its index entries when its id has no
// record and returns it, or returns the stored record (see created).
func createOrResume[T any](ctx context.Context, d *Persistence, kd kind[T], rec *T) (*T, error) {
	val, err := encode(kd.what, rec)
	if err != nil {
		return nil, err
	}
	key := d.k.record(kd.space, kd.id(rec))
	b, err := d.created(ctx, key, func(tr kv.Transaction) {
		tr.Set(key, val)
		setIndex(tr, kd.entries(d.k, rec), val)
	})
	if err != nil {
		return nil, err
	}
	if b == nil {
		return rec, nil
	}
	return decode[T](key, b)
}

// change replaces record id with next(cur), moving its index entries,
// and reports whether it existed.
func change[T any](ctx context.Context, d *Persistence, kd kind[T], id string, next func(*T) *T) (bool, error) {
	key := d.k.record(kd.space, id)
	return marked(ctx, d, func(c *call) (bool, error) {
		b, done, err := c.get(key)
		if err != nil || done || b == nil {
			return false, err
		}
		cur, err := decode[T](key, b)
		if err != nil {
			return false, err
		}
		return true, store(c.tr, d.k, kd, key, cur, next(cur))
	})
}

func getRecord[T any](ctx context.Context, d *Persistence, key []byte) (*T, error) {
	var out *T
	err := d.read(ctx, func(tr kv.ReadTransaction) error {
		b, err := tr.Get(key).Get()
		if err == nil {
			out, err = decode[T](key, b)
		}
		return err
	})
	return out, err
}

// last returns the last entry of an owner's index (reverse, limit 1).
func last[T any](ctx context.Context, d *Persistence, space, owner string) (*T, error) {
	var out *T
	err := d.read(ctx, func(tr kv.ReadTransaction) error {
		kvs, err := getRange(tr, d.k.page(space, owner, nil), kv.RangeOptions{Limit: 1, Reverse: true})()
		if err != nil || len(kvs) == 0 {
			return err
		}
		out, err = decode[T](kvs[0].Key, kvs[0].Value)
		return err
	})
	return out, err
}

// list reads one page of an index.
func list[T any](ctx context.Context, d *Persistence, r kv.KeyRange, limit int) ([]*T, error) {
	var out []*T
	err := d.read(ctx, func(tr kv.ReadTransaction) error {
		kvs, err := getRange(tr, r, kv.RangeOptions{Limit: limit})()
		if err == nil {
			out, err = decodeAll[T](kvs)
		}
		return err
	})
	return out, err
}

// ---- runs ----

// CreateOrResumeRun implements pdriver.Runs.
func (d *Persistence) CreateOrResumeRun(ctx context.Context, rec *pdriver.RunRecord) (*pdriver.RunRecord, error) {
	return createOrResume(ctx, d, runKind, rec)
}

// UpdateRun implements pdriver.Runs.
func (d *Persistence) UpdateRun(ctx context.Context, runID string, patch pdriver.RunPatch) (bool, error) {
	return change(ctx, d, runKind, runID, patch.Apply)
}

// GetRun implements pdriver.Runs.
func (d *Persistence) GetRun(ctx context.Context, runID string) (*pdriver.RunRecord, error) {
	return getRecord[pdriver.RunRecord](ctx, d, d.k.record(spaceRun, runID))
}

// ActiveRun implements pdriver.Runs: the last entry of the thread's
// running-runs index, whose order is (startedAt, runId).
func (d *Persistence) ActiveRun(ctx context.Context, threadID string) (*pdriver.RunRecord, error) {
	return last[pdriver.RunRecord](ctx, d, spaceRunActive, threadID)
}

// ThreadRuns implements pdriver.Runs.
func (d *Persistence) ThreadRuns(ctx context.Context, threadID string, after *pdriver.Position, limit int) ([]*pdriver.RunRecord, error) {
	return list[pdriver.RunRecord](ctx, d, d.k.page(spaceRunThread, threadID, pos(after)), limit)
}

// ReclaimableRuns implements pdriver.Runs.
func (d *Persistence) ReclaimableRuns(ctx context.Context, cutoff int64, after *pdriver.Position, limit int) ([]*pdriver.RunRecord, error) {
	return list[pdriver.RunRecord](ctx, d, d.k.reclaimPage(cutoff, pos(after)), limit)
}

// ---- generation runs ----

// CreateOrResumeGenerationRun implements pdriver.GenerationRuns.
func (d *Persistence) CreateOrResumeGenerationRun(ctx context.Context, rec *pdriver.GenerationRunRecord) (*pdriver.GenerationRunRecord, error) {
	return createOrResume(ctx, d, genKind, rec)
}

// UpdateGenerationRun implements pdriver.GenerationRuns.
func (d *Persistence) UpdateGenerationRun(ctx context.Context, runID string, patch pdriver.GenerationRunPatch) (bool, error) {
	return change(ctx, d, genKind, runID, patch.Apply)
}

// GetGenerationRun implements pdriver.GenerationRuns.
func (d *Persistence) GetGenerationRun(ctx context.Context, runID string) (*pdriver.GenerationRunRecord, error) {
	return getRecord[pdriver.GenerationRunRecord](ctx, d, d.k.record(spaceGen, runID))
}

// LatestGenerationRun implements pdriver.GenerationRuns.
func (d *Persistence) LatestGenerationRun(ctx context.Context, threadID string) (*pdriver.GenerationRunRecord, error) {
	return last[pdriver.GenerationRunRecord](ctx, d, spaceGenThread, threadID)
}

// ---- interrupts ----

// CreateInterrupt implements pdriver.Interrupts.
func (d *Persistence) CreateInterrupt(ctx context.Context, rec *pdriver.InterruptRecord) error {
	if _, err := encode("interrupt", rec); err != nil {
		return err
	}
	key := d.k.record(spaceInt, rec.InterruptID)
	return d.plain(ctx, func(tr kv.Transaction) error {
		b, err := tr.Get(key).Get()
		if err != nil || b != nil {
			return err
		}
		return store(tr, d.k, intKind, key, nil, rec)
	})
}

// ResolveInterrupt implements pdriver.Interrupts.
func (d *Persistence) ResolveInterrupt(ctx context.Context, id string, at int64, response json.RawMessage) (bool, error) {
	return change(ctx, d, intKind, id, func(cur *pdriver.InterruptRecord) *pdriver.InterruptRecord { return cur.Resolved(at, response) })
}

// CancelInterrupt implements pdriver.Interrupts.
func (d *Persistence) CancelInterrupt(ctx context.Context, id string, at int64) (bool, error) {
	return change(ctx, d, intKind, id, func(cur *pdriver.InterruptRecord) *pdriver.InterruptRecord { return cur.Cancelled(at) })
}

// The op tokens of CommitInterrupts live in epochs of whole OpTokenTTLs
// (markers.go's epochOf, whose epochs are as long): a token is looked up
// in its epoch and the one before and lives until its recorded expiry;
// each batch with a token clears, blind, the epochs before those two.
// The constant fails to compile unless the two lifetimes are equal.
const _ = uint(markerTTL-pdriver.OpTokenTTL) + uint(pdriver.OpTokenTTL-markerTTL)

// CommitInterrupts implements pdriver.Interrupts. The batch's reads (every
// interrupt, the marker, the op token in two epochs) are one round.
func (d *Persistence) CommitInterrupts(ctx context.Context, entries []pdriver.InterruptCommitEntry, at int64, opToken string) error {
	_, err := marked(ctx, d, func(c *call) (struct{}, error) {
		t := d.now()
		now, e := t.UnixMilli(), epochOf(t)
		var tokens [2]kv.FutureValue
		if opToken != "" {
			tokens[0] = c.tr.Get(d.k.intOp(e, opToken))
			tokens[1] = c.tr.Get(d.k.intOp(e-1, opToken))
		}
		fs := make([]kv.FutureValue, len(entries))
		for i, en := range entries {
			fs[i] = c.tr.Get(d.k.record(spaceInt, en.InterruptID))
		}
		if done, err := c.replayed(); err != nil || done {
			return struct{}{}, err
		}
		if opToken != "" {
			for _, f := range tokens {
				b, err := f.Get()
				if err != nil {
					return struct{}{}, err
				}
				if b != nil && now < kv.DecodeInt64(b) {
					return struct{}{}, nil
				}
			}
		}
		curs := make([]*pdriver.InterruptRecord, len(entries))
		for i, en := range entries {
			key := d.k.record(spaceInt, en.InterruptID)
			b, err := fs[i].Get()
			if err != nil {
				return struct{}{}, err
			}
			if b != nil { // absent: curs[i] stays nil, which Committable reports
				if curs[i], err = decode[pdriver.InterruptRecord](key, b); err != nil {
					return struct{}{}, err
				}
			}
			if err := pdriver.Committable(en.InterruptID, curs[i]); err != nil {
				return struct{}{}, err
			}
		}
		for i, en := range entries {
			if err := store(c.tr, d.k, intKind, d.k.record(spaceInt, en.InterruptID), curs[i], en.Commit(curs[i], at)); err != nil {
				return struct{}{}, err
			}
		}
		if opToken != "" {
			c.tr.ClearRange(d.k.intOpsBefore(e - 1))
			c.tr.Set(d.k.intOp(e, opToken), kv.EncodeInt64(now+pdriver.OpTokenTTL.Milliseconds()))
		}
		return struct{}{}, nil
	})
	return err
}

// GetInterrupt implements pdriver.Interrupts.
func (d *Persistence) GetInterrupt(ctx context.Context, id string) (*pdriver.InterruptRecord, error) {
	return getRecord[pdriver.InterruptRecord](ctx, d, d.k.record(spaceInt, id))
}

// ListInterrupts implements pdriver.Interrupts.
func (d *Persistence) ListInterrupts(ctx context.Context, scope pdriver.InterruptScope, after *pdriver.Position, limit int) ([]*pdriver.InterruptRecord, error) {
	space, owner := spaceIntThread, scope.ThreadID
	if scope.RunID != "" {
		space, owner = spaceIntRun, scope.RunID
	}
	if scope.PendingOnly {
		space = map[string]string{spaceIntThread: spaceIntThreadPend, spaceIntRun: spaceIntRunPend}[space]
	}
	return list[pdriver.InterruptRecord](ctx, d, d.k.page(space, owner, pos(after)), limit)
}

// ---- metadata ----

// GetMetadata implements pdriver.Metadata.
func (d *Persistence) GetMetadata(ctx context.Context, namespace, key string) (json.RawMessage, error) {
	var out json.RawMessage
	err := d.read(ctx, func(tr kv.ReadTransaction) error {
		b, err := tr.Get(d.k.meta(namespace, key)).Get()
		out = b
		return err
	})
	return out, err
}

// SetMetadata implements pdriver.Metadata: a blind write, idempotent as it
// stands.
func (d *Persistence) SetMetadata(ctx context.Context, namespace, key string, value json.RawMessage) error {
	if len(value) > kv.MaxValueSize {
		return fmt.Errorf("%w: the metadata value is %d bytes; the FoundationDB driver stores at most %d", pdriver.ErrInvalidEntry, len(value), kv.MaxValueSize)
	}
	return d.plain(ctx, func(tr kv.Transaction) error {
		tr.Set(d.k.meta(namespace, key), value)
		return nil
	})
}

// DeleteMetadata implements pdriver.Metadata.
func (d *Persistence) DeleteMetadata(ctx context.Context, namespace, key string) error {
	return d.plain(ctx, func(tr kv.Transaction) error {
		tr.Clear(d.k.meta(namespace, key))
		return nil
	})
}

// ---- artifacts ----

// SaveArtifact implements pdriver.Artifacts. A retry stores the same record
// over itself: no marker.
func (d *Persistence) SaveArtifact(ctx context.Context, rec *pdriver.ArtifactRecord) error {
	if _, err := encode("artifact", rec); err != nil {
		return err
	}
	key := d.k.record(spaceArt, rec.ArtifactID)
	return d.plain(ctx, func(tr kv.Transaction) error {
		b, err := tr.Get(key).Get()
		if err != nil {
			return err
		}
		cur, err := decode[pdriver.ArtifactRecord](key, b)
		if err != nil {
			return err
		}
		return store(tr, d.k, artKind, key, cur, rec)
	})
}

// GetArtifact implements pdriver.Artifacts.
func (d *Persistence) GetArtifact(ctx context.Context, artifactID string) (*pdriver.ArtifactRecord, error) {
	return getRecord[pdriver.ArtifactRecord](ctx, d, d.k.record(spaceArt, artifactID))
}

// ListArtifacts implements pdriver.Artifacts.
func (d *Persistence) ListArtifacts(ctx context.Context, scope pdriver.ArtifactScope, after *pdriver.Position, limit int) ([]*pdriver.ArtifactRecord, error) {
	space, owner := spaceArtThread, scope.ThreadID
	if scope.RunID != "" {
		space, owner = spaceArtRun, scope.RunID
	}
	return list[pdriver.ArtifactRecord](ctx, d, d.k.page(space, owner, pos(after)), limit)
}

// DeleteArtifact implements pdriver.Artifacts.
func (d *Persistence) DeleteArtifact(ctx context.Context, artifactID string) error {
	key := d.k.record(spaceArt, artifactID)
	return d.plain(ctx, func(tr kv.Transaction) error {
		b, err := tr.Get(key).Get()
		if err != nil || b == nil {
			return err
		}
		cur, err := decode[pdriver.ArtifactRecord](key, b)
		if err != nil {
			return err
		}
		tr.Clear(key)
		setIndex(tr, d.k.artEntries(cur), nil)
		return nil
	})
}

// DeleteRunArtifacts implements pdriver.Artifacts. Its count is marked: a
// retry that counted the artifacts its first attempt removed as absent
// would end the portable layer's loop early.
func (d *Persistence) DeleteRunArtifacts(ctx context.Context, runID string, limit int) (int, error) {
	return marked(ctx, d, func(c *call) (int, error) {
		page := getRange(c.tr, d.k.page(spaceArtRun, runID, nil), kv.RangeOptions{Limit: limit})
		if done, err := c.replayed(); err != nil || done {
			return 0, err
		}
		kvs, err := page()
		if err != nil {
			return 0, err
		}
		recs, err := decodeAll[pdriver.ArtifactRecord](kvs)
		if err != nil {
			return 0, err
		}
		for _, r := range recs {
			c.tr.Clear(d.k.record(spaceArt, r.ArtifactID))
			setIndex(c.tr, d.k.artEntries(r), nil)
		}
		return len(recs), nil
	})
}

// ---- blobs ----

// blobRow is a blob row as stored: the record and its bucket object.
type blobRow struct {
	pdriver.BlobRecord
	Object string `json:"object"`
}

// MarshalJSON writes the row (pdriver.BlobMeta.AppendRow): the record, then
// "object". BlobRecord's own MarshalJSON would leave "object" out.
func (r blobRow) MarshalJSON() ([]byte, error) {
	return (&pdriver.BlobMeta{BlobRecord: r.BlobRecord, Object: r.Object}).AppendRow(nil), nil
}

// UnmarshalJSON reads MarshalJSON's form.
func (r *blobRow) UnmarshalJSON(b []byte) error {
	var m pdriver.BlobMeta
	if err := m.UnmarshalRow(b); err != nil {
		return err
	}
	r.BlobRecord, r.Object = m.BlobRecord, m.Object
	return nil
}

func (r *blobRow) meta() *pdriver.BlobMeta {
	return &pdriver.BlobMeta{BlobRecord: r.BlobRecord, Object: r.Object}
}

// putResult is PutBlob's marked result.
type putResult struct {
	Row      blobRow `json:"row"`
	Replaced string  `json:"replaced"`
}

// PutBlob implements pdriver.Blobs. It is marked: a retry that found its
// own row would report its own object as replaced, and the caller would
// delete the new bytes.
func (d *Persistence) PutBlob(ctx context.Context, meta *pdriver.BlobMeta) (*pdriver.BlobMeta, string, error) {
	key := d.k.blob(meta.Key)
	res, err := marked(ctx, d, func(c *call) (putResult, error) {
		b, done, err := c.get(key)
		if err != nil || done {
			return putResult{}, err
		}
		cur, err := decode[blobRow](key, b)
		if err != nil {
			return putResult{}, err
		}
		res := putResult{Row: blobRow{BlobRecord: meta.BlobRecord, Object: meta.Object}}
		if cur != nil {
			res.Row.CreatedAt, res.Replaced = cur.CreatedAt, cur.Object
		}
		val, err := encode("blob row", &res.Row)
		if err != nil {
			return putResult{}, err
		}
		c.tr.Set(key, val)
		return res, nil
	})
	if err != nil {
		return nil, "", err
	}
	return res.Row.meta(), res.Replaced, nil
}

// GetBlob implements pdriver.Blobs.
func (d *Persistence) GetBlob(ctx context.Context, key string) (*pdriver.BlobMeta, error) {
	r, err := getRecord[blobRow](ctx, d, d.k.blob(key))
	if r == nil || err != nil {
		return nil, err
	}
	return r.meta(), nil
}

// DeleteBlob implements pdriver.Blobs. Marked, so that a retry returns the
// object the first attempt removed and its bytes are deleted.
func (d *Persistence) DeleteBlob(ctx context.Context, key string) (string, error) {
	k := d.k.blob(key)
	return marked(ctx, d, func(c *call) (string, error) {
		b, done, err := c.get(k)
		if err != nil || done || b == nil {
			return "", err
		}
		cur, err := decode[blobRow](k, b)
		if err != nil {
			return "", err
		}
		c.tr.Clear(k)
		return cur.Object, nil
	})
}

// ListBlobs implements pdriver.Blobs.
func (d *Persistence) ListBlobs(ctx context.Context, prefix, after string, limit int) ([]*pdriver.BlobMeta, error) {
	rows, err := list[blobRow](ctx, d, d.k.blobPage(prefix, after), limit)
	if err != nil {
		return nil, err
	}
	out := make([]*pdriver.BlobMeta, len(rows))
	for i, r := range rows {
		out[i] = r.meta()
	}
	return out, nil
}
