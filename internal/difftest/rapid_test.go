package difftest_test

// The generated sequences: rapid draws calls, valid and invalid, over
// small pools of ids (so that calls meet each other's state), runs each on
// every engine in fresh namespaces and compares every outcome.
//
// The draws are reproducible: the seed is fixed (defaultSeed) unless
// -rapid.seed or RAPID_SEED names another, or DIFFTEST_RANDOM_SEED=1 asks
// for rapid's random one; a failure prints the seed and the shrunk
// sequence, call by call.

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/persist"
)

// defaultSeed is the seed of the generated sequences in `make test`, so
// that a run is the same run every time.
const defaultSeed = 20261206

// defaultChecks is how many sequences a run draws unless -rapid.checks
// says: enough to meet the pools' interactions, few enough to keep the
// test within its budget under -race on two cores.
const defaultChecks = 200

// TestMain fixes rapid's seed and check count unless a flag, RAPID_SEED
// or DIFFTEST_RANDOM_SEED says otherwise.
func TestMain(m *testing.M) {
	flag.Parse()
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["rapid.seed"] && os.Getenv("RAPID_SEED") == "" && os.Getenv("DIFFTEST_RANDOM_SEED") == "" {
		_ = flag.Set("rapid.seed", fmt.Sprint(defaultSeed))
	}
	if !set["rapid.nofailfile"] {
		// The seed reproduces a failure; no file is left in the tree.
		_ = flag.Set("rapid.nofailfile", "true")
	}
	if !set["rapid.checks"] {
		_ = flag.Set("rapid.checks", fmt.Sprint(defaultChecks))
	}
	os.Exit(m.Run())
}

// The pools the generated calls draw from.
var (
	threadPool = []string{"t1", "t2", "t3", repeat("é", driver.MaxIDBytes), repeat("x", driver.MaxIDBytes+1), ""}
	cpPool     = []string{"c1", "c2", "c3", "c4", repeat("c", driver.MaxIDBytes), "\xff"}
	runPool    = []string{"r1", "r2", repeat("r", driver.MaxIDBytes)}
	intPool    = []string{"i1", "i2", "i3", ""}
	keyPool    = []string{"k1", "k2", repeat("k", driver.MaxIDBytes+1)}
	tokenPool  = []string{"A", "B", "C"}
	numPool    = []int64{0, 1, 5, 1 << 40, maxSafe, maxSafe + 1, -maxSafe, -maxSafe - 1, -1}
	jsonPool   = []string{`{}`, `{"a":1}`, `[1,"x"]`, `null`, `"s"`, `{`, ``, `{"n":9007199254740993}`, " [ ] ", `{"a":"\u00e9"}`, "{\"a\":\"\xff\"}"}
	statusPool = []persist.RunStatus{persist.RunRunning, persist.RunInterrupted, persist.RunCompleted, persist.RunFailed, persist.RunAborted, "bogus"}
	stepsPool  = []time.Duration{time.Millisecond, renewAfter, leaseDuration + time.Millisecond}
)

// show is an id as a step name shows it: long ones by their first rune and
// length, the rest quoted.
func show(id string) string {
	if len(id) > 16 {
		r := []rune(id)[0]
		return fmt.Sprintf("<%c×%dB>", r, len(id))
	}
	return fmt.Sprintf("%q", id)
}

// raw is a JSON pool value; "" is an absent value.
func raw(v string) json.RawMessage {
	if v == "" {
		return nil
	}
	return json.RawMessage(v)
}

// drawStep draws one call.
func drawStep(t *rapid.T) step {
	th := rapid.SampledFrom(threadPool).Draw(t, "thread")
	by := "L:" + rapid.SampledFrom(threadPool).Draw(t, "lease")
	switch rapid.IntRange(0, 31).Draw(t, "op") {
	case 0, 1:
		return acquireAs(th)
	case 2, 3, 4:
		id := rapid.SampledFrom(cpPool).Draw(t, "cp")
		parent := rapid.SampledFrom(append([]string{""}, cpPool[:4]...)).Draw(t, "parent")
		head := rapid.SampledFrom([]string{parent, "", "c1"}).Draw(t, "head")
		at := float64(rapid.SampledFrom(numPool).Draw(t, "createdAt"))
		st := appendCP(fmt.Sprintf("rapid %s to %s parent %s head %s at %v by %s", show(id), show(th), show(parent), show(head), at, by), by, head, ckpt(id, th, parent, at))
		return st
	case 5:
		id := rapid.SampledFrom(cpPool).Draw(t, "cp")
		return call0(fmt.Sprintf("cerr/rapid deleteHead %s of %s by %s", show(id), show(th), by), func(ctx context.Context, e *env) error {
			return e.cp.DeleteHead(ctx, th, id, e.writer(by))
		})
	case 6:
		return call("rapid/getHead "+show(th), func(ctx context.Context, e *env) (any, error) { return e.cp.GetHead(ctx, th) })
	case 7:
		return call("rapid/list "+show(th), func(ctx context.Context, e *env) (any, error) { return e.cp.List(ctx, th) })
	case 8:
		limit := rapid.SampledFrom([]int{0, 1, 2, -1, driver.MaxPageLimit + 1}).Draw(t, "limit")
		reverse := rapid.Bool().Draw(t, "reverse")
		return walkPages(fmt.Sprintf("rapid/pages %s limit %d reverse %v", show(th), limit, reverse), th, limit, reverse)
	case 9:
		id := rapid.SampledFrom(cpPool).Draw(t, "cp")
		return call("rapid/get "+show(id), func(ctx context.Context, e *env) (any, error) { return e.cp.Get(ctx, id) })
	case 10:
		return renew("rapid "+by, by)
	case 11:
		return release("rapid "+by, by)
	case 12:
		src := rapid.SampledFrom(threadPool).Draw(t, "src")
		srcCP := rapid.SampledFrom(cpPool).Draw(t, "srcCP")
		dstCP := rapid.SampledFrom(cpPool).Draw(t, "dstCP")
		return call(fmt.Sprintf("fork/rapid %s of %s into %s of %s by %s", show(srcCP), show(src), show(dstCP), show(th), by), func(ctx context.Context, e *env) (any, error) {
			return e.cp.ForkFromCheckpoint(ctx, ckptstore.ForkInput{SourceThreadID: src, SourceCheckpointID: srcCP, DestinationThreadID: th, DestinationCheckpointID: dstCP, CreatedAt: 7, Writer: e.writer(by)})
		})
	case 13:
		v := rapid.SampledFrom(jsonPool).Draw(t, "json")
		return call0(fmt.Sprintf("rapid/saveThread %s %q", show(th), v), func(ctx context.Context, e *env) error { return e.cp.SaveThread(ctx, th, raw(v)) })
	case 14:
		return call("rapid/loadThread "+show(th), func(ctx context.Context, e *env) (any, error) { return e.cp.LoadThread(ctx, th) })
	case 15:
		keep := rapid.SampledFrom([]int{0, 1, 2}).Draw(t, "keep")
		if rapid.Bool().Draw(t, "deleteThread") {
			return call(fmt.Sprintf("lease/rapid deleteThread %s by %s", show(th), by), func(ctx context.Context, e *env) (any, error) {
				return e.cp.DeleteThread(ctx, th, e.writer(by))
			})
		}
		return call(fmt.Sprintf("lease/rapid deleteCheckpoints %s keep %d by %s", show(th), keep, by), func(ctx context.Context, e *env) (any, error) {
			return e.cp.DeleteCheckpoints(ctx, th, keep, e.writer(by))
		})
	case 16:
		return advance(rapid.SampledFrom(stepsPool).Draw(t, "advance"))
	case 17:
		run := rapid.SampledFrom(runPool).Draw(t, "run")
		at := rapid.SampledFrom(numPool).Draw(t, "startedAt")
		status := rapid.SampledFrom(append([]persist.RunStatus{""}, statusPool...)).Draw(t, "status")
		return call(fmt.Sprintf("rapid/runCreate %s in %s at %d status %q", show(run), show(th), at, status), func(ctx context.Context, e *env) (any, error) {
			return e.ps.Runs.CreateOrResume(ctx, persist.RunStart{RunID: run, ThreadID: th, StartedAt: at, Status: status})
		})
	case 18:
		run := rapid.SampledFrom(runPool).Draw(t, "run")
		status := rapid.SampledFrom(statusPool).Draw(t, "status")
		fin := rapid.SampledFrom(numPool).Draw(t, "finishedAt")
		usage := rapid.SampledFrom(jsonPool).Draw(t, "usage")
		return call0(fmt.Sprintf("rapid/runUpdate %s status %q finishedAt %d usage %q", show(run), status, fin, usage), func(ctx context.Context, e *env) error {
			p := persist.RunPatch{Status: persist.Set(status), FinishedAt: persist.Set(fin)}
			if usage == "" {
				p.Usage = persist.Clear[json.RawMessage]()
			} else {
				p.Usage = persist.Set(json.RawMessage(usage))
			}
			return e.ps.Runs.Update(ctx, run, p)
		})
	case 19:
		run := rapid.SampledFrom(runPool).Draw(t, "run")
		return call("rapid/runGet "+show(run), func(ctx context.Context, e *env) (any, error) { return e.ps.Runs.Get(ctx, run) })
	case 20:
		return call("rapid/runsOf "+show(th), func(ctx context.Context, e *env) (any, error) {
			a, err := e.ps.Runs.FindActiveRun(ctx, th)
			if err != nil {
				return nil, err
			}
			all, err := e.ps.Runs.ListByThread(ctx, th)
			return []any{a, all}, err
		})
	case 21:
		now := rapid.SampledFrom(numPool).Draw(t, "now")
		ttl := rapid.SampledFrom(numPool).Draw(t, "ttl")
		return call(fmt.Sprintf("rapid/reclaimable now %d ttl %d", now, ttl), func(ctx context.Context, e *env) (any, error) {
			return e.ps.Runs.ListReclaimable(ctx, persist.ReclaimQuery{Now: now, TTLMs: ttl})
		})
	case 22:
		id := rapid.SampledFrom(intPool).Draw(t, "interrupt")
		run := rapid.SampledFrom(runPool).Draw(t, "run")
		at := rapid.SampledFrom(numPool).Draw(t, "requestedAt")
		payload := rapid.SampledFrom(jsonPool).Draw(t, "payload")
		return call0(fmt.Sprintf("rapid/interruptCreate %s run %s in %s at %d payload %q", show(id), show(run), show(th), at, payload), func(ctx context.Context, e *env) error {
			return e.ps.Interrupts.Create(ctx, persist.NewInterrupt{InterruptID: id, RunID: run, ThreadID: th, RequestedAt: at, Payload: raw(payload)})
		})
	case 23:
		id := rapid.SampledFrom(intPool).Draw(t, "interrupt")
		resp := rapid.SampledFrom(jsonPool).Draw(t, "response")
		if rapid.Bool().Draw(t, "cancel") {
			return call0("rapid/interruptCancel "+show(id), func(ctx context.Context, e *env) error { return e.ps.Interrupts.Cancel(ctx, id) })
		}
		return call0(fmt.Sprintf("rapid/interruptResolve %s %q", show(id), resp), func(ctx context.Context, e *env) error {
			return e.ps.Interrupts.Resolve(ctx, id, raw(resp))
		})
	case 24:
		n := rapid.IntRange(0, 3).Draw(t, "entries")
		var entries []persist.InterruptCommitEntry
		var names []string
		for i := range n {
			id := rapid.SampledFrom(intPool).Draw(t, fmt.Sprint("entry", i))
			st := rapid.SampledFrom([]persist.InterruptStatus{persist.InterruptResolved, persist.InterruptCancelled, persist.InterruptPending}).Draw(t, fmt.Sprint("status", i))
			var resp json.RawMessage
			if st == persist.InterruptResolved {
				resp = raw(rapid.SampledFrom(jsonPool).Draw(t, fmt.Sprint("response", i)))
			}
			entries = append(entries, persist.InterruptCommitEntry{InterruptID: id, Status: st, Response: resp})
			names = append(names, fmt.Sprintf("%s→%s %s", show(id), st, resp))
		}
		return call0("batch/rapid commit ["+strings.Join(names, ", ")+"]", func(ctx context.Context, e *env) error {
			return e.ps.Interrupts.CommitBatch(ctx, entries)
		})
	case 25:
		return call("rapid/interruptsOf "+show(th), func(ctx context.Context, e *env) (any, error) {
			all, err := e.ps.Interrupts.List(ctx, th)
			if err != nil {
				return nil, err
			}
			pending, err := e.ps.Interrupts.ListPending(ctx, th)
			return []any{all, pending}, err
		})
	case 26:
		key := rapid.SampledFrom(keyPool).Draw(t, "key")
		v := rapid.SampledFrom(jsonPool).Draw(t, "value")
		switch rapid.IntRange(0, 2).Draw(t, "metaOp") {
		case 0:
			return call0(fmt.Sprintf("rapid/metaSet %s %s %q", show(th), show(key), v), func(ctx context.Context, e *env) error {
				return e.ps.Metadata.Set(ctx, th, key, raw(v))
			})
		case 1:
			return call0(fmt.Sprintf("rapid/metaDelete %s %s", show(th), show(key)), func(ctx context.Context, e *env) error {
				return e.ps.Metadata.Delete(ctx, th, key)
			})
		}
		return call(fmt.Sprintf("rapid/metaGet %s %s", show(th), show(key)), func(ctx context.Context, e *env) (any, error) {
			return e.ps.Metadata.Get(ctx, th, key)
		})
	case 27, 28:
		key := rapid.SampledFrom(keyPool).Draw(t, "key")
		tok := rapid.SampledFrom(tokenPool).Draw(t, "token")
		op := rapid.SampledFrom([]string{"acquire", "renew", "release"}).Draw(t, "lockOp")
		return lockStep(fmt.Sprintf("rapid %s %s %s", op, show(key), tok), op, key, tok)
	case 29:
		key := rapid.SampledFrom(keyPool).Draw(t, "key")
		at := rapid.SampledFrom(numPool).Draw(t, "updatedAt")
		return call0(fmt.Sprintf("rapid/instanceUpsert %s thread %s at %d", show(key), show(th), at), func(ctx context.Context, e *env) error {
			return e.inst.Upsert(ctx, &ckptstore.InstanceRecord{Key: key, Provider: "p", ProviderSandboxID: "s", ThreadID: th, UpdatedAt: at})
		})
	case 30:
		key := rapid.SampledFrom(keyPool).Draw(t, "key")
		if rapid.Bool().Draw(t, "delete") {
			return call0("rapid/instanceDelete "+show(key), func(ctx context.Context, e *env) error { return e.inst.Delete(ctx, key) })
		}
		return call("rapid/instanceGet "+show(key), func(ctx context.Context, e *env) (any, error) { return e.inst.Get(ctx, key) })
	default:
		return walkThreads("rapid/threads", rapid.IntRange(1, 3).Draw(t, "limit"))
	}
}

// acquireAs takes thread's writer lease as "L:<thread>", the name the
// drawn calls use.
func acquireAs(thread string) step {
	s := acquire("L:"+thread, thread)
	s.name = "acquire/rapid " + show(thread)
	return s
}

// TestDifferentialRapid draws sequences of calls and runs each on every
// engine, each sequence in fresh namespaces; the first divergence that is
// not a known one fails it, with the sequence up to it.
func TestDifferentialRapid(t *testing.T) {
	engines := openEngines(t)
	var known []string
	rapid.Check(t, func(rt *rapid.T) {
		envs := openAll(rt, engines, freshNamespace("rapid"))
		n := rapid.IntRange(5, 60).Draw(rt, "calls")
		var done []string
		for i := range n {
			s := drawStep(rt)
			done = append(done, s.name)
			d := compare(i, s, envs, runStep(s, envs, rt.Logf))
			if d == nil {
				continue
			}
			if ks := knownFor(d); ks != nil {
				for _, k := range ks {
					known = append(known, k.name)
				}
				continue
			}
			rt.Fatalf("%s\nthe sequence:\n  %s", d, strings.Join(done, "\n  "))
		}
	})
	if len(known) > 0 {
		t.Logf("known divergences met by the generated sequences: %d (%s)", len(known), strings.Join(dedupe(known), ", "))
	}
}

// dedupe is ss without repeats, in first-seen order.
func dedupe(ss []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
