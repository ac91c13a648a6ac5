package memstore

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
)

// cpList against a sorted slice, under random inserts (in order, out of
// order, replacing) and deletes (present and absent), enough of them to
// split and empty blocks; every iteration and seek is compared after each
// step.
func TestCPListModel(t *testing.T) {
	for seed := range uint64(4) {
		r := rand.New(rand.NewPCG(seed, 1))
		var l cpList
		var model []*rec
		mk := func() *rec {
			return &rec{ID: fmt.Sprint(r.IntN(2000)), CreatedAt: float64(r.IntN(50))}
		}
		for step := range 3000 {
			c := mk()
			switch op := r.IntN(10); {
			case op < 2: // in order, the common case
				c = &rec{ID: fmt.Sprint("z", step), CreatedAt: 1000 + float64(step)}
				fallthrough
			case op < 7:
				l.ReplaceOrInsert(c)
				i, found := slices.BinarySearchFunc(model, c, compareRecs)
				if found {
					model[i] = c
				} else {
					model = slices.Insert(model, i, c)
				}
			default:
				l.Delete(c)
				if i, found := slices.BinarySearchFunc(model, c, compareRecs); found {
					model = slices.Delete(model, i, i+1)
				}
			}
			if step%10 == 0 || step > 2990 { // every step would be slow under -race
				checkCPList(t, seed, step, &l, model, mk())
			}
			if t.Failed() {
				return
			}
		}
	}
}

func checkCPList(t *testing.T, seed uint64, step int, l *cpList, model []*rec, pivot *rec) {
	t.Helper()
	collect := func(iter func(fn func(*rec) bool)) []*rec {
		out := []*rec{}
		iter(func(c *rec) bool { out = append(out, c); return true })
		return out
	}
	rev := slices.Clone(model)
	slices.Reverse(rev)
	ge, le := []*rec{}, []*rec{}
	for _, c := range model {
		if compareRecs(c, pivot) >= 0 {
			ge = append(ge, c)
		}
	}
	for _, c := range rev {
		if compareRecs(c, pivot) <= 0 {
			le = append(le, c)
		}
	}
	for _, tc := range []struct {
		name      string
		got, want []*rec
	}{
		{"Ascend", collect(l.Ascend), append([]*rec{}, model...)},
		{"Descend", collect(l.Descend), rev},
		{"AscendGreaterOrEqual", collect(func(fn func(*rec) bool) { l.AscendGreaterOrEqual(pivot, fn) }), ge},
		{"DescendLessOrEqual", collect(func(fn func(*rec) bool) { l.DescendLessOrEqual(pivot, fn) }), le},
	} {
		if !slices.Equal(tc.got, tc.want) {
			t.Errorf("seed %d step %d: %s returned %d checkpoints, want %d (or other ones)", seed, step, tc.name, len(tc.got), len(tc.want))
		}
	}
	if l.Len() != len(model) {
		t.Errorf("seed %d step %d: Len = %d, want %d", seed, step, l.Len(), len(model))
	}
	for _, b := range l.blocks {
		if len(b) == 0 || len(b) > blockMax {
			t.Errorf("seed %d step %d: a block of %d checkpoints", seed, step, len(b))
		}
	}
	// Stopping early stops.
	n := 0
	l.Ascend(func(*rec) bool { n++; return n < 3 })
	if want := min(3, len(model)); n != want {
		t.Errorf("seed %d step %d: Ascend stopped after %d calls, want %d", seed, step, n, want)
	}
}

// compareRecs orders stored checkpoints by the contract's own order, the
// model cpList is checked against.
func compareRecs(a, b *rec) int {
	return driver.CompareCheckpoints(&ckptstore.Checkpoint{ID: a.ID, CreatedAt: a.CreatedAt},
		&ckptstore.Checkpoint{ID: b.ID, CreatedAt: b.CreatedAt})
}
