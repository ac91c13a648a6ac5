package fdbdriver

import (
	"bytes"
	"context"
	"fmt"
	"sort"

	ckptdriver "github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/fdbstore/kv"
)

// checkPage is how many keys one transaction of Check reads.
const checkPage = 1000

// Problem is one broken invariant Check found: the key at fault (its raw
// bytes, printed with %q) and what is wrong. It is the checkpoint
// drivers' driver.Problem, so that Driver is a driver.Checker and ckptctl
// check reads every store through that one interface.
type Problem = ckptdriver.Problem

var _ ckptdriver.Checker = (*Driver)(nil)

// Check reads every key under the driver's prefix, in pages of one
// transaction each, and reports what breaks the layout: a key of no key
// space, a value that does not decode, a record under another id's key,
// an index entry whose record is absent or says otherwise (an orphan), and
// a record whose index entry is missing. It holds the expected index
// entries in memory. Its pages are separate transactions, so it is exact
// on a store that nobody writes meanwhile; a write during the scan can show
// as a passing mismatch. The error is a transport failure.
func (d *Driver) Check(ctx context.Context) ([]Problem, error) {
	c := &checker{d: d, want: map[string][]byte{}, have: map[string][]byte{}}
	err := d.pages(ctx, kv.KeyRange{Begin: d.k.q, End: kv.Strinc(d.k.q)}, checkPage, func(page []kv.KeyValue) bool {
		for _, p := range page {
			c.key(p)
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	c.compare()
	return c.problems, nil
}

type checker struct {
	d        *Driver
	want     map[string][]byte // index key → the record's encoding, from the records
	have     map[string][]byte // index key → value, as stored
	problems []Problem
}

func (c *checker) bad(key []byte, format string, args ...any) {
	c.problems = append(c.problems, Problem{Key: string(key), What: fmt.Sprintf(format, args...)})
}

// spaceOf returns the key space element that follows the prefix.
func (c *checker) spaceOf(key []byte) (string, bool) {
	rest := key[len(c.d.k.q):]
	if len(rest) < 2 || rest[0] != 0x02 {
		return "", false
	}
	end := bytes.IndexByte(rest[1:], 0x00)
	if end < 0 {
		return "", false
	}
	return string(rest[1 : 1+end]), true
}

func (c *checker) key(p kv.KeyValue) {
	space, ok := c.spaceOf(p.Key)
	if !ok {
		c.bad(p.Key, "not a key of this driver")
		return
	}
	k := c.d.k
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
		if _, err := decode[markerValue](p.Key, p.Value); err != nil {
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
func checkRecord[T any](c *checker, p kv.KeyValue, kd kind[T]) {
	rec, err := decode[T](p.Key, p.Value)
	if err != nil {
		c.bad(p.Key, "%s record: %v", kd.what, err)
		return
	}
	if !bytes.Equal(c.d.k.record(kd.space, kd.id(rec)), p.Key) {
		c.bad(p.Key, "%s record of id %q under another key", kd.what, kd.id(rec))
		return
	}
	val, _ := encode(kd.what, rec)
	for _, e := range kd.entries(c.d.k, rec) {
		c.want[string(e)] = val
	}
}

// compare reports index entries without their record (orphans) or with a
// value the record disagrees with, and records without their entries.
func (c *checker) compare() {
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
