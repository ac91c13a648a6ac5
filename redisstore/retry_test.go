package redisstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/internal/redistest"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

// loadScripts puts every script in the server's cache, so that the next
// EVALSHA runs the script instead of answering NOSCRIPT.
func loadScripts(t testing.TB, c redis.Scripter) {
	t.Helper()
	for _, sc := range allScripts {
		must(t, redis.NewScript(sc.source).Load(context.Background(), c).Err())
	}
}

// faultyClient returns a client that reaches addr through a proxy, and the
// proxy. The client resends a command whose reply was lost, quickly.
func faultyClient(t testing.TB, addr string) (*redis.Client, *redistest.Proxy) {
	p := redistest.NewProxy(t, addr)
	c := redistest.NewClient(t, p.Addr, &redis.Options{
		MaxRetries: 20, MinRetryBackoff: time.Millisecond, MaxRetryBackoff: 2 * time.Millisecond,
	})
	return c, p
}

func serverAddr(c redis.UniversalClient) string {
	return c.(*redis.Client).Options().Addr
}

// Each write whose reply is lost after it ran is resent by go-redis; the
// resend returns the first run's result: no false error, no double count.
func TestResentWriteAfterLostReply(t *testing.T) {
	backends(t, func(t *testing.T, direct redis.UniversalClient) {
		ctx := context.Background()
		c, proxy := faultyClient(t, serverAddr(direct))
		loadScripts(t, direct)
		s := newStore(t, c, Options{})
		must(t, c.Ping(ctx).Err()) // open the connection whose reply will be lost
		lost := int64(0)
		loseNext := func() {
			t.Helper()
			if got := proxy.DroppedReplies(); got != lost {
				t.Fatalf("the proxy lost %d replies, want %d", got, lost)
			}
			lost++
			proxy.DropReplies(1)
		}

		loseNext()
		l, err := s.p().AcquireWriter(ctx, "t")
		must(t, err)
		if l.Fence != 1 {
			t.Fatalf("fence %d after a resent AcquireWriter, want 1", l.Fence)
		}
		w := l.Writer
		must(t, s.p().Append(ctx, testkit.Checkpoint("t", "c1", "", 1, 1, 2), "", w))
		loseNext()
		must(t, s.p().Append(ctx, testkit.Checkpoint("t", "c2", "c1", 2, 2, 3), "c1", w))
		loseNext()
		must(t, s.p().Append(ctx, testkit.Checkpoint("t", "c3", "c2", 3, 3, 4), "c2", w))
		testkit.CheckRefs(t, s.p(), "t")

		loseNext()
		must(t, s.p().DeleteHead(ctx, "t", "c3", w))
		if h, err := s.p().GetHead(ctx, "t"); err != nil || h != "c2" {
			t.Fatalf("head %q, %v after a resent DeleteHead, want c2", h, err)
		}
		testkit.CheckRefs(t, s.p(), "t")

		loseNext()
		ids, err := s.p().DeleteCheckpoints(ctx, "t", 1, w)
		must(t, err)
		require.Equal(t, []string{"c1"}, ids, "resent DeleteCheckpoints")

		loseNext()
		l2, err := s.p().AcquireWriter(ctx, "f")
		must(t, err)
		in := ckptstore.ForkInput{SourceThreadID: "t", SourceCheckpointID: "c2", DestinationThreadID: "f",
			DestinationCheckpointID: "r", CreatedAt: 9, Writer: l2.Writer}
		loseNext()
		root, err := s.p().ForkFromCheckpoint(ctx, in)
		must(t, err)
		src, err := s.p().Get(ctx, "c2")
		must(t, err)
		require.Equal(t, driver.ForkRoot(src, in), root, "resent fork")
		refs := testkit.CheckRefs(t, s.p(), "t", "f")
		// c2 and r use blobs 2 and 3; c1, c3 are gone.
		if len(refs) != 2 || refs[0].References != 2 || refs[1].References != 2 {
			t.Fatalf("references %v, want two keys counted twice", refs)
		}
		if got := proxy.DroppedReplies(); got != lost {
			t.Fatalf("the proxy lost %d replies, want %d", got, lost)
		}
	})
}

// A failed write records nothing: when it is resent it checks again.
func TestResentFailureChecksAgain(t *testing.T) {
	backends(t, func(t *testing.T, direct redis.UniversalClient) {
		ctx := context.Background()
		c, proxy := faultyClient(t, serverAddr(direct))
		loadScripts(t, direct)
		s := newStore(t, c, Options{})
		w := acquire(t, s, "t")
		// AcquireWriter records its lease under its op token.
		before, err := direct.Keys(ctx, "*:o:*").Result()
		must(t, err)
		proxy.DropReplies(1)
		if err := s.p().Append(ctx, testkit.Checkpoint("t", "c1", "", 1), "x", w); !errors.Is(err, ckptstore.ErrConflict) {
			t.Fatalf("Append with a stale head = %v, want ErrConflict", err)
		}
		if proxy.DroppedReplies() != 1 {
			t.Fatal("no reply was lost")
		}
		if n, err := direct.Keys(ctx, "*:o:*").Result(); err != nil || len(n) != len(before) {
			t.Fatalf("a failed write left operation keys %q, before it %q (%v)", n, before, err)
		}
	})
}

// The new writes, and every batch of the long ones, answer a resend after
// a lost reply with the first run's result: Import reports what it wrote,
// a long prune and DeleteThread report each checkpoint once.
func TestResentNewWritesAfterLostReply(t *testing.T) {
	backends(t, func(t *testing.T, direct redis.UniversalClient) {
		ctx := context.Background()
		c, proxy := faultyClient(t, serverAddr(direct))
		loadScripts(t, direct)
		s := newStore(t, c, Options{BatchSize: 2})
		sure := newStore(t, direct, Options{Prefix: s.opts.Prefix, BatchSize: 2})
		must(t, c.Ping(ctx).Err())
		w := acquire(t, sure, "t")
		lost := int64(0)
		lose := func(n int) {
			t.Helper()
			if got := proxy.DroppedReplies(); got != lost {
				t.Fatalf("the proxy lost %d replies, want %d", got, lost)
			}
			lost += int64(n)
			proxy.DropReplies(n)
		}

		lose(1)
		must(t, s.p().SaveThread(ctx, "s", []byte(`[1]`)))
		lose(1)
		n, err := s.p().Import(ctx, ckptstore.ImportBatch{ThreadID: "t", Writer: w, SetHead: true, Head: "i1",
			Checkpoints: []*ckptstore.Checkpoint{testkit.Checkpoint("t", "i0", "", 0, 1), testkit.Checkpoint("t", "i1", "i0", 1, 2)}})
		must(t, err)
		if n != 2 {
			t.Fatalf("a resent Import reported %d written, want 2", n)
		}
		ids := append([]string{"i0", "i1"}, chainOf(t, sure, "t", w, 7)...)
		lose(4) // the first walk, the first delete batches
		deleted, err := s.p().DeleteCheckpoints(ctx, "t", 2, w)
		must(t, err)
		require.Equal(t, ids[:7], deleted, "a resent long prune")
		testkit.CheckRefs(t, sure.p(), "t")

		wf := acquire(t, sure, "f")
		lose(1)
		_, err = s.p().ForkFromCheckpoint(ctx, ckptstore.ForkInput{SourceThreadID: "t", SourceCheckpointID: ids[8],
			DestinationThreadID: "f", DestinationCheckpointID: "root", CreatedAt: 1, Writer: wf})
		must(t, err)
		if tr, err := sure.p().LoadThread(ctx, "f"); err != nil || string(tr) != testkit.Conversation {
			t.Fatalf("the fork's transcript is %s (%v)", tr, err)
		}
		chainOf(t, sure, "t", w, 3)
		lose(3)
		n, err = s.p().DeleteThread(ctx, "t", w)
		must(t, err)
		if n != 5 {
			t.Fatalf("a resent DeleteThread reported %d, want 5", n)
		}
		wantEmptyThread(t, sure, "t")
		testkit.CheckRefs(t, sure.p(), "t", "f")
		checkStore(t, sure)
		if proxy.DroppedReplies() != lost {
			t.Fatalf("the proxy lost %d replies, want %d", proxy.DroppedReplies(), lost)
		}
	})
}

// A renewal whose reply is lost, resent only after the renewed lease
// expired and was taken over, still reports the renewal: an
// ErrWriterLost would tell the caller that its lease ended before it did.
// (The linearizability run found this.) The resend is the same script
// with the same arguments, as go-redis sends it again.
func TestRenewResentAfterTakeover(t *testing.T) {
	backends(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := context.Background()
		clk := newClock()
		s := newStore(t, c, Options{Options: ckptstore.Options{Now: clk.Now}})
		w := acquire(t, s, "t")
		a := renewArgs{Thread: s.keys.thread("t"), Op: s.keys.op(opRenew, "lost-reply"), Token: w.OwnerToken,
			Fence: itoa(w.Fence), Now: s.now(), Span: itoa(s.leaseMs), TTL: s.opTTL}
		res, err := run(ctx, s.r, renewScript, a, false)
		must(t, err)
		if !succeeded(res) {
			t.Fatalf("renew = %v", res)
		}
		first := res[1]
		clk.Advance(time.Duration(s.leaseMs+1) * time.Millisecond)
		acquire(t, s, "t")
		res, err = run(ctx, s.r, renewScript, a, false)
		must(t, err)
		if !succeeded(res) || res[1] != first {
			t.Fatalf("the resent renew = %v, want the renewal it made (expiry %v)", res, first)
		}
		// A new renewal of the replaced lease fails as it must.
		if _, err := s.p().Renew(ctx, w); !errors.Is(err, ckptstore.ErrWriterLost) {
			t.Fatalf("renewing the replaced lease = %v, want ErrWriterLost", err)
		}
	})
}

// A SaveThread, instance Upsert or instance Delete resent after a later
// write of the same key (the same script with the same arguments, as
// go-redis sends it again) does not write again over that later write.
func TestLastWriteResentAfterLaterWrite(t *testing.T) {
	backends(t, func(t *testing.T, c redis.UniversalClient) {
		ctx := context.Background()
		s := newStore(t, c, Options{})
		save := saveThreadArgs{Transcript: s.keys.transcript("t"), Threads: s.keys.threadsKey(),
			Op: s.keys.op(opSaveThread, "lost"), ThreadID: "t", Messages: []byte(`["first"]`), TTL: s.opTTL}
		_, err := run(ctx, s.r, saveThreadScript, save, true)
		must(t, err)
		must(t, s.p().SaveThread(ctx, "t", []byte(`["later"]`)))
		_, err = run(ctx, s.r, saveThreadScript, save, true)
		must(t, err)
		if tr, err := s.p().LoadThread(ctx, "t"); err != nil || string(tr) != `["later"]` {
			t.Fatalf("after the resend the transcript is %s (%v), want the later one", tr, err)
		}

		in := newInstanceStore(runner{c: c}, s.opts.Prefix, DefaultOpTTL)
		rec := &ckptstore.InstanceRecord{Key: "k", Provider: "p", ProviderSandboxID: "sb", ThreadID: "t", UpdatedAt: 1}
		up := upsertInstanceArgs{Record: key(in.base + "k"), Op: key(in.ops + "lost-upsert"), TTL: in.opTTL,
			Provider: "p", SandboxID: "old", ThreadID: "t", UpdatedAt: "1"}
		_, err = run(ctx, runner{c: c}, upsertInstanceScript, up, false)
		must(t, err)
		must(t, in.Upsert(ctx, rec))
		_, err = run(ctx, runner{c: c}, upsertInstanceScript, up, false)
		must(t, err)
		got, err := in.Get(ctx, "k")
		must(t, err)
		if got == nil || got.ProviderSandboxID != "sb" {
			t.Fatalf("after the resent Upsert the record is %+v, want the later one", got)
		}
		del := deleteInstanceArgs{Record: key(in.base + "k"), Op: key(in.ops + "lost-delete"), TTL: in.opTTL}
		_, err = run(ctx, runner{c: c}, deleteInstanceScript, del, false)
		must(t, err)
		must(t, in.Upsert(ctx, rec))
		_, err = run(ctx, runner{c: c}, deleteInstanceScript, del, false)
		must(t, err)
		if got, err := in.Get(ctx, "k"); err != nil || got == nil {
			t.Fatalf("the resent Delete deleted the later record (%v)", err)
		}
		checkStore(t, s)
	})
}
