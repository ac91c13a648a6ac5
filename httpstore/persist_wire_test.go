package httpstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/blobs"
	"github.com/ckptstore/ckptstore/httpstore"
	"github.com/ckptstore/ckptstore/memstore"
	"github.com/ckptstore/ckptstore/persist"
	"github.com/ckptstore/ckptstore/storeurl"
)

// persistServer starts a handler over memBackend (its Backend
// path) with a memory bucket, or none.
func persistServer(t *testing.T, bucket bool, opts httpstore.HandlerOptions) string {
	t.Helper()
	if bucket {
		opts.Bucket = blobs.NewMem(blobs.MemOptions{})
	}
	srv := httptest.NewServer(httpstore.NewHandler(memBackend{}, opts))
	t.Cleanup(srv.Close)
	return srv.URL
}

// post sends one raw request and returns the status, the error code (if
// the reply is an error object) and the body.
func post(t *testing.T, base, method, body string, hdr ...string) (int, string, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/v1/"+method, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var e struct{ Code string }
	if resp.StatusCode != http.StatusOK {
		_ = json.Unmarshal(b, &e)
	}
	return resp.StatusCode, e.Code, b
}

// TestPersistWireErrors: faults of the request map to their codes and
// statuses, ids strictly (invalid UTF-8 and lone surrogates are
// PERSIST_INVALID_ID, before any other field's fault).
func TestPersistWireErrors(t *testing.T) {
	base := persistServer(t, true, httpstore.HandlerOptions{Dev: true})
	for _, c := range []struct {
		method, body string
		status       int
		code         string
	}{
		{"runs/get", "{\"runId\":\"a\xffb\"}", 400, "PERSIST_INVALID_ID"},
		{"runs/get", `{"runId":"a\ud800b"}`, 400, "PERSIST_INVALID_ID"},
		{"runs/get", `{"runId":5}`, 400, "PERSIST_INVALID_ID"},
		{"runs/get", `{}`, 400, "PERSIST_INVALID_ID"},
		{"runs/createOrResume", `{"startedAt":"x","runId":"\udc00","threadId":"t"}`, 400, "PERSIST_INVALID_ID"},
		{"runs/createOrResume", `{"runId":"r","threadId":"t","startedAt":1.5}`, 400, "PERSIST_INVALID_ENTRY"},
		{"runs/createOrResume", `{"runId":"r","threadId":"t","startedAt":1,"status":"done"}`, 400, "PERSIST_INVALID_ENTRY"},
		{"runs/update", `{"runId":"r","patch":{"status":null}}`, 400, "PERSIST_INVALID_ENTRY"},
		{"runs/update", `{"runId":"r","patch":{"nope":1}}`, 400, "PERSIST_INVALID_ENTRY"},
		{"runs/get", `[]`, 400, "BAD_REQUEST"},
		{"runs/get", `{"runId":"r"`, 400, "BAD_REQUEST"},
		{"runs/get", `{"runId":"r","extra":1}`, 400, "BAD_REQUEST"},
		{"generationRuns/createOrResume", "{\"runId\":\"r\",\"threadId\":\"t\",\"startedAt\":1,\"activity\":\"a\xff\"}", 400, "PERSIST_INVALID_ENTRY"},
		{"interrupts/commitBatch", `{"entries":[{"interruptId":"i","status":"resolved"},{"interruptId":"i","status":"cancelled"}]}`, 409, "PERSIST_BATCH_DUPLICATE_ID"},
		{"interrupts/commitBatch", `{"entries":[{"interruptId":"missing","status":"resolved"}]}`, 409, "PERSIST_BATCH_MISSING_ID"},
		{"metadata/get", `{"namespace":"","key":"k"}`, 400, "PERSIST_INVALID_ID"},
		{"locks/renew", `{"key":"k","token":"nobody"}`, 409, "PERSIST_LOCK_LOST"},
		{"locks/acquire", `{"key":"k","token":"t","waitMs":30001}`, 400, "PERSIST_INVALID_ENTRY"},
		{"locks/acquire", `{"key":"k","token":""}`, 400, "PERSIST_INVALID_ID"},
		{"locks/acquire", `{"key":"k","token":"\ud800"}`, 400, "PERSIST_INVALID_ID"},
		{"locks/acquire", `{"key":"k","token":"` + strings.Repeat("t", 1025) + `"}`, 400, "PERSIST_INVALID_ID"},
		{"blobs/get", `{"key":"k","range":{"offset":-1}}`, 400, "PERSIST_INVALID_ENTRY"},
		{"nope/get", `{}`, 404, "NOT_FOUND"},
	} {
		status, code, body := post(t, base, c.method, c.body)
		require.Equal(t, c.status, status, "%s %s: %s", c.method, c.body, body)
		require.Equal(t, c.code, code, "%s %s: %s", c.method, c.body, body)
	}
}

// TestPersistWireShapes: replies are TanStack's shapes; an absent record
// is null; a patch's null clears; JSON values come back byte for byte.
func TestPersistWireShapes(t *testing.T) {
	base := persistServer(t, true, httpstore.HandlerOptions{Dev: true})
	st, _, b := post(t, base, "runs/createOrResume", `{"runId":"r","threadId":"t","startedAt":5}`)
	require.Equal(t, 200, st)
	require.JSONEq(t, `{"run":{"runId":"r","threadId":"t","status":"running","startedAt":5}}`, string(b))
	st, _, _ = post(t, base, "runs/update", `{"runId":"r","patch":{"usage":{ "t" : 1 },"sandboxKey":"sb"}}`)
	require.Equal(t, 200, st)
	_, _, b = post(t, base, "runs/get", `{"runId":"r"}`)
	require.Contains(t, string(b), `"usage":{ "t" : 1 }`, "a JSON value is kept byte for byte")
	post(t, base, "runs/update", `{"runId":"r","patch":{"sandboxKey":null}}`)
	_, _, b = post(t, base, "runs/get", `{"runId":"r"}`)
	require.NotContains(t, string(b), "sandboxKey", "null in a patch clears the field")
	_, _, b = post(t, base, "runs/get", `{"runId":"none"}`)
	require.JSONEq(t, `{"run":null}`, string(b))
	_, _, b = post(t, base, "metadata/get", `{"namespace":"n","key":"k"}`)
	require.JSONEq(t, `{"value":null}`, string(b))
	post(t, base, "interrupts/create", `{"record":{"interruptId":"i","runId":"r","threadId":"t","requestedAt":1,"payload":{}}}`)
	post(t, base, "interrupts/resolve", `{"interruptId":"i","response":null}`)
	_, _, b = post(t, base, "interrupts/get", `{"interruptId":"i"}`)
	var got struct{ Interrupt map[string]json.RawMessage }
	require.NoError(t, json.Unmarshal(b, &got))
	require.Equal(t, "null", string(got.Interrupt["response"]), "a present null response is the value null")
	require.Equal(t, `"resolved"`, string(got.Interrupt["status"]))
}

// TestPersistCommitBatchIdempotencyKey: a commitBatch retried with its
// Idempotency-Key succeeds; without it, the retry is NOT_PENDING.
func TestPersistCommitBatchIdempotencyKey(t *testing.T) {
	base := persistServer(t, false, httpstore.HandlerOptions{Dev: true})
	for _, id := range []string{"a", "b"} {
		st, _, b := post(t, base, "interrupts/create", `{"record":{"interruptId":"`+id+`","runId":"r","threadId":"t","requestedAt":1,"payload":{}}}`)
		require.Equal(t, 200, st, string(b))
	}
	batch := `{"entries":[{"interruptId":"a","status":"resolved","response":1}]}`
	st, _, _ := post(t, base, "interrupts/commitBatch", batch, "Idempotency-Key", "batch-1")
	require.Equal(t, 200, st)
	st, _, _ = post(t, base, "interrupts/commitBatch", batch, "Idempotency-Key", "batch-1")
	require.Equal(t, 200, st, "the retry of a committed batch succeeds")
	_, code, _ := post(t, base, "interrupts/commitBatch", batch, "Idempotency-Key", "batch-2")
	require.Equal(t, "PERSIST_BATCH_NOT_PENDING", code)
}

// TestPersistBlobWire: a put streams a chunked body with the key in its
// header; a get streams the bytes with the record in its header; absent is
// JSON null; a range outside the object is 416; no bucket is 501.
func TestPersistBlobWire(t *testing.T) {
	base := persistServer(t, true, httpstore.HandlerOptions{Dev: true})
	pr, pw := io.Pipe()
	go func() {
		for range 3 {
			_, _ = pw.Write(bytes.Repeat([]byte("x"), 1000))
		}
		pw.Close()
	}()
	req, err := http.NewRequest(http.MethodPost, base+"/v1/blobs/put", pr)
	require.NoError(t, err)
	// A pipe has no length (ContentLength 0 with a body): the transport
	// sends it chunked.
	req.Header.Set("Content-Type", "application/octet-stream")
	req.Header.Set(httpstore.HeaderBlobPut, url.PathEscape(`{"key":"k/é","contentType":"text/plain"}`))
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, 200, resp.StatusCode, string(b))
	var put struct{ Blob persist.BlobRecord }
	require.NoError(t, json.Unmarshal(b, &put))
	require.EqualValues(t, 3000, put.Blob.Size)
	require.Equal(t, "k/é", put.Blob.Key)

	req, _ = http.NewRequest(http.MethodPost, base+"/v1/blobs/get", strings.NewReader(`{"key":"k/é","range":{"offset":2990}}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, "application/octet-stream", resp.Header.Get("Content-Type"))
	require.Equal(t, strings.Repeat("x", 10), string(b))
	meta, err := url.PathUnescape(resp.Header.Get(httpstore.HeaderBlob))
	require.NoError(t, err)
	require.JSONEq(t, `{"offset":2990,"length":10}`, string(jsonField(t, meta, "range")))

	_, _, b = post(t, base, "blobs/get", `{"key":"missing"}`)
	require.JSONEq(t, `{"blob":null}`, string(b))
	st, code, _ := post(t, base, "blobs/get", `{"key":"k/é","range":{"offset":3000}}`)
	require.Equal(t, 416, st)
	require.Equal(t, "PERSIST_RANGE_NOT_SATISFIABLE", code)

	none := persistServer(t, false, httpstore.HandlerOptions{Dev: true})
	st, code, _ = post(t, none, "blobs/head", `{"key":"k"}`)
	require.Equal(t, 501, st)
	require.Equal(t, "UNSUPPORTED", code)
	c, err := httpstore.NewClient(none, httpstore.ClientOptions{})
	require.NoError(t, err)
	_, err = c.Persistence().Blobs.Head(context.Background(), "k")
	require.ErrorIs(t, err, errors.ErrUnsupported)
}

func jsonField(t *testing.T, obj, name string) json.RawMessage {
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(obj), &m))
	return m[name]
}

// TestPersistNoBackend: a backend without persistence answers 501.
func TestPersistNoBackend(t *testing.T) {
	srv := httptest.NewServer(httpstore.NewHandler(checkpointsOnly{}, httpstore.HandlerOptions{Dev: true}))
	t.Cleanup(srv.Close)
	st, code, _ := post(t, srv.URL, "runs/get", `{"runId":"r"}`)
	require.Equal(t, 501, st)
	require.Equal(t, "UNSUPPORTED", code)
}

type checkpointsOnly struct{}

func (checkpointsOnly) Namespace(_ string, lease ckptstore.Options) (*storeurl.Tenant, error) {
	return &storeurl.Tenant{Store: memstore.New(lease), Instances: memstore.NewInstanceStore()}, nil
}

// TestPersistDevClockLongPoll: in --dev, an acquire that waits does not
// hold the namespace's clock, so a release sent with Ckpt-Now while it
// waits is served and wakes it (were the clock held, the release would
// wait out the acquire, which would then answer not held).
func TestPersistDevClockLongPoll(t *testing.T) {
	base := persistServer(t, false, httpstore.HandlerOptions{Dev: true})
	now := "1700000000000"
	st, _, b := post(t, base, "locks/acquire", `{"key":"k","token":"a"}`, httpstore.HeaderNow, now)
	require.Equal(t, 200, st, string(b))
	require.Equal(t, "true", string(jsonField(t, string(b), "held")))
	got := make(chan []byte, 1)
	go func() {
		_, _, b := post(t, base, "locks/acquire", `{"key":"k","token":"b","waitMs":20000}`, httpstore.HeaderNow, now)
		got <- b
	}()
	// Give b's request time to reach its wait on the server. Were it
	// not there yet, the release would come first and the case would
	// pass without testing the wait: the sleep can only weaken the case,
	// never fail it.
	time.Sleep(100 * time.Millisecond)
	st, _, b = post(t, base, "locks/release", `{"key":"k","token":"a"}`, httpstore.HeaderNow, now)
	require.Equal(t, 200, st, string(b))
	require.Equal(t, "true", string(jsonField(t, string(<-got), "held")), "the waiting acquire was not granted by the release")
}

// TestPersistDevClockStamps: the Go client's Ckpt-Now is the store's
// clock in --dev: resolvedAt and blob times are stamped with it.
func TestPersistDevClockStamps(t *testing.T) {
	base := persistServer(t, true, httpstore.HandlerOptions{Dev: true})
	at := time.UnixMilli(1_650_000_000_000)
	c, err := httpstore.NewClient(base, httpstore.ClientOptions{Namespace: "clock", Lease: ckptstore.Options{Now: func() time.Time { return at }}})
	require.NoError(t, err)
	p, ctx := c.Persistence(), context.Background()
	require.NoError(t, p.Interrupts.Create(ctx, persist.NewInterrupt{InterruptID: "i", RunID: "r", ThreadID: "t", RequestedAt: 1, Payload: json.RawMessage(`{}`)}))
	require.NoError(t, p.Interrupts.Resolve(ctx, "i", nil))
	rec, err := p.Interrupts.Get(ctx, "i")
	require.NoError(t, err)
	require.Equal(t, at.UnixMilli(), *rec.ResolvedAt)
	blob, err := p.Blobs.Put(ctx, "b", strings.NewReader("bytes"), persist.BlobPutOptions{})
	require.NoError(t, err)
	require.Equal(t, at.UnixMilli(), blob.CreatedAt)
}

// lossy is a transport that loses the reply of the first attempt of each
// call to one route (the server did the work) and counts the attempts.
type lossy struct {
	next     http.RoundTripper
	route    string
	attempts atomic.Int32
	keys     []string
}

func (f *lossy) RoundTrip(req *http.Request) (*http.Response, error) {
	if !strings.HasSuffix(req.URL.Path, f.route) {
		return f.next.RoundTrip(req)
	}
	f.keys = append(f.keys, req.Header.Get("Idempotency-Key"))
	resp, err := f.next.RoundTrip(req)
	if f.attempts.Add(1) == 1 && err == nil {
		resp.Body.Close()
		return nil, io.ErrUnexpectedEOF // the reply is lost
	}
	return resp, err
}

// TestPersistClientRetries: a commitBatch whose reply is lost is retried
// with the same Idempotency-Key and succeeds; a blob put is retried when
// its body is a Seeker and not when it is a plain reader.
func TestPersistClientRetries(t *testing.T) {
	base := persistServer(t, true, httpstore.HandlerOptions{Dev: true})
	ctx := context.Background()
	client := func(route string) (*persist.Store, *lossy) {
		f := &lossy{next: httpstore.NewTransport(), route: route}
		c, err := httpstore.NewClient(base, httpstore.ClientOptions{Namespace: "retry-" + route[:5], HTTPClient: &http.Client{Transport: f}, RetryBackoff: time.Millisecond})
		require.NoError(t, err)
		return c.Persistence(), f
	}
	p, f := client("interrupts/commitBatch")
	require.NoError(t, p.Interrupts.Create(ctx, persist.NewInterrupt{InterruptID: "i", RunID: "r", ThreadID: "t", RequestedAt: 1, Payload: json.RawMessage(`{}`)}))
	require.NoError(t, p.Interrupts.CommitBatch(ctx, []persist.InterruptCommitEntry{{InterruptID: "i", Status: persist.InterruptCancelled}}))
	require.EqualValues(t, 2, f.attempts.Load())
	require.Len(t, f.keys, 2)
	require.NotEmpty(t, f.keys[0])
	require.Equal(t, f.keys[0], f.keys[1], "the retry carries the batch's Idempotency-Key")

	p, f = client("blobs/put")
	rec, err := p.Blobs.Put(ctx, "k", bytes.NewReader([]byte("replayable")), persist.BlobPutOptions{})
	require.NoError(t, err)
	require.EqualValues(t, 10, rec.Size)
	require.EqualValues(t, 2, f.attempts.Load(), "a Seeker body is sent again")

	p, f = client("blobs/put")
	_, err = p.Blobs.Put(ctx, "k2", io.MultiReader(strings.NewReader("once")), persist.BlobPutOptions{})
	require.Error(t, err)
	require.EqualValues(t, 1, f.attempts.Load(), "a body that cannot be replayed is not sent again")
}
