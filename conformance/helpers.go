package conformance

// Shared test machinery: error assertions against exactly one sentinel,
// checkpoint builders, a comparison that treats nil and empty alike, and the
// snapshot that proves a failed write changed nothing. Nothing here calls the
// root package's validation or ordering code: the suite must not trust what
// it tests.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ckptstore/ckptstore"
)

// tb is what the assertion helpers need; *testing.T and *rapid.T have it.
type tb interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// sentinels lists every contract error with its wire code, written out here
// rather than taken from ckptstore.Code so that a wrong code is caught.
var sentinels = []struct {
	err  error
	name string
	code string
}{
	{ckptstore.ErrConflict, "ErrConflict", "SANDBOX_SNAPSHOT_STALE_HEAD"},
	{ckptstore.ErrParentMismatch, "ErrParentMismatch", "SANDBOX_SNAPSHOT_PARENT_MISMATCH"},
	{ckptstore.ErrDuplicateID, "ErrDuplicateID", "SANDBOX_SNAPSHOT_DUPLICATE_ID"},
	{ckptstore.ErrNotHead, "ErrNotHead", "SANDBOX_SNAPSHOT_NOT_HEAD"},
	{ckptstore.ErrWriterConflict, "ErrWriterConflict", "SANDBOX_SNAPSHOT_WRITER_CONFLICT"},
	{ckptstore.ErrWriterLost, "ErrWriterLost", "SANDBOX_SNAPSHOT_WRITER_LOST"},
	{ckptstore.ErrInvalidID, "ErrInvalidID", "SANDBOX_SNAPSHOT_INVALID_ID"},
	{ckptstore.ErrInvalidEntry, "ErrInvalidEntry", "SANDBOX_SNAPSHOT_INVALID_ENTRY"},
	{ckptstore.ErrForkSourceNotFound, "ErrForkSourceNotFound", "SANDBOX_SNAPSHOT_FORK_SOURCE_NOT_FOUND"},
	{ckptstore.ErrForkSourceThreadMismatch, "ErrForkSourceThreadMismatch", "SANDBOX_SNAPSHOT_FORK_SOURCE_THREAD_MISMATCH"},
	{ckptstore.ErrForkDestinationNotEmpty, "ErrForkDestinationNotEmpty", "SANDBOX_SNAPSHOT_FORK_DESTINATION_NOT_EMPTY"},
}

// errName names a sentinel (or nil) for messages.
func errName(err error) string {
	if err == nil {
		return "no error"
	}
	for _, s := range sentinels {
		if s.err == err {
			return s.name
		}
	}
	return err.Error()
}

// errMismatch describes how err differs from want (a sentinel or nil), or
// returns "" when it matches: errors.Is(err, want), the wire code of want,
// and no other sentinel.
func errMismatch(err, want error) string {
	if want == nil {
		if err != nil {
			return fmt.Sprintf("got error %v, want none", err)
		}
		return ""
	}
	if err == nil {
		return fmt.Sprintf("got no error, want %s", errName(want))
	}
	if !errors.Is(err, want) {
		return fmt.Sprintf("got error %q (code %q), want %s", err, ckptstore.Code(err), errName(want))
	}
	for _, s := range sentinels {
		if s.err == want {
			if c := ckptstore.Code(err); c != s.code {
				return fmt.Sprintf("error %q has code %q, want %q", err, c, s.code)
			}
			continue
		}
		if errors.Is(err, s.err) {
			return fmt.Sprintf("error %q matches %s as well as %s", err, s.name, errName(want))
		}
	}
	return ""
}

// wantErr reports an error unless err matches want exactly (see
// errMismatch); it returns whether it matched.
func wantErr(t tb, what string, err, want error) bool {
	t.Helper()
	if m := errMismatch(err, want); m != "" {
		t.Errorf("%s: %s", what, m)
		return false
	}
	return true
}

// must fails the test now when err is not nil.
func must(t tb, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: unexpected error: %v", what, err)
	}
}

// ---- builders ----

// fileKey and artifactKey return distinct valid blob keys for n.
func fileKey(n int) string     { return fmt.Sprintf("sandbox-files/sha256/%064x", n) }
func artifactKey(n int) string { return fmt.Sprintf("sandbox-artifacts/sha256/%064x", n) }

func file(path string, key int, size int64) ckptstore.Entry {
	return ckptstore.Entry{Path: path, Kind: ckptstore.KindFile, BlobKey: fileKey(key), Size: size}
}

func dir(path string) ckptstore.Entry {
	return ckptstore.Entry{Path: path, Kind: ckptstore.KindDir}
}

func artifact(id string, key int) ckptstore.Artifact {
	return ckptstore.Artifact{ArtifactID: id, Name: id + ".txt", MimeType: "text/plain",
		Size: 3, BlobKey: artifactKey(key), CreatedAt: 1.5}
}

// cp returns a minimal valid checkpoint.
func cp(id, thread, parent string) *ckptstore.Checkpoint {
	return &ckptstore.Checkpoint{ID: id, ThreadID: thread, ParentCheckpointID: parent,
		CreatedAt: 1000, Reason: ckptstore.ReasonAutomatic}
}

// richCP returns a checkpoint that sets every field.
func richCP(id, thread, parent string) *ckptstore.Checkpoint {
	c := cp(id, thread, parent)
	c.CreatedAt = 1_700_000_000_123.25
	c.Reason = ckptstore.ReasonNamed
	c.Label = "before refactor ✓"
	c.SourceRunID = "run-42"
	c.Files = []ckptstore.Entry{
		dir("src"),
		file("src/main.go", 1, 120),
		file("README.md", 2, 0),
		dir("src/empty"),
		file("copy-of-main.go", 1, 120),
	}
	c.Conversation = []byte(`[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"text","text":"é"}]}]`)
	c.Artifacts = []ckptstore.Artifact{artifact("a1", 1), artifact("a2", 2)}
	return c
}

// ---- comparison ----

// cpDiff describes the first difference between two checkpoints, or "".
// Nil and empty slices are equal; an empty conversation equals "[]".
// createdAt compares with ==, so -0 equals 0: the contract keeps the value,
// not the sign of zero.
func cpDiff(got, want *ckptstore.Checkpoint) string {
	switch {
	case got == nil && want == nil:
		return ""
	case got == nil:
		return fmt.Sprintf("got nil, want checkpoint %q", want.ID)
	case want == nil:
		return fmt.Sprintf("got checkpoint %q, want nil", got.ID)
	}
	var d []string
	cmpf := func(name string, g, w any) {
		if g != w {
			d = append(d, fmt.Sprintf("%s: got %#v, want %#v", name, g, w))
		}
	}
	cmpf("ID", got.ID, want.ID)
	cmpf("ThreadID", got.ThreadID, want.ThreadID)
	cmpf("ParentCheckpointID", got.ParentCheckpointID, want.ParentCheckpointID)
	if got.CreatedAt != want.CreatedAt {
		d = append(d, fmt.Sprintf("CreatedAt: got %v, want %v", got.CreatedAt, want.CreatedAt))
	}
	cmpf("Reason", got.Reason, want.Reason)
	cmpf("Label", got.Label, want.Label)
	cmpf("SourceRunID", got.SourceRunID, want.SourceRunID)
	if !slices.Equal(got.Files, want.Files) {
		d = append(d, fmt.Sprintf("Files: got %+v, want %+v", got.Files, want.Files))
	}
	if !bytes.Equal(convBytes(got.Conversation), convBytes(want.Conversation)) {
		d = append(d, fmt.Sprintf("Conversation: got %q, want %q", got.Conversation, want.Conversation))
	}
	if !slices.EqualFunc(got.Artifacts, want.Artifacts, func(a, b ckptstore.Artifact) bool {
		// == on the struct would do, but spell it out so a NaN can't hide.
		return a.ArtifactID == b.ArtifactID && a.Name == b.Name && a.MimeType == b.MimeType &&
			a.Size == b.Size && a.BlobKey == b.BlobKey && a.CreatedAt == b.CreatedAt
	}) {
		d = append(d, fmt.Sprintf("Artifacts: got %+v, want %+v", got.Artifacts, want.Artifacts))
	}
	return strings.Join(d, "; ")
}

func convBytes(b []byte) []byte {
	if len(b) == 0 {
		return []byte("[]")
	}
	return b
}

// listDiff compares two lists of checkpoints in order.
func listDiff(got, want []*ckptstore.Checkpoint) string {
	if len(got) != len(want) {
		return fmt.Sprintf("got %d checkpoints %v, want %d %v", len(got), ids(got), len(want), ids(want))
	}
	for i := range got {
		if d := cpDiff(got[i], want[i]); d != "" {
			return fmt.Sprintf("checkpoint %d (got ids %q, want %q): %s", i, ids(got), ids(want), d)
		}
	}
	return ""
}

func ids(cps []*ckptstore.Checkpoint) []string {
	out := make([]string, len(cps))
	for i, c := range cps {
		if c == nil {
			out[i] = "<nil>"
		} else {
			out[i] = c.ID
		}
	}
	return out
}

func refsDiff(got, want []ckptstore.BlobRef) string {
	if len(got) == 0 && len(want) == 0 {
		return ""
	}
	if !slices.Equal(got, want) {
		return fmt.Sprintf("got %v, want %v", got, want)
	}
	return ""
}

// recount returns the blob references that cps imply: each distinct key of
// a checkpoint counts once, sorted by the key's bytes.
func recount(cps []*ckptstore.Checkpoint) []ckptstore.BlobRef {
	n := map[string]int64{}
	for _, c := range cps {
		seen := map[string]bool{}
		for _, e := range c.Files {
			if e.Kind == ckptstore.KindFile {
				seen[e.BlobKey] = true
			}
		}
		for _, a := range c.Artifacts {
			seen[a.BlobKey] = true
		}
		for k := range seen {
			n[k]++
		}
	}
	out := make([]ckptstore.BlobRef, 0, len(n))
	for k, c := range n {
		out = append(out, ckptstore.BlobRef{Key: k, References: c})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// sortLikeList sorts cps by createdAt, then by the bytes of the id (Go
// compares strings by bytes), as List must.
func sortLikeList(cps []*ckptstore.Checkpoint) {
	sort.SliceStable(cps, func(i, j int) bool {
		a, b := cps[i], cps[j]
		if a.CreatedAt != b.CreatedAt {
			return a.CreatedAt < b.CreatedAt
		}
		return a.ID < b.ID
	})
}

// ---- env: a store under test with its clock ----

// env is one store under test, the suite's clock, and every thread and id
// the test used, so that a snapshot covers all of them.
type env struct {
	t       *testing.T
	ctx     context.Context
	s       ckptstore.Store
	clock   *Clock
	threads []string
	ids     []string
	known   map[string]bool
	// noTranscripts leaves transcripts out of snapshots, for order tests
	// of methods that cannot reach them: a LoadThread per thread per
	// attempt is the most of their cost on a remote store.
	noTranscripts bool
}

func newEnv(t *testing.T, s ckptstore.Store, c *Clock) *env {
	return &env{t: t, ctx: context.Background(), s: s, clock: c, known: map[string]bool{}}
}

// track remembers thread and checkpoint ids for snapshots.
func (e *env) track(threads []string, ids ...string) {
	for _, th := range threads {
		if th != "" && !e.known["t\x00"+th] && validID(th) {
			e.known["t\x00"+th] = true
			e.threads = append(e.threads, th)
		}
	}
	for _, id := range ids {
		if id != "" && !e.known["c\x00"+id] && validID(id) {
			e.known["c\x00"+id] = true
			e.ids = append(e.ids, id)
		}
	}
}

func validID(s string) bool { return s != "" && utf8.ValidString(s) }

// acquire takes the thread's lease and fails the test when it cannot.
func (e *env) acquire(thread string) *ckptstore.Lease {
	e.t.Helper()
	e.track([]string{thread})
	l, err := e.s.AcquireWriter(e.ctx, thread)
	must(e.t, fmt.Sprintf("AcquireWriter(%q)", thread), err)
	if l == nil {
		e.t.Fatalf("AcquireWriter(%q) returned a nil lease", thread)
	}
	return l
}

// append appends c on the thread's current head with w, and fails the test
// when it cannot. It sets c's parent to the head.
func (e *env) append(c *ckptstore.Checkpoint, w ckptstore.Writer) {
	e.t.Helper()
	e.track([]string{c.ThreadID}, c.ID, c.ParentCheckpointID)
	head := e.head(c.ThreadID)
	c.ParentCheckpointID = head
	must(e.t, fmt.Sprintf("Append(%q on %q)", c.ID, head), e.s.Append(e.ctx, c, head, w))
}

// chain appends checkpoints with the given ids to thread, each on the
// previous head, taking and keeping the lease when w is nil.
func (e *env) chain(thread string, w *ckptstore.Writer, ids ...string) ckptstore.Writer {
	e.t.Helper()
	if w == nil {
		l := e.acquire(thread)
		w = &l.Writer
	}
	for i, id := range ids {
		c := cp(id, thread, "")
		c.CreatedAt = float64(1000 + i)
		c.Files = []ckptstore.Entry{file("f", i, 1)}
		e.append(c, *w)
	}
	return *w
}

func (e *env) head(thread string) string {
	e.t.Helper()
	h, err := e.s.Head(e.ctx, thread)
	must(e.t, fmt.Sprintf("Head(%q)", thread), err)
	return h
}

func (e *env) get(id string) *ckptstore.Checkpoint {
	e.t.Helper()
	c, err := e.s.Get(e.ctx, id)
	must(e.t, fmt.Sprintf("Get(%q)", id), err)
	return c
}

func (e *env) list(thread string) []*ckptstore.Checkpoint {
	e.t.Helper()
	l, err := e.s.List(e.ctx, thread)
	must(e.t, fmt.Sprintf("List(%q)", thread), err)
	for i, c := range l {
		if c == nil {
			e.t.Fatalf("List(%q)[%d] is nil", thread, i)
		}
	}
	return l
}

func (e *env) refs() []ckptstore.BlobRef {
	e.t.Helper()
	r, err := e.s.BlobReferences(e.ctx)
	must(e.t, "BlobReferences", err)
	return r
}

// wantHead checks the thread's head.
func (e *env) wantHead(thread, want string) {
	e.t.Helper()
	if got := e.head(thread); got != want {
		e.t.Errorf("Head(%q) = %q, want %q", thread, got, want)
	}
}

// wantList checks that List returns exactly the ids, in order.
func (e *env) wantList(thread string, want ...string) {
	e.t.Helper()
	got := ids(e.list(thread))
	if len(got) != len(want) || (len(want) > 0 && !slices.Equal(got, want)) {
		e.t.Errorf("List(%q) ids = %q, want %q", thread, got, want)
	}
}

// wantRefs checks BlobReferences.
func (e *env) wantRefs(want ...ckptstore.BlobRef) {
	e.t.Helper()
	if d := refsDiff(e.refs(), want); d != "" {
		e.t.Errorf("BlobReferences: %s", d)
	}
}

// wantRecount checks that BlobReferences equals a recount over List of
// every thread the test used.
func (e *env) wantRecount() {
	e.t.Helper()
	var all []*ckptstore.Checkpoint
	for _, th := range e.threads {
		all = append(all, e.list(th)...)
	}
	if d := refsDiff(e.refs(), recount(all)); d != "" {
		e.t.Errorf("BlobReferences differ from a recount of the stored checkpoints: %s", d)
	}
}

// snapshot is everything a read can see of the threads and ids an env
// knows.
// With the optional capabilities it also holds each thread's transcript
// (Transcripts) and the whole thread listing (ThreadLister).
type snapshot struct {
	heads       map[string]string
	lists       map[string][]*ckptstore.Checkpoint
	gets        map[string]*ckptstore.Checkpoint
	refs        []ckptstore.BlobRef
	transcripts map[string]string // nil without Transcripts
	listing     []string          // nil without ThreadLister
}

func (e *env) snap() snapshot {
	e.t.Helper()
	s := snapshot{heads: map[string]string{}, lists: map[string][]*ckptstore.Checkpoint{},
		gets: map[string]*ckptstore.Checkpoint{}, refs: e.refs()}
	tr, hasTranscripts := e.s.(ckptstore.Transcripts)
	hasTranscripts = hasTranscripts && !e.noTranscripts
	if hasTranscripts {
		s.transcripts = map[string]string{}
	}
	for _, th := range e.threads {
		s.heads[th] = e.head(th)
		s.lists[th] = e.list(th)
		if hasTranscripts {
			m, err := tr.LoadThread(e.ctx, th)
			must(e.t, fmt.Sprintf("LoadThread(%q)", th), err)
			s.transcripts[th] = string(m)
		}
	}
	for _, id := range e.ids {
		s.gets[id] = e.get(id)
	}
	if tl, ok := e.s.(ckptstore.ThreadLister); ok {
		s.listing = e.allThreads(tl)
	}
	return s
}

// diff describes how b differs from a, or "".
func (a snapshot) diff(b snapshot) string {
	var d []string
	for th, h := range a.heads {
		if b.heads[th] != h {
			d = append(d, fmt.Sprintf("Head(%q) was %q, now %q", th, h, b.heads[th]))
		}
	}
	for th, l := range a.lists {
		if x := listDiff(b.lists[th], l); x != "" {
			d = append(d, fmt.Sprintf("List(%q) changed: %s", th, x))
		}
	}
	for id, c := range a.gets {
		if x := cpDiff(b.gets[id], c); x != "" {
			d = append(d, fmt.Sprintf("Get(%q) changed: %s", id, x))
		}
	}
	if x := refsDiff(b.refs, a.refs); x != "" {
		d = append(d, "BlobReferences changed: "+x)
	}
	for th, m := range a.transcripts {
		if b.transcripts == nil {
			break // a snapshot without transcripts (env.noTranscripts)
		}
		if b.transcripts[th] != m {
			d = append(d, fmt.Sprintf("LoadThread(%q) was %q, now %q", th, m, b.transcripts[th]))
		}
	}
	if !slices.Equal(a.listing, b.listing) {
		d = append(d, fmt.Sprintf("Threads was %q, now %q", a.listing, b.listing))
	}
	sort.Strings(d)
	return strings.Join(d, "\n\t")
}

// unchanged fails the test when the store no longer matches before.
func (e *env) unchanged(what string, before snapshot) {
	e.t.Helper()
	if d := before.diff(e.snap()); d != "" {
		e.t.Errorf("%s changed the store:\n\t%s", what, d)
	}
}

// fails runs op, expects exactly want, and checks that the store did not
// change.
func (e *env) fails(what string, want error, op func() error) {
	e.t.Helper()
	before := e.snap()
	wantErr(e.t, what, op(), want)
	e.unchanged(what, before)
}

// appendFails tries an append that must fail with want and change nothing.
func (e *env) appendFails(what string, c *ckptstore.Checkpoint, expected string, w ckptstore.Writer, want error) {
	e.t.Helper()
	e.track([]string{c.ThreadID, w.ThreadID}, c.ID, c.ParentCheckpointID, expected)
	e.fails(what, want, func() error { return e.s.Append(e.ctx, c, expected, w) })
}

// pruner and forker return the store's optional capability, or skip.
func (e *env) pruner() ckptstore.Pruner {
	e.t.Helper()
	p, ok := e.s.(ckptstore.Pruner)
	if !ok {
		e.t.Skipf("store %T does not implement ckptstore.Pruner", e.s)
	}
	return p
}

func (e *env) forker() ckptstore.Forker {
	e.t.Helper()
	f, ok := e.s.(ckptstore.Forker)
	if !ok {
		e.t.Skipf("store %T does not implement ckptstore.Forker", e.s)
	}
	return f
}

// forged returns w with another owner token.
func forged(w ckptstore.Writer) ckptstore.Writer {
	w.OwnerToken = "forged-" + w.OwnerToken
	return w
}

// maxSize is 2^53−1, the largest valid size, written out rather than taken
// from the root package.
const maxSize = 1<<53 - 1

var (
	nan    = math.NaN()
	posInf = math.Inf(1)
	negInf = math.Inf(-1)
)

// cloneCP deep-copies c, so the suite keeps what it appended even if the
// store aliases (and a test later changes) the input.
func cloneCP(c *ckptstore.Checkpoint) *ckptstore.Checkpoint {
	if c == nil {
		return nil
	}
	x := *c
	x.Files = append([]ckptstore.Entry(nil), c.Files...)
	x.Artifacts = append([]ckptstore.Artifact(nil), c.Artifacts...)
	x.Conversation = append([]byte(nil), c.Conversation...)
	return &x
}

// scribble changes every field of c in place, down to the bytes of the
// conversation, to prove that the store shares no memory with c.
func scribble(c *ckptstore.Checkpoint) {
	c.ID += "-changed"
	c.ThreadID += "-changed"
	c.ParentCheckpointID += "-changed"
	c.CreatedAt++
	c.Reason = "changed"
	c.Label += "-changed"
	c.SourceRunID += "-changed"
	for i := range c.Files {
		c.Files[i].Path += "-changed"
		c.Files[i].BlobKey = fileKey(999)
		c.Files[i].Size++
	}
	for i := range c.Conversation {
		c.Conversation[i] = ' '
	}
	for i := range c.Artifacts {
		c.Artifacts[i].Name += "-changed"
		c.Artifacts[i].BlobKey = artifactKey(999)
		c.Artifacts[i].Size++
	}
	c.Files = append(c.Files, file("added", 998, 1))
	c.Artifacts = append(c.Artifacts, artifact("added", 998))
}

// with returns a copy of e that reports to t, for subtests that share a
// store.
func (e *env) with(t *testing.T) *env {
	c := *e
	c.t = t
	c.threads = slices.Clone(e.threads)
	c.ids = slices.Clone(e.ids)
	c.known = maps.Clone(e.known)
	return &c
}
