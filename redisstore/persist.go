package redisstore

// Persistence is the Redis driver of the persistence contract (package
// persist/driver): every call is one command or one Lua script, so its
// checks and its writes are one atomic step on the server.
//
// Every key lives under the hash tag of the store's prefix, the same
// {prefix} the checkpoint Driver uses (keyBase), followed by "p:" so that
// the two never share a key; a script is therefore legal on Redis Cluster.
// Op keys are the engine's one kind, "{prefix}:o:<kind>:<token>", with the
// kinds of store.go. docs/persistence.md lists the keys and the script of
// each call.
//
// Indexes are sorted sets whose scores are all 0, read with the lex range
// commands: a member is the index's scope (a thread or run id, with its
// length in front) then the record's sort time as 8 big-endian bytes with
// the sign bit flipped, then the record's id, so that the byte order of
// members is the contract's order (time, then id bytes) and a page's
// Position is exactly one lex bound. No time ever passes through a
// floating-point score.
//
// A write that a resend could turn into a wrong answer (a patch over a
// newer write, a commit batch that would fail as not pending, a blob put
// that would name its own bytes as replaced, a renew or release after the
// lease moved on, an insert that would answer with the run as a patch
// between the sends left it) records its reply under a per-call op key, and a resend
// of the call (go-redis resending after a lost reply) returns that reply.
//
// Lock leases are judged by the engine's lease clock, as writer leases
// are: the server's TIME read inside the script, or PersistenceOptions.Now
// when a test sets it. The lock scripts publish the lock's key on one
// channel per store; WatchLock listens there through one subscription per
// Persistence.

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	ckptdriver "github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/persist/driver"
)

// PersistenceOptions configure a Persistence.
type PersistenceOptions struct {
	// Client is the connection; a *redis.Client or *redis.ClusterClient.
	Client redis.UniversalClient
	// Prefix names the tenant: every key is under the hash tag {Prefix}.
	// "" means DefaultPrefix.
	Prefix string
	// Now is a test clock, by which lock leases expire. nil means the
	// server's TIME, read inside each lock script: the engine's lease
	// clock, the right choice when several processes share the store.
	Now func() time.Time
}

// Persistence is the Redis driver of the persistence contract. It is safe
// for concurrent use; Close ends its lock subscription.
type Persistence struct {
	c     redis.UniversalClient
	k     persistKeys
	now   func() time.Time
	opTTL int64
	hub   *hub
}

var _ driver.Driver = (*Persistence)(nil)

// NewPersistence returns a Persistence on opts.Client.
func NewPersistence(opts PersistenceOptions) (*Persistence, error) {
	if opts.Client == nil {
		return nil, errors.New("redisstore: PersistenceOptions.Client is nil")
	}
	k := newPersistKeys(opts.Prefix)
	return &Persistence{c: opts.Client, k: k, now: opts.Now, opTTL: driver.OpTokenTTL.Milliseconds(),
		hub: newHub(opts.Client, k.channel())}, nil
}

// Close ends the lock subscription, waking every watcher. It does not
// close the client.
func (d *Persistence) Close() error { return d.hub.close() }

var persistScripts = []*redis.Script{
	createRunScript, updateRunScript, createGenRunScript, patchScript, listScript,
	createInterruptScript, finishInterruptScript, commitScript, metaScript,
	saveArtifactScript, deleteArtifactScript, deleteRunArtifactsScript,
	putBlobScript, deleteBlobScript, listBlobsScript,
	lockAcquireScript, lockRenewScript, lockReleaseScript,
}

// eval runs a script with EVALSHA (EVAL on NOSCRIPT).
func (d *Persistence) eval(ctx context.Context, sc *redis.Script, keys []string, args []any) ([]any, error) {
	v, err := sc.Run(ctx, d.c, keys, args...).Result()
	if err != nil {
		return nil, err
	}
	switch r := v.(type) {
	case []any:
		return r, nil
	case int64:
		return []any{r}, nil
	}
	return nil, fmt.Errorf("%w: script reply %T", driver.ErrCorrupt, v)
}

// nowArg is the clock argument of the scripts: Options.Now in ms, or ""
// for the server's TIME.
func (d *Persistence) nowArg() string {
	if d.now == nil {
		return ""
	}
	return fmt.Sprint(d.now().UnixMilli())
}

// newToken is a fresh op token: one per call, sent unchanged by every
// resend of that call.
func newToken() string { return rand.Text() }

// persistKeys builds the persistence key names.
type persistKeys struct {
	base string // "{prefix}:p:"
	op   string // "{prefix}:o:", the engine's op keys
}

func newPersistKeys(prefix string) persistKeys {
	b := keyBase(prefix)
	return persistKeys{base: b + "p:", op: b + "o:"}
}

func (k persistKeys) run(id string) string       { return k.base + "run:" + id }
func (k persistKeys) runs() string               { return k.base + "runs" }
func (k persistKeys) activeRuns() string         { return k.base + "runs:active" }
func (k persistKeys) reclaimRuns() string        { return k.base + "runs:reclaim" }
func (k persistKeys) genRun(id string) string    { return k.base + "gen:" + id }
func (k persistKeys) genRuns() string            { return k.base + "gens" }
func (k persistKeys) interrupt(id string) string { return k.base + "int:" + id }
func (k persistKeys) intIndex(byRun, pending bool) string {
	s := k.base + "ints:thread"
	if byRun {
		s = k.base + "ints:run"
	}
	if pending {
		s += ":pending"
	}
	return s
}
func (k persistKeys) meta() string              { return k.base + "meta" }
func (k persistKeys) artifact(id string) string { return k.base + "art:" + id }
func (k persistKeys) artIndex(byRun bool) string {
	return k.base + map[bool]string{false: "arts:thread", true: "arts:run"}[byRun]
}
func (k persistKeys) blob(key string) string      { return k.base + "blob:" + key }
func (k persistKeys) blobs() string               { return k.base + "blobs" }
func (k persistKeys) lock(key string) string      { return k.base + "lock:" + key }
func (k persistKeys) lockQueue(key string) string { return k.base + "lockq:" + key }
func (k persistKeys) lockWaits(key string) string { return k.base + "lockw:" + key }
func (k persistKeys) channel() string             { return k.base + "lockev" }
func (k persistKeys) opKey(kind byte, token string) string {
	return k.op + string(kind) + ":" + token
}

// timeBytes is t as 8 bytes whose byte order is t's order.
func timeBytes(t int64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(t)^1<<63)
	return string(b[:])
}

// scopePrefix is the start of every member of scope: its length (ids are
// at most MaxIDBytes) then its bytes, so no scope's prefix is a prefix of
// another's.
func scopePrefix(scope string) string {
	var b [2]byte
	binary.BigEndian.PutUint16(b[:], uint16(len(scope)))
	return string(b[:]) + scope
}

// member is a record's member in a scoped index.
func member(scope string, at int64, id string) string { return scopePrefix(scope) + timeBytes(at) + id }

// scopeRange is the lex range of scope's members strictly after after;
// and the 1-based byte where an id starts in them. Every member is longer
// than the prefix, and the byte after the prefix is 0x7f or 0x80 (a safe
// integer's top byte, sign flipped), never 0xff (nor is any byte of UTF-8),
// so prefix+"\xff" bounds exactly the scope's members.
func scopeRange(scope string, after *driver.Position) (lo, hi string, off int) {
	p := scopePrefix(scope)
	lo = "[" + p
	if after != nil {
		lo = "(" + p + timeBytes(after.At) + after.ID
	}
	return lo, "(" + p + "\xff", len(p) + 9
}

// list runs listScript and decodes each record with dec.
func list[T any](ctx context.Context, d *Persistence, index, lo, hi string, limit int, recPrefix string, off int, rev bool) ([]*T, error) {
	revArg := "0"
	if rev {
		revArg = "1"
	}
	res, err := d.eval(ctx, listScript, []string{index}, []any{lo, hi, limit, recPrefix, off, revArg})
	if err != nil {
		return nil, err
	}
	out := make([]*T, 0, len(res))
	for _, r := range res {
		rec, err := decode[T](r)
		if err != nil {
			return nil, err
		}
		if rec == nil {
			return nil, fmt.Errorf("%w: %s names a missing record", driver.ErrCorrupt, index)
		}
		out = append(out, rec)
	}
	return out, nil
}

func replyInt(res []any) int64 {
	if len(res) > 0 {
		if n, ok := res[0].(int64); ok {
			return n
		}
	}
	return -1
}

// createOrResume runs the create script of a run or generation run with
// args then rec's pairs; the script answers "new", or "found" with the
// stored record.
func createOrResume[T any](ctx context.Context, d *Persistence, what, id string, rec *T, sc *redis.Script, keys []string, args ...any) (*T, error) {
	pairs, err := fields(any(rec).(membered))
	if err != nil {
		return nil, err
	}
	res, err := d.eval(ctx, sc, keys, append(args, pairs...))
	if err != nil {
		return nil, fmt.Errorf("redisstore: create %s %q: %w", what, id, err)
	}
	if len(res) == 2 && res[0] == "found" {
		return decode[T](res[1])
	}
	return rec, nil
}

// newest is the record of scope's last member in index, or nil.
func newest[T any](ctx context.Context, d *Persistence, index, scope, recPrefix string) (*T, error) {
	lo, hi, off := scopeRange(scope, nil)
	rs, err := list[T](ctx, d, index, lo, hi, 1, recPrefix, off, true)
	if err != nil || len(rs) == 0 {
		return nil, err
	}
	return rs[0], nil
}

// Runs.

// CreateOrResumeRun implements driver.Runs.
func (d *Persistence) CreateOrResumeRun(ctx context.Context, rec *driver.RunRecord) (*driver.RunRecord, error) {
	keys := []string{d.k.run(rec.RunID), d.k.runs(), d.k.activeRuns(), d.k.opKey(opRunCreate, newToken())}
	return createOrResume(ctx, d, "run", rec.RunID, rec, createRunScript, keys,
		string(rec.Status), member(rec.ThreadID, rec.StartedAt, rec.RunID), d.opTTL)
}

// UpdateRun implements driver.Runs.
func (d *Persistence) UpdateRun(ctx context.Context, runID string, patch driver.RunPatch) (bool, error) {
	pairs, err := patchPairs(&patch)
	if err != nil {
		return false, err
	}
	mode, rm := "keep", ""
	switch {
	case patch.DetachedSince.IsSet():
		mode, rm = "set", timeBytes(patch.DetachedSince.Value())+runID
	case patch.DetachedSince.IsClear():
		mode = "clear"
	}
	keys := []string{d.k.run(runID), d.k.activeRuns(), d.k.reclaimRuns(), d.k.opKey(opRunUpdate, newToken())}
	res, err := d.eval(ctx, updateRunScript, keys, append([]any{d.opTTL, mode, rm}, pairs...))
	if err != nil {
		return false, fmt.Errorf("redisstore: update run %q: %w", runID, err)
	}
	return replyInt(res) == 1, nil
}

// GetRun implements driver.Runs.
func (d *Persistence) GetRun(ctx context.Context, runID string) (*driver.RunRecord, error) {
	return hgetall[driver.RunRecord](ctx, d, d.k.run(runID))
}

// ActiveRun implements driver.Runs.
func (d *Persistence) ActiveRun(ctx context.Context, threadID string) (*driver.RunRecord, error) {
	return newest[driver.RunRecord](ctx, d, d.k.activeRuns(), threadID, d.k.run(""))
}

// ThreadRuns implements driver.Runs.
func (d *Persistence) ThreadRuns(ctx context.Context, threadID string, after *driver.Position, limit int) ([]*driver.RunRecord, error) {
	lo, hi, off := scopeRange(threadID, after)
	return list[driver.RunRecord](ctx, d, d.k.runs(), lo, hi, limit, d.k.run(""), off, false)
}

// ReclaimableRuns implements driver.Runs. Its index holds exactly the
// running runs with detachedSince set, by detachedSince then run id.
func (d *Persistence) ReclaimableRuns(ctx context.Context, cutoff int64, after *driver.Position, limit int) ([]*driver.RunRecord, error) {
	lo := "-"
	if after != nil {
		lo = "(" + timeBytes(after.At) + after.ID
	}
	hi := "(" + timeBytes(cutoff+1) // every member at cutoff is below: ids are not empty
	return list[driver.RunRecord](ctx, d, d.k.reclaimRuns(), lo, hi, limit, d.k.run(""), 9, false)
}

// Generation runs.

// CreateOrResumeGenerationRun implements driver.GenerationRuns.
func (d *Persistence) CreateOrResumeGenerationRun(ctx context.Context, rec *driver.GenerationRunRecord) (*driver.GenerationRunRecord, error) {
	keys := []string{d.k.genRun(rec.RunID), d.k.genRuns(), d.k.opKey(opGenRunCreate, newToken())}
	return createOrResume(ctx, d, "generation run", rec.RunID, rec, createGenRunScript, keys,
		member(rec.ThreadID, rec.StartedAt, rec.RunID), d.opTTL)
}

// UpdateGenerationRun implements driver.GenerationRuns.
func (d *Persistence) UpdateGenerationRun(ctx context.Context, runID string, patch driver.GenerationRunPatch) (bool, error) {
	pairs, err := patchPairs(&patch)
	if err != nil {
		return false, err
	}
	res, err := d.eval(ctx, patchScript, []string{d.k.genRun(runID), d.k.opKey(opGenRunUpdate, newToken())}, append([]any{d.opTTL}, pairs...))
	if err != nil {
		return false, fmt.Errorf("redisstore: update generation run %q: %w", runID, err)
	}
	return replyInt(res) == 1, nil
}

// GetGenerationRun implements driver.GenerationRuns.
func (d *Persistence) GetGenerationRun(ctx context.Context, runID string) (*driver.GenerationRunRecord, error) {
	return hgetall[driver.GenerationRunRecord](ctx, d, d.k.genRun(runID))
}

// LatestGenerationRun implements driver.GenerationRuns.
func (d *Persistence) LatestGenerationRun(ctx context.Context, threadID string) (*driver.GenerationRunRecord, error) {
	return newest[driver.GenerationRunRecord](ctx, d, d.k.genRuns(), threadID, d.k.genRun(""))
}

// Interrupts.

// CreateInterrupt implements driver.Interrupts. Insert-if-absent needs no
// op key: a resend finds the interrupt and does nothing.
func (d *Persistence) CreateInterrupt(ctx context.Context, rec *driver.InterruptRecord) error {
	pairs, err := fields(rec)
	if err != nil {
		return err
	}
	keys := []string{d.k.interrupt(rec.InterruptID), d.k.intIndex(false, false), d.k.intIndex(true, false),
		d.k.intIndex(false, true), d.k.intIndex(true, true)}
	args := append([]any{member(rec.ThreadID, rec.RequestedAt, rec.InterruptID), member(rec.RunID, rec.RequestedAt, rec.InterruptID)}, pairs...)
	if _, err := d.eval(ctx, createInterruptScript, keys, args); err != nil {
		return fmt.Errorf("redisstore: create interrupt %q: %w", rec.InterruptID, err)
	}
	return nil
}

func (d *Persistence) finishInterrupt(ctx context.Context, id string, pairs []any) (bool, error) {
	keys := []string{d.k.interrupt(id), d.k.intIndex(false, true), d.k.intIndex(true, true), d.k.opKey(opInterruptFinish, newToken())}
	res, err := d.eval(ctx, finishInterruptScript, keys, append([]any{d.opTTL}, pairs...))
	if err != nil {
		return false, fmt.Errorf("redisstore: interrupt %q: %w", id, err)
	}
	return replyInt(res) == 1, nil
}

func statusJSON(s driver.InterruptStatus) string {
	return string(ckptdriver.AppendJSONString(nil, string(s)))
}

// storedStatus decodes a status as a script returns it: the JSON string
// the record's status field holds. The error of a commit batch then words
// it as every engine does (driver.Committable), `i1 is resolved`.
func storedStatus(v any) (driver.InterruptStatus, bool) {
	s, ok := v.(string)
	if !ok {
		return "", false
	}
	r := ckptdriver.NewJSONReader([]byte(s))
	defer r.Close()
	st, ok, err := r.String("status", driver.ErrCorrupt)
	if err != nil || !ok || r.End() != nil {
		return "", false
	}
	return driver.InterruptStatus(st), true
}

// ResolveInterrupt implements driver.Interrupts.
func (d *Persistence) ResolveInterrupt(ctx context.Context, id string, at int64, response json.RawMessage) (bool, error) {
	return d.finishInterrupt(ctx, id, []any{"resolvedAt", fmt.Sprint(at), "response", string(response),
		"status", statusJSON(driver.InterruptResolved)})
}

// CancelInterrupt implements driver.Interrupts.
func (d *Persistence) CancelInterrupt(ctx context.Context, id string, at int64) (bool, error) {
	return d.finishInterrupt(ctx, id, []any{"resolvedAt", fmt.Sprint(at), "status", statusJSON(driver.InterruptCancelled)})
}

// CommitInterrupts implements driver.Interrupts. The op key is the
// caller's token, or a fresh one, so that a resend of the script after a
// lost reply reports the commit instead of ErrNotPending.
func (d *Persistence) CommitInterrupts(ctx context.Context, entries []driver.InterruptCommitEntry, at int64, opToken string) error {
	if opToken == "" {
		opToken = newToken()
	}
	keys := []string{d.k.opKey(opInterruptCommit, opToken), d.k.intIndex(false, true), d.k.intIndex(true, true)}
	args := []any{d.opTTL, fmt.Sprint(at)}
	for _, e := range entries {
		keys = append(keys, d.k.interrupt(e.InterruptID))
		args = append(args, statusJSON(e.Status), string(e.Response))
	}
	res, err := d.eval(ctx, commitScript, keys, args)
	if err != nil {
		return fmt.Errorf("redisstore: commit batch: %w", err)
	}
	if len(res) >= 2 {
		i, _ := res[1].(int64)
		if i >= 1 && int(i) <= len(entries) {
			id := entries[i-1].InterruptID
			switch res[0] {
			case "NOT_FOUND":
				return fmt.Errorf("%w: %s", driver.ErrNotFound, driver.ShowID(id))
			case "NOT_PENDING":
				if len(res) == 3 {
					if st, ok := storedStatus(res[2]); ok {
						return fmt.Errorf("%w: %s is %s", driver.ErrNotPending, driver.ShowID(id), st)
					}
				}
			}
		}
	}
	if len(res) != 1 || res[0] != "ok" {
		return fmt.Errorf("%w: commit reply %v", driver.ErrCorrupt, res)
	}
	return nil
}

// GetInterrupt implements driver.Interrupts.
func (d *Persistence) GetInterrupt(ctx context.Context, id string) (*driver.InterruptRecord, error) {
	return hgetall[driver.InterruptRecord](ctx, d, d.k.interrupt(id))
}

// ListInterrupts implements driver.Interrupts.
func (d *Persistence) ListInterrupts(ctx context.Context, scope driver.InterruptScope, after *driver.Position, limit int) ([]*driver.InterruptRecord, error) {
	byRun, id := scope.RunID != "", scope.ThreadID
	if byRun {
		id = scope.RunID
	}
	lo, hi, off := scopeRange(id, after)
	return list[driver.InterruptRecord](ctx, d, d.k.intIndex(byRun, scope.PendingOnly), lo, hi, limit, d.k.interrupt(""), off, false)
}

// Metadata.

// metaField is (namespace, key) as one hash field: the namespace with its
// length in front, so that no two pairs share a field.
func metaField(namespace, key string) string { return scopePrefix(namespace) + key }

// GetMetadata implements driver.Metadata.
func (d *Persistence) GetMetadata(ctx context.Context, namespace, key string) (json.RawMessage, error) {
	v, err := d.c.HGet(ctx, d.k.meta(), metaField(namespace, key)).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("redisstore: get metadata: %w", err)
	}
	return json.RawMessage(v), nil
}

func (d *Persistence) setMeta(ctx context.Context, namespace, key, value string) error {
	_, err := d.eval(ctx, metaScript, []string{d.k.meta(), d.k.opKey(opMetadata, newToken())}, []any{d.opTTL, metaField(namespace, key), value})
	if err != nil {
		return fmt.Errorf("redisstore: metadata: %w", err)
	}
	return nil
}

// SetMetadata implements driver.Metadata.
func (d *Persistence) SetMetadata(ctx context.Context, namespace, key string, value json.RawMessage) error {
	return d.setMeta(ctx, namespace, key, string(value))
}

// DeleteMetadata implements driver.Metadata.
func (d *Persistence) DeleteMetadata(ctx context.Context, namespace, key string) error {
	return d.setMeta(ctx, namespace, key, "")
}

// Artifacts.

// SaveArtifact implements driver.Artifacts.
func (d *Persistence) SaveArtifact(ctx context.Context, rec *driver.ArtifactRecord) error {
	pairs, err := fields(rec)
	if err != nil {
		return err
	}
	keys := []string{d.k.artifact(rec.ArtifactID), d.k.artIndex(false), d.k.artIndex(true), d.k.opKey(opArtifactSave, newToken())}
	args := append([]any{d.opTTL, member(rec.ThreadID, rec.CreatedAt, rec.ArtifactID), member(rec.RunID, rec.CreatedAt, rec.ArtifactID)}, pairs...)
	if _, err := d.eval(ctx, saveArtifactScript, keys, args); err != nil {
		return fmt.Errorf("redisstore: save artifact %q: %w", rec.ArtifactID, err)
	}
	return nil
}

// GetArtifact implements driver.Artifacts.
func (d *Persistence) GetArtifact(ctx context.Context, artifactID string) (*driver.ArtifactRecord, error) {
	return hgetall[driver.ArtifactRecord](ctx, d, d.k.artifact(artifactID))
}

// ListArtifacts implements driver.Artifacts.
func (d *Persistence) ListArtifacts(ctx context.Context, scope driver.ArtifactScope, after *driver.Position, limit int) ([]*driver.ArtifactRecord, error) {
	byRun, id := scope.RunID != "", scope.ThreadID
	if byRun {
		id = scope.RunID
	}
	lo, hi, off := scopeRange(id, after)
	return list[driver.ArtifactRecord](ctx, d, d.k.artIndex(byRun), lo, hi, limit, d.k.artifact(""), off, false)
}

// DeleteArtifact implements driver.Artifacts.
func (d *Persistence) DeleteArtifact(ctx context.Context, artifactID string) error {
	keys := []string{d.k.artifact(artifactID), d.k.artIndex(false), d.k.artIndex(true)}
	if _, err := d.eval(ctx, deleteArtifactScript, keys, nil); err != nil {
		return fmt.Errorf("redisstore: delete artifact %q: %w", artifactID, err)
	}
	return nil
}

// DeleteRunArtifacts implements driver.Artifacts.
func (d *Persistence) DeleteRunArtifacts(ctx context.Context, runID string, limit int) (int, error) {
	lo, hi, off := scopeRange(runID, nil)
	keys := []string{d.k.artIndex(true), d.k.artIndex(false), d.k.opKey(opRunArtifactsDelete, newToken())}
	res, err := d.eval(ctx, deleteRunArtifactsScript, keys, []any{d.opTTL, lo, hi, limit, d.k.artifact(""), off})
	if err != nil {
		return 0, fmt.Errorf("redisstore: delete run artifacts %q: %w", runID, err)
	}
	return int(replyInt(res)), nil
}

// Blobs.

// PutBlob implements driver.Blobs.
func (d *Persistence) PutBlob(ctx context.Context, meta *driver.BlobMeta) (*driver.BlobMeta, string, error) {
	pairs, err := fields(&meta.BlobRecord)
	if err != nil {
		return nil, "", err
	}
	keys := []string{d.k.blob(meta.Key), d.k.blobs(), d.k.opKey(opBlobPut, newToken())}
	args := append([]any{d.opTTL, meta.Key, meta.Object, fmt.Sprint(meta.CreatedAt)}, pairs...)
	res, err := d.eval(ctx, putBlobScript, keys, args)
	if err != nil {
		return nil, "", fmt.Errorf("redisstore: put blob %q: %w", meta.Key, err)
	}
	if len(res) != 2 {
		return nil, "", fmt.Errorf("%w: put blob reply %v", driver.ErrCorrupt, res)
	}
	created, ok1 := res[0].(string)
	replaced, ok2 := res[1].(string)
	if !ok1 || !ok2 {
		return nil, "", fmt.Errorf("%w: put blob reply %v", driver.ErrCorrupt, res)
	}
	stored := *meta
	if err := json.Unmarshal([]byte(created), &stored.CreatedAt); err != nil { // a number
		return nil, "", fmt.Errorf("%w: blob createdAt %q", driver.ErrCorrupt, created)
	}
	return &stored, replaced, nil
}

// GetBlob implements driver.Blobs.
func (d *Persistence) GetBlob(ctx context.Context, key string) (*driver.BlobMeta, error) {
	m, err := hgetallFlat(ctx, d, d.k.blob(key))
	if err != nil {
		return nil, fmt.Errorf("redisstore: get blob %q: %w", key, err)
	}
	return decodeBlob(m)
}

func decodeBlob(r any) (*driver.BlobMeta, error) {
	rec, err := decode[driver.BlobRecord](r)
	if err != nil || rec == nil {
		return nil, err
	}
	flat := r.([]any)
	meta := &driver.BlobMeta{BlobRecord: *rec}
	for i := 0; i < len(flat); i += 2 {
		if flat[i] == "~o" {
			meta.Object, _ = flat[i+1].(string)
		}
	}
	return meta, nil
}

// DeleteBlob implements driver.Blobs.
func (d *Persistence) DeleteBlob(ctx context.Context, key string) (string, error) {
	res, err := d.eval(ctx, deleteBlobScript, []string{d.k.blob(key), d.k.blobs(), d.k.opKey(opBlobDelete, newToken())}, []any{d.opTTL, key})
	if err != nil {
		return "", fmt.Errorf("redisstore: delete blob %q: %w", key, err)
	}
	obj, ok := "", len(res) == 1
	if ok {
		obj, ok = res[0].(string)
	}
	if !ok {
		return "", fmt.Errorf("%w: delete blob reply %v", driver.ErrCorrupt, res)
	}
	return obj, nil
}

// ListBlobs implements driver.Blobs. Keys are valid UTF-8, which has no
// 0xff byte, so prefix+"\xff" bounds exactly the keys with the prefix.
func (d *Persistence) ListBlobs(ctx context.Context, prefix, after string, limit int) ([]*driver.BlobMeta, error) {
	lo, hi := "["+prefix, "+"
	switch {
	case after == "" && prefix == "":
		lo = "-"
	case after >= prefix:
		lo = "(" + after
	}
	if prefix != "" {
		hi = "(" + prefix + "\xff"
	}
	res, err := d.eval(ctx, listBlobsScript, []string{d.k.blobs()}, []any{lo, hi, limit, d.k.blob("")})
	if err != nil {
		return nil, fmt.Errorf("redisstore: list blobs: %w", err)
	}
	out := make([]*driver.BlobMeta, 0, len(res))
	for _, r := range res {
		m, err := decodeBlob(r)
		if err != nil {
			return nil, err
		}
		if m == nil {
			return nil, fmt.Errorf("%w: the blob index names a missing row", driver.ErrCorrupt)
		}
		out = append(out, m)
	}
	return out, nil
}
