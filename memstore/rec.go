package memstore

import (
	"fmt"
	"math"
	"strings"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
)

// rec is a stored checkpoint, packed so that the collector has little to
// scan: the checkpoint's own strings (but its ids and blob keys) and its
// conversation are the bytes of one string (text), and the entries and
// artifacts are arrays that say where their strings are in it. A
// ckptstore.Checkpoint of the harness shape holds about 35 pointers to a
// dozen objects; its rec holds about 11. Every collection scans every
// stored checkpoint, and a long List allocates enough to start one or two:
// marking the store was most of a 10,000-checkpoint List's collector time,
// and the write barriers it keeps on while it runs a good part of its
// copying.
//
// The ids and blob keys are the caller's strings, shared and not copied:
// strings are immutable, the keys are mostly the same string object from
// checkpoint to checkpoint (a file keeps its parent's key), and copying
// them into text would be most of an Append's extra bytes.
//
// A rec is never modified once stored (blobRefs.add sets its files'
// counts just before), and its strings are immutable, so the
// copies a read returns share them (substrings of text) and copy only what
// the caller may write into: the structs, the entry and artifact arrays and
// the conversation bytes. A copy the caller keeps therefore keeps its
// checkpoint's text alive, conversation included, after the store deletes
// it: at most the size of the copy again.
type rec struct {
	ID, ThreadID, ParentCheckpointID string
	CreatedAt                        float64

	text              string
	label, run        span
	reason            span   // used only when reasonCode is reasonOther
	convFrom          uint32 // the conversation is text[convFrom:], last
	files             []fileRec
	arts              []artRec
	reasonCode, convK uint8
}

// span is the substring text[lo:hi] of a rec. Offsets are 32 bits: pack
// refuses a checkpoint whose strings, but the conversation, add up to
// 4 GiB or more.
type span struct{ lo, hi uint32 }

// fileRec is a packed ckptstore.Entry.
type fileRec struct {
	key      string // the caller's BlobKey
	size     int64
	path     span
	kind     span // used only when kindCode is kindOther
	kindCode uint8
	// ref is key's count, for a file entry: blobRefs.add sets it when the
	// rec is stored, before any read can see the rec, and drop uses it.
	// In the padding after kindCode: fileRec stays 48 bytes.
	ref slot
}

// artRec is a packed ckptstore.Artifact.
type artRec struct {
	id, name, mime, key span
	size                int64
	createdAt           float64
}

// The kinds and reasons the contract allows unpack as the package's own
// constants (static strings, nothing for the collector to mark); any other
// value, which validation refuses, is kept in text all the same.
const (
	kindFile uint8 = iota
	kindDir
	kindOther
)

const (
	reasonAutomatic uint8 = iota
	reasonNamed
	reasonForkRoot
	reasonOther
)

// kinds and reasons are the values of the codes below kindOther and
// reasonOther, indexed by code, for pack (codeOf) and unpack alike. Each is
// sized by its "other" code, so a code added before it gets a slot here.
var (
	kinds   = [kindOther]ckptstore.EntryKind{kindFile: ckptstore.KindFile, kindDir: ckptstore.KindDir}
	reasons = [reasonOther]ckptstore.Reason{reasonAutomatic: ckptstore.ReasonAutomatic,
		reasonNamed: ckptstore.ReasonNamed, reasonForkRoot: ckptstore.ReasonForkRoot}
)

// codeOf returns the code of v: its index in known, or len(known) (the
// "other" code) when it is none of them.
func codeOf[T ~string](known []T, v T) uint8 {
	for i, k := range known {
		if v == k {
			return uint8(i)
		}
	}
	return uint8(len(known))
}

// convK tells a nil conversation from an empty, non-nil one, which copies
// keep as Checkpoint.Clone does.
const (
	convNil uint8 = iota
	convEmpty
	convBytes
)

// maxPacked is the most bytes of strings before the conversation that a
// rec's 32-bit offsets reach.
const maxPacked = math.MaxUint32

// pack returns c packed into a rec, or ErrInvalidEntry when its strings
// but the conversation are 4 GiB or more. The rec shares c's ids and blob
// keys (immutable strings) and copies everything else.
func pack(c *ckptstore.Checkpoint) (*rec, error) {
	n := len(c.Label) + len(c.SourceRunID) + len(c.Reason)
	for i := range c.Files {
		e := &c.Files[i]
		n += len(e.Path) + len(e.Kind)
	}
	for i := range c.Artifacts {
		a := &c.Artifacts[i]
		n += len(a.ArtifactID) + len(a.Name) + len(a.MimeType) + len(a.BlobKey)
	}
	if n >= maxPacked {
		return nil, fmt.Errorf("%w: checkpoint %s has %d bytes of labels, paths and artifact fields; memstore keeps less than 4 GiB", ckptstore.ErrInvalidEntry, driver.QuoteShort(c.ID), n)
	}
	var p packer
	p.b.Grow(n + len(c.Conversation)) // a little more than it needs: kinds and reasons are mostly not written
	r := &rec{ID: c.ID, ThreadID: c.ThreadID, ParentCheckpointID: c.ParentCheckpointID, CreatedAt: c.CreatedAt,
		label: p.put(c.Label), run: p.put(c.SourceRunID)}
	if r.reasonCode = codeOf(reasons[:], c.Reason); r.reasonCode == reasonOther {
		r.reason = p.put(string(c.Reason))
	}
	if c.Files != nil {
		r.files = make([]fileRec, len(c.Files))
		for i := range c.Files {
			e, f := &c.Files[i], &r.files[i]
			f.key, f.size, f.path = e.BlobKey, e.Size, p.put(e.Path)
			if f.kindCode = codeOf(kinds[:], e.Kind); f.kindCode == kindOther {
				f.kind = p.put(string(e.Kind))
			}
		}
	}
	if c.Artifacts != nil {
		r.arts = make([]artRec, len(c.Artifacts))
		for i := range c.Artifacts {
			a, x := &c.Artifacts[i], &r.arts[i]
			x.id, x.name, x.mime, x.key = p.put(a.ArtifactID), p.put(a.Name), p.put(a.MimeType), p.put(a.BlobKey)
			x.size, x.createdAt = a.Size, a.CreatedAt
		}
	}
	r.convFrom = uint32(p.b.Len())
	switch {
	case c.Conversation == nil:
		r.convK = convNil
	case len(c.Conversation) == 0:
		r.convK = convEmpty
	default:
		r.convK = convBytes
		p.b.Write(c.Conversation)
	}
	r.text = p.b.String() // no copy: the builder's bytes become the string
	return r, nil
}

// packer writes a rec's strings one after the other.
type packer struct{ b strings.Builder }

func (p *packer) put(s string) span {
	lo := uint32(p.b.Len())
	p.b.WriteString(s)
	return span{lo, uint32(p.b.Len())}
}

// str returns the string at s: "" for an empty span, so that an empty
// field of a copy points at nothing.
func (r *rec) str(s span) string {
	if s.lo == s.hi {
		return ""
	}
	return r.text[s.lo:s.hi]
}

// conversation returns the stored conversation bytes, to copy.
func (r *rec) conversation() string { return r.text[r.convFrom:] }

// Clone returns a copy of the stored checkpoint (nil for nil) that the
// caller owns: its strings are shared with r (they are immutable), its
// slices and conversation bytes are its own.
func (r *rec) Clone() *ckptstore.Checkpoint {
	if r == nil {
		return nil
	}
	c := &ckptstore.Checkpoint{}
	var files []ckptstore.Entry
	if r.files != nil {
		files = make([]ckptstore.Entry, len(r.files))
	}
	var arts []ckptstore.Artifact
	if r.arts != nil {
		arts = make([]ckptstore.Artifact, len(r.arts))
	}
	r.unpack(c, files, arts)
	switch r.convK {
	case convEmpty:
		c.Conversation = []byte{}
	case convBytes:
		c.Conversation = []byte(r.conversation())
	}
	return c
}

// unpack fills the zero checkpoint c with r's fields, and files and arts,
// zero and as long as r's (nil when r's are), with its entries and
// artifacts. It leaves c.Conversation to the caller.
func (r *rec) unpack(c *ckptstore.Checkpoint, files []ckptstore.Entry, arts []ckptstore.Artifact) {
	c.ID, c.ThreadID, c.ParentCheckpointID, c.CreatedAt = r.ID, r.ThreadID, r.ParentCheckpointID, r.CreatedAt
	if r.reasonCode < reasonOther {
		c.Reason = reasons[r.reasonCode]
	} else {
		c.Reason = ckptstore.Reason(r.str(r.reason))
	}
	if r.label.lo != r.label.hi {
		c.Label = r.str(r.label)
	}
	if r.run.lo != r.run.hi {
		c.SourceRunID = r.str(r.run)
	}
	c.Files, c.Artifacts = files, arts
	files = files[:len(r.files)] // one bounds check for the loop
	for i := range r.files {
		f, e := &r.files[i], &files[i]
		e.Path, e.Size = r.str(f.path), f.size
		if f.kindCode < kindOther {
			e.Kind = kinds[f.kindCode]
		} else {
			e.Kind = ckptstore.EntryKind(r.str(f.kind))
		}
		if f.key != "" {
			e.BlobKey = f.key
		}
	}
	arts = arts[:len(r.arts)]
	for i := range r.arts {
		x, a := &r.arts[i], &arts[i]
		a.ArtifactID, a.Name, a.MimeType, a.BlobKey = r.str(x.id), r.str(x.name), r.str(x.mime), r.str(x.key)
		a.Size, a.CreatedAt = x.size, x.createdAt
	}
}
