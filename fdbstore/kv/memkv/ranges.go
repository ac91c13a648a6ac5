package memkv

// Range sets. Every set here is a slice of non-empty half-open ranges,
// sorted by Begin and disjoint, with touching ranges merged; that is what
// lets intersects run as one linear merge.

import (
	"bytes"
	"slices"
	"sort"

	"github.com/ckptstore/ckptstore/fdbstore/kv"
)

// insertRange adds the non-empty range r to the set s and returns the set.
func insertRange(s []kv.KeyRange, r kv.KeyRange) []kv.KeyRange {
	// First range that ends at or after r.Begin: everything before it is
	// strictly before r and stays.
	i := sort.Search(len(s), func(i int) bool { return bytes.Compare(s[i].End, r.Begin) >= 0 })
	j := i
	for ; j < len(s) && bytes.Compare(s[j].Begin, r.End) <= 0; j++ {
		if bytes.Compare(s[j].Begin, r.Begin) < 0 {
			r.Begin = s[j].Begin
		}
		if bytes.Compare(s[j].End, r.End) > 0 {
			r.End = s[j].End
		}
	}
	return slices.Replace(s, i, j, r)
}

// mergeRanges sorts rs and merges overlapping or touching ranges, dropping
// empty ones. It reorders rs in place.
func mergeRanges(rs []kv.KeyRange) []kv.KeyRange {
	if len(rs) == 0 {
		return nil
	}
	slices.SortFunc(rs, func(a, b kv.KeyRange) int { return bytes.Compare(a.Begin, b.Begin) })
	out := make([]kv.KeyRange, 0, len(rs))
	for _, r := range rs {
		if bytes.Compare(r.Begin, r.End) >= 0 {
			continue
		}
		if n := len(out); n > 0 && bytes.Compare(r.Begin, out[n-1].End) <= 0 {
			if bytes.Compare(r.End, out[n-1].End) > 0 {
				out[n-1].End = r.End
			}
			continue
		}
		out = append(out, r)
	}
	return out
}

// intersects reports whether two range sets share a key.
func intersects(a, b []kv.KeyRange) bool {
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case bytes.Compare(a[i].End, b[j].Begin) <= 0:
			i++
		case bytes.Compare(b[j].End, a[i].Begin) <= 0:
			j++
		default:
			return true
		}
	}
	return false
}
