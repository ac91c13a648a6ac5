package httpstore

// What the handler and the client share: header names, the non-contract
// error codes, the status of each code, a small JSON object builder for
// the envelopes, and the decoding of a request body. The checkpoint JSON
// inside them is the root package's one codec: Checkpoint.AppendJSON
// writes it, driver.JSONReader reads it in the same pass as the
// envelope around it.

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/contract"
	"github.com/ckptstore/ckptstore/driver"
	pdriver "github.com/ckptstore/ckptstore/persist/driver"
	"github.com/ckptstore/ckptstore/streams"
)

// Header names of the protocol.
const (
	HeaderNamespace      = "Ckpt-Namespace"
	HeaderNow            = "Ckpt-Now"
	HeaderLeaseDuration  = "Ckpt-Lease-Duration-Ms"
	HeaderRenewAfter     = "Ckpt-Renew-After-Ms"
	HeaderIdempotencyKey = "Idempotency-Key"
	// HeaderRequestID names a request in the server's log; the server
	// takes the client's when it is a sane token (MaxRequestIDBytes of
	// [A-Za-z0-9] and -_.:=+/@), else makes one, and returns it in the
	// reply's header of the same name.
	HeaderRequestID = "X-Request-Id"
)

// Codes of the failures that are not contract errors.
const (
	CodeBadRequest       = "BAD_REQUEST"
	CodeUnauthorized     = "UNAUTHORIZED"
	CodeNotFound         = "NOT_FOUND"
	CodeMethodNotAllowed = "METHOD_NOT_ALLOWED"
	CodeUnsupportedMedia = "UNSUPPORTED_MEDIA_TYPE"
	CodeUnsupported      = "UNSUPPORTED"
	CodePayloadTooLarge  = "PAYLOAD_TOO_LARGE"
	CodeUnavailable      = "UNAVAILABLE"
	CodeInternal         = "INTERNAL"
	// CodeNotReplicated is ckptstore.ErrNotReplicated: the store applied
	// the write but not on enough replicas in time. Like UNAVAILABLE it is
	// a 503 that a client retries with the same Idempotency-Key.
	CodeNotReplicated = "NOT_REPLICATED"
	// CodeOverloaded is a 503 with Retry-After: the request's body would
	// pass the server's budget of request bytes in flight
	// (HandlerOptions.MaxInflightBytes). Nothing was read past the
	// refusal or written; a client retries it as it retries UNAVAILABLE.
	CodeOverloaded = "OVERLOADED"
)

// Error is a failure the server reported. A contract error unwraps to its
// sentinel (errors.Is(err, ckptstore.ErrConflict), ckptstore.Code),
// UNSUPPORTED to errors.ErrUnsupported and NOT_REPLICATED to
// ckptstore.ErrNotReplicated.
type Error struct {
	Status  int    // the HTTP status
	Code    string // SANDBOX_SNAPSHOT_… or one of the Code… constants
	Message string // the server's message
	// RetryAfter is the wait a 503's Retry-After asked for (whole
	// seconds, at most maxRetryAfter); 0 when it named none.
	RetryAfter time.Duration
}

// Error returns the status, the code and the server's message.
func (e *Error) Error() string {
	return fmt.Sprintf("httpstore: %d %s: %s", e.Status, e.Code, e.Message)
}

// Unwrap returns the sentinel of e's code, if it has one: a checkpoint
// contract error's, or a persistence one's (persist.ErrInvalidID, …).
func (e *Error) Unwrap() error {
	if s := contract.ErrorFor(e.Code); s != nil { // the sentinel of any contract's code
		return s
	}
	switch e.Code {
	case CodeUnsupported:
		return errors.ErrUnsupported
	case CodeNotReplicated:
		return ckptstore.ErrNotReplicated
	case streams.ErrImportConflict.Code:
		return streams.ErrImportConflict
	}
	return nil
}

// statusOf is the HTTP status of a wire code.
func statusOf(code string) int {
	switch code {
	case driver.CodeInvalidID, driver.CodeInvalidEntry, CodeBadRequest,
		pdriver.CodeInvalidID, pdriver.CodeInvalidEntry:
		return http.StatusBadRequest
	case pdriver.CodeDuplicateEntry, pdriver.CodeNotFound, pdriver.CodeNotPending, pdriver.CodeLockLost, pdriver.CodeRecordConflict,
		streams.ErrImportConflict.Code:
		return http.StatusConflict
	case pdriver.CodeRangeNotSatisfiable:
		return http.StatusRequestedRangeNotSatisfiable
	case driver.CodeForkSourceNotFound, CodeNotFound:
		return http.StatusNotFound
	case driver.CodeStaleHead, driver.CodeParentMismatch, driver.CodeDuplicateID,
		driver.CodeNotHead, driver.CodeWriterConflict, driver.CodeWriterLost,
		driver.CodeForkSourceThreadMismatch, driver.CodeForkDestinationNotEmpty:
		return http.StatusConflict
	case CodeUnauthorized:
		return http.StatusUnauthorized
	case CodeMethodNotAllowed:
		return http.StatusMethodNotAllowed
	case CodeUnsupportedMedia:
		return http.StatusUnsupportedMediaType
	case CodeUnsupported:
		return http.StatusNotImplemented
	case CodePayloadTooLarge:
		return http.StatusRequestEntityTooLarge
	case CodeUnavailable, CodeNotReplicated, CodeOverloaded:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// object builds one JSON object by appending fields.
type object struct {
	b []byte
}

func (o *object) start() { o.b = append(o.b[:0], '{') }

func (o *object) name(n string) {
	if len(o.b) > 1 {
		o.b = append(o.b, ',')
	}
	o.b = append(o.b, '"')
	o.b = append(o.b, n...)
	o.b = append(o.b, '"', ':')
}

// str appends a string field.
func (o *object) str(n, v string) {
	o.name(n)
	o.b = driver.AppendJSONString(o.b, v)
}

// strOrNull appends a string field, null when v is "".
func (o *object) strOrNull(n, v string) {
	if v == "" {
		o.name(n)
		o.b = append(o.b, "null"...)
		return
	}
	o.str(n, v)
}

func (o *object) int(n string, v int64) {
	o.name(n)
	o.b = strconv.AppendInt(o.b, v, 10)
}

func (o *object) float(n string, v float64) error {
	o.name(n)
	var err error
	o.b, err = driver.AppendJSONNumber(o.b, v)
	return err
}

func (o *object) bool(n string, v bool) {
	o.name(n)
	o.b = strconv.AppendBool(o.b, v)
}

// raw appends a field whose value is already JSON.
func (o *object) raw(n string, v []byte) {
	o.name(n)
	o.b = append(o.b, v...)
}

func (o *object) writer(n string, w ckptstore.Writer) {
	o.name(n)
	o.b = w.AppendJSON(o.b)
}

// checkpoint appends cp's JSON (null for nil). Checkpoints here passed
// validation, the client's pre-checks on the way out or the store's on the
// way in.
func (o *object) checkpoint(n string, cp *ckptstore.Checkpoint) error {
	o.name(n)
	return o.appendCheckpoint(cp)
}

func (o *object) appendCheckpoint(cp *ckptstore.Checkpoint) error {
	if cp == nil {
		o.b = append(o.b, "null"...)
		return nil
	}
	var err error
	o.b, err = cp.AppendJSON(o.b)
	return err
}

func (o *object) checkpoints(n string, cps []*ckptstore.Checkpoint) error {
	o.name(n)
	o.b = append(o.b, '[')
	for i, cp := range cps {
		if i > 0 {
			o.b = append(o.b, ',')
		}
		if err := o.appendCheckpoint(cp); err != nil {
			return err
		}
	}
	o.b = append(o.b, ']')
	return nil
}

func (o *object) strings(n string, ss []string) {
	o.name(n)
	o.b = append(o.b, '[')
	for i, s := range ss {
		if i > 0 {
			o.b = append(o.b, ',')
		}
		o.b = driver.AppendJSONString(o.b, s)
	}
	o.b = append(o.b, ']')
}

func (o *object) end() []byte { return append(o.b, '}') }

// millis reads a header of milliseconds (ckptstore.ParseMillis) in
// nanoseconds.
func millis(s string) (int64, error) { return driver.ParseMillis(s) }

// firstIDError returns the first error that wraps ErrInvalidID, else the
// first error: a request decodes its parts one after another, and the
// contract checks every id before any other field.
func firstIDError(errs ...error) error {
	for _, err := range errs {
		if errors.Is(err, ckptstore.ErrInvalidID) {
			return err
		}
	}
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// A request body decodes in one pass into a request: every field any
// method takes, each with its value and its own error, so that a repeated
// name keeps its last value (and that value's error) as in JSON.parse, and
// a method reports its fields' faults in the order the contract checks
// them (firstIDError). Fields of other methods and unknown ones are
// skipped; a method reads only its own.

// idField is a string field; absent and null are "".
type idField struct {
	v   string
	err error
}

// numField is a number field; ok is false when absent or null.
type numField struct {
	i   int64
	f   float64
	ok  bool
	err error
}

// request is a decoded request body.
type request struct {
	id, threadID, checkpointID, expectedHeadID, head, key, after idField
	sourceThreadID, sourceCheckpointID                           idField
	destinationThreadID, destinationCheckpointID                 idField
	limit, keep, createdAt                                       numField
	reverse, setHead                                             bool
	reverseErr, setHeadErr                                       error
	writer                                                       ckptstore.Writer
	hasWriter                                                    bool
	writerErr                                                    error
	checkpoint                                                   ckptstore.Decoded
	checkpointErr                                                error
	checkpoints                                                  []*ckptstore.Checkpoint
	checkpointsErr                                               error
	messages                                                     ckptstore.Transcript // a view of the body, validated
	messagesErr                                                  error
	transcript                                                   []byte // with its whitespace, in the body; nil when absent or null
	record                                                       *ckptstore.InstanceRecord
	recordErr                                                    error
	r                                                            *http.Request // a raw route's request, for its headers
}

// decodeRequest decodes body, one JSON object, into q. The error is the
// body's syntax, or a body that is not an object; the faults of fields are
// in q.
func decodeRequest(body []byte, q *request) error {
	return readObject(body, func(r *driver.JSONReader, name []byte) error {
		str := func(f *idField, path string, sentinel error) { f.v, _, f.err = r.String(path, sentinel) }
		integer := func(f *numField, path string) { f.i, f.ok, f.err = r.Int(path) }
		var err error
		switch string(name) {
		case "id":
			str(&q.id, "/id", ckptstore.ErrInvalidID)
		case "threadId":
			str(&q.threadID, "/threadId", ckptstore.ErrInvalidID)
		case "checkpointId":
			str(&q.checkpointID, "/checkpointId", ckptstore.ErrInvalidID)
		case "expectedHeadId":
			str(&q.expectedHeadID, "/expectedHeadId", ckptstore.ErrInvalidID)
		case "head":
			str(&q.head, "/head", ckptstore.ErrInvalidID)
		case "key":
			str(&q.key, "/key", ckptstore.ErrInvalidID)
		case "after":
			str(&q.after, "/after", ckptstore.ErrInvalidEntry)
		case "sourceThreadId":
			str(&q.sourceThreadID, "/sourceThreadId", ckptstore.ErrInvalidID)
		case "sourceCheckpointId":
			str(&q.sourceCheckpointID, "/sourceCheckpointId", ckptstore.ErrInvalidID)
		case "destinationThreadId":
			str(&q.destinationThreadID, "/destinationThreadId", ckptstore.ErrInvalidID)
		case "destinationCheckpointId":
			str(&q.destinationCheckpointID, "/destinationCheckpointId", ckptstore.ErrInvalidID)
		case "limit":
			integer(&q.limit, "/limit")
		case "keep":
			integer(&q.keep, "/keep")
		case "createdAt":
			q.createdAt.f, q.createdAt.ok, q.createdAt.err = r.Float("/createdAt")
		case "reverse":
			q.reverse, q.reverseErr = r.Bool("/reverse")
		case "setHead":
			q.setHead, q.setHeadErr = r.Bool("/setHead")
		case "writer":
			q.writer, q.hasWriter, q.writerErr = r.Writer("/writer")
		case "checkpoint":
			q.checkpoint, q.checkpointErr = r.Decoded("/checkpoint")
		case "checkpoints":
			q.checkpoints, q.checkpointsErr = readCheckpoints(r, "/checkpoints")
		case "messages": // a view of the body, which lives as long as the call, checked as it is read
			q.messages, _, q.messagesErr = r.Transcript()
		case "transcript":
			q.transcript, _, err = r.PaddedView()
		case "record":
			q.record, q.recordErr = r.InstanceRecord("/record")
		default:
			err = r.Skip()
		}
		return err
	})
}

// readObject reads body, one JSON object, calling field with the reader
// at each field's value. Its error is the body's syntax, or a body that is
// not an object: what field reports as the fault of a field it keeps.
func readObject(body []byte, field func(r *driver.JSONReader, name []byte) error) error {
	r := driver.NewJSONReader(body)
	defer r.Close()
	err := r.Object("", func(name []byte) error {
		if err := field(r, name); r.Err() != nil {
			return r.Err()
		} else if err != nil {
			return err
		}
		return nil
	})
	if err == nil {
		err = r.End()
	}
	if err != nil {
		if r.Err() == nil {
			return errors.New("the body is not a JSON object")
		}
		return fmt.Errorf("the body is not one JSON object: %v", r.Err())
	}
	return nil
}

// readCheckpoints reads an array of checkpoints, keeping the first fault;
// null is none.
func readCheckpoints(r *driver.JSONReader, path string) ([]*ckptstore.Checkpoint, error) {
	out := []*ckptstore.Checkpoint{} // an empty list is empty, not nil, as every store returns it
	var first error
	_, err := r.Array(path, func(i int) error {
		cp, err := r.Checkpoint(path + "/" + strconv.Itoa(i))
		if err == nil && cp == nil {
			err = fmt.Errorf("%w: %s/%d is null", ckptstore.ErrInvalidEntry, path, i)
		}
		if first == nil {
			first = err
		}
		out = append(out, cp)
		return nil
	})
	if err == nil {
		err = first
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// writerOf is a request's writer: absent or null fails with ErrInvalidID
// (a writer of no thread).
func (q *request) writerOf() (ckptstore.Writer, error) {
	if q.writerErr == nil && !q.hasWriter {
		return q.writer, fmt.Errorf("%w: writer is missing", ckptstore.ErrInvalidID)
	}
	return q.writer, q.writerErr
}

// int is a number field as an int; absent is 0.
func (f numField) int() (int64, error) { return f.i, f.err }
