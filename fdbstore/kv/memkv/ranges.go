package memkv

// Range sets. Every set here is a slice of non-empty half-open ranges,
// sorted by Begin and disjoint, with touching ranges merged; that is what
// lets intersects search one set for each range of the other.

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

// intersects reports whether two range sets share a key. It walks the
// shorter set and finds each of its ranges in the longer one by binary
// search, from where the previous search ended: O(short × log long), where
// a merge would be O(short + long). A commit's few reads are checked
// against the many writes of each recent commit.
func intersects(a, b []kv.KeyRange) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	for _, r := range a {
		// The first range of b that ends after r begins; everything before
		// it ends at or before r.Begin, so before every later r too.
		i, _ := slices.BinarySearchFunc(b, r.Begin, func(w kv.KeyRange, k []byte) int {
			if bytes.Compare(w.End, k) <= 0 {
				return -1
			}
			return 1
		})
		if i == len(b) {
			return false
		}
		if bytes.Compare(b[i].Begin, r.End) < 0 {
			return true
		}
		b = b[i:]
	}
	return false
}
