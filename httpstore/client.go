package httpstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	mathrand "math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
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
	// Retries is how many times a request is sent again after a network
	// error or a 503 (reads, and writes, which all carry an
	// Idempotency-Key); 0 means DefaultRetries, a negative value none.
	Retries int
	// RetryBackoff is the wait before the first retry, doubled (with
	// jitter) before each next one up to 2 s; 0 means 20 ms.
	RetryBackoff time.Duration
}

// DefaultRetries is the retry count of a zero ClientOptions.Retries.
const DefaultRetries = 5

// Client is a store served by a ckptserver (or any NewHandler): the
// portable store (which checks every input once, here, before it is sent)
// over the driver that speaks the protocol, and the instance store of the
// same namespace. Contract errors come back as their sentinels. It is safe
// for concurrent use.
type Client struct {
	*ckptstore.Portable
	c *client
}

// client is the driver.Store of a Client: each method is one call of the
// protocol, retried on a lost reply with the same Idempotency-Key.
type client struct {
	base    string // ".../v1/"
	opts    ClientOptions
	hc      *http.Client
	headers http.Header // the headers of every request
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
			return nil, fmt.Errorf("httpstore: %v", err)
		}
	}
	c := &client{base: strings.TrimSuffix(u.String(), "/") + "/v1/", opts: opts, hc: opts.HTTPClient,
		retries: opts.Retries, backoff: opts.RetryBackoff, headers: http.Header{}}
	if c.hc == nil {
		c.hc = &http.Client{Transport: NewTransport()}
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
	return &Client{Portable: ckptstore.New(c), c: c}, nil
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

// Instances returns the instance store of the client's namespace.
func (c *Client) Instances() *ckptstore.PortableInstances {
	return ckptstore.NewInstanceStore(instances{c.c})
}

var bodyPool = sync.Pool{New: func() any { return new(object) }}

// pooledBody is a request body from bodyPool, shared by the attempts of one
// call. The transport may still read an attempt's body after RoundTrip
// returned (a server that answers before reading all of it, as a 413
// does), and says it is done by closing it; the buffer goes back to the
// pool when the call and every attempt's body are done with it.
type pooledBody struct {
	o    *object
	refs atomic.Int32
}

func (p *pooledBody) release() {
	if p.refs.Add(-1) == 0 && cap(p.o.b) <= maxPooledBuffer {
		bodyPool.Put(p.o)
	}
}

// attemptBody is one attempt's reader of a pooledBody.
type attemptBody struct {
	*bytes.Reader
	p    *pooledBody
	once sync.Once
}

func (b *attemptBody) Close() error {
	b.once.Do(b.p.release)
	return nil
}

// do sends one call: method, the body built by build, and decodes the
// reply object into fields. A write carries an Idempotency-Key, the same
// on each retry: the caller's op token when it gave one (token), so that
// its own retries of the call are recognised too, else a fresh one.
func (c *client) do(ctx context.Context, method string, write bool, token string, build func(o *object) error) (fields, error) {
	o := bodyPool.Get().(*object)
	pb := &pooledBody{o: o}
	pb.refs.Store(1)
	defer pb.release()
	o.start()
	if build != nil {
		if err := build(o); err != nil {
			return nil, err
		}
	}
	body := o.end()
	o.b = body
	key := ""
	if write {
		key = token
		if key == "" {
			key = rand.Text()
		}
	}
	wait := c.backoff
	for attempt := 0; ; attempt++ {
		f, retry, err := c.send(ctx, method, pb, body, key)
		if !retry || attempt >= c.retries || ctx.Err() != nil {
			return f, err
		}
		d := wait/2 + time.Duration(mathrand.Int64N(int64(wait)))
		wait = min(2*wait, 2*time.Second)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
	}
}

// send makes one attempt; retry says whether another may succeed (a
// network error or 503).
func (c *client) send(ctx context.Context, method string, pb *pooledBody, body []byte, key string) (fields, bool, error) {
	pb.refs.Add(1)
	rd := &attemptBody{Reader: bytes.NewReader(body), p: pb}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+method, rd)
	if err != nil {
		rd.Close()
		return nil, false, err
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
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
		return nil, retryableNetError(err), fmt.Errorf("httpstore: %s: %w", method, err)
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
			return nil, false, ctx.Err()
		}
		return nil, true, fmt.Errorf("httpstore: %s: reading the reply: %w", method, err)
	}
	f, err := decodeFields(buf.Bytes())
	if resp.StatusCode == http.StatusOK {
		if err != nil {
			return nil, false, fmt.Errorf("httpstore: %s: %v", method, err)
		}
		return f, false, nil
	}
	e := &Error{Status: resp.StatusCode, Code: CodeInternal, Message: strings.TrimSpace(buf.String())}
	if err == nil {
		if code, _ := f.str("code", errBadReply); code != "" {
			e.Code = code
		}
		e.Message, _ = f.str("message", errBadReply)
	}
	return nil, resp.StatusCode == http.StatusServiceUnavailable, e
}

var errBadReply = errors.New("httpstore: a malformed reply")

// retryableNetError reports whether a transport error may go away: every
// network error is, but a URL or TLS configuration that cannot work is not.
func retryableNetError(err error) bool {
	var ne net.Error
	var oe *net.OpError
	return errors.As(err, &ne) || errors.As(err, &oe) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		strings.Contains(err.Error(), "connection reset") || strings.Contains(err.Error(), "server closed")
}

// Get implements driver.Store.
func (c *client) Get(ctx context.Context, id string) (*ckptstore.Checkpoint, error) {
	f, err := c.do(ctx, "get", false, "", func(o *object) error { o.str("id", id); return nil })
	if err != nil {
		return nil, err
	}
	return f.checkpoint("checkpoint")
}

// List implements driver.Store.
func (c *client) List(ctx context.Context, threadID string) ([]*ckptstore.Checkpoint, error) {
	f, err := c.do(ctx, "list", false, "", func(o *object) error { o.str("threadId", threadID); return nil })
	if err != nil {
		return nil, err
	}
	return f.checkpoints("checkpoints")
}

// ListPage implements driver.Store.
func (c *client) ListPage(ctx context.Context, threadID string, p driver.Page) ([]*ckptstore.Checkpoint, string, error) {
	opt := ckptstore.ListOptions{Limit: p.Limit, Reverse: p.Reverse}
	if p.After != nil {
		opt.After = driver.EncodeCursor(*p.After) // cursors are the same in every store
	}
	f, err := c.do(ctx, "listPage", false, "", func(o *object) error {
		o.str("threadId", threadID)
		if opt.After != "" {
			o.str("after", opt.After)
		}
		o.int("limit", int64(opt.Limit))
		o.bool("reverse", opt.Reverse)
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	cps, err := f.checkpoints("checkpoints")
	if err != nil {
		return nil, "", err
	}
	next, err := f.str("next", errBadReply)
	return cps, next, err
}

// GetHead implements driver.Store.
func (c *client) GetHead(ctx context.Context, threadID string) (string, error) {
	f, err := c.do(ctx, "getHead", false, "", func(o *object) error { o.str("threadId", threadID); return nil })
	if err != nil {
		return "", err
	}
	return f.str("headId", errBadReply)
}

// Append implements driver.Store.
func (c *client) Append(ctx context.Context, cp *ckptstore.Checkpoint, expectedHeadID string, w ckptstore.Writer, token string) error {
	_, err := c.do(ctx, "append", true, token, func(o *object) error {
		if err := o.checkpoint("checkpoint", cp); err != nil {
			return err
		}
		o.strOrNull("expectedHeadId", expectedHeadID)
		o.writer("writer", w)
		return nil
	})
	return err
}

// DeleteHead implements driver.Store.
func (c *client) DeleteHead(ctx context.Context, threadID, checkpointID string, w ckptstore.Writer, token string) error {
	_, err := c.do(ctx, "deleteHead", true, token, func(o *object) error {
		o.str("threadId", threadID)
		o.str("checkpointId", checkpointID)
		o.writer("writer", w)
		return nil
	})
	return err
}

// AcquireWriter implements driver.Store.
func (c *client) AcquireWriter(ctx context.Context, threadID, token string) (driver.Lease, error) {
	f, err := c.do(ctx, "acquireWriter", true, token, func(o *object) error { o.str("threadId", threadID); return nil })
	if err != nil {
		return driver.Lease{}, err
	}
	var w ckptstore.Writer
	var errs [5]error
	w.ThreadID, errs[0] = f.str("threadId", errBadReply)
	w.OwnerToken, errs[1] = f.str("ownerToken", errBadReply)
	w.Fence, errs[2] = f.int("fence")
	var exp, ra int64
	exp, errs[3] = f.millis("expiresAt")
	ra, errs[4] = f.millis("renewAfterMs")
	if err := errors.Join(errs[:]...); err != nil {
		return driver.Lease{}, fmt.Errorf("%w: the lease: %v", errBadReply, err)
	}
	return driver.Lease{Writer: w, ExpiresAt: time.Unix(0, exp), RenewAfter: time.Duration(ra)}, nil
}

// millis reads a number field of milliseconds, in nanoseconds.
func (f fields) millis(name string) (int64, error) {
	ns, err := driver.ParseMillis(string(f[name]))
	if err != nil {
		return 0, fmt.Errorf("%w: %s: %v", errBadReply, name, err)
	}
	return ns, nil
}

// Renew implements driver.Store.
func (c *client) Renew(ctx context.Context, w ckptstore.Writer) (time.Time, error) {
	f, err := c.do(ctx, "renewWriter", true, "", func(o *object) error { o.writer("writer", w); return nil })
	if err != nil {
		return time.Time{}, err
	}
	ns, err := f.millis("expiresAt")
	if err != nil {
		return time.Time{}, err
	}
	return time.Unix(0, ns), nil
}

// Release implements driver.Store.
func (c *client) Release(ctx context.Context, w ckptstore.Writer) error {
	_, err := c.do(ctx, "releaseWriter", true, "", func(o *object) error { o.writer("writer", w); return nil })
	return err
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

func (c *client) listBlobReferences(ctx context.Context) ([]ckptstore.BlobRef, error) {
	f, err := c.do(ctx, "listBlobReferences", false, "", nil)
	if err != nil {
		return nil, err
	}
	var refs []struct {
		BlobKey string `json:"blobKey"`
		Count   int64  `json:"count"`
	}
	if err := json.Unmarshal(f["references"], &refs); err != nil {
		return nil, fmt.Errorf("%w: references: %v", errBadReply, err)
	}
	out := make([]ckptstore.BlobRef, len(refs))
	for i, r := range refs {
		out[i] = ckptstore.BlobRef{Key: r.BlobKey, References: r.Count}
	}
	return out, nil
}

// DeleteCheckpoints implements driver.Store.
func (c *client) DeleteCheckpoints(ctx context.Context, threadID string, keep int, w ckptstore.Writer) ([]string, error) {
	f, err := c.do(ctx, "deleteCheckpoints", true, "", func(o *object) error {
		o.str("threadId", threadID)
		o.int("keep", int64(keep))
		o.writer("writer", w)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return f.strings("deleted", errBadReply)
}

// ForkFromCheckpoint implements driver.Store.
func (c *client) ForkFromCheckpoint(ctx context.Context, fk driver.Fork) (*ckptstore.Checkpoint, error) {
	in := fk.ForkInput
	f, err := c.do(ctx, "forkFromCheckpoint", true, fk.OpToken, func(o *object) error {
		o.str("sourceThreadId", in.SourceThreadID)
		o.str("sourceCheckpointId", in.SourceCheckpointID)
		o.str("destinationThreadId", in.DestinationThreadID)
		o.str("destinationCheckpointId", in.DestinationCheckpointID)
		o.float("createdAt", in.CreatedAt)
		o.writer("writer", in.Writer)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return f.checkpoint("checkpoint")
}

// DeleteThread implements driver.Store.
func (c *client) DeleteThread(ctx context.Context, threadID string, w ckptstore.Writer) (int, error) {
	f, err := c.do(ctx, "deleteThread", true, "", func(o *object) error {
		o.str("threadId", threadID)
		o.writer("writer", w)
		return nil
	})
	if err != nil {
		return 0, err
	}
	n, err := f.int("deleted")
	return int(n), err
}

// Threads implements driver.Store.
func (c *client) Threads(ctx context.Context, p driver.ThreadPage) ([]string, string, error) {
	after, limit := "", p.Limit
	if p.After != "" {
		after = driver.EncodeThreadCursor(p.After)
	}
	f, err := c.do(ctx, "threads", false, "", func(o *object) error {
		if after != "" {
			o.str("after", after)
		}
		o.int("limit", int64(limit))
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	ids, err := f.strings("threads", errBadReply)
	if err != nil {
		return nil, "", err
	}
	next, err := f.str("next", errBadReply)
	return ids, next, err
}

// LoadThread implements driver.Store.
func (c *client) LoadThread(ctx context.Context, threadID string) (json.RawMessage, error) {
	f, err := c.do(ctx, "loadThread", false, "", func(o *object) error { o.str("threadId", threadID); return nil })
	if err != nil {
		return nil, err
	}
	m := f["messages"]
	if t := bytes.TrimLeft(m, " \t\r\n"); len(t) == 0 || t[0] != '[' {
		return nil, fmt.Errorf("%w: messages is not an array", errBadReply)
	}
	return m, nil
}

// SaveThread implements driver.Store.
func (c *client) SaveThread(ctx context.Context, threadID string, messages json.RawMessage) error {
	_, err := c.do(ctx, "saveThread", true, "", func(o *object) error {
		o.str("threadId", threadID)
		o.raw("messages", messages)
		return nil
	})
	return err
}

// Import implements driver.Store.
func (c *client) Import(ctx context.Context, b ckptstore.ImportBatch) (int, error) {
	f, err := c.do(ctx, "import", true, "", func(o *object) error {
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
	})
	if err != nil {
		return 0, err
	}
	n, err := f.int("written")
	return int(n), err
}

// Capabilities returns the optional capabilities of the server's store:
// of "prune", "fork", "transcripts", "deleteThread", "listPage", "threads"
// and "import".
func (c *Client) Capabilities(ctx context.Context) ([]string, error) {
	f, err := c.c.do(ctx, "capabilities", false, "", nil)
	if err != nil {
		return nil, err
	}
	return f.strings("capabilities", errBadReply)
}

// instances is the instance store of a Client's namespace.
type instances struct{ c *client }

// Get implements driver.InstanceStore.
func (s instances) Get(ctx context.Context, key string) (*ckptstore.InstanceRecord, error) {
	f, err := s.c.do(ctx, "instanceGet", false, "", func(o *object) error { o.str("key", key); return nil })
	if err != nil {
		return nil, err
	}
	if f.isNull("record") {
		return nil, nil
	}
	rec := new(ckptstore.InstanceRecord)
	if err := rec.UnmarshalJSON(f["record"]); err != nil {
		return nil, fmt.Errorf("%w: %v", errBadReply, err)
	}
	return rec, nil
}

// Upsert implements driver.InstanceStore.
func (s instances) Upsert(ctx context.Context, rec *ckptstore.InstanceRecord) error {
	b, err := rec.MarshalJSON()
	if err != nil {
		return err
	}
	_, err = s.c.do(ctx, "instanceUpsert", true, "", func(o *object) error { o.raw("record", b); return nil })
	return err
}

// Delete implements driver.InstanceStore.
func (s instances) Delete(ctx context.Context, key string) error {
	_, err := s.c.do(ctx, "instanceDelete", true, "", func(o *object) error { o.str("key", key); return nil })
	return err
}
