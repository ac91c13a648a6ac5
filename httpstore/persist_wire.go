package httpstore

// The persistence routes' JSON, shared by the handler and the client: the
// records, patches and entries are written and read by their own codec
// (persist/driver, over driver.JSONReader and driver.AppendJSONString);
// what is left here are the request envelopes and reply members around
// them. Invariant: every error a reader keeps wraps a persist sentinel.

import (
	"strconv"

	"github.com/ckptstore/ckptstore/persist"
	pdriver "github.com/ckptstore/ckptstore/persist/driver"
)

// appendOf appends r's JSON, or null for a nil r.
func appendOf[T any, P interface {
	*T
	AppendJSON([]byte) []byte
}](b []byte, r P) []byte {
	if r == nil {
		return append(b, "null"...)
	}
	return r.AppendJSON(b)
}

// The appenders the routes name.
var (
	appendRun           = appendOf[persist.RunRecord]
	appendGenerationRun = appendOf[persist.GenerationRunRecord]
	appendInterrupt     = appendOf[persist.InterruptRecord]
	appendArtifact      = appendOf[persist.ArtifactRecord]
	appendBlobRecord    = appendOf[persist.BlobRecord]
)

func appendCommitEntry(b []byte, e persist.InterruptCommitEntry) []byte { return e.AppendJSON(b) }

func appendList[T any](b []byte, recs []T, one func([]byte, T) []byte) []byte {
	b = append(b, '[')
	for i, r := range recs {
		if i > 0 {
			b = append(b, ',')
		}
		b = one(b, r)
	}
	return append(b, ']')
}

// appendNewInterrupt appends the record of interrupts/create: an
// interrupt without status and resolvedAt.
func appendNewInterrupt(b []byte, in persist.NewInterrupt) []byte {
	rec := persist.InterruptRecord{InterruptID: in.InterruptID, RunID: in.RunID, ThreadID: in.ThreadID,
		RequestedAt: in.RequestedAt, Payload: in.Payload, Response: in.Response}
	b = append(b, '{')
	first := len(b)
	rec.Members(func(name string, v []byte, _ bool) {
		if name == "status" {
			return
		}
		if len(b) > first {
			b = append(b, ',')
		}
		b = append(append(append(append(b, '"'), name...), '"', ':'), v...)
	})
	return append(b, '}')
}

// readNewInterrupt reads the record of interrupts/create (null: nil).
func readNewInterrupt(x *pdriver.Reader) *persist.NewInterrupt {
	var rec persist.InterruptRecord
	ok := pdriver.ReadObject(x, "/record", func(name []byte) bool {
		switch string(name) {
		case "interruptId", "runId", "threadId", "requestedAt", "payload", "response":
			return rec.ReadMember(x, name)
		}
		return false
	})
	if !ok {
		return nil
	}
	return &persist.NewInterrupt{InterruptID: rec.InterruptID, RunID: rec.RunID, ThreadID: rec.ThreadID,
		RequestedAt: rec.RequestedAt, Payload: rec.Payload, Response: rec.Response}
}

// readRange reads a blob range {offset, length?} at the pointer at (null:
// nil); length is required when whole.
func readRange(x *pdriver.Reader, at string, whole bool) (offset int64, length *int64, ok bool) {
	ok = pdriver.ReadObject(x, at, func(name []byte) bool {
		switch string(name) {
		case "offset":
			x.Int(&offset, "/offset")
		case "length":
			x.OptInt(&length, "/length")
		default:
			return false
		}
		return true
	})
	if ok && whole && length == nil {
		length = new(int64)
	}
	return offset, length, ok
}

// appendRange appends a blob range {offset, length?}.
func appendRange(b []byte, offset int64, length *int64) []byte {
	b = strconv.AppendInt(append(b, `{"offset":`...), offset, 10)
	if length != nil {
		b = strconv.AppendInt(append(b, `,"length":`...), *length, 10)
	}
	return append(b, '}')
}
