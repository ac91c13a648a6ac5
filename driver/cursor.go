package driver

// Page cursors. A cursor is opaque to callers but names a position, not a
// stored checkpoint: (createdAt, id) for ListPage, a thread id for Threads.
// A page holds what lies strictly after the position, so paging goes on
// correctly when the checkpoint a cursor came from is deleted, and a
// checkpoint added behind the cursor is simply not seen. Every store encodes
// cursors here, so a cursor from one store means the same in another (an
// httpstore client passes the server's cursors through unchanged).

import (
	"cmp"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"
)

// Position is a place in List order: checkpoints sort by CreatedAt, then by
// the bytes of ID.
type Position struct {
	CreatedAt float64
	ID        string
}

// PositionOf is the position of cp.
func PositionOf(cp *Checkpoint) Position { return Position{CreatedAt: cp.CreatedAt, ID: cp.ID} }

// ComparePosition orders cp against p in List order: negative when cp comes
// before p, 0 when cp is at p, positive after.
func ComparePosition(cp *Checkpoint, p Position) int {
	if c := cmp.Compare(cp.CreatedAt, p.CreatedAt); c != 0 {
		return c
	}
	return strings.Compare(cp.ID, p.ID)
}

const (
	listCursorTag   = 'p'
	threadCursorTag = 't'
)

var cursorEncoding = base64.RawURLEncoding

// EncodeCursor returns the ListPage cursor of p.
func EncodeCursor(p Position) string {
	b := make([]byte, 0, 9+len(p.ID))
	b = append(b, listCursorTag)
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(p.CreatedAt))
	b = append(b, p.ID...)
	return cursorEncoding.EncodeToString(b)
}

// DecodeCursor reads a ListPage cursor; one that EncodeCursor did not write
// fails with ErrInvalidEntry.
func DecodeCursor(s string) (Position, error) {
	b, err := cursorEncoding.DecodeString(s)
	if err != nil || len(b) < 10 || b[0] != listCursorTag || len(b) > 9+MaxIDBytes {
		return Position{}, invalid("cursor %s is not a list cursor", QuoteShort(s))
	}
	p := Position{
		CreatedAt: math.Float64frombits(binary.BigEndian.Uint64(b[1:9])),
		ID:        string(b[9:]),
	}
	if !finite(p.CreatedAt) || !utf8.ValidString(p.ID) {
		return Position{}, invalid("cursor %s is not a list cursor", QuoteShort(s))
	}
	return p, nil
}

// EncodeThreadCursor returns the Threads cursor after thread id.
func EncodeThreadCursor(id string) string {
	return cursorEncoding.EncodeToString(append([]byte{threadCursorTag}, id...))
}

// DecodeThreadCursor reads a Threads cursor; one that EncodeThreadCursor did
// not write fails with ErrInvalidEntry.
func DecodeThreadCursor(s string) (string, error) {
	b, err := cursorEncoding.DecodeString(s)
	if err != nil || len(b) < 2 || b[0] != threadCursorTag || len(b) > 1+MaxIDBytes || !utf8.Valid(b[1:]) {
		return "", invalid("cursor %s is not a threads cursor", QuoteShort(s))
	}
	return string(b[1:]), nil
}

// PageLimit resolves a ListPage or Threads limit: 0 is DefaultPageLimit,
// 1…MaxPageLimit is itself, anything else fails with ErrInvalidEntry.
func PageLimit(limit int) (int, error) {
	switch {
	case limit == 0:
		return DefaultPageLimit, nil
	case limit < 0 || limit > MaxPageLimit:
		return 0, fmt.Errorf("%w: page limit %d is outside 1..%d", ErrInvalidEntry, limit, MaxPageLimit)
	}
	return limit, nil
}
