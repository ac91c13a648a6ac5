package main

// Test selection per mutant and the kill rate per package.
//
// The memstore and root mutants are caught by the -pkgs packages' whole
// test runs. The database-backed stores' mutants (mutants_redis.go,
// mutants_fdb.go) are caught by their own package's tests, and those are
// too slow to run whole for every mutant (redisstore's takes minutes under
// -race, and half a minute without, mostly fault and cluster runs). So each
// of those mutants names its package and the tests that must catch it: a
// package's base selection (which slow tests it skips) plus, when the
// mutant sets one, a -run pattern: the tests likely to catch it first. A
// mutant that those tests miss is run again on the whole base selection
// (testWidening), so the pattern only makes killing cheap; a survivor is
// one that no test of the base selection catches.

import (
	"fmt"
	"io"
	"path"
	"slices"
	"strings"
)

// testSel is the tests that must catch a mutant.
type testSel struct {
	pkgs     []string // packages, as go test takes them
	run      string   // go test -run pattern; "" = every test not skipped
	skip     string   // go test -skip pattern; "" = none
	failfast bool     // stop at the first failing test: a killed mutant costs one failure
}

// args returns the packages and the selection flags.
func (s testSel) args() []string {
	a := slices.Clone(s.pkgs)
	if s.run != "" {
		a = append(a, "-run", s.run)
	}
	if s.skip != "" {
		a = append(a, "-skip", s.skip)
	}
	if s.failfast {
		a = append(a, "-failfast")
	}
	return a
}

// key identifies a selection's baseline: its packages and skips, not its
// -run pattern (a baseline of the whole selection covers every pattern).
func (s testSel) key() string { return strings.Join(s.pkgs, " ") + "\x00" + s.skip }

// testWidening runs ts; when its -run pattern is set and every test it
// picks passes, it runs the whole selection again without the pattern, so
// a mutant survives only when no test of the package's base selection
// catches it. The pattern is a guess at the tests that catch the mutant
// first, to keep killed mutants cheap; it never decides a survivor.
func (r *runner) testWidening(ts testSel) (out []byte, ok, timeout bool) {
	out, ok, timeout = r.test(ts)
	if ok && ts.run != "" {
		ts.run = ""
		return r.test(ts)
	}
	return out, ok, timeout
}

// selections holds the selection of each mutant that has its own (by id);
// the others use -pkgs.
var selections = map[string]testSel{}

// withTests registers m's test selection: base, with run as its -run
// pattern.
func withTests(base testSel, run string, m mutant) mutant {
	base.run = run
	selections[m.id] = base
	return m
}

// selectionOf is the selection of m: its own, or the -pkgs packages.
func (r *runner) selectionOf(m mutant) testSel {
	if s, ok := selections[m.id]; ok {
		return s
	}
	return testSel{pkgs: r.pkgs}
}

// baselines are the selections whose unmutated runs must pass before the
// mutants of sel are run: one per distinct package set and skip pattern,
// without -run patterns.
func (r *runner) baselines(sel []mutant) []testSel {
	var out []testSel
	seen := map[string]bool{}
	for _, m := range sel {
		s := r.selectionOf(m)
		s.run = ""
		if !seen[s.key()] {
			seen[s.key()] = true
			out = append(out, s)
		}
	}
	return out
}

// packageOf names the package a mutant breaks, for the per-package rates:
// the directory of its first edit ("." for the root package).
func packageOf(m mutant) string {
	if len(m.edits) == 0 {
		return "?"
	}
	return path.Dir(m.edits[0].file)
}

// reportByPackage prints the counts and the kill rate of each package.
func reportByPackage(w io.Writer, results []result) {
	type counts struct{ n, killed, survived, equiv, other int }
	by := map[string]*counts{}
	var names []string
	for _, r := range results {
		p := packageOf(r.m)
		c := by[p]
		if c == nil {
			c = &counts{}
			by[p] = c
			names = append(names, p)
		}
		c.n++
		switch r.st {
		case killed, timedOut, wrongEquiv:
			c.killed++
		case survived:
			c.survived++
		case equivalent:
			c.equiv++
		default:
			c.other++
		}
	}
	slices.Sort(names)
	fmt.Fprintf(w, "\n%-12s %7s %7s %9s %10s %14s %10s\n", "package", "mutants", "killed", "survived", "equivalent", "stale/invalid", "kill rate")
	for _, p := range names {
		c := by[p]
		rate := "-"
		if c.killed+c.survived > 0 {
			rate = fmt.Sprintf("%.1f%%", 100*float64(c.killed)/float64(c.killed+c.survived))
		}
		fmt.Fprintf(w, "%-12s %7d %7d %9d %10d %14d %10s\n", p, c.n, c.killed, c.survived, c.equiv, c.other, rate)
	}
}
