package main

import (
	"bytes"
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/blobs"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

func lines(s string) []string { return strings.Split(strings.TrimSuffix(s, "\n"), "\n") }

func TestThreadsHeadGetRefs(t *testing.T) {
	h := newHarness(t)
	s := newMem()
	url := h.add("s", s)
	threads, _ := seed(t, s, 3)

	if got := lines(h.ok("threads", "--store", url).stdout); !slices.Equal(got, threads) {
		t.Errorf("threads = %q, want %q", got, threads)
	}
	if got := h.ok("head", "--store", url, "chain").stdout; got != "chain-0011\n" {
		t.Errorf("head chain = %q", got)
	}
	// A head naming a pruned checkpoint is printed as stored.
	if got := h.ok("head", "--store", url, "odd").stdout; got != "gone\n" {
		t.Errorf("head odd = %q", got)
	}
	if got := h.ok("head", "--store", url, "--", "only-transcript"); got.stdout != "" {
		t.Errorf("head of a thread without one printed %q", got.stdout)
	}

	out := h.ok("get", "--store", url, "o-c").stdout
	want, err := mustGet(t, s, "o-c").MarshalJSON()
	must(t, err)
	if out != string(want)+"\n" {
		t.Errorf("get o-c = %q, want the MarshalJSON bytes %q", out, want)
	}
	h.fails(1, `no checkpoint "nope"`, "get", "--store", url, "nope")
	h.fails(2, "INVALID_ID", "get", "--store", url, "")

	refs, err := s.ListBlobReferences(context.Background())
	must(t, err)
	var wantRefs []string
	for _, r := range refs {
		wantRefs = append(wantRefs, r.Key+"\t"+strconv.FormatInt(r.References, 10))
	}
	if got := lines(h.ok("refs", "--store", url).stdout); !slices.Equal(got, wantRefs) {
		t.Errorf("refs = %q, want %q", got, wantRefs)
	}
}

func mustGet(t testing.TB, s *ckptstore.Store, id string) *ckptstore.Checkpoint {
	t.Helper()
	cp, err := s.Get(context.Background(), id)
	must(t, err)
	if cp == nil {
		t.Fatalf("checkpoint %q missing", id)
	}
	return cp
}

func TestListPagesInListOrder(t *testing.T) {
	h := newHarness(t)
	s := newMem()
	url := h.add("s", s)
	seed(t, s, 0)
	all, err := s.List(context.Background(), "odd")
	must(t, err)

	// --json, pages of 2: every checkpoint once, in List order, as the
	// bytes MarshalJSON gives, one per line (o-c's conversation keeps its
	// raw newlines, so it spans several).
	var want bytes.Buffer
	for _, cp := range all {
		b, err := cp.MarshalJSON()
		must(t, err)
		want.Write(b)
		want.WriteByte('\n')
	}
	if got := h.ok("list", "--store", url, "--json", "--page", "2", "odd").stdout; got != want.String() {
		t.Errorf("list --json =\n%s\nwant\n%s", got, want.String())
	}
	rev := lines(h.ok("list", "--store", url, "--reverse", "--page", "3", "chain").stdout)
	if len(rev) != 13 || !strings.HasPrefix(rev[0], "ID\t") || !strings.HasPrefix(rev[1], "chain-0011\t") || !strings.HasPrefix(rev[12], "chain-0000\t") {
		t.Errorf("list --reverse chain = %q", rev)
	}
	if row := lines(h.ok("list", "--store", url, "--page", "1", "odd").stdout)[1]; row != "o-a\t-0\tautomatic\t-\t2\t0\t" {
		t.Errorf("first row of odd = %q", row)
	}
	h.fails(2, "--page must be in 1..1000", "list", "--store", url, "--page", "0", "odd")
	h.fails(2, "missing argument", "list", "--store", url)
}

func TestListJSONKeepsConversationBytes(t *testing.T) {
	h := newHarness(t)
	s := newMem()
	url := h.add("s", s)
	seed(t, s, 0)
	out := h.ok("list", "--store", url, "--json", "odd").stdout
	// The stream reader reads values, so the raw newlines in o-c's
	// conversation do not break it.
	sr := newStreamReader(strings.NewReader(out))
	var ids []string
	for {
		v, err := sr.value()
		must(t, err)
		if v == nil {
			break
		}
		var cp ckptstore.Checkpoint
		must(t, cp.UnmarshalJSON(v))
		if want := mustGet(t, s, cp.ID); !driver.EqualCheckpoints(&cp, want) {
			t.Errorf("checkpoint %s read back differs", cp.ID)
		}
		ids = append(ids, cp.ID)
	}
	if want := []string{"o-a", "o-b", "o-c", "o-d", "o-e"}; !slices.Equal(ids, want) {
		t.Errorf("ids = %q, want %q", ids, want)
	}
	if !bytes.Contains([]byte(out), mustGet(t, s, "o-c").Conversation) {
		t.Error("the conversation's bytes are not in the output")
	}
}

func TestDeleteThreadTakesTheLease(t *testing.T) {
	h := newHarness(t)
	s := newMem()
	url := h.add("s", s)
	seed(t, s, 0)
	ctx := context.Background()

	l, err := s.AcquireWriter(ctx, "chain")
	must(t, err)
	h.fails(1, ckptstore.Code(ckptstore.ErrWriterConflict), "delete-thread", "--store", url, "chain")
	if n := countAll(t, s, []string{"chain"}); n != 12 {
		t.Fatalf("a refused delete-thread left %d of 12 checkpoints", n)
	}

	// With --wait the command waits for the holder to let go.
	done := make(chan result, 1)
	var errb syncBuffer
	go func() {
		var out syncBuffer
		code := run(ctx, []string{"delete-thread", "--wait", "--store", url, "chain"}, h.env(&out, &errb))
		done <- result{code, out.String(), errb.String()}
	}()
	for !strings.Contains(errb.String(), "waiting for its lease") {
		time.Sleep(time.Millisecond)
	}
	select {
	case r := <-done:
		t.Fatalf("delete-thread --wait ended while the lease was held: %v", r)
	default:
	}
	l.Release(ctx)
	r := <-done
	if r.code != 0 || r.stdout != "deleted thread chain: 12 checkpoints\n" {
		t.Fatalf("delete-thread --wait: %v", r)
	}
	if n := countAll(t, s, []string{"chain"}); n != 0 {
		t.Errorf("%d checkpoints left after delete-thread", n)
	}
	tr, err := s.LoadThread(ctx, "chain")
	must(t, err)
	if string(tr) != "[]" {
		t.Errorf("transcript after delete-thread = %s", tr)
	}
	// The command released its lease.
	l2, err := s.AcquireWriter(ctx, "chain")
	must(t, err)
	l2.Release(ctx)
	testkit.CheckRefs(t, s, "chain", "odd", "many")
}

func TestPrune(t *testing.T) {
	h := newHarness(t)
	s := newMem()
	url := h.add("s", s)
	seed(t, s, 0)
	r := h.ok("prune", "--store", url, "--keep", "3", "chain")
	if got := lines(r.stdout); len(got) != 9 || got[0] != "chain-0000" || got[8] != "chain-0008" {
		t.Errorf("prune printed %q", got)
	}
	if n := countAll(t, s, []string{"chain"}); n != 3 {
		t.Errorf("%d checkpoints left, want 3", n)
	}
	testkit.CheckRefs(t, s, "chain", "odd")
	h.fails(2, "--keep must be at least 1", "prune", "--store", url, "chain")
}

func TestSweep(t *testing.T) {
	h := newHarness(t)
	s := newMem()
	url := h.add("s", s)
	clock := testkit.NewClock(time.Now().Add(-time.Hour))
	b := blobs.NewMem(blobs.MemOptions{Now: clock.Now})
	h.buckets["mem://test"] = b
	ctx := context.Background()
	appendChain(t, s, "t", 2, 10) // uses FileKey 10, 11, 12
	for _, n := range []int{10, 11, 12, 13, 14} {
		must(t, b.Put(ctx, testkit.FileKey(n), strings.NewReader("x")))
	}
	r := h.ok("sweep", "--store", url, "--bucket", "mem://test", "--older-than", "30m", "--dry-run")
	want := []string{testkit.FileKey(13), testkit.FileKey(14)}
	// Keys come as the deletions finish, in no particular order.
	sorted := func(s string) []string { l := lines(s); slices.Sort(l); return l }
	if got := sorted(r.stdout); !slices.Equal(got, want) || !strings.Contains(r.stderr, "would delete 2") {
		t.Fatalf("sweep --dry-run: %v", r)
	}
	if _, err := b.Head(ctx, testkit.FileKey(13)); err != nil {
		t.Fatalf("--dry-run deleted a blob: %v", err)
	}
	r = h.ok("sweep", "--store", url, "--bucket", "mem://test", "--older-than", "30m")
	if got := sorted(r.stdout); !slices.Equal(got, want) {
		t.Fatalf("sweep: %v", r)
	}
	for _, n := range []int{13, 14} {
		if _, err := b.Head(ctx, testkit.FileKey(n)); err == nil {
			t.Errorf("blob %d survived the sweep", n)
		}
	}
	// Blobs younger than the grace period stay.
	r = h.ok("sweep", "--store", url, "--bucket", "mem://test", "--older-than", "2h")
	if r.stdout != "" || !strings.Contains(r.stderr, "3 younger") && !strings.Contains(r.stderr, "3 referenced") {
		t.Errorf("sweep --older-than 2h: %v", r)
	}
	h.fails(2, "--older-than is required", "sweep", "--store", url, "--bucket", "mem://test")
	h.fails(2, "--bucket is required", "sweep", "--store", url, "--older-than", "1h")
	h.fails(2, "scheme", "sweep", "--store", url, "--bucket", "ftp://x", "--older-than", "1h")
}

func TestCheckWithoutChecker(t *testing.T) {
	h := newHarness(t)
	url := h.add("s", newMem())
	h.fails(1, "this store has no checker", "check", "--store", url)
}

// badChecker and cleanChecker are driver.Checkers over memstore's driver.
type badChecker struct{ driver.Store }

func (badChecker) Check(context.Context) ([]driver.Problem, error) {
	return []driver.Problem{{Key: "x", What: "count at 0"}, {Key: "y", What: "chunk gap"}}, nil
}

type cleanChecker struct{ driver.Store }

func (cleanChecker) Check(context.Context) ([]driver.Problem, error) { return nil, nil }

func TestCheckCallsTheStoresChecker(t *testing.T) {
	h := newHarness(t)
	r := h.fails(1, "2 broken invariants", "check", "--store", h.add("bad", ckptstore.New(badChecker{newMem().Driver()})))
	if r.stdout != "\"x\": count at 0\n\"y\": chunk gap\n" {
		t.Errorf("check printed %q", r.stdout)
	}
	if r := h.ok("check", "--store", h.add("good", ckptstore.New(cleanChecker{newMem().Driver()}))); !strings.Contains(r.stdout, "no broken invariant") {
		t.Errorf("check on a clean store: %v", r)
	}
}

func TestBadInputExits2(t *testing.T) {
	h := newHarness(t)
	url := h.add("s", newMem())
	h.fails(2, `unknown command "nope"`, "nope")
	h.fails(2, "Commands:", []string{}...)
	h.fails(2, "--store is required", "threads")
	h.fails(2, "flag provided but not defined: -x", "threads", "--store", url, "-x")
	h.fails(2, "unexpected argument", "threads", "--store", url, "extra")
	h.fails(2, "bad store URL", "threads", "--store", "bogus://x")
	h.fails(2, "master_name is required", "threads", "--store", "redis+sentinel://127.0.0.1:1")
	h.fails(2, "min_replicas", "threads", "--store", "redis+cluster://127.0.0.1:1?min_replicas=two")
	h.fails(2, "--batch must be in", "copy", "--from", url, "--to", "test:other", "--batch", "0")
	h.fails(2, "--batch-bytes must be in", "import", "--store", url, "--batch-bytes", "99999999")
	h.fails(2, "same store", "copy", "--from", url, "--to", url)
	if r := h.run("threads", "-h"); r.code != 0 || !strings.Contains(r.stderr, "Usage: ckptctl threads") {
		t.Errorf("threads -h: %v", r)
	}
}

func TestUnreachableStoreExits1(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	// Port 1 on loopback refuses connections; max_retries=-1 makes go-redis
	// give up at the first refusal.
	r := h.fails(1, "--store: redis", "threads", "--store", "redis://127.0.0.1:1/0?max_retries=-1")
	if strings.Contains(r.stderr, "Usage:") {
		t.Errorf("an unreachable store printed usage: %v", r)
	}
}

// lostAcquire is memstore's driver whose AcquireWriter takes the lease and
// then reports the caller's context error, as when an interrupt lands
// between the commit and its reply.
type lostAcquire struct {
	driver.Store
	lose bool
}

func (s *lostAcquire) AcquireWriter(ctx context.Context, thread, opToken string) (driver.Lease, error) {
	l, err := s.Store.AcquireWriter(ctx, thread, opToken)
	if err == nil && s.lose {
		s.lose = false
		return driver.Lease{}, context.Canceled
	}
	return l, err
}

func TestALeaseTakenByAFailedAcquireIsReleased(t *testing.T) {
	ctx := context.Background()
	mem := newMem()
	appendChain(t, mem, "chain", 3, 1)
	s := ckptstore.New(&lostAcquire{Store: mem.Driver(), lose: true})
	h := newHarness(t)
	h.fails(1, "context canceled", "delete-thread", "--store", h.add("s", s), "chain")
	l, err := s.AcquireWriter(ctx, "chain")
	if err != nil {
		t.Fatalf("the lease the failed command took is still held: %v", err)
	}
	l.Release(ctx)
	if n := countAll(t, s, []string{"chain"}); n != 3 {
		t.Errorf("%d of 3 checkpoints left", n)
	}
}
