package difftest_test

// Raw requests: the Go client checks every input before it sends it, so
// the sequences above reach the server's own checks only with inputs the
// client lets through. Here each case is a call in process and the same
// call as a raw request body, which says what the Go client cannot (a lone
// surrogate escape, 2^53 in a JSON number, a field left out): the server
// must refuse or accept it as the portable layers in process do.
//
// N7: only the wire code is compared (with "ok" for a success). The
// server's decoder names the JSON path and offset of a bad field where the
// portable layer names the field, so the messages differ by design.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/httpstore"
	"github.com/ckptstore/ckptstore/persist"
)

// rawCase is one call, in process and as a raw request.
type rawCase struct {
	name   string
	call   func(ctx context.Context, e *env) (any, error)
	method string // the route, under /v1/
	body   string
}

// rawPost sends body to method of the server at base in namespace ns and
// returns "ok" or the wire code of the error reply.
func rawPost(hc *http.Client, base, ns, method, body string, n int) (string, error) {
	req, err := http.NewRequest(http.MethodPost, base+"/v1/"+method, strings.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(httpstore.HeaderNamespace, ns)
	req.Header.Set("Idempotency-Key", fmt.Sprintf("difftest-raw-%d", n))
	req.Header.Set(httpstore.HeaderNow, fmt.Sprint(startMs))
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode == http.StatusOK {
		return "ok", nil
	}
	var e struct{ Code string }
	if err := json.Unmarshal(b, &e); err != nil {
		return "", fmt.Errorf("status %d, reply %q", resp.StatusCode, b)
	}
	return e.Code, nil
}

// codeOf is the wire code of an in-process outcome, "ok" for a success.
func codeOf(err error) string {
	if err == nil {
		return "ok"
	}
	if c := ckptstore.Code(err); c != "" {
		return c
	}
	if c := persist.Code(err); c != "" {
		return c
	}
	return "other: " + err.Error()
}

// rawCases are the pairs.
func rawCases() []rawCase {
	long := strings.Repeat("x", driver.MaxIDBytes+1)
	q := func(s string) string { b, _ := json.Marshal(s); return string(b) }
	return []rawCase{
		{"getHead/over-limit", func(ctx context.Context, e *env) (any, error) { return e.cp.GetHead(ctx, long) }, "getHead", `{"threadId":` + q(long) + `}`},
		{"getHead/at-limit", func(ctx context.Context, e *env) (any, error) {
			return e.cp.GetHead(ctx, strings.Repeat("é", driver.MaxIDBytes/2))
		}, "getHead", `{"threadId":` + q(strings.Repeat("é", driver.MaxIDBytes/2)) + `}`},
		{"getHead/lone-surrogate", func(ctx context.Context, e *env) (any, error) { return e.cp.GetHead(ctx, "a\xed\xa0\x80") }, "getHead", `{"threadId":"a\ud800"}`},
		{"getHead/empty", func(ctx context.Context, e *env) (any, error) { return e.cp.GetHead(ctx, "") }, "getHead", `{"threadId":""}`},
		{"acquireWriter/empty", func(ctx context.Context, e *env) (any, error) { return e.cp.AcquireWriter(ctx, "") }, "acquireWriter", `{"threadId":""}`},
		{"saveThread/object", func(ctx context.Context, e *env) (any, error) {
			return nil, e.cp.SaveThread(ctx, "raw-t", json.RawMessage(`{}`))
		}, "saveThread", `{"threadId":"raw-t","messages":{}}`},
		{"listPage/limit-1001", func(ctx context.Context, e *env) (any, error) {
			cps, _, err := e.cp.ListPage(ctx, "raw-t", ckptstore.ListOptions{Limit: 1001})
			return cps, err
		}, "listPage", `{"threadId":"raw-t","limit":1001}`},
		{"listPage/limit-negative", func(ctx context.Context, e *env) (any, error) {
			cps, _, err := e.cp.ListPage(ctx, "raw-t", ckptstore.ListOptions{Limit: -1})
			return cps, err
		}, "listPage", `{"threadId":"raw-t","limit":-1}`},
		{"instanceUpsert/updatedAt-2^53", func(ctx context.Context, e *env) (any, error) {
			return nil, e.inst.Upsert(ctx, &ckptstore.InstanceRecord{Key: "raw-k", Provider: "p", ProviderSandboxID: "s", ThreadID: "t", UpdatedAt: maxSafe + 1})
		}, "instanceUpsert", `{"record":{"key":"raw-k","provider":"p","providerSandboxId":"s","threadId":"t","updatedAt":9007199254740992}}`},
		{"instanceUpsert/updatedAt-max", func(ctx context.Context, e *env) (any, error) {
			return nil, e.inst.Upsert(ctx, &ckptstore.InstanceRecord{Key: "raw-k", Provider: "p", ProviderSandboxID: "s", ThreadID: "t", UpdatedAt: -maxSafe})
		}, "instanceUpsert", `{"record":{"key":"raw-k","provider":"p","providerSandboxId":"s","threadId":"t","updatedAt":-9007199254740991}}`},
		{"runs/startedAt-2^53", func(ctx context.Context, e *env) (any, error) {
			return e.ps.Runs.CreateOrResume(ctx, persist.RunStart{RunID: "raw-r", ThreadID: "t", StartedAt: maxSafe + 1})
		}, "runs/createOrResume", `{"runId":"raw-r","threadId":"t","startedAt":9007199254740992}`},
		{"runs/startedAt-min", func(ctx context.Context, e *env) (any, error) {
			return e.ps.Runs.CreateOrResume(ctx, persist.RunStart{RunID: "raw-r", ThreadID: "t", StartedAt: -maxSafe})
		}, "runs/createOrResume", `{"runId":"raw-r","threadId":"t","startedAt":-9007199254740991}`},
		{"runs/clear-status", func(ctx context.Context, e *env) (any, error) {
			return nil, e.ps.Runs.Update(ctx, "raw-r", persist.RunPatch{Status: persist.Clear[persist.RunStatus]()})
		}, "runs/update", `{"runId":"raw-r","patch":{"status":null}}`},
		{"interrupts/payload-array", func(ctx context.Context, e *env) (any, error) {
			return nil, e.ps.Interrupts.Create(ctx, persist.NewInterrupt{InterruptID: "raw-i", RunID: "r", ThreadID: "t", RequestedAt: 1, Payload: json.RawMessage(`[]`)})
		}, "interrupts/create", `{"record":{"interruptId":"raw-i","runId":"r","threadId":"t","requestedAt":1,"payload":[]}}`},
		{"interrupts/payload-missing", func(ctx context.Context, e *env) (any, error) {
			return nil, e.ps.Interrupts.Create(ctx, persist.NewInterrupt{InterruptID: "raw-i", RunID: "r", ThreadID: "t", RequestedAt: 1})
		}, "interrupts/create", `{"record":{"interruptId":"raw-i","runId":"r","threadId":"t","requestedAt":1}}`},
		{"interrupts/commit-empty", func(ctx context.Context, e *env) (any, error) {
			return nil, e.ps.Interrupts.CommitBatch(ctx, nil)
		}, "interrupts/commitBatch", `{"entries":[]}`},
		// A value left out is the wire's null (docs/http-api.md: how
		// JavaScript's undefined arrives), so its call in process is a set
		// of null, not of Go's nil (which the Go client refuses before
		// sending, as in process).
		{"metadata/value-missing", func(ctx context.Context, e *env) (any, error) {
			return nil, e.ps.Metadata.Set(ctx, "n", "k", json.RawMessage(`null`))
		}, "metadata/set", `{"namespace":"n","key":"k"}`},
		{"metadata/key-over-limit", func(ctx context.Context, e *env) (any, error) {
			return nil, e.ps.Metadata.Set(ctx, "n", long, json.RawMessage(`1`))
		}, "metadata/set", `{"namespace":"n","key":` + q(long) + `,"value":1}`},
		{"artifacts/size-negative", func(ctx context.Context, e *env) (any, error) {
			return nil, e.ps.Artifacts.Save(ctx, &persist.ArtifactRecord{ArtifactID: "a", RunID: "r", ThreadID: "t", Name: "n", MimeType: "m", Size: -1, CreatedAt: 1})
		}, "artifacts/save", `{"record":{"artifactId":"a","runId":"r","threadId":"t","name":"n","mimeType":"m","size":-1,"createdAt":1}}`},
		{"deleteCheckpoints/keep-2^53", func(ctx context.Context, e *env) (any, error) {
			return e.cp.DeleteCheckpoints(ctx, "t", maxSafe+1, ckptstore.Writer{ThreadID: "t", OwnerToken: "x", Fence: 1})
		}, "deleteCheckpoints", `{"threadId":"t","keep":9007199254740992,"writer":{"threadId":"t","ownerToken":"x","fence":1}}`},
		{"deleteCheckpoints/stale-writer", func(ctx context.Context, e *env) (any, error) {
			return e.cp.DeleteCheckpoints(ctx, "t", 1, ckptstore.Writer{ThreadID: "t", OwnerToken: "x", Fence: 1})
		}, "deleteCheckpoints", `{"threadId":"t","keep":1,"writer":{"threadId":"t","ownerToken":"x","fence":1}}`},
		{"threads/limit-1001", func(ctx context.Context, e *env) (any, error) {
			ts, _, err := e.cp.Threads(ctx, "", 1001)
			return ts, err
		}, "threads", `{"limit":1001}`},
		{"append/createdAt-overflow", func(ctx context.Context, e *env) (any, error) {
			c := ckpt("raw-c", "t", "", math.Inf(1))
			return nil, e.cp.Append(ctx, c, "", ckptstore.Writer{ThreadID: "t", OwnerToken: "x", Fence: 1})
		}, "append", `{"checkpoint":{"id":"raw-c","threadId":"t","parentCheckpointId":null,"createdAt":1e400,"reason":"automatic","files":[],"artifacts":[],"conversation":[]},"expectedHeadId":null,"writer":{"threadId":"t","ownerToken":"x","fence":1}}`},
		{"append/conversation-object", func(ctx context.Context, e *env) (any, error) {
			c := ckpt("raw-c", "t", "", 1)
			c.Files, c.Conversation = nil, json.RawMessage(`{}`)
			return nil, e.cp.Append(ctx, c, "", ckptstore.Writer{ThreadID: "t", OwnerToken: "x", Fence: 1})
		}, "append", `{"checkpoint":{"id":"raw-c","threadId":"t","parentCheckpointId":null,"createdAt":1,"reason":"automatic","files":[],"artifacts":[],"conversation":{}},"expectedHeadId":null,"writer":{"threadId":"t","ownerToken":"x","fence":1}}`},
		{"fork/destination-lone-surrogate", func(ctx context.Context, e *env) (any, error) {
			return e.cp.ForkFromCheckpoint(ctx, ckptstore.ForkInput{SourceThreadID: "s", SourceCheckpointID: "c", DestinationThreadID: "d", DestinationCheckpointID: "a\xed\xa0\x80", CreatedAt: 1, Writer: ckptstore.Writer{ThreadID: "d", OwnerToken: "x", Fence: 1}})
		}, "forkFromCheckpoint", `{"sourceThreadId":"s","sourceCheckpointId":"c","destinationThreadId":"d","destinationCheckpointId":"a\ud800","createdAt":1,"writer":{"threadId":"d","ownerToken":"x","fence":1}}`},
		{"locks/token-over-limit", func(ctx context.Context, e *env) (any, error) {
			return e.ps.Locks.(*persist.Locks).Steps().Acquire(ctx, "k", long, 0)
		}, "locks/acquire", `{"key":"k","token":` + q(long) + `}`},
		{"locks/token-lone-surrogate", func(ctx context.Context, e *env) (any, error) {
			return e.ps.Locks.(*persist.Locks).Steps().Acquire(ctx, "k", "a\xed\xa0\x80", 0)
		}, "locks/acquire", `{"key":"k","token":"a\ud800"}`},
	}
}

// TestDifferentialRawHTTP runs each raw case in process on every engine
// and as a raw request on every server, in fresh namespaces, and compares
// the codes.
func TestDifferentialRawHTTP(t *testing.T) {
	engines := openEngines(t)
	hc := &http.Client{}
	defer hc.CloseIdleConnections()
	for i, c := range rawCases() {
		ns := freshNamespace("raw")
		var outs []string
		differ := false
		for _, e := range engines {
			var got string
			if e.url == "" {
				ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
				_, err := c.call(ctx, e.open(t, ns))
				cancel()
				got = codeOf(err)
			} else {
				var err error
				if got, err = rawPost(hc, e.url, ns+".raw", c.method, c.body, i); err != nil {
					t.Fatalf("%s on %s: %v", c.name, e.name, err)
				}
			}
			outs = append(outs, fmt.Sprintf("%-11s %s", e.name, clip(got)))
			differ = differ || got != strings.Fields(outs[0])[1]
		}
		if os.Getenv("DIFFTEST_TRACE") != "" {
			t.Logf("raw %s: %s", c.name, outs[0])
		}
		if differ {
			t.Errorf("raw %s (%s %s): the engines disagree:\n  %s", c.name, c.method, clip(c.body), strings.Join(outs, "\n  "))
		}
	}
}
