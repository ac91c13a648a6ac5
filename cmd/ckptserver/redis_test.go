package main

import (
	"context"
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
