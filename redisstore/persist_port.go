package redisstore

// Export and import (driver.Porter). Dump finds the records with SCAN
// inside the store's hash tag (on every master of a cluster, as Check
// does) and reads them in pipelined pages; metadata with HSCAN of the one
// hash. Load checks every record first (one pipelined read), fails the
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

// Dump implements driver.Porter; within a kind the records come in key
// byte order.
func (d *Persistence) Dump(ctx context.Context) iter.Seq2[driver.Record, error] {
	return func(yield func(driver.Record, error) bool) {
		k := d.k
		for _, kd := range []struct {
			kind   driver.RecordKind
			prefix string
		}{
			{driver.KindRun, k.run("")}, {driver.KindGenerationRun, k.genRun("")}, {driver.KindInterrupt, k.interrupt("")},
			{driver.KindMetadata, ""}, {driver.KindArtifact, k.artifact("")}, {driver.KindBlob, k.blob("")},
		} {
			if kd.kind == driver.KindMetadata {
				if !d.dumpMeta(ctx, yield) {
					return
				}
				continue
			}
			keys, err := d.scan(ctx, kd.prefix)
			if err != nil {
				yield(driver.Record{}, err)
				return
			}
			for len(keys) > 0 {
				page := keys[:min(dumpPage, len(keys))]
				keys = keys[len(page):]
				flats, err := d.readHashes(ctx, page)
				if err != nil {
					yield(driver.Record{}, err)
					return
				}
				for i, flat := range flats {
					rec, err := decodeRecord(kd.kind, flat)
					if err == nil && rec.ID() == "" {
						continue // deleted between the SCAN and the read
					}
					if err != nil {
						err = fmt.Errorf("%s: %w", page[i], err)
					}
					if !yield(rec, err) || err != nil {
						return
					}
				}
			}
		}
	}
}

// dumpMeta yields every metadata value, HSCAN page by page.
func (d *Persistence) dumpMeta(ctx context.Context, yield func(driver.Record, error) bool) bool {
	it := d.c.HScan(ctx, d.k.meta(), 0, "", dumpPage).Iterator()
	for it.Next(ctx) {
		f := it.Val()
		if !it.Next(ctx) {
			break
		}
		v := it.Val()
		if len(f) < 2 || int(f[0])<<8|int(f[1]) > len(f)-2 {
			return yield(driver.Record{}, fmt.Errorf("%w: metadata field %q is not length-prefixed", driver.ErrCorrupt, f))
		}
		n := int(f[0])<<8 | int(f[1])
		r := driver.Record{Kind: driver.KindMetadata, Metadata: &driver.MetadataEntry{Namespace: f[2 : 2+n], Key: f[2+n:], Value: []byte(v)}}
		if !yield(r, nil) {
			return false
		}
	}
	if err := it.Err(); err != nil {
		return yield(driver.Record{}, err)
	}
	return true
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
