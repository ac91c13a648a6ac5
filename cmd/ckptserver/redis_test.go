package main

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/httpstore"
	"github.com/ckptstore/ckptstore/internal/redistest"
)

// TestSentinelStore serves a primary with a replica under a Sentinel, on
// its redis+sentinel:// URL with min_replicas=1: writes and reads go
// through, /readyz is 200 while the store answers, and turns 503 once the
// primary is gone (the Sentinel alone answers nothing about the data).
func TestSentinelStore(t *testing.T) {
	g := redistest.StartGroup(t, redistest.GroupOptions{Replicas: 1, Sentinels: 1, Quorum: 1, DownAfter: time.Minute})
	s := start(t, "--dev", "--listen", "127.0.0.1:0", "--store", g.URL("prefix=srv&min_replicas=1&replica_timeout=2s"))
	ctx := context.Background()
	c, err := httpstore.NewClient(s.url, httpstore.ClientOptions{Namespace: "sentinel-test", Retries: -1})
	if err != nil {
		t.Fatal(err)
	}
	l, err := c.AcquireWriter(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	cp := &ckptstore.Checkpoint{ID: "c1", ThreadID: "t", CreatedAt: 1, Reason: ckptstore.ReasonAutomatic}
	if err := c.Append(ctx, cp, "", l.Writer); err != nil {
		t.Fatalf("Append behind the Sentinel, waiting for the replica: %v", err)
	}
	if h, err := c.GetHead(ctx, "t"); err != nil || h != "c1" {
		t.Fatalf("Head = %q, %v", h, err)
	}
	if code, body := get(t, s.url+"/readyz"); code != 200 {
		t.Fatalf("/readyz with the store up: %d %q", code, body)
	}
	g.Primary.Kill() // down-after is a minute: no failover, the store is down
	if code, body := get(t, s.url+"/readyz"); code != 503 || !strings.Contains(body, "does not answer") {
		t.Errorf("/readyz with the primary killed: %d %q, want 503", code, body)
	}
}

// TestStartWithoutStore: a server whose Redis is down starts anyway, not
// ready: /readyz and the API answer 503 UNAVAILABLE (the protocol's JSON,
// which clients retry) and it retries opening the store, logging each
// failure. Once Redis is up on that address, /readyz turns 200 and a
// request is served.
func TestStartWithoutStore(t *testing.T) {
	r := redistest.Start(t)
	r.Kill() // its port is free now, and Restart reuses it
	s := start(t, "--dev", "--listen", "127.0.0.1:0", "--store", "redis://"+r.Addr+"/0?prefix=start")
	hc := &http.Client{}
	code, body := get(t, s.url+"/readyz")
	if code != 503 || !strings.Contains(body, `"code":"UNAVAILABLE"`) || !strings.Contains(body, "not open yet") || !strings.Contains(body, r.Addr) {
		t.Errorf("/readyz with Redis down: %d %q, want 503 UNAVAILABLE and the reason", code, body)
	}
	code, body = post(t, hc, s.url+"/v1/getHead", `{"threadId":"t"}`)
	if code != 503 || !strings.Contains(body, `"code":"UNAVAILABLE"`) || !strings.Contains(body, "not open yet") {
		t.Errorf("a request with Redis down: %d %q, want 503 UNAVAILABLE", code, body)
	}
	// It retries: a second failed attempt is logged before Redis comes up.
	for !strings.Contains(s.errs.String(), `"attempt":2`) {
		time.Sleep(10 * time.Millisecond)
	}
	r.Restart(t)
	for {
		if code, _ = get(t, s.url+"/readyz"); code == 200 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code, body = post(t, hc, s.url+"/v1/getHead", `{"threadId":"t"}`); code != 200 || body != `{"headId":null}` {
		t.Errorf("a request once Redis is up: %d %q", code, body)
	}
	log := s.errs.String()
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		if !json.Valid([]byte(line)) {
			t.Errorf("a log line is not JSON: %s", line)
		}
	}
	for _, want := range []string{`"msg":"the store cannot be opened; not ready, retrying"`, `"retry_in":0.`, `"msg":"the store is open: ready"`,
		`"level":"WARN","msg":"go-redis","detail":"redis: connection pool: failed to dial`} {
		if !strings.Contains(log, want) {
			t.Errorf("the log lacks %s:\n%s", want, log)
		}
	}
}
