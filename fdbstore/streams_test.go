package fdbstore_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore/fdbstore"
	"github.com/ckptstore/ckptstore/fdbstore/kv/memkv"
	"github.com/ckptstore/ckptstore/memstore"
	"github.com/ckptstore/ckptstore/streams"
)

// TestStreamsCommitUnknown: with memkv injecting not_committed and
// commit_unknown_result (applied or not), every append of a producer is
// stored exactly once, in order: the retried transaction meets the
// producer state its applied try committed, and answers duplicate.
func TestStreamsCommitUnknown(t *testing.T) {
	ctx := context.Background()
	db, err := memkv.NewWithOptions(memkv.Options{Faults: memkv.Faults{Seed: 7, NotCommittedRate: 0.1,
		UnknownResultAppliedRate: 0.15, UnknownResultNotAppliedRate: 0.1}})
	if err != nil {
		t.Fatal(err)
	}
	d := fdbstore.NewStreams(db, fdbstore.StreamsNamespacePrefix("faults"))
	now := time.Now()
	if _, _, err := d.Create(ctx, "s", &streams.CreateRequest{Config: streams.Config{ContentType: "application/json"}}, now); err != nil {
		t.Fatal(err)
	}
	const n = 200
	dups := 0
	for seq := range int64(n) {
		for {
			body, err := streams.CheckBody(fmt.Appendf(nil, "%d", seq), "application/json", false)
			if err != nil {
				t.Fatal(err)
			}
			res, err := d.Append(ctx, "s", &streams.AppendRequest{ContentType: "application/json", Body: body,
				Producer: &streams.Producer{ID: "w", Seq: seq}}, now)
			if err == nil {
				if res.Duplicate {
					dups++
				}
				break
			}
			if streams.Code(err) != "" {
				t.Fatalf("seq %d: %v", seq, err)
			}
		}
	}
	rd, err := d.Read(ctx, "s", 0, 1<<20, now)
	if err != nil {
		t.Fatal(err)
	}
	got := string(streams.AppendJSONArray(nil, rd.Chunks))
	var want strings.Builder
	want.WriteByte('[')
	for i := range n {
		if i > 0 {
			want.WriteByte(',')
		}
		fmt.Fprint(&want, i)
	}
	want.WriteByte(']')
	if got != want.String() {
		t.Fatalf("read %s, want %s", got, want.String())
	}
	if dups == 0 {
		t.Fatal("no retry met an applied commit: the faults did not bite")
	}
	t.Logf("%d appends answered duplicate after a commit_unknown_result that had applied", dups)
}

// TestStreamsWaitAcrossDrivers: two drivers on one memkv, as two servers
// on one cluster: a reader waiting through one wakes by the watch when
// the other appends or closes the stream.
func TestStreamsWaitAcrossDrivers(t *testing.T) {
	db := memkv.New()
	p := fdbstore.StreamsNamespacePrefix("ns")
	waitAcrossDrivers(t, fdbstore.NewStreams(db, p), fdbstore.NewStreams(db, p))
}

// waitAcrossDrivers checks that a reader waiting through b wakes when a,
// another driver of the same streams (another server's), appends to the
// stream and when it closes it. The re-read of a database without watches
// is taken away, so only b's watch can wake it; the wait's bound is a
// liveness bound, not a measure.
func waitAcrossDrivers(t *testing.T, a, b *fdbstore.Streams) {
	t.Helper()
	defer fdbstore.SetStreamsRecheck(time.Hour)()
	ctx := context.Background()
	now := time.Now()
	if _, _, err := a.Create(ctx, "s", &streams.CreateRequest{Config: streams.Config{ContentType: "text/plain"}}, now); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		info, err := b.Head(ctx, "s", false, now)
		if err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		done := make(chan error, 1)
		go func() { done <- b.Wait(wctx, "s", info.Tail) }()
		time.Sleep(10 * time.Millisecond) // mostly: the append lands while b waits
		last := i == 3
		if _, err := a.Append(ctx, "s", &streams.AppendRequest{ContentType: "text/plain", Body: &streams.Chunk{Data: []byte{'x'}}, Close: last}, now); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("append %d (closing: %v): the other driver's reader did not wake: %v", i, last, err)
		}
		cancel()
		after, err := b.Head(ctx, "s", false, now)
		if err != nil {
			t.Fatal(err)
		}
		if after.Tail == info.Tail || after.Closed != last {
			t.Fatalf("append %d: b reads tail %v (was %v), closed %v after waking", i, after.Tail, info.Tail, after.Closed)
		}
	}
}

// BenchmarkStreamsCopy dumps 64 streams of 256 KiB each (appends of 4 KiB)
// from memstore and loads them into fdbstore on memkv: the path of
// ckptctl copy, without the process around it.
func BenchmarkStreamsCopy(b *testing.B) {
	ctx := context.Background()
	src := memstore.NewStreams()
	now := time.Now()
	const streamsN, appends, size = 64, 64, 4 << 10
	data := make([]byte, size)
	for i := range streamsN {
		name := fmt.Sprintf("s%d", i)
		if _, _, err := src.Create(ctx, name, &streams.CreateRequest{Config: streams.Config{ContentType: "text/plain"}}, now); err != nil {
			b.Fatal(err)
		}
		for range appends {
			if _, err := src.Append(ctx, name, &streams.AppendRequest{ContentType: "text/plain", Body: &streams.Chunk{Data: data}}, now); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.SetBytes(streamsN * appends * size)
	for i := 0; b.Loop(); i++ {
		dst := fdbstore.NewStreams(memkv.New(), fdbstore.StreamsNamespacePrefix("bench"))
		var batch []streams.Record
		for r, err := range streams.Dump(ctx, src, streams.Position{}) {
			if err != nil {
				b.Fatal(err)
			}
			if batch = append(batch, r); len(batch) == 64 {
				if _, err := streams.Load(ctx, dst, batch); err != nil {
					b.Fatal(err)
				}
				batch = batch[:0]
			}
		}
		if _, err := streams.Load(ctx, dst, batch); err != nil {
			b.Fatal(err)
		}
	}
}

// TestStreamsNameMovesAcrossDrivers: a driver that has appended to a
// stream (and knows its id) follows its name when another driver, as
// another server, deletes the stream and creates a new one under the
// name, or soft-deletes it while a fork reads it, or re-creates it after
// it expired: every later append lands in the stream the name names now,
// and an append to a stream that expired is refused.
func TestStreamsNameMovesAcrossDrivers(t *testing.T) {
	ctx := context.Background()
	db := memkv.New()
	a := fdbstore.NewStreams(db, fdbstore.StreamsNamespacePrefix("ns"))
	b := fdbstore.NewStreams(db, fdbstore.StreamsNamespacePrefix("ns"))
	now := time.Now()
	text := streams.CreateRequest{Config: streams.Config{ContentType: "text/plain"}}
	appendText := func(d *fdbstore.Streams, name, s string, at time.Time) error {
		_, err := d.Append(ctx, name, &streams.AppendRequest{ContentType: "text/plain", Body: &streams.Chunk{Data: []byte(s)}}, at)
		return err
	}
	read := func(name string, at time.Time) string {
		t.Helper()
		rd, err := b.Read(ctx, name, 0, 1<<20, at)
		if err != nil {
			t.Fatalf("read %s: %v", name, err)
		}
		var sb strings.Builder
		for _, c := range rd.Chunks {
			sb.Write(c.Data)
		}
		return sb.String()
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}

	// Deleted and created again.
	_, _, err := a.Create(ctx, "s", &text, now)
	must(err)
	must(appendText(a, "s", "old", now))
	must(b.Delete(ctx, "s", now))
	if err := appendText(a, "s", "lost", now); !errors.Is(err, streams.ErrNotFound) {
		t.Fatalf("append to a deleted stream: %v, want ErrNotFound", err)
	}
	_, _, err = b.Create(ctx, "s", &text, now)
	must(err)
	must(appendText(a, "s", "new", now))
	if got := read("s", now); got != "new" {
		t.Fatalf("the new stream reads %q, want %q", got, "new")
	}

	// Soft-deleted while a fork reads it.
	_, _, err = b.Create(ctx, "f", &streams.CreateRequest{Fork: &streams.ForkRequest{Source: "s"}}, now)
	must(err)
	must(appendText(a, "s", "+", now))
	must(b.Delete(ctx, "s", now))
	if err := appendText(a, "s", "lost", now); !errors.Is(err, streams.ErrGone) {
		t.Fatalf("append to a soft-deleted stream: %v, want ErrGone", err)
	}

	// Expired and created again.
	ttl := streams.CreateRequest{Config: streams.Config{ContentType: "text/plain", TTL: 1, HasTTL: true}}
	_, _, err = a.Create(ctx, "e", &ttl, now)
	must(err)
	must(appendText(a, "e", "old", now))
	later := now.Add(time.Minute)
	_, _, err = b.Create(ctx, "e", &text, later)
	must(err)
	must(appendText(a, "e", "new", later))
	if got := read("e", later); got != "new" {
		t.Fatalf("the stream created after expiry reads %q, want %q", got, "new")
	}

	// Expired, and nothing else happened to it.
	_, _, err = a.Create(ctx, "x", &ttl, now)
	must(err)
	must(appendText(a, "x", "old", now))
	if err := appendText(a, "x", "late", later); !errors.Is(err, streams.ErrNotFound) {
		t.Fatalf("append to an expired stream: %v, want ErrNotFound", err)
	}
}

// TestStreamsAppendReadRounds: an append of a producer to a stream the
// driver has seen reads the stream's state and the producer's in one
// round trip (on a cluster each round is a network round trip).
func TestStreamsAppendReadRounds(t *testing.T) {
	ctx := context.Background()
	db := memkv.New()
	d := fdbstore.NewStreams(db, fdbstore.StreamsNamespacePrefix("ns"))
	now := time.Now()
	if _, _, err := d.Create(ctx, "s", &streams.CreateRequest{Config: streams.Config{ContentType: "text/plain"}}, now); err != nil {
		t.Fatal(err)
	}
	for seq := range int64(4) {
		before := db.Stats().ReadRounds
		if _, err := d.Append(ctx, "s", &streams.AppendRequest{ContentType: "text/plain", Body: &streams.Chunk{Data: []byte("x")},
			Producer: &streams.Producer{ID: "p", Seq: seq}}, now); err != nil {
			t.Fatal(err)
		}
		if n := db.Stats().ReadRounds - before; n != 1 {
			t.Fatalf("append %d took %d read rounds, want 1", seq, n)
		}
	}
}
