package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/redis/go-redis/v9"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/blobs"
	"github.com/ckptstore/ckptstore/internal/testkit"
	"github.com/ckptstore/ckptstore/memstore"
	pdriver "github.com/ckptstore/ckptstore/persist/driver"
)

var must = testkit.Must

func init() { redis.SetLogger(quietRedis{}) }

// syncBuffer is a bytes.Buffer safe for a command running in another
// goroutine.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// harness runs ckptctl commands in process against named stores: a URL
// "test:NAME" opens the store registered under NAME, any other URL goes
// to the real opener.
type harness struct {
	t       testing.TB
	stores  map[string]*ckptstore.Store
	buckets map[string]blobs.Bucket
	// persists are the persistence drivers of the test stores.
	persists map[string]pdriver.Driver
	stdin    string
	// afterBatch is copied into each command's env.
	afterBatch func() error
	// now, when set, is the commands' clock.
	now func() time.Time
}

func newHarness(t testing.TB) *harness {
	return &harness{t: t, stores: map[string]*ckptstore.Store{}, buckets: map[string]blobs.Bucket{}, persists: map[string]pdriver.Driver{}}
}

func (h *harness) add(name string, s *ckptstore.Store) string {
	h.stores[name] = s
	return "test:" + name
}

// result is what one command printed and returned.
type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

func (h *harness) env(stdout, stderr *syncBuffer) *env {
	e := defaultEnv(strings.NewReader(h.stdin), stdout, stderr)
	real := e.open
	e.open = func(ctx context.Context, url string, lease ckptstore.Options) (*store, error) {
		if name, ok := strings.CutPrefix(url, "test:"); ok {
			s, ok := h.stores[name]
			if !ok {
				return nil, usageErr("no test store %q", name)
			}
			return &store{Store: s, persist: h.persists[name], desc: url}, nil
		}
		return real(ctx, url, lease)
	}
	e.openBucket = func(ctx context.Context, url string) (blobs.Bucket, error) {
		if b, ok := h.buckets[url]; ok {
			return b, nil
		}
		return blobs.Open(ctx, url)
	}
	e.poll = time.Millisecond
	e.afterBatch = h.afterBatch
	if h.now != nil {
		e.now = h.now
	}
	return e
}

func (h *harness) runCtx(ctx context.Context, args ...string) result {
	h.t.Helper()
	var out, errb syncBuffer
	code := run(ctx, args, h.env(&out, &errb))
	return result{code, out.String(), errb.String()}
}

func (h *harness) run(args ...string) result {
	h.t.Helper()
	return h.runCtx(context.Background(), args...)
}

// ok runs a command that must succeed.
func (h *harness) ok(args ...string) result {
	h.t.Helper()
	r := h.run(args...)
	if r.code != 0 {
		h.t.Fatalf("ckptctl %s: %v", strings.Join(args, " "), r)
	}
	return r
}

// fails runs a command that must exit with code and print want on stderr.
func (h *harness) fails(code int, want string, args ...string) result {
	h.t.Helper()
	r := h.run(args...)
	if r.code != code || !strings.Contains(r.stderr, want) {
		h.t.Fatalf("ckptctl %s: want exit %d and %q on stderr, got %v", strings.Join(args, " "), code, want, r)
	}
	return r
}

func newMem() *ckptstore.Store { return memstore.New(ckptstore.Options{}) }

// importAll writes a thread into s exactly, through Import under a lease.
func importAll(t testing.TB, s *ckptstore.Store, thread, head string, transcript json.RawMessage, cps ...*ckptstore.Checkpoint) {
	t.Helper()
	ctx := context.Background()
	l, err := s.AcquireWriter(ctx, thread)
	must(t, err)
	defer l.Release(ctx)
	_, err = s.Import(ctx, ckptstore.ImportBatch{
		ThreadID: thread, Checkpoints: cps, SetHead: head != "", Head: head, Transcript: transcript, Writer: l.Writer,
	})
	must(t, err)
}

// appendChain appends n checkpoints to thread with Append, the way a
// harness does: each shares one blob with its parent and has a fresh one.
func appendChain(t testing.TB, s *ckptstore.Store, thread string, n, keyBase int) {
	t.Helper()
	ctx := context.Background()
	l, err := s.AcquireWriter(ctx, thread)
	must(t, err)
	defer l.Release(ctx)
	head, err := s.GetHead(ctx, thread)
	must(t, err)
	for i := range n {
		id := fmt.Sprintf("%s-%04d", thread, i)
		cp := testkit.Checkpoint(thread, id, head, 1_700_000_000_000+float64(i)*1.25, keyBase, keyBase+1+i)
		cp.Conversation = json.RawMessage(fmt.Sprintf(`[{"role":"user","content":"step %d"}]`, i))
		must(t, s.Append(ctx, cp, head, l.Writer))
		head = id
	}
}

// seed fills s with the shapes a migration must reproduce and returns the
// thread ids and the number of checkpoints:
//
//   - chain: an appended chain with a transcript;
//   - odd: imported checkpoints off the chain, createdAt -0, 0, a
//     subnormal and ties, a parent and a head that do not exist, no
//     conversation, and one with raw newlines, HTML characters and
//     non-ASCII text;
//   - only-transcript: a transcript with raw newlines and no checkpoint;
//   - empty-transcript: a saved "[]" and nothing else;
//   - many: enough checkpoints for several batches.
func seed(t testing.TB, s *ckptstore.Store, many int) (threads []string, cps int) {
	t.Helper()
	ctx := context.Background()
	tr := s
	appendChain(t, s, "chain", 12, 1000)
	must(t, tr.SaveThread(ctx, "chain", json.RawMessage(`[{"role":"user","content":"hi"}]`)))

	negZero := math.Copysign(0, -1)
	odd := []*ckptstore.Checkpoint{
		testkit.Checkpoint("odd", "o-a", "", negZero, 1, 2),
		testkit.Checkpoint("odd", "o-b", "o-a", 0, 2, 3),
		testkit.Checkpoint("odd", "o-c", "o-a", 5e-324, 3),
		testkit.Checkpoint("odd", "o-d", "missing-parent", 7, 4),
		testkit.Checkpoint("odd", "o-e", "o-d", 7, 1),
	}
	odd[0].Conversation = nil // a checkpoint without one
	odd[1].Reason = ckptstore.ReasonNamed
	odd[1].Label = "named <&>"
	odd[1].SourceRunID = "run-1"
	odd[2].Conversation = json.RawMessage("[\n  {\"role\": \"user\", \"content\": \"h\u00e9llo <b>&amp;</b>\"},\n  {\"x\": [1, 2.50, 1e3]}\n]")
	odd[3].Files = append([]ckptstore.Entry{{Path: "src", Kind: ckptstore.KindDir}}, odd[3].Files...)
	odd[4].Artifacts = []ckptstore.Artifact{{
		ArtifactID: "art", Name: "report.pdf", MimeType: "application/pdf", Size: 9, BlobKey: testkit.ArtifactKey(1), CreatedAt: 0.1,
	}}
	importAll(t, s, "odd", "gone", nil, odd...)
	must(t, tr.SaveThread(ctx, "only-transcript", json.RawMessage("[\n\t{\"role\":\"assistant\"} ]")))
	must(t, tr.SaveThread(ctx, "empty-transcript", json.RawMessage("[]")))
	var big []*ckptstore.Checkpoint
	parent := ""
	for i := range many {
		id := fmt.Sprintf("m-%05d", i)
		big = append(big, testkit.Checkpoint("many", id, parent, float64(i), 5000, 5001+i%7))
		parent = id
	}
	if many > 0 {
		importAll(t, s, "many", parent, json.RawMessage(`["done"]`), big...)
	}
	threads = []string{"chain", "empty-transcript", "many", "odd", "only-transcript"}
	return threads, 12 + len(odd) + many
}

// countAll returns how many checkpoints s holds in threads.
func countAll(t testing.TB, s *ckptstore.Store, threads []string) int {
	t.Helper()
	n := 0
	for _, th := range threads {
		cps, err := s.List(context.Background(), th)
		must(t, err)
		n += len(cps)
	}
	return n
}

// streamRecords yields the persistence records an export stream holds.
func streamRecords(r io.Reader) iter.Seq2[pdriver.Record, error] {
	return func(yield func(pdriver.Record, error) bool) {
		dec := jsontext.NewDecoder(r, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
		for {
			v, err := dec.ReadValue()
			if err == io.EOF {
				return
			}
			if err != nil {
				yield(pdriver.Record{}, err)
				return
			}
			if !isPersist(v) {
				continue
			}
			var rec pdriver.Record
			if err := rec.UnmarshalJSON(v); !yield(rec, err) || err != nil {
				return
			}
		}
	}
}
