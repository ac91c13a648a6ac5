package driver

// The JSON scanner under JSONReader: a pull decoder over one JSON text
// held in memory, with the methods of jsontext.Decoder that the reader
// uses (PeekKind, ReadToken, ReadValue, SkipValue, InputOffset) and the
// grammar it checks with the options the codec runs it with (repeated
// names and invalid UTF-8 inside strings allowed; the codec checks the
// strings it decodes itself). It exists because a checkpoint's fields are
// many small values, and jsontext's per-token bookkeeping for io.Reader
// input was most of an HTTP append's decoding time; this one only indexes
// the bytes it was given.
//
// Invariants: b is never written; pos is the offset of the next unread
// byte and last the end of the last token or value returned (InputOffset);
// stack holds one frame per open object or array; err, once set, is
// returned by every read after. Accepted texts are exactly RFC 8259 JSON
// (what encoding/json.Valid accepts), nested at most limit levels
// (maxDepth for the wire reader, contract.MaxJSONDepth for a contract's
// values); scan_test.go holds it to json.Valid.

import (
	"encoding/binary"
	"fmt"
	"io"
)

// maxDepth is the deepest nesting the wire reader accepts in a whole
// request, reply or stored record, encoding/json's and jsontext's. A value
// a contract stores is held to contract.MaxJSONDepth, well below it, so it
// fits inside any envelope.
const maxDepth = 10000

// frame is an open object or array.
type frame struct {
	kind byte // '{' or '['
	n    int  // members or elements begun
	name bool // an object's name was read, its value not yet
}

type scanner struct {
	b        []byte
	pos      int
	last     int
	stack    []frame
	rootDone bool
	err      error
	limit    int  // the deepest nesting accepted
	deep     bool // err is the nesting limit's
	peak     int  // the deepest nesting reached: JSONReader's per-value bound

	// peeked is whether peekAt is next()'s answer at pos: PeekKind and the
	// read that follows it would otherwise each skip the same space and
	// check the same grammar. Every read moves pos forward, so pos keys it.
	peeked          bool
	peekPos, peekAt int
}

// Reset makes s read b from its start.
func (s *scanner) Reset(b []byte) {
	s.b, s.pos, s.last, s.rootDone, s.err, s.peeked = b, 0, 0, false, nil, false
	s.limit, s.deep = maxDepth, false
	s.stack = s.stack[:0]
	if cap(s.stack) > 64 {
		s.stack = nil // a rare deep document is left to the collector
	}
}

// InputOffset is the offset just past the last token or value read.
func (s *scanner) InputOffset() int64 { return int64(s.last) }

func (s *scanner) fail(off int, format string, args ...any) error {
	if s.err == nil {
		s.err = fmt.Errorf("%s (offset %d)", fmt.Sprintf(format, args...), off)
	}
	return s.err
}

// tooDeep fails at i for nesting deeper than s.limit.
func (s *scanner) tooDeep(i int) error {
	if s.err == nil {
		s.deep = true
	}
	return s.fail(i, "nesting deeper than %d levels", s.limit)
}

func (s *scanner) skipSpace(i int) int {
	for i < len(s.b) {
		switch s.b[i] {
		case ' ', '\t', '\n', '\r':
			i++
			continue
		}
		break
	}
	return i
}

// describe names the byte at i for an error, or the end of the input.
func (s *scanner) describe(i int) string {
	if i >= len(s.b) {
		return "unexpected end of input"
	}
	return fmt.Sprintf("invalid character %q", s.b[i])
}

// next returns the offset of the next token, past the ',' or ':' that the
// grammar puts before it, without consuming it; at the end of the
// top-level value it returns io.EOF when only whitespace follows.
func (s *scanner) next() (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	if s.peeked && s.peekPos == s.pos {
		return s.peekAt, nil
	}
	i, err := s.advance()
	if err == nil {
		s.peeked, s.peekPos, s.peekAt = true, s.pos, i
	}
	return i, err
}

// advance is next without the memo.
func (s *scanner) advance() (int, error) {
	i := s.skipSpace(s.pos)
	if len(s.stack) == 0 {
		if !s.rootDone {
			return i, s.valueStart(i)
		}
		if i == len(s.b) {
			return i, io.EOF
		}
		return i, s.fail(i, "%s after the top-level value", s.describe(i))
	}
	top := &s.stack[len(s.stack)-1]
	if top.kind == '{' {
		if top.name {
			if i >= len(s.b) || s.b[i] != ':' {
				return i, s.fail(i, "%s after an object name, want ':'", s.describe(i))
			}
			i = s.skipSpace(i + 1)
			return i, s.valueStart(i)
		}
		if i < len(s.b) && s.b[i] == '}' {
			return i, nil
		}
		if top.n > 0 {
			if i >= len(s.b) || s.b[i] != ',' {
				return i, s.fail(i, "%s after an object value, want ',' or '}'", s.describe(i))
			}
			i = s.skipSpace(i + 1)
		}
		if i >= len(s.b) || s.b[i] != '"' {
			return i, s.fail(i, "%s where an object name belongs", s.describe(i))
		}
		return i, nil
	}
	if i < len(s.b) && s.b[i] == ']' {
		return i, nil
	}
	if top.n > 0 {
		if i >= len(s.b) || s.b[i] != ',' {
			return i, s.fail(i, "%s after an array element, want ',' or ']'", s.describe(i))
		}
		i = s.skipSpace(i + 1)
	}
	return i, s.valueStart(i)
}

// valueStart checks that a value starts at i.
func (s *scanner) valueStart(i int) error {
	if i < len(s.b) {
		switch c := s.b[i]; c {
		case '{', '[', '"', 't', 'f', 'n', '-':
			return nil
		default:
			if '0' <= c && c <= '9' {
				return nil
			}
		}
	}
	return s.fail(i, "%s where a value belongs", s.describe(i))
}

// PeekKind returns the kind of the next token: '{', '}', '[', ']', '"',
// '0' (a number), 't', 'f' or 'n'; 0 at the end or a syntax error, which
// the next read returns.
func (s *scanner) PeekKind() byte {
	i, err := s.next()
	if err != nil {
		return 0
	}
	if c := s.b[i]; c == '-' || '0' <= c && c <= '9' {
		return '0'
	}
	return s.b[i]
}

// begin records, in the enclosing frame, that a value (or, in an object
// awaiting a name, a name) starts.
func (s *scanner) begin() {
	if len(s.stack) == 0 {
		s.rootDone = true
		return
	}
	top := &s.stack[len(s.stack)-1]
	switch {
	case top.kind == '[':
		top.n++
	case top.name:
		top.name = false
	default:
		top.n++
		top.name = true
	}
}

// ReadToken reads the next token, which must be a delimiter ('{', '}',
// '[' or ']'); at the end of the input it returns io.EOF.
func (s *scanner) ReadToken() (byte, error) {
	i, err := s.next()
	if err != nil {
		return 0, err
	}
	switch c := s.b[i]; c {
	case '{', '[':
		if len(s.stack) >= s.limit {
			return 0, s.tooDeep(i)
		}
		s.begin()
		s.stack = append(s.stack, frame{kind: c})
	case '}', ']':
		s.stack = s.stack[:len(s.stack)-1] // next() checked that it closes the top
	default:
		return 0, s.fail(i, "a %q where a delimiter was read", c)
	}
	s.pos, s.last = i+1, i+1
	return s.b[i], nil
}

// ReadValue reads the next value, a name included, and returns its bytes.
func (s *scanner) ReadValue() ([]byte, error) {
	i, err := s.next()
	if err != nil {
		return nil, err
	}
	if c := s.b[i]; c == '}' || c == ']' {
		return nil, s.fail(i, "invalid character %q where a value belongs", c)
	}
	end, err := s.value(i, len(s.stack))
	if err != nil {
		return nil, err
	}
	s.begin()
	s.pos, s.last = end, end
	return s.b[i:end:end], nil
}

// SkipValue reads the next value and drops it.
func (s *scanner) SkipValue() error {
	_, err := s.ReadValue()
	return err
}

// value scans the value at i, at nesting depth depth, and returns its end.
func (s *scanner) value(i, depth int) (int, error) {
	b := s.b
	if i >= len(b) {
		return i, s.fail(i, "unexpected end of input where a value belongs")
	}
	switch c := b[i]; c {
	case '"':
		return s.str(i)
	case '{', '[':
		return s.container(i, depth+1)
	case 't':
		return s.literal(i, "true")
	case 'f':
		return s.literal(i, "false")
	case 'n':
		return s.literal(i, "null")
	default:
		if c == '-' || '0' <= c && c <= '9' {
			return s.number(i)
		}
	}
	return i, s.fail(i, "%s where a value belongs", s.describe(i))
}

func (s *scanner) literal(i int, lit string) (int, error) {
	if len(s.b)-i < len(lit) || string(s.b[i:i+len(lit)]) != lit {
		return i, s.fail(i, "invalid literal, want %s", lit)
	}
	return i + len(lit), nil
}

// plain marks the bytes a string holds without an escape.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// str scans the string at i (its opening quote) and returns its end.
func (s *scanner) str(i int) (int, error) {
	b := s.b
	j := i + 1
	for {
		j = plainRun(b, j)
		if j >= len(b) {
			return j, s.fail(j, "unexpected end of input in a string")
		}
		switch b[j] {
		case '"':
			return j + 1, nil
		case '\\':
			if j+1 >= len(b) {
				return j, s.fail(j+1, "unexpected end of input in a string escape")
			}
			switch b[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if len(b)-j < 6 || !isHex(b[j+2]) || !isHex(b[j+3]) || !isHex(b[j+4]) || !isHex(b[j+5]) {
					return j, s.fail(j, "invalid \\u escape in a string")
				}
				j += 6
			default:
				return j, s.fail(j, "invalid escape %q in a string", b[j:j+2])
			}
		default:
			return j, s.fail(j, "control character %q in a string", b[j])
		}
	}
}

// plainRun returns the end of the run of plain bytes at j, eight at a
// time while it can: a word holds none of '"', '\\' and the control
// characters when no byte of it is below 0x20 or equal to either.
func plainRun(b []byte, j int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for ; len(b)-j >= 8; j += 8 {
		x := binary.LittleEndian.Uint64(b[j:])
		q, bs := x^(ones*'"'), x^(ones*'\\')
		if ((x-ones*0x20)&^x|(q-ones)&^q|(bs-ones)&^bs)&highs != 0 {
			break
		}
	}
	for j < len(b) && plain[b[j]] {
		j++
	}
	return j
}

func isHex(c byte) bool { return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// number scans the number at i and returns its end. What follows it is
// the grammar's to check: "01" and "1x" fail there.
func (s *scanner) number(i int) (int, error) {
	b := s.b
	j := i
	if b[j] == '-' {
		j++
	}
	digits := func() bool {
		k := j
		for j < len(b) && '0' <= b[j] && b[j] <= '9' {
			j++
		}
		return j > k
	}
	switch {
	case j < len(b) && b[j] == '0':
		j++
	case !digits():
		return j, s.fail(j, "%s in a number", s.describe(j))
	}
	if j < len(b) && b[j] == '.' {
		j++
		if !digits() {
			return j, s.fail(j, "%s in a number's fraction", s.describe(j))
		}
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		if !digits() {
			return j, s.fail(j, "%s in a number's exponent", s.describe(j))
		}
	}
	return j, nil
}

// container scans the object or array at i, at depth depth, and returns
// its end.
func (s *scanner) container(i, depth int) (int, error) {
	return s.members(i, depth, nil)
}

// members is container, calling member, when it is not nil, with the
// name (a JSON string, quotes included) and the value of each member of
// an object, and the value's offset. It is how JSONReader reads a flat
// object in one pass instead of a token at a time.
func (s *scanner) members(i, depth int, member func(name []byte, val []byte, off int)) (int, error) {
	if depth > s.limit {
		return i, s.tooDeep(i)
	}
	if depth > s.peak {
		s.peak = depth
	}
	b := s.b
	obj := b[i] == '{'
	closer := byte(']')
	if obj {
		closer = '}'
	}
	j := s.skipSpace(i + 1)
	if j < len(b) && b[j] == closer {
		return j + 1, nil
	}
	for {
		var err error
		nameAt, nameEnd := j, j
		if obj {
			if j >= len(b) || b[j] != '"' {
				return j, s.fail(j, "%s where an object name belongs", s.describe(j))
			}
			if j, err = s.str(j); err != nil {
				return j, err
			}
			nameEnd = j
			j = s.skipSpace(j)
			if j >= len(b) || b[j] != ':' {
				return j, s.fail(j, "%s after an object name, want ':'", s.describe(j))
			}
			j = s.skipSpace(j + 1)
		}
		at := j
		if j, err = s.value(j, depth); err != nil {
			return j, err
		}
		if member != nil {
			member(b[nameAt:nameEnd:nameEnd], b[at:j:j], at)
		}
		j = s.skipSpace(j)
		if j < len(b) && b[j] == ',' {
			j = s.skipSpace(j + 1)
			continue
		}
		if j < len(b) && b[j] == closer {
			return j + 1, nil
		}
		return j, s.fail(j, "%s after a value, want ',' or %q", s.describe(j), closer)
	}
}

// ReadObject reads the next value, an object (PeekKind has said '{'),
// calling member with each member as members does.
func (s *scanner) ReadObject(member func(name []byte, val []byte, off int)) error {
	i, err := s.next()
	if err != nil {
		return err
	}
	end, err := s.members(i, len(s.stack)+1, member)
	if err != nil {
		return err
	}
	s.begin()
	s.pos, s.last = end, end
	return nil
}
