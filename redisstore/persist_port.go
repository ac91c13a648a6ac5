package redisstore

// Export and import (driver.Porter). Dump finds the records with SCAN
// inside the store's hash tag (on every master of a cluster, as Check
// does), a window of the smallest keys after its position at a time, and
// reads them in pipelined pages; metadata with HSCAN of the one hash. Load checks every record first (one pipelined read), fails the
// call with ErrRecordConflict before any write when one differs, and then
// writes each absent record with loadScript, an insert-if-absent of the
// record hash with its index members in one script, all of them in one
// pipeline: a record created by
// someone else between the check and the write is never overwritten, and
// Load reports it as a conflict. Op keys and lock keys are not read.

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"

	"github.com/redis/go-redis/v9"

	"github.com/ckptstore/ckptstore/persist/driver"
)

// dumpPage is how many records one pipelined read of Dump fetches.
const dumpPage = 256

// loadScript: KEYS rec, index…; ARGV one member per index, then pairs….
// Insert-if-absent: a resend finds the record and answers "found" with it,
// which Load compares.
var loadScript = newPersistScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return {'found', redis.call('HGETALL', KEYS[1])} end
local m = #KEYS - 1
set_pairs(KEYS[1], m + 1)
for i = 2, #KEYS do redis.call('ZADD', KEYS[i], 0, ARGV[i - 1]) end
return {'new'}
`)

func init() { persistScripts = append(persistScripts, loadScript) }

var _ driver.Porter = (*Persistence)(nil)

// dumpWindow is how many keys one SCAN pass of Dump keeps: the smallest
// after the position, read then in pages of dumpPage.
var dumpWindow = 16 * dumpPage

// Dump implements driver.Porter; within a kind the records come in key
// byte order (metadata in the byte order of its hash fields). Redis keeps
// no index of every record by key, so each window of dumpWindow keys is
// one SCAN pass over the keyspace (HSCAN of the metadata hash) that keeps
// the smallest keys after the position: memory is bounded by the window,
// and a Dump resumed at any position costs one such pass a window, the
// pass it needs to find where it stands, but no read of a record before
// it.
func (d *Persistence) Dump(ctx context.Context, after driver.DumpPosition) iter.Seq2[driver.Record, error] {
	return func(yield func(driver.Record, error) bool) {
		kinds, err := after.KindsAfter()
		if err != nil {
			yield(driver.Record{}, err)
			return
		}
		for _, at := range kinds {
			if !d.dumpKind(ctx, at, yield) {
				return
			}
		}
	}
}

// dumpKind yields the records of at.Kind after at.Key, window by window,
// and reports whether the caller may go on.
func (d *Persistence) dumpKind(ctx context.Context, at driver.DumpPosition, yield func(driver.Record, error) bool) bool {
	prefix := d.prefixOf(at.Kind)
	for {
		var w window
		var err error
		if at.Kind == driver.KindMetadata {
			err = d.hscanWindow(ctx, at.Key, &w)
		} else {
			err = d.scanWindow(ctx, prefix, prefix+at.Key, &w)
		}
		if err != nil {
			yield(driver.Record{}, err)
			return false
		}
		keys := w.keys
		for len(keys) > 0 {
			page := keys[:min(dumpPage, len(keys))]
			keys = keys[len(page):]
			var recs []driver.Record
			if at.Kind == driver.KindMetadata {
				recs, err = d.readMeta(ctx, page)
			} else {
				recs, err = d.readRecords(ctx, at.Kind, page)
			}
			if err != nil {
				yield(driver.Record{}, err)
				return false
			}
			for _, r := range recs {
				if !yield(r, nil) {
					return false
				}
			}
		}
		if len(w.keys) < dumpWindow {
			return true
		}
		at.Key = w.keys[len(w.keys)-1][len(prefix):]
	}
}

// prefixOf is the key prefix of kind's record hashes ("" for metadata,
// whose resume keys are the fields of its one hash).
func (d *Persistence) prefixOf(kind driver.RecordKind) string {
	switch kind {
	case driver.KindRun:
		return d.k.run("")
	case driver.KindGenerationRun:
		return d.k.genRun("")
	case driver.KindInterrupt:
		return d.k.interrupt("")
	case driver.KindArtifact:
		return d.k.artifact("")
	case driver.KindBlob:
		return d.k.blob("")
	}
	return ""
}

// PositionOf implements driver.Porter: the kind and the record's id (the
// blob key; for metadata, its field in the metadata hash).
func (d *Persistence) PositionOf(r driver.Record) driver.DumpPosition {
	if r.Kind == driver.KindMetadata && r.Metadata != nil {
		return driver.DumpPosition{Kind: r.Kind, Key: metaField(r.Metadata.Namespace, r.Metadata.Key)}
	}
	return driver.DumpPosition{Kind: r.Kind, Key: r.ID()}
}

// window keeps the dumpWindow smallest distinct keys greater than after,
// in order.
type window struct {
	after string
	keys  []string
}

// add offers k to the window.
func (w *window) add(k string) {
	if k <= w.after || (len(w.keys) == dumpWindow && k >= w.keys[len(w.keys)-1]) {
		return
	}
	i, found := slices.BinarySearch(w.keys, k)
	if found {
		return // SCAN may return a key twice
	}
	if len(w.keys) == dumpWindow {
		w.keys = w.keys[:len(w.keys)-1]
	}
	w.keys = slices.Insert(w.keys, i, k)
}

// scanWindow fills w with the smallest keys after after that start with
// prefix, SCANning every master.
func (d *Persistence) scanWindow(ctx context.Context, prefix, after string, w *window) error {
	w.after = after
	pattern := globEscape(prefix) + "*"
	collect := func(ctx context.Context, c redis.Cmdable) error {
		it := c.Scan(ctx, 0, pattern, 1000).Iterator()
		for it.Next(ctx) {
			w.add(it.Val())
		}
		return it.Err()
	}
	if cc, ok := d.c.(*redis.ClusterClient); ok {
		return cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return collect(ctx, m) })
	}
	return collect(ctx, d.c)
}

// hscanWindow fills w with the smallest fields of the metadata hash
// after after.
func (d *Persistence) hscanWindow(ctx context.Context, after string, w *window) error {
	w.after = after
	// HSCAN yields field, value, field, …; HSCAN NOVALUES needs Redis 7.4.
	it := d.c.HScan(ctx, d.k.meta(), 0, "", 1000).Iterator()
	for field := true; it.Next(ctx); field = !field {
		if field {
			w.add(it.Val())
		}
	}
	return it.Err()
}

// readRecords reads the record hashes of kind at keys, skipping any
// deleted since the SCAN.
func (d *Persistence) readRecords(ctx context.Context, kind driver.RecordKind, keys []string) ([]driver.Record, error) {
	flats, err := d.readHashes(ctx, keys)
	if err != nil {
		return nil, err
	}
	out := make([]driver.Record, 0, len(keys))
	for i, flat := range flats {
		rec, err := decodeRecord(kind, flat)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", keys[i], err)
		}
		if rec.ID() != "" {
			out = append(out, rec)
		}
	}
	return out, nil
}

// readMeta reads the metadata values of fields, skipping any deleted
// since the HSCAN.
func (d *Persistence) readMeta(ctx context.Context, fields []string) ([]driver.Record, error) {
	vals, err := d.c.HMGet(ctx, d.k.meta(), fields...).Result()
	if err != nil {
		return nil, err
	}
	out := make([]driver.Record, 0, len(fields))
	for i, f := range fields {
		v, ok := vals[i].(string)
		if !ok {
			continue
		}
		if len(f) < 2 || int(f[0])<<8|int(f[1]) > len(f)-2 {
			return nil, fmt.Errorf("%w: metadata field %q is not length-prefixed", driver.ErrCorrupt, f)
		}
		n := int(f[0])<<8 | int(f[1])
		out = append(out, driver.Record{Kind: driver.KindMetadata, Metadata: &driver.MetadataEntry{Namespace: f[2 : 2+n], Key: f[2+n:], Value: []byte(v)}})
	}
	return out, nil
}

// readHashes is HGETALL of every key, pipelined, as flat field, value
// arrays (empty for a missing key).
func (d *Persistence) readHashes(ctx context.Context, keys []string) ([][]any, error) {
	cmds := make([]*redis.MapStringStringCmd, len(keys))
	_, err := d.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, k := range keys {
			cmds[i] = p.HGetAll(ctx, k)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([][]any, len(keys))
	for i, c := range cmds {
		flat := make([]any, 0, 2*len(c.Val()))
		for f, v := range c.Val() {
			flat = append(flat, f, v)
		}
		out[i] = flat
	}
	return out, nil
}

// decodeRecord reads a record hash of kind (not metadata, which is no
// hash); an empty hash gives a Record without its pointer (ID "").
func decodeRecord(kind driver.RecordKind, flat []any) (driver.Record, error) {
	if len(flat) == 0 {
		return driver.Record{}, nil
	}
	out := driver.Record{Kind: kind}
	var err error
	switch kind {
	case driver.KindRun:
		out.Run, err = decode[driver.RunRecord](flat)
	case driver.KindGenerationRun:
		out.GenerationRun, err = decode[driver.GenerationRunRecord](flat)
	case driver.KindInterrupt:
		out.Interrupt, err = decode[driver.InterruptRecord](flat)
	case driver.KindArtifact:
		out.Artifact, err = decode[driver.ArtifactRecord](flat)
	case driver.KindBlob:
		out.Blob, err = decodeBlob(flat)
	}
	if err != nil {
		return driver.Record{}, err
	}
	return out, nil
}

// loadArgs is loadScript's keys and arguments for r: the record hash, its
// indexes with the members its fields give (as the create and update
// scripts place them), and its pairs with the driver's '~' fields.
func (d *Persistence) loadArgs(r driver.Record) ([]string, []any, error) {
	k := d.k
	var key string
	var idx []string
	var members, own []any
	var pairs []any
	var err error
	switch r.Kind {
	case driver.KindRun:
		x := r.Run
		key = k.run(x.RunID)
		m := member(x.ThreadID, x.StartedAt, x.RunID)
		idx, members, own = []string{k.runs()}, []any{m}, []any{"~m", m}
		running := x.Status == driver.RunRunning
		if running {
			idx, members = append(idx, k.activeRuns()), append(members, m)
		}
		if x.DetachedSince != nil {
			rm := timeBytes(*x.DetachedSince) + x.RunID
			own = append(own, "~r", rm)
			if running {
				idx, members = append(idx, k.reclaimRuns()), append(members, rm)
			}
		}
		pairs, err = fields(x)
	case driver.KindGenerationRun:
		x := r.GenerationRun
		key = k.genRun(x.RunID)
		m := member(x.ThreadID, x.StartedAt, x.RunID)
		idx, members, own = []string{k.genRuns()}, []any{m}, []any{"~m", m}
		pairs, err = fields(x)
	case driver.KindInterrupt:
		x := r.Interrupt
		key = k.interrupt(x.InterruptID)
		tm, rm := member(x.ThreadID, x.RequestedAt, x.InterruptID), member(x.RunID, x.RequestedAt, x.InterruptID)
		idx, members, own = []string{k.intIndex(false, false), k.intIndex(true, false)}, []any{tm, rm}, []any{"~t", tm, "~r", rm}
		if x.Status == driver.InterruptPending {
			idx, members = append(idx, k.intIndex(false, true), k.intIndex(true, true)), append(members, tm, rm)
		}
		pairs, err = fields(x)
	case driver.KindArtifact:
		x := r.Artifact
		key = k.artifact(x.ArtifactID)
		tm, rm := member(x.ThreadID, x.CreatedAt, x.ArtifactID), member(x.RunID, x.CreatedAt, x.ArtifactID)
		idx, members, own = []string{k.artIndex(false), k.artIndex(true)}, []any{tm, rm}, []any{"~t", tm, "~r", rm}
		pairs, err = fields(x)
	case driver.KindBlob:
		x := r.Blob
		key = k.blob(x.Key)
		idx, members, own = []string{k.blobs()}, []any{x.Key}, []any{"~o", x.Object}
		pairs, err = fields(&x.BlobRecord)
	default:
		return nil, nil, fmt.Errorf("%w: kind %q", driver.ErrInvalidEntry, r.Kind)
	}
	if err != nil {
		return nil, nil, err
	}
	args := append(members, pairs...)
	return append([]string{key}, idx...), append(args, own...), nil
}

// Load implements driver.Porter.
func (d *Persistence) Load(ctx context.Context, recs []driver.Record) (int, error) {
	var uniq []driver.Record
	if err := driver.Distinct(recs, func(r driver.Record) error { uniq = append(uniq, r); return nil }); err != nil {
		return 0, err
	}
	// The check: every record's current content, in one pipeline.
	cur, err := d.current(ctx, uniq)
	if err != nil {
		return 0, err
	}
	var fresh []driver.Record
	for i, r := range uniq {
		switch {
		case cur[i].ID() == "":
			fresh = append(fresh, r)
		case !driver.Equal(cur[i], r):
			return 0, fmt.Errorf("%w: %s %q", driver.ErrRecordConflict, r.Kind, r.ID())
		}
	}
	founds, errs := d.loadAll(ctx, fresh)
	stored := 0
	for i, r := range fresh {
		found, err := founds[i], errs[i]
		if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			found, err = d.loadOne(ctx, r) // the script cache was flushed: EVAL
		}
		if err != nil {
			return stored, fmt.Errorf("redisstore: load %s %q: %w", r.Kind, r.ID(), err)
		}
		switch {
		case found.ID() == "":
			stored++
		case !driver.Equal(found, r):
			return stored, fmt.Errorf("%w: %s %q (written meanwhile)", driver.ErrRecordConflict, r.Kind, r.ID())
		}
	}
	return stored, nil
}

// loadAll runs loadOne's writes for every record in one pipeline
// (EVALSHA of loadScript, HSETNX for metadata): one round trip for the
// batch instead of one per record. A record's error is its command's; a
// NOSCRIPT one is retried with EVAL by the caller.
func (d *Persistence) loadAll(ctx context.Context, recs []driver.Record) ([]driver.Record, []error) {
	founds := make([]driver.Record, len(recs))
	errs := make([]error, len(recs))
	if len(recs) == 0 {
		return founds, errs
	}
	if err := loadScript.Load(ctx, d.c).Err(); err != nil {
		for i := range errs {
			errs[i] = err
		}
		return founds, errs
	}
	cmds := make([]redis.Cmder, len(recs))
	_, _ = d.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, r := range recs {
			if r.Kind == driver.KindMetadata {
				cmds[i] = p.HSetNX(ctx, d.k.meta(), metaField(r.Metadata.Namespace, r.Metadata.Key), string(r.Metadata.Value))
				continue
			}
			keys, args, err := d.loadArgs(r)
			if err != nil {
				errs[i] = err
				continue
			}
			cmds[i] = p.EvalSha(ctx, loadScript.Hash(), keys, args...)
		}
		return nil
	})
	for i, r := range recs {
		if errs[i] != nil {
			continue
		}
		switch c := cmds[i].(type) {
		case *redis.BoolCmd: // metadata: set, or read what is there
			set, err := c.Result()
			if err == nil && !set {
				founds[i], err = d.loadOne(ctx, r)
			}
			errs[i] = err
		case *redis.Cmd:
			v, err := c.Result()
			if err != nil {
				errs[i] = err
				continue
			}
			res, _ := v.([]any)
			switch {
			case len(res) == 2 && res[0] == "found":
				flat, _ := res[1].([]any)
				founds[i], errs[i] = decodeRecord(r.Kind, flat)
			case len(res) != 1 || res[0] != "new":
				errs[i] = fmt.Errorf("%w: load reply %v", driver.ErrCorrupt, res)
			}
		}
	}
	return founds, errs
}

// current reads what the store holds under each record's identity (a
// Record without its pointer where it holds nothing).
func (d *Persistence) current(ctx context.Context, recs []driver.Record) ([]driver.Record, error) {
	hashes := make([]*redis.MapStringStringCmd, len(recs))
	metas := make([]*redis.StringCmd, len(recs))
	_, err := d.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, r := range recs {
			if r.Kind == driver.KindMetadata {
				metas[i] = p.HGet(ctx, d.k.meta(), metaField(r.Metadata.Namespace, r.Metadata.Key))
				continue
			}
			keys, _, err := d.loadArgs(r)
			if err != nil {
				return err
			}
			hashes[i] = p.HGetAll(ctx, keys[0])
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	out := make([]driver.Record, len(recs))
	for i, r := range recs {
		if r.Kind == driver.KindMetadata {
			v, err := metas[i].Result()
			if errors.Is(err, redis.Nil) {
				continue
			}
			if err != nil {
				return nil, err
			}
			out[i] = driver.Record{Kind: r.Kind, Metadata: &driver.MetadataEntry{Namespace: r.Metadata.Namespace, Key: r.Metadata.Key, Value: []byte(v)}}
			continue
		}
		flat := make([]any, 0, 2*len(hashes[i].Val()))
		for f, v := range hashes[i].Val() {
			flat = append(flat, f, v)
		}
		if out[i], err = decodeRecord(r.Kind, flat); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// loadOne writes r when its identity is absent and returns what was there
// (a Record without its pointer when nothing was).
func (d *Persistence) loadOne(ctx context.Context, r driver.Record) (driver.Record, error) {
	if r.Kind == driver.KindMetadata {
		m := r.Metadata
		f := metaField(m.Namespace, m.Key)
		set, err := d.c.HSetNX(ctx, d.k.meta(), f, string(m.Value)).Result()
		if err != nil || set {
			return driver.Record{}, err
		}
		v, err := d.c.HGet(ctx, d.k.meta(), f).Result()
		if err != nil {
			return driver.Record{}, err
		}
		return driver.Record{Kind: r.Kind, Metadata: &driver.MetadataEntry{Namespace: m.Namespace, Key: m.Key, Value: []byte(v)}}, nil
	}
	keys, args, err := d.loadArgs(r)
	if err != nil {
		return driver.Record{}, err
	}
	res, err := d.eval(ctx, loadScript, keys, args)
	if err != nil {
		return driver.Record{}, err
	}
	if len(res) == 2 && res[0] == "found" {
		flat, _ := res[1].([]any)
		return decodeRecord(r.Kind, flat)
	}
	if len(res) != 1 || res[0] != "new" {
		return driver.Record{}, fmt.Errorf("%w: load reply %v", driver.ErrCorrupt, res)
	}
	return driver.Record{}, nil
}
