package httpstore

// A direct encoder of the checkpoint JSON, byte for byte what
// Checkpoint.MarshalJSON writes (the equivalence test checks it), without
// reflection: it is on the path of every append a client sends and every
// checkpoint a server returns. It writes what it is given; callers pass
// checkpoints that passed validation (the client's pre-checks, or the
// store's on the way in), whose conversation is a JSON array and whose
// numbers are finite.

import (
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/ckptstore/ckptstore"
)

func appendCheckpointJSON(b []byte, cp *ckptstore.Checkpoint) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, cp.ID)
	b = append(b, `,"threadId":`...)
	b = appendString(b, cp.ThreadID)
	b = append(b, `,"parentCheckpointId":`...)
	if cp.ParentCheckpointID == "" {
		b = append(b, "null"...)
	} else {
		b = appendString(b, cp.ParentCheckpointID)
	}
	b = append(b, `,"createdAt":`...)
	b = appendFloat(b, cp.CreatedAt)
	b = append(b, `,"reason":`...)
	b = appendString(b, string(cp.Reason))
	if cp.Label != "" {
		b = append(b, `,"label":`...)
		b = appendString(b, cp.Label)
	}
	if cp.SourceRunID != "" {
		b = append(b, `,"sourceRunId":`...)
		b = appendString(b, cp.SourceRunID)
	}
	b = append(b, `,"files":[`...)
	for i, e := range cp.Files {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"path":`...)
		b = appendString(b, e.Path)
		b = append(b, `,"kind":`...)
		b = appendString(b, string(e.Kind))
		if e.Kind != ckptstore.KindDir {
			b = append(b, `,"blobKey":`...)
			b = appendString(b, e.BlobKey)
			b = append(b, `,"size":`...)
			b = strconv.AppendInt(b, e.Size, 10)
		}
		b = append(b, '}')
	}
	b = append(b, `],"conversation":`...)
	if len(cp.Conversation) == 0 {
		b = append(b, "[]"...)
	} else {
		b = append(b, cp.Conversation...)
	}
	b = append(b, `,"artifacts":[`...)
	for i, a := range cp.Artifacts {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"artifactId":`...)
		b = appendString(b, a.ArtifactID)
		b = append(b, `,"name":`...)
		b = appendString(b, a.Name)
		b = append(b, `,"mimeType":`...)
		b = appendString(b, a.MimeType)
		b = append(b, `,"size":`...)
		b = strconv.AppendInt(b, a.Size, 10)
		b = append(b, `,"blobKey":`...)
		b = appendString(b, a.BlobKey)
		b = append(b, `,"createdAt":`...)
		b = appendFloat(b, a.CreatedAt)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

// appendString appends s as a JSON string as encoding/json writes it
// without HTML escaping (as Checkpoint.MarshalJSON does): '"', '\\' and
// control characters escaped (\b \f \n \r \t by name), U+2028 and U+2029
// escaped, and invalid UTF-8 written as U+FFFD.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&15])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendFloat appends f as encoding/json writes a float64 (ES6 number
// formatting: exponent form below 1e-6 and from 1e21, "e-7" not "e-07").
func appendFloat(b []byte, f float64) []byte {
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
