package redisstore

// The binary form of a stored checkpoint. A checkpoint is kept as three
// strings: the header (fields a fork replaces), the body (files and
// artifacts) and the conversation, as given. A fork copies body and
// conversation unchanged inside its script, so Lua never parses any of
// them, and the conversation, the bulk of a checkpoint, goes to the server
// without being copied into another buffer.
//
//	header = version(1) createdAt(8, IEEE-754 bits, big endian)
//	         str(reason) str(label) str(sourceRunId)
//	body   = version(1) list(files) conv(1: 0 nil, 1 present) list(artifacts)
//	file   = str(path) kind(1: 'f' or 'd') [str(blobKey) uvarint(size)]   (blobKey and size for 'f' only)
//	artifact = str(artifactId) str(name) str(mimeType) uvarint(size) str(blobKey) createdAt(8)
//	str    = uvarint(len) bytes
//	list   = uvarint(n+1) items, 0 for a nil slice
//
// Floats are kept as their bits, so createdAt round-trips exactly (-0,
// subnormals and the largest finite values included), and nil and empty
// slices stay apart, as memstore keeps them. Decoding checks every length
// and fails with ErrCorrupt instead of panicking.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/ckptstore/ckptstore"
)

const codecVersion = 1

// ErrCorrupt reports stored data this package cannot decode: keys under the
// store's prefix written by something else, or by a newer version.
var ErrCorrupt = errors.New("redisstore: corrupt stored checkpoint")

func appendStr(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendFloat(b []byte, f float64) []byte {
	return binary.BigEndian.AppendUint64(b, math.Float64bits(f))
}

// encodeHeader returns the header of cp.
func encodeHeader(cp *ckptstore.Checkpoint) []byte {
	b := make([]byte, 0, 1+8+3+len(cp.Reason)+len(cp.Label)+len(cp.SourceRunID)+6)
	b = append(b, codecVersion)
	b = appendFloat(b, cp.CreatedAt)
	b = appendStr(b, string(cp.Reason))
	b = appendStr(b, cp.Label)
	return appendStr(b, cp.SourceRunID)
}

// encodeBody returns the body of cp.
func encodeBody(cp *ckptstore.Checkpoint) []byte {
	n := 1 + 2*binary.MaxVarintLen64 + 1
	for _, e := range cp.Files {
		n += len(e.Path) + len(e.BlobKey) + 3*binary.MaxVarintLen64 + 1
	}
	for _, a := range cp.Artifacts {
		n += len(a.ArtifactID) + len(a.Name) + len(a.MimeType) + len(a.BlobKey) + 5*binary.MaxVarintLen64 + 8
	}
	b := make([]byte, 0, n)
	b = append(b, codecVersion)
	b = appendCount(b, len(cp.Files), cp.Files == nil)
	for _, e := range cp.Files {
		b = appendStr(b, e.Path)
		if e.Kind == ckptstore.KindDir {
			b = append(b, 'd')
			continue
		}
		b = append(b, 'f')
		b = appendStr(b, e.BlobKey)
		b = binary.AppendUvarint(b, uint64(e.Size))
	}
	if cp.Conversation == nil {
		b = append(b, 0)
	} else {
		b = append(b, 1)
	}
	b = appendCount(b, len(cp.Artifacts), cp.Artifacts == nil)
	for _, a := range cp.Artifacts {
		b = appendStr(b, a.ArtifactID)
		b = appendStr(b, a.Name)
		b = appendStr(b, a.MimeType)
		b = binary.AppendUvarint(b, uint64(a.Size))
		b = appendStr(b, a.BlobKey)
		b = appendFloat(b, a.CreatedAt)
	}
	return b
}

// appendCount writes n+1, or 0 for nil.
func appendCount(b []byte, n int, isNil bool) []byte {
	if isNil {
		return append(b, 0)
	}
	return binary.AppendUvarint(b, uint64(n)+1)
}

// decoder reads the encoding above from a string (go-redis returns replies
// as strings). Short strings are cloned so that a returned checkpoint does
// not pin the whole reply in memory.
type decoder struct {
	s   string
	err error
}

func (d *decoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: truncated or invalid %s", ErrCorrupt, what)
	}
	d.s = ""
}

func (d *decoder) byte(what string) byte {
	if len(d.s) < 1 {
		d.fail(what)
		return 0
	}
	c := d.s[0]
	d.s = d.s[1:]
	return c
}

func (d *decoder) uvarint(what string) uint64 {
	// binary.Uvarint needs a []byte; varints are at most 10 bytes, so the
	// copy is cheap and bounded.
	var buf [binary.MaxVarintLen64]byte
	n := copy(buf[:], d.s)
	v, k := binary.Uvarint(buf[:n])
	if k <= 0 {
		d.fail(what)
		return 0
	}
	d.s = d.s[k:]
	return v
}

func (d *decoder) raw(n uint64, what string) string {
	if uint64(len(d.s)) < n {
		d.fail(what)
		return ""
	}
	v := d.s[:n]
	d.s = d.s[n:]
	return v
}

func (d *decoder) str(what string) string {
	return strings.Clone(d.raw(d.uvarint(what), what))
}

func (d *decoder) float(what string) float64 {
	r := d.raw(8, what)
	if len(r) != 8 {
		return 0
	}
	var u uint64
	for i := 0; i < 8; i++ {
		u = u<<8 | uint64(r[i])
	}
	return math.Float64frombits(u)
}

func (d *decoder) size(what string) int64 {
	v := d.uvarint(what)
	if v > ckptstore.MaxSize {
		d.fail(what)
		return 0
	}
	return int64(v)
}

// count reads a list length: -1 for nil. It refuses lengths larger than
// the bytes left, so a corrupt length cannot make us allocate much.
func (d *decoder) count(what string) int {
	v := d.uvarint(what)
	if v == 0 {
		return -1
	}
	if v-1 > uint64(len(d.s)) {
		d.fail(what)
		return 0
	}
	return int(v - 1)
}

func (d *decoder) version(what string) {
	if v := d.byte(what); v != codecVersion && d.err == nil {
		d.err = fmt.Errorf("%w: %s has version %d, this package reads %d", ErrCorrupt, what, v, codecVersion)
	}
}

// decodeHeader fills cp's header fields from s.
func decodeHeader(cp *ckptstore.Checkpoint, s string) error {
	d := decoder{s: s}
	d.version("header")
	cp.CreatedAt = d.float("createdAt")
	cp.Reason = ckptstore.Reason(d.str("reason"))
	cp.Label = d.str("label")
	cp.SourceRunID = d.str("sourceRunId")
	if d.err == nil && d.s != "" {
		d.fail("header (trailing bytes)")
	}
	return d.err
}

// decodeBody fills cp's files, conversation and artifacts from the body s
// and the stored conversation conv.
func decodeBody(cp *ckptstore.Checkpoint, s, conv string) error {
	d := decoder{s: s}
	d.version("body")
	if n := d.count("files"); n >= 0 {
		cp.Files = make([]ckptstore.Entry, n)
		for i := range cp.Files {
			e := &cp.Files[i]
			e.Path = d.str("path")
			switch d.byte("kind") {
			case 'd':
				e.Kind = ckptstore.KindDir
			case 'f':
				e.Kind = ckptstore.KindFile
				e.BlobKey = d.str("blobKey")
				e.Size = d.size("size")
			default:
				d.fail("kind")
			}
		}
	}
	switch d.byte("conversation") {
	case 0:
		if conv != "" {
			d.fail("conversation (nil with bytes)")
		}
	case 1:
		cp.Conversation = []byte(conv)
	default:
		d.fail("conversation")
	}
	if n := d.count("artifacts"); n >= 0 {
		cp.Artifacts = make([]ckptstore.Artifact, n)
		for i := range cp.Artifacts {
			a := &cp.Artifacts[i]
			a.ArtifactID = d.str("artifactId")
			a.Name = d.str("name")
			a.MimeType = d.str("mimeType")
			a.Size = d.size("artifact size")
			a.BlobKey = d.str("artifact blobKey")
			a.CreatedAt = d.float("artifact createdAt")
		}
	}
	if d.err == nil && d.s != "" {
		d.fail("body (trailing bytes)")
	}
	return d.err
}
