package driver

// JSON of the lease types, for the HTTP protocol (docs/http-api.md): a
// Writer is {threadId, ownerToken, fence} and a Lease adds expiresAt (epoch
// milliseconds) and renewAfterMs, as the TypeScript contract spells them.
// DecodeJSONString is the strict string decoding of json.go for callers
// that take ids out of other JSON objects (httpstore's request bodies).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

type writerJSON struct {
	ThreadID   string `json:"threadId"`
	OwnerToken string `json:"ownerToken"`
	Fence      int64  `json:"fence"`
}

// MarshalJSON encodes w as {"threadId","ownerToken","fence"}.
func (w Writer) MarshalJSON() ([]byte, error) { return marshal(writerJSON(w)) }

// UnmarshalJSON decodes a writer. The thread id is decoded strictly
// (ErrInvalidID when missing, not a string or not well-formed Unicode, as
// every id); ownerToken must be a string (ErrInvalidEntry otherwise) and is
// taken as encoding/json decodes it, since a token that is not well-formed
// cannot be any lease's and fails the writer check anyway; fence must be an
// integer of at most 2^53−1 in magnitude (ErrInvalidEntry). Other fields are
// ignored, so a Lease's JSON decodes as its Writer.
func (w *Writer) UnmarshalJSON(b []byte) error {
	o, err := decodeObject(b, "writer")
	if err != nil {
		return err
	}
	var out Writer
	if out.ThreadID, err = o.required("writer", "threadId", ErrInvalidID); err != nil {
		return err
	}
	tok := o["ownerToken"]
	if isNull(tok) || tok[0] != '"' {
		return invalid("writer ownerToken must be a string")
	}
	if err := json.Unmarshal(tok, &out.OwnerToken); err != nil {
		return invalid("writer ownerToken: %v", err)
	}
	if out.Fence, err = decodeInt(o["fence"], "writer fence", math.MinInt64); err != nil {
		return err
	}
	*w = out
	return nil
}

// MarshalJSON encodes l as its Writer's fields plus expiresAt, in epoch
// milliseconds, and renewAfterMs. Both are numbers that carry the
// sub-millisecond part as a decimal fraction (exact to the nanosecond), so
// that a lease read back through JSON has the same ExpiresAt.
func (l Lease) MarshalJSON() ([]byte, error) {
	b, err := l.Writer.MarshalJSON()
	if err != nil {
		return nil, err
	}
	b = append(b[:len(b)-1], `,"expiresAt":`...)
	b = AppendMillis(b, l.ExpiresAt.UnixNano())
	b = append(b, `,"renewAfterMs":`...)
	b = AppendMillis(b, int64(l.RenewAfter))
	return append(b, '}'), nil
}

// AppendMillis appends ns nanoseconds as a JSON number of milliseconds:
// the whole milliseconds, and a fraction of up to six digits only when ns
// is not a whole millisecond (-1 ns is -0.000001).
func AppendMillis(b []byte, ns int64) []byte {
	u := uint64(ns)
	if ns < 0 {
		b = append(b, '-')
		u = -u
	}
	ms, rem := u/1e6, u%1e6
	b = strconv.AppendUint(b, ms, 10)
	if rem == 0 {
		return b
	}
	frac := []byte(fmt.Sprintf("%06d", rem))
	for frac[len(frac)-1] == '0' {
		frac = frac[:len(frac)-1]
	}
	b = append(b, '.')
	return append(b, frac...)
}

// ParseMillis reads a number of milliseconds, as AppendMillis writes it or
// as JavaScript writes Date.now() and friends (an integer, a decimal
// fraction, or an exponent form), and returns it in nanoseconds. Digits
// beyond the nanosecond are dropped. It fails for anything that is not a
// finite JSON number or that does not fit an int64 of nanoseconds (about
// ±292 years around 1970).
func ParseMillis(s string) (int64, error) {
	if n, ok := parseDecimalMillis(s); ok {
		return n, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) || !json.Valid([]byte(s)) {
		return 0, fmt.Errorf("ckptstore: %q is not a number of milliseconds", s)
	}
	ns := f * 1e6
	if ns >= math.MaxInt64 || ns <= math.MinInt64 {
		return 0, fmt.Errorf("ckptstore: %s ms is out of range", s)
	}
	return int64(ns), nil
}

// parseDecimalMillis reads -?digits(.digits)? exactly.
func parseDecimalMillis(s string) (int64, bool) {
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	whole, frac := s, ""
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			whole, frac = s[:i], s[i+1:]
			if frac == "" {
				return 0, false
			}
			break
		}
	}
	if whole == "" || len(whole) > 1 && whole[0] == '0' || len(whole) > 13 {
		return 0, false
	}
	ms, err := strconv.ParseUint(whole, 10, 64)
	if err != nil || ms > math.MaxInt64/1_000_000-1 {
		return 0, false
	}
	var sub int64
	for i := 0; i < 6; i++ {
		sub *= 10
		if i < len(frac) {
			c := frac[i]
			if c < '0' || c > '9' {
				return 0, false
			}
			sub += int64(c - '0')
		}
	}
	for i := 6; i < len(frac); i++ {
		if frac[i] < '0' || frac[i] > '9' {
			return 0, false
		}
	}
	n := int64(ms)*1e6 + sub
	if neg {
		n = -n
	}
	return n, true
}

// DecodeJSONString decodes raw, one valid JSON value as a decoder returns
// it (encoding/json's RawMessage, jsontext's Value), as a string the way the
// checkpoint decoder takes ids: ok is false when raw is absent or null; a
// value that is not a string, or a string that is not well-formed Unicode
// (invalid UTF-8, a lone surrogate escape), fails with an error wrapping
// sentinel and naming what.
func DecodeJSONString(raw json.RawMessage, what string, sentinel error) (s string, ok bool, err error) {
	// jsonObject.str without the map, as this is called for every id of
	// every request.
	if isNull(raw) {
		return "", false, nil
	}
	if raw[0] != '"' || len(raw) < 2 || raw[len(raw)-1] != '"' {
		return "", false, fmt.Errorf("%w: %s is not a string", sentinel, what)
	}
	if !wellFormedString(raw) {
		return "", false, fmt.Errorf("%w: %s is not well-formed Unicode", sentinel, what)
	}
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw[1 : len(raw)-1]), true, nil
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", false, fmt.Errorf("%w: %s: %v", sentinel, what, err)
	}
	return s, true, nil
}
