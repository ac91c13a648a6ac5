// Package cpcodec is the binary encoding of checkpoints that fdbstore and
// redisstore share. Each store composes its stored values from the parts
// here (fdbstore: one value; redisstore: three strings), so both read and
// write the same bytes for the same fields.
//
// # Parts
//
//	header   = float(createdAt) str(reason) str(label) str(sourceRunId)
//	body     = list(files) conv(1 byte: 0 nil, 1 present) list(artifacts)
//	file     = str(path) 'd'                                   a directory
//	         | str(path) 'f' str(blobKey) size                 a file
//	artifact = str(artifactId) str(name) str(mimeType) size str(blobKey) float(createdAt)
//	str      = uvarint(len) bytes
//	float    = 8 bytes, the IEEE-754 bits, big endian
//	size     = uvarint, at most driver.MaxSize
//	list     = uvarint(0) for a nil slice, else uvarint(n+1) and n items
//
// A stored value starts with Version, written by the store in front of its
// parts, so that a later layout can be told apart.
//
// # Invariants
//
//   - Exact round trips: every string, the bits of every float64 (-0,
//     NaN payloads and subnormals included) and whether Files, Artifacts
//     and Conversation were nil or empty come back as encoded. The
//     conversation's bytes are the store's to keep; the body holds only
//     whether it is nil.
//   - The encoders accept exactly the entries ckptstore validation does as
//     far as the layout depends on them (kind file or dir, a directory
//     without blobKey or size, sizes in 0..MaxSize); anything else is an
//     error wrapping ckptstore.ErrInvalidEntry, never a lossy encoding.
//   - The Decoder never panics on any input, allocates at most in
//     proportion to the bytes it is given (every length and count is
//     checked against the bytes left before anything is allocated), and
//     returns values that share no memory with its input.
package cpcodec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
)

// Version is the first byte of every stored value built from these parts.
// Version 1 was the two stores' separate layouts, before they shared this
// package.
const Version byte = 2

// ErrCorrupt is what decoding errors wrap when the caller names no
// sentinel of its own (see NewDecoder).
var ErrCorrupt = errors.New("cpcodec: corrupt checkpoint encoding")

// The fewest bytes one list item can take, which bounds the count a list
// may claim by the bytes left.
const (
	minFileLen     = 1 + 1       // empty path, 'd'
	minArtifactLen = 4*1 + 1 + 8 // four empty strings, size 0, createdAt
)

// The bytes that tell a file from a directory, and the body's
// conversation flag.
const (
	kindDir, kindFile               = byte('d'), byte('f')
	conversationNil, conversationOK = byte(0), byte(1)
)

// uvarintLen is the length of binary.AppendUvarint(nil, x).
func uvarintLen(x uint64) int { return (bits.Len64(x|1) + 6) / 7 }

// StringLen is the length of AppendString(nil, s).
func StringLen[T ~string | ~[]byte](s T) int { return uvarintLen(uint64(len(s))) + len(s) }

// AppendString appends s with its length in front.
func AppendString[T ~string | ~[]byte](b []byte, s T) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// AppendFloat appends the IEEE-754 bits of f, so that -0, NaN payloads and
// subnormals come back unchanged.
func AppendFloat(b []byte, f float64) []byte {
	return binary.BigEndian.AppendUint64(b, math.Float64bits(f))
}

// AppendCount appends the length of a slice that may be nil: 0 for nil,
// n+1 for n items.
func AppendCount(b []byte, n int, isNil bool) []byte {
	if isNil {
		return binary.AppendUvarint(b, 0)
	}
	return binary.AppendUvarint(b, uint64(n)+1)
}

// AppendSize appends a size; it fails outside 0..driver.MaxSize, which
// is all the decoder accepts.
func AppendSize(b []byte, n int64) ([]byte, error) {
	if n < 0 || n > driver.MaxSize {
		return b, fmt.Errorf("%w: cpcodec: size %d outside 0..2^53-1", ckptstore.ErrInvalidEntry, n)
	}
	return binary.AppendUvarint(b, uint64(n)), nil
}

// countLen is the length of AppendCount(nil, n, isNil).
func countLen(n int, isNil bool) int {
	if isNil {
		return 1
	}
	return uvarintLen(uint64(n) + 1)
}

// HeaderLen is the length of AppendHeader(nil, cp).
func HeaderLen(cp *ckptstore.Checkpoint) int {
	return 8 + StringLen(cp.Reason) + StringLen(cp.Label) + StringLen(cp.SourceRunID)
}

// AppendHeader appends the fields a fork replaces: createdAt, reason,
// label and sourceRunId.
func AppendHeader(b []byte, cp *ckptstore.Checkpoint) []byte {
	b = AppendFloat(b, cp.CreatedAt)
	b = AppendString(b, cp.Reason)
	b = AppendString(b, cp.Label)
	return AppendString(b, cp.SourceRunID)
}

// BodyLen is the length of AppendBody(nil, cp) when that succeeds.
func BodyLen(cp *ckptstore.Checkpoint) int {
	n := countLen(len(cp.Files), cp.Files == nil) + 1 + countLen(len(cp.Artifacts), cp.Artifacts == nil)
	for i := range cp.Files {
		e := &cp.Files[i]
		n += StringLen(e.Path) + 1
		if e.Kind == ckptstore.KindFile {
			n += StringLen(e.BlobKey) + uvarintLen(uint64(e.Size))
		}
	}
	for i := range cp.Artifacts {
		a := &cp.Artifacts[i]
		n += StringLen(a.ArtifactID) + StringLen(a.Name) + StringLen(a.MimeType) +
			uvarintLen(uint64(a.Size)) + StringLen(a.BlobKey) + 8
	}
	return n
}

// AppendBody appends cp's files, whether its conversation is nil, and its
// artifacts. It fails, wrapping ckptstore.ErrInvalidEntry, on an entry the
// layout cannot hold exactly (see the package invariants); b is then
// returned as it was.
func AppendBody(b []byte, cp *ckptstore.Checkpoint) ([]byte, error) {
	start := len(b)
	var err error
	b = AppendCount(b, len(cp.Files), cp.Files == nil)
	for i := range cp.Files {
		e := &cp.Files[i]
		b = AppendString(b, e.Path)
		switch e.Kind {
		case ckptstore.KindDir:
			if e.BlobKey != "" || e.Size != 0 {
				return b[:start], fmt.Errorf("%w: cpcodec: directory %q has a blobKey or size", ckptstore.ErrInvalidEntry, e.Path)
			}
			b = append(b, kindDir)
		case ckptstore.KindFile:
			b = AppendString(append(b, kindFile), e.BlobKey)
			if b, err = AppendSize(b, e.Size); err != nil {
				return b[:start], fmt.Errorf("file %q: %w", e.Path, err)
			}
		default:
			return b[:start], fmt.Errorf("%w: cpcodec: entry %q has kind %q", ckptstore.ErrInvalidEntry, e.Path, e.Kind)
		}
	}
	if cp.Conversation == nil {
		b = append(b, conversationNil)
	} else {
		b = append(b, conversationOK)
	}
	b = AppendCount(b, len(cp.Artifacts), cp.Artifacts == nil)
	for i := range cp.Artifacts {
		a := &cp.Artifacts[i]
		b = AppendString(b, a.ArtifactID)
		b = AppendString(b, a.Name)
		b = AppendString(b, a.MimeType)
		if b, err = AppendSize(b, a.Size); err != nil {
			return b[:start], fmt.Errorf("artifact %q: %w", a.ArtifactID, err)
		}
		b = AppendString(b, a.BlobKey)
		b = AppendFloat(b, a.CreatedAt)
	}
	return b, nil
}

// Decoder reads the parts from a byte slice. The first error sticks: every
// later read returns a zero value, so a caller decodes a whole value and
// checks Err (or End) once.
type Decoder struct {
	b       []byte
	err     error
	corrupt error
}

// NewDecoder returns a decoder of b whose errors wrap corrupt (ErrCorrupt
// when nil), so each store keeps its own sentinel for errors.Is.
func NewDecoder(b []byte, corrupt error) Decoder {
	if corrupt == nil {
		corrupt = ErrCorrupt
	}
	return Decoder{b: b, corrupt: corrupt}
}

// Err is the first error, or nil.
func (d *Decoder) Err() error { return d.err }

func (d *Decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: truncated or invalid %s", d.corrupt, what)
	}
	d.b = nil
}

// End fails unless every byte was read, and returns the first error.
func (d *Decoder) End(what string) error {
	if d.err == nil && len(d.b) != 0 {
		d.fail(what + " (trailing bytes)")
	}
	return d.err
}

// Version reads the version byte and fails unless it is Version.
func (d *Decoder) Version(what string) {
	if v := d.Byte(what); d.err == nil && v != Version {
		d.err = fmt.Errorf("%w: %s has version %d, this package reads %d", d.corrupt, what, v, Version)
		d.b = nil
	}
}

// Byte reads one byte.
func (d *Decoder) Byte(what string) byte {
	if len(d.b) == 0 {
		d.fail(what)
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

func (d *Decoder) uvarint(what string) uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(what)
		return 0
	}
	d.b = d.b[n:]
	return v
}

// raw returns the next n bytes, which alias the input.
func (d *Decoder) raw(what string, n uint64) []byte {
	if n > uint64(len(d.b)) {
		d.fail(what)
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

// String reads what AppendString wrote, as a new string.
func (d *Decoder) String(what string) string {
	return string(d.raw(what, d.uvarint(what)))
}

// Bytes reads what AppendString wrote, as a new slice that is never nil
// unless decoding failed.
func (d *Decoder) Bytes(what string) []byte {
	r := d.raw(what, d.uvarint(what))
	if d.err != nil {
		return nil
	}
	return append(make([]byte, 0, len(r)), r...)
}

// Float reads what AppendFloat wrote.
func (d *Decoder) Float(what string) float64 {
	r := d.raw(what, 8)
	if len(r) != 8 {
		return 0
	}
	return math.Float64frombits(binary.BigEndian.Uint64(r))
}

// Size reads what AppendSize wrote; a size above driver.MaxSize fails.
func (d *Decoder) Size(what string) int64 {
	v := d.uvarint(what)
	if v > driver.MaxSize {
		d.fail(what)
		return 0
	}
	return int64(v)
}

// Count reads what AppendCount wrote. It fails when the count cannot fit
// in the bytes left, each item taking at least minLen (≥ 1) bytes, so a
// corrupt count cannot make the caller allocate more than the input holds.
func (d *Decoder) Count(what string, minLen int) (n int, isNil bool) {
	v := d.uvarint(what)
	if d.err != nil || v == 0 {
		return 0, true
	}
	v--
	if v > uint64(len(d.b)/max(minLen, 1)) {
		d.fail(what)
		return 0, true
	}
	return int(v), false
}

// Header reads what AppendHeader wrote into cp.
func (d *Decoder) Header(cp *ckptstore.Checkpoint) {
	cp.CreatedAt = d.Float("createdAt")
	cp.Reason = ckptstore.Reason(d.String("reason"))
	cp.Label = d.String("label")
	cp.SourceRunID = d.String("sourceRunId")
}

// Body reads what AppendBody wrote into cp's Files and Artifacts, and
// reports whether cp's conversation was present (non-nil); the caller,
// which stores the conversation's bytes, sets cp.Conversation.
func (d *Decoder) Body(cp *ckptstore.Checkpoint) (hasConversation bool) {
	if n, isNil := d.Count("files", minFileLen); !isNil {
		cp.Files = make([]ckptstore.Entry, n)
		for i := range cp.Files {
			e := &cp.Files[i]
			e.Path = d.String("file path")
			switch d.Byte("file kind") {
			case kindDir:
				e.Kind = ckptstore.KindDir
			case kindFile:
				e.Kind = ckptstore.KindFile
				e.BlobKey = d.String("file blobKey")
				e.Size = d.Size("file size")
			default:
				d.fail("file kind")
			}
		}
	}
	switch d.Byte("conversation flag") {
	case conversationNil:
	case conversationOK:
		hasConversation = true
	default:
		d.fail("conversation flag")
	}
	if n, isNil := d.Count("artifacts", minArtifactLen); !isNil {
		cp.Artifacts = make([]ckptstore.Artifact, n)
		for i := range cp.Artifacts {
			a := &cp.Artifacts[i]
			a.ArtifactID = d.String("artifactId")
			a.Name = d.String("artifact name")
			a.MimeType = d.String("artifact mimeType")
			a.Size = d.Size("artifact size")
			a.BlobKey = d.String("artifact blobKey")
			a.CreatedAt = d.Float("artifact createdAt")
		}
	}
	return hasConversation && d.err == nil
}
