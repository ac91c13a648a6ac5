package difftest_test

// The written sequence: the edges the issue names, one area at a time.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/contract"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/persist"
)

// errSection is what a critical section returns, to see it come back.
var errSection = errors.New("difftest: the critical section's own error")

// idCase is an id of a shape at or around the limit.
type idCase struct{ label, id string }

// idCases are ids at, below and above driver.MaxIDBytes, multi-byte UTF-8
// at the boundary, invalid UTF-8 and empty.
func idCases() []idCase {
	limit := driver.MaxIDBytes
	return []idCase{
		{"ascii-max-1", repeat("a", limit-1)},
		{"ascii-max", repeat("b", limit)},
		{"ascii-max+1", repeat("c", limit+1)},
		{"2byte-max", repeat("é", limit)},                        // 512 runes of 2 bytes
		{"4byte-max", repeat("😀", limit)},                        // 256 runes of 4 bytes
		{"rune-across-max", repeat("d", limit-1) + "é"},          // 1025 bytes: the last rune crosses the limit
		{"2byte-max+1", repeat("é", limit) + "x"},                // 1025 bytes
		{"truncated-rune-at-max", repeat("e", limit-1) + "\xc3"}, // 1024 bytes, invalid UTF-8
		{"huge-64KiB", repeat("h", 64<<10)},
		{"empty", ""},
		{"invalid-utf8", "a\xffb"},
		{"nul-and-controls", "a\x00b\n\x7f"},
		{"surrogate-escape", "a\xed\xa0\x80b"}, // UTF-16 surrogate in UTF-8: invalid
	}
}

// idSteps are the calls that take an id, each with id c.
func idSteps(c idCase) []step {
	id, l := c.id, c.label
	cp := ckpt(id, id, "", 1)
	return []step{
		call("id/"+l+"/getHead", func(ctx context.Context, e *env) (any, error) { return e.cp.GetHead(ctx, id) }),
		acquire("id/"+l, id),
		acquire("id/"+l+"/again", id), // a conflict, whose error names the thread
		appendCP("id/"+l, "id/"+l, "", cp),
		call("id/"+l+"/get", func(ctx context.Context, e *env) (any, error) { return e.cp.Get(ctx, id) }),
		call("id/"+l+"/list", func(ctx context.Context, e *env) (any, error) { return e.cp.List(ctx, id) }),
		call0("id/"+l+"/saveThread", func(ctx context.Context, e *env) error {
			return e.cp.SaveThread(ctx, id, json.RawMessage(`[{"role":"user"}]`))
		}),
		call("id/"+l+"/loadThread", func(ctx context.Context, e *env) (any, error) { return e.cp.LoadThread(ctx, id) }),
		call0("id/"+l+"/instanceUpsert", func(ctx context.Context, e *env) error {
			return e.inst.Upsert(ctx, &ckptstore.InstanceRecord{Key: id, Provider: "p", ProviderSandboxID: "s", ThreadID: id, UpdatedAt: 5})
		}),
		call("id/"+l+"/instanceGet", func(ctx context.Context, e *env) (any, error) { return e.inst.Get(ctx, id) }),
		call("id/"+l+"/fork-destination", func(ctx context.Context, e *env) (any, error) {
			return e.cp.ForkFromCheckpoint(ctx, ckptstore.ForkInput{SourceThreadID: "fork-src-" + l, SourceCheckpointID: "x", DestinationThreadID: id, DestinationCheckpointID: id, CreatedAt: 2, Writer: e.writer("id/" + l)})
		}),
		call("id/"+l+"/runCreate", func(ctx context.Context, e *env) (any, error) {
			return e.ps.Runs.CreateOrResume(ctx, persist.RunStart{RunID: id, ThreadID: id, StartedAt: 1})
		}),
		call("id/"+l+"/runGet", func(ctx context.Context, e *env) (any, error) { return e.ps.Runs.Get(ctx, id) }),
		call("id/"+l+"/runsByThread", func(ctx context.Context, e *env) (any, error) { return e.ps.Runs.ListByThread(ctx, id) }),
		call("id/"+l+"/genCreate", func(ctx context.Context, e *env) (any, error) {
			return e.ps.GenerationRuns.CreateOrResume(ctx, persist.GenerationRunStart{RunID: id, ThreadID: id, Activity: "image", Provider: "p", Model: "m", StartedAt: 1})
		}),
		call0("id/"+l+"/interruptCreate", func(ctx context.Context, e *env) error {
			return e.ps.Interrupts.Create(ctx, persist.NewInterrupt{InterruptID: id, RunID: id, ThreadID: id, RequestedAt: 1, Payload: json.RawMessage(`{}`)})
		}),
		call("id/"+l+"/interruptGet", func(ctx context.Context, e *env) (any, error) { return e.ps.Interrupts.Get(ctx, id) }),
		call0("id/"+l+"/interruptCommit", func(ctx context.Context, e *env) error {
			return e.ps.Interrupts.CommitBatch(ctx, []persist.InterruptCommitEntry{{InterruptID: id, Status: persist.InterruptCancelled}})
		}),
		call0("id/"+l+"/metadataSet", func(ctx context.Context, e *env) error {
			return e.ps.Metadata.Set(ctx, id, id, json.RawMessage(`1`))
		}),
		call("id/"+l+"/metadataGet", func(ctx context.Context, e *env) (any, error) { return e.ps.Metadata.Get(ctx, id, id) }),
		call0("id/"+l+"/artifactSave", func(ctx context.Context, e *env) error {
			return e.ps.Artifacts.Save(ctx, &persist.ArtifactRecord{ArtifactID: id, RunID: id, ThreadID: id, Name: "n", MimeType: "text/plain", Size: 1, CreatedAt: 1})
		}),
		call("id/"+l+"/artifactGet", func(ctx context.Context, e *env) (any, error) { return e.ps.Artifacts.Get(ctx, id) }),
		call("id/"+l+"/blobPut", func(ctx context.Context, e *env) (any, error) {
			return e.ps.Blobs.Put(ctx, id, strings.NewReader("xyz"), persist.BlobPutOptions{})
		}),
		call("id/"+l+"/blobHead", func(ctx context.Context, e *env) (any, error) { return e.ps.Blobs.Head(ctx, id) }),
		lockStep("id/"+l+"/key", "acquire", id, "tok"),
		lockStep("id/"+l+"/token", "acquire", "lock-"+l, id),
		lockStep("id/"+l+"/release", "release", id, "tok"),
	}
}

// numberSteps put integers at and past ±2^53 (and ±(2^53−1)) in every
// numeric field of both contracts.
func numberSteps() []step {
	var s []step
	for _, n := range []int64{maxSafe, maxSafe + 1, -maxSafe, -maxSafe - 1, -1, 0} {
		l := fmt.Sprint(n)
		thread := "num-" + l
		s = append(s,
			acquire("num/"+l, thread),
			appendCP("num/size/"+l, "num/"+l, "", func() *ckptstore.Checkpoint {
				c := ckpt("num-size-"+l, thread, "", 1)
				c.Files[1].Size = n
				return c
			}()),
			appendCP("num/createdAt/"+l, "num/"+l, "", ckpt("num-at-"+l, thread, "", float64(n))),
			appendCP("num/artifact/"+l, "num/"+l, "", func() *ckptstore.Checkpoint {
				c := ckpt("num-art-"+l, thread, "", 1)
				c.Artifacts = []ckptstore.Artifact{{ArtifactID: "a", Name: "a", MimeType: "text/plain", Size: n, BlobKey: artifactKey(1), CreatedAt: float64(n)}}
				return c
			}()),
			call("num/deleteCheckpoints-keep/"+l, func(ctx context.Context, e *env) (any, error) {
				return e.cp.DeleteCheckpoints(ctx, thread, int(n), e.writer("num/"+l))
			}),
			call0("num/instance-updatedAt/"+l, func(ctx context.Context, e *env) error {
				return e.inst.Upsert(ctx, &ckptstore.InstanceRecord{Key: "num-" + l, Provider: "p", ProviderSandboxID: "s", ThreadID: thread, UpdatedAt: n})
			}),
			call("num/instanceGet/"+l, func(ctx context.Context, e *env) (any, error) { return e.inst.Get(ctx, "num-"+l) }),
			call("num/runStartedAt/"+l, func(ctx context.Context, e *env) (any, error) {
				return e.ps.Runs.CreateOrResume(ctx, persist.RunStart{RunID: "num-run-" + l, ThreadID: thread, StartedAt: n})
			}),
			call0("num/runPatch/"+l, func(ctx context.Context, e *env) error {
				return e.ps.Runs.Update(ctx, "num-run-"+l, persist.RunPatch{FinishedAt: persist.Set(n), DetachedSince: persist.Set(n), DriverEpoch: persist.Set(n)})
			}),
			call("num/runGet/"+l, func(ctx context.Context, e *env) (any, error) { return e.ps.Runs.Get(ctx, "num-run-"+l) }),
			call("num/reclaimable/"+l, func(ctx context.Context, e *env) (any, error) {
				return e.ps.Runs.ListReclaimable(ctx, persist.ReclaimQuery{Now: n, TTLMs: 1})
			}),
			call("num/reclaimable-ttl/"+l, func(ctx context.Context, e *env) (any, error) {
				return e.ps.Runs.ListReclaimable(ctx, persist.ReclaimQuery{Now: maxSafe, TTLMs: n})
			}),
			call("num/genStartedAt/"+l, func(ctx context.Context, e *env) (any, error) {
				return e.ps.GenerationRuns.CreateOrResume(ctx, persist.GenerationRunStart{RunID: "num-gen-" + l, ThreadID: thread, Activity: "a", Provider: "p", Model: "m", StartedAt: n})
			}),
			call0("num/interruptRequestedAt/"+l, func(ctx context.Context, e *env) error {
				return e.ps.Interrupts.Create(ctx, persist.NewInterrupt{InterruptID: "num-int-" + l, RunID: "r", ThreadID: thread, RequestedAt: n, Payload: json.RawMessage(`{}`)})
			}),
			call0("num/artifactRecord/"+l, func(ctx context.Context, e *env) error {
				return e.ps.Artifacts.Save(ctx, &persist.ArtifactRecord{ArtifactID: "num-art-" + l, RunID: "r", ThreadID: thread, Name: "n", MimeType: "m", Size: n, CreatedAt: n})
			}),
			call("num/artifactsForThread/"+l, func(ctx context.Context, e *env) (any, error) { return e.ps.Artifacts.ListForThread(ctx, thread) }),
			call("num/blobPutExpectedLength/"+l, func(ctx context.Context, e *env) (any, error) {
				return e.ps.Blobs.Put(ctx, "num-blob-"+l, strings.NewReader("abc"), persist.BlobPutOptions{ExpectedLength: ptr(n)})
			}),
			call("num/blobRange/"+l, func(ctx context.Context, e *env) (any, error) {
				return e.ps.Blobs.Get(ctx, "num-blob-0", &persist.BlobRange{Offset: max(n, 0), Length: ptr(n)})
			}),
			call("num/threadsLimit/"+l, func(ctx context.Context, e *env) (any, error) {
				ts, next, err := e.cp.Threads(ctx, "", int(n))
				return []any{ts, next != ""}, err
			}),
			call("num/listPageLimit/"+l, func(ctx context.Context, e *env) (any, error) {
				cps, next, err := e.cp.ListPage(ctx, thread, ckptstore.ListOptions{Limit: int(n)})
				return []any{len(cps), next != ""}, err
			}),
		)
	}
	s = append(s,
		appendCP("num/createdAt/NaN", "num/0", "", ckpt("num-nan", "num-0", "", math.NaN())),
		appendCP("num/createdAt/fraction", "num/0", "", ckpt("num-frac", "num-0", "", 1.5)),
		call("num/list-after", func(ctx context.Context, e *env) (any, error) { return e.cp.List(ctx, "num-0") }),
	)
	return s
}

// jsonCases are JSON values: empty, malformed, edge-valid, and large.
func jsonCases() []struct{ label, v string } {
	return []struct{ label, v string }{
		{"empty", ""},
		{"null", "null"},
		{"spaces", "  {\"a\" : 1}  "},
		{"unclosed-object", "{"},
		{"unclosed-array", "[1,"},
		{"trailing-garbage", "{} x"},
		{"two-values", "1 2"},
		{"bare-word", "undefined"},
		{"single-quotes", "{'a':1}"},
		{"invalid-utf8-in-string", "{\"a\":\"\xff\"}"},
		{"lone-surrogate-escape", `{"a":"\ud800"}`},
		{"duplicate-keys", `{"a":1,"a":2}`},
		{"big-int", `{"n":9007199254740993}`},
		{"huge-exponent", `{"n":1e400}`},
		{"neg-zero", `{"n":-0}`},
		{"deep-nesting", strings.Repeat("[", 10000) + strings.Repeat("]", 10000)},
		{"depth-max", strings.Repeat("[", contract.MaxJSONDepth) + strings.Repeat("]", contract.MaxJSONDepth)},
		{"depth-max-object", strings.Repeat(`{"a":`, contract.MaxJSONDepth) + "1" + strings.Repeat("}", contract.MaxJSONDepth)},
		{"depth-over", strings.Repeat("[", contract.MaxJSONDepth+1) + strings.Repeat("]", contract.MaxJSONDepth+1)},
		{"array", `[1,2]`},
		{"string", `"s"`},
		{"200KB", `{"s":"` + strings.Repeat("x", 200<<10) + `"}`},
		{"value-max", `{"s":"` + strings.Repeat("x", persist.MaxValueBytes-8) + `"}`},
		{"value-over", `{"s":"` + strings.Repeat("x", persist.MaxValueBytes-7) + `"}`},
	}
}

// jsonSteps put each JSON case in every JSON field: metadata values,
// interrupt payloads and responses, usage, commit-batch responses and
// checkpoint conversations.
func jsonSteps() []step {
	var s []step
	s = append(s, acquire("json", "json-thread"))
	for i, c := range jsonCases() {
		l, v := c.label, json.RawMessage(c.v)
		id := fmt.Sprintf("json-%d", i)
		s = append(s,
			call0("json/metadataSet/"+l, func(ctx context.Context, e *env) error { return e.ps.Metadata.Set(ctx, "json", id, v) }),
			call("json/metadataGet/"+l, func(ctx context.Context, e *env) (any, error) { return e.ps.Metadata.Get(ctx, "json", id) }),
			call0("json/interruptPayload/"+l, func(ctx context.Context, e *env) error {
				return e.ps.Interrupts.Create(ctx, persist.NewInterrupt{InterruptID: id, RunID: "json-run", ThreadID: "json-thread", RequestedAt: 1, Payload: v})
			}),
			call0("json/interruptResponse/"+l, func(ctx context.Context, e *env) error {
				return e.ps.Interrupts.Create(ctx, persist.NewInterrupt{InterruptID: id + "-r", RunID: "json-run", ThreadID: "json-thread", RequestedAt: 1, Payload: json.RawMessage(`{}`), Response: v})
			}),
			call0("json/resolve/"+l, func(ctx context.Context, e *env) error { return e.ps.Interrupts.Resolve(ctx, id+"-r", v) }),
			call0("json/commitResponse/"+l, func(ctx context.Context, e *env) error {
				return e.ps.Interrupts.CommitBatch(ctx, []persist.InterruptCommitEntry{{InterruptID: id, Status: persist.InterruptResolved, Response: v}})
			}),
			call("json/interruptGet/"+l, func(ctx context.Context, e *env) (any, error) { return e.ps.Interrupts.Get(ctx, id) }),
			call("json/runUsage/"+l, func(ctx context.Context, e *env) (any, error) {
				if _, err := e.ps.Runs.CreateOrResume(ctx, persist.RunStart{RunID: id, ThreadID: "json-thread", StartedAt: 1}); err != nil {
					return nil, err
				}
				err := e.ps.Runs.Update(ctx, id, persist.RunPatch{Usage: persist.Set(v)})
				if err != nil {
					return nil, err
				}
				return e.ps.Runs.Get(ctx, id)
			}),
			call("json/genResult/"+l, func(ctx context.Context, e *env) (any, error) {
				if _, err := e.ps.GenerationRuns.CreateOrResume(ctx, persist.GenerationRunStart{RunID: id, ThreadID: "json-thread", Activity: "a", Provider: "p", Model: "m", StartedAt: 1}); err != nil {
					return nil, err
				}
				err := e.ps.GenerationRuns.Update(ctx, id, persist.GenerationRunPatch{Result: persist.Set(v), Artifacts: persist.Set(v), Usage: persist.Set(v)})
				if err != nil {
					return nil, err
				}
				return e.ps.GenerationRuns.Get(ctx, id)
			}),
			appendCP("json/conversation/"+l, "json", "", func() *ckptstore.Checkpoint {
				c := ckpt(id, "json-thread", "", float64(i+1))
				c.Conversation = v
				return c
			}()),
			call0("json/saveThread/"+l, func(ctx context.Context, e *env) error { return e.cp.SaveThread(ctx, id, v) }),
			call("json/loadThread/"+l, func(ctx context.Context, e *env) (any, error) { return e.cp.LoadThread(ctx, id) }),
		)
	}
	s = append(s, call("json/list", func(ctx context.Context, e *env) (any, error) { return e.cp.List(ctx, "json-thread") }))
	for i, c := range jsonCases() {
		s = append(s, dropThread("json/"+c.label, fmt.Sprintf("json-%d", i)))
	}
	return s
}

// bodyLimitSteps send values just over the HTTP request-body limit. In
// process each store applies its own bounds; through HTTP the handler
// refuses the body (N4: the limit is the server's setting, so the two
// groups are compared apart).
func bodyLimitSteps() []step {
	big := json.RawMessage(`{"s":"` + strings.Repeat("x", maxBodyBytes) + `"}`)
	var s []step
	for _, st := range []step{
		call0("huge/metadata", func(ctx context.Context, e *env) error { return e.ps.Metadata.Set(ctx, "huge", "k", big) }),
		call0("huge/interruptPayload", func(ctx context.Context, e *env) error {
			return e.ps.Interrupts.Create(ctx, persist.NewInterrupt{InterruptID: "huge", RunID: "r", ThreadID: "huge", RequestedAt: 1, Payload: big})
		}),
		call0("huge/saveThread", func(ctx context.Context, e *env) error {
			return e.cp.SaveThread(ctx, "huge", json.RawMessage(`[`+string(big)+`]`))
		}),
		call0("huge/usage", func(ctx context.Context, e *env) error {
			if _, err := e.ps.Runs.CreateOrResume(ctx, persist.RunStart{RunID: "huge", ThreadID: "huge", StartedAt: 1}); err != nil {
				return err
			}
			return e.ps.Runs.Update(ctx, "huge", persist.RunPatch{Usage: persist.Set(big)})
		}),
		call0("huge/append", func(ctx context.Context, e *env) error {
			l, err := e.cp.AcquireWriter(ctx, "huge-cp")
			if err != nil {
				return err
			}
			defer func() { _ = e.cp.Release(ctx, l.Writer) }()
			c := ckpt("huge-cp-1", "huge-cp", "", 1)
			c.Conversation = json.RawMessage(`[` + string(big) + `]`)
			return e.cp.Append(ctx, c, "", l.Writer)
		}),
		call("huge/metadataGet", func(ctx context.Context, e *env) (any, error) {
			v, err := e.ps.Metadata.Get(ctx, "huge", "k")
			return len(v), err
		}),
	} {
		st.split = true
		s = append(s, st)
	}
	// The cleanup deletes what only the in-process engines stored: it is
	// compared within each group too.
	for _, c := range []step{dropThread("huge", "huge"), dropThread("huge-cp", "huge-cp")} {
		c.split = true
		s = append(s, c)
	}
	return s
}

// leaseSteps expire writer leases and lock leases by the test clock.
func leaseSteps() []step {
	return []step{
		acquire("lease/w1", "lease-t"),
		acquire("lease/w1-again", "lease-t"),
		appendCP("lease/first", "lease/w1", "", ckpt("lease-1", "lease-t", "", 1)),
		advance(renewAfter),
		renew("lease/w1-live", "lease/w1"),
		advance(leaseDuration - time.Millisecond),
		acquire("lease/w2-before-expiry", "lease-t"),
		advance(2 * time.Millisecond), // past the renewed expiry
		acquire("lease/w2", "lease-t"),
		appendCP("lease/w1-stale", "lease/w1", "lease-1", ckpt("lease-2", "lease-t", "lease-1", 2)),
		renew("lease/w1-stale", "lease/w1"),
		release("lease/w1-stale", "lease/w1"),
		appendCP("lease/w2", "lease/w2", "lease-1", ckpt("lease-2", "lease-t", "lease-1", 2)),
		call0("lease/deleteHead-w1", func(ctx context.Context, e *env) error {
			return e.cp.DeleteHead(ctx, "lease-t", "lease-2", e.writer("lease/w1"))
		}),
		advance(leaseDuration + time.Millisecond),
		appendCP("lease/w2-expired", "lease/w2", "lease-2", ckpt("lease-3", "lease-t", "lease-2", 3)),
		renew("lease/w2-expired", "lease/w2"),
		acquire("lease/w3", "lease-t"),
		release("lease/w3", "lease/w3"),
		release("lease/w3-twice", "lease/w3"),
		acquire("lease/w4-after-release", "lease-t"),
		call0("lease/writer-of-another-thread", func(ctx context.Context, e *env) error {
			return e.cp.Append(ctx, ckpt("lease-x", "other-t", "", 1), "", e.writer("lease/w4-after-release"))
		}),
		call("lease/list", func(ctx context.Context, e *env) (any, error) { return e.cp.List(ctx, "lease-t") }),

		// Lock leases, by the same clock.
		lockStep("a-acquire", "acquire", "lk", "A"),
		lockStep("b-queued", "acquire", "lk", "B"),
		lockStep("a-acquire-again", "acquire", "lk", "A"),
		advance(renewAfter),
		lockStep("a-renew", "renew", "lk", "A"),
		lockStep("b-renew-not-held", "renew", "lk", "B"),
		lockStep("b-queued-again", "acquire", "lk", "B"),
		advance(leaseDuration + time.Millisecond),
		lockStep("a-renew-expired", "renew", "lk", "A"),
		lockStep("b-after-expiry", "acquire", "lk", "B"),
		lockStep("a-release-not-held", "release", "lk", "A"),
		lockStep("b-release", "release", "lk", "B"),
		lockStep("b-release-twice", "release", "lk", "B"),
		lockStep("c-after-release", "acquire", "lk", "C"),
		advance(leaseDuration * 3),
		lockStep("d-after-c-expired", "acquire", "lk", "D"),
		lockStep("token-empty", "acquire", "lk", ""),
		call("lock/negative-wait", func(ctx context.Context, e *env) (any, error) {
			return e.ps.Locks.(*persist.Locks).Steps().Acquire(ctx, "lk", "W", -time.Millisecond)
		}),
		lockStep("key-empty", "acquire", "", "t"),
		withLock("withLock-ok", "wl", nil),
		withLock("withLock-err", "wl", errSection),
		advance(leaseDuration + time.Millisecond),
		withLock("withLock-held-elsewhere-expired", "lk", nil),
		withLock("withLock-bad-key", "", nil),
	}
}

// batchSteps are commit-batch errors, each of which must change nothing.
func batchSteps() []step {
	create := func(id string) step {
		return call0("batch/create-"+id, func(ctx context.Context, e *env) error {
			return e.ps.Interrupts.Create(ctx, persist.NewInterrupt{InterruptID: id, RunID: "br", ThreadID: "bt", RequestedAt: 1, Payload: json.RawMessage(`{"q":"` + id + `"}`)})
		})
	}
	commit := func(name string, entries ...persist.InterruptCommitEntry) step {
		return call0("batch/"+name, func(ctx context.Context, e *env) error { return e.ps.Interrupts.CommitBatch(ctx, entries) })
	}
	ent := func(id string, st persist.InterruptStatus, resp string) persist.InterruptCommitEntry {
		var r json.RawMessage
		if resp != "" {
			r = json.RawMessage(resp)
		}
		return persist.InterruptCommitEntry{InterruptID: id, Status: st, Response: r}
	}
	listAll := call("batch/list", func(ctx context.Context, e *env) (any, error) { return e.ps.Interrupts.List(ctx, "bt") })
	return []step{
		create("i1"), create("i2"), create("i3"), create("i1"),
		commit("empty"),
		commit("duplicate", ent("i1", persist.InterruptResolved, `1`), ent("i1", persist.InterruptCancelled, "")),
		commit("missing", ent("i1", persist.InterruptResolved, `1`), ent("nope", persist.InterruptCancelled, "")),
		commit("missing-first", ent("nope", persist.InterruptCancelled, ""), ent("i1", persist.InterruptResolved, `1`)),
		commit("status-pending", ent("i1", persist.InterruptPending, "")),
		commit("status-bogus", ent("i1", "bogus", "")),
		commit("cancel-with-response", ent("i1", persist.InterruptCancelled, `1`)),
		commit("resolve-without-response", ent("i1", persist.InterruptResolved, "")),
		commit("bad-response", ent("i1", persist.InterruptResolved, `{`)),
		commit("empty-id", ent("", persist.InterruptResolved, `1`)),
		listAll,
		call0("batch/resolve-i2", func(ctx context.Context, e *env) error {
			return e.ps.Interrupts.Resolve(ctx, "i2", json.RawMessage(`"yes"`))
		}),
		call0("batch/resolve-i2-again", func(ctx context.Context, e *env) error {
			return e.ps.Interrupts.Resolve(ctx, "i2", json.RawMessage(`"no"`))
		}),
		call0("batch/cancel-missing", func(ctx context.Context, e *env) error { return e.ps.Interrupts.Cancel(ctx, "nope") }),
		commit("not-pending", ent("i1", persist.InterruptResolved, `1`), ent("i2", persist.InterruptCancelled, "")),
		commit("not-pending-and-missing", ent("i2", persist.InterruptCancelled, ""), ent("nope", persist.InterruptCancelled, "")),
		listAll,
		commit("ok", ent("i1", persist.InterruptResolved, `{"ok":true}`), ent("i3", persist.InterruptCancelled, "")),
		commit("ok-again", ent("i1", persist.InterruptResolved, `{"ok":true}`)),
		listAll,
		call("batch/pending", func(ctx context.Context, e *env) (any, error) { return e.ps.Interrupts.ListPending(ctx, "bt") }),
		call("batch/byRun", func(ctx context.Context, e *env) (any, error) { return e.ps.Interrupts.ListByRun(ctx, "br") }),
	}
}

// pagingSteps page through checkpoints, threads and blobs.
func pagingSteps() []step {
	s := []step{acquire("page", "page-t")}
	head := ""
	for i := range 7 {
		id := fmt.Sprintf("page-%d", i)
		at := float64(10 - i%3) // ties in createdAt: the id orders them
		s = append(s, appendCP("page/"+id, "page", head, ckpt(id, "page-t", head, at)))
		head = id
	}
	for _, lim := range []int{1, 2, 3, 7, 8, 0} {
		s = append(s,
			walkPages(fmt.Sprintf("page/walk-%d", lim), "page-t", lim, false),
			walkPages(fmt.Sprintf("page/walk-reverse-%d", lim), "page-t", lim, true),
		)
	}
	s = append(s,
		listPage("page/limit-max", "page-t", ckptstore.ListOptions{Limit: driver.MaxPageLimit}),
		listPage("page/limit-max+1", "page-t", ckptstore.ListOptions{Limit: driver.MaxPageLimit + 1}),
		listPage("page/limit-negative", "page-t", ckptstore.ListOptions{Limit: -1}),
		listPage("page/cursor-garbage", "page-t", ckptstore.ListOptions{After: "zzz", Limit: 2}),
		listPage("page/cursor-empty-thread", "page-none", ckptstore.ListOptions{Limit: 2}),
		call("page/cursor-of-another-thread", func(ctx context.Context, e *env) (any, error) {
			_, next, err := e.cp.ListPage(ctx, "page-t", ckptstore.ListOptions{Limit: 2})
			if err != nil {
				return nil, err
			}
			cps, next2, err := e.cp.ListPage(ctx, "json-thread", ckptstore.ListOptions{After: next, Limit: 2})
			return page{cps, next2}, err
		}),
		call("page/cursor-huge", func(ctx context.Context, e *env) (any, error) {
			cps, next, err := e.cp.ListPage(ctx, "page-t", ckptstore.ListOptions{After: strings.Repeat("A", 1<<16), Limit: 2})
			return page{cps, next}, err
		}),
		walkThreads("page/threads-1", 1),
		walkThreads("page/threads-5", 5),
		call("page/threads-cursor-garbage", func(ctx context.Context, e *env) (any, error) {
			ts, next, err := e.cp.Threads(ctx, "zzz", 2)
			return []any{ts, next != ""}, err
		}),
	)
	for i := range 5 {
		key := fmt.Sprintf("pg/b%d", i)
		s = append(s, call("page/blobPut-"+key, func(ctx context.Context, e *env) (any, error) {
			return e.ps.Blobs.Put(ctx, key, bytes.NewReader([]byte(key)), persist.BlobPutOptions{ContentType: ptr("text/plain"), CustomMetadata: map[string]string{"k": key}})
		}))
	}
	walkBlobs := func(name, prefix string, limit *int) step {
		return call("page/"+name, func(ctx context.Context, e *env) (any, error) {
			var pages [][]string
			cursor := ""
			for range 100 {
				p, err := e.ps.Blobs.List(ctx, persist.BlobListOptions{Prefix: prefix, Cursor: cursor, Limit: limit})
				if err != nil {
					return pages, err
				}
				var keys []string
				for _, o := range p.Objects {
					keys = append(keys, o.Key)
				}
				pages = append(pages, keys)
				if !p.Truncated {
					return pages, nil
				}
				cursor = p.Cursor
			}
			return pages, errors.New("more than 100 pages")
		})
	}
	s = append(s,
		walkBlobs("blobs-1", "pg/", ptr(1)),
		walkBlobs("blobs-2", "pg/", ptr(2)),
		walkBlobs("blobs-all", "", nil),
		walkBlobs("blobs-0", "pg/", ptr(0)),
		walkBlobs("blobs-negative", "pg/", ptr(-1)),
		call("page/blobs-cursor-garbage", func(ctx context.Context, e *env) (any, error) {
			return e.ps.Blobs.List(ctx, persist.BlobListOptions{Cursor: "zzz", Limit: ptr(2)})
		}),
		call("page/blobGet-range", func(ctx context.Context, e *env) (any, error) {
			return e.ps.Blobs.Get(ctx, "pg/b1", &persist.BlobRange{Offset: 1, Length: ptr[int64](2)})
		}),
		call("page/blobGet-range-past-end", func(ctx context.Context, e *env) (any, error) {
			return e.ps.Blobs.Get(ctx, "pg/b1", &persist.BlobRange{Offset: 100})
		}),
		call0("page/blobDelete", func(ctx context.Context, e *env) error { return e.ps.Blobs.Delete(ctx, "pg/b1") }),
		call("page/blobGet-deleted", func(ctx context.Context, e *env) (any, error) { return e.ps.Blobs.Get(ctx, "pg/b1", nil) }),
	)
	return s
}

// forkSteps are the fork's errors, then a fork that works.
func forkSteps() []step {
	fork := func(name, src, srcCP, dst, dstCP, lease string) step {
		return call("fork/"+name, func(ctx context.Context, e *env) (any, error) {
			return e.cp.ForkFromCheckpoint(ctx, ckptstore.ForkInput{SourceThreadID: src, SourceCheckpointID: srcCP, DestinationThreadID: dst, DestinationCheckpointID: dstCP, CreatedAt: 50, Writer: e.writer(lease)})
		})
	}
	return []step{
		acquire("fork/src", "fork-src"),
		appendCP("fork/src-1", "fork/src", "", ckpt("fs-1", "fork-src", "", 1)),
		appendCP("fork/src-2", "fork/src", "fs-1", ckpt("fs-2", "fork-src", "fs-1", 2)),
		call0("fork/src-transcript", func(ctx context.Context, e *env) error {
			return e.cp.SaveThread(ctx, "fork-src", json.RawMessage(`[{"m":1}]`))
		}),
		acquire("fork/dst", "fork-dst"),
		fork("source-missing", "fork-src", "nope", "fork-dst", "fd-1", "fork/dst"),
		fork("source-in-other-thread", "page-t", "fs-1", "fork-dst", "fd-1", "fork/dst"),
		fork("same-thread", "fork-src", "fs-1", "fork-src", "fd-1", "fork/src"),
		fork("writer-of-source", "fork-src", "fs-1", "fork-dst", "fd-1", "fork/src"),
		fork("writer-none", "fork-src", "fs-1", "fork-dst", "fd-1", "none"),
		fork("destination-id-used", "fork-src", "fs-1", "fork-dst", "fs-2", "fork/dst"),
		fork("destination-id-invalid", "fork-src", "fs-1", "fork-dst", "", "fork/dst"),
		fork("ok", "fork-src", "fs-1", "fork-dst", "fd-1", "fork/dst"),
		fork("destination-not-empty", "fork-src", "fs-2", "fork-dst", "fd-2", "fork/dst"),
		call("fork/dst-list", func(ctx context.Context, e *env) (any, error) { return e.cp.List(ctx, "fork-dst") }),
		call("fork/dst-transcript", func(ctx context.Context, e *env) (any, error) { return e.cp.LoadThread(ctx, "fork-dst") }),
		acquire("fork/dst2", "fork-dst2"),
		call0("fork/dst2-transcript-only", func(ctx context.Context, e *env) error {
			return e.cp.SaveThread(ctx, "fork-dst2", json.RawMessage(`[]`))
		}),
		fork("destination-has-transcript", "fork-src", "fs-2", "fork-dst2", "fd2-1", "fork/dst2"),
		advance(leaseDuration + time.Millisecond),
		fork("writer-expired", "fork-src", "fs-2", "fork-dst2", "fd2-2", "fork/dst2"),
	}
}

// checkpointErrorSteps are the append and delete errors.
func checkpointErrorSteps() []step {
	bad := func(name string, mut func(c *ckptstore.Checkpoint)) step {
		c := ckpt("ce-bad", "ce-t", "ce-1", 5)
		mut(c)
		return appendCP("cerr/"+name, "ce", "ce-1", c)
	}
	return []step{
		acquire("ce", "ce-t"),
		appendCP("cerr/first", "ce", "", ckpt("ce-1", "ce-t", "", 1)),
		appendCP("cerr/stale-head", "ce", "", ckpt("ce-2", "ce-t", "", 2)),
		appendCP("cerr/parent-mismatch", "ce", "ce-1", ckpt("ce-2", "ce-t", "", 2)),
		appendCP("cerr/duplicate-id", "ce", "ce-1", ckpt("ce-1", "ce-t", "ce-1", 2)),
		appendCP("cerr/duplicate-id-other-thread", "ce", "ce-1", ckpt("fs-1", "ce-t", "ce-1", 2)),
		appendCP("cerr/thread-mismatch", "ce", "ce-1", ckpt("ce-2", "other", "ce-1", 2)),
		bad("bad-blob-key", func(c *ckptstore.Checkpoint) { c.Files[1].BlobKey = "sandbox-files/sha256/xyz" }),
		bad("duplicate-path", func(c *ckptstore.Checkpoint) { c.Files = append(c.Files, c.Files[1]) }),
		bad("dir-with-size", func(c *ckptstore.Checkpoint) { c.Files[0].Size = 1 }),
		bad("bad-kind", func(c *ckptstore.Checkpoint) { c.Files[0].Kind = "link" }),
		bad("bad-reason", func(c *ckptstore.Checkpoint) { c.Reason = "whim" }),
		bad("path-invalid-utf8", func(c *ckptstore.Checkpoint) { c.Files[1].Path = "src/\xff" }),
		bad("path-absolute", func(c *ckptstore.Checkpoint) { c.Files[1].Path = "/etc/passwd" }),
		bad("label-invalid-utf8", func(c *ckptstore.Checkpoint) { c.Label = "\xff" }),
		bad("conversation-object", func(c *ckptstore.Checkpoint) { c.Conversation = json.RawMessage(`{}`) }),
		bad("inf-createdAt", func(c *ckptstore.Checkpoint) { c.CreatedAt = math.Inf(1) }),
		appendCP("cerr/second", "ce", "ce-1", ckpt("ce-2", "ce-t", "ce-1", 2)),
		call0("cerr/deleteHead-not-head", func(ctx context.Context, e *env) error {
			return e.cp.DeleteHead(ctx, "ce-t", "ce-1", e.writer("ce"))
		}),
		call0("cerr/deleteHead-missing", func(ctx context.Context, e *env) error {
			return e.cp.DeleteHead(ctx, "ce-t", "nope", e.writer("ce"))
		}),
		call0("cerr/deleteHead", func(ctx context.Context, e *env) error {
			return e.cp.DeleteHead(ctx, "ce-t", "ce-2", e.writer("ce"))
		}),
		call("cerr/head", func(ctx context.Context, e *env) (any, error) { return e.cp.GetHead(ctx, "ce-t") }),
		call("cerr/deleteCheckpoints-keep-1", func(ctx context.Context, e *env) (any, error) {
			return e.cp.DeleteCheckpoints(ctx, "ce-t", 1, e.writer("ce"))
		}),
		call("cerr/deleteThread", func(ctx context.Context, e *env) (any, error) {
			return e.cp.DeleteThread(ctx, "ce-t", e.writer("ce"))
		}),
		call("cerr/deleteThread-again", func(ctx context.Context, e *env) (any, error) {
			return e.cp.DeleteThread(ctx, "ce-t", e.writer("ce"))
		}),
		call("cerr/blobRefs", func(ctx context.Context, e *env) (any, error) { return e.cp.ListBlobReferences(ctx) }),
	}
}

// importSteps are Import's errors, then imports that work.
func importSteps() []step {
	imp := func(name, lease string, b ckptstore.ImportBatch) step {
		return call("import/"+name, func(ctx context.Context, e *env) (any, error) {
			b := b
			b.Writer = e.writer(lease)
			return e.cp.Import(ctx, b)
		})
	}
	c1 := ckpt("im-1", "im-t", "", 1)
	c2 := ckpt("im-2", "im-t", "im-1", 2)
	other := ckpt("im-x", "other-t", "", 1)
	changed := c1.Clone()
	changed.Label = "changed"
	return []step{
		acquire("import", "im-t"),
		imp("no-writer", "none", ckptstore.ImportBatch{ThreadID: "im-t", Checkpoints: []*ckptstore.Checkpoint{c1}}),
		imp("thread-mismatch", "import", ckptstore.ImportBatch{ThreadID: "im-t", Checkpoints: []*ckptstore.Checkpoint{other}}),
		imp("bad-transcript", "import", ckptstore.ImportBatch{ThreadID: "im-t", Checkpoints: []*ckptstore.Checkpoint{c1}, Transcript: json.RawMessage(`{`)}),
		imp("ok", "import", ckptstore.ImportBatch{ThreadID: "im-t", Checkpoints: []*ckptstore.Checkpoint{c1, c2}, SetHead: true, Head: "im-2", Transcript: json.RawMessage(`[1]`)}),
		imp("again-same", "import", ckptstore.ImportBatch{ThreadID: "im-t", Checkpoints: []*ckptstore.Checkpoint{c1}}),
		imp("again-changed", "import", ckptstore.ImportBatch{ThreadID: "im-t", Checkpoints: []*ckptstore.Checkpoint{changed}}),
		imp("id-of-another-thread", "import", ckptstore.ImportBatch{ThreadID: "im-t", Checkpoints: []*ckptstore.Checkpoint{func() *ckptstore.Checkpoint {
			c := ckpt("fs-1", "im-t", "", 1)
			return c
		}()}}),
		imp("head-missing", "import", ckptstore.ImportBatch{ThreadID: "im-t", SetHead: true, Head: "gone"}),
		call("import/list", func(ctx context.Context, e *env) (any, error) { return e.cp.List(ctx, "im-t") }),
		call("import/head", func(ctx context.Context, e *env) (any, error) { return e.cp.GetHead(ctx, "im-t") }),
		call("import/transcript", func(ctx context.Context, e *env) (any, error) { return e.cp.LoadThread(ctx, "im-t") }),
	}
}

// opTokenSteps repeat writes with the caller's op token (docs/contract.md,
// "Caller op tokens and retries"; docs/persistence.md for commit batches):
// a repeat of a write that committed reports its success, on every engine
// and through HTTP (the token rides as Idempotency-Key). Tokens at and
// past today's length bound, and of a bad charset, are compared too.
func opTokenSteps() []step {
	with := func(name, token string, f func(ctx context.Context, e *env) (any, error)) step {
		return call("optoken/"+name, func(ctx context.Context, e *env) (any, error) {
			return f(ckptstore.WithOpToken(ctx, token), e)
		})
	}
	acq := func(name, token, thread string) step {
		return with(name, token, func(ctx context.Context, e *env) (any, error) {
			l, err := e.cp.AcquireWriter(ctx, thread)
			if err == nil {
				e.leases["op"] = l
			}
			return l, err
		})
	}
	app := func(name, token string, cp *ckptstore.Checkpoint, head string) step {
		return with(name, token, func(ctx context.Context, e *env) (any, error) {
			return nil, e.cp.Append(ctx, cp.Clone(), head, e.writer("op"))
		})
	}
	commit := func(name, token string, entries ...persist.InterruptCommitEntry) step {
		return with(name, token, func(ctx context.Context, e *env) (any, error) {
			return nil, e.ps.Interrupts.CommitBatch(ctx, entries)
		})
	}
	return []step{
		acq("acquire", "tok-acquire-1", "op-t"),
		acq("acquire-repeat", "tok-acquire-1", "op-t"),
		acq("acquire-other-token", "tok-acquire-2", "op-t"),
		app("append", "tok-append-1", ckpt("op-1", "op-t", "", 1), ""),
		app("append-repeat", "tok-append-1", ckpt("op-1", "op-t", "", 1), ""),
		app("append-other-token", "tok-append-2", ckpt("op-1", "op-t", "", 1), ""),
		app("token-128", strings.Repeat("a", 128), ckpt("op-2", "op-t", "op-1", 2), "op-1"),
		app("token-129", strings.Repeat("b", 129), ckpt("op-3", "op-t", "op-2", 3), "op-2"),
		app("token-1024", strings.Repeat("c", driver.MaxIDBytes), ckpt("op-3", "op-t", "op-2", 3), "op-2"),
		app("token-1025", strings.Repeat("d", driver.MaxIDBytes+1), ckpt("op-3", "op-t", "op-2", 3), "op-2"),
		app("token-charset", "a token", ckpt("op-3", "op-t", "op-2", 3), "op-2"),
		with("deleteHead", "tok-delete-1", func(ctx context.Context, e *env) (any, error) {
			return nil, e.cp.DeleteHead(ctx, "op-t", "op-1", e.writer("op"))
		}),
		call("optoken/list", func(ctx context.Context, e *env) (any, error) { return e.cp.List(ctx, "op-t") }),
		call0("optoken/interrupt", func(ctx context.Context, e *env) error {
			return e.ps.Interrupts.Create(ctx, persist.NewInterrupt{InterruptID: "op-i", RunID: "op-r", ThreadID: "op-t", RequestedAt: 1, Payload: json.RawMessage(`{}`)})
		}),
		commit("commit", "tok-commit-1", persist.InterruptCommitEntry{InterruptID: "op-i", Status: persist.InterruptResolved, Response: json.RawMessage(`1`)}),
		commit("commit-repeat", "tok-commit-1", persist.InterruptCommitEntry{InterruptID: "op-i", Status: persist.InterruptResolved, Response: json.RawMessage(`1`)}),
		commit("commit-other-token", "tok-commit-2", persist.InterruptCommitEntry{InterruptID: "op-i", Status: persist.InterruptResolved, Response: json.RawMessage(`1`)}),
		commit("commit-token-charset", "a token", persist.InterruptCommitEntry{InterruptID: "op-i", Status: persist.InterruptResolved, Response: json.RawMessage(`1`)}),
		call("optoken/interruptGet", func(ctx context.Context, e *env) (any, error) { return e.ps.Interrupts.Get(ctx, "op-i") }),
	}
}

// persistErrorSteps are the run, generation-run, artifact and metadata
// errors beyond ids, numbers and JSON.
func persistErrorSteps() []step {
	return []step{
		call("perr/run-status-bogus", func(ctx context.Context, e *env) (any, error) {
			return e.ps.Runs.CreateOrResume(ctx, persist.RunStart{RunID: "pr", ThreadID: "pt", StartedAt: 1, Status: "bogus"})
		}),
		call("perr/run", func(ctx context.Context, e *env) (any, error) {
			return e.ps.Runs.CreateOrResume(ctx, persist.RunStart{RunID: "pr", ThreadID: "pt", StartedAt: 1})
		}),
		call("perr/run-resume-other-thread", func(ctx context.Context, e *env) (any, error) {
			return e.ps.Runs.CreateOrResume(ctx, persist.RunStart{RunID: "pr", ThreadID: "other", StartedAt: 2, Status: persist.RunInterrupted})
		}),
		call0("perr/run-update-missing", func(ctx context.Context, e *env) error {
			return e.ps.Runs.Update(ctx, "nope", persist.RunPatch{Status: persist.Set(persist.RunCompleted)})
		}),
		call0("perr/run-clear-status", func(ctx context.Context, e *env) error {
			return e.ps.Runs.Update(ctx, "pr", persist.RunPatch{Status: persist.Clear[persist.RunStatus]()})
		}),
		call0("perr/run-error-invalid-utf8", func(ctx context.Context, e *env) error {
			return e.ps.Runs.Update(ctx, "pr", persist.RunPatch{Error: persist.Set(persist.RunError{Message: "\xff"})})
		}),
		call0("perr/run-sandboxKey-empty", func(ctx context.Context, e *env) error {
			return e.ps.Runs.Update(ctx, "pr", persist.RunPatch{SandboxKey: persist.Set("")})
		}),
		call0("perr/run-full-patch", func(ctx context.Context, e *env) error {
			return e.ps.Runs.Update(ctx, "pr", persist.RunPatch{Status: persist.Set(persist.RunFailed), FinishedAt: persist.Set[int64](9),
				Error: persist.Set(persist.RunError{Message: "boom", Code: ptr("E1")}), SandboxKey: persist.Set("sb"),
				CancelRequested: persist.Set(true), DetachedSince: persist.Set[int64](3)})
		}),
		call0("perr/run-clear-optional", func(ctx context.Context, e *env) error {
			return e.ps.Runs.Update(ctx, "pr", persist.RunPatch{Error: persist.Clear[persist.RunError](), DetachedSince: persist.Clear[int64]()})
		}),
		call("perr/run-get", func(ctx context.Context, e *env) (any, error) { return e.ps.Runs.Get(ctx, "pr") }),
		call("perr/run-active", func(ctx context.Context, e *env) (any, error) { return e.ps.Runs.FindActiveRun(ctx, "pt") }),
		call("perr/gen-latest", func(ctx context.Context, e *env) (any, error) {
			return e.ps.GenerationRuns.FindLatestForThread(ctx, "json-thread")
		}),
		call0("perr/artifact-no-name", func(ctx context.Context, e *env) error {
			return e.ps.Artifacts.Save(ctx, &persist.ArtifactRecord{ArtifactID: "pa", RunID: "pr", ThreadID: "pt", MimeType: "m", Size: 1, CreatedAt: 1})
		}),
		call0("perr/artifact-nil", func(ctx context.Context, e *env) error { return e.ps.Artifacts.Save(ctx, nil) }),
		call0("perr/artifact", func(ctx context.Context, e *env) error {
			return e.ps.Artifacts.Save(ctx, &persist.ArtifactRecord{ArtifactID: "pa", RunID: "pr", ThreadID: "pt", Name: "n", MimeType: "m", Size: 1, CreatedAt: 1, BlobKey: ptr("k"), SourceURL: ptr("https://x")})
		}),
		call("perr/artifacts-of-run", func(ctx context.Context, e *env) (any, error) { return e.ps.Artifacts.List(ctx, "pr") }),
		call0("perr/artifacts-delete-run", func(ctx context.Context, e *env) error { return e.ps.Artifacts.DeleteForRun(ctx, "pr") }),
		call("perr/artifacts-of-run-after", func(ctx context.Context, e *env) (any, error) { return e.ps.Artifacts.List(ctx, "pr") }),
		call0("perr/metadata-delete-missing", func(ctx context.Context, e *env) error { return e.ps.Metadata.Delete(ctx, "nope", "nope") }),
		call("perr/metadata-get-missing", func(ctx context.Context, e *env) (any, error) { return e.ps.Metadata.Get(ctx, "nope", "nope") }),
		call0("perr/metadata-nil", func(ctx context.Context, e *env) error { return e.ps.Metadata.Set(ctx, "m", "k", nil) }),
		call("perr/blob-content-type-invalid", func(ctx context.Context, e *env) (any, error) {
			return e.ps.Blobs.Put(ctx, "pb", strings.NewReader("x"), persist.BlobPutOptions{ContentType: ptr("\xff")})
		}),
		call("perr/blob-metadata-key-empty", func(ctx context.Context, e *env) (any, error) {
			return e.ps.Blobs.Put(ctx, "pb", strings.NewReader("x"), persist.BlobPutOptions{CustomMetadata: map[string]string{"": "v"}})
		}),
		call("perr/blob-head-missing", func(ctx context.Context, e *env) (any, error) { return e.ps.Blobs.Head(ctx, "nope") }),
		call0("perr/blob-delete-missing", func(ctx context.Context, e *env) error { return e.ps.Blobs.Delete(ctx, "nope") }),
	}
}

// script is the whole written sequence.
func script() []step {
	var s []step
	for _, c := range idCases() {
		s = append(s, idSteps(c)...)
	}
	s = append(s, walkThreads("id/threads", 3))
	s = append(s, numberSteps()...)
	s = append(s, jsonSteps()...)
	s = append(s, bodyLimitSteps()...)
	s = append(s, leaseSteps()...)
	s = append(s, batchSteps()...)
	s = append(s, pagingSteps()...)
	s = append(s, forkSteps()...)
	s = append(s, checkpointErrorSteps()...)
	s = append(s, importSteps()...)
	s = append(s, opTokenSteps()...)
	s = append(s, persistErrorSteps()...)
	s = append(s, walkThreads("end/threads", 50))
	return s
}

// TestDifferentialScript runs the written sequence on every engine, in
// one namespace each, and fails on the first divergence that is not a
// known one (reporting every unknown one it saw), and on a known one that
// no longer diverges.
func TestDifferentialScript(t *testing.T) {
	engines := openEngines(t)
	envs := openAll(t, engines, freshNamespace("script"))
	steps := script()
	unknown, seen := runSequence(t, envs, steps)
	for _, k := range knownDivergences {
		if seen[k.name] > 0 {
			t.Logf("known divergence %s, at %d steps: %s", k.name, seen[k.name], k.reason)
		} else {
			t.Errorf("known divergence %s no longer diverges in the script: remove it from knownDivergences (it was: %s)", k.name, k.reason)
		}
	}
	if len(unknown) > 0 {
		if os.Getenv("DIFFTEST_ALL") != "" {
			for _, d := range unknown {
				t.Log(d)
			}
		}
		var b strings.Builder
		for _, d := range unknown[1:] {
			fmt.Fprintf(&b, "  step %d %q: %v differ\n", d.index, d.step.name, d.diverging())
		}
		t.Fatalf("%d of %d steps diverge; the first:\n%s\nthe others:\n%s", len(unknown), len(steps), unknown[0], b.String())
	}
	t.Logf("%d steps on %d engines: every step agreed but the known divergences' (%d steps)", len(steps), len(envs), knownSteps(seen))
}
