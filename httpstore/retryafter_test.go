package httpstore_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore/httpstore"
)

// overloadedOnce answers its first request 503 OVERLOADED with the given
// Retry-After, then a head reply; it counts the requests.
func overloadedOnce(t *testing.T, retryAfter string) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if n.Add(1) == 1 {
			if retryAfter != "" {
				w.Header().Set("Retry-After", retryAfter)
			}
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"code":"OVERLOADED","message":"busy"}`))
			return
		}
		_, _ = w.Write([]byte(`{"head":""}`))
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// TestClientKeepsRetryAfter: a 503's Retry-After reaches the caller's
// Error, bounded, and only a 503 carries one.
func TestClientKeepsRetryAfter(t *testing.T) {
	for _, c := range []struct {
		header string
		want   time.Duration
	}{{"2", 2 * time.Second}, {"", 0}, {"soon", 0}, {"-1", 0}, {"3600", 10 * time.Second}} {
		srv, _ := overloadedOnce(t, c.header)
		cl, err := httpstore.NewClient(srv.URL, httpstore.ClientOptions{Retries: -1})
		if err != nil {
			t.Fatal(err)
		}
		_, err = cl.GetHead(context.Background(), "t")
		e, ok := errors.AsType[*httpstore.Error](err)
		if !ok || e.Code != httpstore.CodeOverloaded || e.RetryAfter != c.want {
			t.Errorf("Retry-After %q: got %v, want OVERLOADED with RetryAfter %v", c.header, err, c.want)
		}
	}
}

// TestClientWaitsRetryAfter: the retry of a 503 waits at least what its
// Retry-After asked, so a call whose deadline comes first ends with the
// 503 instead of retrying at once (which would have succeeded); without
// the header the same call succeeds on its retry.
func TestClientWaitsRetryAfter(t *testing.T) {
	for _, header := range []string{"2", ""} {
		srv, n := overloadedOnce(t, header)
		cl, err := httpstore.NewClient(srv.URL, httpstore.ClientOptions{Retries: 1})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		_, err = cl.GetHead(ctx, "t")
		cancel()
		e, _ := errors.AsType[*httpstore.Error](err)
		if header != "" && (e == nil || e.Code != httpstore.CodeOverloaded || n.Load() != 1) {
			t.Errorf("Retry-After 2 under a 500 ms deadline: got %v after %d requests, want the 503 after 1", err, n.Load())
		}
		if header == "" && (err != nil || n.Load() != 2) {
			t.Errorf("no Retry-After: got %v after %d requests, want success on the second", err, n.Load())
		}
	}
}
