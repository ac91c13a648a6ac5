package difftest_test

// How a call's outcome becomes the text the engines are compared on.
//
// A result is rendered as JSON (the records' own wire shapes); an error as
// its sentinel (the one contract error, or other well-known error, that
// errors.Is matches), its wire code and its message. The normalisations,
// each the only place an engine may legitimately differ:
//
//   - N1 owner tokens: a writer lease's owner token is random, so a lease
//     renders without it (thread, fence, expiry, renew-after).
//   - N2 the HTTP envelope: through HTTP an error is the client's
//     *httpstore.Error, whose Error() is "httpstore: <status> <code>:
//     <server message>"; the message compared is the server's message, and
//     the status is checked against the code by the client, not here. An
//     error that the Go client's own portable layer raised before sending
//     (its pure checks) is the same value as in process and is compared
//     as it is.
//   - N3 blob bodies: a BlobObject renders its bytes read from Body.
//   - N4 the HTTP body limit: a step marked split (a body just over
//     the handler's MaxBodyBytes) compares the in-process engines with
//     each other and the HTTP ones with each other, since the limit is the
//     server's setting; the thread it wrote is deleted after.
//   - N5 lock release: LockSteps.Release's contract is Held alone, and the
//     HTTP route answers only it, so a release renders Held.
//
// Nothing else is normalised: a message that names an engine is a
// divergence, listed in knownDivergences when it is not fixed.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/httpstore"
	"github.com/ckptstore/ckptstore/persist"
)

// sentinels are the errors an outcome is classified by, in the order they
// are tried; the first errors.Is match names the error.
var sentinels = []struct {
	name string
	err  error
}{
	{"ckptstore.ErrConflict", ckptstore.ErrConflict},
	{"ckptstore.ErrParentMismatch", ckptstore.ErrParentMismatch},
	{"ckptstore.ErrDuplicateID", ckptstore.ErrDuplicateID},
	{"ckptstore.ErrNotHead", ckptstore.ErrNotHead},
	{"ckptstore.ErrWriterConflict", ckptstore.ErrWriterConflict},
	{"ckptstore.ErrWriterLost", ckptstore.ErrWriterLost},
	{"ckptstore.ErrInvalidID", ckptstore.ErrInvalidID},
	{"ckptstore.ErrInvalidEntry", ckptstore.ErrInvalidEntry},
	{"ckptstore.ErrForkSourceNotFound", ckptstore.ErrForkSourceNotFound},
	{"ckptstore.ErrForkSourceThreadMismatch", ckptstore.ErrForkSourceThreadMismatch},
	{"ckptstore.ErrForkDestinationNotEmpty", ckptstore.ErrForkDestinationNotEmpty},
	{"ckptstore.ErrNotReplicated", ckptstore.ErrNotReplicated},
	{"persist.ErrInvalidID", persist.ErrInvalidID},
	{"persist.ErrInvalidEntry", persist.ErrInvalidEntry},
	{"persist.ErrDuplicateEntry", persist.ErrDuplicateEntry},
	{"persist.ErrNotFound", persist.ErrNotFound},
	{"persist.ErrNotPending", persist.ErrNotPending},
	{"persist.ErrRangeNotSatisfiable", persist.ErrRangeNotSatisfiable},
	{"persist.ErrLockLost", persist.ErrLockLost},
	{"driver.ErrInvalidOptions", driver.ErrInvalidOptions},
	{"errors.ErrUnsupported", errors.ErrUnsupported},
	{"context.Canceled", context.Canceled},
	{"context.DeadlineExceeded", context.DeadlineExceeded},
}

// outcome is one call's rendered result on one engine.
type outcome struct {
	// text is what engines are compared on.
	text string
}

// renderErr is the comparable text of err.
func renderErr(err error) outcome {
	name := "other"
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			name = s.name
			break
		}
	}
	code := ckptstore.Code(err)
	if code == "" {
		code = persist.Code(err)
	}
	msg := err.Error()
	var he *httpstore.Error
	if errors.As(err, &he) {
		// N2: the server's message, and the wire code as the server sent it
		// (a code with no sentinel, BAD_REQUEST or PAYLOAD_TOO_LARGE, is
		// compared too).
		msg, code = he.Message, he.Code
	}
	return outcome{text: fmt.Sprintf("error %s code=%s: %s", name, code, msg)}
}

// render is the comparable text of a call's outcome.
func render(v any, err error) outcome {
	if err != nil {
		return renderErr(err)
	}
	return outcome{text: "ok " + renderValue(v)}
}

// shownLease is a writer lease without its owner token (N1).
type shownLease struct {
	ThreadID   string `json:"threadId"`
	Fence      int64  `json:"fence"`
	ExpiresAt  int64  `json:"expiresAt"`
	RenewAfter int64  `json:"renewAfterMs"`
}

// shownLockStep is a lock step as the sequence compares it: the state and
// the timing. Sent is the holder's clock, the same test clock everywhere.
type shownLockStep struct {
	Held       bool  `json:"held"`
	Fence      int64 `json:"fence"`
	Now        int64 `json:"now"`
	ExpiresAt  int64 `json:"expiresAt"`
	Ahead      int   `json:"ahead"`
	Sent       int64 `json:"sent"`
	Lease      int64 `json:"leaseMs"`
	RenewAfter int64 `json:"renewAfterMs"`
}

// blobShown is a blob object with its bytes (N3).
type blobShown struct {
	persist.BlobRecord
	Range *persist.ServedRange `json:"range,omitempty"`
	Body  string               `json:"body"`
}

// renderValue is v as JSON, after the normalisations above.
func renderValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case *ckptstore.Lease:
		if x == nil {
			return "null"
		}
		v = shownLease{x.ThreadID, x.Fence, x.ExpiresAt.UnixMilli(), x.RenewAfter.Milliseconds()}
	case persist.LockStep:
		v = shownLockStep{x.Held, x.Fence, ms(x.Now), ms(x.ExpiresAt), x.Ahead, ms(x.Sent), x.Lease.Milliseconds(), x.RenewAfter.Milliseconds()}
	case *persist.BlobObject:
		if x == nil {
			return "null"
		}
		b, err := io.ReadAll(x.Body)
		_ = x.Body.Close()
		if err != nil {
			return "body read error: " + err.Error()
		}
		v = blobShown{x.BlobRecord, x.Range, string(b)}
	case json.RawMessage:
		if x == nil {
			return "<nil raw>"
		}
		return "raw " + string(x)
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Pointer && rv.IsNil() {
		return "null"
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprintf("unencodable %T: %v", v, err)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// ms is t in epoch milliseconds, 0 for the zero time.
func ms(t interface{ UnixMilli() int64 }) int64 {
	if z, ok := t.(interface{ IsZero() bool }); ok && z.IsZero() {
		return 0
	}
	return t.UnixMilli()
}
