package precheck_test

import (
	"context"
	"errors"
	"testing"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/precheck"
)

var (
	live   = context.Background()
	w      = ckptstore.Writer{ThreadID: "t", OwnerToken: "o", Fence: 1}
	other  = ckptstore.Writer{ThreadID: "u", OwnerToken: "o", Fence: 1}
	badID  = ckptstore.Writer{ThreadID: "", OwnerToken: "o", Fence: 1}
	cancel = func() context.Context {
		ctx, c := context.WithCancel(context.Background())
		c()
		return ctx
	}()
)

func cp(id string) *ckptstore.Checkpoint {
	return &ckptstore.Checkpoint{ID: id, ThreadID: "t", CreatedAt: 1, Reason: ckptstore.ReasonAutomatic}
}

// TestOrder checks, for every function, that a valid call passes, that each
// pure check fails with its sentinel, that an earlier check wins over a
// later one, and that a done context fails only once the input is valid.
func TestOrder(t *testing.T) {
	bad := cp("a")
	bad.Reason = "nope"
	for _, c := range []struct {
		name string
		err  error
		want error
	}{
		{"Read ok", precheck.Read(live, "id", "x"), nil},
		{"Read id", precheck.Read(cancel, "id", ""), ckptstore.ErrInvalidID},
		{"Read ctx", precheck.Read(cancel, "id", "x"), context.Canceled},

		{"Append ok", precheck.Append(live, cp("a"), "", w), nil},
		{"Append id before entry", precheck.Append(live, &ckptstore.Checkpoint{ThreadID: "t", Reason: "x"}, "", w), ckptstore.ErrInvalidID},
		{"Append entry before writer thread", precheck.Append(live, bad, "", other), ckptstore.ErrInvalidEntry},
		{"Append writer thread", precheck.Append(live, cp("a"), "", other), ckptstore.ErrWriterLost},
		{"Append writer thread before ctx", precheck.Append(cancel, cp("a"), "", other), ckptstore.ErrWriterLost},
		{"Append ctx", precheck.Append(cancel, cp("a"), "", w), context.Canceled},

		{"DeleteHead ok", precheck.DeleteHead(live, "t", "a", w), nil},
		{"DeleteHead id", precheck.DeleteHead(live, "t", "", other), ckptstore.ErrInvalidID},
		{"DeleteHead writer thread", precheck.DeleteHead(live, "t", "a", other), ckptstore.ErrWriterLost},

		{"Prune ok", precheck.Prune(live, "t", 1, w), nil},
		{"Prune id before keep", precheck.Prune(live, "t", 0, badID), ckptstore.ErrInvalidID},
		{"Prune keep before writer", precheck.Prune(live, "t", 0, other), ckptstore.ErrInvalidEntry},
		{"Prune writer thread", precheck.Prune(live, "t", 1, other), ckptstore.ErrWriterLost},

		{"SaveThread ok", precheck.SaveThread(live, "t", []byte("[]")), nil},
		{"SaveThread id before messages", precheck.SaveThread(live, "", nil), ckptstore.ErrInvalidID},
		{"SaveThread messages", precheck.SaveThread(live, "t", nil), ckptstore.ErrInvalidEntry},
		{"SaveThread ctx", precheck.SaveThread(cancel, "t", []byte("[]")), context.Canceled},

		{"DeleteThread ok", precheck.DeleteThread(live, "t", w), nil},
		{"DeleteThread id", precheck.DeleteThread(live, "t", badID), ckptstore.ErrInvalidID},
		{"DeleteThread writer thread", precheck.DeleteThread(live, "t", other), ckptstore.ErrWriterLost},

		{"Import ok", precheck.Import(live, ckptstore.ImportBatch{ThreadID: "t", Checkpoints: []*ckptstore.Checkpoint{cp("a")}, Writer: w}), nil},
		{"Import entry before writer", precheck.Import(live, ckptstore.ImportBatch{ThreadID: "t", Checkpoints: []*ckptstore.Checkpoint{bad}, Writer: other}), ckptstore.ErrInvalidEntry},
		{"Import writer thread", precheck.Import(live, ckptstore.ImportBatch{ThreadID: "t", Writer: other}), ckptstore.ErrWriterLost},

		{"RenewWriter id", precheck.RenewWriter(live, badID), ckptstore.ErrInvalidID},
		{"AcquireWriter ctx", precheck.AcquireWriter(cancel, "t"), context.Canceled},
		{"InstanceKey", precheck.InstanceKey(live, ""), ckptstore.ErrInvalidID},
		{"InstanceUpsert", precheck.InstanceUpsert(live, nil), ckptstore.ErrInvalidEntry},
		{"Fork same thread", precheck.Fork(live, ckptstore.ForkInput{SourceThreadID: "t", SourceCheckpointID: "a", DestinationThreadID: "t", DestinationCheckpointID: "b", Writer: w}), ckptstore.ErrForkSourceThreadMismatch},
	} {
		if c.want == nil && c.err != nil || c.want != nil && !errors.Is(c.err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, c.err, c.want)
		}
	}
}

func TestReleaseNeverFailsOnInput(t *testing.T) {
	if ok, err := precheck.ReleaseWriter(live, badID); ok || err != nil {
		t.Errorf("invalid writer: ok=%v err=%v, want false, nil", ok, err)
	}
	if ok, err := precheck.ReleaseWriter(live, w); !ok || err != nil {
		t.Errorf("valid writer: ok=%v err=%v", ok, err)
	}
}

func TestListPage(t *testing.T) {
	p, err := precheck.ListPage(live, "t", ckptstore.ListOptions{})
	if err != nil || p.Limit != driver.DefaultPageLimit || p.After != nil {
		t.Fatalf("defaults: %+v, %v", p, err)
	}
	if _, err := precheck.ListPage(live, "", ckptstore.ListOptions{Limit: -1, After: "junk"}); !errors.Is(err, ckptstore.ErrInvalidID) {
		t.Errorf("id first: %v", err)
	}
	if _, err := precheck.ListPage(live, "t", ckptstore.ListOptions{Limit: 1001, After: "junk"}); !errors.Is(err, ckptstore.ErrInvalidEntry) {
		t.Errorf("limit: %v", err)
	}
	if _, err := precheck.ListPage(live, "t", ckptstore.ListOptions{After: "junk"}); !errors.Is(err, ckptstore.ErrInvalidEntry) {
		t.Errorf("cursor: %v", err)
	}
	cur := driver.EncodeCursor(driver.Position{CreatedAt: 2, ID: "b"})
	fwd, err := precheck.ListPage(live, "t", ckptstore.ListOptions{After: cur, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	rev := fwd
	rev.Reverse = true
	for _, c := range []struct {
		cp        *ckptstore.Checkpoint
		fwd, back bool
	}{
		{&ckptstore.Checkpoint{ID: "b", CreatedAt: 2}, false, false},
		{&ckptstore.Checkpoint{ID: "c", CreatedAt: 2}, true, false},
		{&ckptstore.Checkpoint{ID: "a", CreatedAt: 2}, false, true},
		{&ckptstore.Checkpoint{ID: "a", CreatedAt: 3}, true, false},
		{&ckptstore.Checkpoint{ID: "z", CreatedAt: 1}, false, true},
	} {
		if fwd.Includes(c.cp) != c.fwd || rev.Includes(c.cp) != c.back {
			t.Errorf("%v@%v: forward %v reverse %v, want %v %v", c.cp.ID, c.cp.CreatedAt, fwd.Includes(c.cp), rev.Includes(c.cp), c.fwd, c.back)
		}
	}
	page := []*ckptstore.Checkpoint{{ID: "c", CreatedAt: 2}, {ID: "d", CreatedAt: 7}}
	if fwd.Next(page, false) != "" {
		t.Error("no more: next must be empty")
	}
	next, err := driver.DecodeCursor(fwd.Next(page, true))
	if err != nil || next.ID != "d" || next.CreatedAt != 7 {
		t.Errorf("next = %v, %v; want the last checkpoint's position", next, err)
	}
}

func TestThreads(t *testing.T) {
	p, err := precheck.Threads(live, driver.EncodeThreadCursor("m"), 5)
	if err != nil || p.After != "m" || p.Limit != 5 {
		t.Fatalf("%+v, %v", p, err)
	}
	if got := p.Next([]string{"n", "o"}, true); got != driver.EncodeThreadCursor("o") {
		t.Errorf("next = %q", got)
	}
	if p.Next([]string{"n"}, false) != "" {
		t.Error("no more: next must be empty")
	}
	if _, err := precheck.Threads(live, "junk", 0); !errors.Is(err, ckptstore.ErrInvalidEntry) {
		t.Errorf("cursor: %v", err)
	}
	if _, err := precheck.Threads(live, "", 1001); !errors.Is(err, ckptstore.ErrInvalidEntry) {
		t.Errorf("limit: %v", err)
	}
}
