package main

// Progress lines: what a long command (export, import, copy, verify,
// check) has done, out of how much when the total is known, at what rate,
// and when it should end at that rate.

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/ckptstore/ckptstore/driver"
)

// progress prints a command's progress lines on stderr, at most one per
// interval every (0 = none). A total of 0 is one the command does not
// know; a line then has no total for it, and an ETA only when another
// total is known.
type progress struct {
	e     *env
	verb  string
	every time.Duration
	// threads and cps are the totals, when known.
	threads, cps int
	start, last  time.Time
}

func newProgress(e *env, verb string, every time.Duration) *progress {
	now := e.now()
	return &progress{e: e, verb: verb, every: every, start: now, last: now}
}

// tick prints a line for threads and cps done when the interval has
// passed since the last one; note, when not nil, gives the end of the
// line (called only for a line that is printed).
func (p *progress) tick(threads, cps int, note func() string) {
	if p.every <= 0 {
		return
	}
	now := p.e.now()
	if now.Sub(p.last) < p.every {
		return
	}
	p.last = now
	n := ""
	if note != nil {
		n = note()
	}
	fmt.Fprintln(p.e.stderr, p.line(now, threads, cps, n))
}

// countThreads is how many threads s holds, for the totals of progress
// lines: one pass over its thread index, MaxPageLimit ids a call.
func countThreads(ctx context.Context, s *store) (int, error) {
	n := 0
	for _, err := range threadSeq(ctx, s) {
		if err != nil {
			return 0, err
		}
		n++
	}
	return n, nil
}

// line is a progress line: "VERB: 120/500 threads, 3400/12000
// checkpoints (28%), 3100 checkpoints/s, ETA 1m2s; NOTE".
func (p *progress) line(now time.Time, threads, cps int, note string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s threads, %s checkpoints", p.verb, ofTotal(threads, p.threads), ofTotal(cps, p.cps))
	elapsed := now.Sub(p.start)
	frac := -1.0
	switch {
	case p.cps > 0:
		frac = float64(cps) / float64(p.cps)
	case p.threads > 0:
		frac = float64(threads) / float64(p.threads)
	}
	if frac >= 0 {
		fmt.Fprintf(&b, " (%.0f%%)", 100*min(frac, 1))
	}
	fmt.Fprintf(&b, ", %.0f checkpoints/s", rate(cps, elapsed))
	switch {
	case frac >= 1:
		b.WriteString(", ETA 0s")
	case frac > 0:
		eta := time.Duration(float64(elapsed) * (1 - frac) / frac)
		fmt.Fprintf(&b, ", ETA %v", eta.Round(time.Second))
	case frac == 0:
		b.WriteString(", ETA unknown")
	}
	if note != "" {
		b.WriteString("; ")
		b.WriteString(note)
	}
	return b.String()
}

// ofTotal is "n/total", or n when the total is not known.
func ofTotal(n, total int) string {
	if total <= 0 {
		return fmt.Sprint(n)
	}
	return fmt.Sprintf("%d/%d", n, total)
}

// checkTick prints a line of a check's progress (driver.CheckProgress)
// when the interval has passed: the keys read, and when the backend
// tells the share of the key space they are, the keys in all (estimated
// from it), the share and the ETA.
func (p *progress) checkTick(cp driver.CheckProgress) {
	if p.every <= 0 {
		return
	}
	now := p.e.now()
	if now.Sub(p.last) < p.every {
		return
	}
	p.last = now
	fmt.Fprintln(p.e.stderr, p.checkLine(now, cp))
}

// checkLine is "check: 45000 of about 100000 keys read (45%), 9000
// keys/s, ETA 6s", or "check: 45000 keys read, 9000 keys/s" when the
// share is unknown.
func (p *progress) checkLine(now time.Time, cp driver.CheckProgress) string {
	elapsed := now.Sub(p.start)
	if cp.Done <= 0 {
		return fmt.Sprintf("%s: %d keys read, %.0f keys/s", p.verb, cp.Keys, rate(cp.Keys, elapsed))
	}
	done := min(cp.Done, 1)
	eta := time.Duration(float64(elapsed) * (1 - done) / done)
	return fmt.Sprintf("%s: %d of about %.0f keys read (%.0f%%), %.0f keys/s, ETA %v", p.verb, cp.Keys, float64(cp.Keys)/done, 100*done, rate(cp.Keys, elapsed), eta.Round(time.Second))
}
