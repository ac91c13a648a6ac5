package workload

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
)

// MaxPayload bounds one checkpoint's payload. Stores keep checkpoints far
// smaller than this in practice; the bound keeps a typo ("50MB") from
// eating the machine's memory.
const MaxPayload = 8 << 20

// ErrBadSize is wrapped by the parse errors of ParseSize and ParseSizeDist.
var ErrBadSize = errors.New("bad size")

// ParseSize parses a byte count: a non-negative integer with an optional
// unit B, KB, MB (powers of 1024, as KiB and MiB, which are also accepted),
// case-insensitive: "512", "2KB", "50kib", "1MB".
func ParseSize(s string) (int, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	mult := 1
	for _, u := range []struct {
		suffix string
		mult   int
	}{{"KIB", 1 << 10}, {"MIB", 1 << 20}, {"KB", 1 << 10}, {"MB", 1 << 20}, {"K", 1 << 10}, {"M", 1 << 20}, {"B", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	n, err := strconv.ParseUint(t, 10, 32)
	if err != nil || n*uint64(mult) > MaxPayload {
		return 0, fmt.Errorf("%w: %q (want a byte count such as 2048, 2KB or 1MB, at most %d bytes)", ErrBadSize, s, MaxPayload)
	}
	return int(n) * mult, nil
}

// SizeDist is a distribution of payload sizes. The zero value always
// draws 0.
type SizeDist struct {
	// Either a weighted choice among sizes...
	sizes   []int
	weights []float64 // cumulative, last = 1
	// ...or a uniform range [lo, hi].
	lo, hi  int
	uniform bool
	text    string
}

// ParseSizeDist parses a payload size distribution:
//
//	2KB                 every payload is 2 KB
//	2KB-50KB            uniform between 2 KB and 50 KB
//	2KB:0.9,50KB:0.1    2 KB nine times in ten, 50 KB once (weights are
//	                    normalised; a size without a weight weighs 1)
func ParseSizeDist(s string) (SizeDist, error) {
	d := SizeDist{text: s}
	if lo, hi, ok := strings.Cut(s, "-"); ok && !strings.Contains(s, ",") {
		a, err := ParseSize(lo)
		if err != nil {
			return d, err
		}
		b, err := ParseSize(hi)
		if err != nil {
			return d, err
		}
		if a > b {
			return d, fmt.Errorf("%w: range %q runs backwards", ErrBadSize, s)
		}
		d.lo, d.hi, d.uniform = a, b, true
		return d, nil
	}
	total := 0.0
	for part := range strings.SplitSeq(s, ",") {
		size, weight, hasWeight := strings.Cut(part, ":")
		n, err := ParseSize(size)
		if err != nil {
			return d, err
		}
		w := 1.0
		if hasWeight {
			w, err = strconv.ParseFloat(strings.TrimSpace(weight), 64)
			if err != nil || !(w > 0) || math.IsInf(w, 0) {
				return d, fmt.Errorf("%w: weight %q in %q must be a positive number", ErrBadSize, weight, s)
			}
		}
		total += w
		d.sizes = append(d.sizes, n)
		d.weights = append(d.weights, total)
	}
	for i := range d.weights {
		d.weights[i] /= total
	}
	d.weights[len(d.weights)-1] = 1
	return d, nil
}

// MustSizeDist is ParseSizeDist for constants; it panics on a bad spec.
func MustSizeDist(s string) SizeDist {
	d, err := ParseSizeDist(s)
	if err != nil {
		panic(err)
	}
	return d
}

// Draw returns one size.
func (d SizeDist) Draw(r *rand.Rand) int {
	switch {
	case d.uniform:
		return d.lo + r.IntN(d.hi-d.lo+1)
	case len(d.sizes) == 1:
		return d.sizes[0]
	case len(d.sizes) == 0:
		return 0
	}
	x := r.Float64()
	for i, w := range d.weights {
		if x < w {
			return d.sizes[i]
		}
	}
	return d.sizes[len(d.sizes)-1]
}

// String returns the spec the distribution was parsed from.
func (d SizeDist) String() string { return d.text }
