package conformance_test

// The suite tests itself: each mutant below is memstore with one planted
// bug. TestMutants runs the suite on each mutant in a child process (a
// failing suite fails its test, so it cannot run in this one) and checks
// that the subtests meant to catch the bug fail — and that the model-based
// test catches it on its own where its operations can see the bug. The
// children run 300 model sequences rather than 100: a planted bug shows in
// about one sequence in fifteen, and the meta-test must not be flaky.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/conformance"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/memstore"
)

const mutantEnv = "CONFORMANCE_MUTANT"

// mutants maps each planted bug to the subtests that must catch it.
var mutants = map[string][]string{
	"utf16-order":        {"Ordering"},
	"zero-refs":          {"BlobReferences", "Model"},
	"per-entry-refs":     {"BlobReferences", "Model"},
	"dup-before-writer":  {"AppendOrder", "Model"},
	"ignore-fence":       {"AppendOrder", "Leases", "Model"},
	"late-expiry":        {"Leases", "Model"},
	"release-any":        {"Leases", "Model"},
	"shared-get":         {"Immutability"},
	"lax-read-ids":       {"IDs", "Model"},
	"prune-newest-first": {"DeleteCheckpoints", "Model"},
	"fork-keeps-label":   {"Fork", "Model"},
	// The optional capabilities and op tokens.
	"page-repeats-cursor":            {"ListPage", "Model"},
	"threads-need-checkpoints":       {"Threads", "Transcripts", "Model"},
	"delete-thread-keeps-transcript": {"DeleteThread", "Model"},
	"import-skips-other-content":     {"Import", "ImportOrder", "Model"},
	"fork-transcript-empty":          {"ForkTranscript", "Model"},
	"op-tokens-ignored":              {"OpTokens", "Model"},
}

func TestMutants(t *testing.T) {
	if os.Getenv(mutantEnv) != "" {
		t.Skip("in a mutant child process")
	}
	if testing.Short() {
		t.Skip("runs the suite in child processes; skipped with -short")
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range mutants {
			if !yield(k) {
				return
			}
		}
	})
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			t.Parallel() // child processes: as many at once as -test.parallel allows
			for _, sub := range mutants[name] {
				cmd := exec.Command(os.Args[0], "-test.run=^TestMutantChild$/^"+sub+"$",
					"-rapid.nofailfile", "-rapid.shrinktime=1s", "-rapid.checks=300")
				cmd.Env = append(os.Environ(), mutantEnv+"="+name)
				out, err := cmd.CombinedOutput()
				var exit *exec.ExitError
				if !errors.As(err, &exit) {
					t.Errorf("mutant %s, subtest %s: the suite passed (err %v); it must catch the bug.\n%s", name, sub, err, tail(out))
					continue
				}
				if !regexp.MustCompile(`--- FAIL: TestMutantChild/` + sub + `\b`).Match(out) {
					t.Errorf("mutant %s: subtest %s did not fail:\n%s", name, sub, tail(out))
				}
			}
		})
	}
}

func tail(b []byte) string {
	s := string(b)
	if len(s) > 3000 {
		s = "…" + s[len(s)-3000:]
	}
	return s
}

// TestMutantChild runs the suite on the mutant named in the environment.
func TestMutantChild(t *testing.T) {
	name := os.Getenv(mutantEnv)
	if name == "" {
		t.Skip("only runs as a child of TestMutants")
	}
	newMutant := func(t *testing.T, opts ckptstore.Options) conformance.Store {
		m := &mutant{kind: name, latest: map[string]ckptstore.Writer{}, seen: map[string]bool{},
			cache: map[string]*ckptstore.Checkpoint{}, threads: map[string]bool{}}
		if name == "late-expiry" {
			// Leases live 1ms longer than the store reports: as if it
			// tested now > expiresAt instead of now >= expiresAt.
			opts.LeaseDuration += time.Millisecond
		}
		m.Store = memstore.New(opts)
		return m
	}
	// Both halves of the check orders, under the same subtest names, so
	// that a mutant of a pure check is caught as before the split.
	conformance.RunStore(t, newMutant)
	conformance.RunPureChecks(t, newMutant)
}

// TestPureChecks runs the pure half of every check order once, over
// memstore: the portable store decides it before any driver, so the
// backends' suites (RunStore) leave it out.
func TestPureChecks(t *testing.T) {
	conformance.RunPureChecks(t, func(t *testing.T, opts ckptstore.Options) conformance.Store {
		return memstore.New(opts)
	})
}

// mutant is memstore with the bug named by kind.
type mutant struct {
	*ckptstore.Store
	kind string

	mu      sync.Mutex
	latest  map[string]ckptstore.Writer // newest lease granted per thread
	seen    map[string]bool             // blob keys ever reported
	cache   map[string]*ckptstore.Checkpoint
	threads map[string]bool
}

func (m *mutant) written() {
	m.mu.Lock()
	clear(m.cache)
	m.mu.Unlock()
}

func (m *mutant) Get(ctx context.Context, id string) (*ckptstore.Checkpoint, error) {
	if m.kind == "lax-read-ids" && id != "" && !utf8.ValidString(id) {
		return nil, nil
	}
	if m.kind != "shared-get" {
		return m.Store.Get(ctx, id)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.cache[id]; ok {
		return c, nil
	}
	c, err := m.Store.Get(ctx, id)
	if err == nil && c != nil {
		m.cache[id] = c
	}
	return c, err
}

func (m *mutant) List(ctx context.Context, thread string) ([]*ckptstore.Checkpoint, error) {
	if m.kind == "lax-read-ids" && thread != "" && !utf8.ValidString(thread) {
		return nil, nil
	}
	l, err := m.Store.List(ctx, thread)
	if m.kind == "utf16-order" {
		slices.SortStableFunc(l, func(a, b *ckptstore.Checkpoint) int {
			if c := cmp.Compare(a.CreatedAt, b.CreatedAt); c != 0 {
				return c
			}
			return slices.Compare(utf16.Encode([]rune(a.ID)), utf16.Encode([]rune(b.ID)))
		})
	}
	return l, err
}

func (m *mutant) GetHead(ctx context.Context, thread string) (string, error) {
	if m.kind == "lax-read-ids" && thread != "" && !utf8.ValidString(thread) {
		return "", nil
	}
	return m.Store.GetHead(ctx, thread)
}

// ctx drops the caller's op token for the op-tokens-ignored mutant.
func (m *mutant) ctx(ctx context.Context) context.Context {
	if m.kind == "op-tokens-ignored" {
		return ckptstore.WithOpToken(ctx, "")
	}
	return ctx
}

func (m *mutant) Append(ctx context.Context, c *ckptstore.Checkpoint, expected string, w ckptstore.Writer) error {
	defer m.written()
	ctx = m.ctx(ctx)
	m.mu.Lock()
	if c != nil {
		m.threads[c.ThreadID] = true
	}
	latest := m.latest[w.ThreadID]
	m.mu.Unlock()
	switch m.kind {
	case "dup-before-writer":
		if driver.ValidateAppend(c, expected, w) == nil {
			if old, _ := m.Store.Get(ctx, c.ID); old != nil {
				return fmt.Errorf("%w: %q", ckptstore.ErrDuplicateID, c.ID)
			}
		}
	case "ignore-fence":
		if latest.OwnerToken == w.OwnerToken {
			w.Fence = latest.Fence
		}
	}
	return m.Store.Append(ctx, c, expected, w)
}

func (m *mutant) DeleteHead(ctx context.Context, thread, id string, w ckptstore.Writer) error {
	defer m.written()
	ctx = m.ctx(ctx)
	if m.kind == "not-head-first" && driver.ValidateDeleteHead(thread, id, w) == nil {
		if h, _ := m.Store.GetHead(ctx, thread); h != id {
			return fmt.Errorf("%w: %q", ckptstore.ErrNotHead, id)
		}
	}
	return m.Store.DeleteHead(ctx, thread, id, w)
}

func (m *mutant) DeleteCheckpoints(ctx context.Context, thread string, keep int, w ckptstore.Writer) ([]string, error) {
	defer m.written()
	if m.kind == "writer-before-keep" && keep < 1 {
		// Check the writer first: a prune that keeps everything.
		if _, err := m.Store.DeleteCheckpoints(ctx, thread, 1<<53-1, w); err != nil {
			return nil, err
		}
	}
	d, err := m.Store.DeleteCheckpoints(ctx, thread, keep, w)
	if m.kind == "prune-newest-first" {
		slices.Reverse(d)
	}
	return d, err
}

func (m *mutant) ForkFromCheckpoint(ctx context.Context, in ckptstore.ForkInput) (*ckptstore.Checkpoint, error) {
	defer m.written()
	ctx = m.ctx(ctx)
	m.mu.Lock()
	m.threads[in.DestinationThreadID] = true
	m.mu.Unlock()
	c, err := m.Store.ForkFromCheckpoint(ctx, in)
	if err == nil && m.kind == "fork-transcript-empty" {
		_ = m.Store.SaveThread(ctx, in.DestinationThreadID, []byte("[]"))
	}
	if err == nil && m.kind == "fork-keeps-label" {
		if src, _ := m.Store.Get(ctx, in.SourceCheckpointID); src != nil {
			c.Label = src.Label
			c.SourceRunID = src.SourceRunID
		}
	}
	return c, err
}

func (m *mutant) AcquireWriter(ctx context.Context, thread string) (*ckptstore.Lease, error) {
	l, err := m.Store.AcquireWriter(m.ctx(ctx), thread)
	if err != nil {
		return l, err
	}
	m.mu.Lock()
	m.latest[thread] = l.Writer
	m.mu.Unlock()
	switch m.kind {
	case "late-expiry":
		return driver.NewLease(l.Writer, l.ExpiresAt.Add(-time.Millisecond), l.RenewAfter, keeper{m}), nil
	case "release-any":
		return driver.NewLease(l.Writer, l.ExpiresAt, l.RenewAfter, keeper{m}), nil
	}
	return l, nil
}

// keeper backs the mutants' leases.
type keeper struct{ m *mutant }

func (k keeper) Renew(ctx context.Context, w ckptstore.Writer) (time.Time, error) {
	t, err := k.m.Store.Renew(ctx, w)
	if err == nil && k.m.kind == "late-expiry" {
		t = t.Add(-time.Millisecond)
	}
	return t, err
}

func (k keeper) Release(ctx context.Context, w ckptstore.Writer) error {
	if k.m.kind == "release-any" {
		k.m.mu.Lock()
		w = k.m.latest[w.ThreadID]
		k.m.mu.Unlock()
	}
	return k.m.Store.Release(ctx, w)
}

func (m *mutant) ListBlobReferences(ctx context.Context) ([]ckptstore.BlobRef, error) {
	refs, err := m.Store.ListBlobReferences(ctx)
	if err != nil {
		return refs, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch m.kind {
	case "zero-refs":
		have := map[string]bool{}
		for _, r := range refs {
			m.seen[r.Key], have[r.Key] = true, true
		}
		for k := range m.seen {
			if !have[k] {
				refs = append(refs, ckptstore.BlobRef{Key: k})
			}
		}
		slices.SortFunc(refs, func(a, b ckptstore.BlobRef) int { return strings.Compare(a.Key, b.Key) })
	case "per-entry-refs":
		n := map[string]int64{}
		for th := range m.threads {
			l, _ := m.Store.List(ctx, th)
			for _, c := range l {
				for _, e := range c.Files {
					if e.Kind == ckptstore.KindFile {
						n[e.BlobKey]++
					}
				}
				for _, a := range c.Artifacts {
					n[a.BlobKey]++
				}
			}
		}
		refs = refs[:0]
		for k, c := range n {
			refs = append(refs, ckptstore.BlobRef{Key: k, References: c})
		}
		slices.SortFunc(refs, func(a, b ckptstore.BlobRef) int { return strings.Compare(a.Key, b.Key) })
	}
	return refs, nil
}

func (m *mutant) ListPage(ctx context.Context, thread string, opt ckptstore.ListOptions) ([]*ckptstore.Checkpoint, string, error) {
	page, next, err := m.Store.ListPage(ctx, thread, opt)
	if err != nil || m.kind != "page-repeats-cursor" || opt.After == "" {
		return page, next, err
	}
	// The page starts at the cursor's checkpoint instead of after it.
	pos, _ := driver.DecodeCursor(opt.After)
	if c, _ := m.Store.Get(ctx, pos.ID); c != nil && c.ThreadID == thread && c.CreatedAt == pos.CreatedAt {
		page = append([]*ckptstore.Checkpoint{c}, page...)
		if limit := cmp.Or(opt.Limit, 100); len(page) > limit {
			page = page[:limit]
		}
	}
	return page, next, nil
}

func (m *mutant) Threads(ctx context.Context, after string, limit int) ([]string, string, error) {
	ids, next, err := m.Store.Threads(ctx, after, limit)
	if err != nil || m.kind != "threads-need-checkpoints" {
		return ids, next, err
	}
	// Only threads with a head or a checkpoint, not those with only a
	// transcript.
	return slices.DeleteFunc(ids, func(id string) bool {
		h, _ := m.Store.GetHead(ctx, id)
		l, _ := m.Store.List(ctx, id)
		return h == "" && len(l) == 0
	}), next, nil
}

func (m *mutant) DeleteThread(ctx context.Context, thread string, w ckptstore.Writer) (int, error) {
	defer m.written()
	if m.kind != "delete-thread-keeps-transcript" {
		return m.Store.DeleteThread(ctx, thread, w)
	}
	tr, _ := m.Store.LoadThread(ctx, thread)
	n, err := m.Store.DeleteThread(ctx, thread, w)
	if err == nil && string(tr) != "[]" {
		_ = m.Store.SaveThread(ctx, thread, tr)
	}
	return n, err
}

func (m *mutant) Import(ctx context.Context, b ckptstore.ImportBatch) (int, error) {
	defer m.written()
	if m.kind == "import-skips-other-content" && driver.ValidateImport(b) == nil {
		// A checkpoint stored in the thread is skipped whatever its
		// content.
		b.Checkpoints = slices.DeleteFunc(slices.Clone(b.Checkpoints), func(c *ckptstore.Checkpoint) bool {
			old, _ := m.Store.Get(ctx, c.ID)
			return old != nil && old.ThreadID == b.ThreadID
		})
	}
	return m.Store.Import(ctx, b)
}
