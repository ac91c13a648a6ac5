package httpstore

// The Durable Streams protocol under /streams/ (docs/streams.md). The
// stream's name is the rest of the path, percent-decoded (a raw "/" and
// "%2F" are one name), inside the namespace of the request (its token, or
// Ckpt-Namespace under Dev). Each request is one driver call, but live
// reads, which wait on the driver between reads. No request or reply
// holds more than one append's body or one read's page.

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ckptstore/ckptstore/streams"
)

// StreamsPrefix is the mount of the Durable Streams protocol.
const StreamsPrefix = "/streams/"

// The defaults of StreamsOptions.
const (
	DefaultMaxAppendBytes  = 16 << 20
	DefaultMaxReadBytes    = 1 << 20
	DefaultLongPollTimeout = 3 * time.Second
	DefaultMaxLiveReaders  = 10000
	DefaultSSEDuration     = 60 * time.Second
)

// HeaderEpochFence, sent as "stream" on an append with producer headers,
// turns on the per-stream epoch fence: an epoch below the highest any
// producer wrote to the stream is refused 403 (docs/streams.md).
const HeaderEpochFence = "Ckpt-Producer-Fence"

// HeaderExpectOffset, sent on an append with an offset the server minted
// (or "-1" for an empty stream), makes it conditional: it applies only
// while that offset is the stream's tail, else 409 STREAM_TAIL_MISMATCH
// with the tail in Stream-Next-Offset (docs/streams.md). A writer that
// names the offsets its data must land at (an upsert) appends with it.
const HeaderExpectOffset = "Ckpt-Expect-Offset"

// StreamsOptions are the limits of the /streams/ routes; zero fields take
// the defaults.
type StreamsOptions struct {
	// MaxAppendBytes bounds the body of one create or append (413).
	MaxAppendBytes int64
	// MaxReadBytes is about the most data one read of the store returns,
	// and so one long-poll reply, SSE data event or catch-up reply of a
	// JSON stream carries; a catch-up reply of a byte stream carries up to
	// 16 such reads, read and sent one at a time.
	MaxReadBytes int
	// LongPollTimeout is how long a long-poll waits for data before its
	// 204.
	LongPollTimeout time.Duration
	// MaxLiveReaders bounds the long-poll and SSE readers in flight on
	// this handler together (429 above it).
	MaxLiveReaders int64
	// SSEDuration is how long an SSE reply lasts before the server ends
	// it (the client reconnects from its last offset).
	SSEDuration time.Duration
}

func (o *StreamsOptions) resolve() {
	if o.MaxAppendBytes <= 0 {
		o.MaxAppendBytes = DefaultMaxAppendBytes
	}
	if o.MaxReadBytes <= 0 {
		o.MaxReadBytes = DefaultMaxReadBytes
	}
	if o.LongPollTimeout <= 0 {
		o.LongPollTimeout = DefaultLongPollTimeout
	}
	if o.MaxLiveReaders <= 0 {
		o.MaxLiveReaders = DefaultMaxLiveReaders
	}
	if o.SSEDuration <= 0 {
		o.SSEDuration = DefaultSSEDuration
	}
}

// initStreams resolves the /streams/ options and registers the sweep's
// metric.
func (h *handler) initStreams(o StreamsOptions, reg prometheus.Registerer) {
	o.resolve()
	h.sopts = o
	h.liveCtx, h.stopLive = context.WithCancel(context.Background())
	if reg != nil {
		h.swept = prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "ckptstore", Subsystem: "streams", Name: "swept_total",
			Help: "Expired Durable Streams the background sweep removed.",
		})
		reg.MustRegister(h.swept)
	}
}

// StreamsSweeper is implemented by the handler NewHandler returns: a
// server calls SweepStreams now and then to remove expired streams
// nobody reads again (ckptserver: every --streams-sweep-interval).
type StreamsSweeper interface {
	// SweepStreams looks at up to max streams of every namespace the
	// handler has served streams of, removes the expired ones, and returns
	// how many it removed (counted in ckptstore_streams_swept_total).
	SweepStreams(ctx context.Context, max int) (int, error)
}

// SweepStreams implements StreamsSweeper.
func (h *handler) SweepStreams(ctx context.Context, max int) (int, error) {
	total := 0
	var errs []error
	h.streamDrivers.Range(func(_, d any) bool {
		sw, ok := d.(streams.Sweeper)
		if !ok {
			return true
		}
		n, err := sw.SweepExpired(ctx, time.Now(), max)
		total += n
		if err != nil {
			errs = append(errs, err)
		}
		return ctx.Err() == nil
	})
	if h.swept != nil {
		h.swept.Add(float64(total))
	}
	return total, errors.Join(errs...)
}

// LiveReadsStopper is implemented by the handler NewHandler returns: a
// server that shuts down calls StopLiveReads (http.Server's
// RegisterOnShutdown) so that its long-polls answer at once and its SSE
// replies end, rather than hold the shutdown for their full time; their
// clients go on from their last offset, on another server.
type LiveReadsStopper interface {
	StopLiveReads()
}

// StopLiveReads implements LiveReadsStopper.
func (h *handler) StopLiveReads() { h.stopLive() }

// liveContext is the context of a live read: the request's, ended also
// by StopLiveReads.
func (s *streamCall) liveContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(s.ctx)
	stop := context.AfterFunc(s.h.liveCtx, cancel)
	return ctx, func() { stop(); cancel() }
}

// The route names of /streams/ in metrics and logs.
var streamRouteNames = []string{"streams/create", "streams/append", "streams/read", "streams/longPoll",
	"streams/sse", "streams/head", "streams/delete", "streams/options", "streams/unknown"}

// streamRoute names the route of r.
func streamRoute(r *http.Request) string {
	switch r.Method {
	case http.MethodPut:
		return "streams/create"
	case http.MethodPost:
		return "streams/append"
	case http.MethodHead:
		return "streams/head"
	case http.MethodDelete:
		return "streams/delete"
	case http.MethodOptions:
		return "streams/options"
	case http.MethodGet:
		switch r.URL.Query().Get("live") {
		case "long-poll":
			return "streams/longPoll"
		case "sse":
			return "streams/sse"
		}
		return "streams/read"
	}
	return "streams/unknown"
}

// statusWriter records the status of a reply.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController flush an SSE reply.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// serveStreams serves one request under StreamsPrefix and records its
// metrics and log line as ServeHTTP does.
func (h *handler) serveStreams(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	routeName := streamRoute(r)
	c := &call{w: w}
	w.Header()[HeaderRequestID] = c.requestID(r.Header[HeaderRequestID])
	if h.trace != nil {
		r, c.span = h.trace.startStreams(r, routeName)
	}
	rm := h.metrics.route(routeName)
	rm.inFlight.Inc()
	sw := &statusWriter{ResponseWriter: w}
	code := h.stream(sw, r, c)
	rm.inFlight.Dec()
	h.record(r, c, rm, routeName, sw.status, code, start)
}

var exposed = strings.Join([]string{"Stream-Next-Offset", "Stream-Cursor", "Stream-Up-To-Date", "Stream-Closed",
	"Stream-TTL", "Stream-Expires-At", "Stream-SSE-Data-Encoding", "ETag", "Location", "Producer-Epoch",
	"Producer-Seq", "Producer-Expected-Seq", "Producer-Received-Seq", "Content-Type", HeaderRequestID}, ", ")

var allowed = strings.Join([]string{"Content-Type", "Authorization", "If-None-Match", "Stream-TTL",
	"Stream-Expires-At", "Stream-Seq", "Stream-Closed", "Stream-Forked-From", "Stream-Fork-Offset",
	"Stream-Fork-Sub-Offset", "Producer-Id", "Producer-Epoch", "Producer-Seq", HeaderEpochFence, HeaderExpectOffset,
	HeaderNamespace, HeaderRequestID, "traceparent", "tracestate"}, ", ")

// stream serves r and returns the wire code of a failure ("" on success).
func (h *handler) stream(w http.ResponseWriter, r *http.Request, c *call) string {
	hd := w.Header()
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Cross-Origin-Resource-Policy", "cross-origin")
	hd.Set("Access-Control-Allow-Origin", "*")
	hd.Set("Access-Control-Expose-Headers", exposed)
	if r.Method == http.MethodOptions {
		hd.Set("Access-Control-Allow-Methods", "GET, HEAD, PUT, POST, DELETE, OPTIONS")
		hd.Set("Access-Control-Allow-Headers", allowed)
		hd.Set("Access-Control-Max-Age", "86400")
		w.WriteHeader(http.StatusNoContent)
		return ""
	}
	err := h.streamOp(w, r, c)
	if err == nil {
		return ""
	}
	c.err = err
	return h.streamError(w, r, err)
}

// streamError writes the reply of err: the protocol's status and
// headers, and the {code, message} body of every route.
func (h *handler) streamError(w http.ResponseWriter, r *http.Request, err error) string {
	hd := w.Header()
	var se *streams.Error
	code, status := "", 0
	if errors.As(err, &se) {
		code = se.Code
		switch se.Code {
		case streams.ErrBadRequest.Code:
			status = http.StatusBadRequest
		case streams.ErrNotFound.Code:
			status = http.StatusNotFound
		case streams.ErrGone.Code:
			status = http.StatusGone
		case streams.ErrStaleEpoch.Code:
			status = http.StatusForbidden
			hd.Set("Producer-Epoch", strconv.FormatInt(se.Epoch, 10))
		case streams.ErrSeqGap.Code:
			status = http.StatusConflict
			hd.Set("Producer-Expected-Seq", strconv.FormatInt(se.Expected, 10))
			hd.Set("Producer-Received-Seq", strconv.FormatInt(se.Received, 10))
		case streams.ErrClosed.Code:
			status = http.StatusConflict
			hd.Set("Stream-Closed", "true")
			hd.Set("Stream-Next-Offset", se.Tail.Offset())
		case streams.ErrTailMismatch.Code:
			status = http.StatusConflict
			hd.Set("Stream-Next-Offset", se.Tail.Offset())
		case streams.ErrTooLarge.Code:
			status = http.StatusRequestEntityTooLarge
		case codeTooManyReaders:
			status = http.StatusTooManyRequests
		default:
			status = http.StatusConflict
		}
	} else {
		code = errorCode(err)
		status = statusOf(code)
	}
	if r.Method == http.MethodHead {
		w.WriteHeader(status)
		return code
	}
	WriteError(w, status, code, err.Error())
	return code
}

// codeTooManyReaders is the wire code of a live read over
// StreamsOptions.MaxLiveReaders (429).
const codeTooManyReaders = "TOO_MANY_READERS"

func (h *handler) streamOp(w http.ResponseWriter, r *http.Request, c *call) error {
	name := strings.TrimPrefix(r.URL.Path, StreamsPrefix)
	if err := streams.CheckName(name); err != nil {
		return err
	}
	ns, err := h.namespaceOf(r)
	if err != nil {
		return err
	}
	c.ns = ns
	d, err := h.streamDriver(ns)
	if err != nil {
		return err
	}
	if c.span != nil && c.span.IsRecording() { // unsampled: no driver spans either, as in fdbstore.TraceDB
		d = &tracedStreams{d: d, tracer: h.trace.tracer}
	}
	s := &streamCall{h: h, d: d, name: name, w: w, r: r, ctx: r.Context()}
	switch r.Method {
	case http.MethodPut:
		return s.create()
	case http.MethodPost:
		return s.append()
	case http.MethodGet:
		return s.read()
	case http.MethodHead:
		return s.head()
	case http.MethodDelete:
		if err := d.Delete(s.ctx, name, time.Now()); err != nil {
			return err
		}
		w.WriteHeader(http.StatusNoContent)
		return nil
	}
	w.Header().Set("Allow", "GET, HEAD, PUT, POST, DELETE, OPTIONS")
	return reqErr(CodeMethodNotAllowed, "%s on a stream: use GET, HEAD, PUT, POST or DELETE", r.Method)
}

// streamDriver returns the stream driver of namespace ns (its tenant's
// Streams) and remembers it for SweepStreams.
func (h *handler) streamDriver(ns *namespace) (streams.Driver, error) {
	if ns.streams == nil {
		return nil, reqErr(CodeUnsupported, "this store keeps no streams")
	}
	h.streamDrivers.LoadOrStore(ns.name, ns.streams)
	return ns.streams, nil
}

type streamCall struct {
	h    *handler
	d    streams.Driver
	name string
	w    http.ResponseWriter
	r    *http.Request
	ctx  context.Context
}

// body reads the request body, at most MaxAppendBytes of it: a body
// with a Content-Length into one buffer of that length (net/http holds
// the body to it), a chunked one as it comes, refused once it passes the
// limit.
func (s *streamCall) body() ([]byte, error) {
	max := s.h.sopts.MaxAppendBytes
	if s.r.ContentLength > max {
		return nil, streams.Errorf(streams.ErrTooLarge, "the body is over %d bytes", max)
	}
	if s.r.ContentLength >= 0 {
		b := make([]byte, s.r.ContentLength)
		if _, err := io.ReadFull(s.r.Body, b); err != nil {
			return nil, reqErr(CodeBadRequest, "reading the body: %v", err)
		}
		return b, nil
	}
	b, err := io.ReadAll(io.LimitReader(s.r.Body, max+1))
	if err != nil {
		return nil, reqErr(CodeBadRequest, "reading the body: %v", err)
	}
	if int64(len(b)) > max {
		return nil, streams.Errorf(streams.ErrTooLarge, "the body is over %d bytes", max)
	}
	return b, nil
}

func closedHeader(v string) bool { return strings.EqualFold(strings.TrimSpace(v), "true") }

// forkSource is the stream name of Stream-Forked-From: a path under the
// /streams/ mount, or relative to it (as the protocol's conformance suite
// sends it), percent-decoded; a full URL counts by its path.
func forkSource(v string) (string, error) {
	if u, err := url.Parse(v); err == nil && u.Scheme != "" {
		v = u.EscapedPath()
	}
	p, err := url.PathUnescape(v)
	if err != nil {
		return "", streams.Errorf(streams.ErrBadRequest, "Stream-Forked-From is not percent-encoded")
	}
	if rest, ok := strings.CutPrefix(p, StreamsPrefix); ok {
		p = rest
	} else {
		p = strings.TrimPrefix(p, "/")
	}
	return p, streams.CheckName(p)
}

func (s *streamCall) create() error {
	hd := s.r.Header
	req := &streams.CreateRequest{Closed: closedHeader(hd.Get("Stream-Closed"))}
	req.ContentType = strings.TrimSpace(hd.Get("Content-Type"))
	if err := streams.ParseConfig(&req.Config, hd.Get("Stream-TTL"), hd.Get("Stream-Expires-At")); err != nil {
		return err
	}
	from, hasFrom := hd["Stream-Forked-From"]
	if hasFrom {
		src, err := forkSource(from[0])
		if err != nil {
			return err
		}
		f := &streams.ForkRequest{Source: src}
		if v, ok := hd["Stream-Fork-Offset"]; ok {
			p, err := streams.ParseForkOffset(v[0])
			if err != nil {
				return err
			}
			f.Offset, f.HasOffset = p, true
		}
		sub, err := streams.ParseSubOffset(hd.Get("Stream-Fork-Sub-Offset"))
		if err != nil {
			return err
		}
		f.Sub = sub
		req.Fork = f
	} else if _, ok := hd["Stream-Fork-Sub-Offset"]; ok {
		return streams.Errorf(streams.ErrBadRequest, "Stream-Fork-Sub-Offset needs Stream-Forked-From")
	} else if _, ok := hd["Stream-Fork-Offset"]; ok {
		return streams.Errorf(streams.ErrBadRequest, "Stream-Fork-Offset needs Stream-Forked-From")
	}
	body, err := s.body()
	if err != nil {
		return err
	}
	ct := req.ContentType
	if ct == "" && req.Fork != nil && len(body) > 0 {
		// The body is parsed by the source's type; the driver checks it
		// again in its step.
		src, err := s.d.Head(s.ctx, req.Fork.Source, false, time.Now())
		if err == nil {
			ct = src.ContentType
		}
	}
	if ct == "" {
		ct = streams.DefaultContentType
	}
	if req.Body, err = streams.CheckBody(body, ct, true); err != nil {
		return err
	}
	info, created, err := s.d.Create(s.ctx, s.name, req, time.Now())
	if err != nil {
		return err
	}
	h := s.w.Header()
	h.Set("Content-Type", info.ContentType)
	h.Set("Stream-Next-Offset", info.Tail.Offset())
	if info.Closed {
		h.Set("Stream-Closed", "true")
	}
	if created {
		h.Set("Location", s.location())
		s.w.WriteHeader(http.StatusCreated)
		return nil
	}
	s.w.WriteHeader(http.StatusOK)
	return nil
}

// location is the absolute URL of the request's stream.
func (s *streamCall) location() string {
	scheme := "http"
	if s.r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + s.r.Host + s.r.URL.EscapedPath()
}

func (s *streamCall) append() error {
	hd := s.r.Header
	req := &streams.AppendRequest{Close: closedHeader(hd.Get("Stream-Closed"))}
	req.ContentType = strings.TrimSpace(hd.Get("Content-Type"))
	id, hasID := hd["Producer-Id"]
	ep, hasEp := hd["Producer-Epoch"]
	sq, hasSq := hd["Producer-Seq"]
	first := func(v []string) string {
		if len(v) == 0 {
			return ""
		}
		return v[0]
	}
	p, err := streams.ParseProducer(first(id), first(ep), first(sq), hasID, hasEp, hasSq)
	if err != nil {
		return err
	}
	req.Producer = p
	req.EpochFence = strings.EqualFold(hd.Get(HeaderEpochFence), "stream")
	if v, ok := hd["Stream-Seq"]; ok {
		req.Seq, req.HasSeq = v[0], true
	}
	if v, ok := hd[HeaderExpectOffset]; ok {
		if req.ExpectTail, err = streams.ParseExpectOffset(v[0]); err != nil {
			return err
		}
		req.HasExpectTail = true
	}
	body, err := s.body()
	if err != nil {
		return err
	}
	if len(body) == 0 && !req.Close {
		return streams.Errorf(streams.ErrBadRequest, "an empty append: send data, or Stream-Closed: true")
	}
	if len(body) > 0 && req.ContentType == "" {
		return streams.Errorf(streams.ErrBadRequest, "an append needs a Content-Type")
	}
	if req.Body, err = streams.CheckBody(body, req.ContentType, false); err != nil {
		return err
	}
	res, err := s.d.Append(s.ctx, s.name, req, time.Now())
	if err != nil {
		return err
	}
	h := s.w.Header()
	h.Set("Stream-Next-Offset", res.Next.Offset())
	if res.Closed {
		h.Set("Stream-Closed", "true")
	}
	if p != nil {
		h.Set("Producer-Epoch", strconv.FormatInt(res.Epoch, 10))
		h.Set("Producer-Seq", strconv.FormatInt(res.Seq, 10))
		if !res.Duplicate && req.Body != nil {
			s.w.WriteHeader(http.StatusOK)
			return nil
		}
	}
	s.w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *streamCall) head() error {
	info, err := s.d.Head(s.ctx, s.name, false, time.Now())
	if err != nil {
		return err
	}
	h := s.w.Header()
	h.Set("Content-Type", info.ContentType)
	h.Set("Stream-Next-Offset", info.Tail.Offset())
	h.Set("Cache-Control", "no-store")
	if info.HasTTL {
		h.Set("Stream-TTL", strconv.FormatInt(info.TTL, 10))
	}
	if !info.ExpiresAt.IsZero() {
		h.Set("Stream-Expires-At", info.ExpiresAt.UTC().Format(time.RFC3339Nano))
	}
	if info.Closed {
		h.Set("Stream-Closed", "true")
	}
	s.w.WriteHeader(http.StatusOK)
	return nil
}

// cursorEpoch and cursorInterval make the protocol's live-read cursors:
// the number of 20 s intervals since 2024-10-09.
var cursorEpoch = time.Date(2024, 10, 9, 0, 0, 0, 0, time.UTC)

const cursorInterval = 20 * time.Second

// cursor returns the cursor of a live reply to a request that sent
// client: the current interval, or past client when client is not behind
// it, so that cursors always move forward.
func cursor(client string) string {
	n := int64(time.Since(cursorEpoch) / cursorInterval)
	if c, err := strconv.ParseInt(client, 10, 64); err == nil && c >= n {
		n = c + 1 + rand.Int64N(180) // 20 s to an hour ahead
	}
	return strconv.FormatInt(n, 10)
}

func (s *streamCall) read() error {
	q := s.r.URL.Query()
	offs, hasOffset := q["offset"]
	if hasOffset && (len(offs) != 1 || offs[0] == "") {
		return streams.Errorf(streams.ErrBadRequest, "send one non-empty offset")
	}
	off := ""
	if hasOffset {
		off = offs[0]
	}
	start, err := streams.ParseOffset(off)
	if err != nil {
		return err
	}
	live := q.Get("live")
	switch live {
	case "", "long-poll", "sse":
	default:
		return streams.Errorf(streams.ErrBadRequest, "live %s: want long-poll or sse", strconv.Quote(live))
	}
	if live != "" && !hasOffset {
		return streams.Errorf(streams.ErrBadRequest, "a live read needs an offset")
	}
	now := time.Now()
	if start.Now {
		info, err := s.d.Head(s.ctx, s.name, true, now)
		if err != nil {
			return err
		}
		start.Pos = info.Tail
		if live == "" {
			h := s.w.Header()
			h.Set("Content-Type", info.ContentType)
			h.Set("Stream-Next-Offset", info.Tail.Offset())
			h.Set("Stream-Up-To-Date", "true")
			h.Set("Cache-Control", "no-store")
			if info.Closed {
				h.Set("Stream-Closed", "true")
			}
			if info.JSON() {
				h.Set("Content-Length", "2")
				s.w.WriteHeader(http.StatusOK)
				_, _ = io.WriteString(s.w, "[]")
				return nil
			}
			h.Set("Content-Length", "0")
			s.w.WriteHeader(http.StatusOK)
			return nil
		}
	}
	if live == "" {
		rd, err := s.d.Read(s.ctx, s.name, start.Pos, s.h.sopts.MaxReadBytes, now)
		if err != nil {
			return err
		}
		if !rd.Info.JSON() && rd.Next < rd.Info.Tail {
			return s.replyBytes(start.Pos, &rd)
		}
		return s.reply(start.Pos, &rd, "")
	}
	if n := s.h.liveReaders.Add(1); n > s.h.sopts.MaxLiveReaders {
		s.h.liveReaders.Add(-1)
		return &streams.Error{Code: codeTooManyReaders, Msg: "too many live readers on this server"}
	}
	defer s.h.liveReaders.Add(-1)
	if live == "sse" {
		return s.sse(start.Pos)
	}
	return s.longPoll(start.Pos, q.Get("cursor"))
}

// catchUpReads is how many reads of MaxReadBytes one catch-up reply of
// a byte stream may carry.
const catchUpReads = 16

// replyBytes answers a catch-up read of a byte stream that rd, the first
// read, did not take to the tail: with up to catchUpReads reads' worth of
// data, read and sent one read at a time, so that a reader catching up
// makes fewer requests while the server holds one read's data at most.
// The data below the tail rd saw never changes, so the reply's length and
// Stream-Next-Offset are known before its body; a later read that fails
// (the stream was deleted meanwhile) cuts the reply short, and the
// connection with it, rather than send anything else.
func (s *streamCall) replyBytes(from streams.Pos, rd *streams.ReadResult) error {
	upTo := rd.Info.Tail
	if n := streams.Pos(s.h.sopts.MaxReadBytes); n <= (upTo-from)/catchUpReads { // no overflow
		upTo = from + catchUpReads*n
	}
	return s.replyTo(from, upTo, rd, "")
}

// reply writes a catch-up or long-poll reply of rd, read from from.
func (s *streamCall) reply(from streams.Pos, rd *streams.ReadResult, cur string) error {
	return s.replyTo(from, rd.Next, rd, cur)
}

// replyTo writes a reply of the data from from to upTo: rd's, then (a
// byte stream only) what further reads return.
func (s *streamCall) replyTo(from, upTo streams.Pos, rd *streams.ReadResult, cur string) error {
	h := s.w.Header()
	info := &rd.Info
	atTail := upTo == info.Tail
	etag := `"` + strconv.FormatInt(info.Created, 36) + ":" + from.Offset() + ":" + upTo.Offset()
	if atTail && info.Closed {
		etag += ":c"
	}
	etag += `"`
	h.Set("ETag", etag)
	h.Set("Content-Type", info.ContentType)
	h.Set("Stream-Next-Offset", upTo.Offset())
	h.Set("Cache-Control", "private, max-age=60, stale-while-revalidate=300")
	if atTail {
		h.Set("Stream-Up-To-Date", "true")
		if info.Closed {
			h.Set("Stream-Closed", "true")
		}
	}
	if cur != "" {
		h.Set("Stream-Cursor", cur)
	}
	if inm := s.r.Header.Get("If-None-Match"); inm != "" && inm == etag {
		s.w.WriteHeader(http.StatusNotModified)
		return nil
	}
	if info.JSON() {
		b := streams.AppendJSONArray(make([]byte, 0, 2+size(rd.Chunks)), rd.Chunks)
		h.Set("Content-Length", strconv.Itoa(len(b)))
		s.w.WriteHeader(http.StatusOK)
		_, _ = s.w.Write(b)
		return nil
	}
	h.Set("Content-Length", strconv.FormatInt(int64(upTo-from), 10))
	s.w.WriteHeader(http.StatusOK)
	for pos := rd.Next; ; {
		for i := range rd.Chunks {
			if _, err := s.w.Write(rd.Chunks[i].Data); err != nil {
				return nil // the client left; its status is logged as sent
			}
		}
		if pos >= upTo {
			return nil
		}
		next, err := s.d.Read(s.ctx, s.name, pos, min(s.h.sopts.MaxReadBytes, int(upTo-pos)), time.Now())
		if err != nil || next.Next <= pos || next.Next > upTo {
			// Short of its Content-Length, the reply ends with its
			// connection: the client sees a broken reply, never a wrong one.
			return nil
		}
		rd, pos = &next, next.Next
	}
}

func size(chunks []streams.Chunk) int {
	n := 0
	for i := range chunks {
		n += len(chunks[i].Data) + 1
	}
	return n - len(chunks)
}

func (s *streamCall) longPoll(from streams.Pos, client string) error {
	live, stop := s.liveContext()
	defer stop()
	ctx, cancel := context.WithTimeout(live, s.h.sopts.LongPollTimeout)
	_ = http.NewResponseController(s.w).SetWriteDeadline(time.Now().Add(s.h.sopts.LongPollTimeout + 10*time.Second))
	defer cancel()
	for {
		rd, err := s.d.Read(s.ctx, s.name, from, s.h.sopts.MaxReadBytes, time.Now())
		if err != nil {
			return err
		}
		if rd.Next > from {
			return s.reply(from, &rd, cursor(client))
		}
		if rd.Info.Closed || ctx.Err() != nil {
			h := s.w.Header()
			h.Set("Stream-Next-Offset", rd.Info.Tail.Offset())
			h.Set("Stream-Up-To-Date", "true")
			h.Set("Cache-Control", "no-store")
			if rd.Info.Closed {
				h.Set("Stream-Closed", "true")
			} else {
				h.Set("Stream-Cursor", cursor(client))
			}
			s.w.WriteHeader(http.StatusNoContent)
			return nil
		}
		if err := s.d.Wait(ctx, s.name, rd.Info.Tail); err != nil && s.ctx.Err() != nil {
			return nil // the client left
		}
	}
}

// sse streams the data from from on as Server-Sent Events: each data
// event is followed by its control event; the reply ends when the stream
// is closed and sent, gone, or after SSEDuration.
func (s *streamCall) sse(from streams.Pos) error {
	rd, err := s.d.Read(s.ctx, s.name, from, s.h.sopts.MaxReadBytes, time.Now())
	if err != nil {
		return err
	}
	info := rd.Info
	binary := !info.JSON() && !strings.HasPrefix(streams.MediaType(info.ContentType), "text/")
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	if binary {
		h.Set("Stream-SSE-Data-Encoding", "base64")
	}
	s.w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(s.w)
	// The reply outlives the server's write timeout by design.
	_ = rc.SetWriteDeadline(time.Now().Add(s.h.sopts.SSEDuration + 10*time.Second))
	live, stop := s.liveContext()
	defer stop()
	ctx, cancel := context.WithTimeout(live, s.h.sopts.SSEDuration)
	defer cancel()
	var buf []byte
	first := true
	client := s.r.URL.Query().Get("cursor")
	for {
		// A reply with data, the first, and the one that finds the
		// stream closed at its tail send events; a wake that brought
		// nothing new sends none.
		if rd.Next > from || first || rd.Info.Closed && rd.Next == rd.Info.Tail {
			buf = buf[:0]
			if rd.Next > from {
				buf = appendSSEData(buf, &rd, binary)
			}
			atTail := rd.Next == rd.Info.Tail
			buf = append(buf, "event: control\ndata:{\"streamNextOffset\":\""...)
			buf = rd.Next.AppendOffset(buf)
			buf = append(buf, '"')
			if atTail && rd.Info.Closed {
				buf = append(buf, `,"streamClosed":true,"upToDate":true`...)
			} else {
				buf = append(buf, `,"streamCursor":"`...)
				buf = append(buf, cursor(client)...)
				buf = append(buf, '"')
				if atTail {
					buf = append(buf, `,"upToDate":true`...)
				}
			}
			buf = append(buf, "}\n\n"...)
			if _, err := s.w.Write(buf); err != nil {
				return nil
			}
			_ = rc.Flush()
			first = false
			if atTail && rd.Info.Closed {
				return nil
			}
			from = rd.Next
		}
		if rd.Next == rd.Info.Tail {
			if err := s.d.Wait(ctx, s.name, rd.Info.Tail); err != nil {
				return nil // the client left, or the reply's time is up
			}
		}
		rd, err = s.d.Read(s.ctx, s.name, from, s.h.sopts.MaxReadBytes, time.Now())
		if err != nil {
			return nil // gone: end the reply; a reconnect gets the status
		}
	}
}

// appendSSEData appends the data event of rd's chunks: JSON as one array
// (compacted messages hold no line break), text line by line (every line
// break, CR, LF or CRLF, starts a new data line, so no payload can end an
// event or start a field), anything else as base64. A line is written
// right after "data:", but one that starts with a space gets one more
// (which the client's parser strips).
func appendSSEData(b []byte, rd *streams.ReadResult, binary bool) []byte {
	b = append(b, "event: data\n"...)
	switch {
	case rd.Info.JSON():
		b = append(b, "data:"...)
		b = streams.AppendJSONArray(b, rd.Chunks)
	case binary:
		raw := make([]byte, 0, size(rd.Chunks))
		for i := range rd.Chunks {
			raw = append(raw, rd.Chunks[i].Data...)
		}
		b = append(b, "data:"...)
		b = base64.StdEncoding.AppendEncode(b, raw)
	default:
		b = append(b, "data:"...)
		lineStart := true
		for i := range rd.Chunks {
			data := rd.Chunks[i].Data
			for j := 0; j < len(data); j++ {
				c := data[j]
				switch c {
				case '\r':
					if j+1 < len(data) && data[j+1] == '\n' {
						j++
					}
					b = append(b, "\ndata:"...)
					lineStart = true
					continue
				case '\n':
					b = append(b, "\ndata:"...)
					lineStart = true
					continue
				case ' ':
					if lineStart {
						b = append(b, ' ')
					}
				}
				lineStart = false
				b = append(b, c)
			}
		}
	}
	return append(b, "\n\n"...)
}
