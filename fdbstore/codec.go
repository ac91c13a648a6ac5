package fdbstore

// The value encoding of a checkpoint, built from the parts of
// internal/cpcodec (which documents them) so that it is the same encoding
// as redisstore's. It is exact: every field, the bits of each float64 (so
// -0 stays -0), the bytes of the conversation, and whether Files,
// Artifacts and Conversation were nil or empty, come back as stored, so a
// read equals what memstore would return for the same Append.
//
//	value = cpcodec.Version
//	        str(id) str(threadId) str(parentCheckpointId)
//	        header                                  cpcodec.AppendHeader
//	        body                                    cpcodec.AppendBody
//	        str(conversation)                       only when the body says it is present
//
// The conversation carries its length although it comes last, so a value
// that lost its last chunk fails to decode instead of returning a shorter
// conversation.

import (
	"fmt"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/internal/cpcodec"
)

// ErrCorrupt is wrapped by every error that reports stored bytes this
// package did not write: a value that does not decode, a key outside the
// layout, an index without its data. It is driver.ErrCorrupt itself, so
// errors.Is(err, driver.ErrCorrupt) holds for the corruption errors of
// every store; each Problem of Check wraps it too.
var ErrCorrupt = driver.ErrCorrupt

// encodeCheckpoint returns the stored form of cp, which must have passed
// ckptstore validation (anything else fails with ErrInvalidEntry).
func encodeCheckpoint(cp *ckptstore.Checkpoint) ([]byte, error) {
	n := 1 + cpcodec.StringLen(cp.ID) + cpcodec.StringLen(cp.ThreadID) + cpcodec.StringLen(cp.ParentCheckpointID) +
		cpcodec.HeaderLen(cp) + cpcodec.BodyLen(cp)
	if cp.Conversation != nil {
		n += cpcodec.StringLen(cp.Conversation)
	}
	b := make([]byte, 0, n)
	b = append(b, cpcodec.Version)
	b = cpcodec.AppendString(b, cp.ID)
	b = cpcodec.AppendString(b, cp.ThreadID)
	b = cpcodec.AppendString(b, cp.ParentCheckpointID)
	b = cpcodec.AppendHeader(b, cp)
	b, err := cpcodec.AppendBody(b, cp)
	if err != nil {
		return nil, fmt.Errorf("checkpoint %q: %w", cp.ID, err)
	}
	if cp.Conversation != nil {
		b = cpcodec.AppendString(b, cp.Conversation)
	}
	return b, nil
}

// decodeCheckpoint parses the stored form of a checkpoint into a new value
// that shares no memory with b.
func decodeCheckpoint(b []byte) (*ckptstore.Checkpoint, error) {
	d := cpcodec.NewDecoder(b, ErrCorrupt)
	d.Version("checkpoint value")
	cp := &ckptstore.Checkpoint{}
	cp.ID = d.String("id")
	cp.ThreadID = d.String("threadId")
	cp.ParentCheckpointID = d.String("parentCheckpointId")
	d.Header(cp)
	if d.Body(cp) {
		cp.Conversation = d.Bytes("conversation")
	}
	if err := d.End("checkpoint value"); err != nil {
		return nil, err
	}
	return cp, nil
}
