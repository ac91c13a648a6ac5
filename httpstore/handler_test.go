package httpstore_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/httpstore"
	"github.com/ckptstore/ckptstore/storeurl"
)

// call posts body to method and returns the status and the reply.
func call(t *testing.T, url, method, body string, header ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/"+method, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

const lone = `"\ud800"`

// TestStrictIDs sends a lone surrogate in every id field of every method:
// each is INVALID_ID, never repaired into a valid id.
func TestStrictIDs(t *testing.T) {
	addr, _ := serve(t, "mem", storeurl.Options{})
	w := func(th string) string { return `{"threadId":` + th + `,"ownerToken":"x","fence":1}` }
	cp := func(id, th string) string {
		return `{"id":` + id + `,"threadId":` + th + `,"parentCheckpointId":null,"createdAt":1,"reason":"automatic","files":[],"conversation":[],"artifacts":[]}`
	}
	rec := func(key string) string {
		return `{"key":` + key + `,"provider":"p","providerSandboxId":"s","threadId":"t","updatedAt":1}`
	}
	cases := map[string][]string{
		"get":                {`{"id":` + lone + `}`, `{}`, `{"id":5}`},
		"list":               {`{"threadId":` + lone + `}`},
		"listPage":           {`{"threadId":` + lone + `,"limit":5000}`},
		"getHead":            {`{"threadId":` + lone + `}`},
		"append":             {`{"checkpoint":` + cp(lone, `"t"`) + `,"expectedHeadId":null,"writer":` + w(`"t"`) + `}`, `{"checkpoint":` + cp(`"c"`, lone) + `,"expectedHeadId":null,"writer":` + w(`"t"`) + `}`, `{"checkpoint":` + cp(`"c"`, `"t"`) + `,"expectedHeadId":` + lone + `,"writer":` + w(`"t"`) + `}`, `{"checkpoint":` + cp(`"c"`, `"t"`) + `,"expectedHeadId":null,"writer":` + w(lone) + `}`, `{"expectedHeadId":null,"writer":` + w(`"t"`) + `}`},
		"deleteHead":         {`{"threadId":` + lone + `,"checkpointId":"c","writer":` + w(`"t"`) + `}`, `{"threadId":"t","checkpointId":` + lone + `,"writer":` + w(`"t"`) + `}`},
		"acquireWriter":      {`{"threadId":` + lone + `}`},
		"renew":              {`{"writer":` + w(lone) + `}`},
		"deleteCheckpoints":  {`{"threadId":` + lone + `,"keep":0,"writer":` + w(`"t"`) + `}`},
		"forkFromCheckpoint": {`{"sourceThreadId":` + lone + `,"sourceCheckpointId":"c","destinationThreadId":"d","destinationCheckpointId":"e","createdAt":1,"writer":` + w(`"d"`) + `}`, `{"sourceThreadId":"t","sourceCheckpointId":"c","destinationThreadId":"d","destinationCheckpointId":` + lone + `,"writer":` + w(`"d"`) + `}`},
		"deleteThread":       {`{"threadId":` + lone + `,"writer":` + w(`"t"`) + `}`},
		"loadThread":         {`{"threadId":` + lone + `}`},
		"saveThread":         {`{"threadId":` + lone + `,"messages":5}`},
		"import":             {`{"threadId":` + lone + `,"checkpoints":[],"writer":` + w(`"t"`) + `}`, `{"threadId":"t","checkpoints":[],"setHead":true,"head":` + lone + `,"writer":` + w(`"t"`) + `}`},
		"instanceGet":        {`{"key":` + lone + `}`},
		"instanceDelete":     {`{"key":` + lone + `}`},
		"instanceUpsert":     {`{"record":` + rec(lone) + `}`, `{}`},
	}
	for method, bodies := range cases {
		for _, body := range bodies {
			status, reply := call(t, addr, method, body)
			if status != 400 || !strings.Contains(reply, `"code":"SANDBOX_SNAPSHOT_INVALID_ID"`) {
				t.Errorf("%s %s: %d %s, want 400 INVALID_ID", method, body, status, reply)
			}
		}
	}
	// release never fails on its input: a writer of no valid thread
	// releases nothing.
	if status, reply := call(t, addr, "release", `{"writer":`+w(lone)+`}`); status != 200 || reply != `{}` {
		t.Errorf("release of an invalid thread: %d %s", status, reply)
	}
}

func TestRequestErrors(t *testing.T) {
	addr, _ := serve(t, "mem", storeurl.Options{})
	for _, tc := range []struct {
		name, method, body string
		header             []string
		status             int
		code               string
	}{
		{"unknown method", "nope", `{}`, nil, 404, "NOT_FOUND"},
		{"not JSON", "getHead", `{"threadId":`, nil, 400, "BAD_REQUEST"},
		{"not an object", "getHead", `["t"]`, nil, 400, "BAD_REQUEST"},
		{"null body", "getHead", `null`, nil, 400, "BAD_REQUEST"},
		{"text/plain", "getHead", `{"threadId":"t"}`, []string{"Content-Type", "text/plain"}, 415, "UNSUPPORTED_MEDIA_TYPE"},
		{"bad key", "acquireWriter", `{"threadId":"t"}`, []string{"Idempotency-Key", "has space"}, 400, "BAD_REQUEST"},
		{"long key", "acquireWriter", `{"threadId":"t"}`, []string{"Idempotency-Key", strings.Repeat("k", driver.MaxOpTokenBytes+1)}, 400, "BAD_REQUEST"},
		{"long namespace", "getHead", `{"threadId":"t"}`, []string{"Ckpt-Namespace", strings.Repeat("n", httpstore.MaxNamespaceBytes+1)}, 400, "BAD_REQUEST"},
		{"bad clock", "getHead", `{"threadId":"t"}`, []string{"Ckpt-Now", "soon"}, 400, "BAD_REQUEST"},
		{"bad namespace escape", "getHead", `{"threadId":"t"}`, []string{"Ckpt-Namespace", "%zz"}, 400, "BAD_REQUEST"},
		{"invalid UTF-8 namespace", "getHead", `{"threadId":"t"}`, []string{"Ckpt-Namespace", "%ff"}, 400, "BAD_REQUEST"},
		{"bad lease options", "getHead", `{"threadId":"t"}`, []string{"Ckpt-Namespace", "lease-bad", "Ckpt-Lease-Duration-Ms", "1000", "Ckpt-Renew-After-Ms", "2000"}, 400, "BAD_REQUEST"},
		{"negative lease", "getHead", `{"threadId":"t"}`, []string{"Ckpt-Namespace", "lease-neg", "Ckpt-Lease-Duration-Ms", "-1"}, 400, "BAD_REQUEST"},
		{"keep not a number", "deleteCheckpoints", `{"threadId":"t","keep":"1","writer":{"threadId":"t","ownerToken":"x","fence":1}}`, nil, 400, "SANDBOX_SNAPSHOT_INVALID_ENTRY"},
		{"fork without createdAt", "forkFromCheckpoint", `{"sourceThreadId":"s","sourceCheckpointId":"c","destinationThreadId":"d","destinationCheckpointId":"e","writer":{"threadId":"d","ownerToken":"x","fence":1}}`, nil, 400, "SANDBOX_SNAPSHOT_INVALID_ENTRY"},
		{"stale writer", "deleteHead", `{"threadId":"t","checkpointId":"c","writer":{"threadId":"t","ownerToken":"x","fence":1}}`, nil, 409, "SANDBOX_SNAPSHOT_WRITER_LOST"},
		{"missing source", "forkFromCheckpoint", `{"sourceThreadId":"s","sourceCheckpointId":"c","destinationThreadId":"d","destinationCheckpointId":"e","createdAt":1,"writer":{"threadId":"d","ownerToken":"x","fence":1}}`, nil, 404, "SANDBOX_SNAPSHOT_FORK_SOURCE_NOT_FOUND"},
	} {
		status, reply := call(t, addr, tc.method, tc.body, tc.header...)
		if status != tc.status || !strings.Contains(reply, `"code":"`+tc.code+`"`) {
			t.Errorf("%s: %d %s, want %d %s", tc.name, status, reply, tc.status, tc.code)
		}
	}
	// At the one id limit (1024 bytes, once 128 for a key and 256 for a
	// namespace), a key and a namespace are taken.
	if status, reply := call(t, addr, "acquireWriter", `{"threadId":"t"}`, "Idempotency-Key", strings.Repeat("k", driver.MaxOpTokenBytes),
		"Ckpt-Namespace", strings.Repeat("n", httpstore.MaxNamespaceBytes)); status != 200 || driver.MaxOpTokenBytes != 1024 || httpstore.MaxNamespaceBytes != 1024 {
		t.Errorf("a key and a namespace of 1024 bytes: %d %s", status, reply)
	}
	resp, err := http.Get(addr + "/v1/getHead")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 405 || resp.Header.Get("Allow") != "POST" {
		t.Errorf("GET: %d, Allow %q", resp.StatusCode, resp.Header.Get("Allow"))
	}
}

// TestRequestFaultsNamed: a shape fault in a request body is reported with
// the JSON pointer of the field in the body and the offset of its value;
// the last of a repeated field is the one that counts, fault and all.
func TestRequestFaultsNamed(t *testing.T) {
	addr, _ := serve(t, "mem", storeurl.Options{})
	w := `,"expectedHeadId":null,"writer":{"threadId":"t","ownerToken":"x","fence":1}}`
	body := `{"checkpoint":{"id":"c","threadId":"t","createdAt":1,"reason":"named","files":[{"path":"f","kind":"file","blobKey":"k","size":1.5}]}` + w
	status, reply := call(t, addr, "append", body)
	want := "/checkpoint/files/0/size 1.5 is not a safe integer in range (offset " + strconv.Itoa(strings.Index(body, "1.5")) + ")"
	if status != 400 || !strings.Contains(reply, "SANDBOX_SNAPSHOT_INVALID_ENTRY") || !strings.Contains(reply, want) {
		t.Errorf("append: %d %s, want 400 INVALID_ENTRY naming %q", status, reply, want)
	}
	// The bad checkpoint first, then a good one under the same name: the
	// good one is appended (the writer is not live, so WRITER_LOST).
	good := `"checkpoint":{"id":"c","threadId":"t","createdAt":1,"reason":"named"}`
	body = `{"checkpoint":{"id":5},` + good + w
	if status, reply := call(t, addr, "append", body); status != 409 || !strings.Contains(reply, "WRITER_LOST") {
		t.Errorf("a repeated checkpoint field: %d %s, want the last one's outcome, 409 WRITER_LOST", status, reply)
	}
	body = `{` + good + `,"checkpoint":{"id":5}` + w
	if status, reply := call(t, addr, "append", body); status != 400 || !strings.Contains(reply, "INVALID_ID") {
		t.Errorf("a repeated checkpoint field: %d %s, want the last one's fault, 400 INVALID_ID", status, reply)
	}
}

// TestDevClockAndLeaseHeaders: a namespace takes its lease options from
// the request that creates it, and each request's Ckpt-Now is its clock.
func TestDevClockAndLeaseHeaders(t *testing.T) {
	addr, _ := serve(t, "mem", storeurl.Options{})
	h := []string{"Ckpt-Namespace", "clock", "Ckpt-Lease-Duration-Ms", "1000", "Ckpt-Renew-After-Ms", "250.5", "Ckpt-Now", "1700000000000.25"}
	status, reply := call(t, addr, "acquireWriter", `{"threadId":"t"}`, h...)
	if status != 200 || !strings.Contains(reply, `"expiresAt":1700000001000.25,"renewAfterMs":250.5}`) {
		t.Fatalf("acquireWriter: %d %s", status, reply)
	}
	// Still live 1 ms before expiry, free at it.
	h[len(h)-1] = "1700000000999.25"
	if status, reply := call(t, addr, "acquireWriter", `{"threadId":"t"}`, h...); status != 409 {
		t.Errorf("before expiry: %d %s", status, reply)
	}
	h[len(h)-1] = "1700000001000.25"
	if status, reply := call(t, addr, "acquireWriter", `{"threadId":"t"}`, h...); status != 200 || !strings.Contains(reply, `"fence":2`) {
		t.Errorf("at expiry: %d %s", status, reply)
	}
	// Later lease headers do not change the namespace.
	h[3] = "5000"
	h[len(h)-1] = "1800000000000"
	if status, reply := call(t, addr, "acquireWriter", `{"threadId":"u"}`, h...); status != 200 || !strings.Contains(reply, `"expiresAt":1800000001000,`) {
		t.Errorf("the namespace's lease options changed: %d %s", status, reply)
	}
}

// flaky drops the reply of the first request to each method in drop,
// after the server handled it, and answers 503 (without the store) to the
// first request to each method in busy: the two ways a write's outcome is
// unknown to its client.
type flaky struct {
	next       http.RoundTripper
	drop, busy map[string]*atomic.Int32
	keys       map[string][]string
}

func (f *flaky) RoundTrip(req *http.Request) (*http.Response, error) {
	m := strings.TrimPrefix(req.URL.Path, "/v1/")
	f.keys[m] = append(f.keys[m], req.Header.Get("Idempotency-Key"))
	if c := f.busy[m]; c != nil && c.Add(1) == 1 {
		body := `{"code":"UNAVAILABLE","message":"busy"}`
		return &http.Response{StatusCode: 503, Body: io.NopCloser(strings.NewReader(body)), Header: http.Header{}, Request: req}, nil
	}
	resp, err := f.next.RoundTrip(req)
	if c := f.drop[m]; err == nil && c != nil && c.Add(1) == 1 {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return nil, fmt.Errorf("connection reset by peer (dropped by the test)")
	}
	return resp, err
}

func counters(names ...string) map[string]*atomic.Int32 {
	m := map[string]*atomic.Int32{}
	for _, n := range names {
		m[n] = new(atomic.Int32)
	}
	return m
}

// TestLostReplies: a write whose reply is lost after it committed, or that
// meets a 503, is sent again with the same Idempotency-Key and answers the
// first call's success; nothing is written twice.
func TestLostReplies(t *testing.T) {
	addr, _ := serve(t, "mem", storeurl.Options{})
	writes := []string{"acquireWriter", "append", "deleteHead", "forkFromCheckpoint", "deleteCheckpoints", "saveThread"}
	for _, mode := range []string{"drop", "busy"} {
		t.Run(mode, func(t *testing.T) {
			f := &flaky{next: httpstore.NewTransport(), drop: map[string]*atomic.Int32{}, busy: map[string]*atomic.Int32{}, keys: map[string][]string{}}
			if mode == "drop" {
				f.drop = counters(append(writes, "getHead")...)
			} else {
				f.busy = counters(append(writes, "getHead")...)
			}
			c, err := httpstore.NewClient(addr, httpstore.ClientOptions{Namespace: "lost-" + mode,
				HTTPClient: &http.Client{Transport: f}, RetryBackoff: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			l, err := c.AcquireWriter(ctx, "t")
			if err != nil {
				t.Fatalf("AcquireWriter: %v", err)
			}
			if l.OwnerToken != f.keys["acquireWriter"][0] {
				t.Errorf("the lease's owner token %q is not the key %q", l.OwnerToken, f.keys["acquireWriter"][0])
			}
			for i, id := range []string{"c1", "c2", "c3"} {
				parent := []string{"", "c1", "c2"}[i]
				cp := &ckptstore.Checkpoint{ID: id, ThreadID: "t", ParentCheckpointID: parent, CreatedAt: float64(i), Reason: ckptstore.ReasonAutomatic}
				if err := c.Append(ctx, cp, parent, l.Writer); err != nil {
					t.Fatalf("Append %s: %v", id, err)
				}
			}
			if err := c.DeleteHead(ctx, "t", "c3", l.Writer); err != nil {
				t.Fatalf("DeleteHead: %v", err)
			}
			if h, err := c.GetHead(ctx, "t"); err != nil || h != "c2" {
				t.Fatalf("Head = %q, %v", h, err)
			}
			if _, err := c.DeleteCheckpoints(ctx, "t", 1, l.Writer); err != nil {
				t.Fatalf("DeleteCheckpoints: %v", err)
			}
			ld, err := c.AcquireWriter(ctx, "d")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := c.ForkFromCheckpoint(ctx, ckptstore.ForkInput{SourceThreadID: "t", SourceCheckpointID: "c2",
				DestinationThreadID: "d", DestinationCheckpointID: "dc", CreatedAt: 5, Writer: ld.Writer}); err != nil {
				t.Fatalf("fork: %v", err)
			}
			if err := c.SaveThread(ctx, "t", []byte(`["m"]`)); err != nil {
				t.Fatalf("SaveThread: %v", err)
			}
			cps, err := c.List(ctx, "t")
			if err != nil || len(cps) != 1 || cps[0].ID != "c2" {
				t.Errorf("List(t) = %v, %v; want [c2]", cps, err)
			}
			for _, m := range writes {
				k := f.keys[m]
				if len(k) < 2 || k[0] == "" || k[0] != k[1] {
					t.Errorf("%s: attempts with keys %q, want a retry with the first key", m, k)
				}
			}
			if len(f.keys["getHead"]) != 2 || f.keys["getHead"][0] != "" {
				t.Errorf("getHead: attempts %q, want a retry without a key", f.keys["getHead"])
			}
		})
	}
}

// TestNoRetryOnAnswer: a contract error is the answer; it is not retried.
func TestNoRetryOnAnswer(t *testing.T) {
	addr, _ := serve(t, "mem", storeurl.Options{})
	f := &flaky{next: httpstore.NewTransport(), keys: map[string][]string{}}
	c, _ := httpstore.NewClient(addr, httpstore.ClientOptions{Namespace: "answer", HTTPClient: &http.Client{Transport: f}})
	ctx := context.Background()
	if _, err := c.AcquireWriter(ctx, "t"); err != nil {
		t.Fatal(err)
	}
	_, err := c.AcquireWriter(ctx, "t")
	var he *httpstore.Error
	if !errors.Is(err, ckptstore.ErrWriterConflict) || ckptstore.Code(err) != driver.CodeWriterConflict || !errors.As(err, &he) || he.Status != 409 {
		t.Errorf("a held lease: %v", err)
	}
	if n := len(f.keys["acquireWriter"]); n != 2 {
		t.Errorf("%d attempts for two calls", n)
	}
}

func TestNewClientRefuses(t *testing.T) {
	for _, url := range []string{"", "ftp://x", "127.0.0.1:7070", "http://"} {
		if _, err := httpstore.NewClient(url, httpstore.ClientOptions{}); err == nil {
			t.Errorf("NewClient(%q) accepted", url)
		}
	}
	if _, err := httpstore.NewClient("http://x", httpstore.ClientOptions{Lease: ckptstore.Options{RenewAfter: time.Hour}}); !errors.Is(err, driver.ErrInvalidOptions) {
		t.Errorf("bad lease options: %v", err)
	}
	if _, err := httpstore.NewClient("http://x", httpstore.ClientOptions{Namespace: "\xff"}); err == nil {
		t.Error("an invalid namespace accepted")
	}
}

// TestTooLargeWhileReused: the server refuses bodies above its limit
// before reading them, so the transport may still be sending one after the
// reply; concurrent calls reuse body buffers meanwhile (the race detector
// watches), and every small call still succeeds.
func TestTooLargeWhileReused(t *testing.T) {
	o, err := storeurl.Open(context.Background(), "mem", storeurl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(httpstore.NewHandler(o, httpstore.HandlerOptions{Dev: true, MaxBodyBytes: 64 << 10}))
	defer srv.Close()
	c, _ := httpstore.NewClient(srv.URL, httpstore.ClientOptions{Namespace: "big"})
	ctx := context.Background()
	big := []byte(`["` + strings.Repeat("x", 1<<20) + `"]`)
	done := make(chan error, 8)
	for i := range 8 {
		go func() {
			th := fmt.Sprintf("t%d", i)
			for range 5 {
				var he *httpstore.Error
				if err := c.SaveThread(ctx, th, big); !errors.As(err, &he) || he.Status != 413 {
					done <- fmt.Errorf("a body above the limit: %v", err)
					return
				}
				if err := c.SaveThread(ctx, th, []byte(`["small"]`)); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// TestBlobReferencesWire pins listBlobReferences' reply to TanStack's
// element shape, {key, references}: a TypeScript harness passes the array
// through as is, so a renamed field would read as undefined there and make
// a sweep delete blobs in use.
func TestBlobReferencesWire(t *testing.T) {
	addr, _ := serve(t, "mem", storeurl.Options{})
	h := []string{"Ckpt-Namespace", "refs-wire"}
	status, reply := call(t, addr, "acquireWriter", `{"threadId":"t"}`, h...)
	if status != 200 {
		t.Fatalf("acquireWriter: %d %s", status, reply)
	}
	tok := reply[strings.Index(reply, `"ownerToken":`)+len(`"ownerToken":`):]
	tok = tok[:strings.Index(tok, `,`)]
	key := `"sandbox-files/sha256/` + strings.Repeat("a", 64) + `"`
	body := `{"checkpoint":{"id":"c","threadId":"t","parentCheckpointId":null,"createdAt":1,"reason":"automatic",` +
		`"files":[{"path":"a","kind":"file","blobKey":` + key + `,"size":1}],"conversation":[],"artifacts":[]},` +
		`"expectedHeadId":null,"writer":{"threadId":"t","ownerToken":` + tok + `,"fence":1}}`
	if status, reply := call(t, addr, "append", body, h...); status != 200 {
		t.Fatalf("append: %d %s", status, reply)
	}
	want := `{"references":[{"key":` + key + `,"references":1}]}`
	if status, reply := call(t, addr, "listBlobReferences", `{}`, h...); status != 200 || reply != want {
		t.Errorf("listBlobReferences: %d %s, want %s", status, reply, want)
	}
}
