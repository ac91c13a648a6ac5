package conformance

// Caller op tokens (ckptstore.WithOpToken): Append, DeleteHead,
// ForkFromCheckpoint and AcquireWriter repeated with the token of a call
// that committed report that call's success and change nothing more — as
// when a client lost the reply and sends the write again. A call that
// failed leaves nothing behind: its repeat runs, and fails, again.

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/internal/testkit"
)

// opTokens makes the op tokens of one run of testOpTokens.
type opTokens struct {
	// run is unique per run, as callers must make their tokens, so
	// that stores sharing a server never see one another's.
	run string
}

// token returns the op token called name in this run.
func (o opTokens) token(name string) string { return "conformance-" + name + "-" + o.run }

// tok returns a context carrying the op token called name.
func (o opTokens) tok(name string) context.Context {
	return ckptstore.WithOpToken(context.Background(), o.token(name))
}

func (s *suite) testOpTokens(t *testing.T) {
	o := opTokens{run: rand.Text()}
	t.Run("Append", func(t *testing.T) { s.opTokensAppend(t, o) })
	t.Run("FailedAppendRunsAgain", func(t *testing.T) { s.opTokensFailedAppendRunsAgain(t, o) })
	t.Run("DeleteHead", func(t *testing.T) { s.opTokensDeleteHead(t, o) })
	t.Run("Fork", func(t *testing.T) { s.opTokensFork(t, o) })
	t.Run("AcquireWriter", func(t *testing.T) { s.opTokensAcquireWriter(t, o) })
	t.Run("TokensApart", func(t *testing.T) { s.opTokensTokensApart(t, o) })
}

func (s *suite) opTokensAppend(t *testing.T, o opTokens) {
	e, w := s.chained(t, "t", "a")
	ctx := o.tok("append")
	c := testkit.Checkpoint("t", "b", "a", 1000)
	c.Files = []ckptstore.Entry{testkit.File("f", 1, 1)}
	e.track(nil, "b")
	require.NoError(t, e.s.Append(ctx, c, "a", w), "Append with an op token")
	e.fails("the repeated Append", nil, func() error { return e.s.Append(ctx, c, "a", w) })
	// Still a success once the head has moved on.
	e.append(testkit.Checkpoint("t", "c", "", 1000), w)
	e.fails("the Append repeated after the head moved", nil, func() error { return e.s.Append(ctx, c, "a", w) })
	e.wantList("t", "a", "b", "c")
	e.wantRecount()
	// Another token is another write, refused as usual.
	e.fails("the same Append with another token", ckptstore.ErrDuplicateID, func() error { return e.s.Append(o.tok("append-2"), c, "a", w) })
	// The token is recognised before any check: a repeat that comes
	// after the writer lost its lease still reports the success.
	e.clock.Advance(LeaseDuration)
	e.acquire("t")
	e.fails("the Append repeated after its lease was taken over", nil, func() error { return e.s.Append(ctx, c, "a", w) })
}

func (s *suite) opTokensFailedAppendRunsAgain(t *testing.T, o opTokens) {
	e, w := s.chained(t, "t", "a")
	ctx := o.tok("append-failed")
	e.appendFailsCtx(ctx, "Append on a stale head", testkit.Checkpoint("t", "b", "", 1000), "", w, ckptstore.ErrConflict)
	e.appendFailsCtx(ctx, "Append on a stale head, repeated", testkit.Checkpoint("t", "b", "", 1000), "", w, ckptstore.ErrConflict)
	e.appendFailsCtx(o.tok("append-forged"), "Append with a forged writer", testkit.Checkpoint("t", "b", "a", 1000), "a", forged(w), ckptstore.ErrWriterLost)
	e.appendFailsCtx(o.tok("append-forged"), "Append with a forged writer, repeated", testkit.Checkpoint("t", "b", "a", 1000), "a", forged(w), ckptstore.ErrWriterLost)
}

func (s *suite) opTokensDeleteHead(t *testing.T, o opTokens) {
	e, w := s.chained(t, "t", "a", "b", "c")
	ctx := o.tok("delete")
	require.NoError(t, e.s.DeleteHead(ctx, "t", "c", w), "DeleteHead with an op token")
	e.fails("the repeated DeleteHead", nil, func() error { return e.s.DeleteHead(ctx, "t", "c", w) })
	e.wantThread("t", "b", "a", "b")
	e.wantRecount()
	e.fails("DeleteHead of the deleted head with another token", ckptstore.ErrNotHead, func() error { return e.s.DeleteHead(o.tok("delete-2"), "t", "c", w) })
	e.clock.Advance(LeaseDuration)
	e.fails("the DeleteHead repeated after its lease expired", nil, func() error { return e.s.DeleteHead(ctx, "t", "c", w) })
}

func (s *suite) opTokensFork(t *testing.T, o opTokens) {
	e, ws := s.leased(t, "src")
	a := richCP("src", "a", "")
	e.append(a, ws)
	wd := e.acquire("dest").Writer
	e.track([]string{"dest"}, "root")
	in := forkInput("src", "a", "dest", "root", 3, wd)
	ctx := o.tok("fork")
	first, err := e.s.ForkFromCheckpoint(ctx, in)
	require.NoError(t, err, "ForkFromCheckpoint with an op token")
	want := wantForkRoot(e.get("a"), in)
	wantCP(t, first, want, "ForkFromCheckpoint returned")
	e.fails("the repeated fork", nil, func() error {
		again, err := e.s.ForkFromCheckpoint(ctx, in)
		if err == nil {
			wantCP(t, again, want, "the repeated fork returned")
			scribble(again) // the caller's own copy
		}
		return err
	})
	wantCP(t, e.get("root"), want, "changing what the repeated fork returned changed the store")
	e.wantRecount()
	e.fails("the same fork with another token", ckptstore.ErrForkDestinationNotEmpty, func() error { return errOf(e.s.ForkFromCheckpoint(o.tok("fork-2"), in)) })
}

func (s *suite) opTokensAcquireWriter(t *testing.T, o opTokens) {
	e := s.env(t)
	ctx := o.tok("acquire")
	l, err := e.s.AcquireWriter(ctx, "t")
	require.NoError(t, err, "AcquireWriter with an op token")
	e.track([]string{"t"})
	if l.OwnerToken != o.token("acquire") {
		t.Errorf("the lease's owner token is %q, want the op token", l.OwnerToken)
	}
	e.checkLease(l, "t", LeaseDuration, RenewAfter)
	e.clock.Advance(10 * time.Millisecond) // the repeat comes later; the lease is the same
	again, err := e.s.AcquireWriter(ctx, "t")
	require.NoError(t, err, "the repeated AcquireWriter")
	if again.Writer != l.Writer || !again.ExpiresAt.Equal(l.ExpiresAt) {
		t.Errorf("the repeated AcquireWriter returned %+v expiring %v, want the first lease %+v expiring %v",
			again.Writer, again.ExpiresAt, l.Writer, l.ExpiresAt)
	}
	e.holds("AcquireWriter without the token", l.Writer, "t")
	e.works("the repeated call's lease", again.Writer, "t")
	// Another token while the lease is held fails, and its repeat,
	// once the lease is free, takes a new lease with that token.
	ctx2 := o.tok("acquire-2")
	e.fails("AcquireWriter with another token while leased", ckptstore.ErrWriterConflict, func() error { return errOf(e.s.AcquireWriter(ctx2, "t")) })
	l.Release(e.ctx)
	l2, err := e.s.AcquireWriter(ctx2, "t")
	require.NoError(t, err, "AcquireWriter with the second token after release")
	if l2.OwnerToken != o.token("acquire-2") || l2.Fence <= l.Fence {
		t.Errorf("the second lease is %+v, want owner token %q and a fence above %d", l2.Writer, o.token("acquire-2"), l.Fence)
	}
	e.writerLost("the released first lease", l.Writer, "t")
	e.works("the second lease", l2.Writer, "t")
}

func (s *suite) opTokensTokensApart(t *testing.T, o opTokens) {
	// One token per write: tokens of other writes change nothing.
	e, w := s.chained(t, "t", "a")
	require.NoError(t, e.s.Append(o.tok("x1"), testkit.Checkpoint("t", "b", "a", 1000), "a", w), "Append b")
	require.NoError(t, e.s.Append(o.tok("x2"), testkit.Checkpoint("t", "c", "b", 1000), "b", w), "Append c")
	require.NoError(t, e.s.DeleteHead(o.tok("x3"), "t", "c", w), "DeleteHead c")
	require.NoError(t, e.s.DeleteHead(o.tok("x4"), "t", "b", w), "DeleteHead b")
	e.track(nil, "b", "c")
	e.wantThread("t", "a", "a")
}

// appendFailsCtx is appendFails with the context ctx: it tries an append
// that must fail with want and change nothing.
func (e *env) appendFailsCtx(ctx context.Context, what string, c *ckptstore.Checkpoint, expected string, w ckptstore.Writer, want error) {
	e.t.Helper()
	e.track([]string{c.ThreadID, w.ThreadID}, c.ID, c.ParentCheckpointID, expected)
	e.fails(what, want, func() error { return e.s.Append(ctx, c, expected, w) })
}
