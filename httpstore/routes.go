package httpstore

// One function per method of docs/http-api.md. Each decodes its fields
// (ids strictly, ErrInvalidID before any other error) and calls the
// namespace's portable store, which runs the pure checks once and then its
// driver's state checks. Writing the reply into c.out is all that is left.

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
)

func (h *handler) get(c *call) error {
	id, err := c.in.id.v, c.in.id.err
	if err != nil {
		return err
	}
	cp, err := c.ns.store.Get(c.ctx, id)
	if err != nil {
		return err
	}
	return c.out.checkpoint("checkpoint", cp)
}

func (h *handler) threadID(c *call) (string, error) {
	id, err := c.in.threadID.v, c.in.threadID.err
	if err != nil {
		return "", err
	}
	return id, nil
}

func (h *handler) list(c *call) error {
	id, err := h.threadID(c)
	if err != nil {
		return err
	}
	cps, err := c.ns.store.List(c.ctx, id)
	if err != nil {
		return err
	}
	return c.out.checkpoints("checkpoints", cps)
}

func (h *handler) listPage(c *call) error {
	p := c.ns.store
	id, idErr := c.in.threadID.v, c.in.threadID.err
	after, afterErr := c.in.after.v, c.in.after.err
	limit, limitErr := c.in.limit.int()
	reverse, revErr := c.in.reverse, c.in.reverseErr
	if err := firstIDError(idErr, limitErr, afterErr, revErr); err != nil {
		return err
	}
	opt := ckptstore.ListOptions{After: after, Limit: int(limit), Reverse: reverse}
	cps, next, err := p.ListPage(c.ctx, id, opt)
	if err != nil {
		return err
	}
	if err := c.out.checkpoints("checkpoints", cps); err != nil {
		return err
	}
	c.out.strOrNull("next", next)
	return nil
}

func (h *handler) getHead(c *call) error {
	id, err := h.threadID(c)
	if err != nil {
		return err
	}
	head, err := c.ns.store.GetHead(c.ctx, id)
	if err != nil {
		return err
	}
	c.out.strOrNull("headId", head)
	return nil
}

func (h *handler) append(c *call) error {
	d, cpErr := c.in.checkpoint, c.in.checkpointErr
	cp := d.Checkpoint()
	if cpErr == nil && cp == nil {
		cpErr = fmt.Errorf("%w: append needs a checkpoint", ckptstore.ErrInvalidID)
	}
	expected, expErr := c.in.expectedHeadID.v, c.in.expectedHeadID.err
	w, wErr := c.in.writerOf()
	if err := firstIDError(cpErr, expErr, wErr); err != nil {
		return err
	}
	if err := c.ns.store.AppendDecoded(c.ctx, d, expected, w); err != nil {
		return err
	}
	c.out.str("headId", cp.ID)
	return nil
}

func (h *handler) deleteHead(c *call) error {
	thread, tErr := c.in.threadID.v, c.in.threadID.err
	id, idErr := c.in.checkpointID.v, c.in.checkpointID.err
	w, wErr := c.in.writerOf()
	if err := firstIDError(tErr, idErr, wErr); err != nil {
		return err
	}
	return c.ns.store.DeleteHead(c.ctx, thread, id, w)
}

func (h *handler) acquireWriter(c *call) error {
	id, err := c.in.threadID.v, c.in.threadID.err
	if err != nil {
		return err
	}
	l, err := c.ns.store.AcquireWriter(c.ctx, id)
	if err != nil {
		return err
	}
	b, err := l.MarshalJSON()
	if err != nil {
		return err
	}
	c.out.b = append(c.out.b[:0], b...)
	c.done = true
	return nil
}

func (h *handler) renew(c *call) error {
	k := c.ns.store
	w, err := c.in.writerOf()
	if err != nil {
		return err
	}
	t, err := k.Renew(c.ctx, w)
	if err != nil {
		return err
	}
	c.out.name("expiresAt")
	c.out.b = driver.AppendMillis(c.out.b, t.UnixNano())
	return nil
}

func (h *handler) release(c *call) error {
	k := c.ns.store
	w, err := c.in.writerOf()
	if errors.Is(err, ckptstore.ErrInvalidID) {
		return nil // a writer of no valid thread matches no lease: nothing to release
	}
	if err != nil {
		return err
	}
	return k.Release(c.ctx, w)
}

func (h *handler) listBlobReferences(c *call) error {
	if err := c.ctx.Err(); err != nil {
		return err
	}
	// Encoded as the store yields them, never collected first: a reply
	// that fails half way is dropped (serve starts the error reply over).
	c.out.name("references")
	c.out.b = append(c.out.b, '[')
	i := 0
	for r, err := range c.ns.store.BlobReferencesSeq(c.ctx) {
		if err != nil {
			return err
		}
		if i > 0 {
			c.out.b = append(c.out.b, ',')
		}
		i++
		c.out.b = append(c.out.b, `{"key":`...)
		c.out.b = driver.AppendJSONString(c.out.b, r.Key)
		c.out.b = append(c.out.b, `,"references":`...)
		c.out.b = append(strconv.AppendInt(c.out.b, r.References, 10), '}')
	}
	c.out.b = append(c.out.b, ']')
	return nil
}

func (h *handler) deleteCheckpoints(c *call) error {
	p := c.ns.store
	thread, tErr := c.in.threadID.v, c.in.threadID.err
	keep, kErr := c.in.keep.int()
	w, wErr := c.in.writerOf()
	if err := firstIDError(tErr, wErr, kErr); err != nil {
		return err
	}
	ids, err := p.DeleteCheckpoints(c.ctx, thread, int(keep), w)
	if err != nil {
		return err
	}
	c.out.strings("deleted", ids)
	return nil
}

func (h *handler) fork(c *call) error {
	f := c.ns.store
	var in ckptstore.ForkInput
	var errs [6]error
	in.SourceThreadID, errs[0] = c.in.sourceThreadID.v, c.in.sourceThreadID.err
	in.SourceCheckpointID, errs[1] = c.in.sourceCheckpointID.v, c.in.sourceCheckpointID.err
	in.DestinationThreadID, errs[2] = c.in.destinationThreadID.v, c.in.destinationThreadID.err
	in.DestinationCheckpointID, errs[3] = c.in.destinationCheckpointID.v, c.in.destinationCheckpointID.err
	in.Writer, errs[4] = c.in.writerOf()
	in.CreatedAt, errs[5] = c.in.createdAt.f, c.in.createdAt.err
	if errs[5] == nil && !c.in.createdAt.ok {
		errs[5] = fmt.Errorf("%w: createdAt is missing", ckptstore.ErrInvalidEntry)
	}
	if err := firstIDError(errs[:]...); err != nil {
		return err
	}
	cp, err := f.ForkFromCheckpoint(c.ctx, in)
	if err != nil {
		return err
	}
	return c.out.checkpoint("checkpoint", cp)
}

func (h *handler) deleteThread(c *call) error {
	d := c.ns.store
	thread, tErr := c.in.threadID.v, c.in.threadID.err
	w, wErr := c.in.writerOf()
	if err := firstIDError(tErr, wErr); err != nil {
		return err
	}
	n, err := d.DeleteThread(c.ctx, thread, w)
	if err != nil {
		return err
	}
	c.out.int("deleted", int64(n))
	return nil
}

func (h *handler) threads(c *call) error {
	l := c.ns.store
	after, aErr := c.in.after.v, c.in.after.err
	limit, lErr := c.in.limit.int()
	if err := firstIDError(lErr, aErr); err != nil {
		return err
	}
	ids, next, err := l.Threads(c.ctx, after, int(limit))
	if err != nil {
		return err
	}
	c.out.strings("threads", ids)
	c.out.strOrNull("next", next)
	return nil
}

// transcriptThread is the start of loadThread and saveThread: the store
// and the thread id.
func (h *handler) transcriptThread(c *call) (*ckptstore.Store, string, error) {
	return c.ns.store, c.in.threadID.v, c.in.threadID.err
}

func (h *handler) loadThread(c *call) error {
	t, id, err := h.transcriptThread(c)
	if err != nil {
		return err
	}
	msgs, err := t.LoadThread(c.ctx, id)
	if err != nil {
		return err
	}
	if len(msgs) == 0 {
		msgs = driver.EmptyTranscript()
	}
	c.out.raw("messages", msgs)
	return nil
}

func (h *handler) saveThread(c *call) error {
	t, id, err := h.transcriptThread(c)
	if err != nil {
		return err
	}
	if c.in.messagesErr != nil {
		// The contract checks the id before the transcript.
		return firstIDError(driver.ValidateID("thread id", id), c.in.messagesErr)
	}
	// Absent or null is the zero Transcript, which SaveTranscript refuses
	// as the empty transcript it is.
	return t.SaveTranscript(c.ctx, id, c.in.messages)
}

func (h *handler) importBatch(c *call) error {
	im := c.ns.store
	var b ckptstore.ImportBatch
	var errs [5]error
	b.ThreadID, errs[0] = c.in.threadID.v, c.in.threadID.err
	b.Writer, errs[1] = c.in.writerOf()
	b.Checkpoints, errs[2] = c.in.checkpoints, c.in.checkpointsErr
	b.Head, errs[3] = c.in.head.v, c.in.head.err
	b.SetHead, errs[4] = c.in.setHead, c.in.setHeadErr
	if err := firstIDError(errs[:]...); err != nil {
		return err
	}
	if c.in.transcript != nil {
		b.Transcript = json.RawMessage(c.in.transcript)
	}
	n, err := im.Import(c.ctx, b)
	if err != nil {
		return err
	}
	c.out.int("written", int64(n))
	return nil
}

func (h *handler) instanceKey(c *call) (string, error) {
	key, err := c.in.key.v, c.in.key.err
	if err != nil {
		return "", err
	}
	return key, nil
}

func (h *handler) instanceGet(c *call) error {
	key, err := h.instanceKey(c)
	if err != nil {
		return err
	}
	rec, err := c.ns.inst.Get(c.ctx, key)
	if err != nil {
		return err
	}
	if rec == nil {
		c.out.raw("record", []byte("null"))
		return nil
	}
	b, err := rec.MarshalJSON()
	if err != nil {
		return err
	}
	c.out.raw("record", b)
	return nil
}

func (h *handler) instanceUpsert(c *call) error {
	rec, err := c.in.record, c.in.recordErr
	if err == nil && rec == nil {
		return fmt.Errorf("%w: instanceUpsert needs a record", ckptstore.ErrInvalidID)
	}
	if err != nil {
		return err
	}
	return c.ns.inst.Upsert(c.ctx, rec)
}

func (h *handler) instanceDelete(c *call) error {
	key, err := h.instanceKey(c)
	if err != nil {
		return err
	}
	return c.ns.inst.Delete(c.ctx, key)
}
