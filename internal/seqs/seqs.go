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
// capacity.
func Collect[T any](seq iter.Seq2[T, error]) ([]T, error) {
	out := []T{}
	for v, err := range seq {
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return slices.Clip(out), nil
}
