package memstore

import (
	"slices"
)

// blockMax is the most checkpoints one block of a cpList holds. An insert
// inside a block moves up to this many pointers, and a split moves the
// block pointers after it: 64 keeps both small for threads of up to ~10^5
// checkpoints inserted in random order (the tiny-append benchmark's ids are
// not in order), while an append after the last moves nothing.
const blockMax = 64

// cpList is a thread's checkpoints in List order (listLess): a sequence of
// sorted blocks, every checkpoint of a block ordered before every one of
// the next. It offers the part of the B-tree API the store uses, under the
// same names.
//
// It is not a B-tree because of the common case: a harness appends each
// checkpoint after all the others of its thread (createdAt grows), and that
// is one comparison with the last checkpoint and an append to the last
// block, instead of a descent comparing at every level. Checkpoints that
// arrive out of order (imports, clocks that step back) cost a binary search
// over the blocks and one within a block.
//
// Invariants: no block is empty; each block is sorted; the last checkpoint
// of block i is ordered before the first of block i+1; n is the total.
type cpList struct {
	blocks [][]*rec
	n      int
}

// Len returns the number of checkpoints.
func (l *cpList) Len() int { return l.n }

// ReplaceOrInsert adds c, or replaces the checkpoint that compares equal to
// it (never the case in the store: ids are unique).
func (l *cpList) ReplaceOrInsert(c *rec) {
	if k := len(l.blocks); k == 0 || listLess(last(l.blocks[k-1]), c) {
		l.push(c)
		return
	}
	bi, i := l.seek(c, false) // bi < len(l.blocks): c is not after the last checkpoint
	b := l.blocks[bi]
	if i < len(b) && !listLess(c, b[i]) {
		b[i] = c
		return
	}
	b = slices.Insert(b, i, c)
	l.n++
	if len(b) > blockMax {
		half := len(b) / 2
		tail := slices.Clone(b[half:])
		clear(b[half:]) // the tail moved: drop its pointers from this block's array
		b = b[:half]
		l.blocks = slices.Insert(l.blocks, bi+1, tail)
	}
	l.blocks[bi] = b
}

// push appends c, ordered after every checkpoint, to the last block, or to
// a new block when the last is full.
func (l *cpList) push(c *rec) {
	l.n++
	if k := len(l.blocks); k > 0 && len(l.blocks[k-1]) < blockMax {
		l.blocks[k-1] = append(l.blocks[k-1], c)
		return
	}
	l.blocks = append(l.blocks, []*rec{c})
}

// Delete removes the checkpoint that compares equal to c, if any.
func (l *cpList) Delete(c *rec) {
	bi, i := l.seek(c, false)
	if bi == len(l.blocks) || listLess(c, l.blocks[bi][i]) {
		return // not stored
	}
	b := slices.Delete(l.blocks[bi], i, i+1) // clears the freed slot
	l.n--
	if len(b) == 0 {
		l.blocks = slices.Delete(l.blocks, bi, bi+1)
		return
	}
	l.blocks[bi] = b
}

// Ascend calls fn on each checkpoint in order until fn returns false.
func (l *cpList) Ascend(fn func(*rec) bool) { l.ascendFrom(0, 0, fn) }

// Descend calls fn on each checkpoint in reverse order until fn returns
// false.
func (l *cpList) Descend(fn func(*rec) bool) { l.descendBefore(len(l.blocks), 0, fn) }

// AscendGreaterOrEqual calls fn in order on each checkpoint not ordered
// before pivot, until fn returns false.
func (l *cpList) AscendGreaterOrEqual(pivot *rec, fn func(*rec) bool) {
	bi, i := l.seek(pivot, false)
	l.ascendFrom(bi, i, fn)
}

// DescendLessOrEqual calls fn in reverse order on each checkpoint not
// ordered after pivot, until fn returns false.
func (l *cpList) DescendLessOrEqual(pivot *rec, fn func(*rec) bool) {
	bi, i := l.seek(pivot, true)
	l.descendBefore(bi, i, fn)
}

// seek returns the position (block, index in it) of the first checkpoint
// ordered at or after c, or strictly after c when after is set;
// (len(l.blocks), 0) when there is none.
func (l *cpList) seek(c *rec, after bool) (int, int) {
	// before reports whether x comes before the position sought.
	before := func(x *rec) bool {
		if after {
			return !listLess(c, x) // x ≤ c
		}
		return listLess(x, c) // x < c
	}
	bi, _ := slices.BinarySearchFunc(l.blocks, true, func(b []*rec, _ bool) int {
		if before(last(b)) {
			return -1
		}
		return 1
	})
	if bi == len(l.blocks) {
		return bi, 0
	}
	b := l.blocks[bi]
	i, _ := slices.BinarySearchFunc(b, true, func(x *rec, _ bool) int {
		if before(x) {
			return -1
		}
		return 1
	})
	return bi, i
}

// ascendFrom calls fn on the checkpoints from position (bi, i) on.
func (l *cpList) ascendFrom(bi, i int, fn func(*rec) bool) {
	for ; bi < len(l.blocks); bi, i = bi+1, 0 {
		for _, c := range l.blocks[bi][i:] {
			if !fn(c) {
				return
			}
		}
	}
}

// descendBefore calls fn, last first, on the checkpoints before position
// (bi, i).
func (l *cpList) descendBefore(bi, i int, fn func(*rec) bool) {
	for bi >= 0 {
		if bi < len(l.blocks) {
			b := l.blocks[bi]
			for j := i - 1; j >= 0; j-- {
				if !fn(b[j]) {
					return
				}
			}
		}
		if bi--; bi >= 0 {
			i = len(l.blocks[bi])
		}
	}
}

func last(b []*rec) *rec { return b[len(b)-1] }
