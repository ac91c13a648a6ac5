package redisstore

// The persistence part of the engine's Check (check.go): it scans every
// key under the store's "{prefix}:p:" and holds the index members in
// memory, so it is not for hot paths. It reads key by key, not in one
// step: run it on a quiet store, or expect the writes it races with to
// show as problems.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"

	ckptdriver "github.com/ckptstore/ckptstore/driver"

	"github.com/ckptstore/ckptstore/persist/driver"
)

// persistChecker collects what Check expects and finds.
type persistChecker struct {
	d        *Persistence
	ctx      context.Context
	problems []ckptdriver.Problem
	// want is, per index key, the members the records say it holds.
	want map[string]map[string]bool
}

func (c *persistChecker) bad(key, format string, args ...any) {
	c.problems = append(c.problems, ckptdriver.Problem{Key: key, What: fmt.Sprintf(format, args...)})
}

func (c *persistChecker) expect(index, m string) {
	if c.want[index] == nil {
		c.want[index] = map[string]bool{}
	}
	c.want[index][m] = true
}

// check reads every persistence key of the store and returns the broken
// invariants, sorted by key; none for a consistent store. Driver.Check
// runs it, so the engine has one Check. It finds:
//
//   - a record hash that does not decode, whose id is not its key's, or
//     whose index members ('~m', '~t', '~r') are not the ones its fields
//     give;
//   - an index (runs, gens, runs:active, runs:reclaim, the four interrupt
//     indexes, the two artifact indexes, blobs) that lacks a member a
//     record implies, holds one no record implies, or has a score other
//     than 0: runs:active must be exactly the running runs,
//     runs:reclaim the running runs with detachedSince, the pending
//     interrupt indexes exactly the pending interrupts;
//   - a blob row without its bucket object;
//   - a metadata value that is not JSON;
//   - a lock whose holder has no expiry, whose fence is not a positive
//     integer while it has a holder, or a waiter without a place expiry.
func (d *Persistence) check(ctx context.Context) ([]ckptdriver.Problem, error) {
	c := &persistChecker{d: d, ctx: ctx, want: map[string]map[string]bool{}}
	k := d.k
	kinds := []struct {
		prefix string
		check  func(key, id string, flat []any)
	}{
		{k.run(""), c.run},
		{k.genRun(""), c.genRun},
		{k.interrupt(""), c.interrupt},
		{k.artifact(""), c.artifact},
		{k.blob(""), c.blob},
	}
	for _, kd := range kinds {
		keys, err := d.scan(ctx, kd.prefix)
		if err != nil {
			return nil, err
		}
		for _, key := range keys {
			flat, err := hgetallFlat(ctx, d, key)
			if err != nil {
				return nil, err
			}
			kd.check(key, strings.TrimPrefix(key, kd.prefix), flat)
		}
	}
	indexes := []string{k.runs(), k.genRuns(), k.activeRuns(), k.reclaimRuns(),
		k.intIndex(false, false), k.intIndex(true, false), k.intIndex(false, true), k.intIndex(true, true),
		k.artIndex(false), k.artIndex(true), k.blobs()}
	for _, ix := range indexes {
		zs, err := d.c.ZRangeWithScores(ctx, ix, 0, -1).Result()
		if err != nil {
			return nil, err
		}
		have := map[string]bool{}
		for _, z := range zs {
			m, _ := z.Member.(string)
			have[m] = true
			if z.Score != 0 {
				c.bad(ix, "member %q has score %v, not 0", m, z.Score)
			}
			if !c.want[ix][m] {
				c.bad(ix, "member %q belongs to no record", m)
			}
		}
		for m := range c.want[ix] {
			if !have[m] {
				c.bad(ix, "lacks member %q", m)
			}
		}
	}
	if err := c.meta(); err != nil {
		return nil, err
	}
	if err := c.locks(); err != nil {
		return nil, err
	}
	slices.SortStableFunc(c.problems, func(a, b ckptdriver.Problem) int { return strings.Compare(a.Key, b.Key) })
	return c.problems, nil
}

// scan returns every key that starts with prefix.
func (d *Persistence) scan(ctx context.Context, prefix string) ([]string, error) {
	pattern := globEscape(prefix) + "*"
	var out []string
	collect := func(ctx context.Context, c redis.Cmdable) error {
		it := c.Scan(ctx, 0, pattern, 1000).Iterator()
		for it.Next(ctx) {
			out = append(out, it.Val())
		}
		return it.Err()
	}
	var err error
	if cc, ok := d.c.(*redis.ClusterClient); ok {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return collect(ctx, m) })
	} else {
		err = collect(ctx, d.c)
	}
	slices.Sort(out)
	return slices.Compact(out), err
}

// field returns a '~' field of a HGETALL reply.
func field(flat []any, name string) (string, bool) {
	for i := 0; i+1 < len(flat); i += 2 {
		if flat[i] == name {
			s, ok := flat[i+1].(string)
			return s, ok
		}
	}
	return "", false
}

// own checks a record's own index member field against the one its
// content gives, and expects it in index ("": in none).
func (c *persistChecker) own(key string, flat []any, name, want, index string) {
	got, ok := field(flat, name)
	switch {
	case !ok:
		c.bad(key, "no %s field", name)
	case got != want:
		c.bad(key, "%s is %q, its fields give %q", name, got, want)
	}
	if index != "" {
		c.expect(index, want)
	}
}

// record decodes flat, the hash of the record id (a what) at key, and
// reports it when it does not decode (nil) or holds another id.
func record[T any](c *persistChecker, key, id, what string, flat []any, decode func(any) (*T, error), idOf func(*T) string) *T {
	r, err := decode(flat)
	if err != nil {
		c.bad(key, "does not decode: %v", err)
		return nil
	}
	if got := idOf(r); got != id {
		c.bad(key, "holds %s %q", what, got)
	}
	return r
}

func (c *persistChecker) run(key, id string, flat []any) {
	r := record(c, key, id, "run", flat, decode[driver.RunRecord], func(r *driver.RunRecord) string { return r.RunID })
	if r == nil {
		return
	}
	m := member(r.ThreadID, r.StartedAt, r.RunID)
	c.own(key, flat, "~m", m, c.d.k.runs())
	running := r.Status == driver.RunRunning
	if running {
		c.expect(c.d.k.activeRuns(), m)
	}
	_, hasRM := field(flat, "~r")
	switch {
	case r.DetachedSince == nil && hasRM:
		c.bad(key, "~r is set without detachedSince")
	case r.DetachedSince != nil:
		index := "" // a run that is not running is not reclaimable
		if running {
			index = c.d.k.reclaimRuns()
		}
		c.own(key, flat, "~r", timeBytes(*r.DetachedSince)+r.RunID, index)
	}
}

func (c *persistChecker) genRun(key, id string, flat []any) {
	r := record(c, key, id, "generation run", flat, decode[driver.GenerationRunRecord], func(r *driver.GenerationRunRecord) string { return r.RunID })
	if r == nil {
		return
	}
	c.own(key, flat, "~m", member(r.ThreadID, r.StartedAt, r.RunID), c.d.k.genRuns())
}

func (c *persistChecker) interrupt(key, id string, flat []any) {
	r := record(c, key, id, "interrupt", flat, decode[driver.InterruptRecord], func(r *driver.InterruptRecord) string { return r.InterruptID })
	if r == nil {
		return
	}
	tm, rm := member(r.ThreadID, r.RequestedAt, id), member(r.RunID, r.RequestedAt, id)
	c.own(key, flat, "~t", tm, c.d.k.intIndex(false, false))
	c.own(key, flat, "~r", rm, c.d.k.intIndex(true, false))
	if r.Status == driver.InterruptPending {
		c.expect(c.d.k.intIndex(false, true), tm)
		c.expect(c.d.k.intIndex(true, true), rm)
	}
}

func (c *persistChecker) artifact(key, id string, flat []any) {
	r := record(c, key, id, "artifact", flat, decode[driver.ArtifactRecord], func(r *driver.ArtifactRecord) string { return r.ArtifactID })
	if r == nil {
		return
	}
	c.own(key, flat, "~t", member(r.ThreadID, r.CreatedAt, id), c.d.k.artIndex(false))
	c.own(key, flat, "~r", member(r.RunID, r.CreatedAt, id), c.d.k.artIndex(true))
}

func (c *persistChecker) blob(key, id string, flat []any) {
	m := record(c, key, id, "blob", flat, decodeBlob, func(m *driver.BlobMeta) string { return m.Key })
	if m == nil {
		return
	}
	if m.Object == "" {
		c.bad(key, "names no bucket object")
	}
	c.expect(c.d.k.blobs(), id)
}

func (c *persistChecker) meta() error {
	vals, err := c.d.c.HGetAll(c.ctx, c.d.k.meta()).Result()
	if err != nil {
		return err
	}
	for f, v := range vals {
		if len(f) < 2 || int(f[0])<<8|int(f[1]) > len(f)-2 {
			c.bad(c.d.k.meta(), "field %q is not length-prefixed", f)
		}
		if ckptdriver.CheckJSON([]byte(v)) != nil {
			c.bad(c.d.k.meta(), "field %q holds %q, not valid JSON", f, v)
		}
	}
	return nil
}

func (c *persistChecker) locks() error {
	k := c.d.k
	keys, err := c.d.scan(c.ctx, k.lock(""))
	if err != nil {
		return err
	}
	for _, key := range keys {
		l, err := c.d.c.HGetAll(c.ctx, key).Result()
		if err != nil {
			return err
		}
		if l["o"] != "" && l["x"] == "" {
			c.bad(key, "holder %q has no expiry", l["o"])
		}
		if f, ok := l["f"]; (ok || l["o"] != "") && !positive(f) {
			c.bad(key, "fence %q is not a positive integer", f)
		}
	}
	qs, err := c.d.scan(c.ctx, k.lockQueue(""))
	if err != nil {
		return err
	}
	for _, q := range qs {
		name := strings.TrimPrefix(q, k.lockQueue(""))
		tokens, err := c.d.c.ZRange(c.ctx, q, 0, -1).Result()
		if err != nil {
			return err
		}
		for _, tok := range tokens {
			if ok, err := c.d.c.HExists(c.ctx, k.lockWaits(name), tok).Result(); err != nil {
				return err
			} else if !ok {
				c.bad(q, "waiter %q has no place expiry", tok)
			}
		}
	}
	return nil
}

func positive(s string) bool {
	if s == "" || s[0] == '0' {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
