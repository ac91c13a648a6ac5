// Package tuple encodes FoundationDB tuple-layer keys, byte for byte as the
// official binding's package github.com/apple/foundationdb/bindings/go/src/fdb/tuple
// does, for the element types fdbstore uses.
//
// Why not the official package: it imports the cgo binding, which cannot be
// built without libfdb_c. This codec is tested against the published
// encodings of the tuple spec (design/tuple.md in apple/foundationdb) and,
// under build tag fdb, against the official package on random inputs.
//
// Supported elements (type code in parentheses):
//
//	nil (0x00), []byte (0x01), string (0x02, UTF-8 as given),
//	int/int64 (0x0c–0x1c), uint64 (0x14–0x1c), float32 (0x20), float64 (0x21),
//	false (0x26), true (0x27).
//
// Invariants the encoding keeps, which fdbstore relies on:
//
//   - Pack is injective and order preserving: for tuples a and b whose
//     elements have the same types, bytes.Compare(Pack(a), Pack(b)) orders
//     them element by element; strings and byte strings by their bytes
//     (embedded 0x00 is escaped as 0x00 0xff), integers numerically, float64
//     by the IEEE total order (so -0.0 sorts before +0.0, and NaN outside
//     the reals).
//   - Pack(a) is a prefix of Pack(a + b): a tuple's keys share its prefix,
//     so Range(Pack(a)) covers every longer tuple that starts with a.
package tuple

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
)

// Type codes of the tuple layer (design/tuple.md).
const (
	codeNil       = 0x00
	codeBytes     = 0x01
	codeString    = 0x02
	codeIntZero   = 0x14
	codeNegInt8   = 0x0c // 8-byte negative integer
	codePosInt8   = 0x1c // 8-byte positive integer
	codeFloat     = 0x20
	codeDouble    = 0x21
	codeFalse     = 0x26
	codeTrue      = 0x27
	escapeByte    = 0xff
	maxIntBytes   = 8
	doubleLen     = 8
	doubleElemLen = 1 + doubleLen
	floatLen      = 4
	floatElemLen  = 1 + floatLen
)

// Tuple is an ordered list of elements of the supported types.
type Tuple []any

// ErrInvalid is wrapped by every error Unpack returns.
var ErrInvalid = errors.New("tuple: invalid encoding")

// Pack returns the encoding of t. It panics on an element of an unsupported
// type, as the official package does: the key layout is fixed at compile
// time, so that is a programming error.
func (t Tuple) Pack() []byte { return Append(nil, t...) }

// Pack returns the encoding of the tuple of elems.
func Pack(elems ...any) []byte { return Append(nil, elems...) }

// Append appends the encoding of the tuple of elems to dst and returns the
// extended slice. Append(prefix, ...) builds a key under a raw prefix, as a
// subspace does.
func Append(dst []byte, elems ...any) []byte {
	for i, e := range elems {
		switch v := e.(type) {
		case nil:
			dst = append(dst, codeNil)
		case []byte:
			dst = appendBytes(dst, codeBytes, v)
		case string:
			dst = appendString(dst, v)
		case int:
			dst = appendInt(dst, int64(v))
		case int64:
			dst = appendInt(dst, v)
		case uint64:
			dst = appendUint(dst, v)
		case float32:
			dst = appendFloat(dst, v)
		case float64:
			dst = appendDouble(dst, v)
		case bool:
			if v {
				dst = append(dst, codeTrue)
			} else {
				dst = append(dst, codeFalse)
			}
		default:
			panic(fmt.Sprintf("tuple: unsupported element %d of type %T", i, e))
		}
	}
	return dst
}

func appendBytes(dst []byte, code byte, b []byte) []byte {
	dst = append(dst, code)
	for {
		i := bytes.IndexByte(b, 0x00)
		if i < 0 {
			break
		}
		dst = append(dst, b[:i+1]...)
		dst = append(dst, escapeByte)
		b = b[i+1:]
	}
	dst = append(dst, b...)
	return append(dst, 0x00)
}

// appendString is appendBytes for a string, without copying it to a []byte.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, codeString)
	for {
		i := strings.IndexByte(s, 0x00)
		if i < 0 {
			break
		}
		dst = append(dst, s[:i+1]...)
		dst = append(dst, escapeByte)
		s = s[i+1:]
	}
	dst = append(dst, s...)
	return append(dst, 0x00)
}

// AppendString appends the encoding of the string element s: Append(dst, s)
// without boxing s in an interface, for keys built on hot paths.
func AppendString(dst []byte, s string) []byte { return appendString(dst, s) }

// AppendInt appends the encoding of the integer element i.
func AppendInt(dst []byte, i int64) []byte { return appendInt(dst, i) }

// AppendFloat64 appends the encoding of the float64 element f.
func AppendFloat64(dst []byte, f float64) []byte { return appendDouble(dst, f) }

// StringLen is the length of the encoding of the string element s.
func StringLen(s string) int { return 2 + len(s) + strings.Count(s, "\x00") }

// Float64Len is the length of the encoding of a float64 element.
const Float64Len = doubleElemLen

// MaxIntLen is the longest encoding of an integer element.
const MaxIntLen = 1 + maxIntBytes

// byteLen returns how many big-endian bytes u needs (0 for 0).
func byteLen(u uint64) int {
	n := 0
	for u != 0 {
		n++
		u >>= 8
	}
	return n
}

func appendUint(dst []byte, u uint64) []byte {
	n := byteLen(u)
	dst = append(dst, byte(codeIntZero+n))
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], u)
	return append(dst, b[8-n:]...)
}

func appendInt(dst []byte, i int64) []byte {
	if i >= 0 {
		return appendUint(dst, uint64(i))
	}
	// A negative number is stored as the one's complement of its magnitude
	// in n bytes: (2^(8n) - 1) + i, which is order preserving.
	mag := uint64(-i) // for math.MinInt64 this wraps to 1<<63, the right magnitude
	n := byteLen(mag)
	dst = append(dst, byte(codeIntZero-n))
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], ^mag) // ^mag = 2^64-1-mag; its low n bytes are the encoding
	return append(dst, b[8-n:]...)
}

func appendDouble(dst []byte, f float64) []byte {
	var b [doubleLen]byte
	binary.BigEndian.PutUint64(b[:], math.Float64bits(f))
	transformFloat(b[:], true)
	dst = append(dst, codeDouble)
	return append(dst, b[:]...)
}

func appendFloat(dst []byte, f float32) []byte {
	var b [floatLen]byte
	binary.BigEndian.PutUint32(b[:], math.Float32bits(f))
	transformFloat(b[:], true)
	dst = append(dst, codeFloat)
	return append(dst, b[:]...)
}

// transformFloat maps IEEE bits to bytes whose unsigned order is the IEEE
// total order: negative numbers get every bit flipped, others only the sign
// bit. decode reverses it.
func transformFloat(b []byte, encode bool) {
	negative := b[0]&0x80 != 0
	if !encode {
		negative = !negative
	}
	if negative {
		for i := range b {
			b[i] ^= 0xff
		}
	} else {
		b[0] ^= 0x80
	}
}

// Unpack decodes an encoding made of supported elements. Integers decode as
// int64, or as uint64 above math.MaxInt64, as in the official package.
func Unpack(b []byte) (Tuple, error) {
	t := Tuple{}
	for i := 0; i < len(b); {
		e, n, err := decodeElem(b[i:])
		if err != nil {
			return nil, fmt.Errorf("%w: at byte %d: %v", ErrInvalid, i, err)
		}
		t = append(t, e)
		i += n
	}
	return t, nil
}

// decodeElem decodes the element at the start of b and returns it with the
// number of bytes it took.
func decodeElem(b []byte) (any, int, error) {
	code := b[0]
	switch {
	case code == codeNil:
		return nil, 1, nil
	case code == codeBytes:
		v, n, err := decodeEscaped(b[1:])
		return v, n + 1, err
	case code == codeString:
		v, n, err := decodeEscaped(b[1:])
		return string(v), n + 1, err
	case codeNegInt8 <= code && code <= codePosInt8:
		return decodeInt(b)
	case code == codeDouble:
		if len(b) < doubleElemLen {
			return nil, 0, errors.New("truncated double")
		}
		var raw [doubleLen]byte
		copy(raw[:], b[1:doubleElemLen])
		transformFloat(raw[:], false)
		return math.Float64frombits(binary.BigEndian.Uint64(raw[:])), doubleElemLen, nil
	case code == codeFloat:
		if len(b) < floatElemLen {
			return nil, 0, errors.New("truncated float")
		}
		var raw [floatLen]byte
		copy(raw[:], b[1:floatElemLen])
		transformFloat(raw[:], false)
		return math.Float32frombits(binary.BigEndian.Uint32(raw[:])), floatElemLen, nil
	case code == codeFalse:
		return false, 1, nil
	case code == codeTrue:
		return true, 1, nil
	}
	return nil, 0, fmt.Errorf("unsupported type code 0x%02x", code)
}

// decodeEscaped reads an escaped byte string up to its terminating 0x00 (one
// not followed by 0xff) and returns it with the bytes taken, terminator
// included.
func decodeEscaped(b []byte) ([]byte, int, error) {
	var out []byte
	for i := 0; i < len(b); i++ {
		if b[i] != 0x00 {
			continue
		}
		if i+1 < len(b) && b[i+1] == escapeByte {
			continue
		}
		out = make([]byte, 0, i)
		for j := 0; j < i; j++ {
			out = append(out, b[j])
			if b[j] == 0x00 {
				j++ // skip the escape byte
			}
		}
		return out, i + 1, nil
	}
	return nil, 0, errors.New("unterminated string")
}

func decodeInt(b []byte) (any, int, error) {
	n := int(b[0]) - codeIntZero
	neg := n < 0
	if neg {
		n = -n
	}
	if len(b) < 1+n {
		return nil, 0, errors.New("truncated integer")
	}
	var raw [8]byte
	copy(raw[8-n:], b[1:1+n])
	u := binary.BigEndian.Uint64(raw[:])
	if !neg {
		if u > math.MaxInt64 {
			return u, 1 + n, nil
		}
		return int64(u), 1 + n, nil
	}
	// The value is u - (2^(8n) - 1), the magnitude (2^(8n)-1) - u.
	limit := uint64(math.MaxUint64)
	if n < maxIntBytes {
		limit = 1<<(8*n) - 1
	}
	mag := limit - u
	if mag > 1<<63 {
		return nil, 0, errors.New("negative integer below math.MinInt64")
	}
	return -int64(mag), 1 + n, nil // -int64(1<<63) wraps to math.MinInt64, as wanted
}

// Range returns the begin and end keys of every key that starts with the
// packed tuple p and is longer than it: [p+0x00, p+0xff), the range the
// official Tuple.FDBRangeKeys returns.
func Range(p []byte) (begin, end []byte) {
	begin = append(append(make([]byte, 0, len(p)+1), p...), 0x00)
	end = append(append(make([]byte, 0, len(p)+1), p...), 0xff)
	return begin, end
}
