package redisstore

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/internal/redistest"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

// TestRestartKeepsAcknowledgedAppends kills a redis-server that runs with
// appendonly yes and appendfsync always (SIGKILL, while writers append),
// restarts it from its AOF, and checks that every Append that returned
// success is there, byte for byte, that each head is the last acknowledged
// append or the one in flight at the kill, and that the blob counts equal
// a recount (a script cut off by the kill is all or nothing).
func TestRestartKeepsAcknowledgedAppends(t *testing.T) {
	const workers, maxOps, killAfter = 4, 5000, 300
	srv := redistest.Start(t, "--appendonly", "yes", "--appendfsync", "always")
	c := srv.Client(t, &redis.Options{MaxRetries: 1, DialTimeout: time.Second})
	clk := newClock()
	s := newStore(t, c, Options{Options: ckptstore.Options{Now: clk.Now}})

	var acked atomic.Int64
	kill := make(chan struct{})
	killed := make(chan struct{})
	go func() {
		<-kill
		srv.Kill()
		close(killed)
	}()
	var once sync.Once
	// ack counts one acknowledged append; the killAfter-th has the server
	// killed.
	ack := func() {
		if acked.Add(1) == killAfter {
			once.Do(func() { close(kill) })
		}
	}
	results := make([]restartResult, workers)
	var wg sync.WaitGroup
	for wi := range workers {
		wg.Go(func() { results[wi] = appendUntilKilled(t, s, wi, maxOps, ack) })
	}
	wg.Wait()
	once.Do(func() { close(kill) }) // in case the writers failed early
	<-killed
	if acked.Load() < killAfter {
		t.Fatalf("only %d appends before the kill", acked.Load())
	}
	var inFlight int
	for _, r := range results {
		if r.inFlight != nil {
			inFlight++
		}
	}
	if inFlight == 0 {
		t.Fatal("no writer was appending when the server was killed")
	}

	srv.Restart(t)
	var threads []string
	for _, r := range results {
		threads = append(threads, r.thread)
		r.checkAfterRestart(t, s)
	}
	testkit.CheckRefs(t, s.p(), threads...)
	t.Logf("%d appends acknowledged before the kill, %d in flight", acked.Load(), inFlight)
}

// restartResult is what one writer of TestRestartKeepsAcknowledgedAppends
// saw.
type restartResult struct {
	thread   string
	ok       []*ckptstore.Checkpoint // acknowledged, in order
	inFlight *ckptstore.Checkpoint   // the append that failed, outcome unknown
}

// appendUntilKilled is writer wi: it appends to thread r<wi> until an
// Append fails (the kill) or maxOps are done, calling ack after each
// acknowledged one.
func appendUntilKilled(t *testing.T, s *Driver, wi, maxOps int, ack func()) restartResult {
	ctx := context.Background()
	r := restartResult{thread: fmt.Sprintf("r%d", wi)}
	l, err := s.p().AcquireWriter(ctx, r.thread)
	if err != nil {
		t.Error(err)
		return r
	}
	head := ""
	for n := range maxOps {
		cp := testkit.Checkpoint(r.thread, fmt.Sprintf("%s-%d", r.thread, n), head, float64(n), n%50, wi)
		if err := s.p().Append(ctx, cp, head, l.Writer); err != nil {
			if ckptstore.Code(err) != "" {
				t.Errorf("append %s: %v", cp.ID, err)
			}
			r.inFlight = cp
			return r
		}
		r.ok = append(r.ok, cp)
		head = cp.ID
		ack()
	}
	return r
}

// checkAfterRestart checks that every acknowledged append of r is stored
// byte for byte and that the head is the last of them or the one in
// flight.
func (r restartResult) checkAfterRestart(t *testing.T, s *Driver) {
	ctx := context.Background()
	for _, want := range r.ok {
		got, err := s.p().Get(ctx, want.ID)
		must(t, err)
		require.Equal(t, want, got, "%s after the restart", want.ID)
	}
	head, err := s.p().GetHead(ctx, r.thread)
	must(t, err)
	last := ""
	if len(r.ok) > 0 {
		last = r.ok[len(r.ok)-1].ID
	}
	if head != last && (r.inFlight == nil || head != r.inFlight.ID) {
		t.Fatalf("thread %s: head %q after the restart, want %q or the in-flight append", r.thread, head, last)
	}
}
