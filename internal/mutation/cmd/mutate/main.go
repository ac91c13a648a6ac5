// Command mutate measures how strong the tests of the root package and the
// conformance suite (run on memstore) are, by mutation testing with
// hand-made mutants: each mutant is one small, behaviour-changing edit of
// the root package or memstore (see mutants.go), and a strong suite fails
// on every one of them.
//
// Invariants:
//
//   - The working tree is never modified. The module is copied once to a
//     temporary directory; each mutant is applied to that copy, tested, and
//     the touched files are restored byte for byte before the next one.
//   - An edit's old text must match exactly once (whitespace runs match any
//     whitespace run), so a mutant never lands in the wrong place; a mutant
//     whose text no longer matches is reported as stale, not counted.
//   - A mutant that does not compile is reported as invalid, not counted:
//     only mutants that build and so can change behaviour enter the rate.
//   - A mutant that survives but is listed with an equivalence argument
//     (mutant.equivalent) is excluded from the rate; one that is killed
//     despite that argument is reported, since the argument is wrong.
//
// Usage, from the module root:
//
//	go run ./internal/mutation/cmd/mutate [-run regexp] [-list] [-keep] [-v]
//
// It exits non-zero when the kill rate is below -min.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// status is the outcome of one mutant.
type status string

const (
	killed     status = "killed"     // a test failed (or panicked)
	timedOut   status = "timeout"    // the tests did not finish; counted as killed
	survived   status = "survived"   // every test passed
	equivalent status = "equivalent" // survived, and listed as equivalent
	wrongEquiv status = "killed!"    // killed although listed as equivalent
	stale      status = "stale"      // an edit's old text did not match once
	invalid    status = "invalid"    // the mutant does not compile
)

type result struct {
	m       mutant
	st      status
	failing []string // top-level and subtest names that failed
	dur     time.Duration
	detail  string
}

func main() {
	var (
		root    = flag.String("root", "", "module root to copy (default: the module containing the working directory)")
		runRE   = flag.String("run", "", "only mutants whose id matches this regexp")
		pkgs    = flag.String("pkgs", "./memstore/ .", "space-separated packages whose tests must catch the mutants")
		timeout = flag.Duration("timeout", time.Minute, "time limit of one mutant's test run")
		tflags  = flag.String("testflags", "-rapid.nofailfile -rapid.shrinktime=2s", "extra space-separated flags for go test and the test binaries (e.g. -race, -rapid.checks=1000)")
		minRate = flag.Float64("min", 0.9, "exit non-zero when the kill rate is below this")
		list    = flag.Bool("list", false, "list the mutants and exit")
		check   = flag.Bool("check", false, "only apply and compile each mutant (finds stale and invalid ones), run no tests")
		keep    = flag.Bool("keep", false, "keep the temporary copy of the module")
		verbose = flag.Bool("v", false, "print the failing tests of each killed mutant and the output of survivors")
	)
	flag.Parse()
	sel, err := selectMutants(*runRE)
	if err != nil {
		fatal(err)
	}
	if *list {
		for _, m := range sel {
			fmt.Printf("%-34s %s\n", m.id, m.desc)
		}
		return
	}
	tmp, err := copyRoot(*root, *keep)
	if err != nil {
		fatal(err)
	}
	r := &runner{dir: tmp, pkgs: strings.Fields(*pkgs), flags: strings.Fields(*tflags), timeout: *timeout, check: *check}
	fmt.Printf("module copy: %s\npackages: %s\n", tmp, strings.Join(r.pkgs, " "))
	code := 0
	if *check {
		code = r.checkAll(sel)
	} else {
		code = r.killAll(sel, *verbose, *minRate)
	}
	if !*keep {
		os.RemoveAll(tmp)
	}
	os.Exit(code)
}

// selectMutants checks the mutant ids and returns the mutants whose id
// matches runRE (all when it is empty).
func selectMutants(runRE string) ([]mutant, error) {
	if err := checkIDs(); err != nil {
		return nil, err
	}
	if runRE == "" {
		return mutants, nil
	}
	re, err := regexp.Compile(runRE)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(slices.Clone(mutants), func(m mutant) bool { return !re.MatchString(m.id) }), nil
}

// copyRoot copies the module at root (default: the one containing the
// working directory) to a new temporary directory and returns it; keep
// says so on stderr, since the caller then leaves it.
func copyRoot(root string, keep bool) (string, error) {
	if root == "" {
		r, err := moduleRoot()
		if err != nil {
			return "", err
		}
		root = r
	}
	tmp, err := os.MkdirTemp("", "ckptstore-mutation-")
	if err != nil {
		return "", err
	}
	if keep {
		fmt.Fprintf(os.Stderr, "copy kept in %s\n", tmp)
	}
	if err := copyModule(root, tmp); err != nil {
		os.RemoveAll(tmp)
		return "", err
	}
	return tmp, nil
}

// checkAll applies and compiles each mutant of sel, prints the stale and
// invalid ones, and returns the exit code: 1 when there is one.
func (r *runner) checkAll(sel []mutant) int {
	bad := 0
	for _, m := range sel {
		if res := r.run(m); res.st == stale || res.st == invalid {
			bad++
			fmt.Printf("%-8s %-34s %s\n", res.st, m.id, firstLine(res.detail))
		}
	}
	fmt.Printf("%d of %d mutants apply and compile\n", len(sel)-bad, len(sel))
	if bad > 0 {
		return 1
	}
	return 0
}

// killAll runs the unmutated tests, then the tests on each mutant of sel,
// prints each result and the report, and returns the exit code: 2 when
// the unmutated tests fail, 1 when the kill rate is below minRate.
func (r *runner) killAll(sel []mutant, verbose bool, minRate float64) int {
	start := time.Now()
	for _, b := range r.baselines(sel) {
		if out, ok, _ := r.test(b); !ok {
			fmt.Printf("the unmutated tests of %s fail; fix them first:\n%s\n", strings.Join(b.args(), " "), tailOf(out, 4000))
			return 2
		}
	}
	fmt.Printf("baseline passes (%v)\n\n", time.Since(start).Round(time.Second))
	var results []result
	for i, m := range sel {
		res := r.run(m)
		results = append(results, res)
		fmt.Printf("[%3d/%d] %-9s %-34s %5.1fs  %s\n", i+1, len(sel), res.st, m.id, res.dur.Seconds(), summary(res))
		if verbose && res.detail != "" && (res.st == survived || res.st == invalid || res.st == stale) {
			fmt.Println(indent(res.detail))
		}
	}
	if report(os.Stdout, results, time.Since(start)) < minRate {
		return 1
	}
	return 0
}

func summary(res result) string {
	switch res.st {
	case killed, wrongEquiv:
		if len(res.failing) == 0 {
			return "(build or vet failure in test)"
		}
		return "by " + strings.Join(shorten(res.failing, 2), ", ")
	case survived:
		return res.m.desc
	case equivalent:
		return "equivalent: " + res.m.equivalent
	case stale, invalid:
		return firstLine(res.detail)
	}
	return ""
}

// report prints the totals and returns the kill rate.
func report(w io.Writer, results []result, total time.Duration) float64 {
	count := map[status]int{}
	for _, r := range results {
		count[r.st]++
	}
	k := count[killed] + count[timedOut] + count[wrongEquiv]
	counted := k + count[survived]
	rate := 0.0
	if counted > 0 {
		rate = float64(k) / float64(counted)
	}
	fmt.Fprintf(w, "\nmutants: %d  killed: %d (timeout %d)  survived: %d  equivalent: %d  invalid: %d  stale: %d\n",
		len(results), k, count[timedOut], count[survived], count[equivalent], count[invalid], count[stale])
	fmt.Fprintf(w, "kill rate: %d/%d = %.1f%% of the mutants that change behaviour   (runtime %v)\n",
		k, counted, 100*rate, total.Round(time.Second))
	reportByPackage(w, results)
	for _, r := range results {
		switch r.st {
		case survived:
			fmt.Fprintf(w, "SURVIVED %s (%s): %s\n", r.m.id, r.m.file(), r.m.desc)
		case wrongEquiv:
			fmt.Fprintf(w, "KILLED BUT LISTED AS EQUIVALENT %s: %s\n", r.m.id, r.m.equivalent)
		case stale, invalid:
			fmt.Fprintf(w, "%s %s: %s\n", strings.ToUpper(string(r.st)), r.m.id, firstLine(r.detail))
		}
	}
	return rate
}

// runner applies mutants to the module copy in dir and runs the tests.
type runner struct {
	dir     string
	pkgs    []string
	flags   []string
	timeout time.Duration
	check   bool // stop after compiling
}

func (r *runner) run(m mutant) (res result) {
	res.m = m
	start := time.Now()
	defer func() { res.dur = time.Since(start) }()

	restore, err := r.apply(m)
	if restore != nil {
		defer func() {
			if err := restore(); err != nil {
				fatal(fmt.Errorf("restoring after %s: %w", m.id, err))
			}
		}()
	}
	if err != nil {
		res.st, res.detail = stale, err.Error()
		return res
	}
	ts := r.selectionOf(m)
	if out, err := r.goCmd(context.Background(), "build", ts.pkgs...); err != nil {
		res.st, res.detail = invalid, "does not compile: "+compileError(out)
		return res
	}
	if r.check {
		return res
	}
	out, ok, timeout := r.testWidening(ts)
	res.failing = failingTests(out)
	switch {
	case timeout:
		res.st = timedOut
	case !ok && m.equivalent != "":
		res.st = wrongEquiv
	case !ok:
		res.st = killed
	case m.equivalent != "":
		res.st = equivalent
	default:
		res.st, res.detail = survived, tailOf(out, 1500)
	}
	return res
}

// apply edits the copy; restore puts back every file it touched.
func (r *runner) apply(m mutant) (restore func() error, err error) {
	orig := map[string][]byte{}
	restore = func() error {
		var errs []error
		for f, b := range orig {
			errs = append(errs, os.WriteFile(filepath.Join(r.dir, f), b, 0o644))
		}
		return errors.Join(errs...)
	}
	for _, e := range m.edits {
		path := filepath.Join(r.dir, filepath.FromSlash(e.file))
		b, err := os.ReadFile(path)
		if err != nil {
			return restore, err
		}
		if _, seen := orig[e.file]; !seen {
			orig[e.file] = b
		}
		nb, err := replaceOnce(b, e.old, e.new)
		if err != nil {
			return restore, fmt.Errorf("%s: %w", e.file, err)
		}
		if err := os.WriteFile(path, nb, 0o644); err != nil {
			return restore, err
		}
	}
	return restore, nil
}

// replaceOnce replaces the one match of old in b by new. Runs of
// whitespace in old match any run of whitespace, so mutants can be written
// without copying the file's indentation.
func replaceOnce(b []byte, old, new string) ([]byte, error) {
	toks := strings.Fields(old)
	if len(toks) == 0 {
		return nil, errors.New("empty old text")
	}
	for i, t := range toks {
		toks[i] = regexp.QuoteMeta(t)
	}
	re := regexp.MustCompile(strings.Join(toks, `\s+`))
	locs := re.FindAllIndex(b, -1)
	if len(locs) != 1 {
		return nil, fmt.Errorf("old text matches %d times, want once: %q", len(locs), firstLine(old))
	}
	out := make([]byte, 0, len(b)+len(new))
	out = append(out, b[:locs[0][0]]...)
	out = append(out, new...)
	return append(out, b[locs[0][1]:]...), nil
}

// test runs the tests of ts; ok means they passed.
func (r *runner) test(ts testSel) (out []byte, ok, timeout bool) {
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	// Flags go after the packages: go test stops parsing its own flags at
	// the first one it does not know and hands the rest, packages
	// included, to the test binary.
	args := append([]string{"-count=1", "-timeout", (r.timeout - 10*time.Second).String()}, ts.args()...)
	args = append(args, r.flags...)
	out, err := r.goCmd(ctx, "test", args...)
	if ctx.Err() != nil {
		return out, false, true
	}
	return out, err == nil, false
}

func (r *runner) goCmd(ctx context.Context, sub string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "go", append([]string{sub}, args...)...)
	cmd.Dir = r.dir
	// The conformance suite's own mutant children are selected by this
	// variable; it must not leak into the runs here.
	cmd.Env = append(os.Environ(), "CONFORMANCE_MUTANT=")
	cmd.WaitDelay = 10 * time.Second
	return cmd.CombinedOutput()
}

var failRE = regexp.MustCompile(`(?m)^\s*--- FAIL: (\S+)`)

// failingTests lists the failing tests, innermost names, without repeats.
func failingTests(out []byte) []string {
	var names []string
	for _, m := range failRE.FindAllSubmatch(out, -1) {
		names = append(names, string(m[1]))
	}
	// Keep the leaves: a parent fails because its subtest did.
	var leaves []string
	for _, n := range names {
		leaf := true
		for _, o := range names {
			if o != n && strings.HasPrefix(o, n+"/") {
				leaf = false
				break
			}
		}
		if leaf && !slices.Contains(leaves, n) {
			leaves = append(leaves, n)
		}
	}
	if len(leaves) == 0 && bytes.Contains(out, []byte("panic: ")) {
		leaves = append(leaves, "(panic)")
	}
	return leaves
}

// compileError picks the first compiler message out of go build's output.
func compileError(out []byte) string {
	for _, l := range strings.Split(string(out), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			return strings.TrimSpace(l)
		}
	}
	return firstLine(string(out))
}

func shorten(s []string, n int) []string {
	if len(s) <= n {
		return s
	}
	return append(slices.Clone(s[:n]), fmt.Sprintf("… %d more", len(s)-n))
}

// copyModule copies the module at src to dst: every file but the git
// metadata, build outputs and large binaries (see skip).
func copyModule(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if skip(rel, d) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}

// skip reports whether the module copy leaves rel out: what .gitignore
// ignores, and any other file over 1 MiB (a stray binary).
func skip(rel string, d fs.DirEntry) bool {
	base := filepath.Base(rel)
	if d.IsDir() {
		return rel == ".git" || rel == ".cache" || rel == "bin" || base == "node_modules" || base == "testdata" && strings.Contains(rel, "rapid")
	}
	if strings.HasSuffix(base, ".test") || strings.HasSuffix(base, ".out") || rel == "loadgen" {
		return true
	}
	info, err := d.Info()
	return err != nil || info.Size() > 1<<20
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", err
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("not in a module: run from the ckptstore module or pass -root")
	}
	return filepath.Dir(gomod), nil
}

func checkIDs() error {
	seen := map[string]bool{}
	for _, m := range mutants {
		if seen[m.id] {
			return fmt.Errorf("duplicate mutant id %s", m.id)
		}
		seen[m.id] = true
		if len(m.edits) == 0 {
			return fmt.Errorf("mutant %s has no edits", m.id)
		}
	}
	return nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func tailOf(b []byte, n int) string {
	if len(b) > n {
		return "…" + string(b[len(b)-n:])
	}
	return string(b)
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "mutate:", err)
	os.Exit(2)
}
