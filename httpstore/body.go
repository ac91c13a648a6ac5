package httpstore

// How a request body is read, and what bounds the memory it takes.
// Invariants: every byte of a JSON body the handler holds is reserved
// from the handler's in-flight budget before it is allocated, and given
// back when the request ends however it ends (a reply, a refusal, a
// cancelled context); a body above its limit is refused after at most
// the limit plus one piece has been read; a buffer above maxPooledBuffer
// is never put back in a pool, so a refused body leaves nothing live.

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/ckptstore/ckptstore/driver"
)

// DefaultMaxInflightFactor is the in-flight budget of a zero
// HandlerOptions.MaxInflightBytes, in bodies of the largest size: 4 ×
// MaxBodyBytes, 256 MiB with the default body limit.
const DefaultMaxInflightFactor = 4

// pieceSize is the unit in which a chunked body (one without a
// Content-Length) is read and reserved: small enough that reading one
// piece past the limit costs little, large enough that a 64 MiB body is a
// few hundred reads.
const pieceSize = 256 << 10

// piecePool holds the pieces of chunked bodies. A refused body's pieces
// come back here, so a storm of refused bodies reuses the same memory
// rather than leaving garbage for the collector.
var piecePool = sync.Pool{New: func() any {
	b := make([]byte, pieceSize)
	return &b
}}

// smallBody is the most a request may hold and still count as small:
// small requests may use the whole budget, larger ones all but its last
// eighth, so that a few tenants sending the largest bodies cannot keep
// the others' ordinary requests out.
const smallBody = maxPooledBuffer

// budget is the handler's count of request-body bytes in flight.
type budget struct {
	max    int64 // the limit of small requests
	maxBig int64 // the limit of the others: 7/8 of max, at least MaxBodyBytes
	used   atomic.Int64
}

// take reserves n bytes for a request that will then hold held bytes, or
// reports false when that would pass its limit. It never waits: a server
// at its budget answers 503 OVERLOADED at once, and the client retries
// later.
func (b *budget) take(n, held int64) bool {
	limit := b.max
	if held > smallBody {
		limit = b.maxBig
	}
	for {
		u := b.used.Load()
		if u+n > limit {
			return false
		}
		if b.used.CompareAndSwap(u, u+n) {
			return true
		}
	}
}

// reserve takes n bytes of the budget for c, which gives them back when
// the request ends (serve), or returns the OVERLOADED error.
func (h *handler) reserve(c *call, n int64) error {
	if !h.budget.take(n, c.held+n) {
		return reqErr(CodeOverloaded, "the server holds too many request bytes (a limit of %d in flight): retry after the Retry-After delay", h.budget.max)
	}
	c.held += n
	return nil
}

// unreserve gives n of c's reserved bytes back.
func (h *handler) unreserve(c *call, n int64) {
	c.held -= n
	h.budget.used.Add(-n)
}

// readBody reads r's JSON body into c.body: at most MaxBodyBytes, each
// byte reserved before it is read. A body of known length is read into
// one buffer of that length (a pooled one when small); a chunked body is
// read in pieces of pieceSize, then copied into one buffer of its length,
// since the JSON reader wants contiguous bytes. The reply is built after
// the body in the same storage when the body is in buf.
func (h *handler) readBody(w http.ResponseWriter, r *http.Request, c *call, buf *bytes.Buffer) error {
	limit := h.opts.MaxBodyBytes
	if r.ContentLength > limit {
		return reqErr(CodePayloadTooLarge, "the body is %d bytes, more than the limit of %d", r.ContentLength, limit)
	}
	body := http.MaxBytesReader(w, r.Body, limit)
	if n := r.ContentLength; n >= 0 {
		if err := h.reserve(c, n); err != nil {
			return err
		}
		b := h.bodyBuffer(c, buf, int(n))
		if _, err := io.ReadFull(body, b); err != nil {
			return bodyError(err, limit)
		}
		return nil
	}
	var pieces []*[]byte
	defer func() {
		for _, p := range pieces {
			piecePool.Put(p)
		}
		h.unreserve(c, int64(len(pieces))*pieceSize)
	}()
	total := 0
	for {
		if err := h.reserve(c, pieceSize); err != nil {
			return err
		}
		p := piecePool.Get().(*[]byte)
		pieces = append(pieces, p)
		n, err := io.ReadFull(body, *p)
		total += n
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			return bodyError(err, limit)
		}
	}
	if err := h.reserve(c, int64(total)); err != nil {
		return err
	}
	b := h.bodyBuffer(c, buf, total)
	for i, p := range pieces {
		copy(b[i*pieceSize:], *p)
	}
	return nil
}

// bodyBuffer sets c.body to n bytes to read the body into, and c.out.b to
// the storage the reply is built in.
func (h *handler) bodyBuffer(c *call, buf *bytes.Buffer, n int) []byte {
	if n <= maxPooledBuffer {
		buf.Grow(n)
		c.body = buf.AvailableBuffer()[:n]
		c.out.b = c.body[n:]
	} else {
		c.body = make([]byte, n)
		c.out.b = buf.AvailableBuffer()
	}
	return c.body
}

// bodyError is the error of a failed body read.
func bodyError(err error, limit int64) error {
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return reqErr(CodePayloadTooLarge, "the body is more than the limit of %d bytes", limit)
	}
	if err == io.ErrUnexpectedEOF {
		return reqErr(CodeBadRequest, "the body is shorter than its Content-Length")
	}
	return reqErr(CodeBadRequest, "reading the body: %v", err)
}

// maxMessage bounds the message of an error reply: whatever an error
// quotes (a driver's, a store's), the reply stays small.
const maxMessage = 1 << 10

// clipMessage bounds an error reply's message to maxMessage bytes.
func clipMessage(s string) string {
	if len(s) <= maxMessage {
		return s
	}
	return driver.CutUTF8(s, maxMessage-len("…")) + "…"
}
