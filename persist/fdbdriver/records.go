package fdbdriver

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/ckptstore/ckptstore/fdbstore/kv"
	"github.com/ckptstore/ckptstore/persist/driver"
)

// ---- record kinds ----

// kind is what the record steps shared by runs, generation runs,
// interrupts and artifacts need of one record type: its name in errors,
// its key space, its id and its index entries, each a copy of the record.
type kind[T any] struct {
	what    string
	space   string
	id      func(*T) string
	entries func(k keys, rec *T) [][]byte
}

var (
	runKind = kind[driver.RunRecord]{"run", spaceRun,
		func(r *driver.RunRecord) string { return r.RunID }, keys.runEntries}
	genKind = kind[driver.GenerationRunRecord]{"generation run", spaceGen,
		func(r *driver.GenerationRunRecord) string { return r.RunID }, keys.genEntries}
	intKind = kind[driver.InterruptRecord]{"interrupt", spaceInt,
		func(r *driver.InterruptRecord) string { return r.InterruptID }, keys.intEntries}
	artKind = kind[driver.ArtifactRecord]{"artifact", spaceArt,
		func(r *driver.ArtifactRecord) string { return r.ArtifactID }, keys.artEntries}
)

// runEntries is every index entry of a run: the thread's runs, and while
// it runs the thread's running runs and, when detached, the reclaim index.
func (k keys) runEntries(rec *driver.RunRecord) [][]byte {
	out := [][]byte{k.entry(spaceRunThread, rec.ThreadID, rec.StartedAt, rec.RunID)}
	if rec.Status == driver.RunRunning {
		out = append(out, k.entry(spaceRunActive, rec.ThreadID, rec.StartedAt, rec.RunID))
		if rec.DetachedSince != nil {
			out = append(out, k.reclaim(*rec.DetachedSince, rec.RunID))
		}
	}
	return out
}

func (k keys) genEntries(rec *driver.GenerationRunRecord) [][]byte {
	return [][]byte{k.entry(spaceGenThread, rec.ThreadID, rec.StartedAt, rec.RunID)}
}

func (k keys) intEntries(rec *driver.InterruptRecord) [][]byte {
	out := [][]byte{
		k.entry(spaceIntThread, rec.ThreadID, rec.RequestedAt, rec.InterruptID),
		k.entry(spaceIntRun, rec.RunID, rec.RequestedAt, rec.InterruptID),
	}
	if rec.Status == driver.InterruptPending {
		out = append(out, k.entry(spaceIntThreadPend, rec.ThreadID, rec.RequestedAt, rec.InterruptID),
			k.entry(spaceIntRunPend, rec.RunID, rec.RequestedAt, rec.InterruptID))
	}
	return out
}

func (k keys) artEntries(rec *driver.ArtifactRecord) [][]byte {
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
func store[T any](tr kv.Transaction, k keys, kd kind[T], key []byte, cur, next *T) error {
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
func createOrResume[T any](ctx context.Context, d *Driver, kd kind[T], rec *T) (*T, error) {
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
func change[T any](ctx context.Context, d *Driver, kd kind[T], id string, next func(*T) *T) (bool, error) {
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

func getRecord[T any](ctx context.Context, d *Driver, key []byte) (*T, error) {
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
func last[T any](ctx context.Context, d *Driver, space, owner string) (*T, error) {
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
func list[T any](ctx context.Context, d *Driver, r kv.KeyRange, limit int) ([]*T, error) {
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

// CreateOrResumeRun implements driver.Runs.
func (d *Driver) CreateOrResumeRun(ctx context.Context, rec *driver.RunRecord) (*driver.RunRecord, error) {
	return createOrResume(ctx, d, runKind, rec)
}

// UpdateRun implements driver.Runs.
func (d *Driver) UpdateRun(ctx context.Context, runID string, patch driver.RunPatch) (bool, error) {
	return change(ctx, d, runKind, runID, patch.Apply)
}

// GetRun implements driver.Runs.
func (d *Driver) GetRun(ctx context.Context, runID string) (*driver.RunRecord, error) {
	return getRecord[driver.RunRecord](ctx, d, d.k.record(spaceRun, runID))
}

// ActiveRun implements driver.Runs: the last entry of the thread's
// running-runs index, whose order is (startedAt, runId).
func (d *Driver) ActiveRun(ctx context.Context, threadID string) (*driver.RunRecord, error) {
	return last[driver.RunRecord](ctx, d, spaceRunActive, threadID)
}

// ThreadRuns implements driver.Runs.
func (d *Driver) ThreadRuns(ctx context.Context, threadID string, after *driver.Position, limit int) ([]*driver.RunRecord, error) {
	return list[driver.RunRecord](ctx, d, d.k.page(spaceRunThread, threadID, pos(after)), limit)
}

// ReclaimableRuns implements driver.Runs.
func (d *Driver) ReclaimableRuns(ctx context.Context, cutoff int64, after *driver.Position, limit int) ([]*driver.RunRecord, error) {
	return list[driver.RunRecord](ctx, d, d.k.reclaimPage(cutoff, pos(after)), limit)
}

// ---- generation runs ----

// CreateOrResumeGenerationRun implements driver.GenerationRuns.
func (d *Driver) CreateOrResumeGenerationRun(ctx context.Context, rec *driver.GenerationRunRecord) (*driver.GenerationRunRecord, error) {
	return createOrResume(ctx, d, genKind, rec)
}

// UpdateGenerationRun implements driver.GenerationRuns.
func (d *Driver) UpdateGenerationRun(ctx context.Context, runID string, patch driver.GenerationRunPatch) (bool, error) {
	return change(ctx, d, genKind, runID, patch.Apply)
}

// GetGenerationRun implements driver.GenerationRuns.
func (d *Driver) GetGenerationRun(ctx context.Context, runID string) (*driver.GenerationRunRecord, error) {
	return getRecord[driver.GenerationRunRecord](ctx, d, d.k.record(spaceGen, runID))
}

// LatestGenerationRun implements driver.GenerationRuns.
func (d *Driver) LatestGenerationRun(ctx context.Context, threadID string) (*driver.GenerationRunRecord, error) {
	return last[driver.GenerationRunRecord](ctx, d, spaceGenThread, threadID)
}

// ---- interrupts ----

// CreateInterrupt implements driver.Interrupts.
func (d *Driver) CreateInterrupt(ctx context.Context, rec *driver.InterruptRecord) error {
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

// ResolveInterrupt implements driver.Interrupts.
func (d *Driver) ResolveInterrupt(ctx context.Context, id string, at int64, response json.RawMessage) (bool, error) {
	return change(ctx, d, intKind, id, func(cur *driver.InterruptRecord) *driver.InterruptRecord { return cur.Resolved(at, response) })
}

// CancelInterrupt implements driver.Interrupts.
func (d *Driver) CancelInterrupt(ctx context.Context, id string, at int64) (bool, error) {
	return change(ctx, d, intKind, id, func(cur *driver.InterruptRecord) *driver.InterruptRecord { return cur.Cancelled(at) })
}

// epochOf is the op-token epoch of a store time: whole OpTokenTTLs. A
// token is looked up in its epoch and the one before and lives until its
// recorded expiry; each batch with a token clears, blind, the epochs
// before those two.
func epochOf(ms int64) int64 { return ms / driver.OpTokenTTL.Milliseconds() }

// CommitInterrupts implements driver.Interrupts. The batch's reads (every
// interrupt, the marker, the op token in two epochs) are one round.
func (d *Driver) CommitInterrupts(ctx context.Context, entries []driver.InterruptCommitEntry, at int64, opToken string) error {
	_, err := marked(ctx, d, func(c *call) (struct{}, error) {
		now := d.now().UnixMilli()
		e := epochOf(now)
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
		curs := make([]*driver.InterruptRecord, len(entries))
		for i, en := range entries {
			key := d.k.record(spaceInt, en.InterruptID)
			b, err := fs[i].Get()
			if err != nil {
				return struct{}{}, err
			}
			if b != nil { // absent: curs[i] stays nil, which Committable reports
				if curs[i], err = decode[driver.InterruptRecord](key, b); err != nil {
					return struct{}{}, err
				}
			}
			if err := driver.Committable(en.InterruptID, curs[i]); err != nil {
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
			c.tr.Set(d.k.intOp(e, opToken), kv.EncodeInt64(now+driver.OpTokenTTL.Milliseconds()))
		}
		return struct{}{}, nil
	})
	return err
}

// GetInterrupt implements driver.Interrupts.
func (d *Driver) GetInterrupt(ctx context.Context, id string) (*driver.InterruptRecord, error) {
	return getRecord[driver.InterruptRecord](ctx, d, d.k.record(spaceInt, id))
}

// ListInterrupts implements driver.Interrupts.
func (d *Driver) ListInterrupts(ctx context.Context, scope driver.InterruptScope, after *driver.Position, limit int) ([]*driver.InterruptRecord, error) {
	space, owner := spaceIntThread, scope.ThreadID
	if scope.RunID != "" {
		space, owner = spaceIntRun, scope.RunID
	}
	if scope.PendingOnly {
		space = map[string]string{spaceIntThread: spaceIntThreadPend, spaceIntRun: spaceIntRunPend}[space]
	}
	return list[driver.InterruptRecord](ctx, d, d.k.page(space, owner, pos(after)), limit)
}

// ---- metadata ----

// GetMetadata implements driver.Metadata.
func (d *Driver) GetMetadata(ctx context.Context, namespace, key string) (json.RawMessage, error) {
	var out json.RawMessage
	err := d.read(ctx, func(tr kv.ReadTransaction) error {
		b, err := tr.Get(d.k.meta(namespace, key)).Get()
		out = b
		return err
	})
	return out, err
}

// SetMetadata implements driver.Metadata: a blind write, idempotent as it
// stands.
func (d *Driver) SetMetadata(ctx context.Context, namespace, key string, value json.RawMessage) error {
	if len(value) > kv.MaxValueSize {
		return fmt.Errorf("%w: the metadata value is %d bytes; the FoundationDB driver stores at most %d", driver.ErrInvalidEntry, len(value), kv.MaxValueSize)
	}
	return d.plain(ctx, func(tr kv.Transaction) error {
		tr.Set(d.k.meta(namespace, key), value)
		return nil
	})
}

// DeleteMetadata implements driver.Metadata.
func (d *Driver) DeleteMetadata(ctx context.Context, namespace, key string) error {
	return d.plain(ctx, func(tr kv.Transaction) error {
		tr.Clear(d.k.meta(namespace, key))
		return nil
	})
}

// ---- artifacts ----

// SaveArtifact implements driver.Artifacts. A retry stores the same record
// over itself: no marker.
func (d *Driver) SaveArtifact(ctx context.Context, rec *driver.ArtifactRecord) error {
	if _, err := encode("artifact", rec); err != nil {
		return err
	}
	key := d.k.record(spaceArt, rec.ArtifactID)
	return d.plain(ctx, func(tr kv.Transaction) error {
		b, err := tr.Get(key).Get()
		if err != nil {
			return err
		}
		cur, err := decode[driver.ArtifactRecord](key, b)
		if err != nil {
			return err
		}
		return store(tr, d.k, artKind, key, cur, rec)
	})
}

// GetArtifact implements driver.Artifacts.
func (d *Driver) GetArtifact(ctx context.Context, artifactID string) (*driver.ArtifactRecord, error) {
	return getRecord[driver.ArtifactRecord](ctx, d, d.k.record(spaceArt, artifactID))
}

// ListArtifacts implements driver.Artifacts.
func (d *Driver) ListArtifacts(ctx context.Context, scope driver.ArtifactScope, after *driver.Position, limit int) ([]*driver.ArtifactRecord, error) {
	space, owner := spaceArtThread, scope.ThreadID
	if scope.RunID != "" {
		space, owner = spaceArtRun, scope.RunID
	}
	return list[driver.ArtifactRecord](ctx, d, d.k.page(space, owner, pos(after)), limit)
}

// DeleteArtifact implements driver.Artifacts.
func (d *Driver) DeleteArtifact(ctx context.Context, artifactID string) error {
	key := d.k.record(spaceArt, artifactID)
	return d.plain(ctx, func(tr kv.Transaction) error {
		b, err := tr.Get(key).Get()
		if err != nil || b == nil {
			return err
		}
		cur, err := decode[driver.ArtifactRecord](key, b)
		if err != nil {
			return err
		}
		tr.Clear(key)
		setIndex(tr, d.k.artEntries(cur), nil)
		return nil
	})
}

// DeleteRunArtifacts implements driver.Artifacts. Its count is marked: a
// retry that counted the artifacts its first attempt removed as absent
// would end the portable layer's loop early.
func (d *Driver) DeleteRunArtifacts(ctx context.Context, runID string, limit int) (int, error) {
	return marked(ctx, d, func(c *call) (int, error) {
		page := getRange(c.tr, d.k.page(spaceArtRun, runID, nil), kv.RangeOptions{Limit: limit})
		if done, err := c.replayed(); err != nil || done {
			return 0, err
		}
		kvs, err := page()
		if err != nil {
			return 0, err
		}
		recs, err := decodeAll[driver.ArtifactRecord](kvs)
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
	driver.BlobRecord
	Object string `json:"object"`
}

// MarshalJSON writes the row (driver.BlobMeta.AppendRow): the record, then
// "object". BlobRecord's own MarshalJSON would leave "object" out.
func (r blobRow) MarshalJSON() ([]byte, error) {
	return (&driver.BlobMeta{BlobRecord: r.BlobRecord, Object: r.Object}).AppendRow(nil), nil
}

// UnmarshalJSON reads MarshalJSON's form.
func (r *blobRow) UnmarshalJSON(b []byte) error {
	var m driver.BlobMeta
	if err := m.UnmarshalRow(b); err != nil {
		return err
	}
	r.BlobRecord, r.Object = m.BlobRecord, m.Object
	return nil
}

func (r *blobRow) meta() *driver.BlobMeta {
	return &driver.BlobMeta{BlobRecord: r.BlobRecord, Object: r.Object}
}

// putResult is PutBlob's marked result.
type putResult struct {
	Row      blobRow `json:"row"`
	Replaced string  `json:"replaced"`
}

// PutBlob implements driver.Blobs. It is marked: a retry that found its
// own row would report its own object as replaced, and the caller would
// delete the new bytes.
func (d *Driver) PutBlob(ctx context.Context, meta *driver.BlobMeta) (*driver.BlobMeta, string, error) {
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

// GetBlob implements driver.Blobs.
func (d *Driver) GetBlob(ctx context.Context, key string) (*driver.BlobMeta, error) {
	r, err := getRecord[blobRow](ctx, d, d.k.blob(key))
	if r == nil || err != nil {
		return nil, err
	}
	return r.meta(), nil
}

// DeleteBlob implements driver.Blobs. Marked, so that a retry returns the
// object the first attempt removed and its bytes are deleted.
func (d *Driver) DeleteBlob(ctx context.Context, key string) (string, error) {
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

// ListBlobs implements driver.Blobs.
func (d *Driver) ListBlobs(ctx context.Context, prefix, after string, limit int) ([]*driver.BlobMeta, error) {
	rows, err := list[blobRow](ctx, d, d.k.blobPage(prefix, after), limit)
	if err != nil {
		return nil, err
	}
	out := make([]*driver.BlobMeta, len(rows))
	for i, r := range rows {
		out[i] = r.meta()
	}
	return out, nil
}
