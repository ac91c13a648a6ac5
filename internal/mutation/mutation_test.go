// Package mutation measures the conformance suite by the behavioural
// mutants of mutants_test.go: each is a working store wrapped so that one
// observable behaviour is wrong, and the suite must fail on it. README.md
// says how to run it and gives the kill rates.
package mutation

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/conformance"
	"github.com/ckptstore/ckptstore/fdbstore"
	"github.com/ckptstore/ckptstore/fdbstore/kv/memkv"
	"github.com/ckptstore/ckptstore/httpstore"
	"github.com/ckptstore/ckptstore/internal/redistest"
	"github.com/ckptstore/ckptstore/memstore"
	"github.com/ckptstore/ckptstore/redisstore"
	"github.com/ckptstore/ckptstore/storeurl"
)

var (
	mutantsFlag = flag.String("mutants", os.Getenv("CKPT_MUTANTS"),
		`which mutants run: "" = every mutant on memstore (the default), "all" = every mutant on every backend, else a regexp of mutant names (on -backends); env CKPT_MUTANTS`)
	backendsFlag = flag.String("backends", os.Getenv("CKPT_MUTANT_BACKENDS"),
		"comma-separated backends ("+strings.Join(backendNames(), ",")+`); "" = memstore, or all with -mutants=all; env CKPT_MUTANT_BACKENDS`)
	childTimeout = flag.Duration("mutant-timeout", 3*time.Minute, "time limit of one suite run on one mutant; a run past it counts as killed")
)

// childEnv names the backend and mutant a child process runs the suite on.
const childEnv = "CKPT_MUTANT_CHILD"

// backend makes fresh stores of one kind for the suite.
type backend struct {
	name string
	// setup runs once per child process, before the suite; it returns the
	// factories.
	setup func(t *testing.T) (newStore func(t *testing.T, opts ckptstore.Options) store, newInstances func(t *testing.T) instances)
	suite conformance.Options
}

var backends = []backend{
	{name: "memstore", setup: func(*testing.T) (func(*testing.T, ckptstore.Options) store, func(*testing.T) instances) {
		return func(_ *testing.T, opts ckptstore.Options) store { return memstore.New(opts) },
			func(*testing.T) instances { return memstore.NewInstanceStore() }
	}},
	{name: "fdbstore", setup: func(*testing.T) (func(*testing.T, ckptstore.Options) store, func(*testing.T) instances) {
		return func(t *testing.T, opts ckptstore.Options) store {
				s, err := fdbstore.New(memkv.New(), fdbstore.Options{Options: opts})
				if err != nil {
					t.Fatal(err)
				}
				return s
			},
			func(*testing.T) instances { return fdbstore.NewInstanceStore(memkv.New(), "") }
	}},
	{name: "redisstore", setup: func(t *testing.T) (func(*testing.T, ckptstore.Options) store, func(*testing.T) instances) {
		c := redistest.Start(t).Client(t, nil)
		var seq atomic.Int64
		return func(t *testing.T, opts ckptstore.Options) store {
				s, err := redisstore.New(c, redisstore.Options{Options: opts, Prefix: fmt.Sprintf("m%d", seq.Add(1))})
				if err != nil {
					t.Fatal(err)
				}
				return s
			},
			func(*testing.T) instances { return redisstore.NewInstanceStore(c, fmt.Sprintf("i%d", seq.Add(1))) }
	}},
	{name: "httpstore", suite: conformance.Options{ModelChecks: 10, ConcurrentAppends: 4},
		setup: func(t *testing.T) (func(*testing.T, ckptstore.Options) store, func(*testing.T) instances) {
			o, err := storeurl.Open(context.Background(), "mem", storeurl.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = o.Close() })
			hc := &http.Client{Transport: inProcess{httpstore.NewHandler(o, httpstore.HandlerOptions{Dev: true})}}
			var seq atomic.Int64
			client := func(t *testing.T, lease ckptstore.Options) *httpstore.Client {
				c, err := httpstore.NewClient("http://in-process", httpstore.ClientOptions{
					Namespace: fmt.Sprintf("n%d", seq.Add(1)), Lease: lease, HTTPClient: hc})
				if err != nil {
					t.Fatal(err)
				}
				return c
			}
			return func(t *testing.T, opts ckptstore.Options) store { return client(t, opts) },
				func(t *testing.T) instances { return client(t, ckptstore.Options{}).Instances() }
		}},
}

// inProcess serves each request with the handler in the calling
// goroutine: the whole HTTP protocol of httpstore without TCP.
type inProcess struct{ h http.Handler }

func (p inProcess) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	p.h.ServeHTTP(rec, req)
	if req.Body != nil {
		_ = req.Body.Close()
	}
	return rec.Result(), nil
}

func backendNames() []string {
	var n []string
	for _, b := range backends {
		n = append(n, b.name)
	}
	return n
}

// none is the unmutated store: every backend must pass with it, or a
// killed mutant would prove nothing.
var none = mutant{name: "none", rule: "no bug", wrap: func(s store, _ ckptstore.Options) store { return s }}

func find(name string) (mutant, bool) {
	if name == none.name {
		return none, true
	}
	i := slices.IndexFunc(mutants, func(m mutant) bool { return m.name == name })
	if i < 0 {
		return mutant{}, false
	}
	return mutants[i], true
}

// TestMutantNames keeps the list sound: unique names, a rule each, and
// exactly one of wrap and inst.
func TestMutantNames(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range mutants {
		if seen[m.name] || m.name == none.name {
			t.Errorf("mutant %q: name used twice", m.name)
		}
		seen[m.name] = true
		if m.rule == "" {
			t.Errorf("mutant %q: no rule", m.name)
		}
		if (m.wrap == nil) == (m.inst == nil) {
			t.Errorf("mutant %q: wants exactly one of wrap and inst", m.name)
		}
	}
}

// result is one suite run on one mutant.
type result struct {
	backend, mutant string
	killed          bool
	by              string // the first failing subtest, or "timeout"
	equivalent      bool
}

// TestMutants runs the conformance suite once per mutant per backend, each
// run in a child process (a failing suite fails its test, so it cannot run
// in this one) with -failfast, and fails for every mutant the suite lets
// through (unless it is shown equivalent) and every equivalent one it
// kills. It ends with the kill rate per backend.
func TestMutants(t *testing.T) {
	pick := regexp.MustCompile("")
	chosen := []string{"memstore"}
	switch *mutantsFlag {
	case "":
	case "all":
		chosen = backendNames()
	default:
		pick = regexp.MustCompile(*mutantsFlag)
	}
	if *backendsFlag != "" {
		chosen = strings.Split(*backendsFlag, ",")
	}
	var (
		mu      sync.Mutex
		results []result
	)
	start := time.Now()
	for _, bn := range chosen {
		if !slices.Contains(backendNames(), bn) {
			t.Fatalf("unknown backend %q; have %s", bn, strings.Join(backendNames(), ", "))
		}
		t.Run(bn, func(t *testing.T) {
			// The unmutated store first: it must pass.
			if out, err := child(bn, none.name); err != nil {
				t.Fatalf("the suite fails on %s without a mutant (%v):\n%s", bn, err, tail(out))
			}
			for _, m := range mutants {
				if !pick.MatchString(m.name) {
					continue
				}
				t.Run(m.name, func(t *testing.T) {
					t.Parallel() // child processes: as many at once as -test.parallel
					r := run(t, bn, m)
					mu.Lock()
					results = append(results, r)
					mu.Unlock()
				})
			}
		})
	}
	report(t, results, time.Since(start))
}

// run runs the suite on one mutant in a child process.
func run(t *testing.T, bn string, m mutant) result {
	r := result{backend: bn, mutant: m.name, equivalent: m.equivalent != ""}
	out, err := child(bn, m.name)
	switch {
	case err == nil:
	case strings.Contains(err.Error(), "signal: killed") || strings.Contains(string(out), "test timed out"):
		r.killed, r.by = true, "timeout"
	default:
		// Chatty output lists a failed parent before its subtests: the
		// deepest of the first failure's lines names the failing check.
		for _, sub := range regexp.MustCompile(`--- FAIL: TestMutantChild/(\S+)`).FindAllSubmatch(out, -1) {
			if name := string(sub[1]); r.by == "" || strings.HasPrefix(name, r.by+"/") {
				r.by = name
			}
		}
		if r.by == "" {
			t.Errorf("%s on %s: the child failed (%v) without a failing subtest:\n%s", m.name, bn, err, tail(out))
			return r
		}
		r.killed = true
	}
	switch {
	case r.killed && r.equivalent:
		t.Errorf("%s on %s was called equivalent (%s) but %s kills it: the argument is wrong", m.name, bn, m.equivalent, r.by)
	case r.killed:
		t.Logf("%s on %s: killed by %s", m.name, bn, r.by)
	case r.equivalent:
		t.Logf("survived, equivalent: %s", m.equivalent)
	default:
		t.Errorf("%s on %s SURVIVED: the suite does not check %q", m.name, bn, m.rule)
	}
	return r
}

// child runs TestMutantChild on one mutant and returns its output; err
// is nil when the suite passed.
func child(bn, name string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), *childTimeout+30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestMutantChild$", "-test.v", "-test.failfast",
		"-test.count=1", "-test.timeout="+childTimeout.String(), "-rapid.nofailfile")
	cmd.Env = append(os.Environ(), childEnv+"="+bn+"/"+name)
	out, err := cmd.CombinedOutput()
	if err == nil && !regexp.MustCompile(`(?m)^--- PASS: TestMutantChild `).Match(out) {
		// Passing without running (a skip: no redis-server) proves nothing.
		return out, fmt.Errorf("the suite did not run")
	}
	return out, err
}

func tail(b []byte) string {
	if len(b) > 4000 {
		return "…" + string(b[len(b)-4000:])
	}
	return string(b)
}

// report logs the kill rate per backend and fails below 95 %.
func report(t *testing.T, results []result, took time.Duration) {
	var b strings.Builder
	fmt.Fprintf(&b, "\n| backend | mutants | killed | survived | equivalent | kill rate |\n| --- | --- | --- | --- | --- | --- |\n")
	byBackend := map[string][]result{}
	var order []string
	for _, r := range results {
		if _, ok := byBackend[r.backend]; !ok {
			order = append(order, r.backend)
		}
		byBackend[r.backend] = append(byBackend[r.backend], r)
	}
	slices.Sort(order)
	for _, bn := range order {
		var killed, survived, equivalent int
		for _, r := range byBackend[bn] {
			switch {
			case r.equivalent && !r.killed:
				equivalent++
			case r.killed:
				killed++
			default:
				survived++
			}
		}
		rate := 100.0
		if n := killed + survived; n > 0 {
			rate = 100 * float64(killed) / float64(n)
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %.1f %% |\n", bn, len(byBackend[bn]), killed, survived, equivalent, rate)
		if rate < 95 {
			t.Errorf("%s: kill rate %.1f %%, below the 95 %% bar", bn, rate)
		}
	}
	t.Logf("%d suite runs in %v:%s", len(results), took.Round(time.Second), b.String())
	// What caught each mutant, per backend, to judge whether it was
	// caught for the rule it breaks.
	var w strings.Builder
	for _, m := range mutants {
		var by []string
		for _, bn := range order {
			for _, r := range byBackend[bn] {
				if r.mutant == m.name {
					by = append(by, bn+": "+cmp.Or(r.by, "survived"))
				}
			}
		}
		if len(by) > 0 {
			fmt.Fprintf(&w, "\n%-28s %s", m.name, strings.Join(by, ", "))
		}
	}
	t.Logf("caught by:%s", w.String())
}

// TestMutantChild runs the suite on the backend and mutant named in the
// environment; TestMutants starts it.
func TestMutantChild(t *testing.T) {
	spec := os.Getenv(childEnv)
	if spec == "" {
		t.Skip("runs only in a child process of TestMutants")
	}
	bn, name, _ := strings.Cut(spec, "/")
	m, ok := find(name)
	bi := slices.IndexFunc(backends, func(b backend) bool { return b.name == bn })
	if !ok || bi < 0 {
		t.Fatalf("no mutant %q or backend %q", name, bn)
	}
	b := backends[bi]
	newStore, newInstances := b.setup(t)
	if m.inst != nil {
		conformance.RunInstanceStore(t, func(t *testing.T) conformance.InstanceStore {
			return m.inst(newInstances(t))
		})
		return
	}
	mutated := func(t *testing.T, opts ckptstore.Options) conformance.Store {
		if m.tweak != nil {
			m.tweak(&opts)
		}
		return m.wrap(newStore(t, opts), opts)
	}
	conformance.RunStoreWith(t, mutated, b.suite)
	// The pure half of the check orders too: a backend's suite leaves it
	// out, as the portable store decides it before any driver, but a
	// mutant wraps the portable store and can break it (pure before
	// state: prune-writer-before-keep), which RunStore then catches only
	// when a random model sequence happens on it. Under -test.failfast a
	// mutant already killed skips it.
	conformance.RunPureChecks(t, mutated)
	if name == none.name {
		conformance.RunInstanceStore(t, func(t *testing.T) conformance.InstanceStore { return newInstances(t) })
	}
}
