package conformance

// The model's actions for transcripts, DeleteThread, paging, Import and op
// tokens.

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
)

// modelTranscripts are SaveThread inputs; bad marks those SaveThread must
// refuse with ErrInvalidEntry.
var modelTranscripts = []struct {
	m   string
	bad bool
}{
	{`["hello"]`, false}, {`[]`, false}, {" [1, {\"b\":2}] \n", false},
	{"", true}, {`{}`, true}, {"[\"\xff\"]", true}, {`[1,]`, true},
}

func (mc *machine) saveThread(t *rapid.T) {
	th := mc.drawThread(t, "thread")
	in := modelTranscripts[pick(t, "messages", 4, 3, 2, 1, 1, 1, 1)]
	err := mc.s.SaveThread(t.Context(), th, json.RawMessage(in.m))
	var want error
	switch {
	case !validID(th):
		want = ckptstore.ErrInvalidID
	case in.bad:
		want = ckptstore.ErrInvalidEntry
	}
	mc.agree(t, "SaveThread", fmt.Sprintf("SaveThread(%q, %q)", th, in.m), err, want)
	if want == nil {
		m := in.m
		mc.m.thread(th).transcript = &m
	}
}

func (mc *machine) loadThread(t *rapid.T) {
	th := mc.drawThread(t, "thread")
	if got, err := mc.s.LoadThread(t.Context(), th); mc.agreeRead(t, "LoadThread", th, err) && string(got) != mc.m.transcript(th) {
		t.Fatalf("LoadThread(%q) = %q, model says %q", th, got, mc.m.transcript(th))
	}
}

func (mc *machine) deleteThread(t *rapid.T) {
	th := mc.drawThread(t, "thread")
	w := mc.drawWriter(t, th)
	n, err := mc.s.DeleteThread(t.Context(), th, w)
	var want error
	switch {
	case anyInvalid(th, w.ThreadID):
		want = ckptstore.ErrInvalidID
	case !mc.m.current(th, w):
		want = ckptstore.ErrWriterLost
	}
	mc.agree(t, "DeleteThread", fmt.Sprintf("DeleteThread(%q)", th), err, want)
	if want != nil {
		return
	}
	doomed := mc.m.list(th)
	if n != len(doomed) {
		t.Fatalf("DeleteThread(%q) reported %d deleted, model says %d", th, n, len(doomed))
	}
	for _, c := range doomed {
		delete(mc.m.cps, c.ID)
	}
	mt := mc.m.threads[th]
	mt.head, mt.transcript = "", nil
	mc.refs(t)
}

// drawPosition returns a position near a stored checkpoint (at it, just
// after its id, or at its createdAt with the smallest id), or an arbitrary
// one.
func (mc *machine) drawPosition(t *rapid.T) driver.Position {
	all := mc.m.all()
	if len(all) == 0 {
		return driver.Position{CreatedAt: 1, ID: "c1"}
	}
	sortLikeList(all)
	c := rapid.SampledFrom(all).Draw(t, "position of")
	switch rapid.IntRange(0, 2).Draw(t, "position kind") {
	case 1:
		return driver.Position{CreatedAt: c.CreatedAt, ID: c.ID + "~"}
	case 2:
		return driver.Position{CreatedAt: c.CreatedAt, ID: "\x00"}
	}
	return driver.PositionOf(c)
}

func (mc *machine) listPage(t *rapid.T) {
	th := mc.drawThread(t, "thread")
	opt := ckptstore.ListOptions{
		Limit:   []int{0, 1, 2, 3, -1, 1001}[pick(t, "limit", 2, 3, 3, 2, 1, 1)],
		Reverse: rapid.Bool().Draw(t, "reverse"),
	}
	var pos *driver.Position
	badCursor := false
	switch pick(t, "cursor", 3, 5, 1) {
	case 1:
		p := mc.drawPosition(t)
		pos, opt.After = &p, driver.EncodeCursor(p)
	case 2:
		opt.After, badCursor = "bogus", true
	}
	page, next, err := mc.s.ListPage(t.Context(), th, opt)
	var want error
	switch {
	case !validID(th):
		want = ckptstore.ErrInvalidID
	case opt.Limit < 0 || opt.Limit > 1000 || badCursor:
		want = ckptstore.ErrInvalidEntry
	}
	what := fmt.Sprintf("ListPage(%q, %+v)", th, opt)
	mc.agree(t, "ListPage", what, err, want)
	if want != nil {
		return
	}
	l := mc.m.list(th)
	if opt.Reverse {
		slices.Reverse(l)
	}
	var rest []*ckptstore.Checkpoint
	for _, c := range l {
		if pos == nil {
			rest = append(rest, c)
			continue
		}
		after := c.CreatedAt > pos.CreatedAt || c.CreatedAt == pos.CreatedAt && c.ID > pos.ID
		before := c.CreatedAt < pos.CreatedAt || c.CreatedAt == pos.CreatedAt && c.ID < pos.ID
		if after && !opt.Reverse || before && opt.Reverse {
			rest = append(rest, c)
		}
	}
	n := cmp.Or(opt.Limit, 100)
	wantPage := rest[:min(n, len(rest))]
	mustCPs(t, page, wantPage, "%s", what)
	if more := len(rest) > n; (next != "") != more {
		t.Fatalf("%s: next %q, but the model has %d more", what, next, len(rest)-len(wantPage))
	}
}

func (mc *machine) threadsPage(t *rapid.T) {
	limit := []int{0, 1, 2, -1}[pick(t, "limit", 2, 3, 3, 1)]
	after, from, bad := "", "", false
	switch pick(t, "cursor", 3, 4, 1) {
	case 1:
		from = rapid.SampledFrom(append(slices.Clone(modelThreads), "f", "t", "u")).Draw(t, "after thread")
		after = driver.EncodeThreadCursor(from)
	case 2:
		after, bad = "t1", true
	}
	page, next, err := mc.s.Threads(t.Context(), after, limit)
	var want error
	if limit < 0 || bad {
		want = ckptstore.ErrInvalidEntry
	}
	what := fmt.Sprintf("Threads(after %q, %d)", from, limit)
	mc.agree(t, "Threads", what, err, want)
	if want != nil {
		return
	}
	var rest []string
	for _, id := range mc.m.listed() {
		if id > from {
			rest = append(rest, id)
		}
	}
	n := cmp.Or(limit, 100)
	require.Equal(t, orNil(rest[:min(n, len(rest))]), orNil(page), "%s, against the model", what)
	if more := len(rest) > n; (next != "") != more {
		t.Fatalf("%s: next %q, but the model has %d more", what, next, len(rest)-min(n, len(rest)))
	}
}

// sameCheckpoint is Import's equal content: every field, createdAt to the
// bit.
func sameCheckpoint(a, b *ckptstore.Checkpoint) bool {
	return sameCP(a, b) && math.Float64bits(a.CreatedAt) == math.Float64bits(b.CreatedAt)
}

// importBatch imports a random batch into a random thread: checkpoints as
// stored anywhere, stored in the thread (changed or not), of another thread
// or new, a head or none, a transcript or none, valid or not.
func (mc *machine) importBatch(t *rapid.T) {
	b, bad := mc.drawImport(t)
	batch := make([]*ckptstore.Checkpoint, len(b.Checkpoints))
	for i, c := range b.Checkpoints {
		batch[i] = cloneCP(c)
	}
	n, err := mc.s.Import(t.Context(), b)
	want := mc.importWant(b, batch, bad)
	mc.agree(t, "Import", fmt.Sprintf("Import(%q, %d checkpoints, head %v %q)", b.ThreadID, len(batch), b.SetHead, b.Head), err, want)
	if want == nil {
		mc.imported(t, b, batch, n)
	}
}

// drawImport draws the batch of importBatch; bad reports that a
// checkpoint's content or the transcript is invalid.
func (mc *machine) drawImport(t *rapid.T) (b ckptstore.ImportBatch, bad bool) {
	th := mc.drawThread(t, "thread")
	b.ThreadID = th
	for i := rapid.IntRange(0, 3).Draw(t, "checkpoints"); i > 0; i-- {
		c, badContent := mc.drawImported(t, th)
		bad = bad || badContent
		b.Checkpoints = append(b.Checkpoints, c)
	}
	switch pick(t, "set head", 2, 2, 1) {
	case 1:
		b.SetHead, b.Head = true, mc.m.head(th)
	case 2:
		b.SetHead, b.Head = true, mc.drawRef(t, "head")
	}
	switch pick(t, "transcript", 4, 2, 1) {
	case 1:
		b.Transcript = json.RawMessage(`["imported"]`)
	case 2:
		b.Transcript, bad = json.RawMessage(`{}`), true
	}
	b.Writer = mc.drawWriter(t, th)
	return b, bad
}

// drawImported draws one checkpoint of a batch for thread th; bad reports
// that its content is invalid.
func (mc *machine) drawImported(t *rapid.T, th string) (c *ckptstore.Checkpoint, bad bool) {
	switch pick(t, "import kind", 4, 3, 2, 1) {
	case 1: // as stored in any thread (a duplicate unless it is th's)
		if all := mc.m.all(); len(all) > 0 {
			sortLikeList(all)
			c = cloneCP(rapid.SampledFrom(all).Draw(t, "stored"))
			c.ThreadID = th
		}
	case 2: // stored in th, changed or not
		if own := mc.m.list(th); len(own) > 0 {
			c = cloneCP(rapid.SampledFrom(own).Draw(t, "own"))
			switch rapid.IntRange(0, 3).Draw(t, "change") {
			case 1:
				c.Label += "x"
			case 2:
				c.CreatedAt = math.Copysign(c.CreatedAt, -c.CreatedAt) // ±0 differ, others too
			}
		}
	case 3: // a checkpoint of another thread in th's batch
		c = &ckptstore.Checkpoint{ID: mc.drawID(t, "id"), ThreadID: mc.drawThread(t, "its thread"), Reason: ckptstore.ReasonNamed}
	}
	if c == nil {
		c = &ckptstore.Checkpoint{ID: mc.drawID(t, "id"), ThreadID: th, ParentCheckpointID: mc.drawRef(t, "parent")}
		bad = mc.drawContent(t, c, true)
	}
	return c, bad
}

// importWant is the model's error for importing b, whose checkpoints as
// given are batch, in the contract's check order; bad says drawImport
// made its content or transcript invalid.
func (mc *machine) importWant(b ckptstore.ImportBatch, batch []*ckptstore.Checkpoint, bad bool) error {
	th := b.ThreadID
	if anyInvalid(th, b.Writer.ThreadID) {
		return ckptstore.ErrInvalidID
	}
	for _, c := range batch {
		if anyInvalid(c.ID, c.ThreadID) || optInvalid(c.ParentCheckpointID) {
			return ckptstore.ErrInvalidID
		}
	}
	if b.SetHead && optInvalid(b.Head) {
		return ckptstore.ErrInvalidID
	}
	seen := map[string]bool{}
	for _, c := range batch {
		if c.ThreadID != th || seen[c.ID] {
			return ckptstore.ErrInvalidEntry
		}
		seen[c.ID] = true
	}
	if bad {
		return ckptstore.ErrInvalidEntry
	}
	if !mc.m.current(th, b.Writer) {
		return ckptstore.ErrWriterLost
	}
	for _, c := range batch {
		if old := mc.m.cps[c.ID]; old != nil && (old.ThreadID != th || !sameCheckpoint(old, c)) {
			return ckptstore.ErrDuplicateID
		}
	}
	if h := mc.m.head(th); b.SetHead && h != "" && h != b.Head {
		return ckptstore.ErrConflict
	}
	return nil
}

// imported applies a successful import of b to the model: the new
// checkpoints of batch, the head and the transcript; n is the count the
// store reported.
func (mc *machine) imported(t *rapid.T, b ckptstore.ImportBatch, batch []*ckptstore.Checkpoint, n int) {
	written := 0
	for _, c := range batch {
		if mc.m.cps[c.ID] == nil {
			mc.m.cps[c.ID] = c
			mc.use(c.ID)
			written++
		}
	}
	require.Equal(t, written, n, "Import reported written, against the model")
	mt := mc.m.thread(b.ThreadID)
	if b.SetHead {
		mt.head = b.Head
	}
	if b.Transcript != nil {
		tr := string(b.Transcript)
		mt.transcript = &tr
	}
	if written > 0 {
		mc.refs(t)
	}
}

// withOpToken runs a write that should succeed, with a caller op token, and
// keeps a repeat of it for repeatOpToken: an Append on the head, a
// DeleteHead of the head, or an AcquireWriter.
func (mc *machine) withOpToken(t *rapid.T) {
	ctx := ckptstore.WithOpToken(t.Context(), "model-"+rand.Text())
	th := rapid.SampledFrom(modelThreads).Draw(t, "thread")
	switch rapid.IntRange(0, 2).Draw(t, "op") {
	case 0:
		c, w := mc.drawOnHead(t, th)
		in := cloneCP(c)
		if mc.doAppend(ctx, t, c, c.ParentCheckpointID, w, false) {
			mc.repeats = append(mc.repeats, func(t *rapid.T) {
				mc.agree(t, "repeated Append", "Append repeated with its op token", mc.s.Append(ctx, cloneCP(in), in.ParentCheckpointID, w), nil)
			})
		}
	case 1:
		id := mc.m.head(th)
		c := mc.m.cps[id]
		if c == nil || c.ThreadID != th {
			t.Skip("no head to delete")
		}
		w, ok := mc.liveWriter(t, th)
		if !ok {
			t.Skip("the thread is leased")
		}
		mc.agree(t, "DeleteHead", "DeleteHead with an op token", mc.s.DeleteHead(ctx, th, id, w), nil)
		delete(mc.m.cps, id)
		mc.m.threads[th].head = c.ParentCheckpointID
		mc.repeats = append(mc.repeats, func(t *rapid.T) {
			mc.agree(t, "repeated DeleteHead", "DeleteHead repeated with its op token", mc.s.DeleteHead(ctx, th, id, w), nil)
		})
	case 2:
		l := mc.doAcquire(ctx, t, th)
		if l == nil {
			return
		}
		mc.repeats = append(mc.repeats, func(t *rapid.T) { mc.repeatAcquire(ctx, t, th, l) })
	}
}

func (mc *machine) repeatAcquire(ctx context.Context, t *rapid.T, th string, first *ckptstore.Lease) {
	l, err := mc.s.AcquireWriter(ctx, th)
	mc.agree(t, "repeated AcquireWriter", "AcquireWriter repeated with its op token", err, nil)
	if l == nil || l.Writer != first.Writer {
		t.Fatalf("the repeated AcquireWriter(%q) returned %+v, want the first lease %+v", th, l, first.Writer)
	}
}

// repeatOpToken repeats a write that committed with an op token: it
// reports success, and the final comparison proves it changed nothing.
func (mc *machine) repeatOpToken(t *rapid.T) {
	if len(mc.repeats) == 0 {
		t.Skip("no write with an op token yet")
	}
	rapid.SampledFrom(mc.repeats).Draw(t, "repeat")(t)
}
