package driver

// JSON of a Lease, for the HTTP protocol (docs/http-api.md): its Writer's
// fields (json.go) plus expiresAt (epoch milliseconds) and renewAfterMs, as
// the TypeScript contract spells them, and the milliseconds of times and
// durations in JSON numbers and headers.

import (
	"fmt"
	"math"
	"strconv"
)

// MarshalJSON encodes l as its Writer's fields plus expiresAt, in epoch
// milliseconds, and renewAfterMs. Both are numbers that carry the
// sub-millisecond part as a decimal fraction (exact to the nanosecond), so
// that a lease read back through JSON has the same ExpiresAt.
func (l Lease) MarshalJSON() ([]byte, error) {
	b := l.Writer.AppendJSON(nil)
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
	if err != nil || !finite(f) || !jsonValid([]byte(s)) {
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

// Millis reads a number of milliseconds (ParseMillis) in nanoseconds;
// anything else, null included, fails with ErrInvalidEntry.
func (r *JSONReader) Millis(path string) (int64, error) {
	v, err := r.value()
	if err != nil {
		return 0, err
	}
	ns, err := ParseMillis(string(v.b))
	if err != nil {
		return 0, fieldErr(ErrInvalidEntry, jsonPath{base: path}, "", v.off, "%v", err)
	}
	return ns, nil
}
