package streams

// Offsets.
//
// Invariants: a position (Pos) counts the units of a stream from its
// start — bytes, or messages in JSON mode — and a fork shares its source's
// positions below the fork point, so one offset space serves a fork chain.
// An offset is a position written as two fixed-width decimal fields
// ("0000000000000000_0000000000000042"): the first is reserved (0), the
// second the position. Fixed width makes string order position order, the
// alphabet is URL-safe, the length is 33 bytes (≤ 64), and no offset is
// ever "-1" or "now".

import "strconv"

// Pos is a position in a stream: the number of units (bytes, or JSON
// messages) before it.
type Pos int64

// MaxPos is the largest position: positions stay safe integers.
const MaxPos Pos = 1<<53 - 1

// OffsetLen is the length of every offset the server mints.
const OffsetLen = 33

// The offset sentinels a reader may send.
const (
	// OffsetStart ("-1") is the start of the stream.
	OffsetStart = "-1"
	// OffsetNow ("now") is the stream's tail at the time of the request.
	OffsetNow = "now"
)

// Offset returns the offset of p.
func (p Pos) Offset() string {
	var b [OffsetLen]byte
	return string(p.AppendOffset(b[:0]))
}

// AppendOffset appends the offset of p to b.
func (p Pos) AppendOffset(b []byte) []byte {
	b = append(b, "0000000000000000_"...)
	var d [20]byte
	s := strconv.AppendInt(d[:0], int64(p), 10)
	for i := len(s); i < 16; i++ {
		b = append(b, '0')
	}
	return append(b, s...)
}

// Start is what an offset a reader sends names: a position, the start of
// the stream, or its tail.
type Start struct {
	Pos Pos
	// Now: the tail at the time of the read (offset=now); Pos is unset.
	Now bool
}

// ParseOffset parses a reader's offset: "" or "-1" (the start), "now", or
// an offset the server minted. Anything else is ErrBadRequest.
func ParseOffset(s string) (Start, error) {
	switch s {
	case "", OffsetStart:
		return Start{}, nil
	case OffsetNow:
		return Start{Now: true}, nil
	}
	p, ok := parsePos(s)
	if !ok {
		return Start{}, errorf(ErrBadRequest, "offset %s is not an offset of this server", quoteShort(s))
	}
	return Start{Pos: p}, nil
}

// ParseForkOffset parses Stream-Fork-Offset: a minted offset or "-1".
func ParseForkOffset(s string) (Pos, error) {
	if s == OffsetStart {
		return 0, nil
	}
	p, ok := parsePos(s)
	if !ok {
		return 0, errorf(ErrBadRequest, "Stream-Fork-Offset %s is not an offset of this server", quoteShort(s))
	}
	return p, nil
}

// ParseExpectOffset parses Ckpt-Expect-Offset: a minted offset, or "-1"
// for the start (an empty stream's tail).
func ParseExpectOffset(s string) (Pos, error) {
	if s == OffsetStart {
		return 0, nil
	}
	p, ok := parsePos(s)
	if !ok {
		return 0, errorf(ErrBadRequest, "Ckpt-Expect-Offset %s is not an offset of this server", quoteShort(s))
	}
	return p, nil
}

func parsePos(s string) (Pos, bool) {
	if len(s) != OffsetLen || s[16] != '_' {
		return 0, false
	}
	for i := 0; i < OffsetLen; i++ {
		if i != 16 && (s[i] < '0' || s[i] > '9') {
			return 0, false
		}
	}
	if s[:16] != "0000000000000000" {
		return 0, false
	}
	n, err := strconv.ParseInt(s[17:], 10, 64)
	if err != nil || Pos(n) > MaxPos {
		return 0, false
	}
	return Pos(n), true
}

// quoteShort quotes s for a message, cut to 64 bytes.
func quoteShort(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return strconv.Quote(s)
}
