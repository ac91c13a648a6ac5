package httpstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/blobs"
	"github.com/ckptstore/ckptstore/contract"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/persist"
	pdriver "github.com/ckptstore/ckptstore/persist/driver"
	"github.com/ckptstore/ckptstore/storeurl"
	"github.com/ckptstore/ckptstore/streams"
)

// Backend opens the tenants of an engine. *storeurl.Opened is one.
type Backend interface {
	// Namespace returns every contract's store of the tenant name, opened
	// with the lease options lease, whose Now is the tenant's one lease
	// clock (in Dev, the namespace's clock, which a request's Ckpt-Now
	// sets). The handler calls it once per name and keeps the result. A
	// tenant without a persistence driver answers the /v1/runs/…,
	// /v1/generationRuns/…, /v1/interrupts/…, /v1/metadata/…,
	// /v1/artifacts/…, /v1/blobs/… and /v1/locks/… routes with 501
	// UNSUPPORTED, and one without a stream driver (Tenant.Streams) its
	// /streams/… paths.
	Namespace(name string, lease ckptstore.Options) (*storeurl.Tenant, error)
}

// DefaultMaxBodyBytes is the request-body limit of a zero
// HandlerOptions.MaxBodyBytes: several times the largest checkpoint
// fdbstore accepts (9 MB encoded), whose JSON is larger than its encoding.
const DefaultMaxBodyBytes = 64 << 20

// MaxNamespaceBytes is the longest namespace name: contract.MaxIDBytes,
// the one limit of every id, key, namespace and token.
const MaxNamespaceBytes = contract.MaxIDBytes

// DefaultNamespace is the namespace of a --dev request without a
// Ckpt-Namespace header.
const DefaultNamespace = "default"

// HandlerOptions configure NewHandler.
type HandlerOptions struct {
	// Dev turns on development mode: no authentication, the client names
	// its namespace (Ckpt-Namespace), sets the lease options of a namespace
	// it creates and may send its own clock (Ckpt-Now). Outside Dev those
	// headers are refused, and Tokens maps bearer tokens to namespaces.
	Dev bool
	// Tokens maps each bearer token to its namespace (outside Dev). Tokens
	// are compared in constant time.
	Tokens map[string]string
	// Lease is the lease options of every namespace outside Dev (and of a
	// Dev namespace whose creator sends none).
	Lease ckptstore.Options
	// MaxBodyBytes bounds a request body (413 above it); 0 means
	// DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// MaxInflightBytes bounds the request-body bytes held by all the
	// requests in flight together: a request whose body would pass it is
	// answered 503 OVERLOADED with Retry-After. The last eighth of it is
	// kept for requests of at most 1 MiB (unless that leaves less than
	// MaxBodyBytes for the others), so that the largest bodies
	// cannot keep ordinary requests out; a chunked body (no
	// Content-Length) holds twice its size while its pieces are joined.
	// 0 means DefaultMaxInflightFactor × MaxBodyBytes; a positive value
	// below MaxBodyBytes is invalid.
	MaxInflightBytes int64
	// Logger receives one record per request (Debug; Warn for server-side
	// failures); nil discards them.
	Logger *slog.Logger
	// Bucket holds the bytes of the blobs routes (persist.Options.Bucket);
	// nil: the blob routes answer 501 UNSUPPORTED.
	Bucket blobs.Bucket
	// BlobPrefix is persist.Options.BlobPrefix: where blob bytes go in
	// Bucket ("" means persist.DefaultBlobPrefix).
	BlobPrefix string
	// MaxBlobBytes bounds the body of one blob put (413 above it); 0
	// means DefaultMaxBlobBytes.
	MaxBlobBytes int64
	// Registerer, when not nil, gets the handler's Prometheus metrics:
	// requests by rpc (route) and HTTP status, failures by rpc and wire
	// code, latency histograms and requests in flight by rpc, the body
	// bytes in flight (docs/operations.md).
	Registerer prometheus.Registerer
	// TracerProvider, when not nil, turns tracing on: a server span per
	// request, a child of the trace context the request carries, and a span
	// per store call beneath it (docs/operations.md, "Traces"). nil: no
	// spans, and no cost beyond a nil check.
	TracerProvider trace.TracerProvider
	// Propagator reads a request's trace context when TracerProvider is
	// set; nil means W3C Trace Context (traceparent, tracestate).
	Propagator propagation.TextMapPropagator
	// Streams are the limits of the Durable Streams routes under
	// /streams/ (docs/streams.md).
	Streams StreamsOptions
}

// NewHandler returns the http.Handler that serves the stores of b over the
// protocol of docs/http-api.md, under /v1/. It keeps no state but a cache
// of the namespaces it opened (and, in Dev, the clock of the requests in
// flight), so any number of handlers may serve one backend. It panics when
// opts are invalid (a token mapped to an empty namespace, invalid lease
// options, metrics that cannot be registered): they are a program's
// configuration, checked once.
func NewHandler(b Backend, opts HandlerOptions) http.Handler {
	if _, err := opts.Lease.Resolve(); err != nil {
		panic(fmt.Sprintf("httpstore: %v", err))
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.MaxBlobBytes <= 0 {
		opts.MaxBlobBytes = DefaultMaxBlobBytes
	}
	if opts.MaxInflightBytes == 0 {
		opts.MaxInflightBytes = DefaultMaxInflightFactor * opts.MaxBodyBytes
	}
	if opts.MaxInflightBytes < opts.MaxBodyBytes {
		panic(fmt.Sprintf("httpstore: MaxInflightBytes %d is below MaxBodyBytes %d", opts.MaxInflightBytes, opts.MaxBodyBytes))
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	h := &handler{b: b, opts: opts, log: log, trace: newTracing(opts.TracerProvider, opts.Propagator)}
	h.budget.max = opts.MaxInflightBytes
	h.initStreams(opts.Streams, opts.Registerer)
	h.budget.maxBig = max(opts.MaxInflightBytes-opts.MaxInflightBytes/8, opts.MaxBodyBytes)
	h.metrics = newMetrics(opts.Registerer, &h.budget)
	for tok, ns := range opts.Tokens {
		if err := checkNamespace(ns); err != nil {
			panic(fmt.Sprintf("httpstore: the namespace of a token: %v", err))
		}
		h.tokens = append(h.tokens, token{digest: sha256.Sum256([]byte(tok)), namespace: ns})
	}
	return h
}

type handler struct {
	b       Backend
	opts    HandlerOptions
	log     *slog.Logger
	metrics *metrics
	tokens  []token
	budget  budget   // request-body bytes in flight
	trace   *tracing // nil: tracing is off

	mu         sync.Mutex
	namespaces sync.Map // name → *namespace

	sopts         StreamsOptions     // resolved
	streamDrivers sync.Map           // namespace name → streams.Driver, of the namespaces served streams
	liveReaders   atomic.Int64       // long-poll and SSE readers in flight
	swept         prometheus.Counter // expired streams the sweeps removed; nil without metrics
	liveCtx       context.Context    // ended by StopLiveReads
	stopLive      context.CancelFunc

	// persistFor, when set (by tests), opens a namespace's persistence
	// store in place of the backend.
	persistFor func(name string) (*persist.Store, error)
}

// token is a bearer token by its SHA-256 digest: comparing digests of a
// fixed length in constant time leaks neither a token's bytes nor its
// length.
type token struct {
	digest    [sha256.Size]byte
	namespace string
}

// namespace is an opened tenant.
type namespace struct {
	store *ckptstore.Store
	inst  *ckptstore.InstanceStore
	name  string
	lease ckptstore.Options // resolved

	// pdriver is the tenant's persistence driver, nil when its engine
	// keeps none.
	pdriver pdriver.Driver
	// streams is the tenant's stream driver, nil when its engine keeps
	// none (its /streams/ paths answer 501 UNSUPPORTED).
	streams streams.Driver
	// The persistence store, opened on first use (pmu guards it).
	pmu    sync.Mutex
	pstore *persist.Store
	pblobs bool // the store has a bucket
	// pcheck is the persistence driver's checker, nil when it has none.
	pcheck driver.Checker
	// pport is the persistence driver's export and import, nil when it
	// has none (persist/export and persist/import answer UNSUPPORTED).
	pport pdriver.Porter

	// clock is the Dev clock: while a request that carries Ckpt-Now runs,
	// it holds mu exclusively and sets nowSet and now; other requests hold
	// mu shared and see the system clock.
	mu     sync.RWMutex
	nowSet atomic.Bool
	now    atomic.Int64 // ns since the epoch
}

func (n *namespace) clock() time.Time {
	if n.nowSet.Load() {
		return time.Unix(0, n.now.Load())
	}
	return time.Now()
}

// checkNamespace applies the namespace rule (contract.CheckNamespace).
func checkNamespace(name string) error { return contract.CheckNamespace(name) }

// requestError is a failure of the request itself, with its wire code.
type requestError struct {
	code string
	msg  string
}

func (e *requestError) Error() string { return e.msg }

func reqErr(code, format string, args ...any) error {
	return &requestError{code: code, msg: fmt.Sprintf(format, args...)}
}

// call is one request being served.
type call struct {
	ctx  context.Context
	tok  driver.OpTokenContext // ctx when the request carries an Idempotency-Key
	ns   *namespace
	in   request
	out  object
	done bool // out holds a whole reply (acquireWriter's lease)

	w        http.ResponseWriter
	body     []byte    // a JSON body (persistence routes read it themselves)
	stream   io.Reader // the body of a raw route
	streamed bool      // the route wrote the reply itself

	setsClock bool  // a --dev request with Ckpt-Now
	now       int64 // its clock, ns since the epoch

	held int64 // bytes reserved from the handler's budget

	span  trace.Span // the server span; nil when tracing is off
	id    [1]string  // the request id, as the reply's X-Request-Id header
	idBuf [16]byte   // the bytes of an id the server made
	err   error      // the failure, for the log
}

// route is one method of the protocol.
type route struct {
	name  string
	serve func(h *handler, c *call) error
	// persist: the route decodes its own body (c.body), a persistence
	// route. raw: the body is bytes (application/octet-stream), read by
	// the route as a stream. unclocked: the route does not hold the --dev
	// clock while it runs (a long-polling lock acquire); each driver step
	// takes it instead.
	persist, raw, unclocked bool
}

var routes = map[string]*route{}

func init() {
	for name, fn := range map[string]func(*handler, *call) error{
		"get": (*handler).get, "list": (*handler).list, "listPage": (*handler).listPage,
		"getHead": (*handler).getHead, "append": (*handler).append, "deleteHead": (*handler).deleteHead,
		"acquireWriter": (*handler).acquireWriter, "renew": (*handler).renew,
		"release": (*handler).release, "listBlobReferences": (*handler).listBlobReferences,
		"deleteCheckpoints": (*handler).deleteCheckpoints, "forkFromCheckpoint": (*handler).fork,
		"deleteThread": (*handler).deleteThread, "threads": (*handler).threads,
		"loadThread": (*handler).loadThread, "saveThread": (*handler).saveThread, "import": (*handler).importBatch,
		"instanceGet": (*handler).instanceGet, "instanceUpsert": (*handler).instanceUpsert,
		"instanceDelete": (*handler).instanceDelete,
	} {
		routes[name] = &route{name: name, serve: fn}
	}
}

// bufPool holds the buffers of request bodies and replies; one larger than
// maxPooledBuffer (a rare huge checkpoint) is left to the collector.
var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

const maxPooledBuffer = 1 << 20

// ServeHTTP serves one request and records its metrics and log line.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, StreamsPrefix) {
		h.serveStreams(w, r)
		return
	}
	start := time.Now()
	name, ok := strings.CutPrefix(r.URL.Path, "/v1/")
	rt := routes[name]
	routeName := name
	if !ok || rt == nil {
		routeName = "unknown"
	}
	c := &call{w: w}
	w.Header()[HeaderRequestID] = c.requestID(r.Header[HeaderRequestID])
	if h.trace != nil {
		r, c.span = h.trace.startServer(r, routeName)
	}
	rm := h.metrics.route(routeName)
	rm.inFlight.Inc()
	status, code := h.serve(w, r, rt, c)
	rm.inFlight.Dec()
	h.record(r, c, rm, routeName, status, code, start)
}

// record ends a served request: its span, its metrics and its log line.
// A status of 0 is a reply the route streamed without writing a header.
func (h *handler) record(r *http.Request, c *call, rm *routeMetrics, routeName string, status int, code string, start time.Time) {
	if status == 0 {
		status = http.StatusOK
	}
	if c.span != nil {
		// The reply is whole: a live read's span ends with it.
		endServer(c.span, c, status, code)
	}
	d := time.Since(start)
	rm.observe(status, d)
	rm.failed(code)
	if status >= 500 {
		h.log.LogAttrs(r.Context(), slog.LevelWarn, "request failed", c.logAttrs(routeName, status, code, d)...)
	} else if h.log.Enabled(r.Context(), slog.LevelDebug) {
		h.log.LogAttrs(r.Context(), slog.LevelDebug, "request", c.logAttrs(routeName, status, code, d)...)
	}
}

// logAttrs are the attributes of a request's log record: the request id,
// the tenant ("" when the request named none it may use), the route, the
// HTTP status, the wire code of a failure and the duration in seconds;
// with tracing on, the trace and server span ids, which find the request's
// trace from its log line.
func (c *call) logAttrs(rpc string, status int, code string, d time.Duration) []slog.Attr {
	tenant := ""
	if c.ns != nil {
		tenant = c.ns.name
	}
	a := []slog.Attr{
		slog.String("request_id", c.id[0]), slog.String("tenant", tenant), slog.String("rpc", rpc),
		slog.Int("status", status), slog.String("code", code), slog.Float64("duration", d.Seconds()),
	}
	if c.err != nil {
		a = append(a, slog.String("err", c.err.Error()))
	}
	if c.span != nil {
		if sc := c.span.SpanContext(); sc.IsValid() {
			a = append(a, slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
		}
	}
	return a
}

// MaxRequestIDBytes is the longest X-Request-Id the server takes from a
// request; a longer one, or one with other bytes than [A-Za-z0-9] and
// -_.:=+/@, is replaced by one it makes.
const MaxRequestIDBytes = 128

// requestID returns the reply's X-Request-Id header: the request's own
// when it has exactly one that is a sane token (the same slice, so taking
// it costs nothing), else 16 hex digits of a random number, made in c's
// own storage so that the id costs no allocation of its own.
func (c *call) requestID(in []string) []string {
	if len(in) == 1 && saneRequestID(in[0]) {
		c.id[0] = in[0]
		return in
	}
	const hex = "0123456789abcdef"
	n := rand.Uint64()
	for i := range c.idBuf {
		c.idBuf[i] = hex[n&15]
		n >>= 4
	}
	// idBuf is written once, here, before the string is made, and never
	// after: the string is as immutable as any other.
	c.id[0] = unsafe.String(&c.idBuf[0], len(c.idBuf))
	return c.id[:]
}

func saneRequestID(id string) bool {
	if id == "" || len(id) > MaxRequestIDBytes {
		return false
	}
	for i := 0; i < len(id); i++ {
		b := id[i]
		if 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || strings.IndexByte("-_.:=+/@", b) >= 0 {
			continue
		}
		return false
	}
	return true
}

// serve handles one request and returns its status and, for a failure,
// its wire code (and sets c.err).
func (h *handler) serve(w http.ResponseWriter, r *http.Request, rt *route, c *call) (int, string) {
	buf := bufPool.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxPooledBuffer {
			bufPool.Put(buf)
		}
	}()
	buf.Reset()
	defer func() { h.unreserve(c, c.held) }()
	c.out.b = buf.Bytes()[:0]
	err := h.prepare(w, r, rt, c, buf)
	if err == nil {
		c.out.start()
		err = h.run(rt, c)
	}
	if err != nil {
		c.err = err
		code := errorCode(err)
		status := statusOf(code)
		if code == CodeOverloaded {
			w.Header()["Retry-After"] = retryAfter
		}
		c.out.start()
		c.out.str("code", code)
		c.out.str("message", clipMessage(err.Error()))
		writeReply(w, status, c.out.end())
		return status, code
	}
	if c.streamed {
		return 0, ""
	}
	reply := c.out.b
	if !c.done {
		reply = c.out.end()
	}
	writeReply(w, http.StatusOK, reply)
	return http.StatusOK, ""
}

// WriteError writes the protocol's error reply, {code, message} with
// status, for a server that serves other paths beside NewHandler's (the
// wrong method on /healthz), so that every failure it answers has the
// protocol's shape. The message is bounded as the handler's are.
func WriteError(w http.ResponseWriter, status int, code, message string) {
	var o object
	o.start()
	o.str("code", code)
	o.str("message", clipMessage(message))
	writeReply(w, status, o.end())
}

// writeReply writes a whole reply. A body of at most smallReply bytes
// gets its Content-Length from net/http, which counts a reply that ends
// within its first buffer without allocating (the header value and its
// slice, two allocations a request otherwise); a longer one declares it,
// so that it is not sent chunked.
func writeReply(w http.ResponseWriter, status int, body []byte) {
	hd := w.Header()
	hd["Content-Type"] = jsonContentType
	if len(body) > smallReply {
		hd["Content-Length"] = []string{strconv.Itoa(len(body))}
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// smallReply is net/http's buffer before it chunks a reply whose length
// was not declared (bufferBeforeChunkingSize in net/http/server.go).
const smallReply = 2048

var jsonContentType = []string{"application/json"}

// retryAfter is the Retry-After of an OVERLOADED reply, in seconds: long
// enough for the bodies in flight to be served, short enough that a
// client's retry is not much later than its first try.
var retryAfter = []string{"1"}

// prepare checks the request line and headers, resolves the namespace,
// and reads and decodes the body into c.
func (h *handler) prepare(w http.ResponseWriter, r *http.Request, rt *route, c *call, buf *bytes.Buffer) error {
	if rt == nil {
		return reqErr(CodeNotFound, "no method %s: the methods are POST /v1/<method>", driver.QuoteShort(r.URL.Path))
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		return reqErr(CodeMethodNotAllowed, "%s %s: use POST", driver.QuoteShort(r.Method), driver.QuoteShort(r.URL.Path))
	}
	if ct := r.Header.Get("Content-Type"); rt.raw && !isMedia(ct, "application/octet-stream") {
		return reqErr(CodeUnsupportedMedia, "Content-Type %s: want application/octet-stream", driver.QuoteShort(ct))
	} else if !rt.raw && !isJSON(ct) {
		return reqErr(CodeUnsupportedMedia, "Content-Type %s: want application/json", driver.QuoteShort(ct))
	}
	ns, err := h.namespaceOf(r)
	if err != nil {
		return err
	}
	c.ns = ns
	c.ctx = r.Context()
	if v := r.Header.Get(HeaderNow); v != "" { // only --dev gets here with one
		if c.now, err = millis(v); err != nil {
			return reqErr(CodeBadRequest, "%s %s is not a number of epoch milliseconds", HeaderNow, driver.QuoteShort(v))
		}
		c.setsClock = true
	}
	if key := r.Header.Get(HeaderIdempotencyKey); key != "" {
		if !driver.ValidOpToken(key) {
			return reqErr(CodeBadRequest, "%s must be 1 to %d characters of [A-Za-z0-9_-]", HeaderIdempotencyKey, driver.MaxOpTokenBytes)
		}
		c.tok = driver.OpTokenContext{Context: c.ctx, Token: key}
		c.ctx = &c.tok // inside the call, which is allocated anyway
	}
	if rt.raw {
		if r.ContentLength > h.opts.MaxBlobBytes {
			return reqErr(CodePayloadTooLarge, "the body is %d bytes, more than the limit of %d", r.ContentLength, h.opts.MaxBlobBytes)
		}
		c.stream = http.MaxBytesReader(w, r.Body, h.opts.MaxBlobBytes)
		c.in.r = r
		return nil
	}
	// The reply is built in the same buffer's storage after the body (or
	// from its start when the body is too large to pool), so it never
	// overwrites the body, of which a decoded transcript is a view.
	if err := h.readBody(w, r, c, buf); err != nil {
		return err
	}
	if rt.persist {
		return nil
	}
	if err := decodeRequest(c.body, &c.in); err != nil {
		return reqErr(CodeBadRequest, "%v", err)
	}
	return nil
}

// isJSON reports whether a Content-Type is application/json (parameters
// such as charset allowed). Requiring it keeps browsers from posting to a
// --dev server from a web page without a CORS preflight.
func isJSON(ct string) bool { return isMedia(ct, "application/json") }

// isMedia reports whether a Content-Type is the media type want.
func isMedia(ct, want string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.EqualFold(strings.TrimSpace(mt), want)
}

// run serves c in the span of its store call, when tracing is on.
func (h *handler) run(rt *route, c *call) error {
	if h.trace == nil {
		return h.runClocked(rt, c)
	}
	ctx, span := h.trace.startStore(c.ctx, rt.name)
	c.ctx = ctx
	err := h.runClocked(rt, c)
	endStore(span, err)
	return err
}

// runClocked serves c, holding the namespace's Dev clock when the request
// sets it.
func (h *handler) runClocked(rt *route, c *call) error {
	if !h.opts.Dev {
		return rt.serve(h, c)
	}
	if rt.unclocked {
		c.ctx = context.WithValue(c.ctx, unclockedKey{}, c)
		return rt.serve(h, c)
	}
	if !c.setsClock {
		c.ns.mu.RLock()
		defer c.ns.mu.RUnlock()
		return rt.serve(h, c)
	}
	c.ns.mu.Lock()
	defer c.ns.mu.Unlock()
	c.ns.now.Store(c.now)
	c.ns.nowSet.Store(true)
	defer c.ns.nowSet.Store(false)
	return rt.serve(h, c)
}

// namespaceOf authenticates r and returns its namespace, opening it on
// first use.
func (h *handler) namespaceOf(r *http.Request) (*namespace, error) {
	hd := r.Header
	if !h.opts.Dev {
		for _, name := range []string{HeaderNow, HeaderLeaseDuration, HeaderRenewAfter} {
			if hd.Get(name) != "" {
				return nil, reqErr(CodeBadRequest, "%s is accepted by a --dev server only", name)
			}
		}
		name, ok := h.authenticate(hd.Get("Authorization"))
		if !ok {
			return nil, reqErr(CodeUnauthorized, "a missing or unknown bearer token")
		}
		if v := hd.Get(HeaderNamespace); v != "" {
			if got, err := url.PathUnescape(v); err != nil || got != name {
				return nil, reqErr(CodeBadRequest, "%s names another namespace than the token's (it is accepted by a --dev server only)", HeaderNamespace)
			}
		}
		return h.open(name, h.opts.Lease, false)
	}
	name := DefaultNamespace
	if v := hd.Get(HeaderNamespace); v != "" {
		var err error
		if name, err = url.PathUnescape(v); err != nil {
			return nil, reqErr(CodeBadRequest, "%s: not URI-encoded", HeaderNamespace)
		}
	}
	if err := checkNamespace(name); err != nil {
		return nil, reqErr(CodeBadRequest, "%s: %v", HeaderNamespace, err)
	}
	if ns, ok := h.namespaces.Load(name); ok {
		return ns.(*namespace), nil
	}
	lease := h.opts.Lease
	for _, f := range []struct {
		header string
		dst    *time.Duration
	}{{HeaderLeaseDuration, &lease.LeaseDuration}, {HeaderRenewAfter, &lease.RenewAfter}} {
		if v := hd.Get(f.header); v != "" {
			ns, err := millis(v)
			if err != nil || ns < 0 {
				return nil, reqErr(CodeBadRequest, "%s %s is not a number of milliseconds ≥ 0", f.header, driver.QuoteShort(v))
			}
			*f.dst = time.Duration(ns)
		}
	}
	return h.open(name, lease, true)
}

// open returns the namespace name, opening it with lease when it is new.
func (h *handler) open(name string, lease ckptstore.Options, dev bool) (*namespace, error) {
	if ns, ok := h.namespaces.Load(name); ok {
		return ns.(*namespace), nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if ns, ok := h.namespaces.Load(name); ok {
		return ns.(*namespace), nil
	}
	ns := &namespace{name: name}
	if dev {
		lease.Now = ns.clock
	}
	resolved, err := lease.Resolve()
	if err != nil {
		return nil, reqErr(CodeBadRequest, "lease options: %v", err)
	}
	ns.lease = resolved
	t, err := h.b.Namespace(name, lease)
	if err != nil {
		if errors.Is(err, driver.ErrInvalidOptions) {
			return nil, reqErr(CodeBadRequest, "namespace %s: %v", driver.QuoteShort(name), err)
		}
		return nil, reqErr(CodeUnavailable, "opening namespace %s: %v", driver.QuoteShort(name), err)
	}
	ns.store, ns.inst, ns.pdriver, ns.streams = t.Store, t.Instances, t.Persistence, t.Streams
	h.namespaces.Store(name, ns)
	return ns, nil
}

// authenticate returns the namespace of the bearer token in auth. Every
// token is compared, by digest and in constant time, so the time taken
// tells nothing about which token (if any) matched.
func (h *handler) authenticate(auth string) (string, bool) {
	scheme, tok, ok := strings.Cut(auth, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return "", false
	}
	d := sha256.Sum256([]byte(tok))
	found := -1
	for i := range h.tokens {
		if subtle.ConstantTimeCompare(d[:], h.tokens[i].digest[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return "", false
	}
	return h.tokens[found].namespace, true
}

// errorCode is the wire code of err.
func errorCode(err error) string {
	if c := pdriver.Code(err); c != "" {
		return c
	}
	if c := ckptstore.Code(err); c != "" {
		return c
	}
	if c := streams.Code(err); c != "" {
		return c // the stream export and import routes
	}
	var re *requestError
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &re):
		return re.code
	case errors.As(err, &tooLarge):
		return CodePayloadTooLarge
	case errors.Is(err, errors.ErrUnsupported):
		return CodeUnsupported
	case errors.Is(err, driver.ErrInvalidOptions):
		return CodeBadRequest
	case errors.Is(err, ckptstore.ErrNotReplicated):
		// The write is on the primary, maybe not on a replica: a retry
		// with its key settles it, as for UNAVAILABLE, but an operator
		// counts these apart (replicas behind or down).
		return CodeNotReplicated
	}
	// A store that cannot be reached, a timeout, a cancelled request: the
	// outcome of a write is unknown, and a retry with the same
	// Idempotency-Key is what resolves it.
	return CodeUnavailable
}
