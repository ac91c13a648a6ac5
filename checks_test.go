package ckptstore

import (
	"context"
	"errors"
	"testing"

	"github.com/ckptstore/ckptstore/driver"
)

var (
	live   = context.Background()
	w      = Writer{ThreadID: "t", OwnerToken: "o", Fence: 1}
	other  = Writer{ThreadID: "u", OwnerToken: "o", Fence: 1}
	badID  = Writer{ThreadID: "", OwnerToken: "o", Fence: 1}
	cancel = func() context.Context {
		ctx, c := context.WithCancel(context.Background())
		c()
		return ctx
	}()
)

func cp(id string) *Checkpoint {
	return &Checkpoint{ID: id, ThreadID: "t", CreatedAt: 1, Reason: ReasonAutomatic}
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
		{"Read ok", checkRead(live, "id", "x"), nil},
		{"Read id", checkRead(cancel, "id", ""), ErrInvalidID},
		{"Read ctx", checkRead(cancel, "id", "x"), context.Canceled},

		{"Append ok", checkAppend(live, cp("a"), "", w), nil},
		{"Append id before entry", checkAppend(live, &Checkpoint{ThreadID: "t", Reason: "x"}, "", w), ErrInvalidID},
		{"Append entry before writer thread", checkAppend(live, bad, "", other), ErrInvalidEntry},
		{"Append writer thread", checkAppend(live, cp("a"), "", other), ErrWriterLost},
		{"Append writer thread before ctx", checkAppend(cancel, cp("a"), "", other), ErrWriterLost},
		{"Append ctx", checkAppend(cancel, cp("a"), "", w), context.Canceled},

		{"DeleteHead ok", checkDeleteHead(live, "t", "a", w), nil},
		{"DeleteHead id", checkDeleteHead(live, "t", "", other), ErrInvalidID},
		{"DeleteHead writer thread", checkDeleteHead(live, "t", "a", other), ErrWriterLost},

		{"Prune ok", checkDeleteCheckpoints(live, "t", 1, w), nil},
		{"Prune id before keep", checkDeleteCheckpoints(live, "t", 0, badID), ErrInvalidID},
		{"Prune keep before writer", checkDeleteCheckpoints(live, "t", 0, other), ErrInvalidEntry},
		{"Prune writer thread", checkDeleteCheckpoints(live, "t", 1, other), ErrWriterLost},

		{"SaveThread ok", checkSaveThread(live, "t", []byte("[]")), nil},
		{"SaveThread id before messages", checkSaveThread(live, "", nil), ErrInvalidID},
		{"SaveThread messages", checkSaveThread(live, "t", nil), ErrInvalidEntry},
		{"SaveThread ctx", checkSaveThread(cancel, "t", []byte("[]")), context.Canceled},

		{"SaveTranscript ok", checkSaveTranscript(live, "t", transcript("[]")), nil},
		{"SaveTranscript id before messages", checkSaveTranscript(live, "", Transcript{}), ErrInvalidID},
		{"SaveTranscript the zero Transcript", checkSaveTranscript(live, "t", Transcript{}), ErrInvalidEntry},
		{"SaveTranscript ctx", checkSaveTranscript(cancel, "t", transcript("[]")), context.Canceled},

		{"DeleteThread ok", checkDeleteThread(live, "t", w), nil},
		{"DeleteThread id", checkDeleteThread(live, "t", badID), ErrInvalidID},
		{"DeleteThread writer thread", checkDeleteThread(live, "t", other), ErrWriterLost},

		{"Import ok", checkImport(live, ImportBatch{ThreadID: "t", Checkpoints: []*Checkpoint{cp("a")}, Writer: w}), nil},
		{"Import entry before writer", checkImport(live, ImportBatch{ThreadID: "t", Checkpoints: []*Checkpoint{bad}, Writer: other}), ErrInvalidEntry},
		{"Import writer thread", checkImport(live, ImportBatch{ThreadID: "t", Writer: other}), ErrWriterLost},

		{"RenewWriter id", checkRenew(live, badID), ErrInvalidID},
		{"AcquireWriter ctx", checkAcquireWriter(cancel, "t"), context.Canceled},
		{"InstanceKey", checkInstanceKey(live, ""), ErrInvalidID},
		{"InstanceUpsert", checkInstanceUpsert(live, nil), ErrInvalidEntry},
		{"Fork same thread", checkFork(live, ForkInput{SourceThreadID: "t", SourceCheckpointID: "a", DestinationThreadID: "t", DestinationCheckpointID: "b", Writer: w}), ErrForkSourceThreadMismatch},
	} {
		if c.want == nil && c.err != nil || c.want != nil && !errors.Is(c.err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, c.err, c.want)
		}
	}
}

func TestReleaseNeverFailsOnInput(t *testing.T) {
	if ok, err := checkRelease(live, badID); ok || err != nil {
		t.Errorf("invalid writer: ok=%v err=%v, want false, nil", ok, err)
	}
	if ok, err := checkRelease(live, w); !ok || err != nil {
		t.Errorf("valid writer: ok=%v err=%v", ok, err)
	}
}

func TestListPage(t *testing.T) {
	p, err := checkListPage(live, "t", ListOptions{})
	if err != nil || p.Limit != driver.DefaultPageLimit || p.After != nil {
		t.Fatalf("defaults: %+v, %v", p, err)
	}
	if _, err := checkListPage(live, "", ListOptions{Limit: -1, After: "junk"}); !errors.Is(err, ErrInvalidID) {
		t.Errorf("id first: %v", err)
	}
	if _, err := checkListPage(live, "t", ListOptions{Limit: 1001, After: "junk"}); !errors.Is(err, ErrInvalidEntry) {
		t.Errorf("limit: %v", err)
	}
	if _, err := checkListPage(live, "t", ListOptions{After: "junk"}); !errors.Is(err, ErrInvalidEntry) {
		t.Errorf("cursor: %v", err)
	}
	cur := driver.EncodeCursor(driver.Position{CreatedAt: 2, ID: "b"})
	fwd, err := checkListPage(live, "t", ListOptions{After: cur, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	rev := fwd
	rev.Reverse = true
	for _, c := range []struct {
		cp        *Checkpoint
		fwd, back bool
	}{
		{&Checkpoint{ID: "b", CreatedAt: 2}, false, false},
		{&Checkpoint{ID: "c", CreatedAt: 2}, true, false},
		{&Checkpoint{ID: "a", CreatedAt: 2}, false, true},
		{&Checkpoint{ID: "a", CreatedAt: 3}, true, false},
		{&Checkpoint{ID: "z", CreatedAt: 1}, false, true},
	} {
		if fwd.Includes(c.cp) != c.fwd || rev.Includes(c.cp) != c.back {
			t.Errorf("%v@%v: forward %v reverse %v, want %v %v", c.cp.ID, c.cp.CreatedAt, fwd.Includes(c.cp), rev.Includes(c.cp), c.fwd, c.back)
		}
	}
	page := []*Checkpoint{{ID: "c", CreatedAt: 2}, {ID: "d", CreatedAt: 7}}
	if fwd.Next(page, false) != "" {
		t.Error("no more: next must be empty")
	}
	next, err := driver.DecodeCursor(fwd.Next(page, true))
	if err != nil || next.ID != "d" || next.CreatedAt != 7 {
		t.Errorf("next = %v, %v; want the last checkpoint's position", next, err)
	}
}

func TestThreads(t *testing.T) {
	p, err := checkThreads(live, driver.EncodeThreadCursor("m"), 5)
	if err != nil || p.After != "m" || p.Limit != 5 {
		t.Fatalf("%+v, %v", p, err)
	}
	if got := p.Next([]string{"n", "o"}, true); got != driver.EncodeThreadCursor("o") {
		t.Errorf("next = %q", got)
	}
	if p.Next([]string{"n"}, false) != "" {
		t.Error("no more: next must be empty")
	}
	if _, err := checkThreads(live, "junk", 0); !errors.Is(err, ErrInvalidEntry) {
		t.Errorf("cursor: %v", err)
	}
	if _, err := checkThreads(live, "", 1001); !errors.Is(err, ErrInvalidEntry) {
		t.Errorf("limit: %v", err)
	}
}

// transcript is s as a checked Transcript.
func transcript(s string) Transcript {
	t, err := driver.CheckTranscript([]byte(s))
	if err != nil {
		panic(err)
	}
	return t
}
