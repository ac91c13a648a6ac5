package difftest_test

// Running one sequence on every engine and comparing the outcomes.

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ckptstore/ckptstore/driver"
)

// step is one call of a sequence.
type step struct {
	// name identifies the call in a divergence report and in
	// knownDivergences: "<area>/<what>".
	name string
	// call makes the call on e and returns its result and error.
	call func(ctx context.Context, e *env) (any, error)
	// split compares the in-process engines with each other and the HTTP
	// ones with each other, not across (N4): for a call whose outcome is a
	// documented setting of the server (its request-body limit), not of the
	// engine.
	split bool
}

// divergence is a step whose outcomes differ between engines.
type divergence struct {
	index int
	step  step
	envs  []*env
	outs  []outcome
	ref   []int // per engine, the index of the engine it was compared with
}

// callTimeout bounds one call, so that a hung engine fails the test
// instead of the whole run's timeout.
const callTimeout = 30 * time.Second

// runStep makes s on every environment, one after the other, and
// returns the outcomes. A call that takes more than a second is logged
// with logf (a figure for the run's time, never an assertion).
func runStep(s step, envs []*env, logf func(format string, args ...any)) []outcome {
	outs := make([]outcome, len(envs))
	for i, e := range envs {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		start := time.Now()
		outs[i] = render(s.call(ctx, e))
		if d := time.Since(start); d > time.Second {
			logf("slow step %q on %s: %v", s.name, e.name, d.Round(time.Millisecond))
		}
		cancel()
	}
	return outs
}

// compare returns the divergence of s's outcomes, or nil. Each engine is
// compared with the reference of its group: envs[0] for all, or with
// split the first engine of its own kind (in process or HTTP).
func compare(i int, s step, envs []*env, outs []outcome) *divergence {
	ref := make([]int, len(envs))
	firstHTTP := slices.IndexFunc(envs, func(e *env) bool { return strings.HasPrefix(e.name, "http/") })
	differs := false
	for j, e := range envs {
		if s.split && firstHTTP >= 0 && strings.HasPrefix(e.name, "http/") {
			ref[j] = firstHTTP
		}
		if outs[j].text != outs[ref[j]].text {
			differs = true
		}
	}
	if !differs {
		return nil
	}
	return &divergence{index: i, step: s, envs: envs, outs: outs, ref: ref}
}

// diverging lists the engines whose outcome differs from their reference.
func (d *divergence) diverging() []string {
	var out []string
	for j, e := range d.envs {
		if d.outs[j].text != d.outs[d.ref[j]].text {
			out = append(out, e.name)
		}
	}
	return out
}

// String is the readable report of d: the call, then each engine's
// outcome, the reference's marked "=" and each one that differs "≠".
func (d *divergence) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "step %d %q: the engines disagree\n", d.index, d.step.name)
	for j, e := range d.envs {
		mark := " "
		switch {
		case d.ref[j] == j:
			mark = "="
		case d.outs[j].text != d.outs[d.ref[j]].text:
			mark = "≠"
		}
		fmt.Fprintf(&b, "  %s %-11s %s\n", mark, e.name, clip(d.outs[j].text))
	}
	return b.String()
}

// clip bounds a rendered outcome for a report: an outcome that holds a
// huge value is shown by its head and tail and length.
func clip(s string) string {
	const max = 400
	if len(s) <= max {
		return s
	}
	tail := len(s) - max/4
	for tail < len(s) && !utf8.RuneStart(s[tail]) {
		tail++
	}
	return fmt.Sprintf("%s … %s (%d bytes)", driver.CutUTF8(s, max*3/4), s[tail:], len(s))
}

// runSequence runs steps on envs and compares every step. It returns the
// unknown divergences, and how many steps each known one explained; the
// first step of each known divergence is logged in full.
func runSequence(t testing.TB, envs []*env, steps []step) (unknown []*divergence, seen map[string]int) {
	t.Helper()
	seen = map[string]int{}
	trace := os.Getenv("DIFFTEST_TRACE") != ""
	for i, s := range steps {
		outs := runStep(s, envs, t.Logf)
		if trace {
			t.Logf("step %d %q: %s", i, s.name, clip(outs[0].text))
		}
		d := compare(i, s, envs, outs)
		if d == nil {
			continue
		}
		if ks := knownFor(d); ks != nil {
			for _, k := range ks {
				if seen[k.name]++; seen[k.name] == 1 {
					t.Logf("known divergence %s, first seen:\n%s", k.name, d)
				}
			}
			continue
		}
		unknown = append(unknown, d)
	}
	return unknown, seen
}

// knownSteps is the number of steps the known divergences explained (a
// step explained by two counts twice).
func knownSteps(seen map[string]int) int {
	n := 0
	for _, c := range seen {
		n += c
	}
	return n
}
