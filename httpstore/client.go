package httpstore

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	"github.com/ckptstore/ckptstore/precheck"
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

// Client is a store served by a ckptserver (or any NewHandler). It
// satisfies ckptstore.Store, Pruner, Forker, LeaseKeeper and the optional
// capabilities (Transcripts, ThreadDeleter, Pager, ThreadLister, Importer);
// a method whose capability the server's store lacks fails with an *Error
// of code UNSUPPORTED that wraps errors.ErrUnsupported (Capabilities tells
// which there are). Contract errors come back as their sentinels. It is
// safe for concurrent use.
type Client struct {
	base    string // ".../v1/"
	opts    ClientOptions
	hc      *http.Client
	headers http.Header // the headers of every request
	retries int
	backoff time.Duration
}

var _ ckptstore.FullStore = (*Client)(nil)

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
	c := &Client{base: strings.TrimSuffix(u.String(), "/") + "/v1/", opts: opts, hc: opts.HTTPClient,
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
	return c, nil
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
func (c *Client) Instances() ckptstore.InstanceStore { return instances{c} }

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
// reply object into fields. A write carries a fresh Idempotency-Key, the
// same on each retry.
func (c *Client) do(ctx context.Context, method string, write bool, build func(o *object) error) (fields, error) {
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
		// The caller's op token, when it chose one, is the key: its own
		// retries of the call are then recognised too.
		if t, ok := driver.OpToken(ctx); ok {
			key = t
		} else {
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
func (c *Client) send(ctx context.Context, method string, pb *pooledBody, body []byte, key string) (fields, bool, error) {
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

// Get implements ckptstore.Store.
func (c *Client) Get(ctx context.Context, id string) (*ckptstore.Checkpoint, error) {
	if err := precheck.Read(ctx, "checkpoint id", id); err != nil {
		return nil, err
	}
	f, err := c.do(ctx, "get", false, func(o *object) error { o.str("id", id); return nil })
	if err != nil {
		return nil, err
	}
	return f.checkpoint("checkpoint")
}

// List implements ckptstore.Store.
func (c *Client) List(ctx context.Context, threadID string) ([]*ckptstore.Checkpoint, error) {
	if err := precheck.Read(ctx, "thread id", threadID); err != nil {
		return nil, err
	}
	f, err := c.do(ctx, "list", false, func(o *object) error { o.str("threadId", threadID); return nil })
	if err != nil {
		return nil, err
	}
	return f.checkpoints("checkpoints")
}

// ListPage implements ckptstore.Pager.
func (c *Client) ListPage(ctx context.Context, threadID string, opt ckptstore.ListOptions) ([]*ckptstore.Checkpoint, string, error) {
	if _, err := precheck.ListPage(ctx, threadID, opt); err != nil {
		return nil, "", err
	}
	f, err := c.do(ctx, "listPage", false, func(o *object) error {
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

// Head implements ckptstore.Store.
func (c *Client) Head(ctx context.Context, threadID string) (string, error) {
	if err := precheck.Read(ctx, "thread id", threadID); err != nil {
		return "", err
	}
	f, err := c.do(ctx, "getHead", false, func(o *object) error { o.str("threadId", threadID); return nil })
	if err != nil {
		return "", err
	}
	return f.str("headId", errBadReply)
}

// Append implements ckptstore.Store.
func (c *Client) Append(ctx context.Context, cp *ckptstore.Checkpoint, expectedHeadID string, w ckptstore.Writer) error {
	if err := precheck.Append(ctx, cp, expectedHeadID, w); err != nil {
		return err
	}
	_, err := c.do(ctx, "append", true, func(o *object) error {
		if err := o.checkpoint("checkpoint", cp); err != nil {
			return err
		}
		o.strOrNull("expectedHeadId", expectedHeadID)
		o.writer("writer", w)
		return nil
	})
	return err
}

// DeleteHead implements ckptstore.Store.
func (c *Client) DeleteHead(ctx context.Context, threadID, checkpointID string, w ckptstore.Writer) error {
	if err := precheck.DeleteHead(ctx, threadID, checkpointID, w); err != nil {
		return err
	}
	_, err := c.do(ctx, "deleteHead", true, func(o *object) error {
		o.str("threadId", threadID)
		o.str("checkpointId", checkpointID)
		o.writer("writer", w)
		return nil
	})
	return err
}

// AcquireWriter implements ckptstore.Store. The lease renews and releases
// through this client.
func (c *Client) AcquireWriter(ctx context.Context, threadID string) (*ckptstore.Lease, error) {
	if err := precheck.AcquireWriter(ctx, threadID); err != nil {
		return nil, err
	}
	f, err := c.do(ctx, "acquireWriter", true, func(o *object) error { o.str("threadId", threadID); return nil })
	if err != nil {
		return nil, err
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
		return nil, fmt.Errorf("%w: the lease: %v", errBadReply, err)
	}
	return ckptstore.NewLease(w, time.Unix(0, exp), time.Duration(ra), c), nil
}

// millis reads a number field of milliseconds, in nanoseconds.
func (f fields) millis(name string) (int64, error) {
	ns, err := driver.ParseMillis(string(f[name]))
	if err != nil {
		return 0, fmt.Errorf("%w: %s: %v", errBadReply, name, err)
	}
	return ns, nil
}

// RenewWriter implements ckptstore.LeaseKeeper.
func (c *Client) RenewWriter(ctx context.Context, w ckptstore.Writer) (time.Time, error) {
	if err := precheck.RenewWriter(ctx, w); err != nil {
		return time.Time{}, err
	}
	f, err := c.do(ctx, "renewWriter", true, func(o *object) error { o.writer("writer", w); return nil })
	if err != nil {
		return time.Time{}, err
	}
	ns, err := f.millis("expiresAt")
	if err != nil {
		return time.Time{}, err
	}
	return time.Unix(0, ns), nil
}

// ReleaseWriter implements ckptstore.LeaseKeeper.
func (c *Client) ReleaseWriter(ctx context.Context, w ckptstore.Writer) error {
	ok, err := precheck.ReleaseWriter(ctx, w)
	if err != nil || !ok {
		return err
	}
	_, err = c.do(ctx, "releaseWriter", true, func(o *object) error { o.writer("writer", w); return nil })
	return err
}

// BlobReferences implements ckptstore.Store.
func (c *Client) BlobReferences(ctx context.Context) ([]ckptstore.BlobRef, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := c.do(ctx, "listBlobReferences", false, nil)
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

// DeleteCheckpoints implements ckptstore.Pruner.
func (c *Client) DeleteCheckpoints(ctx context.Context, threadID string, keep int, w ckptstore.Writer) ([]string, error) {
	if err := precheck.Prune(ctx, threadID, keep, w); err != nil {
		return nil, err
	}
	f, err := c.do(ctx, "deleteCheckpoints", true, func(o *object) error {
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

// ForkFromCheckpoint implements ckptstore.Forker.
func (c *Client) ForkFromCheckpoint(ctx context.Context, in ckptstore.ForkInput) (*ckptstore.Checkpoint, error) {
	if err := precheck.Fork(ctx, in); err != nil {
		return nil, err
	}
	f, err := c.do(ctx, "forkFromCheckpoint", true, func(o *object) error {
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

// DeleteThread implements ckptstore.ThreadDeleter.
func (c *Client) DeleteThread(ctx context.Context, threadID string, w ckptstore.Writer) (int, error) {
	if err := precheck.DeleteThread(ctx, threadID, w); err != nil {
		return 0, err
	}
	f, err := c.do(ctx, "deleteThread", true, func(o *object) error {
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

// Threads implements ckptstore.ThreadLister.
func (c *Client) Threads(ctx context.Context, after string, limit int) ([]string, string, error) {
	if _, err := precheck.Threads(ctx, after, limit); err != nil {
		return nil, "", err
	}
	f, err := c.do(ctx, "threads", false, func(o *object) error {
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

// LoadThread implements ckptstore.Transcripts.
func (c *Client) LoadThread(ctx context.Context, threadID string) (json.RawMessage, error) {
	if err := precheck.LoadThread(ctx, threadID); err != nil {
		return nil, err
	}
	f, err := c.do(ctx, "loadThread", false, func(o *object) error { o.str("threadId", threadID); return nil })
	if err != nil {
		return nil, err
	}
	m := f["messages"]
	if t := bytes.TrimLeft(m, " \t\r\n"); len(t) == 0 || t[0] != '[' {
		return nil, fmt.Errorf("%w: messages is not an array", errBadReply)
	}
	return m, nil
}

// SaveThread implements ckptstore.Transcripts.
func (c *Client) SaveThread(ctx context.Context, threadID string, messages json.RawMessage) error {
	if err := precheck.SaveThread(ctx, threadID, messages); err != nil {
		return err
	}
	_, err := c.do(ctx, "saveThread", true, func(o *object) error {
		o.str("threadId", threadID)
		o.raw("messages", messages)
		return nil
	})
	return err
}

// Import implements ckptstore.Importer.
func (c *Client) Import(ctx context.Context, b ckptstore.ImportBatch) (int, error) {
	if err := precheck.Import(ctx, b); err != nil {
		return 0, err
	}
	f, err := c.do(ctx, "import", true, func(o *object) error {
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
	f, err := c.do(ctx, "capabilities", false, nil)
	if err != nil {
		return nil, err
	}
	return f.strings("capabilities", errBadReply)
}

// instances is the instance store of a Client's namespace.
type instances struct{ c *Client }

// Get implements ckptstore.InstanceStore.
func (s instances) Get(ctx context.Context, key string) (*ckptstore.InstanceRecord, error) {
	if err := precheck.InstanceKey(ctx, key); err != nil {
		return nil, err
	}
	f, err := s.c.do(ctx, "instanceGet", false, func(o *object) error { o.str("key", key); return nil })
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

// Upsert implements ckptstore.InstanceStore.
func (s instances) Upsert(ctx context.Context, rec *ckptstore.InstanceRecord) error {
	if err := precheck.InstanceUpsert(ctx, rec); err != nil {
		return err
	}
	b, err := rec.MarshalJSON()
	if err != nil {
		return err
	}
	_, err = s.c.do(ctx, "instanceUpsert", true, func(o *object) error { o.raw("record", b); return nil })
	return err
}

// Delete implements ckptstore.InstanceStore.
func (s instances) Delete(ctx context.Context, key string) error {
	if err := precheck.InstanceKey(ctx, key); err != nil {
		return err
	}
	_, err := s.c.do(ctx, "instanceDelete", true, func(o *object) error { o.str("key", key); return nil })
	return err
}
