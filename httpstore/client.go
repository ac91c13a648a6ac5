package httpstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base32"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	mathrand "math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/persist"
)

// ClientOptions configure NewClient.
type ClientOptions struct {
	// Token is the bearer token ("" against a --dev server).
	Token string
	// Namespace names the namespace on a --dev server: any name, a fresh
	// name is an empty store. "" is the server's default namespace.
	Namespace string
	// Lease is for a --dev server only: the lease duration and renew-after
	// of the namespace (taken when this client's request creates it) and
	// the clock (Now) of every request. A server outside --dev refuses
	// them with BAD_REQUEST; leave Lease zero there.
	Lease ckptstore.Options
	// HTTPClient sends the requests; nil means a client of its own with
	// keep-alive connections (up to 256 idle per host).
	HTTPClient *http.Client
	// TLSConfig is the TLS configuration of the client's own transport
	// for an https:// server: RootCAs to trust a private CA instead of the
	// system's (see CertPool), Certificates for a client certificate. nil
	// means Go's defaults. It goes with a nil HTTPClient only: a caller's
	// own client carries its own TLS settings.
	TLSConfig *tls.Config
	// Retries is how many times a request is sent again after a network
	// error or a 503 (reads, and writes, which all carry an
	// Idempotency-Key); 0 means DefaultRetries, a negative value none.
	Retries int
	// RetryBackoff is the wait before the first retry, doubled (with
	// jitter) before each next one up to 2 s; 0 means 20 ms.
	RetryBackoff time.Duration
	// Propagator writes the trace context of a call's context into its
	// requests when that context carries an OpenTelemetry span, so the
	// server's spans join the caller's trace; nil means W3C Trace Context
	// (traceparent, tracestate). A context without a span adds nothing.
	Propagator propagation.TextMapPropagator
}

// maxRetryAfter bounds, in seconds, the wait a server's Retry-After can
// impose on one retry: a misconfigured server cannot park a call for long.
const maxRetryAfter = 10

// DefaultRetries is the retry count of a zero ClientOptions.Retries.
const DefaultRetries = 5

// Client is a store served by a ckptserver (or any NewHandler): the
// portable store (which checks every input once, here, before it is sent)
// over the driver that speaks the protocol, and the instance store of the
// same namespace. Contract errors come back as their sentinels. It is safe
// for concurrent use.
type Client struct {
	*ckptstore.Store
	c      *client
	pstore *persist.Store
}

// client is the driver.Store of a Client: each method is one call of the
// protocol, retried on a lost reply with the same Idempotency-Key.
type client struct {
	base    string // ".../v1/"
	opts    ClientOptions
	hc      *http.Client
	rt      http.RoundTripper   // hc's transport when hc is the client's own (see send)
	urls    map[string]*url.URL // base+method of each method, parsed once; shared read-only
	headers http.Header         // the headers of every request
	retries int
	backoff time.Duration
}

var _ driver.Store = (*client)(nil)

// NewClient returns a client of the server at baseURL (http:// or
// https://, without the /v1 path). It does no I/O. Invalid lease options
// fail with an error wrapping driver.ErrInvalidOptions.
func NewClient(baseURL string, opts ClientOptions) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("httpstore: %q is not an http:// or https:// URL", baseURL)
	}
	if _, err := opts.Lease.Resolve(); err != nil {
		return nil, err
	}
	if opts.Namespace != "" {
		if err := checkNamespace(opts.Namespace); err != nil {
			return nil, fmt.Errorf("httpstore: %w", err)
		}
	}
	if opts.TLSConfig != nil && opts.HTTPClient != nil {
		return nil, fmt.Errorf("%w: httpstore: TLSConfig and HTTPClient exclude each other (set the TLS config on HTTPClient's transport)", driver.ErrInvalidOptions)
	}
	c := &client{base: strings.TrimSuffix(u.String(), "/") + "/v1/", opts: opts, hc: opts.HTTPClient,
		retries: opts.Retries, backoff: opts.RetryBackoff, headers: http.Header{}}
	if c.hc == nil {
		t := NewTransport()
		if opts.TLSConfig != nil {
			t.TLSClientConfig = opts.TLSConfig.Clone()
		}
		c.hc, c.rt = &http.Client{Transport: t}, t
	}
	c.urls = make(map[string]*url.URL, len(routes))
	for name := range routes {
		if c.urls[name], err = url.Parse(c.base + name); err != nil {
			return nil, fmt.Errorf("httpstore: %q is not an http:// or https:// URL", baseURL)
		}
	}
	if c.retries == 0 {
		c.retries = DefaultRetries
	}
	if c.retries < 0 {
		c.retries = 0
	}
	if c.backoff <= 0 {
		c.backoff = 20 * time.Millisecond
	}
	c.headers["Content-Type"] = jsonContentType
	if opts.Token != "" {
		c.headers["Authorization"] = []string{"Bearer " + opts.Token}
	}
	if opts.Namespace != "" {
		c.headers[HeaderNamespace] = []string{url.PathEscape(opts.Namespace)}
	}
	if d := opts.Lease.LeaseDuration; d != 0 {
		c.headers[HeaderLeaseDuration] = []string{string(driver.AppendMillis(nil, int64(d)))}
	}
	if d := opts.Lease.RenewAfter; d != 0 {
		c.headers[HeaderRenewAfter] = []string{string(driver.AppendMillis(nil, int64(d)))}
	}
	return &Client{Store: ckptstore.New(c), c: c, pstore: newPersistence(c)}, nil
}

// NewTransport returns the transport of a Client without HTTPClient:
// http.DefaultTransport's settings with room for 256 idle keep-alive
// connections per host, so that many concurrent callers reuse connections
// instead of dialling.
func NewTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 1024
	t.MaxIdleConnsPerHost = 256
	t.IdleConnTimeout = 90 * time.Second
	return t
}

// CertPool returns a pool of the PEM certificates in pemCerts (a CA
// bundle file's bytes), for TLSConfig.RootCAs. It fails when pemCerts
// holds no certificate, so a wrong file is found at start, not at the
// first call.
func CertPool(pemCerts []byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pemCerts) {
		return nil, fmt.Errorf("%w: httpstore: no PEM certificate in the CA bundle", driver.ErrInvalidOptions)
	}
	return pool, nil
}

// Instances returns the instance store of the client's namespace.
func (c *Client) Instances() *ckptstore.InstanceStore {
	return ckptstore.NewInstanceStore(instances{c.c})
}

var bodyPool = sync.Pool{New: func() any { return new(object) }}

// A request body is built in a buffer from bodyPool and sent from it,
// read through a *bytes.Reader: net/http writes the headers and a body of
// a type it knows is in memory in one write (one packet, one read for the
// server), where a body of its own type, one that would say when the
// transport is done with a pooled buffer, costs a second write and a copy
// buffer as large as the body. The transport may still read a body after
// RoundTrip returned (a server that answers before reading all of it, as
// a 413 does), so the buffer goes back to the pool only after a 200: the
// handler answers 200 only after it has read the whole body (prepare reads
// it before any route runs), so every byte of it has left the transport.
// When any attempt had another reply it is left to the collector; the
// attempts of one call share it.

// replyReader reads one field of a reply object (see readObject).
type replyReader = func(r *driver.JSONReader, name []byte) error

// do sends one call: method, the body built by build, and reads the reply
// object with read (nil: a reply whose fields the call does not need). A
// write carries an Idempotency-Key, the same on each retry: the caller's op
// token when it gave one (token), so that its own retries of the call are
// recognised too, else a fresh one.
func (c *client) do(ctx context.Context, method string, write bool, token string, build func(o *object) error, read replyReader) error {
	o := bodyPool.Get().(*object)
	o.start()
	var err error
	if build != nil {
		err = build(o)
	}
	o.b = o.end()
	if err != nil {
		bodyPool.Put(o) // never sent
		return err
	}
	key := ""
	if write {
		key = token
		if key == "" {
			key = newKey()
		}
	}
	whole := true // every attempt's body was read whole
	err = c.attempts(ctx, func() (bool, error) {
		status, retry, err := c.sendStatus(ctx, method, o.b, key, read)
		whole = whole && status == http.StatusOK
		return retry, err
	})
	if whole && cap(o.b) <= maxPooledBuffer {
		bodyPool.Put(o)
	}
	return err
}

// attempts calls try until it succeeds, fails for good (retry false), or
// has been retried c.retries times, waiting a jittered backoff that
// doubles up to 2 s between attempts; a done ctx ends the wait with the
// last attempt's error.
func (c *client) attempts(ctx context.Context, try func() (retry bool, err error)) error {
	wait := c.backoff
	for attempt := 0; ; attempt++ {
		retry, err := try()
		if err == nil || !retry || attempt >= c.retries || ctx.Err() != nil {
			return err
		}
		d := wait/2 + time.Duration(mathrand.Int64N(int64(wait)))
		wait = min(2*wait, 2*time.Second)
		if e, ok := errors.AsType[*Error](err); ok && e.RetryAfter > d {
			d = e.RetryAfter // an overloaded server said when to come back
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// keyRNGs are ChaCha8 generators, each seeded from crypto/rand: a key
// from one is as unpredictable as rand.Text's (a lease's owner token is
// its acquire's key) without a getrandom call per write, which was a
// percent of an append.
var keyRNGs = sync.Pool{New: func() any {
	var seed [32]byte
	_, _ = rand.Read(seed[:]) // never fails (crypto/rand's contract)
	return mathrand.NewChaCha8(seed)
}}

var keyEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// newKey returns a fresh Idempotency-Key: 128 random bits in 26 base32
// characters, an op token.
func newKey() string {
	g := keyRNGs.Get().(*mathrand.ChaCha8)
	var b [16]byte
	_, _ = g.Read(b[:])
	keyRNGs.Put(g)
	return keyEncoding.EncodeToString(b[:])
}

// send makes one attempt; retry says whether another may succeed (a
// network error or 503).
func (c *client) send(ctx context.Context, method string, body []byte, key string, read replyReader) (bool, error) {
	_, retry, err := c.sendStatus(ctx, method, body, key, read)
	return retry, err
}

// sendStatus is send that also returns the reply's status (0 when none
// came).
func (c *client) sendStatus(ctx context.Context, method string, body []byte, key string, read replyReader) (int, bool, error) {
	req, err := c.request(ctx, method, io.NopCloser(bytes.NewReader(body)))
	if err != nil {
		return 0, false, err
	}
	req.ContentLength = int64(len(body))
	for k, v := range c.headers {
		req.Header[k] = v
	}
	if key != "" {
		req.Header[HeaderIdempotencyKey] = []string{key}
	}
	if now := c.opts.Lease.Now; now != nil {
		req.Header[HeaderNow] = []string{string(driver.AppendMillis(nil, now().UnixNano()))}
	}
	c.injectTrace(ctx, req.Header)
	resp, err := c.roundTrip(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, false, ctx.Err()
		}
		return 0, retryableNetError(err), fmt.Errorf("httpstore: %s: %w", method, err)
	}
	defer resp.Body.Close()
	buf := bufPool.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxPooledBuffer {
			bufPool.Put(buf)
		}
	}()
	buf.Reset()
	if _, err := buf.ReadFrom(resp.Body); err != nil {
		if ctx.Err() != nil {
			return 0, false, ctx.Err()
		}
		return 0, true, fmt.Errorf("httpstore: %s: reading the reply: %w", method, err)
	}
	if resp.StatusCode == http.StatusOK {
		// A field's fault is the first error read returns; the body's
		// syntax is readObject's.
		var fieldErr error
		err := readObject(buf.Bytes(), func(r *driver.JSONReader, name []byte) error {
			if read == nil {
				return r.Skip()
			}
			if err := read(r, name); err != nil && r.Err() == nil && fieldErr == nil {
				fieldErr = err
			}
			return nil
		})
		if err != nil {
			return resp.StatusCode, false, fmt.Errorf("httpstore: %s: %w", method, err)
		}
		return resp.StatusCode, false, fieldErr
	}
	return resp.StatusCode, resp.StatusCode == http.StatusServiceUnavailable, replyError(resp, buf.Bytes())
}

// replyError is the Error of a reply that is not 200: its code and message
// when the body is the error object, else INTERNAL with the body's text,
// and a 503's Retry-After.
func replyError(resp *http.Response, body []byte) *Error {
	e := &Error{Status: resp.StatusCode, Code: CodeInternal, Message: strings.TrimSpace(string(body))}
	if resp.StatusCode == http.StatusServiceUnavailable {
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
			e.RetryAfter = time.Duration(min(s, maxRetryAfter)) * time.Second
		}
	}
	var code, msg string
	if readObject(body, func(r *driver.JSONReader, name []byte) error {
		switch string(name) {
		case "code":
			code, _, _ = r.String("/code", errBadReply)
		case "message":
			msg, _, _ = r.String("/message", errBadReply)
		default:
			return r.Skip()
		}
		return nil
	}) == nil {
		if code != "" {
			e.Code = code
		}
		e.Message = msg
	}
	return e
}

// injectTrace writes the trace context of ctx into hd when ctx carries a
// valid span context; without one it costs a context lookup and no
// allocation.
func (c *client) injectTrace(ctx context.Context, hd http.Header) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return
	}
	prop := c.opts.Propagator
	if prop == nil {
		prop = propagation.TraceContext{}
	}
	prop.Inject(ctx, propagation.HeaderCarrier(hd))
}

// request is a POST of method with body, its URL parsed once.
func (c *client) request(ctx context.Context, method string, body io.ReadCloser) (*http.Request, error) {
	u := c.urls[method]
	if u == nil {
		return http.NewRequestWithContext(ctx, http.MethodPost, c.base+method, body)
	}
	req := &http.Request{Method: http.MethodPost, URL: u, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: make(http.Header, len(c.headers)+2), Body: body, Host: strings.TrimSuffix(u.Host, ":")}
	return req.WithContext(ctx), nil
}

// roundTrip sends req. On the client's own transport it skips
// http.Client.Do, whose redirect following (a protocol of POSTs has none),
// cookie jar and header copying the protocol does not use; its errors are
// wrapped as Do wraps them, so a failure reads and retries the same.
func (c *client) roundTrip(req *http.Request) (*http.Response, error) {
	if c.rt == nil {
		return c.hc.Do(req)
	}
	resp, err := c.rt.RoundTrip(req)
	if err != nil {
		return nil, &url.Error{Op: "Post", URL: req.URL.String(), Err: err}
	}
	return resp, nil
}

// field returns a replyReader that reads the field name with read and
// skips the others.
func field(name string, read func(r *driver.JSONReader) error) replyReader {
	return func(r *driver.JSONReader, n []byte) error {
		if string(n) != name {
			return r.Skip()
		}
		return read(r)
	}
}

var errBadReply = errors.New("httpstore: a malformed reply")

// retryableNetError reports whether a transport error may go away: every
// network error is, but a URL or TLS configuration that cannot work is not,
// and neither is a certificate that failed to verify (ours of the server's,
// or the server's of ours): the same certificate fails the same way on
// every attempt, so the caller hears of it at once.
func retryableNetError(err error) bool {
	if certificateError(err) {
		return false
	}
	var ne net.Error
	var oe *net.OpError
	return errors.As(err, &ne) || errors.As(err, &oe) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		strings.Contains(err.Error(), "connection reset") || strings.Contains(err.Error(), "server closed")
}

// certificateError reports whether err is a TLS certificate that did not
// verify: the server's, by this client (an unknown authority, a name that
// does not match, an expired certificate), or this client's, by the server
// (a TLS alert it sent).
func certificateError(err error) bool {
	if _, ok := errors.AsType[*tls.CertificateVerificationError](err); ok {
		return true
	}
	if _, ok := errors.AsType[x509.UnknownAuthorityError](err); ok {
		return true
	}
	if _, ok := errors.AsType[x509.HostnameError](err); ok {
		return true
	}
	if _, ok := errors.AsType[x509.CertificateInvalidError](err); ok {
		return true
	}
	// The server's alert comes as a *net.OpError "remote error" around
	// crypto/tls's unexported alert type, known by its text: the alerts of
	// RFC 8446 (6.2) that name a certificate.
	oe, ok := errors.AsType[*net.OpError](err)
	if !ok || oe.Op != "remote error" || oe.Err == nil {
		return false
	}
	switch oe.Err.Error() {
	case "tls: bad certificate", "tls: unsupported certificate", "tls: revoked certificate", "tls: expired certificate",
		"tls: unknown certificate", "tls: unknown certificate authority", "tls: certificate required":
		return true
	}
	return false
}

// Get implements driver.Store.
func (c *client) Get(ctx context.Context, id string) (*ckptstore.Checkpoint, error) {
	var cp *ckptstore.Checkpoint
	err := c.do(ctx, "get", false, "", func(o *object) error { o.str("id", id); return nil },
		field("checkpoint", func(r *driver.JSONReader) (err error) { cp, err = r.Checkpoint("/checkpoint"); return err }))
	if err != nil {
		return nil, err
	}
	return cp, nil
}

// List implements driver.Store.
func (c *client) List(ctx context.Context, threadID string) ([]*ckptstore.Checkpoint, error) {
	var cps []*ckptstore.Checkpoint
	err := c.do(ctx, "list", false, "", func(o *object) error { o.str("threadId", threadID); return nil },
		field("checkpoints", func(r *driver.JSONReader) (err error) { cps, err = readCheckpoints(r, "/checkpoints"); return err }))
	if err != nil {
		return nil, err
	}
	return cps, nil
}

// ListPage implements driver.Store.
func (c *client) ListPage(ctx context.Context, threadID string, p driver.Page) ([]*ckptstore.Checkpoint, string, error) {
	opt := ckptstore.ListOptions{Limit: p.Limit, Reverse: p.Reverse}
	if p.After != nil {
		opt.After = driver.EncodeCursor(*p.After) // cursors are the same in every store
	}
	var cps []*ckptstore.Checkpoint
	var next string
	err := c.do(ctx, "listPage", false, "", func(o *object) error {
		o.str("threadId", threadID)
		if opt.After != "" {
			o.str("after", opt.After)
		}
		o.int("limit", int64(opt.Limit))
		o.bool("reverse", opt.Reverse)
		return nil
	}, func(r *driver.JSONReader, name []byte) (err error) {
		switch string(name) {
		case "checkpoints":
			cps, err = readCheckpoints(r, "/checkpoints")
		case "next":
			next, _, err = r.String("/next", errBadReply)
		default:
			err = r.Skip()
		}
		return err
	})
	if err != nil {
		return nil, "", err
	}
	if cps == nil {
		cps = []*ckptstore.Checkpoint{} // an empty page, as every store returns it
	}
	return cps, next, nil
}

// Head implements driver.Store.
func (c *client) GetHead(ctx context.Context, threadID string) (string, error) {
	var head string
	err := c.do(ctx, "getHead", false, "", func(o *object) error { o.str("threadId", threadID); return nil },
		field("headId", func(r *driver.JSONReader) (err error) { head, _, err = r.String("/headId", errBadReply); return err }))
	if err != nil {
		return "", err
	}
	return head, nil
}

// Append implements driver.Store.
func (c *client) Append(ctx context.Context, cp *ckptstore.Checkpoint, expectedHeadID string, w ckptstore.Writer, token string) error {
	return c.do(ctx, "append", true, token, func(o *object) error {
		if err := o.checkpoint("checkpoint", cp); err != nil {
			return err
		}
		o.strOrNull("expectedHeadId", expectedHeadID)
		o.writer("writer", w)
		return nil
	}, nil)
}

// DeleteHead implements driver.Store.
func (c *client) DeleteHead(ctx context.Context, threadID, checkpointID string, w ckptstore.Writer, token string) error {
	return c.do(ctx, "deleteHead", true, token, func(o *object) error {
		o.str("threadId", threadID)
		o.str("checkpointId", checkpointID)
		o.writer("writer", w)
		return nil
	}, nil)
}

// AcquireWriter implements driver.Store. The lease renews and releases
// through this client.
func (c *client) AcquireWriter(ctx context.Context, threadID, token string) (driver.Lease, error) {
	var w ckptstore.Writer
	var exp, ra int64
	var errs [5]error
	errs[3], errs[4] = errors.New("no expiresAt"), errors.New("no renewAfterMs") // until read
	err := c.do(ctx, "acquireWriter", true, token, func(o *object) error { o.str("threadId", threadID); return nil },
		func(r *driver.JSONReader, name []byte) error {
			switch string(name) {
			case "threadId":
				w.ThreadID, _, errs[0] = r.String("/threadId", errBadReply)
			case "ownerToken":
				w.OwnerToken, _, errs[1] = r.String("/ownerToken", errBadReply)
			case "fence":
				w.Fence, _, errs[2] = r.Int("/fence")
			case "expiresAt":
				exp, errs[3] = r.Millis("/expiresAt")
			case "renewAfterMs":
				ra, errs[4] = r.Millis("/renewAfterMs")
			default:
				return r.Skip()
			}
			return nil
		})
	if err != nil {
		return driver.Lease{}, err
	}
	if err := errors.Join(errs[:]...); err != nil {
		return driver.Lease{}, fmt.Errorf("%w: the lease: %w", errBadReply, err)
	}
	return driver.Lease{Writer: w, ExpiresAt: time.Unix(0, exp), RenewAfter: time.Duration(ra)}, nil
}

// RenewWriter implements driver.Store.
func (c *client) Renew(ctx context.Context, w ckptstore.Writer) (time.Time, error) {
	ns, found := int64(0), false
	err := c.do(ctx, "renew", true, "", func(o *object) error { o.writer("writer", w); return nil },
		field("expiresAt", func(r *driver.JSONReader) (err error) { ns, err = r.Millis("/expiresAt"); found = true; return err }))
	if err == nil && !found {
		err = fmt.Errorf("%w: no expiresAt", errBadReply)
	}
	if err != nil {
		return time.Time{}, err
	}
	return time.Unix(0, ns), nil
}

// Release implements driver.Store.
func (c *client) Release(ctx context.Context, w ckptstore.Writer) error {
	return c.do(ctx, "release", true, "", func(o *object) error { o.writer("writer", w); return nil }, nil)
}

// ListBlobReferences implements driver.Store: one call, whose reply holds
// every reference.
func (c *client) ListBlobReferences(ctx context.Context) iter.Seq2[ckptstore.BlobRef, error] {
	return func(yield func(ckptstore.BlobRef, error) bool) {
		refs, err := c.listBlobReferences(ctx)
		if err != nil {
			yield(ckptstore.BlobRef{}, err)
			return
		}
		for _, r := range refs {
			if !yield(r, nil) {
				return
			}
		}
	}
}

// listBlobReferences is the one call of ListBlobReferences.
func (c *client) listBlobReferences(ctx context.Context) ([]ckptstore.BlobRef, error) {
	out := []ckptstore.BlobRef{}
	err := c.do(ctx, "listBlobReferences", false, "", nil, field("references", func(r *driver.JSONReader) error {
		var first error
		_, err := r.Array("/references", func(i int) error {
			var ref ckptstore.BlobRef
			err := r.Object("/references/"+strconv.Itoa(i), func(name []byte) (err error) {
				switch string(name) {
				case "key":
					ref.Key, _, err = r.String("/key", errBadReply)
				case "references":
					ref.References, _, err = r.Int("/references")
				default:
					err = r.Skip()
				}
				if first == nil && r.Err() == nil {
					first = err
				}
				return r.Err()
			})
			if first == nil {
				first = err
			}
			out = append(out, ref)
			return r.Err()
		})
		if err == nil {
			err = first
		}
		if err != nil {
			// Only a reply that arrived can be malformed: a transport
			// error or a typed reply error passes through c.do unwrapped.
			err = fmt.Errorf("%w: references: %w", errBadReply, err)
		}
		return err
	}))
	if err != nil {
		return nil, err
	}
	return out, nil
}

// DeleteCheckpoints implements driver.Store.
func (c *client) DeleteCheckpoints(ctx context.Context, threadID string, keep int, w ckptstore.Writer) ([]string, error) {
	var ids []string
	err := c.do(ctx, "deleteCheckpoints", true, "", func(o *object) error {
		o.str("threadId", threadID)
		o.int("keep", int64(keep))
		o.writer("writer", w)
		return nil
	}, field("deleted", func(r *driver.JSONReader) (err error) { ids, err = r.Strings("/deleted", errBadReply); return err }))
	if err != nil {
		return nil, err
	}
	if ids == nil {
		ids = []string{} // nothing deleted, as every store returns it
	}
	return ids, nil
}

// ForkFromCheckpoint implements driver.Store.
func (c *client) ForkFromCheckpoint(ctx context.Context, fk driver.Fork) (*ckptstore.Checkpoint, error) {
	in := fk.ForkInput
	var cp *ckptstore.Checkpoint
	err := c.do(ctx, "forkFromCheckpoint", true, fk.OpToken, func(o *object) error {
		o.str("sourceThreadId", in.SourceThreadID)
		o.str("sourceCheckpointId", in.SourceCheckpointID)
		o.str("destinationThreadId", in.DestinationThreadID)
		o.str("destinationCheckpointId", in.DestinationCheckpointID)
		if err := o.float("createdAt", in.CreatedAt); err != nil {
			return err
		}
		o.writer("writer", in.Writer)
		return nil
	}, field("checkpoint", func(r *driver.JSONReader) (err error) { cp, err = r.Checkpoint("/checkpoint"); return err }))
	if err != nil {
		return nil, err
	}
	return cp, nil
}

// DeleteThread implements driver.Store.
func (c *client) DeleteThread(ctx context.Context, threadID string, w ckptstore.Writer) (int, error) {
	var n int64
	err := c.do(ctx, "deleteThread", true, "", func(o *object) error {
		o.str("threadId", threadID)
		o.writer("writer", w)
		return nil
	}, field("deleted", func(r *driver.JSONReader) (err error) { n, _, err = r.Int("/deleted"); return err }))
	return int(n), err
}

// Threads implements driver.Store.
func (c *client) Threads(ctx context.Context, p driver.ThreadPage) ([]string, string, error) {
	after, limit := "", p.Limit
	if p.After != "" {
		after = driver.EncodeThreadCursor(p.After)
	}
	var ids []string
	var next string
	err := c.do(ctx, "threads", false, "", func(o *object) error {
		if after != "" {
			o.str("after", after)
		}
		o.int("limit", int64(limit))
		return nil
	}, func(r *driver.JSONReader, name []byte) (err error) {
		switch string(name) {
		case "threads":
			ids, err = r.Strings("/threads", errBadReply)
		case "next":
			next, _, err = r.String("/next", errBadReply)
		default:
			err = r.Skip()
		}
		return err
	})
	if err != nil {
		return nil, "", err
	}
	return ids, next, nil
}

// LoadThread implements driver.Store.
func (c *client) LoadThread(ctx context.Context, threadID string) (json.RawMessage, error) {
	var m []byte
	err := c.do(ctx, "loadThread", false, "", func(o *object) error { o.str("threadId", threadID); return nil },
		field("messages", func(r *driver.JSONReader) (err error) { m, _, err = r.Padded(); return err }))
	if err != nil {
		return nil, err
	}
	if t := bytes.TrimLeft(m, " \t\r\n"); len(t) == 0 || t[0] != '[' {
		return nil, fmt.Errorf("%w: messages is not an array", errBadReply)
	}
	return m, nil
}

// SaveThread implements driver.Store.
func (c *client) SaveThread(ctx context.Context, threadID string, messages json.RawMessage) error {
	return c.do(ctx, "saveThread", true, "", func(o *object) error {
		o.str("threadId", threadID)
		o.raw("messages", messages)
		return nil
	}, nil)
}

// Import implements driver.Store.
func (c *client) Import(ctx context.Context, b ckptstore.ImportBatch) (int, error) {
	var n int64
	err := c.do(ctx, "import", true, "", func(o *object) error {
		o.str("threadId", b.ThreadID)
		if err := o.checkpoints("checkpoints", b.Checkpoints); err != nil {
			return err
		}
		o.bool("setHead", b.SetHead)
		o.strOrNull("head", b.Head)
		if b.Transcript != nil {
			o.raw("transcript", b.Transcript)
		}
		o.writer("writer", b.Writer)
		return nil
	}, field("written", func(r *driver.JSONReader) (err error) { n, _, err = r.Int("/written"); return err }))
	return int(n), err
}

// instances is the instance store of a Client's namespace.
type instances struct{ c *client }

// Get implements driver.InstanceStore.
func (s instances) Get(ctx context.Context, key string) (*ckptstore.InstanceRecord, error) {
	var rec *ckptstore.InstanceRecord
	err := s.c.do(ctx, "instanceGet", false, "", func(o *object) error { o.str("key", key); return nil },
		field("record", func(r *driver.JSONReader) (err error) {
			if rec, err = r.InstanceRecord("/record"); err != nil {
				err = fmt.Errorf("%w: %w", errBadReply, err)
			}
			return err
		}))
	if err != nil {
		return nil, err
	}
	return rec, nil
}

// Upsert implements driver.InstanceStore.
func (s instances) Upsert(ctx context.Context, rec *ckptstore.InstanceRecord) error {
	b, err := rec.MarshalJSON()
	if err != nil {
		return err
	}
	return s.c.do(ctx, "instanceUpsert", true, "", func(o *object) error { o.raw("record", b); return nil }, nil)
}

// Delete implements driver.InstanceStore.
func (s instances) Delete(ctx context.Context, key string) error {
	return s.c.do(ctx, "instanceDelete", true, "", func(o *object) error { o.str("key", key); return nil }, nil)
}
