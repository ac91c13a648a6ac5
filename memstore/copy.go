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

// cloneAll returns a copy of each stored checkpoint of rs, in order, as
// rec.Clone would, but cut from shared chunks, one run of chunks each for
// the checkpoints, their Files, their Artifacts and their Conversation
// bytes, instead of three or four allocations per checkpoint: the
// allocations and the collector's work on them were most of the cost of a
// long List, more than the copying itself. The strings are shared with the
// store (they are immutable).
//
// The caller owns every copy as if each were cloned alone: each slice is
// capped at its own end (a full slice expression), so an append reallocates
// instead of writing into its neighbour, and no byte the caller can write
// is shared with the store. A copy the caller keeps keeps its chunks alive,
// at most about chunkBytes each beyond its own size.
//
// The conversations are copied first, the structs and arrays after: most
// of a List's bytes are conversations, so most collections start while
// they are copied, and then none of the structs, all pointers, exist yet to
// be marked; made after the collection started, they are born marked.
// Copying the structs first had each such collection mark all of them.
//
// Stored checkpoints are never modified, so the caller may run cloneAll
// after releasing Driver.mu, on pointers it read under the lock.
func cloneAll(rs []*rec) []*ckptstore.Checkpoint {
	convs := copyConversations(rs)
	var nFiles, nArts int
	for _, r := range rs {
		nFiles += len(r.files)
		nArts += len(r.arts)
	}
	out := make([]*ckptstore.Checkpoint, len(rs))
	vals := newChunks[ckptstore.Checkpoint](len(rs))
	files := newChunks[ckptstore.Entry](nFiles)
	arts := newChunks[ckptstore.Artifact](nArts)
	var conv []byte // what is left of convs[0]
	for i, r := range rs {
		c := vals.next()
		r.unpack(c, files.take(r.files != nil, len(r.files)), arts.take(r.arts != nil, len(r.arts)))
		switch r.convK {
		case convEmpty:
			c.Conversation = []byte{} // non-nil, no allocation, nothing shared
		case convBytes:
			n := len(r.text) - int(r.convFrom)
			for len(conv) < n { // the chunks hold the conversations in order, back to back
				conv, convs = convs[0], convs[1:]
			}
			c.Conversation, conv = conv[:n:n], conv[n:]
		}
		out[i] = c
	}
	return out
}

// copyConversations returns the conversations of rs in order, back to back
// in chunks of about chunkBytes, each joined with bytes.Join, which
// allocates without first zeroing the memory it fills.
func copyConversations(rs []*rec) [][]byte {
	var chunks, parts [][]byte
	size := 0
	for _, r := range rs {
		if r.convK != convBytes {
			continue
		}
		// A read-only view of the stored bytes, for bytes.Join to copy.
		conv := r.conversation()
		parts = append(parts, unsafe.Slice(unsafe.StringData(conv), len(conv)))
		if size += len(conv); size >= chunkBytes {
			chunks = append(chunks, bytes.Join(parts, nil))
			parts, size = parts[:0], 0
		}
	}
	if len(parts) > 0 {
		chunks = append(chunks, bytes.Join(parts, nil))
	}
	return chunks
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

// next returns the address of the next element of the current chunk,
// zero.
func (c *chunks[T]) next() *T {
	c.grow(1)
	c.free = c.free[:len(c.free)+1]
	return &c.free[len(c.free)-1]
}

// take returns the next n elements, zero and capped at their end; nil when
// ok is false (a nil slice copies as nil), and an empty, non-nil slice for
// n == 0, as slices.Clone.
func (c *chunks[T]) take(ok bool, n int) []T {
	if !ok {
		return nil
	}
	if n == 0 {
		return []T{} // non-nil, and no allocation: zero-size
	}
	c.grow(n)
	lo := len(c.free)
	c.free = c.free[:lo+n]
	return c.free[lo : lo+n : lo+n]
}
