package httpstore

// The Go client of the persistence and lock routes: a persist.Store whose
// stores speak the wire. Each method runs the pure checks of its portable
// counterpart (persist.Check…) before anything is sent, so that it fails
// in the same order with the same errors, and a done context sends
// nothing; the server runs them again, and its driver's state checks.
// Invariants: reads and idempotent writes are retried on a lost reply or a
// 503 (every write of the contract is idempotent, and commitBatch carries
// one Idempotency-Key across its retries); a blob put is retried only when
// its body can be replayed; the lock protocol is persist.Locks, over the
// /v1/locks/* steps.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/ckptstore/ckptstore/contract"
	"github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/persist"
	pdriver "github.com/ckptstore/ckptstore/persist/driver"
)

// Persistence returns the persistence stores of the client's namespace
// (TanStack's runs, generationRuns, interrupts, metadata, artifacts, blobs
// and locks); messages are the Client's LoadThread and SaveThread. Errors
// of the contract unwrap to their sentinels (errors.Is(err,
// persist.ErrInvalidID)); a server without persistence, or without a
// bucket for the blob methods, answers errors.ErrUnsupported.
func (c *Client) Persistence() *persist.Store { return c.pstore }

// maxClientLockWait is the longest wait of one acquire the client asks
// for; a third of the lease bounds it too.
const maxClientLockWait = 20 * time.Second

func newPersistence(c *client) *persist.Store {
	p := pc{c}
	now := c.opts.Lease.Now
	if now == nil {
		now = time.Now
	}
	steps := &lockSteps{c: c, now: now}
	if d := c.opts.Lease.LeaseDuration; d > 0 {
		steps.lease.Store(int64(d))
	}
	return &persist.Store{
		Runs: runStore{p}, GenerationRuns: genStore{p}, Interrupts: interruptStore{p},
		Metadata: metadataStore{p}, Artifacts: artifactStore{p}, Blobs: blobStore{p},
		Locks: persist.NewLocks(steps, now, maxClientLockWait),
	}
}

// pc makes the calls of the persistence routes.
type pc struct{ c *client }

// call sends one JSON call and reads the reply's members with read
// (false: skipped). write gives the call an Idempotency-Key: token, or a
// fresh one kept across the retries.
func (p pc) call(ctx context.Context, method string, write bool, token string, build func(o *object) error, read func(x *pdriver.Reader, name string) bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return p.c.do(ctx, method, write, token, build, func(r *driver.JSONReader, name []byte) error {
		if read == nil {
			return r.Skip()
		}
		x := pdriver.Reader{JSON: r}
		if !read(&x, string(name)) {
			return r.Skip()
		}
		if err := x.Err(); err != nil {
			return fmt.Errorf("%w: %s: %w", errBadReply, method, err)
		}
		return nil
	})
}

// fetch makes one call and returns its reply's member at, a JSON pointer
// ("/run"), one record (read reads it) or null.
func fetch[T any](p pc, ctx context.Context, method string, write bool, build func(o *object) error, at string, read func(x *pdriver.Reader, at string) *T) (*T, error) {
	var rec *T
	err := p.call(ctx, method, write, "", build, func(x *pdriver.Reader, n string) bool {
		if n != at[1:] {
			return false
		}
		rec = read(x, at)
		return true
	})
	return rec, err
}

// fetchList is fetch for a read whose member at is a list of records.
func fetchList[T any](p pc, ctx context.Context, method string, build func(o *object) error, at string, read func(x *pdriver.Reader, at string) []*T) ([]*T, error) {
	recs := []*T{}
	err := p.call(ctx, method, false, "", build, func(x *pdriver.Reader, n string) bool {
		if n != at[1:] {
			return false
		}
		recs = read(x, at)
		return true
	})
	if err != nil {
		return nil, err
	}
	return recs, nil
}

// fetchByID is fetch for a read of one id, the member what, which it
// checks first.
func fetchByID[T any](p pc, ctx context.Context, method, what, id, at string, read func(x *pdriver.Reader, at string) *T) (*T, error) {
	if err := checked(ctx, persist.CheckID(what, id)); err != nil {
		return nil, err
	}
	return fetch(p, ctx, method, false, idBody(what, id), at, read)
}

// listByID is fetchList for a read of one id, the member what, which it
// checks first.
func listByID[T any](p pc, ctx context.Context, method, what, id, at string, read func(x *pdriver.Reader, at string) []*T) ([]*T, error) {
	if err := checked(ctx, persist.CheckID(what, id)); err != nil {
		return nil, err
	}
	return fetchList(p, ctx, method, idBody(what, id), at, read)
}

// sendByID makes a write of one id, the member what, which it checks
// first; the reply says nothing.
func sendByID(p pc, ctx context.Context, method, what, id string) error {
	if err := checked(ctx, persist.CheckID(what, id)); err != nil {
		return err
	}
	return p.call(ctx, method, true, "", idBody(what, id), nil)
}

// checked is a method's checks in its portable counterpart's order: ctx,
// then check, the method's own. The checks are pure, so computing check
// first changes nothing but the work a done ctx wastes.
func checked(ctx context.Context, check error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return check
}

func idBody(name, id string) func(o *object) error {
	return func(o *object) error { o.str(name, id); return nil }
}

// sendUpdate sends a run store's update, runId and patch, after ctx and
// check (its portable counterpart's) pass.
func sendUpdate[P json.Marshaler](p pc, ctx context.Context, method, runID string, patch P, check func(string, P) error) error {
	if err := checked(ctx, check(runID, patch)); err != nil {
		return err
	}
	return p.call(ctx, method, true, "", func(o *object) error {
		o.str("runId", runID)
		b, err := patch.MarshalJSON()
		o.raw("patch", b)
		return err
	}, nil)
}

// runStore is persist.RunStore over the wire.
type runStore struct{ p pc }

// CreateOrResume implements persist.RunStore.
func (s runStore) CreateOrResume(ctx context.Context, in persist.RunStart) (*persist.RunRecord, error) {
	if err := checked(ctx, persist.CheckRunStart(&in)); err != nil {
		return nil, err
	}
	rec, err := fetch(s.p, ctx, "runs/createOrResume", true, func(o *object) error {
		o.str("runId", in.RunID)
		o.str("threadId", in.ThreadID)
		o.int("startedAt", in.StartedAt)
		o.str("status", string(in.Status))
		return nil
	}, "/run", pdriver.Read[persist.RunRecord])
	if err == nil && rec == nil {
		err = fmt.Errorf("%w: no run", errBadReply)
	}
	return rec, err
}

// Update implements persist.RunStore.
func (s runStore) Update(ctx context.Context, runID string, patch persist.RunPatch) error {
	return sendUpdate(s.p, ctx, "runs/update", runID, patch, persist.CheckRunUpdate)
}

// Get implements persist.RunStore.
func (s runStore) Get(ctx context.Context, runID string) (*persist.RunRecord, error) {
	return fetchByID(s.p, ctx, "runs/get", "runId", runID, "/run", pdriver.Read[persist.RunRecord])
}

// FindActiveRun implements persist.RunStore.
func (s runStore) FindActiveRun(ctx context.Context, threadID string) (*persist.RunRecord, error) {
	return fetchByID(s.p, ctx, "runs/findActiveRun", "threadId", threadID, "/run", pdriver.Read[persist.RunRecord])
}

// ListByThread implements persist.RunStore.
func (s runStore) ListByThread(ctx context.Context, threadID string) ([]*persist.RunRecord, error) {
	return listByID(s.p, ctx, "runs/listByThread", "threadId", threadID, "/runs", pdriver.ReadList[persist.RunRecord])
}

// ListReclaimable implements persist.RunStore.
func (s runStore) ListReclaimable(ctx context.Context, q persist.ReclaimQuery) ([]*persist.RunRecord, error) {
	if err := checked(ctx, persist.CheckReclaimQuery(q)); err != nil {
		return nil, err
	}
	return fetchList(s.p, ctx, "runs/listReclaimable", func(o *object) error {
		o.int("now", q.Now)
		o.int("ttlMs", q.TTLMs)
		return nil
	}, "/runs", pdriver.ReadList[persist.RunRecord])
}

// genStore is persist.GenerationRunStore over the wire.
type genStore struct{ p pc }

// CreateOrResume implements persist.GenerationRunStore.
func (s genStore) CreateOrResume(ctx context.Context, in persist.GenerationRunStart) (*persist.GenerationRunRecord, error) {
	if err := checked(ctx, persist.CheckGenerationRunStart(&in)); err != nil {
		return nil, err
	}
	rec, err := fetch(s.p, ctx, "generationRuns/createOrResume", true, func(o *object) error {
		o.str("runId", in.RunID)
		o.str("threadId", in.ThreadID)
		o.str("activity", in.Activity)
		o.str("provider", in.Provider)
		o.str("model", in.Model)
		o.int("startedAt", in.StartedAt)
		o.str("status", string(in.Status))
		return nil
	}, "/run", pdriver.Read[persist.GenerationRunRecord])
	if err == nil && rec == nil {
		err = fmt.Errorf("%w: no run", errBadReply)
	}
	return rec, err
}

// Update implements persist.GenerationRunStore.
func (s genStore) Update(ctx context.Context, runID string, patch persist.GenerationRunPatch) error {
	return sendUpdate(s.p, ctx, "generationRuns/update", runID, patch, persist.CheckGenerationRunUpdate)
}

// Get implements persist.GenerationRunStore.
func (s genStore) Get(ctx context.Context, runID string) (*persist.GenerationRunRecord, error) {
	return fetchByID(s.p, ctx, "generationRuns/get", "runId", runID, "/run", pdriver.Read[persist.GenerationRunRecord])
}

// FindLatestForThread implements persist.GenerationRunStore.
func (s genStore) FindLatestForThread(ctx context.Context, threadID string) (*persist.GenerationRunRecord, error) {
	return fetchByID(s.p, ctx, "generationRuns/findLatestForThread", "threadId", threadID, "/run", pdriver.Read[persist.GenerationRunRecord])
}

// interruptStore is persist.InterruptStore over the wire.
type interruptStore struct{ p pc }

// Create implements persist.InterruptStore.
func (s interruptStore) Create(ctx context.Context, in persist.NewInterrupt) error {
	if err := checked(ctx, persist.CheckNewInterrupt(in)); err != nil {
		return err
	}
	return s.p.call(ctx, "interrupts/create", true, "", func(o *object) error {
		o.name("record")
		o.b = appendNewInterrupt(o.b, in)
		return nil
	}, nil)
}

// Resolve implements persist.InterruptStore.
func (s interruptStore) Resolve(ctx context.Context, interruptID string, response json.RawMessage) error {
	if err := checked(ctx, persist.CheckResolve(interruptID, response)); err != nil {
		return err
	}
	return s.p.call(ctx, "interrupts/resolve", true, "", func(o *object) error {
		o.str("interruptId", interruptID)
		if response != nil {
			o.raw("response", response)
		}
		return nil
	}, nil)
}

// Cancel implements persist.InterruptStore.
func (s interruptStore) Cancel(ctx context.Context, interruptID string) error {
	return sendByID(s.p, ctx, "interrupts/cancel", "interruptId", interruptID)
}

// CommitBatch implements persist.InterruptStore. The batch's op token
// (ckptstore.WithOpToken, else a fresh one) is its Idempotency-Key on every
// retry, so a retry after a lost reply succeeds.
func (s interruptStore) CommitBatch(ctx context.Context, entries []persist.InterruptCommitEntry) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	token, err := contract.CheckOpToken(ctx, persist.ErrInvalidEntry)
	if err != nil {
		return err
	}
	if err := persist.CheckCommitBatch(entries); err != nil {
		return err
	}
	if len(entries) == 0 {
		return nil
	}
	return s.p.call(ctx, "interrupts/commitBatch", true, token, func(o *object) error {
		o.name("entries")
		o.b = appendList(o.b, entries, appendCommitEntry)
		return nil
	}, nil)
}

// Get implements persist.InterruptStore.
func (s interruptStore) Get(ctx context.Context, interruptID string) (*persist.InterruptRecord, error) {
	return fetchByID(s.p, ctx, "interrupts/get", "interruptId", interruptID, "/interrupt", pdriver.Read[persist.InterruptRecord])
}

// List implements persist.InterruptStore.
func (s interruptStore) List(ctx context.Context, threadID string) ([]*persist.InterruptRecord, error) {
	return listByID(s.p, ctx, "interrupts/list", "threadId", threadID, "/interrupts", pdriver.ReadList[persist.InterruptRecord])
}

// ListPending implements persist.InterruptStore.
func (s interruptStore) ListPending(ctx context.Context, threadID string) ([]*persist.InterruptRecord, error) {
	return listByID(s.p, ctx, "interrupts/listPending", "threadId", threadID, "/interrupts", pdriver.ReadList[persist.InterruptRecord])
}

// ListByRun implements persist.InterruptStore.
func (s interruptStore) ListByRun(ctx context.Context, runID string) ([]*persist.InterruptRecord, error) {
	return listByID(s.p, ctx, "interrupts/listByRun", "runId", runID, "/interrupts", pdriver.ReadList[persist.InterruptRecord])
}

// ListPendingByRun implements persist.InterruptStore.
func (s interruptStore) ListPendingByRun(ctx context.Context, runID string) ([]*persist.InterruptRecord, error) {
	return listByID(s.p, ctx, "interrupts/listPendingByRun", "runId", runID, "/interrupts", pdriver.ReadList[persist.InterruptRecord])
}

// metadataStore is persist.MetadataStore over the wire.
type metadataStore struct{ p pc }

func metaBody(namespace, key string) func(o *object) error {
	return func(o *object) error {
		o.str("namespace", namespace)
		o.str("key", key)
		return nil
	}
}

// Get implements persist.MetadataStore.
func (s metadataStore) Get(ctx context.Context, namespace, key string) (json.RawMessage, error) {
	if err := checked(ctx, persist.CheckMetadataKey(namespace, key)); err != nil {
		return nil, err
	}
	var v json.RawMessage
	err := s.p.call(ctx, "metadata/get", false, "", metaBody(namespace, key), func(x *pdriver.Reader, n string) bool {
		if n != "value" {
			return false
		}
		x.Raw(&v) // null is absent
		return true
	})
	if err != nil {
		return nil, err
	}
	return v, nil
}

// Set implements persist.MetadataStore.
func (s metadataStore) Set(ctx context.Context, namespace, key string, value json.RawMessage) error {
	if err := checked(ctx, persist.CheckMetadataKey(namespace, key)); err != nil {
		return err
	}
	if err := persist.CheckMetadataValue(value); err != nil {
		return err
	}
	return s.p.call(ctx, "metadata/set", true, "", func(o *object) error {
		o.str("namespace", namespace)
		o.str("key", key)
		o.raw("value", value)
		return nil
	}, nil)
}

// Delete implements persist.MetadataStore.
func (s metadataStore) Delete(ctx context.Context, namespace, key string) error {
	if err := checked(ctx, persist.CheckMetadataKey(namespace, key)); err != nil {
		return err
	}
	return s.p.call(ctx, "metadata/delete", true, "", metaBody(namespace, key), nil)
}

// artifactStore is persist.ArtifactStore over the wire.
type artifactStore struct{ p pc }

// Save implements persist.ArtifactStore.
func (s artifactStore) Save(ctx context.Context, rec *persist.ArtifactRecord) error {
	// Not checked: CheckArtifact dereferences rec, which a done ctx must
	// not reach when it is nil.
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := persist.CheckArtifact(rec); err != nil {
		return err
	}
	return s.p.call(ctx, "artifacts/save", true, "", func(o *object) error {
		o.name("record")
		o.b = appendArtifact(o.b, rec)
		return nil
	}, nil)
}

// Get implements persist.ArtifactStore.
func (s artifactStore) Get(ctx context.Context, artifactID string) (*persist.ArtifactRecord, error) {
	return fetchByID(s.p, ctx, "artifacts/get", "artifactId", artifactID, "/artifact", pdriver.Read[persist.ArtifactRecord])
}

// List implements persist.ArtifactStore.
func (s artifactStore) List(ctx context.Context, runID string) ([]*persist.ArtifactRecord, error) {
	return listByID(s.p, ctx, "artifacts/list", "runId", runID, "/artifacts", pdriver.ReadList[persist.ArtifactRecord])
}

// ListForThread implements persist.ArtifactStore.
func (s artifactStore) ListForThread(ctx context.Context, threadID string) ([]*persist.ArtifactRecord, error) {
	return listByID(s.p, ctx, "artifacts/listForThread", "threadId", threadID, "/artifacts", pdriver.ReadList[persist.ArtifactRecord])
}

// Delete implements persist.ArtifactStore.
func (s artifactStore) Delete(ctx context.Context, artifactID string) error {
	return sendByID(s.p, ctx, "artifacts/delete", "artifactId", artifactID)
}

// DeleteForRun implements persist.ArtifactStore.
func (s artifactStore) DeleteForRun(ctx context.Context, runID string) error {
	return sendByID(s.p, ctx, "artifacts/deleteForRun", "runId", runID)
}

// blobStore is persist.BlobStore over the wire: bytes travel as bytes,
// the metadata in a header.
type blobStore struct{ p pc }

// bodyErr remembers the first failure of a put's body, which the transport
// reports only as a broken request.
type bodyErr struct {
	r   io.Reader
	err error
}

func (b *bodyErr) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF && b.err == nil {
		b.err = err
	}
	return n, err
}

// Put implements persist.BlobStore: the body is streamed (chunked, no
// length needed). A put is retried after a lost reply or a 503 only when
// body is an io.Seeker, which is rewound to where it started.
func (s blobStore) Put(ctx context.Context, key string, body io.Reader, opts persist.BlobPutOptions) (persist.BlobRecord, error) {
	if err := checked(ctx, persist.CheckBlobPut(key, opts)); err != nil {
		return persist.BlobRecord{}, err
	}
	var w object
	w.start()
	w.str("key", key)
	if opts.ContentType != nil {
		w.str("contentType", *opts.ContentType)
	}
	if opts.CustomMetadata != nil {
		w.name("customMetadata")
		w.b = pdriver.AppendStringMap(w.b, opts.CustomMetadata)
	}
	if opts.ExpectedLength != nil {
		w.int("expectedLength", *opts.ExpectedLength)
	}
	hdr := http.Header{HeaderBlobPut: {url.PathEscape(string(w.end()))}, "Content-Type": {"application/octet-stream"}}
	seeker, replayable := body.(io.Seeker)
	var start int64
	if replayable {
		var err error
		if start, err = seeker.Seek(0, io.SeekCurrent); err != nil {
			replayable = false
		}
	}
	var rec *persist.BlobRecord
	attempt := 0
	var be *bodyErr
	resp, err := s.p.c.open(ctx, "blobs/put", hdr, func() (io.Reader, bool) {
		if attempt++; attempt > 1 {
			if !replayable {
				return nil, false
			}
			if _, err := seeker.Seek(start, io.SeekStart); err != nil {
				return nil, false
			}
		}
		be = &bodyErr{r: body}
		return struct{ io.Reader }{be}, true // hidden type: chunked, and no transport replays
	})
	if err != nil {
		// A body that failed is the put's failure, whatever the server
		// answered to the part of it that arrived.
		if be != nil && be.err != nil {
			return persist.BlobRecord{}, fmt.Errorf("httpstore: blobs/put: the body failed: %w", be.err)
		}
		return persist.BlobRecord{}, err
	}
	err = readReply(resp, "blobs/put", func(x *pdriver.Reader, n string) bool {
		if n != "blob" {
			return false
		}
		rec = pdriver.Read[persist.BlobRecord](x, "/blob")
		return true
	})
	if err == nil && rec == nil {
		err = fmt.Errorf("%w: no blob", errBadReply)
	}
	if err != nil {
		return persist.BlobRecord{}, err
	}
	return *rec, nil
}

// readReply reads a 200 JSON reply and closes it.
func readReply(resp *http.Response, method string, read func(x *pdriver.Reader, name string) bool) error {
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("httpstore: %s: reading the reply: %w", method, err)
	}
	var first error
	err = readObject(b, func(r *driver.JSONReader, name []byte) error {
		x := pdriver.Reader{JSON: r}
		if !read(&x, string(name)) {
			return r.Skip()
		}
		if err := x.Err(); err != nil && first == nil {
			first = fmt.Errorf("%w: %s: %w", errBadReply, method, err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("%w: %s: %w", errBadReply, method, err)
	}
	return first
}

// Get implements persist.BlobStore: Body streams the server's reply and
// must be closed.
func (s blobStore) Get(ctx context.Context, key string, rng *persist.BlobRange) (*persist.BlobObject, error) {
	if err := checked(ctx, persist.CheckBlobGet(key, rng)); err != nil {
		return nil, err
	}
	var w object
	w.start()
	w.str("key", key)
	if rng != nil {
		w.name("range")
		w.b = appendRange(w.b, rng.Offset, rng.Length)
	}
	body := w.end()
	resp, err := s.p.c.open(ctx, "blobs/get", http.Header{"Content-Type": jsonContentType}, func() (io.Reader, bool) {
		return bytes.NewReader(body), true
	})
	if err != nil {
		return nil, err
	}
	meta := resp.Header.Get(HeaderBlob)
	if meta == "" { // absent: {blob: null}
		return nil, readReply(resp, "blobs/get", func(x *pdriver.Reader, n string) bool { return false })
	}
	raw, err := url.PathUnescape(meta)
	if err != nil {
		resp.Body.Close()
		return nil, fmt.Errorf("%w: %s: %w", errBadReply, HeaderBlob, err)
	}
	obj := &persist.BlobObject{}
	var rec *persist.BlobRecord
	err = readObject([]byte(raw), func(r *driver.JSONReader, name []byte) error {
		x := pdriver.Reader{JSON: r}
		switch string(name) {
		case "blob":
			rec = pdriver.Read[persist.BlobRecord](&x, "/blob")
		case "range":
			if off, n, ok := readRange(&x, "/range", true); ok {
				obj.Range = &persist.ServedRange{Offset: off, Length: *n}
			}
		default:
			return r.Skip()
		}
		return x.Err()
	})
	if err == nil && rec == nil {
		err = errors.New("no blob")
	}
	if err != nil {
		resp.Body.Close()
		return nil, fmt.Errorf("%w: %s: %w", errBadReply, HeaderBlob, err)
	}
	obj.BlobRecord = *rec
	obj.Body = resp.Body
	return obj, nil
}

// Head implements persist.BlobStore.
func (s blobStore) Head(ctx context.Context, key string) (*persist.BlobRecord, error) {
	return fetchByID(s.p, ctx, "blobs/head", "key", key, "/blob", pdriver.Read[persist.BlobRecord])
}

// Delete implements persist.BlobStore.
func (s blobStore) Delete(ctx context.Context, key string) error {
	return sendByID(s.p, ctx, "blobs/delete", "key", key)
}

// List implements persist.BlobStore.
func (s blobStore) List(ctx context.Context, opts persist.BlobListOptions) (persist.BlobListPage, error) {
	if err := checked(ctx, persist.CheckBlobList(opts)); err != nil {
		return persist.BlobListPage{}, err
	}
	page := persist.BlobListPage{Objects: []persist.BlobRecord{}}
	err := s.p.call(ctx, "blobs/list", false, "", func(o *object) error {
		if opts.Prefix != "" {
			o.str("prefix", opts.Prefix)
		}
		if opts.Cursor != "" {
			o.str("cursor", opts.Cursor)
		}
		if opts.Limit != nil {
			o.int("limit", int64(*opts.Limit))
		}
		return nil
	}, func(x *pdriver.Reader, n string) bool {
		switch n {
		case "objects":
			for _, r := range pdriver.ReadList[persist.BlobRecord](x, "/objects") {
				page.Objects = append(page.Objects, *r)
			}
		case "cursor":
			x.Text(&page.Cursor, "/cursor")
		case "truncated":
			var b *bool
			x.OptBool(&b, "/truncated")
			page.Truncated = b != nil && *b
		default:
			return false
		}
		return true
	})
	if err != nil {
		return persist.BlobListPage{}, err
	}
	return page, nil
}

// open sends one call whose body is a stream (body gives each attempt's,
// or false when the call cannot be sent again) and returns the 200 reply
// for the caller to read and close. It retries as do does: a network
// error or a 503, while body can give another attempt.
func (c *client) open(ctx context.Context, method string, hdr http.Header, body func() (io.Reader, bool)) (*http.Response, error) {
	var resp *http.Response
	err := c.attempts(ctx, func() (bool, error) {
		rd, ok := body()
		if !ok {
			return false, fmt.Errorf("httpstore: %s: a failed attempt whose body cannot be sent again", method)
		}
		var retry bool
		var err error
		resp, retry, err = c.openOnce(ctx, method, hdr, rd)
		return retry, err
	})
	if err != nil {
		return nil, err
	}
	return resp, nil
}

func (c *client) openOnce(ctx context.Context, method string, hdr http.Header, body io.Reader) (*http.Response, bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+method, body)
	if err != nil {
		return nil, false, err
	}
	for k, v := range c.headers {
		req.Header[k] = v
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	if now := c.opts.Lease.Now; now != nil {
		req.Header[HeaderNow] = []string{string(driver.AppendMillis(nil, now().UnixNano()))}
	}
	c.injectTrace(ctx, req.Header)
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, false, ctx.Err()
		}
		return nil, retryableNetError(err), fmt.Errorf("httpstore: %s: %w", method, err)
	}
	if resp.StatusCode == http.StatusOK {
		return resp, false, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return nil, resp.StatusCode == http.StatusServiceUnavailable, replyError(resp, b)
}

// lockSteps are persist.LockSteps over /v1/locks/*: each step one call,
// Sent read from the holder's clock just before it is sent. The lease
// timing each reply carries is kept, to bound the next acquire's wait to
// a third of the lease (the server bounds it so too).
type lockSteps struct {
	c     *client
	now   func() time.Time
	lease atomic.Int64 // ns; 0 until a reply says
}

func (l *lockSteps) step(ctx context.Context, method, key, token string, waitMs int64, keep bool) (persist.LockStep, error) {
	// The checks of persist.DriverLockSteps, here, before anything is
	// sent: the JSON of a key or token that is not valid UTF-8 would name
	// another key (each bad byte sent as U+FFFD).
	if err := checked(ctx, firstCheck(persist.CheckID("key", key), persist.CheckID("token", token))); err != nil {
		return persist.LockStep{}, err
	}
	var st persist.LockStep
	var leaseMs, renewMs int64
	var held *bool
	sent := l.now()
	err := pc{l.c}.call(ctx, method, true, "", func(o *object) error {
		o.str("key", key)
		o.str("token", token)
		if waitMs > 0 {
			o.int("waitMs", waitMs)
		}
		return nil
	}, func(x *pdriver.Reader, n string) bool {
		var v *int64
		switch n {
		case "held":
			x.OptBool(&held, "/held")
			return true
		case "fence":
			x.Int(&st.Fence, "/fence")
			return true
		case "expiresAt":
			if x.OptInt(&v, "/expiresAt"); v != nil {
				st.ExpiresAt = time.UnixMilli(*v)
			}
		case "now":
			if x.OptInt(&v, "/now"); v != nil {
				st.Now = time.UnixMilli(*v)
			}
		case "leaseMs":
			x.Int(&leaseMs, "/leaseMs")
		case "renewAfterMs":
			x.Int(&renewMs, "/renewAfterMs")
		default:
			return false
		}
		return true
	})
	if err != nil {
		return persist.LockStep{}, err
	}
	if held == nil {
		return persist.LockStep{}, fmt.Errorf("%w: %s: no held", errBadReply, method)
	}
	st.Held, st.Sent = *held, sent
	if keep {
		if leaseMs <= 0 || renewMs <= 0 || renewMs >= leaseMs {
			return persist.LockStep{}, fmt.Errorf("%w: %s: lease timing %d/%d ms", errBadReply, method, leaseMs, renewMs)
		}
		st.Lease, st.RenewAfter = time.Duration(leaseMs)*time.Millisecond, time.Duration(renewMs)*time.Millisecond
		l.lease.Store(int64(st.Lease))
	}
	return st, nil
}

// Acquire implements persist.LockSteps.
func (l *lockSteps) Acquire(ctx context.Context, key, token string, wait time.Duration) (persist.LockStep, error) {
	if wait < 0 {
		if err := checked(ctx, firstCheck(persist.CheckID("key", key), persist.CheckID("token", token))); err != nil {
			return persist.LockStep{}, err
		}
		return persist.LockStep{}, fmt.Errorf("%w: wait %v is negative", persist.ErrInvalidEntry, wait)
	}
	if lease := time.Duration(l.lease.Load()); lease > 0 {
		wait = min(wait, lease/3)
	}
	wait = min(wait, MaxLockWait)
	return l.step(ctx, "locks/acquire", key, token, wait.Milliseconds(), true)
}

// Renew implements persist.LockSteps.
func (l *lockSteps) Renew(ctx context.Context, key, token string) (persist.LockStep, error) {
	return l.step(ctx, "locks/renew", key, token, 0, true)
}

// Release implements persist.LockSteps.
func (l *lockSteps) Release(ctx context.Context, key, token string) (persist.LockStep, error) {
	return l.step(ctx, "locks/release", key, token, 0, false)
}

// firstCheck is the first failed check of errs, in order, or nil.
func firstCheck(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
