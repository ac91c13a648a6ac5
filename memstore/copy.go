package memstore

import (
	"bytes"
	"unsafe"

	"github.com/ckptstore/ckptstore"
)

// chunkBytes is about how much memory one chunk of a batch copy holds. Small
// enough that a copy the caller keeps holds little else alive, and that no
// allocation is so large that the runtime must fault in fresh pages for it;
// big enough that a List of 10,000 checkpoints is some tens of
// allocations, not 32,000.
const chunkBytes = 256 << 10

// cloneAll replaces each stored checkpoint of cps by a deep copy. The
// copies are cut from shared chunks, one run of chunks each for the
// checkpoints, their Files, their Artifacts and their Conversation bytes,
// instead of three or four allocations per checkpoint: the allocations and
// the collector's work on them were most of the cost of a long List, more
// than the copying itself.
//
// The caller owns every copy as if each were cloned alone: each slice is
// capped at its own end (a full slice expression), so an append reallocates
// instead of writing into its neighbour, and nothing is shared with the
// store. A copy the caller keeps keeps its chunks alive, at most about
// chunkBytes each beyond its own size.
//
// Stored checkpoints are never modified, so the caller may run cloneAll
// after releasing Store.mu, on pointers it read under the lock.
func cloneAll(cps []*ckptstore.Checkpoint) {
	var nFiles, nArts int
	for _, c := range cps {
		nFiles += len(c.Files)
		nArts += len(c.Artifacts)
	}
	vals := newChunks[ckptstore.Checkpoint](len(cps))
	files := newChunks[ckptstore.Entry](nFiles)
	arts := newChunks[ckptstore.Artifact](nArts)
	for i, c := range cps {
		v := vals.put(*c) // its Conversation still reads the stored bytes: copyConversations replaces it
		v.Files = files.copyOf(c.Files)
		v.Artifacts = arts.copyOf(c.Artifacts)
		cps[i] = v
	}
	copyConversations(cps)
}

// copyConversations replaces the Conversation of each checkpoint of cps by a
// copy, joined per chunk of about chunkBytes with bytes.Join, which
// allocates without first zeroing the memory it fills: the conversations
// are most of a List's bytes. nil stays nil and empty stays empty (cap 0,
// so nothing is shared).
func copyConversations(cps []*ckptstore.Checkpoint) {
	var parts [][]byte
	from, size := 0, 0
	flush := func(to int) {
		buf := bytes.Join(parts, nil)
		for _, v := range cps[from:to] {
			if n := len(v.Conversation); n > 0 {
				v.Conversation, buf = buf[:n:n], buf[n:]
			}
		}
		parts, from, size = parts[:0], to, 0
	}
	for i, v := range cps {
		if n := len(v.Conversation); n > 0 {
			parts = append(parts, v.Conversation)
			size += n
		} else if v.Conversation != nil {
			v.Conversation = v.Conversation[:0:0]
		}
		if size >= chunkBytes {
			flush(i + 1)
		}
	}
	flush(len(cps))
}

// chunks hands out copies of slices of T cut from chunks of about
// chunkBytes, sized so that the last chunk ends where the batch does.
type chunks[T any] struct {
	free []T // what is left of the current chunk
	per  int // elements in a full chunk
	left int // elements still to copy in the batch
}

func newChunks[T any](total int) *chunks[T] {
	size := max(1, int(unsafe.Sizeof(*new(T))))
	return &chunks[T]{per: max(1, chunkBytes/size), left: total}
}

// grow makes room for n more elements in the current chunk, starting a new
// one when they do not fit: a full chunk, or less for the end of the batch,
// or exactly n when n alone is more than a chunk.
func (c *chunks[T]) grow(n int) {
	if n > cap(c.free)-len(c.free) {
		c.free = make([]T, 0, max(n, min(c.per, c.left)))
	}
	c.left -= n
}

// put stores v in the current chunk and returns its address.
func (c *chunks[T]) put(v T) *T {
	c.grow(1)
	c.free = append(c.free, v)
	return &c.free[len(c.free)-1]
}

// copyOf returns a copy of src, capped at its length: nil for nil and an
// empty, non-nil slice for an empty one, as slices.Clone.
func (c *chunks[T]) copyOf(src []T) []T {
	if src == nil {
		return nil
	}
	if len(src) == 0 {
		return src[:0:0]
	}
	c.grow(len(src))
	n := len(c.free)
	c.free = append(c.free, src...)
	return c.free[n:len(c.free):len(c.free)]
}
