package workload

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/conformance"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/memstore"
)

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int{"0": 0, "512": 512, "2KB": 2048, "2kb": 2048, "50KiB": 51200, "1MB": 1 << 20, " 3 K ": 3072, "7B": 7} {
		got, err := ParseSize(in)
		if err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "KB", "-1", "2XB", "1.5KB", "9MB", "99999999999"} {
		if _, err := ParseSize(in); !errors.Is(err, ErrBadSize) {
			t.Errorf("ParseSize(%q) = %v, want ErrBadSize", in, err)
		}
	}
}

func TestSizeDist(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	d := MustSizeDist("2KB")
	if got := d.Draw(r); got != 2048 {
		t.Errorf("fixed draw %d", got)
	}
	u := MustSizeDist("1KB-2KB")
	for range 1000 {
		if v := u.Draw(r); v < 1024 || v > 2048 {
			t.Fatalf("uniform draw %d outside [1024, 2048]", v)
		}
	}
	w := MustSizeDist("1KB:0.9,50KB:0.1")
	big := 0
	for range 10000 {
		switch w.Draw(r) {
		case 50 << 10:
			big++
		case 1 << 10:
		default:
			t.Fatal("weighted draw outside its sizes")
		}
	}
	if big < 800 || big > 1200 { // 1000 expected; 10 standard deviations is ~300
		t.Errorf("50KB drawn %d times in 10000, want about 1000", big)
	}
	for _, bad := range []string{"2KB-1KB", "1KB:0", "1KB:-1", "1KB:x", "x", "1KB,,2KB"} {
		if _, err := ParseSizeDist(bad); !errors.Is(err, ErrBadSize) {
			t.Errorf("ParseSizeDist(%q) = %v, want ErrBadSize", bad, err)
		}
	}
}

func TestGenValidAndSized(t *testing.T) {
	for _, size := range []string{"2KB", "50KB"} {
		g := NewGenSeed(GenOptions{Namespace: "ns", Payload: MustSizeDist(size), BlobShare: 0.5, GlobalBlobs: 2, ArtifactRate: 1}, 1, 2)
		want, _ := ParseSize(size)
		var prev *ckptstore.Checkpoint
		for range 20 {
			cp, fresh := g.Next("t", g.NewID(), "", prev)
			if err := driver.Validate(cp); err != nil {
				t.Fatalf("%s: invalid checkpoint: %v", size, err)
			}
			b, err := json.Marshal(cp)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(b); n < want*8/10 || n > want*13/10 {
				t.Errorf("%s: checkpoint JSON is %d bytes", size, n)
			}
			for _, k := range cp.BlobKeys() {
				if !OwnsKey(g.Tag(), k) {
					t.Errorf("key %q lacks the tag %q", k, g.Tag())
				}
			}
			if len(fresh) == 0 && prev == nil {
				t.Errorf("a first checkpoint reported no fresh keys")
			}
			prev = cp
		}
	}
}

func TestGenSharing(t *testing.T) {
	count := func(share float64) (fresh, total int) {
		g := NewGenSeed(GenOptions{Payload: MustSizeDist("20KB"), BlobShare: share}, 3, 4)
		prev, _ := g.Next("t", g.NewID(), "", nil)
		for range 50 {
			cp, f := g.Next("t", g.NewID(), prev.ID, prev)
			fresh += len(f)
			total += len(cp.BlobKeys())
			prev = cp
		}
		return fresh, total
	}
	if f, _ := count(1); f != 0 {
		t.Errorf("BlobShare 1 made %d fresh keys", f)
	}
	if f, n := count(0); f != n {
		t.Errorf("BlobShare 0 made %d fresh keys of %d", f, n)
	}
	if f, n := count(0.8); f < n/10 || f > n*3/10 {
		t.Errorf("BlobShare 0.8 made %d fresh keys of %d, want about a fifth", f, n)
	}
}

func TestGenIDsUniqueAndSizeSticky(t *testing.T) {
	a, b := NewGen(GenOptions{Payload: MustSizeDist("1KB-50KB")}), NewGen(GenOptions{Payload: MustSizeDist("1KB-50KB")})
	seen := map[string]bool{}
	for range 1000 {
		for _, id := range []string{a.NewID(), b.NewID()} {
			if seen[id] {
				t.Fatalf("id %q made twice", id)
			}
			seen[id] = true
		}
	}
	if a.size("thread-x") != b.size("thread-x") {
		t.Errorf("two Gens disagree on a thread's payload size")
	}
	if GlobalBlobKey("ns", 0) == GlobalBlobKey("ns", 1) || GlobalBlobKey("ns", 0) == GlobalBlobKey("other", 0) {
		t.Errorf("global keys collide")
	}
}

func TestLatencies(t *testing.T) {
	l := NewLatencies()
	for i := range 100 {
		l.Record("append", time.Duration(i+1)*time.Millisecond, nil)
	}
	l.Record("append", time.Second, fmt.Errorf("wrapped: %w", ckptstore.ErrWriterLost))
	l.Record("head", time.Microsecond, context.Canceled)
	l.Record("head", time.Microsecond, errors.New("dial tcp: refused"))
	l.Record("head", time.Microsecond, fmt.Errorf("memkv: commit abandoned: %w", context.DeadlineExceeded))
	s := l.Summary(time.Second, "head", "append")
	if len(s) != 2 || s[0].Op != "head" || s[1].Op != "append" {
		t.Fatalf("order: %+v", s)
	}
	a := s[1]
	if a.Count != 101 || a.Errors != 1 || a.Codes["SANDBOX_SNAPSHOT_WRITER_LOST"] != 1 {
		t.Errorf("append summary %+v", a)
	}
	if a.P50 < 49*time.Millisecond || a.P50 > 52*time.Millisecond || a.Max < time.Second*999/1000 {
		t.Errorf("percentiles p50 %v max %v", a.P50, a.Max)
	}
	if h := s[0]; h.Codes[CodeCanceled] != 1 || h.Codes[CodeDeadline] != 1 || h.Codes[CodeOther] != 1 || h.Errors != 3 ||
		!strings.Contains(h.Samples[CodeOther], "refused") || !strings.Contains(h.Samples[CodeDeadline], "abandoned") {
		t.Errorf("head summary %+v", h)
	}
}

// fakeStore serves fixed List and Head answers and ListBlobReferences, to
// feed the checks states no correct store produces.
type fakeStore struct {
	conformance.Store
	lists map[string][]*ckptstore.Checkpoint
	heads map[string]string
	refs  []ckptstore.BlobRef
}

func (f *fakeStore) List(_ context.Context, t string) ([]*ckptstore.Checkpoint, error) {
	return f.lists[t], nil
}
func (f *fakeStore) GetHead(_ context.Context, t string) (string, error) { return f.heads[t], nil }
func (f *fakeStore) ListBlobReferences(context.Context) ([]ckptstore.BlobRef, error) {
	return f.refs, nil
}

func TestChecksCatchViolations(t *testing.T) {
	g := NewGenSeed(GenOptions{Namespace: "v", Payload: MustSizeDist("1KB")}, 5, 6)
	root, _ := g.Next("t", "a", "", nil)
	left, _ := g.Next("t", "b", "a", root)
	right, _ := g.Next("t", "c", "a", root) // a second child of a: a branch
	right.CreatedAt = left.CreatedAt + 1
	branched := &fakeStore{
		lists: map[string][]*ckptstore.Checkpoint{"t": {root, left, right}},
		heads: map[string]string{"t": "c"},
	}
	var p Problems
	c, err := CheckChains(context.Background(), branched, []string{"t"}, g.Tag(), &p)
	if err != nil {
		t.Fatal(err)
	}
	if p.OK() || !strings.Contains(p.List[0], "not one linear chain") {
		t.Errorf("a branch passed: %+v", p)
	}

	// A count off by one, and a key counted that no checkpoint uses.
	var refs []ckptstore.BlobRef
	for k, n := range c.Refs {
		refs = append(refs, ckptstore.BlobRef{Key: k, References: n})
	}
	refs[0].References++
	refs = append(refs, ckptstore.BlobRef{Key: FilesKeyPrefix + g.Tag() + strings.Repeat("f", 56), References: 1})
	slices.SortFunc(refs, func(a, b ckptstore.BlobRef) int { return strings.Compare(a.Key, b.Key) })
	branched.refs = refs
	p = Problems{}
	if err := CheckRefs(context.Background(), branched, g.Tag(), c, &p); err != nil {
		t.Fatal(err)
	}
	if p.Count != 2 {
		t.Errorf("want 2 reference problems, got %+v", p)
	}
}

func TestChecksPassRealStore(t *testing.T) {
	ctx := context.Background()
	s := memstore.New(ckptstore.Options{})
	g := NewGenSeed(GenOptions{Namespace: "ok", Payload: MustSizeDist("2KB"), BlobShare: 0.5, GlobalBlobs: 1}, 7, 8)
	threads := []string{"t1", "t2"}
	for _, th := range threads {
		l, err := s.AcquireWriter(ctx, th)
		if err != nil {
			t.Fatal(err)
		}
		head, prev := "", (*ckptstore.Checkpoint)(nil)
		for range 30 {
			cp, _ := g.Next(th, g.NewID(), head, prev)
			if err := s.Append(ctx, cp, head, l.Writer); err != nil {
				t.Fatal(err)
			}
			head, prev = cp.ID, cp
		}
		if _, err := s.DeleteCheckpoints(ctx, th, 5, l.Writer); err != nil {
			t.Fatal(err)
		}
		l.Release(ctx)
	}
	var p Problems
	c, err := CheckChains(ctx, s, threads, g.Tag(), &p)
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckRefs(ctx, s, g.Tag(), c, &p); err != nil {
		t.Fatal(err)
	}
	if !p.OK() || c.Checkpoints != 10 {
		t.Errorf("a correct store failed the checks (%d checkpoints): %v", c.Checkpoints, p.List)
	}
}

// TestErrorCodeNotReplicated: a write that is not on enough replicas is
// counted apart from the other errors, also when wrapped.
func TestErrorCodeNotReplicated(t *testing.T) {
	if c := ErrorCode(fmt.Errorf("append: %w", ckptstore.ErrNotReplicated)); c != CodeNotReplicated {
		t.Errorf("ErrorCode(ErrNotReplicated) = %q", c)
	}
	if c := ErrorCode(errors.New("connection refused")); c != CodeOther {
		t.Errorf("ErrorCode(a network error) = %q", c)
	}
}
