package seqs

import (
	"errors"
	"slices"
	"testing"
)

func pairs(vs []int, failAt int) func(func(int, error) bool) {
	return func(yield func(int, error) bool) {
		for i, v := range vs {
			if i == failAt {
				yield(0, errors.New("boom"))
				return
			}
			if !yield(v, nil) {
				return
			}
		}
	}
}

func TestCollect(t *testing.T) {
	got, err := Collect(pairs([]int{1, 2, 3}, -1))
	if err != nil || !slices.Equal(got, []int{1, 2, 3}) || cap(got) != len(got) {
		t.Errorf("Collect = %v (cap %d), %v; want [1 2 3] without spare capacity", got, cap(got), err)
	}
	if got, err := Collect(pairs(nil, -1)); err != nil || got == nil || len(got) != 0 {
		t.Errorf("Collect of nothing = %#v, %v; want an empty, non-nil slice", got, err)
	}
	if got, err := Collect(pairs([]int{1, 2, 3}, 1)); err == nil || got != nil {
		t.Errorf("Collect past an error = %v, %v; want nil and the error", got, err)
	}
}

// TestCollectAcrossChunks: lengths at, around and well past the chunk
// boundaries come back whole, in order and without spare capacity.
func TestCollectAcrossChunks(t *testing.T) {
	for _, n := range []int{63, 64, 65, 191, 192, 193, 1<<16 + 1, 200_000} {
		vs := make([]int, n)
		for i := range vs {
			vs[i] = i
		}
		got, err := Collect(pairs(vs, -1))
		if err != nil || !slices.Equal(got, vs) || cap(got) != n {
			t.Errorf("Collect of %d: len %d cap %d, %v; want the %d elements in order without spare capacity", n, len(got), cap(got), err, n)
		}
	}
}
