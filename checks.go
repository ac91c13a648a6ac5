package ckptstore

// The pure checks of every store method, in one place: ids, entries,
// limits, cursors, the writer's thread against the write's thread, and the
// context. The portable store (portable.go) runs a method's function first
// and hands the driver only what passed; the driver keeps the checks that
// need its state — writer live, duplicate id, head, parent, destination
// empty — which it runs in the order docs/contract.md gives, after these.
//
// Each function returns the first failing check, in contract order, or
// ctx.Err() when the context is done, so a cancelled call changes nothing.
// The checks of a function are exactly the prefix of its method's check
// order that reads only arguments; where a state check comes between two
// pure ones (ForkFromCheckpoint's source checks come before its writer
// check), the later pure check is a function of its own
// (checkWriterThread) whose result the driver returns at its place in the
// order (driver.Fork.WriterThreadErr).

import (
	"context"
	"encoding/json"

	"github.com/ckptstore/ckptstore/driver"
)

// checkRead checks Get's checkpoint id, or List's and Head's thread id: what
// names the id ("checkpoint id", "thread id") in the error.
func checkRead(ctx context.Context, what, id string) error {
	if err := driver.ValidateID(what, id); err != nil {
		return err
	}
	return ctx.Err()
}

// checkWriterThread fails with ErrWriterLost when w is not a writer of threadID:
// the part of "the writer is current" that needs no state.
func checkWriterThread(w driver.Writer, threadID string) error {
	if w.ThreadID != threadID {
		return driver.WriterThreadError(w.ThreadID, threadID)
	}
	return nil
}

// checkAppend checks Append's steps 1 and 2 and the writer's thread (the pure
// part of step 3). The store then checks, in order: writer live, id unused,
// head, parent.
func checkAppend(ctx context.Context, cp *driver.Checkpoint, expectedHeadID string, w driver.Writer) error {
	return checkAppendChecked(ctx, cp, driver.ValidateAppend(cp, expectedHeadID, w), w)
}

// checkAppendChecked is checkAppend after its pure checks, whose result
// is validated: then the writer's thread and ctx.
func checkAppendChecked(ctx context.Context, cp *driver.Checkpoint, validated error, w driver.Writer) error {
	if validated != nil {
		return validated
	}
	if err := checkWriterThread(w, cp.ThreadID); err != nil {
		return err
	}
	return ctx.Err()
}

// checkDeleteHead checks DeleteHead's ids and the writer's thread. The store
// then checks: writer live, checkpoint is the head.
func checkDeleteHead(ctx context.Context, threadID, checkpointID string, w driver.Writer) error {
	if err := driver.ValidateDeleteHead(threadID, checkpointID, w); err != nil {
		return err
	}
	if err := checkWriterThread(w, threadID); err != nil {
		return err
	}
	return ctx.Err()
}

// checkDeleteCheckpoints checks DeleteCheckpoints' ids, keep and the writer's thread. The
// store then checks: writer live.
func checkDeleteCheckpoints(ctx context.Context, threadID string, keep int, w driver.Writer) error {
	if err := driver.ValidatePrune(threadID, keep, w); err != nil {
		return err
	}
	if err := checkWriterThread(w, threadID); err != nil {
		return err
	}
	return ctx.Err()
}

// checkFork checks ForkFromCheckpoint's ids, createdAt and distinct threads. The
// store then checks, in order: source exists, source in the source thread,
// WriterThread(in.Writer, in.DestinationThreadID), writer live, destination
// empty (no head, checkpoint or transcript; destination id unused).
func checkFork(ctx context.Context, in driver.ForkInput) error {
	if err := driver.ValidateFork(in); err != nil {
		return err
	}
	return ctx.Err()
}

// checkAcquireWriter checks the thread id. The store then checks: no live lease.
func checkAcquireWriter(ctx context.Context, threadID string) error {
	return checkRead(ctx, "thread id", threadID)
}

// checkRenew checks the writer's thread id. The store then checks: writer
// live (ErrWriterLost).
func checkRenew(ctx context.Context, w driver.Writer) error {
	return checkRead(ctx, "writer thread id", w.ThreadID)
}

// checkRelease reports whether a release of w can match any lease: one
// with an invalid thread id cannot, and Release does nothing then. It never
// fails on the input, as Release never fails; only the context can stop it.
func checkRelease(ctx context.Context, w driver.Writer) (ok bool, err error) {
	if driver.ValidateID("writer thread id", w.ThreadID) != nil {
		return false, nil
	}
	return true, ctx.Err()
}

// checkLoadThread checks the thread id.
func checkLoadThread(ctx context.Context, threadID string) error {
	return checkRead(ctx, "thread id", threadID)
}

// checkSaveThread checks the thread id (ErrInvalidID) and that messages is a
// JSON array (ErrInvalidEntry).
func checkSaveThread(ctx context.Context, threadID string, messages json.RawMessage) error {
	if err := driver.ValidateID("thread id", threadID); err != nil {
		return err
	}
	if err := driver.ValidateTranscript(messages); err != nil {
		return err
	}
	return ctx.Err()
}

// checkSaveTranscript is checkSaveThread for a transcript that was
// validated as it was decoded: the thread id, and the zero Transcript,
// which holds no bytes, is the empty transcript (ErrInvalidEntry).
func checkSaveTranscript(ctx context.Context, threadID string, t driver.Transcript) error {
	if err := driver.ValidateID("thread id", threadID); err != nil {
		return err
	}
	if t.Bytes() == nil {
		return driver.ValidateTranscript(nil)
	}
	return ctx.Err()
}

// checkDeleteThread checks the ids and the writer's thread. The store then
// checks: writer live (in every batch).
func checkDeleteThread(ctx context.Context, threadID string, w driver.Writer) error {
	if err := driver.ValidateDeleteThread(threadID, w); err != nil {
		return err
	}
	if err := checkWriterThread(w, threadID); err != nil {
		return err
	}
	return ctx.Err()
}

// checkListPage checks ListPage's thread id (ErrInvalidID), limit and cursor
// (ErrInvalidEntry), and returns them resolved.
func checkListPage(ctx context.Context, threadID string, opt driver.ListOptions) (driver.Page, error) {
	if err := driver.ValidateID("thread id", threadID); err != nil {
		return driver.Page{}, err
	}
	limit, err := driver.PageLimit(opt.Limit)
	if err != nil {
		return driver.Page{}, err
	}
	p := driver.Page{Limit: limit, Reverse: opt.Reverse}
	if opt.After != "" {
		pos, err := driver.DecodeCursor(opt.After)
		if err != nil {
			return driver.Page{}, err
		}
		p.After = &pos
	}
	return p, ctx.Err()
}

// checkThreads checks Threads' limit and cursor (ErrInvalidEntry) and returns
// them resolved.
func checkThreads(ctx context.Context, after string, limit int) (driver.ThreadPage, error) {
	l, err := driver.PageLimit(limit)
	if err != nil {
		return driver.ThreadPage{}, err
	}
	p := driver.ThreadPage{Limit: l}
	if after != "" {
		if p.After, err = driver.DecodeThreadCursor(after); err != nil {
			return driver.ThreadPage{}, err
		}
	}
	return p, ctx.Err()
}

// checkImport checks Import's ids and content (driver.ValidateImport) and the
// writer's thread. The store then checks, in order: writer live, ids unused
// elsewhere or stored equal, head (with SetHead).
func checkImport(ctx context.Context, b driver.ImportBatch) error {
	if err := driver.ValidateImport(b); err != nil {
		return err
	}
	if err := checkWriterThread(b.Writer, b.ThreadID); err != nil {
		return err
	}
	return ctx.Err()
}

// checkInstanceKey checks an instance store's Get or Delete key.
func checkInstanceKey(ctx context.Context, key string) error {
	if err := driver.ValidateInstanceKey(key); err != nil {
		return err
	}
	return ctx.Err()
}

// checkInstanceUpsert checks an instance record for Upsert.
func checkInstanceUpsert(ctx context.Context, rec *driver.InstanceRecord) error {
	if err := driver.ValidateInstanceRecord(rec); err != nil {
		return err
	}
	return ctx.Err()
}
