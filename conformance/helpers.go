package conformance

// Shared test machinery: error assertions against exactly one sentinel, the
// contract's equality of checkpoints (nil and empty alike) for testify's
// object diffs, the snapshot that proves a failed write changed nothing,
// and the helpers of transcripts and paging. Checkpoints, entries, blob
// keys, the clock and the recount of blob references come from
// internal/testkit. Nothing here calls the root package's validation or
// ordering code: the suite must not trust what it tests.

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

// tb is what the assertion helpers and testify need; *testing.T and
// *rapid.T have it.
type tb interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	FailNow()
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

// wantErr asserts that err matches want exactly (want nil: no error):
// errors.Is(err, want), the wire code of want, and no other sentinel. It
// returns whether it matched.
func wantErr(t tb, what string, err, want error) bool {
	t.Helper()
	if want == nil {
		return assert.NoError(t, err, what)
	}
	if !assert.ErrorIs(t, err, want, what) {
		return false
	}
	ok := true
	for _, s := range sentinels {
		if s.err == want {
			ok = assert.Equal(t, s.code, ckptstore.Code(err), "%s: the wire code of %s", what, s.name) && ok
		} else {
			ok = assert.NotErrorIs(t, err, s.err, "%s: the error is %s and %s", what, errName(want), s.name) && ok
		}
	}
	return ok
}

// ---- the contract's equality ----

// canon returns c as the contract compares checkpoints, for testify's
// object diffs: nil and empty slices alike, an empty conversation as "[]".
// createdAt stays: == (reflect.DeepEqual's comparison of floats) treats -0
// as 0, and the contract keeps the value, not the sign of zero.
func canon(c *ckptstore.Checkpoint) *ckptstore.Checkpoint {
	if c == nil {
		return nil
	}
	x := *c
	x.Files = orNil(x.Files)
	x.Artifacts = orNil(x.Artifacts)
	if len(x.Conversation) == 0 {
		x.Conversation = json.RawMessage("[]")
	}
	return &x
}

// canonAll is canon for a list, kept in order; an empty list is nil.
func canonAll(cps []*ckptstore.Checkpoint) []*ckptstore.Checkpoint {
	if len(cps) == 0 {
		return nil
	}
	out := make([]*ckptstore.Checkpoint, len(cps))
	for i, c := range cps {
		out[i] = canon(c)
	}
	return out
}

// orNil returns nil for an empty slice, since the contract does not tell
// nil and empty apart.
func orNil[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

// sameCP reports whether a and b are equal checkpoints (see canon).
func sameCP(a, b *ckptstore.Checkpoint) bool { return assert.ObjectsAreEqual(canon(a), canon(b)) }

// wantCP asserts that got equals want (see canon), showing the difference.
func wantCP(t tb, got, want *ckptstore.Checkpoint, msgAndArgs ...any) bool {
	t.Helper()
	return assert.Equal(t, canon(want), canon(got), msgAndArgs...)
}

// wantCPs asserts that the list got equals want, in order (see canon).
func wantCPs(t tb, got, want []*ckptstore.Checkpoint, msgAndArgs ...any) bool {
	t.Helper()
	return assert.Equal(t, canonAll(want), canonAll(got), msgAndArgs...)
}

// wantRefList asserts that the blob references got equal want, in order.
func wantRefList(t tb, got, want []ckptstore.BlobRef, msgAndArgs ...any) bool {
	t.Helper()
	return assert.Equal(t, orNil(want), orNil(got), msgAndArgs...)
}

// mustCP, mustCPs and mustRefList are wantCP, wantCPs and wantRefList that
// stop the test at a difference, for the model, whose later steps build on
// what it has checked.
func mustCP(t tb, got, want *ckptstore.Checkpoint, msgAndArgs ...any) {
	t.Helper()
	require.Equal(t, canon(want), canon(got), msgAndArgs...)
}

func mustCPs(t tb, got, want []*ckptstore.Checkpoint, msgAndArgs ...any) {
	t.Helper()
	require.Equal(t, canonAll(want), canonAll(got), msgAndArgs...)
}

func mustRefList(t tb, got, want []ckptstore.BlobRef, msgAndArgs ...any) {
	t.Helper()
	require.Equal(t, orNil(want), orNil(got), msgAndArgs...)
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

// blobCP is testkit.Checkpoint(thread, id, "", at) with the files and
// artifacts, for tests where the blob keys are the point.
func blobCP(thread, id string, at float64, files []ckptstore.Entry, arts ...ckptstore.Artifact) *ckptstore.Checkpoint {
	c := testkit.Checkpoint(thread, id, "", at)
	c.Files, c.Artifacts = files, arts
	return c
}

func entries(es ...ckptstore.Entry) []ckptstore.Entry { return es }

// richCP returns a checkpoint of the thread that sets every field, with
// files and artifacts in an order that is not sorted, a blob shared by two
// files, an empty file and a conversation with nested content.
func richCP(thread, id, parent string) *ckptstore.Checkpoint {
	c := testkit.Checkpoint(thread, id, parent, 1_700_000_000_123.25)
	c.Reason = ckptstore.ReasonNamed
	c.Label = "before refactor ✓"
	c.SourceRunID = "run-42"
	c.Files = []ckptstore.Entry{
		testkit.Dir("src"),
		testkit.File("src/main.go", 1, 120),
		testkit.File("README.md", 2, 0),
		testkit.Dir("src/empty"),
		testkit.File("copy-of-main.go", 1, 120),
	}
	c.Conversation = []byte(`[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"text","text":"é"}]}]`)
	c.Artifacts = []ckptstore.Artifact{testkit.Artifact("a1", 1), testkit.Artifact("a2", 2)}
	return c
}

// ---- env: a store under test with its clock ----

// env is one store under test, the suite's clock, and every thread and id
// the test used, so that a snapshot covers all of them.
type env struct {
	t       *testing.T
	ctx     context.Context
	s       Store
	clock   *Clock
	threads []string
	ids     []string
	known   map[string]bool
	// noTranscripts leaves transcripts out of snapshots, for order tests
	// of methods that cannot reach them: a LoadThread per thread per
	// attempt is the most of their cost on a remote store.
	noTranscripts bool
}

func newEnv(t *testing.T, s Store, c *Clock) *env {
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

func validID(s string) bool { return s != "" && len(s) <= driver.MaxIDBytes && utf8.ValidString(s) }

// acquire takes the thread's lease and stops the test when it cannot.
func (e *env) acquire(thread string) *ckptstore.Lease {
	e.t.Helper()
	e.track([]string{thread})
	l, err := e.s.AcquireWriter(e.ctx, thread)
	require.NoError(e.t, err, "AcquireWriter(%q)", thread)
	require.NotNil(e.t, l, "AcquireWriter(%q) returned a nil lease", thread)
	return l
}

// append appends c on the thread's current head with w, and stops the test
// when it cannot. It sets c's parent to the head.
func (e *env) append(c *ckptstore.Checkpoint, w ckptstore.Writer) {
	e.t.Helper()
	e.track([]string{c.ThreadID}, c.ID, c.ParentCheckpointID)
	head := e.head(c.ThreadID)
	c.ParentCheckpointID = head
	require.NoError(e.t, e.s.Append(e.ctx, c, head, w), "Append(%q on %q)", c.ID, head)
}

// appendKept appends c as append does, checks that Get returns exactly
// what was appended, and returns a copy of that.
func (e *env) appendKept(c *ckptstore.Checkpoint, w ckptstore.Writer) *ckptstore.Checkpoint {
	e.t.Helper()
	want := cloneCP(c)
	e.append(c, w)
	want.ParentCheckpointID = c.ParentCheckpointID
	wantCP(e.t, e.get(c.ID), want, "Get(%q)", c.ID)
	return want
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
		e.append(blobCP(thread, id, float64(1000+i), entries(testkit.File("f", i, 1))), *w)
	}
	return *w
}

func (e *env) head(thread string) string {
	e.t.Helper()
	h, err := e.s.GetHead(e.ctx, thread)
	require.NoError(e.t, err, "Head(%q)", thread)
	return h
}

func (e *env) get(id string) *ckptstore.Checkpoint {
	e.t.Helper()
	c, err := e.s.Get(e.ctx, id)
	require.NoError(e.t, err, "Get(%q)", id)
	return c
}

func (e *env) list(thread string) []*ckptstore.Checkpoint {
	e.t.Helper()
	l, err := e.s.List(e.ctx, thread)
	require.NoError(e.t, err, "List(%q)", thread)
	for i, c := range l {
		if c == nil {
			require.Failf(e.t, "a nil checkpoint", "List(%q)[%d] is nil", thread, i)
		}
	}
	return l
}

func (e *env) refs() []ckptstore.BlobRef {
	e.t.Helper()
	r, err := e.s.ListBlobReferences(e.ctx)
	require.NoError(e.t, err, "BlobReferences")
	return r
}

// wantHead checks the thread's head.
func (e *env) wantHead(thread, want string) {
	e.t.Helper()
	assert.Equal(e.t, want, e.head(thread), "Head(%q)", thread)
}

// wantList checks that List returns exactly the ids, in order.
func (e *env) wantList(thread string, want ...string) {
	e.t.Helper()
	assert.Equal(e.t, orNil(want), orNil(testkit.IDs(e.list(thread))), "List(%q) ids", thread)
}

// wantThread checks the thread's head and that List returns exactly the
// ids, in order.
func (e *env) wantThread(thread, head string, ids ...string) {
	e.t.Helper()
	e.wantHead(thread, head)
	e.wantList(thread, ids...)
}

// wantRefs checks ListBlobReferences.
func (e *env) wantRefs(want ...ckptstore.BlobRef) {
	e.t.Helper()
	wantRefList(e.t, e.refs(), want, "BlobReferences")
}

// wantRecount checks that ListBlobReferences equals a recount over List of
// every thread the test used.
func (e *env) wantRecount() {
	e.t.Helper()
	var all []*ckptstore.Checkpoint
	for _, th := range e.threads {
		all = append(all, e.list(th)...)
	}
	wantRefList(e.t, e.refs(), testkit.Recount(all), "BlobReferences against a recount of the stored checkpoints")
}

// snapshot is everything a read can see of the threads and ids an env
// knows, each checkpoint as canon gives it.
// It also holds each thread's transcript (unless the test leaves them out)
// and the whole thread listing.
type snapshot struct {
	heads       map[string]string
	lists       map[string][]*ckptstore.Checkpoint
	gets        map[string]*ckptstore.Checkpoint
	refs        []ckptstore.BlobRef
	transcripts map[string]string // nil when the test leaves them out
	listing     []string
}

func (e *env) snap() snapshot {
	e.t.Helper()
	s := snapshot{heads: map[string]string{}, lists: map[string][]*ckptstore.Checkpoint{},
		gets: map[string]*ckptstore.Checkpoint{}, refs: orNil(e.refs())}
	if !e.noTranscripts {
		s.transcripts = map[string]string{}
	}
	for _, th := range e.threads {
		s.heads[th] = e.head(th)
		s.lists[th] = canonAll(e.list(th))
		if s.transcripts != nil {
			s.transcripts[th] = e.load(th)
		}
	}
	for _, id := range e.ids {
		s.gets[id] = canon(e.get(id))
	}
	s.listing = orNil(e.allThreads())
	return s
}

// sameSnapshot asserts that after shows what before showed, part by part,
// so that a failure names what changed; what names the operation between
// the two.
func sameSnapshot(t tb, before, after snapshot, what string) bool {
	t.Helper()
	ok := assert.Equal(t, before.heads, after.heads, "%s changed a Head", what)
	ok = assert.Equal(t, before.lists, after.lists, "%s changed a List", what) && ok
	ok = assert.Equal(t, before.gets, after.gets, "%s changed a Get", what) && ok
	ok = assert.Equal(t, before.refs, after.refs, "%s changed BlobReferences", what) && ok
	if before.transcripts != nil && after.transcripts != nil { // not with env.noTranscripts
		ok = assert.Equal(t, before.transcripts, after.transcripts, "%s changed a LoadThread", what) && ok
	}
	return assert.Equal(t, before.listing, after.listing, "%s changed Threads", what) && ok
}

// unchanged fails the test when the store no longer matches before.
func (e *env) unchanged(what string, before snapshot) {
	e.t.Helper()
	sameSnapshot(e.t, before, e.snap(), what)
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
	e.appendFailsCtx(e.ctx, what, c, expected, w, want)
}

// fileRef and artifactRef are the blob reference of testkit.FileKey(n)
// and testkit.ArtifactKey(n), counted refs times.
func fileRef(n int, refs int64) ckptstore.BlobRef {
	return ckptstore.BlobRef{Key: testkit.FileKey(n), References: refs}
}

func artifactRef(n int, refs int64) ckptstore.BlobRef {
	return ckptstore.BlobRef{Key: testkit.ArtifactKey(n), References: refs}
}

// errOf and errOf2 return only the error of a call that returns one or
// two values too, for the closures of env.fails.
func errOf[T any](_ T, err error) error { return err }

func errOf2[A, B any](_ A, _ B, err error) error { return err }

// forkInput is the ForkInput of a fork of checkpoint id of thread src into
// thread dest as its root, at createdAt at, with the writer w.
func forkInput(src, id, dest, root string, at float64, w ckptstore.Writer) ckptstore.ForkInput {
	return ckptstore.ForkInput{SourceThreadID: src, SourceCheckpointID: id,
		DestinationThreadID: dest, DestinationCheckpointID: root, CreatedAt: at, Writer: w}
}

// prune calls DeleteCheckpoints, stops the test when it fails, and returns
// the ids it deleted.
func (e *env) prune(thread string, keep int, w ckptstore.Writer) []string {
	e.t.Helper()
	deleted, err := e.s.DeleteCheckpoints(e.ctx, thread, keep, w)
	require.NoError(e.t, err, "DeleteCheckpoints(%q, keep %d)", thread, keep)
	return deleted
}

// forkErr, importErr, deleteThreadErr and pruneErr make the call and
// return its error, after checking that a call that failed reports
// nothing done: no checkpoint, no count, no deleted ids.
func (e *env) forkErr(in ckptstore.ForkInput) error {
	e.t.Helper()
	got, err := e.s.ForkFromCheckpoint(e.ctx, in)
	if err != nil && got != nil {
		e.t.Errorf("ForkFromCheckpoint failed (%v) but returned a checkpoint %+v", err, got)
	}
	return err
}

func (e *env) importErr(b ckptstore.ImportBatch) error {
	e.t.Helper()
	n, err := e.s.Import(e.ctx, b)
	if err != nil && n != 0 {
		e.t.Errorf("Import failed (%v) but reported %d written", err, n)
	}
	return err
}

func (e *env) deleteThreadErr(thread string, w ckptstore.Writer) error {
	e.t.Helper()
	n, err := e.s.DeleteThread(e.ctx, thread, w)
	if err != nil && n != 0 {
		e.t.Errorf("DeleteThread failed (%v) but reported %d deleted", err, n)
	}
	return err
}

func (e *env) pruneErr(thread string, keep int, w ckptstore.Writer) error {
	e.t.Helper()
	deleted, err := e.s.DeleteCheckpoints(e.ctx, thread, keep, w)
	if err != nil && len(deleted) > 0 {
		e.t.Errorf("DeleteCheckpoints failed (%v) but returned deleted ids %q", err, deleted)
	}
	return err
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
		c.Files[i].BlobKey = testkit.FileKey(999)
		c.Files[i].Size++
	}
	for i := range c.Conversation {
		c.Conversation[i] = ' '
	}
	for i := range c.Artifacts {
		c.Artifacts[i].Name += "-changed"
		c.Artifacts[i].BlobKey = testkit.ArtifactKey(999)
		c.Artifacts[i].Size++
	}
	c.Files = append(c.Files, testkit.File("added", 998, 1))
	c.Artifacts = append(c.Artifacts, testkit.Artifact("added", 998))
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

// ---- transcripts and paging ----

// save stores a transcript and fails the test when it cannot.
func (e *env) save(thread, messages string) {
	e.t.Helper()
	e.track([]string{thread})
	require.NoError(e.t, e.s.SaveThread(e.ctx, thread, json.RawMessage(messages)), "SaveThread(%q)", thread)
}

// load returns a thread's transcript.
func (e *env) load(thread string) string {
	e.t.Helper()
	m, err := e.s.LoadThread(e.ctx, thread)
	require.NoError(e.t, err, "LoadThread(%q)", thread)
	return string(m)
}

// wantTranscript checks a thread's transcript, byte for byte.
func (e *env) wantTranscript(thread, want string) {
	e.t.Helper()
	assert.Equal(e.t, want, e.load(thread), "LoadThread(%q)", thread)
}

// maxPages bounds every paging loop of the suite, so that a store whose
// cursor never advances fails instead of looping.
const maxPages = 10_000

// allThreads pages through Threads with the default limit.
func (e *env) allThreads() []string {
	e.t.Helper()
	out, err := e.pageThreads("", 0)
	require.NoError(e.t, err, "Threads")
	return out
}

// pageThreads returns every thread id from the cursor after, paging with
// limit (see pageThrough).
func (e *env) pageThreads(after string, limit int) ([]string, error) {
	e.t.Helper()
	return pageThrough(e, fmt.Sprintf("Threads(limit %d)", limit), limit, after, func(after string) ([]string, string, error) {
		return e.s.Threads(e.ctx, after, limit)
	})
}

// pageAll returns every checkpoint of thread, paging with opt from its
// cursor (see pageThrough).
func (e *env) pageAll(thread string, opt ckptstore.ListOptions) []*ckptstore.Checkpoint {
	e.t.Helper()
	what := fmt.Sprintf("ListPage(%q, %+v)", thread, opt)
	out, err := pageThrough(e, what, opt.Limit, opt.After, func(after string) ([]*ckptstore.Checkpoint, string, error) {
		o := opt
		o.After = after
		return e.s.ListPage(e.ctx, thread, o)
	})
	require.NoError(e.t, err, what)
	return out
}

// pageThrough joins the pages that page returns from the cursor after
// until one has no next cursor, at most maxPages of them. Each page must
// hold at most limit items (0: the default, 100), and only the last may be
// empty. what names the call in messages.
func pageThrough[T any](e *env, what string, limit int, after string, page func(after string) ([]T, string, error)) ([]T, error) {
	e.t.Helper()
	most := cmp.Or(limit, 100)
	var out []T
	for range maxPages {
		items, next, err := page(after)
		if err != nil {
			return nil, err
		}
		assert.LessOrEqual(e.t, len(items), most, "%s from %q: more than the limit", what, after)
		if next != "" && len(items) == 0 {
			require.Failf(e.t, "an empty page with a next cursor", "%s from %q", what, after)
		}
		out = append(out, items...)
		if next == "" {
			return out, nil
		}
		after = next
	}
	require.Failf(e.t, "paging does not end", "%s: more than %d pages", what, maxPages)
	return nil, nil
}

func itoa(n int) string { return strconv.Itoa(n) }
