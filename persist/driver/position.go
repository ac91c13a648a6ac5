package driver

// Resumable dumps: a DumpPosition is where a Dump stopped, and a cursor is a
// DumpPosition as an opaque string that a client hands back to resume.
//
// Invariants:
//
//   - A DumpPosition orders every record of one driver: first by kind, in
//     Kinds order, then by the driver's own resume key of the record
//     (PositionOf). Dump(ctx, after) yields exactly the records after
//     "after" in that order, so the dumps of consecutive pieces, each
//     resumed at the position of the last record of the one before, are
//     one dump.
//   - The zero DumpPosition is before every record; a DumpPosition of a kind with
//     an empty Key is before every record of that kind.
//   - A cursor is only meaningful to the driver (and namespace) that made
//     it; another driver reads it as a position in its own order.

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"

	ckptdriver "github.com/ckptstore/ckptstore/driver"
)

// DumpPosition is a place in a driver's dump order: after every record of the
// kinds before Kind and after the records of Kind whose resume key is at
// most Key (byte order). The zero DumpPosition is the start.
type DumpPosition struct {
	Kind RecordKind
	// Key is the driver's resume key within Kind: an id, a backend key,
	// or an encoding of a metadata identity, as the driver chooses.
	Key string
}

// MaxCursorBytes bounds a cursor's length: a resume key holds at most a
// backend key or two ids and their framing, well under this.
const MaxCursorBytes = 8 << 10

// cursorVersion leads every cursor, so that a later encoding can be told
// apart.
const cursorVersion = 'p'

// Cursor is p as an opaque string (URL-safe, no padding); the zero
// DumpPosition's is "".
func (p DumpPosition) Cursor() string {
	if p == (DumpPosition{}) {
		return ""
	}
	b := append([]byte{cursorVersion}, p.Kind...)
	b = append(append(b, 0), p.Key...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// ParseCursor reads a Cursor back; "" is the zero DumpPosition. A cursor that
// is too long, not base64, of another version or of an unknown kind fails
// with ErrInvalidEntry.
func ParseCursor(s string) (DumpPosition, error) {
	if s == "" {
		return DumpPosition{}, nil
	}
	if len(s) > MaxCursorBytes {
		return DumpPosition{}, fmt.Errorf("%w: the dump cursor is longer than %d bytes", ErrInvalidEntry, MaxCursorBytes)
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) == 0 || b[0] != cursorVersion {
		return DumpPosition{}, fmt.Errorf("%w: the dump cursor %s is not one this server made", ErrInvalidEntry, ckptdriver.QuoteShort(s))
	}
	kind, key, ok := strings.Cut(string(b[1:]), "\x00")
	p := DumpPosition{Kind: RecordKind(kind), Key: key}
	if !ok {
		return DumpPosition{}, fmt.Errorf("%w: the dump cursor %s is not one this server made", ErrInvalidEntry, ckptdriver.QuoteShort(s))
	}
	if _, err := p.Start(); err != nil {
		return DumpPosition{}, err
	}
	return p, nil
}

// Start is the index in Kinds of the first kind a Dump after p reads: 0
// for the zero DumpPosition, else p.Kind's index. An unknown kind fails with
// ErrInvalidEntry.
func (p DumpPosition) Start() (int, error) {
	if p.Kind == "" {
		if p.Key != "" {
			return 0, fmt.Errorf("%w: a dump position with a key needs a kind", ErrInvalidEntry)
		}
		return 0, nil
	}
	i := slices.Index(Kinds, p.Kind)
	if i < 0 {
		return 0, fmt.Errorf("%w: a dump position of unknown record kind %s", ErrInvalidEntry, ckptdriver.QuoteShort(string(p.Kind)))
	}
	return i, nil
}

// KindsAfter yields the kinds a Dump after p reads, in order, each with
// the resume key to read strictly after ("" for the whole kind). An
// invalid p fails with Start's error.
func (p DumpPosition) KindsAfter() ([]DumpPosition, error) {
	i, err := p.Start()
	if err != nil {
		return nil, err
	}
	out := make([]DumpPosition, 0, len(Kinds)-i)
	for j, k := range Kinds[i:] {
		at := DumpPosition{Kind: k}
		if j == 0 {
			at.Key = p.Key
		}
		out = append(out, at)
	}
	return out, nil
}
