// Package precheck is the one place where the pure checks of every store
// method live: ids, entries, limits, cursors, the writer's thread against
// the write's thread, and the context. A store (memstore, fdbstore,
// redisstore, httpstore's client and handler) calls the function of a
// method first and keeps only the checks that need its state — writer live,
// duplicate id, head, parent, destination empty — which it runs in the
// order docs/contract.md gives, after these.
//
// Each function returns the first failing check, in contract order, or
// ctx.Err() when the context is done, so a cancelled call changes nothing.
// The checks of a function are exactly the prefix of its method's check
// order that reads only arguments; where a state check comes between two
// pure ones (ForkFromCheckpoint's source checks come before its writer
// check), the later pure check is a function of its own (WriterThread) that
// the store calls at its place in the order.
package precheck

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/ckptstore/ckptstore/driver"
)

// Read checks Get's checkpoint id, or List's and Head's thread id: what
// names the id ("checkpoint id", "thread id") in the error.
func Read(ctx context.Context, what, id string) error {
	if err := driver.ValidateID(what, id); err != nil {
		return err
	}
	return ctx.Err()
}

// WriterThread fails with ErrWriterLost when w is not a writer of threadID:
// the part of "the writer is current" that needs no state.
func WriterThread(w driver.Writer, threadID string) error {
	if w.ThreadID != threadID {
		return fmt.Errorf("%w: writer of thread %q cannot write thread %q", driver.ErrWriterLost, w.ThreadID, threadID)
	}
	return nil
}

// Append checks Append's steps 1 and 2 and the writer's thread (the pure
// part of step 3). The store then checks, in order: writer live, id unused,
// head, parent.
func Append(ctx context.Context, cp *driver.Checkpoint, expectedHeadID string, w driver.Writer) error {
	if err := driver.ValidateAppend(cp, expectedHeadID, w); err != nil {
		return err
	}
	if err := WriterThread(w, cp.ThreadID); err != nil {
		return err
	}
	return ctx.Err()
}

// DeleteHead checks DeleteHead's ids and the writer's thread. The store
// then checks: writer live, checkpoint is the head.
func DeleteHead(ctx context.Context, threadID, checkpointID string, w driver.Writer) error {
	if err := driver.ValidateDeleteHead(threadID, checkpointID, w); err != nil {
		return err
	}
	if err := WriterThread(w, threadID); err != nil {
		return err
	}
	return ctx.Err()
}

// Prune checks DeleteCheckpoints' ids, keep and the writer's thread. The
// store then checks: writer live.
func Prune(ctx context.Context, threadID string, keep int, w driver.Writer) error {
	if err := driver.ValidatePrune(threadID, keep, w); err != nil {
		return err
	}
	if err := WriterThread(w, threadID); err != nil {
		return err
	}
	return ctx.Err()
}

// Fork checks ForkFromCheckpoint's ids, createdAt and distinct threads. The
// store then checks, in order: source exists, source in the source thread,
// WriterThread(in.Writer, in.DestinationThreadID), writer live, destination
// empty (no head, checkpoint or transcript; destination id unused).
func Fork(ctx context.Context, in driver.ForkInput) error {
	if err := driver.ValidateFork(in); err != nil {
		return err
	}
	return ctx.Err()
}

// AcquireWriter checks the thread id. The store then checks: no live lease.
func AcquireWriter(ctx context.Context, threadID string) error {
	return Read(ctx, "thread id", threadID)
}

// RenewWriter checks the writer's thread id. The store then checks: writer
// live (ErrWriterLost).
func RenewWriter(ctx context.Context, w driver.Writer) error {
	return Read(ctx, "writer thread id", w.ThreadID)
}

// ReleaseWriter reports whether a release of w can match any lease: one
// with an invalid thread id cannot, and Release does nothing then. It never
// fails on the input, as Release never fails; only the context can stop it.
func ReleaseWriter(ctx context.Context, w driver.Writer) (ok bool, err error) {
	if driver.ValidateID("writer thread id", w.ThreadID) != nil {
		return false, nil
	}
	return true, ctx.Err()
}

// LoadThread checks the thread id.
func LoadThread(ctx context.Context, threadID string) error {
	return Read(ctx, "thread id", threadID)
}

// SaveThread checks the thread id (ErrInvalidID) and that messages is a
// JSON array (ErrInvalidEntry).
func SaveThread(ctx context.Context, threadID string, messages json.RawMessage) error {
	if err := driver.ValidateID("thread id", threadID); err != nil {
		return err
	}
	if err := driver.ValidateTranscript(messages); err != nil {
		return err
	}
	return ctx.Err()
}

// DeleteThread checks the ids and the writer's thread. The store then
// checks: writer live (in every batch).
func DeleteThread(ctx context.Context, threadID string, w driver.Writer) error {
	if err := driver.ValidateDeleteThread(threadID, w); err != nil {
		return err
	}
	if err := WriterThread(w, threadID); err != nil {
		return err
	}
	return ctx.Err()
}

// ListPage checks ListPage's thread id (ErrInvalidID), limit and cursor
// (ErrInvalidEntry), and returns them resolved.
func ListPage(ctx context.Context, threadID string, opt driver.ListOptions) (driver.Page, error) {
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

// Threads checks Threads' limit and cursor (ErrInvalidEntry) and returns
// them resolved.
func Threads(ctx context.Context, after string, limit int) (driver.ThreadPage, error) {
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

// Import checks Import's ids and content (driver.ValidateImport) and the
// writer's thread. The store then checks, in order: writer live, ids unused
// elsewhere or stored equal, head (with SetHead).
func Import(ctx context.Context, b driver.ImportBatch) error {
	if err := driver.ValidateImport(b); err != nil {
		return err
	}
	if err := WriterThread(b.Writer, b.ThreadID); err != nil {
		return err
	}
	return ctx.Err()
}

// InstanceKey checks an instance store's Get or Delete key.
func InstanceKey(ctx context.Context, key string) error {
	if err := driver.ValidateInstanceKey(key); err != nil {
		return err
	}
	return ctx.Err()
}

// InstanceUpsert checks an instance record for Upsert.
func InstanceUpsert(ctx context.Context, rec *driver.InstanceRecord) error {
	if err := driver.ValidateInstanceRecord(rec); err != nil {
		return err
	}
	return ctx.Err()
}
