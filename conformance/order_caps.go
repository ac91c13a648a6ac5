package conformance

// Check orders of SaveThread, DeleteThread, Import, ListPage and Threads,
// run by runOrder on the same fixture as the other methods. Every call
// here must fail and change nothing.

import (
	"encoding/base64"
	"math"
	"testing"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

// ---- SaveThread ----

type saveIn struct {
	thread   string
	messages []byte
}

func saveThreadOrder() orderTest[saveIn] {
	v := fieldVariant[saveIn]
	msg := func(name, m string) variant[saveIn] {
		return v(name, "messages", func(in *saveIn) { in.messages = []byte(m) })
	}
	return orderTest[saveIn]{
		transcripts: true,
		base:        func(*fixture) saveIn { return saveIn{thread: "t", messages: []byte(`[{"role":"user"}]`)} },
		run: func(f *fixture, in saveIn) error {
			return f.s.SaveThread(f.ctx, in.thread, in.messages)
		},
		checks: []check[saveIn]{
			{name: "ids", err: ckptstore.ErrInvalidID, variants: []variant[saveIn]{
				v("thread id empty", "thread", func(in *saveIn) { in.thread = "" }),
				v("thread id invalid", "thread", func(in *saveIn) { in.thread = "\xff" }),
			}},
			{name: "messages", err: ckptstore.ErrInvalidEntry, variants: []variant[saveIn]{
				v("nil", "messages", func(in *saveIn) { in.messages = nil }),
				msg("empty", ""),
				msg("object", `{}`),
				msg("null", `null`),
				msg("two arrays", `[] []`),
				msg("invalid UTF-8 in a string", "[\"a\xffb\"]"),
			}},
		},
	}
}

func (s *suite) testSaveThreadOrder(t *testing.T) { runOrder(t, s, saveThreadOrder()) }

// ---- DeleteThread ----

type deleteThreadIn struct {
	thread string
	w      writerKind
}

func deleteThreadOrder() orderTest[deleteThreadIn] {
	v := fieldVariant[deleteThreadIn]
	return orderTest[deleteThreadIn]{
		transcripts: true,
		base:        func(*fixture) deleteThreadIn { return deleteThreadIn{thread: "t"} },
		run: func(f *fixture, in deleteThreadIn) error {
			return f.deleteThreadErr(in.thread, f.writer(in.w, in.thread, "t"))
		},
		checks: []check[deleteThreadIn]{
			{name: "ids", err: ckptstore.ErrInvalidID, variants: []variant[deleteThreadIn]{
				v("thread id empty", "thread", func(in *deleteThreadIn) { in.thread = "" }),
				v("thread id invalid", "thread", func(in *deleteThreadIn) { in.thread = "\xff" }),
				v("writer thread id empty", "writer", func(in *deleteThreadIn) { in.w = wBadThread }),
			}},
			writerCheck(func(in *deleteThreadIn, k writerKind) { in.w = k }),
		},
	}
}

func (s *suite) testDeleteThreadOrder(t *testing.T) { runOrder(t, s, deleteThreadOrder()) }

// ---- Import ----

// importIn carries the writer kind beside the batch; run turns it into the
// batch's writer.
type importIn struct {
	b ckptstore.ImportBatch
	w writerKind
}

// importOrder keeps a few variants per check: Validation proves the
// content rules on Append, and Import shares them; every pair costs a
// snapshot, which counts on a store behind a faulty network.
func importOrder() orderTest[importIn] {
	v := fieldVariant[importIn]
	first := func(in *importIn) *ckptstore.Checkpoint { return in.b.Checkpoints[0] }
	// InvalidRefused has the other lost writers.
	return orderTest[importIn]{
		transcripts: true,
		// Into t (head h): a new checkpoint off the chain, and a second
		// one on h; the head stays h, which the import may set.
		base: func(f *fixture) importIn {
			a := testkit.Checkpoint("t", "new", "h", 7)
			a.Files = []ckptstore.Entry{testkit.File("f", 1, 1)}
			b := testkit.Checkpoint("t", "zz", "missing", 1000)
			b.Artifacts = []ckptstore.Artifact{testkit.Artifact("a", 2)}
			// A transcript too, which no failed import may write.
			return importIn{b: ckptstore.ImportBatch{ThreadID: "t", Checkpoints: []*ckptstore.Checkpoint{a, b},
				SetHead: true, Head: "h", Transcript: []byte(`["imported"]`)}}
		},
		run: func(f *fixture, in importIn) error {
			in.b.Writer = f.writer(in.w, in.b.ThreadID, "t")
			return f.importErr(in.b)
		},
		checks: []check[importIn]{
			{name: "ids", err: ckptstore.ErrInvalidID, variants: []variant[importIn]{
				v("thread id empty", "thread", func(in *importIn) { in.b.ThreadID = "" }),
				v("writer thread id empty", "writer", func(in *importIn) { in.w = wBadThread }),
				v("checkpoint id invalid", "id", func(in *importIn) { first(in).ID = "n\xc3" }),
				v("second checkpoint's id invalid", "id2", func(in *importIn) { in.b.Checkpoints[1].ID = "\xed\xa0\x80" }),
				v("checkpoint's thread invalid", "cpthread", func(in *importIn) { first(in).ThreadID = "\xff" }),
				v("head invalid", "head", func(in *importIn) { in.b.Head = "\xff" }),
			}},
			{name: "content", err: ckptstore.ErrInvalidEntry, variants: []variant[importIn]{
				v("createdAt NaN", "content", func(in *importIn) { first(in).CreatedAt = nan }),
				v("second checkpoint invalid", "content2", func(in *importIn) { in.b.Checkpoints[1].CreatedAt = posInf }),
				v("checkpoint of another thread", "cpthread", func(in *importIn) { first(in).ThreadID = "u" }),
				// Fields id and id2: an id variant would undo the repeat.
				{"the same id twice", []string{"id", "id2", "batch"}, func(in *importIn) { in.b.Checkpoints[1].ID = first(in).ID }},
				v("transcript not an array", "transcript", func(in *importIn) { in.b.Transcript = []byte(`{"a":1}`) }),
			}},
			writerCheck(func(in *importIn, k writerKind) { in.w = k }, wForged, wFenceDown, wThreadSwap),
			{name: "duplicate id", err: ckptstore.ErrDuplicateID, variants: []variant[importIn]{
				v("id of another thread", "id", func(in *importIn) { first(in).ID = "d" }),
				v("id of this thread, other content", "id", func(in *importIn) { first(in).ID = "g" }),
				v("id of this thread's head, other content", "id2", func(in *importIn) { in.b.Checkpoints[1].ID = "h" }),
			}},
			{name: "head", err: ckptstore.ErrConflict,
				holds: func(in *importIn) bool { return in.b.SetHead && in.b.Head != "h" },
				variants: []variant[importIn]{
					v("head an older checkpoint", "head", func(in *importIn) { in.b.Head = "g" }),
					v("head none", "head", func(in *importIn) { in.b.Head = "" }),
					v("head one of the batch", "head", func(in *importIn) { in.b.Head = "new" }),
					v("head unknown", "head", func(in *importIn) { in.b.Head = "unknown" }),
				}},
		},
	}
}

func (s *suite) testImportOrder(t *testing.T) { runOrder(t, s, importOrder()) }

// ---- ListPage ----

// A read fails as the writes do, first check first, and changes nothing.

// badListCursors are ListPage cursors no store can have returned.
func badListCursors() []struct{ name, cursor string } {
	good := driver.EncodeCursor(driver.Position{CreatedAt: 1000, ID: "g"})
	return []struct{ name, cursor string }{
		{"not base64", "not a cursor!"},
		{"a threads cursor", driver.EncodeThreadCursor("t")},
		{"truncated", good[:6]},
		{"base64 of nothing", base64.RawURLEncoding.EncodeToString([]byte{'p'})},
		{"standard base64 padding", good + "=="},
		{"createdAt NaN", base64.RawURLEncoding.EncodeToString(append([]byte{'p', 0x7f, 0xf8, 0, 0, 0, 0, 0, 1}, 'g'))},
		{"createdAt +Inf", base64.RawURLEncoding.EncodeToString(append([]byte{'p', 0x7f, 0xf0, 0, 0, 0, 0, 0, 0}, 'g'))},
		{"id invalid UTF-8", base64.RawURLEncoding.EncodeToString(append([]byte{'p', 0x40, 0, 0, 0, 0, 0, 0, 0}, 0xff))},
		{"garbage bytes", base64.RawURLEncoding.EncodeToString([]byte("\x00\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a"))},
	}
}

type listPageIn struct {
	thread string
	opt    ckptstore.ListOptions
}

func listPageOrder() orderTest[listPageIn] {
	v := fieldVariant[listPageIn]
	var cursors []variant[listPageIn]
	for _, c := range badListCursors() {
		cursors = append(cursors, v(c.name, "after", func(in *listPageIn) { in.opt.After = c.cursor }))
	}
	return orderTest[listPageIn]{
		read: true,
		base: func(*fixture) listPageIn { return listPageIn{thread: "t", opt: ckptstore.ListOptions{Limit: 2}} },
		run: func(f *fixture, in listPageIn) error {
			page, next, err := f.s.ListPage(f.ctx, in.thread, in.opt)
			if err != nil && (len(page) > 0 || next != "") {
				f.t.Errorf("ListPage failed (%v) but returned %d checkpoints, next %q", err, len(page), next)
			}
			return err
		},
		checks: []check[listPageIn]{
			{name: "ids", err: ckptstore.ErrInvalidID, variants: []variant[listPageIn]{
				v("thread id empty", "thread", func(in *listPageIn) { in.thread = "" }),
				v("thread id invalid", "thread", func(in *listPageIn) { in.thread = "\xff" }),
				v("thread id truncated", "thread", func(in *listPageIn) { in.thread = "t\xc3" }),
			}},
			{name: "limit", err: ckptstore.ErrInvalidEntry, variants: []variant[listPageIn]{
				v("limit -1", "limit", func(in *listPageIn) { in.opt.Limit = -1 }),
				v("limit 1001", "limit", func(in *listPageIn) { in.opt.Limit = 1001 }),
				v("limit MinInt", "limit", func(in *listPageIn) { in.opt.Limit = math.MinInt }),
			}},
			{name: "cursor", err: ckptstore.ErrInvalidEntry, variants: cursors},
		},
	}
}

func (s *suite) testListPageOrder(t *testing.T) { runOrder(t, s, listPageOrder()) }

// ---- Threads ----

type threadsIn struct {
	after string
	limit int
}

func threadsOrder() orderTest[threadsIn] {
	v := fieldVariant[threadsIn]
	cursors := []variant[threadsIn]{
		v("not base64", "after", func(in *threadsIn) { in.after = "not a cursor!" }),
		v("a list cursor", "after", func(in *threadsIn) {
			in.after = driver.EncodeCursor(driver.Position{CreatedAt: 1, ID: "t"})
		}),
		v("a bare thread id", "after", func(in *threadsIn) { in.after = "t" }),
		v("base64 of nothing", "after", func(in *threadsIn) { in.after = base64.RawURLEncoding.EncodeToString([]byte{'t'}) }),
		v("invalid UTF-8 inside", "after", func(in *threadsIn) {
			in.after = base64.RawURLEncoding.EncodeToString([]byte("t\xff"))
		}),
	}
	return orderTest[threadsIn]{
		read: true,
		base: func(*fixture) threadsIn { return threadsIn{limit: 2} },
		run: func(f *fixture, in threadsIn) error {
			page, next, err := f.s.Threads(f.ctx, in.after, in.limit)
			if err != nil && (len(page) > 0 || next != "") {
				f.t.Errorf("Threads failed (%v) but returned %q, next %q", err, page, next)
			}
			return err
		},
		checks: []check[threadsIn]{
			{name: "limit", err: ckptstore.ErrInvalidEntry, variants: []variant[threadsIn]{
				v("limit -1", "limit", func(in *threadsIn) { in.limit = -1 }),
				v("limit 1001", "limit", func(in *threadsIn) { in.limit = 1001 }),
				v("limit MinInt", "limit", func(in *threadsIn) { in.limit = math.MinInt }),
			}},
			{name: "cursor", err: ckptstore.ErrInvalidEntry, variants: cursors},
		},
	}
}

func (s *suite) testThreadsOrder(t *testing.T) { runOrder(t, s, threadsOrder()) }
