package fdbstore

// The persistence's part of Check: the checkpoint Driver's Check walks the
// persistence key space of Options.PersistPrefix after its own (walk, in
// the same pages), and reports what breaks the persistence layout among
// its problems, each What prefixed "persistence: ". These problems are
// not confirmed by a second read: the walk is exact on a store that
// nobody writes meanwhile, and a write during it can show as a passing
// mismatch. The walk holds the expected index entries in memory.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/fdbstore/kv"
)

// checkPersistence walks every key under the persistence prefix q and
// reports a key of no key space, a value that does not decode, a record
// under another id's key, an index entry whose record is absent or says
// otherwise (an orphan), and a record whose index entry is missing.
func checkPersistence(ctx context.Context, db kv.DB, q []byte, lim checkLimits, keys *int, report func(driver.CheckProgress)) ([]problem, error) {
	c := &persistChecker{k: persistKeys{q: q}, want: map[string][]byte{}, have: map[string][]byte{}}
	err := walk(ctx, db, kv.PrefixRange(q), lim, keys, report, func(p kv.KeyValue) bool { c.key(p); return true })
	if err != nil {
		return nil, fmt.Errorf("fdbstore: check: %w", err)
	}
	c.compare()
	return c.problems, nil
}

// check is the persistence's part of Check alone, for its tests.
func (d *Persistence) check(ctx context.Context) ([]driver.Problem, error) {
	keys := 0
	ps, err := checkPersistence(ctx, d.db, d.k.q, defaultCheckLimits, &keys, nil)
	ps = sortProblems(ps)
	out := make([]driver.Problem, len(ps))
	for i, p := range ps {
		out[i] = p.Problem
	}
	return out, err
}

type persistChecker struct {
	k        persistKeys
	want     map[string][]byte // index key → the record's encoding, from the records
	have     map[string][]byte // index key → value, as stored
	problems []problem
}

func (c *persistChecker) bad(key []byte, format string, args ...any) {
	c.problems = append(c.problems, problem{Problem: driver.Problem{Key: string(key), What: "persistence: " + fmt.Sprintf(format, args...)}})
}

// spaceOf returns the key space element that follows the prefix.
func (c *persistChecker) spaceOf(key []byte) (string, bool) {
	rest := key[len(c.k.q):]
	if len(rest) < 2 || rest[0] != 0x02 {
		return "", false
	}
	end := bytes.IndexByte(rest[1:], 0x00)
	if end < 0 {
		return "", false
	}
	return string(rest[1 : 1+end]), true
}

func (c *persistChecker) key(p kv.KeyValue) {
	space, ok := c.spaceOf(p.Key)
	if !ok {
		c.bad(p.Key, "not a key of this driver")
		return
	}
	k := c.k
	switch space {
	case spaceRun:
		checkRecord(c, p, runKind)
	case spaceGen:
		checkRecord(c, p, genKind)
	case spaceInt:
		checkRecord(c, p, intKind)
	case spaceArt:
		checkRecord(c, p, artKind)
	case spaceRunThread, spaceRunActive, spaceRunReclaim, spaceGenThread,
		spaceIntThread, spaceIntThreadPend, spaceIntRun, spaceIntRunPend,
		spaceArtRun, spaceArtThread:
		c.have[string(p.Key)] = p.Value
	case spaceBlob:
		row, err := decode[blobRow](p.Key, p.Value)
		switch {
		case err != nil:
			c.bad(p.Key, "blob row: %v", err)
		case !bytes.Equal(k.blob(row.Key), p.Key):
			c.bad(p.Key, "blob row of key %q under another key", row.Key)
		case row.Object == "":
			c.bad(p.Key, "blob row of key %q names no bucket object", row.Key)
		}
	case spaceLock:
		if l, err := decode[lockValue](p.Key, p.Value); err != nil {
			c.bad(p.Key, "lock: %v", err)
		} else if l.Fence < 0 || l.Holder != "" && l.Fence == 0 {
			c.bad(p.Key, "lock held with fence %d", l.Fence)
		}
	case spaceOp:
		if _, err := callResult(p.Value); err != nil && !legacyMarker(p.Value) {
			c.bad(p.Key, "op marker: %v", err)
		}
	case spaceIntOp:
		if len(p.Value) != 8 {
			c.bad(p.Key, "op token value of %d bytes, not 8", len(p.Value))
		}
	case spaceMeta:
		// Any JSON value the portable layer checked.
	default:
		c.bad(p.Key, "key space %q is not one of this driver's", space)
	}
}

// checkRecord decodes a record, checks that it is under its own key, and
// expects its index entries.
func checkRecord[T any](c *persistChecker, p kv.KeyValue, kd kind[T]) {
	rec, err := decode[T](p.Key, p.Value)
	if err != nil {
		c.bad(p.Key, "%s record: %v", kd.what, err)
		return
	}
	if !bytes.Equal(c.k.record(kd.space, kd.id(rec)), p.Key) {
		c.bad(p.Key, "%s record of id %q under another key", kd.what, kd.id(rec))
		return
	}
	val, _ := encode(kd.what, rec)
	for _, e := range kd.entries(c.k, rec) {
		c.want[string(e)] = val
	}
}

// compare reports index entries without their record (orphans) or with a
// value the record disagrees with, and records without their entries.
func (c *persistChecker) compare() {
	var ks []string
	for k := range c.have {
		ks = append(ks, k)
	}
	for k := range c.want {
		if _, ok := c.have[k]; !ok {
			ks = append(ks, k)
		}
	}
	sort.Strings(ks)
	for _, k := range ks {
		have, hok := c.have[k]
		want, wok := c.want[k]
		switch {
		case !wok:
			c.bad([]byte(k), "index entry of no record (an orphan)")
		case !hok:
			c.bad([]byte(k), "index entry missing for its record")
		case !bytes.Equal(have, want):
			c.bad([]byte(k), "index entry disagrees with its record")
		}
	}
}

// legacyMarker reports whether v is a marker as the persistence wrote
// them before it shared the checkpoints' encoding: JSON {"at":…,"r":…}.
// A process that stopped left its last ones; they are never read again
// (their tokens were random) and are not a problem.
func legacyMarker(v []byte) bool {
	var m struct {
		At *int64           `json:"at"`
		R  *json.RawMessage `json:"r"`
	}
	return json.Unmarshal(v, &m) == nil && m.At != nil && m.R != nil
}
