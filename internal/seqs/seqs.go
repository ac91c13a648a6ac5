// Package seqs holds the helpers on iterators that several packages of
// the module share.
package seqs

import (
	"iter"
	"slices"
)

// Collect reads seq to its end into a slice, stopping at the first error.
// The slice is never nil (an empty sequence gives an empty slice: the
// stores' lists encode as [] in JSON, not null) and holds no spare
// capacity. It fills chunks that double up to 64 Ki elements and copies
// them once into a slice of the final length: growing one slice by
// append copied every element again at each doubling, and a memstore
// listing of 200,000 blob references spent most of its time there.
func Collect[T any](seq iter.Seq2[T, error]) ([]T, error) {
	var full [][]T
	cur := make([]T, 0, 64)
	n := 0
	for v, err := range seq {
		if err != nil {
			return nil, err
		}
		if len(cur) == cap(cur) {
			full = append(full, cur)
			cur = make([]T, 0, min(2*cap(cur), 1<<16))
		}
		cur = append(cur, v)
		n++
	}
	if len(full) == 0 {
		return slices.Clip(cur), nil
	}
	out := make([]T, 0, n)
	for _, c := range full {
		out = append(out, c...)
	}
	return append(out, cur...), nil
}
