package fdbstore_test

import (
	"context"
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
