package httpstore_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ckptstore/ckptstore/httpstore"
	"github.com/ckptstore/ckptstore/storeurl"
)

// budgetHandler is a --dev handler on memstore with the given limits, and
// a function that reads its body bytes in flight from its metrics.
func budgetHandler(t *testing.T, maxBody, maxInflight int64) (http.Handler, func() float64) {
	t.Helper()
	o, err := storeurl.Open(context.Background(), "mem", storeurl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.Close() })
	reg := prometheus.NewRegistry()
	h := httpstore.NewHandler(o, httpstore.HandlerOptions{Dev: true, MaxBodyBytes: maxBody, MaxInflightBytes: maxInflight, Registerer: reg})
	inFlight := func() float64 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == "ckptstore_http_body_bytes_in_flight" {
				return mf.GetMetric()[0].GetGauge().GetValue()
			}
		}
		t.Fatal("no ckptstore_http_body_bytes_in_flight")
		return 0
	}
	return h, inFlight
}

// counting is a body of n bytes that counts what was read of it.
type counting struct{ n, read int64 }

func (c *counting) Read(p []byte) (int, error) {
	if c.read >= c.n {
		return 0, io.EOF
	}
	k := min(int64(len(p)), c.n-c.read)
	for i := range p[:k] {
		p[i] = ' '
	}
	c.read += k
	return int(k), nil
}

// do serves one request in the calling goroutine and returns its status,
// code and Retry-After.
func do(h http.Handler, method string, body io.Reader, length int64) (int, string, string) {
	req := httptest.NewRequest(http.MethodPost, "/v1/"+method, body)
	req.ContentLength = length
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	var e struct{ Code string }
	_ = json.Unmarshal(rec.Body.Bytes(), &e)
	return rec.Code, e.Code, rec.Header().Get("Retry-After")
}

// TestBodyLimitReads: a body above the limit is refused having read at
// most the limit and one piece (256 KiB) of it, chunked or not, and
// leaves no byte of the budget taken.
func TestBodyLimitReads(t *testing.T) {
	const limit = 1 << 20
	h, inFlight := budgetHandler(t, limit, 0)
	for _, method := range []string{"get", "saveThread", "runs/createOrResume"} {
		for _, length := range []int64{-1, 50 << 20} {
			body := &counting{n: 50 << 20}
			status, code, _ := do(h, method, body, length)
			if status != http.StatusRequestEntityTooLarge || code != httpstore.CodePayloadTooLarge {
				t.Errorf("%s, Content-Length %d: %d %s, want 413 PAYLOAD_TOO_LARGE", method, length, status, code)
			}
			if body.read > limit+256<<10 {
				t.Errorf("%s, Content-Length %d: read %d bytes before the refusal, more than the limit and one piece", method, length, body.read)
			}
		}
	}
	// A chunked body within the limit, in several pieces, is served whole.
	status, code, _ := do(h, "saveThread", strings.NewReader(`{"threadId":"t","messages":[`+strings.Repeat(" ", 900<<10)+`]}`), -1)
	if status != http.StatusOK {
		t.Errorf("a chunked saveThread of 900 KiB: %d %s", status, code)
	}
	if v := inFlight(); v != 0 {
		t.Errorf("body bytes in flight after the requests: %v", v)
	}
}

// TestBodyBudget: past the in-flight budget a request gets 503 OVERLOADED
// with Retry-After, a small request still gets in (the budget's last
// eighth is kept for them), and a request whose body is cut gives its
// reservation back.
func TestBodyBudget(t *testing.T) {
	const limit = 4 << 20
	h, inFlight := budgetHandler(t, limit, 2*limit)
	pr, pw := io.Pipe()
	done := make(chan int)
	go func() {
		status, _, _ := do(h, "saveThread", pr, limit) // blocks reading its body
		done <- status
	}()
	for deadline := time.Now().Add(10 * time.Second); inFlight() != limit; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the blocked request holds %v bytes, want %d", inFlight(), limit)
		}
	}
	// 3.5 MiB more would fit in the budget (8 MiB) but not in the 7/8 of
	// it that requests above 1 MiB may hold.
	const more = 7 << 19
	if status, code, after := do(h, "saveThread", &counting{n: more}, more); status != http.StatusServiceUnavailable ||
		code != httpstore.CodeOverloaded || after == "" {
		t.Errorf("a second body of 3.5 MiB: %d %s Retry-After %q, want 503 OVERLOADED with Retry-After", status, code, after)
	}
	if status, code, _ := do(h, "getHead", strings.NewReader(`{"threadId":"t"}`), 16); status != http.StatusOK {
		t.Errorf("a small request beside it: %d %s, want 200", status, code)
	}
	pw.CloseWithError(context.Canceled)
	if status := <-done; status != http.StatusBadRequest {
		t.Errorf("the cut request: %d, want 400", status)
	}
	if v := inFlight(); v != 0 {
		t.Errorf("body bytes in flight after the cut request: %v, want 0", v)
	}
}

// TestBudgetBelowBody: a budget smaller than one body is a configuration
// error, refused when the handler is built.
func TestBudgetBelowBody(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("NewHandler accepted MaxInflightBytes below MaxBodyBytes")
		}
	}()
	httpstore.NewHandler(nil, httpstore.HandlerOptions{Dev: true, MaxBodyBytes: 2 << 20, MaxInflightBytes: 1 << 20})
}
