package redisstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/internal/redistest"
	"github.com/ckptstore/ckptstore/redisstore"
	"github.com/ckptstore/ckptstore/storeurl"
	"github.com/ckptstore/ckptstore/streams"
	"github.com/ckptstore/ckptstore/streams/streamstest"
)

// TestStreamsLostReplies: with a proxy that loses replies and requests
// at random, a producer retrying each append until it has an answer
// leaves every append exactly once, in order: the producer check commits
// with the data, so a retry after a lost reply to the commit script is a
// duplicate, never a second copy. With MaxRetries -1 the client never
// resends and the caller retries; with 20 the client resends the scripts
// itself (a resent commit script meets the state it left and refuses).
func TestStreamsLostReplies(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	for i, retries := range []int{-1, 20} {
		proxy := redistest.NewProxy(t, srv.Addr)
		c := redistest.NewClient(t, proxy.Addr, &redis.Options{MaxRetries: retries, MinRetryBackoff: time.Millisecond, MaxRetryBackoff: 2 * time.Millisecond,
			ReadTimeout: 300 * time.Millisecond})
		prefix := fmt.Sprintf("lost-%d", retries)
		d := redisstore.NewStreams(c, prefix)
		t.Cleanup(func() { _ = d.Close() })
		now := time.Now()
		if _, _, err := d.Create(ctx, "s", &streams.CreateRequest{Config: streams.Config{ContentType: "text/plain"}}, now); err != nil {
			t.Fatal(err)
		}
		proxy.SetFaults(uint64(i)+1, 0.05, 0.01)
		const n = 80
		failures := 0
		for seq := range int64(n) {
			req := &streams.AppendRequest{ContentType: "text/plain", Body: &streams.Chunk{Data: fmt.Appendf(nil, "<%d>", seq)},
				Producer: &streams.Producer{ID: "w", Seq: seq}}
			for {
				_, err := d.Append(ctx, "s", req, now)
				if err == nil {
					break
				}
				if streams.Code(err) != "" {
					t.Fatalf("seq %d: %v", seq, err)
				}
				failures++
			}
		}
		proxy.SetFaults(0, 0, 0)
		direct := redisstore.NewStreams(srv.Client(t, nil), prefix)
		t.Cleanup(func() { _ = direct.Close() })
		rd, err := direct.Read(ctx, "s", 0, 1<<20, now)
		if err != nil {
			t.Fatal(err)
		}
		var got, want strings.Builder
		for _, ch := range rd.Chunks {
			got.Write(ch.Data)
		}
		for seq := range n {
			fmt.Fprintf(&want, "<%d>", seq)
		}
		if got.String() != want.String() {
			t.Fatalf("MaxRetries %d: read %q, want %q", retries, got.String(), want.String())
		}
		if proxy.DroppedReplies() == 0 || retries < 0 && failures == 0 {
			t.Fatalf("MaxRetries %d: %d appends failed, %d replies lost: the faults did not bite", retries, failures, proxy.DroppedReplies())
		}
		t.Logf("MaxRetries %d: %d failed attempts, %d replies and %d requests lost", retries, failures, proxy.DroppedReplies(), proxy.DroppedRequests())
	}
}

// TestStreamsCheckKeys: the engine's Check of a namespace that keeps
// streams takes their keys for what they are (streams.Check checks
// them), and streams.Check finds nothing wrong with them.
func TestStreamsCheckKeys(t *testing.T) {
	ctx := context.Background()
	srv := redistest.Start(t)
	o, err := storeurl.Open(ctx, "redis://"+srv.Addr+"/0?prefix=chk", storeurl.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.Close() })
	ten, err := o.Namespace("n", ckptstore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := o.Streams("n")
	if err != nil {
		t.Fatal(err)
	}
	streamstest.Populate(t, d)
	ps, err := ten.Store.Driver().(driver.Checker).Check(ctx)
	if err != nil || len(ps) != 0 {
		t.Fatalf("the engine's check of a namespace with streams: %v %v", ps, err)
	}
	sps, err := streams.Check(ctx, d.(streams.Porter))
	if err != nil || len(sps) != 0 {
		t.Fatalf("streams.Check: %v %v", sps, err)
	}
}

// TestStreamsCorruptState: a stream whose stored state has a numeric
// field that is not a number is an error naming the field, not a stream
// read as if the field were 0.
func TestStreamsCorruptState(t *testing.T) {
	ctx := context.Background()
	mr := miniredis.RunT(t)
	c := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	t.Cleanup(func() { _ = c.Close() })
	d := redisstore.NewStreams(c, "corrupt")
	t.Cleanup(func() { _ = d.Close() })
	now := time.Now()
	if _, _, err := d.Create(ctx, "s", &streams.CreateRequest{Config: streams.Config{ContentType: "text/plain"}}, now); err != nil {
		t.Fatal(err)
	}
	var meta string
	for _, k := range mr.Keys() {
		if strings.HasSuffix(k, ":m") {
			meta = k
		}
	}
	if meta == "" {
		t.Fatalf("no state key among %q", mr.Keys())
	}
	for _, field := range []string{"tail", "ttl", "cb"} {
		v := "x1"
		if field == "cb" {
			v = "x 1 p"
		}
		mr.HSet(meta, field, v)
		_, err := d.Head(ctx, "s", false, now)
		if err == nil || !strings.Contains(err.Error(), "field "+field) {
			t.Errorf("%s = %q: Head gave %v, want an error naming the field", field, v, err)
		}
		mr.HDel(meta, field)
	}
	mr.HSet(meta, "tail", "0")
	if _, err := d.Head(ctx, "s", false, now); err != nil {
		t.Errorf("after the repair: %v", err)
	}
}
