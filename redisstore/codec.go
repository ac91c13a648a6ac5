package redisstore

// The binary form of a stored checkpoint, built from the parts of
// internal/cpcodec (which documents them and proves their round trips), so
// that it is the same encoding as fdbstore's. A checkpoint is kept as three
// strings: the header (the fields a fork replaces), the body (files and
// artifacts) and the conversation, as given. A fork copies body and
// conversation unchanged inside its script, so Lua never parses any of
// them, and the conversation, the bulk of a checkpoint, goes to the server
// without being copied into another buffer.
//
//	header = cpcodec.Version cpcodec.AppendHeader   createdAt, reason, label, sourceRunId
//	body   = cpcodec.Version cpcodec.AppendBody     files, whether the conversation is nil, artifacts
//
// Floats are kept as their bits, so createdAt round-trips exactly (-0,
// subnormals and the largest finite values included), and nil and empty
// slices stay apart, as memstore keeps them. Decoding checks every length
// and fails with ErrCorrupt instead of panicking.

import (
	"fmt"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/internal/cpcodec"
)

// ErrCorrupt reports stored data this package cannot decode: keys under the
// store's prefix written by something else, or by a newer version. It is
// driver.ErrCorrupt itself (kept under this name, which callers already
// use), so errors.Is(err, driver.ErrCorrupt) holds for the corruption
// errors of every store; each Problem of Check wraps it too.
var ErrCorrupt = driver.ErrCorrupt

// encodeHeader returns the header of cp.
func encodeHeader(cp *ckptstore.Checkpoint) []byte {
	b := make([]byte, 0, 1+cpcodec.HeaderLen(cp))
	return cpcodec.AppendHeader(append(b, cpcodec.Version), cp)
}

// encodeBody returns the body of cp, which must have passed ckptstore
// validation (anything else fails with ErrInvalidEntry).
func encodeBody(cp *ckptstore.Checkpoint) ([]byte, error) {
	b := make([]byte, 0, 1+cpcodec.BodyLen(cp))
	return cpcodec.AppendBody(append(b, cpcodec.Version), cp)
}

// decodeHeader fills cp's header fields from s. The copy of s into a
// []byte is small and bounded: four fields.
func decodeHeader(cp *ckptstore.Checkpoint, s string) error {
	d := cpcodec.NewDecoder([]byte(s), ErrCorrupt)
	d.Version("header")
	d.Header(cp)
	return d.End("header")
}

// decodeBody fills cp's files, conversation and artifacts from the body s
// and the stored conversation conv. conv is copied once, into
// cp.Conversation; the body is copied to decode it, which costs about as
// much as the strings it is decoded into.
func decodeBody(cp *ckptstore.Checkpoint, s, conv string) error {
	d := cpcodec.NewDecoder([]byte(s), ErrCorrupt)
	d.Version("body")
	hasConv := d.Body(cp)
	if err := d.End("body"); err != nil {
		return err
	}
	switch {
	case hasConv:
		cp.Conversation = append(make([]byte, 0, len(conv)), conv...)
	case conv != "":
		return fmt.Errorf("%w: a nil conversation with %d bytes", ErrCorrupt, len(conv))
	}
	return nil
}
