// Package streamstest is the conformance suite of streams.Driver: every
// engine's driver runs it (Run, and RunPort for export and import) and
// must pass it whole; an engine's test runs both through
// conformance.RunEngine, on its namespaces' Tenant.Streams. It drives the
// driver directly, with the request values the HTTP layer would build,
// and a clock of its own, so TTLs expire without sleeping.
//
// It also holds the producer fault run (Producers, producers.go): a
// workload of idempotent producers over HTTP and the checker every
// engine's fault tests share (a killed ckptserver or redis-server,
// injected commit faults, lost replies).
package streamstest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore/streams"
)

// Open returns a new, empty driver for one test.
type Open func(t *testing.T) streams.Driver

// t0 is the suite's clock origin.
var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// Run runs the suite against the drivers open returns. Every case leaves
// its driver consistent (streams.Check finds nothing), so a caller may
// check it when the case ends.
func Run(t *testing.T, open Open) {
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, d streams.Driver)
	}{
		{"CreateIdempotent", createIdempotent},
		{"AppendRead", appendRead},
		{"ReadPages", readPages},
		{"JSONMessages", jsonMessages},
		{"Close", closeStream},
		{"Producers", producers},
		{"ProducerClose", producerClose},
		{"EpochFence", epochFence},
		{"StreamSeq", streamSeq},
		{"ExpectTail", expectTail},
		{"RetryNeverTwice", retryNeverTwice},
		{"Fork", fork},
		{"ForkSubOffset", forkSubOffset},
		{"ForkLifecycle", forkLifecycle},
		{"TTL", ttl},
		{"Wait", wait},
		{"ConcurrentProducers", concurrentProducers},
		{"Sweep", Sweep},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, open(t))
		})
	}
}

var ctx = context.Background()

func okInfo(t *testing.T) func(streams.Info, error) streams.Info {
	return func(v streams.Info, err error) streams.Info {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func okApp(t *testing.T) func(streams.AppendResult, error) streams.AppendResult {
	return func(v streams.AppendResult, err error) streams.AppendResult {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func okRead(t *testing.T) func(streams.ReadResult, error) streams.ReadResult {
	return func(v streams.ReadResult, err error) streams.ReadResult {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func wantCode(t *testing.T, err error, want *streams.Error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Fatalf("got %v, want %s", err, want.Code)
	}
}

func body(t *testing.T, s, ct string) *streams.Chunk {
	t.Helper()
	c, err := streams.CheckBody([]byte(s), ct, false)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func create(t *testing.T, d streams.Driver, name, ct, data string) streams.Info {
	t.Helper()
	req := &streams.CreateRequest{Config: streams.Config{ContentType: ct}}
	if data != "" {
		req.Body = body(t, data, ct)
	}
	info, created, err := d.Create(ctx, name, req, t0)
	if err != nil || !created {
		t.Fatalf("create %s: created %v, %v", name, created, err)
	}
	return info
}

func appendData(t *testing.T, d streams.Driver, name, ct, data string) streams.AppendResult {
	t.Helper()
	return okApp(t)(d.Append(ctx, name, &streams.AppendRequest{ContentType: ct, Body: body(t, data, ct)}, t0))
}

// readAll reads name from from to its tail, in pages of max bytes.
func readAll(t *testing.T, d streams.Driver, name string, from streams.Pos, max int) (string, streams.Info) {
	t.Helper()
	var sb strings.Builder
	for i := 0; ; i++ {
		rd := okRead(t)(d.Read(ctx, name, from, max, t0))
		if rd.Info.JSON() {
			sb.Write(streams.AppendJSONArray(nil, rd.Chunks))
		} else {
			for _, c := range rd.Chunks {
				sb.Write(c.Data)
			}
		}
		if rd.Next == rd.Info.Tail {
			return sb.String(), rd.Info
		}
		if rd.Next <= from || i > 1e6 {
			t.Fatalf("read from %d made no progress (next %d, tail %d)", from, rd.Next, rd.Info.Tail)
		}
		from = rd.Next
	}
}

func createIdempotent(t *testing.T, d streams.Driver) {
	info := create(t, d, "a/b", "Text/Plain; charset=utf-8", "x")
	if info.Tail != 1 || info.Closed {
		t.Fatalf("info %+v", info)
	}
	same := &streams.CreateRequest{Config: streams.Config{ContentType: "text/plain"}}
	got, created, err := d.Create(ctx, "a/b", same, t0)
	if err != nil || created || got.Tail != 1 {
		t.Fatalf("re-create: %+v %v %v, want the stream, not created", got, created, err)
	}
	for _, req := range []*streams.CreateRequest{
		{Config: streams.Config{ContentType: "application/json"}},
		{Config: streams.Config{ContentType: "text/plain", TTL: 5, HasTTL: true}},
		{Config: streams.Config{ContentType: "text/plain"}, Closed: true},
	} {
		_, _, err := d.Create(ctx, "a/b", req, t0)
		wantCode(t, err, streams.ErrExists)
	}
	info = create(t, d, "plain", "", "")
	if info.ContentType != streams.DefaultContentType {
		t.Fatalf("default content type %q", info.ContentType)
	}
	if err := d.Delete(ctx, "a/b", t0); err != nil {
		t.Fatal(err)
	}
	_, err = d.Head(ctx, "a/b", false, t0)
	wantCode(t, err, streams.ErrNotFound)
	wantCode(t, d.Delete(ctx, "a/b", t0), streams.ErrNotFound)
	// A name deleted may be created again, empty, and tells its reads
	// apart from the last one's (Created).
	info2 := create(t, d, "a/b", "text/plain", "")
	if info2.Tail != 0 {
		t.Fatalf("re-created stream has tail %d", info2.Tail)
	}
}

func appendRead(t *testing.T, d streams.Driver) {
	create(t, d, "s", "application/octet-stream", "")
	var offsets []string
	want := ""
	for i := range 20 {
		s := fmt.Sprintf("<%d>", i)
		want += s
		r := appendData(t, d, "s", "application/octet-stream", s)
		offsets = append(offsets, r.Next.Offset())
	}
	for i := 1; i < len(offsets); i++ {
		if offsets[i] <= offsets[i-1] || len(offsets[i]) > 64 {
			t.Fatalf("offsets %s then %s: not increasing", offsets[i-1], offsets[i])
		}
	}
	got, info := readAll(t, d, "s", 0, 1<<20)
	if got != want || info.Tail.Offset() != offsets[19] {
		t.Fatalf("read %q (tail %d), want %q", got, info.Tail, want)
	}
	// From any minted offset, the rest.
	p, err := streams.ParseOffset(offsets[4])
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := readAll(t, d, "s", p.Pos, 1<<20); got != want[len("<0><1><2><3><4>"):] {
		t.Fatalf("read from offset 5: %q", got)
	}
	_, err = d.Read(ctx, "s", info.Tail+1, 10, t0)
	wantCode(t, err, streams.ErrBadRequest)
	_, err = d.Append(ctx, "s", &streams.AppendRequest{ContentType: "text/plain", Body: body(t, "x", "text/plain")}, t0)
	wantCode(t, err, streams.ErrContentType)
	_, err = d.Append(ctx, "nope", &streams.AppendRequest{ContentType: "text/plain", Body: body(t, "x", "text/plain")}, t0)
	wantCode(t, err, streams.ErrNotFound)
}

func readPages(t *testing.T, d streams.Driver) {
	create(t, d, "s", "application/octet-stream", "")
	var want []byte
	for i := range 20 {
		b := make([]byte, 1000+i)
		for j := range b {
			b[j] = byte(i + j)
		}
		want = append(want, b...)
		appendData(t, d, "s", "application/octet-stream", string(b))
	}
	for _, max := range []int{97, 999, 4096, 1 << 20} {
		if got, _ := readAll(t, d, "s", 0, max); got != string(want) {
			t.Fatalf("pages of %d: %d bytes differ from the %d written", max, len(got), len(want))
		}
	}
	rd := okRead(t)(d.Read(ctx, "s", 0, 4096, t0))
	if n := rd.Next; n < 4096 || n > 4096+1100 || n == rd.Info.Tail {
		t.Fatalf("a page of 4096 bytes ends at %d", n)
	}
}

func jsonMessages(t *testing.T, d streams.Driver) {
	create(t, d, "j", "application/json", `[{"a":1}, {"b":2}]`)
	appendData(t, d, "j", "application/json", `{"c": [3, 4]}`)
	appendData(t, d, "j", "application/json", `[[5],[6]]`)
	got, info := readAll(t, d, "j", 0, 1<<20)
	if want := `[{"a":1},{"b":2},{"c":[3,4]},[5],[6]]`; got != want || info.Tail != 5 {
		t.Fatalf("read %s (tail %d), want %s", got, info.Tail, want)
	}
	// One message at a time: pages never split a message.
	var msgs []string
	for from := streams.Pos(0); from < info.Tail; {
		rd := okRead(t)(d.Read(ctx, "j", from, 1, t0))
		if rd.Next != from+1 {
			t.Fatalf("a page of 1 byte from %d ends at %d, want one message", from, rd.Next)
		}
		msgs = append(msgs, string(streams.AppendJSONArray(nil, rd.Chunks)))
		from = rd.Next
	}
	if strings.Join(msgs, "") != `[{"a":1}][{"b":2}][{"c":[3,4]}][[5]][[6]]` {
		t.Fatalf("messages %v", msgs)
	}
}

func closeStream(t *testing.T, d streams.Driver) {
	create(t, d, "c", "text/plain", "ab")
	r := okApp(t)(d.Append(ctx, "c", &streams.AppendRequest{ContentType: "text/plain", Body: body(t, "cd", "text/plain"), Close: true}, t0))
	if !r.Closed || r.Next != 4 {
		t.Fatalf("append and close: %+v", r)
	}
	// Closing again is idempotent; appending is refused with the tail.
	r = okApp(t)(d.Append(ctx, "c", &streams.AppendRequest{Close: true}, t0))
	if !r.Closed || r.Next != 4 {
		t.Fatalf("close again: %+v", r)
	}
	_, err := d.Append(ctx, "c", &streams.AppendRequest{ContentType: "text/plain", Body: body(t, "e", "text/plain")}, t0)
	wantCode(t, err, streams.ErrClosed)
	var se *streams.Error
	if !errors.As(err, &se) || se.Tail != 4 {
		t.Fatalf("closed error %v has no tail 4", err)
	}
	// A closed stream is still read whole, and a create must match its closure.
	if got, info := readAll(t, d, "c", 0, 100); got != "abcd" || !info.Closed {
		t.Fatalf("read %q closed %v", got, info.Closed)
	}
	_, _, err = d.Create(ctx, "c", &streams.CreateRequest{Config: streams.Config{ContentType: "text/plain"}}, t0)
	wantCode(t, err, streams.ErrExists)
	if _, created, err := d.Create(ctx, "c", &streams.CreateRequest{Config: streams.Config{ContentType: "text/plain"}, Closed: true}, t0); err != nil || created {
		t.Fatalf("create closed again: %v %v", created, err)
	}
	// Created closed, with its whole content.
	info := okInfo(t)(func() (streams.Info, error) {
		i, _, err := d.Create(ctx, "cc", &streams.CreateRequest{Config: streams.Config{ContentType: "text/plain"}, Closed: true, Body: body(t, "all", "text/plain")}, t0)
		return i, err
	}())
	if !info.Closed || info.Tail != 3 {
		t.Fatalf("created closed: %+v", info)
	}
}

func prodAppend(d streams.Driver, name, data string, p streams.Producer, fence, close bool) (streams.AppendResult, error) {
	req := &streams.AppendRequest{ContentType: "text/plain", Producer: &p, EpochFence: fence, Close: close}
	if data != "" {
		req.Body = &streams.Chunk{Data: []byte(data)}
	}
	return d.Append(ctx, name, req, t0)
}

func producers(t *testing.T, d streams.Driver) {
	create(t, d, "p", "text/plain", "")
	p := func(e, s int64) streams.Producer { return streams.Producer{ID: "w", Epoch: e, Seq: s} }
	r := okApp(t)(prodAppend(d, "p", "a", p(0, 0), false, false))
	if r.Duplicate || r.Epoch != 0 || r.Seq != 0 || r.Next != 1 {
		t.Fatalf("first: %+v", r)
	}
	okApp(t)(prodAppend(d, "p", "b", p(0, 1), false, false))
	// A retry of seq 0 or 1 is a duplicate that reports the highest seq.
	for _, s := range []int64{0, 1} {
		r = okApp(t)(prodAppend(d, "p", "X", p(0, s), false, false))
		if !r.Duplicate || r.Seq != 1 || r.Next != 2 {
			t.Fatalf("retry of seq %d: %+v", s, r)
		}
	}
	_, err := prodAppend(d, "p", "c", p(0, 3), false, false)
	wantCode(t, err, streams.ErrSeqGap)
	var se *streams.Error
	if errors.As(err, &se); se.Expected != 2 || se.Received != 3 {
		t.Fatalf("gap: %+v", se)
	}
	_, err = prodAppend(d, "p", "c", p(1, 1), false, false)
	wantCode(t, err, streams.ErrBadRequest)
	okApp(t)(prodAppend(d, "p", "c", p(1, 0), false, false))
	_, err = prodAppend(d, "p", "z", p(0, 2), false, false)
	wantCode(t, err, streams.ErrStaleEpoch)
	if errors.As(err, &se); se.Epoch != 1 {
		t.Fatalf("stale epoch reports %d, want 1", se.Epoch)
	}
	// Another producer has its own state.
	okApp(t)(prodAppend(d, "p", "d", streams.Producer{ID: "v", Epoch: 0, Seq: 0}, false, false))
	_, err = prodAppend(d, "p", "d", streams.Producer{ID: "u", Epoch: 0, Seq: 5}, false, false)
	wantCode(t, err, streams.ErrSeqGap)
	if got, _ := readAll(t, d, "p", 0, 100); got != "abcd" {
		t.Fatalf("read %q, want abcd", got)
	}
}

func producerClose(t *testing.T, d streams.Driver) {
	create(t, d, "p", "text/plain", "")
	p := streams.Producer{ID: "w", Epoch: 2, Seq: 0}
	okApp(t)(prodAppend(d, "p", "last", p, false, true))
	// The closing tuple again is a duplicate; any other is refused.
	r := okApp(t)(prodAppend(d, "p", "other body", p, false, true))
	if !r.Duplicate || !r.Closed || r.Next != 4 {
		t.Fatalf("retried close: %+v", r)
	}
	_, err := prodAppend(d, "p", "more", streams.Producer{ID: "w", Epoch: 2, Seq: 1}, false, false)
	wantCode(t, err, streams.ErrClosed)
	_, err = prodAppend(d, "p", "more", streams.Producer{ID: "w", Epoch: 1, Seq: 0}, false, false)
	wantCode(t, err, streams.ErrStaleEpoch)
	if got, _ := readAll(t, d, "p", 0, 100); got != "last" {
		t.Fatalf("read %q", got)
	}
}

func epochFence(t *testing.T, d streams.Driver) {
	create(t, d, "f", "text/plain", "")
	okApp(t)(prodAppend(d, "f", "a", streams.Producer{ID: "old", Epoch: 1, Seq: 0}, true, false))
	okApp(t)(prodAppend(d, "f", "b", streams.Producer{ID: "new", Epoch: 3, Seq: 0}, true, false))
	// Without the fence a producer is judged by its own epoch only…
	okApp(t)(prodAppend(d, "f", "c", streams.Producer{ID: "old", Epoch: 1, Seq: 1}, false, false))
	// …with it, by the highest epoch any producer wrote.
	_, err := prodAppend(d, "f", "d", streams.Producer{ID: "old", Epoch: 1, Seq: 2}, true, false)
	wantCode(t, err, streams.ErrStaleEpoch)
	_, err = prodAppend(d, "f", "d", streams.Producer{ID: "fresh", Epoch: 2, Seq: 0}, true, false)
	wantCode(t, err, streams.ErrStaleEpoch)
	var se *streams.Error
	if errors.As(err, &se); se.Epoch != 3 {
		t.Fatalf("fenced at %d, want 3", se.Epoch)
	}
	okApp(t)(prodAppend(d, "f", "e", streams.Producer{ID: "fresh", Epoch: 3, Seq: 0}, true, false))
	if got, _ := readAll(t, d, "f", 0, 100); got != "abce" {
		t.Fatalf("read %q", got)
	}
}

func streamSeq(t *testing.T, d streams.Driver) {
	create(t, d, "q", "text/plain", "")
	seq := func(s string) error {
		_, err := d.Append(ctx, "q", &streams.AppendRequest{ContentType: "text/plain", Body: body(t, s, "text/plain"), Seq: s, HasSeq: true}, t0)
		return err
	}
	for _, s := range []string{"09", "10", "2"} {
		if err := seq(s); err != nil {
			t.Fatalf("seq %s: %v", s, err)
		}
	}
	for _, s := range []string{"2", "10", "1"} {
		wantCode(t, seq(s), streams.ErrSeqConflict)
	}
}

// expectTail: a conditional append applies only at the tail it names,
// and a producer's retry whose first try applied is still a duplicate.
func expectTail(t *testing.T, d streams.Driver) {
	create(t, d, "x", "text/plain", "ab")
	cond := func(data string, at streams.Pos, p *streams.Producer) (streams.AppendResult, error) {
		req := &streams.AppendRequest{ContentType: "text/plain", Body: body(t, data, "text/plain"), Producer: p, ExpectTail: at, HasExpectTail: true}
		return d.Append(ctx, "x", req, t0)
	}
	for _, at := range []streams.Pos{0, 1, 3} {
		_, err := cond("X", at, nil)
		wantCode(t, err, streams.ErrTailMismatch)
		var se *streams.Error
		if errors.As(err, &se); se.Tail != 2 {
			t.Fatalf("mismatch at %d reports tail %d, want 2", at, se.Tail)
		}
	}
	p := streams.Producer{ID: "u", Seq: 0}
	r := okApp(t)(cond("cd", 2, &p))
	if r.Duplicate || r.Next != 4 {
		t.Fatalf("conditional append: %+v", r)
	}
	// The retry names the tail its first try met: a duplicate, not a
	// mismatch, and nothing is written again.
	r = okApp(t)(cond("cd", 2, &p))
	if !r.Duplicate || r.Next != 4 {
		t.Fatalf("retried conditional append: %+v", r)
	}
	// A refused request leaves the producer where it was: its next seq
	// is still 1.
	_, err := cond("e", 2, &streams.Producer{ID: "u", Seq: 1})
	wantCode(t, err, streams.ErrTailMismatch)
	okApp(t)(cond("e", 4, &streams.Producer{ID: "u", Seq: 1}))
	if got, _ := readAll(t, d, "x", 0, 100); got != "abcde" {
		t.Fatalf("read %q, want abcde", got)
	}
	// A closed stream is STREAM_CLOSED first, whatever the tail named.
	okApp(t)(d.Append(ctx, "x", &streams.AppendRequest{Close: true}, t0))
	_, err = cond("f", 5, nil)
	wantCode(t, err, streams.ErrClosed)
}

// retryNeverTwice: a request retried after a lost reply (the same
// producer tuple, any number of times, concurrently) is appended once.
func retryNeverTwice(t *testing.T, d streams.Driver) {
	create(t, d, "r", "text/plain", "")
	var wg sync.WaitGroup
	for seq := range int64(20) {
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					_, err := prodAppend(d, "r", fmt.Sprintf("%02d", seq), streams.Producer{ID: "w", Seq: seq}, false, false)
					if !errors.Is(err, streams.ErrSeqGap) {
						if err != nil {
							t.Error(err)
						}
						return
					}
					time.Sleep(time.Millisecond) // an earlier seq is still on its way
				}
			}()
		}
	}
	wg.Wait()
	got, _ := readAll(t, d, "r", 0, 1000)
	want := ""
	for i := range 20 {
		want += fmt.Sprintf("%02d", i)
	}
	if got != want {
		t.Fatalf("read %q, want %q", got, want)
	}
}

func forkReq(src string, off streams.Pos, hasOff bool, sub int64) *streams.CreateRequest {
	return &streams.CreateRequest{Fork: &streams.ForkRequest{Source: src, Offset: off, HasOffset: hasOff, Sub: sub}}
}

func fork(t *testing.T, d streams.Driver) {
	create(t, d, "src", "text/plain", "hello ")
	appendData(t, d, "src", "text/plain", "world")
	info, created, err := d.Create(ctx, "f1", forkReq("src", 6, true, 0), t0)
	if err != nil || !created || info.Tail != 6 || info.ContentType != "text/plain" {
		t.Fatalf("fork: %+v %v %v", info, created, err)
	}
	// The fork sees the source below the fork point, then its own data;
	// the source never sees the fork's, nor the fork the source's later.
	appendData(t, d, "f1", "text/plain", "there")
	appendData(t, d, "src", "text/plain", "!")
	if got, _ := readAll(t, d, "f1", 0, 3); got != "hello there" {
		t.Fatalf("fork reads %q", got)
	}
	if got, _ := readAll(t, d, "f1", 4, 100); got != "o there" {
		t.Fatalf("fork from 4 reads %q", got)
	}
	if got, _ := readAll(t, d, "src", 0, 100); got != "hello world!" {
		t.Fatalf("source reads %q", got)
	}
	// Default fork point: the source's tail; a fork of a fork.
	okInfo(t)(func() (streams.Info, error) {
		i, _, err := d.Create(ctx, "f2", forkReq("f1", 0, false, 0), t0)
		return i, err
	}())
	if got, _ := readAll(t, d, "f2", 0, 100); got != "hello there" {
		t.Fatalf("fork of fork reads %q", got)
	}
	// Idempotent re-create; another point or type conflicts.
	if _, created, err := d.Create(ctx, "f1", forkReq("src", 6, true, 0), t0); err != nil || created {
		t.Fatalf("re-fork: %v %v", created, err)
	}
	_, _, err = d.Create(ctx, "f1", forkReq("src", 5, true, 0), t0)
	wantCode(t, err, streams.ErrExists)
	bad := forkReq("src", 0, true, 0)
	bad.ContentType = "application/json"
	_, _, err = d.Create(ctx, "f3", bad, t0)
	wantCode(t, err, streams.ErrContentType)
	_, _, err = d.Create(ctx, "f3", forkReq("src", 13, true, 0), t0)
	wantCode(t, err, streams.ErrBadRequest)
	_, _, err = d.Create(ctx, "f3", forkReq("nope", 0, true, 0), t0)
	wantCode(t, err, streams.ErrNotFound)
	// A fork of a closed stream starts open.
	okApp(t)(d.Append(ctx, "src", &streams.AppendRequest{Close: true}, t0))
	info = okInfo(t)(func() (streams.Info, error) {
		i, _, err := d.Create(ctx, "f4", forkReq("src", 0, false, 0), t0)
		return i, err
	}())
	if info.Closed {
		t.Fatal("a fork of a closed stream is closed")
	}
}

func forkSubOffset(t *testing.T, d streams.Driver) {
	create(t, d, "b", "text/plain", "first")
	appendData(t, d, "b", "text/plain", "second")
	okInfo(t)(func() (streams.Info, error) {
		i, _, err := d.Create(ctx, "b1", forkReq("b", 5, true, 3), t0)
		return i, err
	}())
	if got, _ := readAll(t, d, "b1", 0, 100); got != "firstsec" {
		t.Fatalf("binary sub-offset fork reads %q", got)
	}
	// Sub-offsets compose down a chain, and stop at the data's end.
	okInfo(t)(func() (streams.Info, error) {
		i, _, err := d.Create(ctx, "b2", forkReq("b1", 5, true, 2), t0)
		return i, err
	}())
	if got, _ := readAll(t, d, "b2", 0, 100); got != "firstse" {
		t.Fatalf("chained sub-offset fork reads %q", got)
	}
	_, _, err := d.Create(ctx, "b3", forkReq("b1", 5, true, 4), t0)
	wantCode(t, err, streams.ErrBadRequest)
	_, _, err = d.Create(ctx, "b3", forkReq("b", 11, true, 1), t0)
	wantCode(t, err, streams.ErrBadRequest)
	create(t, d, "j", "application/json", `[1,2,3,4]`)
	okInfo(t)(func() (streams.Info, error) {
		i, _, err := d.Create(ctx, "j1", forkReq("j", 0, true, 2), t0)
		return i, err
	}())
	appendData(t, d, "j1", "application/json", `"x"`)
	if got, _ := readAll(t, d, "j1", 0, 100); got != `[1,2,"x"]` {
		t.Fatalf("JSON sub-offset fork reads %s", got)
	}
	_, _, err = d.Create(ctx, "j2", forkReq("j", 0, true, 5), t0)
	wantCode(t, err, streams.ErrBadRequest)
}

func forkLifecycle(t *testing.T, d streams.Driver) {
	create(t, d, "a", "text/plain", "aa")
	okInfo(t)(func() (streams.Info, error) {
		i, _, err := d.Create(ctx, "b", forkReq("a", 0, false, 0), t0)
		return i, err
	}())
	appendData(t, d, "b", "text/plain", "bb")
	okInfo(t)(func() (streams.Info, error) {
		i, _, err := d.Create(ctx, "c", forkReq("b", 0, false, 0), t0)
		return i, err
	}())
	// Deleting a forked stream is soft: 410 to its clients, its name
	// held, its data still read through the forks.
	if err := d.Delete(ctx, "a", t0); err != nil {
		t.Fatal(err)
	}
	if err := d.Delete(ctx, "b", t0); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		_, err := d.Head(ctx, name, false, t0)
		wantCode(t, err, streams.ErrGone)
		_, err = d.Read(ctx, name, 0, 10, t0)
		wantCode(t, err, streams.ErrGone)
		wantCode(t, d.Delete(ctx, name, t0), streams.ErrGone)
		_, _, err = d.Create(ctx, name, &streams.CreateRequest{}, t0)
		wantCode(t, err, streams.ErrExists)
	}
	_, _, err := d.Create(ctx, "x", forkReq("a", 0, false, 0), t0)
	wantCode(t, err, streams.ErrSourceGone)
	if got, _ := readAll(t, d, "c", 0, 100); got != "aabb" {
		t.Fatalf("fork of deleted streams reads %q", got)
	}
	// The last fork's delete frees the chain.
	if err := d.Delete(ctx, "c", t0); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b", "c"} {
		_, err := d.Head(ctx, name, false, t0)
		wantCode(t, err, streams.ErrNotFound)
	}
	create(t, d, "a", "text/plain", "")
}

func ttl(t *testing.T, d streams.Driver) {
	req := &streams.CreateRequest{Config: streams.Config{ContentType: "text/plain", TTL: 10, HasTTL: true}}
	okInfo(t)(func() (streams.Info, error) { i, _, err := d.Create(ctx, "t", req, t0); return i, err }())
	// Every access but a plain HEAD renews the sliding window.
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	okRead(t)(d.Read(ctx, "t", 0, 10, at(9)))
	okApp(t)(d.Append(ctx, "t", &streams.AppendRequest{ContentType: "text/plain", Body: body(t, "x", "text/plain")}, at(18)))
	okApp(t)(d.Append(ctx, "t", &streams.AppendRequest{Close: true}, at(27)))
	okInfo(t)(d.Head(ctx, "t", true, at(36)))
	okInfo(t)(d.Head(ctx, "t", false, at(45)))
	_, err := d.Head(ctx, "t", false, at(46))
	wantCode(t, err, streams.ErrNotFound)
	// Expired, the name is free.
	if _, created, err := d.Create(ctx, "t", req, at(47)); err != nil || !created {
		t.Fatalf("create after expiry: %v %v", created, err)
	}
	exp := &streams.CreateRequest{Config: streams.Config{ContentType: "text/plain", ExpiresAt: at(5)}}
	okInfo(t)(func() (streams.Info, error) { i, _, err := d.Create(ctx, "e", exp, t0); return i, err }())
	okRead(t)(d.Read(ctx, "e", 0, 10, at(4)))
	_, err = d.Read(ctx, "e", 0, 10, at(5))
	wantCode(t, err, streams.ErrNotFound)
	// A fork inherits its source's expiry unless it sets its own, and
	// outlives an expired source.
	create(t, d, "s", "text/plain", "data")
	src := &streams.CreateRequest{Config: streams.Config{ContentType: "text/plain", ExpiresAt: at(5)}, Body: body(t, "data", "text/plain")}
	okInfo(t)(func() (streams.Info, error) { i, _, err := d.Create(ctx, "s2", src, t0); return i, err }())
	inh := okInfo(t)(func() (streams.Info, error) {
		i, _, err := d.Create(ctx, "k1", forkReq("s2", 0, false, 0), t0)
		return i, err
	}())
	if !inh.ExpiresAt.Equal(at(5)) {
		t.Fatalf("fork expiry %v, want the source's", inh.ExpiresAt)
	}
	own := forkReq("s2", 0, false, 0)
	own.TTL, own.HasTTL = 100, true
	okInfo(t)(func() (streams.Info, error) { i, _, err := d.Create(ctx, "k2", own, t0); return i, err }())
	if got, _ := readAllAt(t, d, "k2", at(50)); got != "data" {
		t.Fatalf("fork of an expired source reads %q", got)
	}
}

func readAllAt(t *testing.T, d streams.Driver, name string, now time.Time) (string, error) {
	rd, err := d.Read(ctx, name, 0, 1<<20, now)
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	for _, c := range rd.Chunks {
		sb.Write(c.Data)
	}
	return sb.String(), nil
}

func wait(t *testing.T, d streams.Driver) {
	create(t, d, "w", "text/plain", "")
	create(t, d, "src", "text/plain", "s")
	okInfo(t)(func() (streams.Info, error) {
		i, _, err := d.Create(ctx, "fk", forkReq("src", 0, false, 0), t0)
		return i, err
	}())
	// A stale tail returns at once.
	if err := d.Wait(ctx, "w", 5); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, stream string
		write        func() error
	}{
		{"append", "w", func() error {
			_, err := d.Append(ctx, "w", &streams.AppendRequest{ContentType: "text/plain", Body: body(t, "x", "text/plain")}, t0)
			return err
		}},
		{"close", "w", func() error { _, err := d.Append(ctx, "w", &streams.AppendRequest{Close: true}, t0); return err }},
		{"fork append", "fk", func() error {
			_, err := d.Append(ctx, "fk", &streams.AppendRequest{ContentType: "text/plain", Body: body(t, "y", "text/plain")}, t0)
			return err
		}},
	} {
		info := okInfo(t)(d.Head(ctx, tc.stream, false, t0))
		done := make(chan error, 1)
		go func() { done <- d.Wait(ctx, tc.stream, info.Tail) }()
		if err := tc.write(); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("%s: wait: %v", tc.name, err)
		}
	}
	// An append to a fork's source brings its readers nothing: Wait may
	// return early (a reader then reads again and waits on), but the
	// fork's tail stays put until the deadline.
	info := okInfo(t)(d.Head(ctx, "fk", false, t0))
	wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		for {
			err := d.Wait(wctx, "fk", info.Tail)
			if err != nil {
				done <- err
				return
			}
			now, herr := d.Head(ctx, "fk", false, t0)
			if herr != nil || now.Tail != info.Tail || now.Closed {
				done <- fmt.Errorf("the fork changed: %+v, %v", now, herr)
				return
			}
			if wctx.Err() == nil {
				time.Sleep(time.Millisecond) // a spurious wake; do not spin
			}
		}
	}()
	appendData(t, d, "src", "text/plain", "z")
	if err := <-done; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a source append reached the fork's reader: %v", err)
	}
}

func concurrentProducers(t *testing.T, d streams.Driver) {
	create(t, d, "m", "application/json", "")
	const writers, each = 8, 25
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for s := range int64(each) {
				req := &streams.AppendRequest{ContentType: "application/json", Body: &streams.Chunk{Data: fmt.Appendf(nil, "%d", w*1000+int(s)), Ends: []int32{0}},
					Producer: &streams.Producer{ID: fmt.Sprint(w), Seq: s}}
				req.Body.Ends[0] = int32(len(req.Body.Data))
				if _, err := d.Append(ctx, "m", req, t0); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	rd := okRead(t)(d.Read(ctx, "m", 0, 1<<20, t0))
	if rd.Info.Tail != writers*each || rd.Next != rd.Info.Tail {
		t.Fatalf("tail %d next %d, want %d messages", rd.Info.Tail, rd.Next, writers*each)
	}
	last := map[int]int{}
	for _, c := range rd.Chunks {
		var v int
		fmt.Sscan(string(c.Data), &v)
		w, s := v/1000, v%1000
		if prev, ok := last[w]; ok && s != prev+1 || !ok && s != 0 {
			t.Fatalf("writer %d: seq %d after %d", w, s, prev)
		}
		last[w] = s
	}
}

// Sweep runs the sweep case when the driver is a streams.Sweeper: the
// sweep removes expired streams only, a bounded batch per call, and an
// expired stream that forks still read keeps its data for them.
func Sweep(t *testing.T, d streams.Driver) {
	sw, ok := d.(streams.Sweeper)
	if !ok {
		t.Skip("the driver is not a streams.Sweeper")
	}
	short := &streams.CreateRequest{Config: streams.Config{ContentType: "text/plain", TTL: 1, HasTTL: true}, Body: body(t, "x", "text/plain")}
	for i := range 30 {
		if _, _, err := d.Create(ctx, fmt.Sprint("e", i), short, t0); err != nil {
			t.Fatal(err)
		}
	}
	create(t, d, "keep", "text/plain", "k")
	fk := forkReq("e0", 0, false, 0)
	fk.TTL, fk.HasTTL = 7200, true
	okInfo(t)(func() (streams.Info, error) { i, _, err := d.Create(ctx, "fk", fk, t0); return i, err }())
	later := t0.Add(time.Hour)
	removed := 0
	for range 100 {
		n, err := sw.SweepExpired(ctx, later, 4)
		if err != nil {
			t.Fatal(err)
		}
		if n > 4 {
			t.Fatalf("a sweep of 4 removed %d", n)
		}
		removed += n
	}
	if removed != 30 {
		t.Fatalf("the sweeps removed %d streams, want the 30 expired", removed)
	}
	okInfo(t)(d.Head(ctx, "keep", false, later))
	if got, _ := readAllAt(t, d, "fk", later); got != "x" {
		t.Fatalf("the fork of a swept stream reads %q", got)
	}
}
