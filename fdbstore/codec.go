package fdbstore

// The value encoding of a checkpoint. It is exact: every field, the bits of
// each float64 (so -0 stays -0), the bytes of the conversation, and whether
// Files, Artifacts and Conversation were nil or empty, come back as stored,
// so a read equals what memstore would return for the same Append.
//
//	version  byte (1)
//	id, threadId, parentCheckpointId       string
//	createdAt                              float64 (IEEE bits, big endian)
//	reason, label, sourceRunId             string
//	conversation                           nilable bytes
//	files      nilable count, then per entry:    path, kind, blobKey string; size varint
//	artifacts  nilable count, then per artifact: artifactId, name, mimeType string;
//	                                             size varint; blobKey string; createdAt float64
//
// string = uvarint length + bytes; nilable = uvarint 0 for nil, else
// length+1 followed by the elements.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/ckptstore/ckptstore"
)

const codecVersion = 1

// errCorrupt is wrapped by every decoding error: stored bytes that this
// package did not write.
var errCorrupt = errors.New("fdbstore: corrupt stored value")

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendFloat(b []byte, f float64) []byte {
	return binary.BigEndian.AppendUint64(b, math.Float64bits(f))
}

// appendNilableLen writes 0 for a nil slice and n+1 for a slice of length n.
func appendNilableLen(b []byte, isNil bool, n int) []byte {
	if isNil {
		return binary.AppendUvarint(b, 0)
	}
	return binary.AppendUvarint(b, uint64(n)+1)
}

// encodedSizeHint is a capacity that usually fits the encoding of cp.
func encodedSizeHint(cp *ckptstore.Checkpoint) int {
	n := 64 + len(cp.ID) + len(cp.ThreadID) + len(cp.ParentCheckpointID) + len(cp.Label) +
		len(cp.SourceRunID) + len(cp.Reason) + len(cp.Conversation)
	for _, e := range cp.Files {
		n += 16 + len(e.Path) + len(e.Kind) + len(e.BlobKey)
	}
	for _, a := range cp.Artifacts {
		n += 32 + len(a.ArtifactID) + len(a.Name) + len(a.MimeType) + len(a.BlobKey)
	}
	return n
}

// encodeCheckpoint returns the stored form of cp.
func encodeCheckpoint(cp *ckptstore.Checkpoint) []byte {
	b := make([]byte, 0, encodedSizeHint(cp))
	b = append(b, codecVersion)
	b = appendString(b, cp.ID)
	b = appendString(b, cp.ThreadID)
	b = appendString(b, cp.ParentCheckpointID)
	b = appendFloat(b, cp.CreatedAt)
	b = appendString(b, string(cp.Reason))
	b = appendString(b, cp.Label)
	b = appendString(b, cp.SourceRunID)
	b = appendNilableLen(b, cp.Conversation == nil, len(cp.Conversation))
	b = append(b, cp.Conversation...)
	b = appendNilableLen(b, cp.Files == nil, len(cp.Files))
	for _, e := range cp.Files {
		b = appendString(b, e.Path)
		b = appendString(b, string(e.Kind))
		b = appendString(b, e.BlobKey)
		b = binary.AppendVarint(b, e.Size)
	}
	b = appendNilableLen(b, cp.Artifacts == nil, len(cp.Artifacts))
	for _, a := range cp.Artifacts {
		b = appendString(b, a.ArtifactID)
		b = appendString(b, a.Name)
		b = appendString(b, a.MimeType)
		b = binary.AppendVarint(b, a.Size)
		b = appendString(b, a.BlobKey)
		b = appendFloat(b, a.CreatedAt)
	}
	return b
}

// decoder reads the encoding; the first error sticks and later reads
// return zero values.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: checkpoint encoding: bad %s", errCorrupt, what)
	}
}

func (d *decoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint(what string) int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail(what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes(what string, n uint64) []byte {
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail(what)
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) string(what string) string {
	return string(d.bytes(what, d.uvarint(what)))
}

func (d *decoder) float(what string) float64 {
	b := d.bytes(what, 8)
	if b == nil {
		return 0
	}
	return math.Float64frombits(binary.BigEndian.Uint64(b))
}

// nilableLen reads a count written by appendNilableLen; it fails when the
// count cannot fit in the remaining bytes (each element takes ≥ minSize).
func (d *decoder) nilableLen(what string, minSize int) (n int, isNil bool) {
	v := d.uvarint(what)
	if d.err != nil || v == 0 {
		return 0, true
	}
	v--
	if v > uint64(len(d.b)/minSize) {
		d.fail(what)
		return 0, true
	}
	return int(v), false
}

// decodeCheckpoint parses the stored form of a checkpoint into a new value
// that shares no memory with b.
func decodeCheckpoint(b []byte) (*ckptstore.Checkpoint, error) {
	if len(b) == 0 || b[0] != codecVersion {
		return nil, fmt.Errorf("%w: checkpoint encoding: unknown version", errCorrupt)
	}
	d := &decoder{b: b[1:]}
	cp := &ckptstore.Checkpoint{}
	cp.ID = d.string("id")
	cp.ThreadID = d.string("threadId")
	cp.ParentCheckpointID = d.string("parentCheckpointId")
	cp.CreatedAt = d.float("createdAt")
	cp.Reason = ckptstore.Reason(d.string("reason"))
	cp.Label = d.string("label")
	cp.SourceRunID = d.string("sourceRunId")
	if n, isNil := d.nilableLen("conversation", 1); !isNil {
		cp.Conversation = append(make([]byte, 0, n), d.bytes("conversation", uint64(n))...)
	}
	if n, isNil := d.nilableLen("files", 4); !isNil {
		cp.Files = make([]ckptstore.Entry, n)
		for i := range cp.Files {
			e := &cp.Files[i]
			e.Path = d.string("file path")
			e.Kind = ckptstore.EntryKind(d.string("file kind"))
			e.BlobKey = d.string("file blobKey")
			e.Size = d.varint("file size")
		}
	}
	if n, isNil := d.nilableLen("artifacts", 13); !isNil {
		cp.Artifacts = make([]ckptstore.Artifact, n)
		for i := range cp.Artifacts {
			a := &cp.Artifacts[i]
			a.ArtifactID = d.string("artifactId")
			a.Name = d.string("artifact name")
			a.MimeType = d.string("artifact mimeType")
			a.Size = d.varint("artifact size")
			a.BlobKey = d.string("artifact blobKey")
			a.CreatedAt = d.float("artifact createdAt")
		}
	}
	if d.err == nil && len(d.b) != 0 {
		d.fail("trailing bytes")
	}
	if d.err != nil {
		return nil, d.err
	}
	return cp, nil
}
