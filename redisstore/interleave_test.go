package redisstore

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

// ienv is one interleaving: s is the store under test, whose hook runs
// the concurrent operation; o is another store on the same prefix that
// runs it.
type ienv struct {
	t    *testing.T
	ctx  context.Context
	c    redis.UniversalClient
	s, o *Driver
	clk  interface{ Advance(time.Duration) }
	w    map[string]ckptstore.Writer
}

func (e *ienv) lease(thread string) ckptstore.Writer {
	e.t.Helper()
	w := acquire(e.t, e.o, thread)
	e.w[thread] = w
	return w
}

func (e *ienv) add(thread, id, parent string) {
	e.t.Helper()
	must(e.t, e.o.p().Append(e.ctx, testkit.Checkpoint(thread, id, parent, 1, 1), parent, e.w[thread]))
}

// takeover lets the thread's lease expire and takes a new one in o.
func (e *ienv) takeover(thread string) {
	e.t.Helper()
	e.clk.Advance(5 * time.Minute) // past the default 120 s lease
	must(e.t, func() error { _, err := e.o.p().AcquireWriter(e.ctx, thread); return err }())
}

// interleaving is a write and an operation that runs after the write's
// Go-side checks and before its script (the first script named script),
// which the script must catch.
type interleaving struct {
	name   string
	script string
	setup  func(e *ienv)
	other  func(e *ienv)
	call   func(e *ienv) error
	want   error // nil: the call succeeds and (so) changes nothing either
}

var interleavings = []interleaving{
	{"Append/release", "append", func(e *ienv) { e.lease("t"); e.add("t", "a", "") },
		func(e *ienv) { must(e.t, e.o.p().Release(e.ctx, e.w["t"])) },
		func(e *ienv) error { return e.s.p().Append(e.ctx, testkit.Checkpoint("t", "b", "a", 2), "a", e.w["t"]) }, ckptstore.ErrWriterLost},
	{"Append/takeover", "append", func(e *ienv) { e.lease("t"); e.add("t", "a", "") },
		func(e *ienv) { e.takeover("t") },
		func(e *ienv) error { return e.s.p().Append(e.ctx, testkit.Checkpoint("t", "b", "a", 2), "a", e.w["t"]) }, ckptstore.ErrWriterLost},
	{"Append/same head", "append", func(e *ienv) { e.lease("t"); e.add("t", "a", "") },
		func(e *ienv) { e.add("t", "c", "a") },
		func(e *ienv) error { return e.s.p().Append(e.ctx, testkit.Checkpoint("t", "b", "a", 2), "a", e.w["t"]) }, ckptstore.ErrConflict},
	{"Append/same id elsewhere", "append", func(e *ienv) { e.lease("t"); e.lease("u"); e.add("t", "a", "") },
		func(e *ienv) { e.add("u", "b", "") },
		func(e *ienv) error { return e.s.p().Append(e.ctx, testkit.Checkpoint("t", "b", "a", 2), "a", e.w["t"]) }, ckptstore.ErrDuplicateID},
	{"DeleteHead/takeover", "deleteHead", func(e *ienv) { e.lease("t"); e.add("t", "a", "") },
		func(e *ienv) { e.takeover("t") },
		func(e *ienv) error { return e.s.p().DeleteHead(e.ctx, "t", "a", e.w["t"]) }, ckptstore.ErrWriterLost},
	{"DeleteHead/same head", "deleteHead", func(e *ienv) { e.lease("t"); e.add("t", "a", ""); e.add("t", "b", "a") },
		func(e *ienv) { must(e.t, e.o.p().DeleteHead(e.ctx, "t", "b", e.w["t"])) },
		func(e *ienv) error { return e.s.p().DeleteHead(e.ctx, "t", "b", e.w["t"]) }, ckptstore.ErrNotHead},
	{"DeleteCheckpoints/takeover", "prune", func(e *ienv) { e.lease("t"); e.add("t", "a", ""); e.add("t", "b", "a") },
		func(e *ienv) { e.takeover("t") },
		func(e *ienv) error { _, err := e.s.p().DeleteCheckpoints(e.ctx, "t", 1, e.w["t"]); return err }, ckptstore.ErrWriterLost},
	{"DeleteCheckpoints/same chain", "prune", func(e *ienv) { e.lease("t"); e.add("t", "a", ""); e.add("t", "b", "a") },
		func(e *ienv) { _, err := e.o.p().DeleteCheckpoints(e.ctx, "t", 1, e.w["t"]); must(e.t, err) },
		func(e *ienv) error {
			ids, err := e.s.p().DeleteCheckpoints(e.ctx, "t", 1, e.w["t"])
			if err == nil && len(ids) != 0 {
				e.t.Errorf("the second prune deleted %q too", ids)
			}
			return err
		}, nil},
	{"DeleteCheckpoints/long, takeover between walk and delete", "pruneBatch",
		func(e *ienv) { e.lease("t"); chainOf(e.t, e.o, "t", e.w["t"], 7) },
		func(e *ienv) { e.takeover("t") },
		func(e *ienv) error { _, err := e.s.p().DeleteCheckpoints(e.ctx, "t", 1, e.w["t"]); return err }, ckptstore.ErrWriterLost},
	{"Fork/same destination", "fork", forkSetup, func(e *ienv) { _, err := e.o.p().ForkFromCheckpoint(e.ctx, forkIn(e, "other")); must(e.t, err) },
		func(e *ienv) error { _, err := e.s.p().ForkFromCheckpoint(e.ctx, forkIn(e, "root")); return err }, ckptstore.ErrForkDestinationNotEmpty},
	{"Fork/transcript saved", "fork", forkSetup, func(e *ienv) { must(e.t, e.o.p().SaveThread(e.ctx, "d", []byte("[]"))) },
		func(e *ienv) error { _, err := e.s.p().ForkFromCheckpoint(e.ctx, forkIn(e, "root")); return err }, ckptstore.ErrForkDestinationNotEmpty},
	{"Fork/append to destination", "fork", forkSetup, func(e *ienv) { e.add("d", "x", "") },
		func(e *ienv) error { _, err := e.s.p().ForkFromCheckpoint(e.ctx, forkIn(e, "root")); return err }, ckptstore.ErrForkDestinationNotEmpty},
	{"Fork/destination id used", "fork", forkSetup, func(e *ienv) { e.add("t", "root", "a") },
		func(e *ienv) error { _, err := e.s.p().ForkFromCheckpoint(e.ctx, forkIn(e, "root")); return err }, ckptstore.ErrForkDestinationNotEmpty},
	{"Fork/release", "fork", forkSetup, func(e *ienv) { must(e.t, e.o.p().Release(e.ctx, e.w["d"])) },
		func(e *ienv) error { _, err := e.s.p().ForkFromCheckpoint(e.ctx, forkIn(e, "root")); return err }, ckptstore.ErrWriterLost},
	{"Fork/source deleted", "fork", forkSetup, func(e *ienv) { must(e.t, e.o.p().DeleteHead(e.ctx, "t", "a", e.w["t"])) },
		func(e *ienv) error { _, err := e.s.p().ForkFromCheckpoint(e.ctx, forkIn(e, "root")); return err }, ckptstore.ErrForkSourceNotFound},
	{"AcquireWriter/acquire", "acquire", func(*ienv) {}, func(e *ienv) { e.lease("t") },
		func(e *ienv) error { _, err := e.s.p().AcquireWriter(e.ctx, "t"); return err }, ckptstore.ErrWriterConflict},
	{"Renew/takeover", "renew", func(e *ienv) { e.lease("t") }, func(e *ienv) { e.takeover("t") },
		func(e *ienv) error { _, err := e.s.p().Renew(e.ctx, e.w["t"]); return err }, ckptstore.ErrWriterLost},
	{"Release/takeover", "release", func(e *ienv) { e.lease("t") }, func(e *ienv) { e.takeover("t") },
		func(e *ienv) error { return e.s.p().Release(e.ctx, e.w["t"]) }, nil},
	{"DeleteThread/takeover", "deleteThread", func(e *ienv) { e.lease("t"); e.add("t", "a", "") },
		func(e *ienv) { e.takeover("t") },
		func(e *ienv) error { _, err := e.s.p().DeleteThread(e.ctx, "t", e.w["t"]); return err }, ckptstore.ErrWriterLost},
	{"Import/release", "import", func(e *ienv) { e.lease("t") }, func(e *ienv) { must(e.t, e.o.p().Release(e.ctx, e.w["t"])) },
		func(e *ienv) error { return importOne(e, "i", "", true) }, ckptstore.ErrWriterLost},
	{"Import/same id elsewhere", "import", func(e *ienv) { e.lease("t"); e.lease("u") }, func(e *ienv) { e.add("u", "i", "") },
		func(e *ienv) error { return importOne(e, "i", "", false) }, ckptstore.ErrDuplicateID},
	{"Import/same id other content", "import", func(e *ienv) { e.lease("t") }, func(e *ienv) { e.add("t", "i", "") },
		func(e *ienv) error { return importOne(e, "i", "", false) }, ckptstore.ErrDuplicateID},
	{"Import/head moved", "import", func(e *ienv) { e.lease("t") }, func(e *ienv) { e.add("t", "a", "") },
		func(e *ienv) error { return importOne(e, "i", "", true) }, ckptstore.ErrConflict},
}

func forkSetup(e *ienv) { e.lease("t"); e.lease("d"); e.add("t", "a", "") }

func forkIn(e *ienv, id string) ckptstore.ForkInput {
	return ckptstore.ForkInput{SourceThreadID: "t", SourceCheckpointID: "a", DestinationThreadID: "d",
		DestinationCheckpointID: id, CreatedAt: 5, Writer: e.w["d"]}
}

// importOne imports checkpoint id (content unlike what add stores) into t.
func importOne(e *ienv, id, parent string, setHead bool) error {
	cp := testkit.Checkpoint("t", id, parent, 7, 9)
	_, err := e.s.p().Import(e.ctx, ckptstore.ImportBatch{ThreadID: "t", Checkpoints: []*ckptstore.Checkpoint{cp},
		SetHead: setHead, Head: id, Writer: e.w["t"]})
	return err
}

// Every write, with an operation that would make it fail run between its
// Go-side checks and its script: the script catches it, returns the
// contract error and leaves the keyspace exactly as the operation left it.
func TestInterleavedWritesAreCaught(t *testing.T) {
	backends(t, func(t *testing.T, c redis.UniversalClient) {
		for _, tc := range interleavings {
			t.Run(tc.name, func(t *testing.T) {
				clk := newClock()
				o := Options{Options: ckptstore.Options{Now: clk.Now}, BatchSize: 2}
				s := newStore(t, c, o)
				o.Prefix = s.opts.Prefix
				e := &ienv{t: t, ctx: context.Background(), c: c, s: s, o: newStore(t, c, o), clk: clk, w: map[string]ckptstore.Writer{}}
				tc.setup(e)
				var before map[string]string
				s.r.before = func(name string) {
					if name == tc.script && before == nil {
						tc.other(e)
						before = keyspace(t, c, s)
					}
				}
				err := tc.call(e)
				if before == nil {
					t.Fatalf("the call ran no %s script", tc.script)
				}
				if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
					t.Fatalf("got %v, want %v", err, tc.want)
				}
				after := keyspace(t, c, s)
				if tc.want == nil { // a success records its op key, and nothing else
					maps.DeleteFunc(after, func(k, _ string) bool {
						_, had := before[k]
						return !had && strings.HasPrefix(k, s.keys.base+"o:")
					})
				}
				if !maps.Equal(before, after) {
					t.Errorf("the caught write changed the keyspace:\nbefore %v\nafter  %v", before, after)
				}
				checkStore(t, s)
			})
		}
	})
}
