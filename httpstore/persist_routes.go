package httpstore

// The persistence and lock routes of docs/http-api.md: one function per
// TanStack method, named /v1/<store>/<method>. Each reads its body into
// typed fields (ids strictly; the first id fault, else the first other
// fault, is the request's), then calls the namespace's persist.Store, which
// runs the pure checks in the method's documented order and then its
// driver's. Invariants: a long-polling acquire never holds the --dev clock
// while it waits (each driver step takes it, clockedDriver); a blob get
// that fails after its first byte cuts the connection rather than end a
// short body cleanly.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"time"

	"github.com/ckptstore/ckptstore/blobs"
	ckptdriver "github.com/ckptstore/ckptstore/driver"
	"github.com/ckptstore/ckptstore/persist"
	pdriver "github.com/ckptstore/ckptstore/persist/driver"
)

// DefaultMaxBlobBytes is the blob-put limit of a zero
// HandlerOptions.MaxBlobBytes: 1 GiB, a large video.
const DefaultMaxBlobBytes = 1 << 30

// MaxLockWait is the longest wait of one /v1/locks/acquire.
const MaxLockWait = 30 * time.Second

// Headers of the blob routes: a put's key and options, a get's record,
// each encodeURIComponent(JSON).
const (
	HeaderBlobPut = "Ckpt-Blob-Put"
	HeaderBlob    = "Ckpt-Blob"
)

func init() {
	add := func(name string, fn func(*handler, *call, *persist.Store) error, flags ...string) {
		rt := &route{name: name, persist: true}
		for _, f := range flags {
			switch f {
			case "raw":
				rt.raw, rt.persist = true, false
			case "unclocked":
				rt.unclocked = true
			}
		}
		rt.serve = func(h *handler, c *call) error {
			s, err := h.persistOf(c.ns)
			if err != nil {
				return err
			}
			return fn(h, c, s)
		}
		routes[name] = rt
	}
	add("runs/createOrResume", runsCreateOrResume)
	add("runs/update", runsUpdate)
	add("runs/get", runsGet)
	add("runs/findActiveRun", runsFindActive)
	add("runs/listByThread", runsListByThread)
	add("runs/listReclaimable", runsListReclaimable)
	add("generationRuns/createOrResume", genCreateOrResume)
	add("generationRuns/update", genUpdate)
	add("generationRuns/get", genGet)
	add("generationRuns/findLatestForThread", genFindLatest)
	add("interrupts/create", intCreate)
	add("interrupts/resolve", intResolve)
	add("interrupts/cancel", intCancel)
	add("interrupts/commitBatch", intCommitBatch)
	add("interrupts/get", intGet)
	add("interrupts/list", intList("threadId", persist.InterruptStore.List))
	add("interrupts/listPending", intList("threadId", persist.InterruptStore.ListPending))
	add("interrupts/listByRun", intList("runId", persist.InterruptStore.ListByRun))
	add("interrupts/listPendingByRun", intList("runId", persist.InterruptStore.ListPendingByRun))
	add("metadata/get", metaGet)
	add("metadata/set", metaSet)
	add("metadata/delete", metaDelete)
	add("artifacts/save", artSave)
	add("artifacts/get", artGet)
	add("artifacts/list", artList("runId", persist.ArtifactStore.List))
	add("artifacts/listForThread", artList("threadId", persist.ArtifactStore.ListForThread))
	add("artifacts/delete", artDelete)
	add("artifacts/deleteForRun", artDeleteForRun)
	add("blobs/put", blobPut, "raw")
	add("blobs/get", blobGet)
	add("blobs/head", blobHead)
	add("blobs/delete", blobDelete)
	add("blobs/list", blobList)
	add("locks/acquire", lockAcquire, "unclocked")
	add("locks/renew", lockRenew, "unclocked")
	add("locks/release", lockRelease, "unclocked")
}

// persistOf returns the namespace's persistence store, opening it on
// first use with the namespace's clock and lease timing.
func (h *handler) persistOf(ns *namespace) (*persist.Store, error) {
	ns.pmu.Lock()
	defer ns.pmu.Unlock()
	if ns.pstore != nil {
		return ns.pstore, nil
	}
	if h.persistFor != nil {
		s, err := h.persistFor(ns.name)
		if err != nil {
			return nil, reqErr(CodeUnavailable, "opening the persistence of %q: %v", ns.name, err)
		}
		ns.pstore, ns.pblobs = s, true
		return s, nil
	}
	pb, ok := h.b.(PersistenceBackend)
	if !ok {
		return nil, reqErr(CodeUnsupported, "this server keeps no persistence state (its backend has no persistence driver)")
	}
	// The store's clock judges lock leases. Outside --dev it is the
	// backend's own (nil: Redis's TIME, so that several servers behind one
	// balancer agree on every expiry whatever their clocks); in --dev it is
	// the namespace's, which a request's Ckpt-Now sets.
	var storeClock func() time.Time
	if h.opts.Dev {
		storeClock = ns.clock
	}
	d, err := pb.Persistence(ns.name, storeClock)
	if err != nil {
		if errors.Is(err, errors.ErrUnsupported) {
			return nil, reqErr(CodeUnsupported, "the persistence of %q: %v", ns.name, err)
		}
		if errors.Is(err, ckptdriver.ErrInvalidOptions) {
			return nil, reqErr(CodeBadRequest, "namespace %q: %v", ns.name, err)
		}
		return nil, reqErr(CodeUnavailable, "opening the persistence of %q: %v", ns.name, err)
	}
	if h.opts.Dev {
		d = clockedDriver{Driver: d, ns: ns}
	}
	bucket := h.opts.Bucket
	if bucket == nil {
		bucket = noBucket{}
	}
	s, err := persist.New(d, persist.Options{
		Bucket: bucket, BlobPrefix: h.opts.BlobPrefix, Now: ns.clock,
		LeaseDuration: ns.lease.LeaseDuration, RenewAfter: ns.lease.RenewAfter,
	})
	if err != nil {
		return nil, reqErr(CodeBadRequest, "namespace %q: %v", ns.name, err)
	}
	ns.pstore, ns.pblobs = s, h.opts.Bucket != nil
	return s, nil
}

// unclockedKey marks the context of a route that runs without the --dev
// clock; its value is the *call, whose Ckpt-Now each driver step sets.
type unclockedKey struct{}

// clockedDriver takes the namespace's --dev clock around each lock step
// of an unclocked route, as run does around a whole request: the step
// sees the request's Ckpt-Now, and no waiting holds the clock.
type clockedDriver struct {
	pdriver.Driver
	ns *namespace
}

func (d clockedDriver) hold(ctx context.Context) func() {
	c, ok := ctx.Value(unclockedKey{}).(*call)
	if !ok {
		return func() {} // run holds the clock for the whole request
	}
	if !c.setsClock {
		d.ns.mu.RLock()
		return d.ns.mu.RUnlock
	}
	d.ns.mu.Lock()
	d.ns.now.Store(c.now)
	d.ns.nowSet.Store(true)
	return func() {
		d.ns.nowSet.Store(false)
		d.ns.mu.Unlock()
	}
}

// AcquireLock takes the clock for the step.
func (d clockedDriver) AcquireLock(ctx context.Context, req pdriver.LockRequest) (pdriver.LockState, error) {
	defer d.hold(ctx)()
	return d.Driver.AcquireLock(ctx, req)
}

// RenewLock takes the clock for the step.
func (d clockedDriver) RenewLock(ctx context.Context, key, token string, lease time.Duration) (pdriver.LockState, error) {
	defer d.hold(ctx)()
	return d.Driver.RenewLock(ctx, key, token, lease)
}

// ReleaseLock takes the clock for the step.
func (d clockedDriver) ReleaseLock(ctx context.Context, key, token string) (pdriver.LockState, error) {
	defer d.hold(ctx)()
	return d.Driver.ReleaseLock(ctx, key, token)
}

// noBucket is the bucket of a server without one; the blob routes answer
// 501 before reaching it.
type noBucket struct{}

var errNoBucket = fmt.Errorf("httpstore: no blob bucket (start ckptserver with --bucket): %w", errors.ErrUnsupported)

func (noBucket) Get(context.Context, string) (io.ReadCloser, error) { return nil, errNoBucket }
func (noBucket) Head(context.Context, string) (blobs.Object, error) {
	return blobs.Object{}, errNoBucket
}
func (noBucket) Put(context.Context, string, io.Reader) error { return errNoBucket }
func (noBucket) Delete(context.Context, string) error         { return errNoBucket }
func (noBucket) List(context.Context, string) iter.Seq2[blobs.Object, error] {
	return blobs.ErrSeq(errNoBucket)
}

// decode reads c's JSON body, one object, with field for each member;
// a body that is not one object, or a member no method has, is
// BAD_REQUEST, and a field's fault is the request's (ids first).
func decode(c *call, field func(x *rd, name string) bool) error {
	r := ckptdriver.NewJSONReader(c.body)
	defer r.Close()
	x := &rd{r: r}
	var unknownName string
	err := r.Object("", func(name []byte) error {
		if !field(x, string(name)) {
			if unknownName == "" {
				unknownName = string(name)
			}
			return r.Skip()
		}
		return nil
	})
	if err == nil {
		err = r.End()
	}
	if err != nil && r.Err() != nil || err != nil && x.f.err() == nil {
		return reqErr(CodeBadRequest, "the body is not one JSON object: %v", err)
	}
	if unknownName != "" {
		return reqErr(CodeBadRequest, "the body has a member %q that %s does not take", unknownName, "this method")
	}
	return x.f.err()
}

// one decodes a body of one id field.
func one(c *call, name string, id *string) error {
	return decode(c, func(x *rd, n string) bool {
		if n != name {
			return false
		}
		x.id(id, "/"+name)
		return true
	})
}

// reply writes the member name with the JSON app appends.
func reply(c *call, name string, app func([]byte) []byte) {
	c.out.name(name)
	c.out.b = app(c.out.b)
}

func runsCreateOrResume(h *handler, c *call, s *persist.Store) error {
	var in persist.RunStart
	err := decode(c, func(x *rd, n string) bool {
		switch n {
		case "runId":
			x.id(&in.RunID, "/runId")
		case "threadId":
			x.id(&in.ThreadID, "/threadId")
		case "startedAt":
			x.int(&in.StartedAt, "/startedAt")
		case "status":
			var st string
			x.text(&st, "/status")
			in.Status = persist.RunStatus(st)
		default:
			return false
		}
		return true
	})
	if err != nil {
		return err
	}
	rec, err := s.Runs.CreateOrResume(c.ctx, in)
	if err != nil {
		return err
	}
	reply(c, "run", func(b []byte) []byte { return appendRun(b, rec) })
	return nil
}

func runsUpdate(h *handler, c *call, s *persist.Store) error {
	var id string
	var p persist.RunPatch
	err := decode(c, func(x *rd, n string) bool {
		switch n {
		case "runId":
			x.id(&id, "/runId")
		case "patch":
			readRunPatch(x, &p)
		default:
			return false
		}
		return true
	})
	if err != nil {
		return err
	}
	return s.Runs.Update(c.ctx, id, p)
}

func runsGet(h *handler, c *call, s *persist.Store) error {
	var id string
	if err := one(c, "runId", &id); err != nil {
		return err
	}
	rec, err := s.Runs.Get(c.ctx, id)
	if err != nil {
		return err
	}
	reply(c, "run", func(b []byte) []byte { return appendRun(b, rec) })
	return nil
}

func runsFindActive(h *handler, c *call, s *persist.Store) error {
	var id string
	if err := one(c, "threadId", &id); err != nil {
		return err
	}
	rec, err := s.Runs.FindActiveRun(c.ctx, id)
	if err != nil {
		return err
	}
	reply(c, "run", func(b []byte) []byte { return appendRun(b, rec) })
	return nil
}

func runsListByThread(h *handler, c *call, s *persist.Store) error {
	var id string
	if err := one(c, "threadId", &id); err != nil {
		return err
	}
	recs, err := s.Runs.ListByThread(c.ctx, id)
	if err != nil {
		return err
	}
	reply(c, "runs", func(b []byte) []byte { return appendList(b, recs, appendRun) })
	return nil
}

func runsListReclaimable(h *handler, c *call, s *persist.Store) error {
	var q persist.ReclaimQuery
	err := decode(c, func(x *rd, n string) bool {
		switch n {
		case "now":
			x.int(&q.Now, "/now")
		case "ttlMs":
			x.int(&q.TTLMs, "/ttlMs")
		default:
			return false
		}
		return true
	})
	if err != nil {
		return err
	}
	recs, err := s.Runs.ListReclaimable(c.ctx, q)
	if err != nil {
		return err
	}
	reply(c, "runs", func(b []byte) []byte { return appendList(b, recs, appendRun) })
	return nil
}

func genCreateOrResume(h *handler, c *call, s *persist.Store) error {
	var in persist.GenerationRunStart
	err := decode(c, func(x *rd, n string) bool {
		switch n {
		case "runId":
			x.id(&in.RunID, "/runId")
		case "threadId":
			x.id(&in.ThreadID, "/threadId")
		case "activity":
			x.text(&in.Activity, "/activity")
		case "provider":
			x.text(&in.Provider, "/provider")
		case "model":
			x.text(&in.Model, "/model")
		case "startedAt":
			x.int(&in.StartedAt, "/startedAt")
		case "status":
			var st string
			x.text(&st, "/status")
			in.Status = persist.RunStatus(st)
		default:
			return false
		}
		return true
	})
	if err != nil {
		return err
	}
	rec, err := s.GenerationRuns.CreateOrResume(c.ctx, in)
	if err != nil {
		return err
	}
	reply(c, "run", func(b []byte) []byte { return appendGenerationRun(b, rec) })
	return nil
}

func genUpdate(h *handler, c *call, s *persist.Store) error {
	var id string
	var p persist.GenerationRunPatch
	err := decode(c, func(x *rd, n string) bool {
		switch n {
		case "runId":
			x.id(&id, "/runId")
		case "patch":
			readGenerationRunPatch(x, &p)
		default:
			return false
		}
		return true
	})
	if err != nil {
		return err
	}
	return s.GenerationRuns.Update(c.ctx, id, p)
}

func genGet(h *handler, c *call, s *persist.Store) error {
	var id string
	if err := one(c, "runId", &id); err != nil {
		return err
	}
	rec, err := s.GenerationRuns.Get(c.ctx, id)
	if err != nil {
		return err
	}
	reply(c, "run", func(b []byte) []byte { return appendGenerationRun(b, rec) })
	return nil
}

func genFindLatest(h *handler, c *call, s *persist.Store) error {
	var id string
	if err := one(c, "threadId", &id); err != nil {
		return err
	}
	rec, err := s.GenerationRuns.FindLatestForThread(c.ctx, id)
	if err != nil {
		return err
	}
	reply(c, "run", func(b []byte) []byte { return appendGenerationRun(b, rec) })
	return nil
}

func intCreate(h *handler, c *call, s *persist.Store) error {
	var in *persist.NewInterrupt
	err := decode(c, func(x *rd, n string) bool {
		if n != "record" {
			return false
		}
		in = nullable(x, "/record", readNewInterrupt)
		return true
	})
	if err != nil {
		return err
	}
	if in == nil {
		return fmt.Errorf("%w: interrupts/create needs a record", persist.ErrInvalidID)
	}
	return s.Interrupts.Create(c.ctx, *in)
}

func intResolve(h *handler, c *call, s *persist.Store) error {
	var id string
	var resp json.RawMessage
	err := decode(c, func(x *rd, n string) bool {
		switch n {
		case "interruptId":
			x.id(&id, "/interruptId")
		case "response":
			x.rawOrNull(&resp)
		default:
			return false
		}
		return true
	})
	if err != nil {
		return err
	}
	return s.Interrupts.Resolve(c.ctx, id, resp)
}

func intCancel(h *handler, c *call, s *persist.Store) error {
	var id string
	if err := one(c, "interruptId", &id); err != nil {
		return err
	}
	return s.Interrupts.Cancel(c.ctx, id)
}

func intCommitBatch(h *handler, c *call, s *persist.Store) error {
	var entries []*persist.InterruptCommitEntry
	err := decode(c, func(x *rd, n string) bool {
		if n != "entries" {
			return false
		}
		entries = list(x, "/entries", readCommitEntry)
		return true
	})
	if err != nil {
		return err
	}
	batch := make([]persist.InterruptCommitEntry, len(entries))
	for i, e := range entries {
		batch[i] = *e
	}
	return s.Interrupts.CommitBatch(c.ctx, batch) // c.ctx carries Idempotency-Key as the op token
}

func intGet(h *handler, c *call, s *persist.Store) error {
	var id string
	if err := one(c, "interruptId", &id); err != nil {
		return err
	}
	rec, err := s.Interrupts.Get(c.ctx, id)
	if err != nil {
		return err
	}
	reply(c, "interrupt", func(b []byte) []byte { return appendInterrupt(b, rec) })
	return nil
}

func intList(field string, m func(persist.InterruptStore, context.Context, string) ([]*persist.InterruptRecord, error)) func(*handler, *call, *persist.Store) error {
	return func(h *handler, c *call, s *persist.Store) error {
		var id string
		if err := one(c, field, &id); err != nil {
			return err
		}
		recs, err := m(s.Interrupts, c.ctx, id)
		if err != nil {
			return err
		}
		reply(c, "interrupts", func(b []byte) []byte { return appendList(b, recs, appendInterrupt) })
		return nil
	}
}

func metaKey(x *rd, n string, ns, key *string) bool {
	switch n {
	case "namespace":
		x.id(ns, "/namespace")
	case "key":
		x.id(key, "/key")
	default:
		return false
	}
	return true
}

func metaGet(h *handler, c *call, s *persist.Store) error {
	var ns, key string
	if err := decode(c, func(x *rd, n string) bool { return metaKey(x, n, &ns, &key) }); err != nil {
		return err
	}
	v, err := s.Metadata.Get(c.ctx, ns, key)
	if err != nil {
		return err
	}
	if v == nil {
		v = json.RawMessage("null")
	}
	c.out.raw("value", v)
	return nil
}

func metaSet(h *handler, c *call, s *persist.Store) error {
	var ns, key string
	var v json.RawMessage
	err := decode(c, func(x *rd, n string) bool {
		if n == "value" {
			x.rawOrNull(&v)
			return true
		}
		return metaKey(x, n, &ns, &key)
	})
	if err != nil {
		return err
	}
	if v == nil {
		v = json.RawMessage("null") // absent is null: set's value is required
	}
	return s.Metadata.Set(c.ctx, ns, key, v)
}

func metaDelete(h *handler, c *call, s *persist.Store) error {
	var ns, key string
	if err := decode(c, func(x *rd, n string) bool { return metaKey(x, n, &ns, &key) }); err != nil {
		return err
	}
	return s.Metadata.Delete(c.ctx, ns, key)
}

func artSave(h *handler, c *call, s *persist.Store) error {
	var rec *persist.ArtifactRecord
	err := decode(c, func(x *rd, n string) bool {
		if n != "record" {
			return false
		}
		rec = nullable(x, "/record", readArtifact)
		return true
	})
	if err != nil {
		return err
	}
	if rec == nil {
		return fmt.Errorf("%w: artifacts/save needs a record", persist.ErrInvalidID)
	}
	return s.Artifacts.Save(c.ctx, rec)
}

func artGet(h *handler, c *call, s *persist.Store) error {
	var id string
	if err := one(c, "artifactId", &id); err != nil {
		return err
	}
	rec, err := s.Artifacts.Get(c.ctx, id)
	if err != nil {
		return err
	}
	reply(c, "artifact", func(b []byte) []byte { return appendArtifact(b, rec) })
	return nil
}

func artList(field string, m func(persist.ArtifactStore, context.Context, string) ([]*persist.ArtifactRecord, error)) func(*handler, *call, *persist.Store) error {
	return func(h *handler, c *call, s *persist.Store) error {
		var id string
		if err := one(c, field, &id); err != nil {
			return err
		}
		recs, err := m(s.Artifacts, c.ctx, id)
		if err != nil {
			return err
		}
		reply(c, "artifacts", func(b []byte) []byte { return appendList(b, recs, appendArtifact) })
		return nil
	}
}

func artDelete(h *handler, c *call, s *persist.Store) error {
	var id string
	if err := one(c, "artifactId", &id); err != nil {
		return err
	}
	return s.Artifacts.Delete(c.ctx, id)
}

func artDeleteForRun(h *handler, c *call, s *persist.Store) error {
	var id string
	if err := one(c, "runId", &id); err != nil {
		return err
	}
	return s.Artifacts.DeleteForRun(c.ctx, id)
}

// blobsOn fails with 501 UNSUPPORTED when the server has no bucket.
func blobsOn(c *call) error {
	if !c.ns.pblobs {
		return reqErr(CodeUnsupported, "this server has no blob bucket: start ckptserver with --bucket")
	}
	return nil
}

// readBlobPut reads a put's key and options (the Ckpt-Blob-Put JSON).
func readBlobPut(b []byte, key *string, o *persist.BlobPutOptions) error {
	return readWhole(b, func(x *rd, name []byte) error {
		switch string(name) {
		case "key":
			x.id(key, "/key")
		case "contentType":
			x.optText(&o.ContentType, "/contentType")
		case "customMetadata":
			x.stringMap(&o.CustomMetadata, "/customMetadata")
		case "expectedLength":
			x.optInt(&o.ExpectedLength, "/expectedLength")
		default:
			return unknown(HeaderBlobPut, name)
		}
		return nil
	})
}

func blobPut(h *handler, c *call, s *persist.Store) error {
	if err := blobsOn(c); err != nil {
		return err
	}
	var key string
	var opts persist.BlobPutOptions
	if v := c.in.r.Header.Get(HeaderBlobPut); v != "" {
		raw, err := url.PathUnescape(v)
		if err != nil {
			return reqErr(CodeBadRequest, "%s is not URI-encoded: %v", HeaderBlobPut, err)
		}
		if err := readBlobPut([]byte(raw), &key, &opts); err != nil {
			if pdriver.Code(err) == "" {
				return reqErr(CodeBadRequest, "%s: %v", HeaderBlobPut, err)
			}
			return err
		}
	}
	rec, err := s.Blobs.Put(c.ctx, key, c.stream, opts)
	if err != nil {
		return err
	}
	reply(c, "blob", func(b []byte) []byte { return appendBlobRecord(b, &rec) })
	return nil
}

func blobGet(h *handler, c *call, s *persist.Store) error {
	if err := blobsOn(c); err != nil {
		return err
	}
	var key string
	var rng *persist.BlobRange
	err := decode(c, func(x *rd, n string) bool {
		switch n {
		case "key":
			x.id(&key, "/key")
		case "range":
			rng = nullable(x, "/range", func(y *rd, name []byte, r *persist.BlobRange) error {
				switch string(name) {
				case "offset":
					y.int(&r.Offset, "/range/offset")
				case "length":
					y.optInt(&r.Length, "/range/length")
				default:
					return unknown("range", name)
				}
				return nil
			})
		default:
			return false
		}
		return true
	})
	if err != nil {
		return err
	}
	obj, err := s.Blobs.Get(c.ctx, key, rng)
	if err != nil {
		return err
	}
	if obj == nil {
		c.out.raw("blob", []byte("null"))
		return nil
	}
	defer obj.Body.Close()
	w := jw{}
	w.open()
	w.name("blob")
	w.b = appendBlobRecord(w.b, &obj.BlobRecord)
	if obj.Range != nil {
		w.name("range")
		w.open()
		w.int("offset", obj.Range.Offset)
		w.int("length", obj.Range.Length)
		w.close()
	}
	w.close()
	hd := c.w.Header()
	hd.Set("Content-Type", "application/octet-stream")
	hd.Set(HeaderBlob, url.PathEscape(string(w.b)))
	c.w.WriteHeader(http.StatusOK)
	c.streamed = true
	if _, err := io.Copy(c.w, obj.Body); err != nil {
		// The status is sent: only a cut connection tells the client
		// that the bytes are not whole.
		panic(http.ErrAbortHandler)
	}
	return nil
}

func blobHead(h *handler, c *call, s *persist.Store) error {
	if err := blobsOn(c); err != nil {
		return err
	}
	var key string
	if err := one(c, "key", &key); err != nil {
		return err
	}
	rec, err := s.Blobs.Head(c.ctx, key)
	if err != nil {
		return err
	}
	reply(c, "blob", func(b []byte) []byte { return appendBlobRecord(b, rec) })
	return nil
}

func blobDelete(h *handler, c *call, s *persist.Store) error {
	if err := blobsOn(c); err != nil {
		return err
	}
	var key string
	if err := one(c, "key", &key); err != nil {
		return err
	}
	return s.Blobs.Delete(c.ctx, key)
}

func blobList(h *handler, c *call, s *persist.Store) error {
	if err := blobsOn(c); err != nil {
		return err
	}
	var opts persist.BlobListOptions
	err := decode(c, func(x *rd, n string) bool {
		switch n {
		case "prefix":
			x.text(&opts.Prefix, "/prefix")
		case "cursor":
			x.text(&opts.Cursor, "/cursor")
		case "limit":
			var l *int64
			x.optInt(&l, "/limit")
			if l != nil {
				n := int(*l)
				opts.Limit = &n
			}
		default:
			return false
		}
		return true
	})
	if err != nil {
		return err
	}
	page, err := s.Blobs.List(c.ctx, opts)
	if err != nil {
		return err
	}
	c.out.name("objects")
	c.out.b = append(c.out.b, '[')
	for i := range page.Objects {
		if i > 0 {
			c.out.b = append(c.out.b, ',')
		}
		c.out.b = appendBlobRecord(c.out.b, &page.Objects[i])
	}
	c.out.b = append(c.out.b, ']')
	if page.Cursor != "" {
		c.out.str("cursor", page.Cursor)
	}
	if page.Truncated {
		c.out.bool("truncated", true)
	}
	return nil
}

// lockSteps returns the driver-backed lock steps of the store.
func serverLockSteps(s *persist.Store) (*persist.DriverLockSteps, error) {
	if l, ok := s.Locks.(*persist.Locks); ok {
		if st, ok := l.Steps().(*persist.DriverLockSteps); ok {
			return st, nil
		}
	}
	return nil, reqErr(CodeUnsupported, "this server's lock store runs no driver steps")
}

// lockKey reads the key and token of a lock route, and its waitMs when
// wait is not nil.
func lockKey(c *call, key, token *string, wait *int64) error {
	err := decode(c, func(x *rd, n string) bool {
		switch {
		case n == "key":
			x.id(key, "/key")
		case n == "token":
			x.id(token, "/token")
		case n == "waitMs" && wait != nil:
			x.int(wait, "/waitMs")
		default:
			return false
		}
		return true
	})
	if err != nil {
		return err
	}
	if *token != "" && !ckptdriver.ValidOpToken(*token) || len(*token) > 128 {
		return fmt.Errorf("%w: token must be 1 to 128 characters of [A-Za-z0-9_-]", persist.ErrInvalidID)
	}
	return nil
}

// lockReply writes a lock step's state: held, fence, expiresAt (null when
// nobody holds the key), the store's now, and the lease timing.
func lockReply(c *call, st persist.LockStep) {
	c.out.bool("held", st.Held)
	c.out.int("fence", st.Fence)
	if st.ExpiresAt.IsZero() {
		c.out.raw("expiresAt", []byte("null"))
	} else {
		c.out.int("expiresAt", st.ExpiresAt.UnixMilli())
	}
	c.out.int("now", st.Now.UnixMilli())
	c.out.int("leaseMs", st.Lease.Milliseconds())
	c.out.int("renewAfterMs", st.RenewAfter.Milliseconds())
}

func lockAcquire(h *handler, c *call, s *persist.Store) error {
	steps, err := serverLockSteps(s)
	if err != nil {
		return err
	}
	var key, token string
	var waitMs int64
	if err := lockKey(c, &key, &token, &waitMs); err != nil {
		return err
	}
	if waitMs < 0 || waitMs > MaxLockWait.Milliseconds() {
		return fmt.Errorf("%w: waitMs %d is not 0 to %d", persist.ErrInvalidEntry, waitMs, MaxLockWait.Milliseconds())
	}
	// A wait longer than a third of the lease would leave a holder that
	// counts its lease from the request's send time too little of it.
	lease, _ := steps.Timing()
	wait := min(time.Duration(waitMs)*time.Millisecond, lease/3)
	st, err := steps.Acquire(c.ctx, key, token, wait)
	if err != nil {
		return err
	}
	lockReply(c, st)
	return nil
}

func lockRenew(h *handler, c *call, s *persist.Store) error {
	steps, err := serverLockSteps(s)
	if err != nil {
		return err
	}
	var key, token string
	if err := lockKey(c, &key, &token, nil); err != nil {
		return err
	}
	st, err := steps.Renew(c.ctx, key, token)
	if err != nil {
		return err
	}
	lockReply(c, st)
	return nil
}

func lockRelease(h *handler, c *call, s *persist.Store) error {
	steps, err := serverLockSteps(s)
	if err != nil {
		return err
	}
	var key, token string
	if err := lockKey(c, &key, &token, nil); err != nil {
		return err
	}
	st, err := steps.Release(c.ctx, key, token)
	if err != nil {
		return err
	}
	c.out.bool("held", st.Held)
	return nil
}
