package httpstore

// The persistence and lock routes of docs/http-api.md: one route per
// TanStack method, named /v1/<store>/<method>; the methods whose body is
// one id share getByID and writeByID, which the table in init fills with
// the store's method. Each reads its body into typed fields (ids strictly;
// the first id fault, else the first other fault, is the request's), then
// calls the namespace's persist.Store, which runs the pure checks in the
// method's documented order and then its driver's. Invariants: a
// long-polling acquire never holds the --dev clock while it waits (each
// driver step takes it, clockedDriver); a blob get that fails after its
// first byte cuts the connection rather than end a short body cleanly.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"slices"
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

// persistRoute serves one persistence method on the namespace's store.
type persistRoute = func(h *handler, c *call, s *persist.Store) error

func init() {
	// Flags: raw (the body is bytes), unclocked (see clockedDriver), bucket
	// (501 on a server without a blob bucket, before the route reads its
	// body).
	add := func(name string, fn persistRoute, flags ...string) {
		rt := &route{name: name, persist: true}
		bucket := false
		for _, f := range flags {
			switch f {
			case "raw":
				rt.raw, rt.persist = true, false
			case "unclocked":
				rt.unclocked = true
			case "bucket":
				bucket = true
			}
		}
		rt.serve = func(h *handler, c *call) error {
			s, err := h.persistOf(c.ns)
			if err != nil {
				return err
			}
			if bucket && !c.ns.pblobs {
				return reqErr(CodeUnsupported, "this server has no blob bucket: start ckptserver with --bucket")
			}
			return fn(h, c, s)
		}
		routes[name] = rt
	}
	runsOf := func(s *persist.Store) persist.RunStore { return s.Runs }
	add("runs/createOrResume", runsCreateOrResume)
	add("runs/update", update(runsOf, func(x *pdriver.Reader, p *persist.RunPatch) { pdriver.ReadRunPatch(x, p, "/patch") }, persist.RunStore.Update))
	add("runs/get", getByID("runId", runsOf, persist.RunStore.Get, "run", appendRun))
	add("runs/findActiveRun", getByID("threadId", runsOf, persist.RunStore.FindActiveRun, "run", appendRun))
	add("runs/listByThread", getByID("threadId", runsOf, persist.RunStore.ListByThread, "runs", listOf(appendRun)))
	add("runs/listReclaimable", runsListReclaimable)
	genOf := func(s *persist.Store) persist.GenerationRunStore { return s.GenerationRuns }
	add("generationRuns/createOrResume", genCreateOrResume)
	add("generationRuns/update", update(genOf, func(x *pdriver.Reader, p *persist.GenerationRunPatch) { pdriver.ReadGenerationRunPatch(x, p, "/patch") }, persist.GenerationRunStore.Update))
	add("generationRuns/get", getByID("runId", genOf, persist.GenerationRunStore.Get, "run", appendGenerationRun))
	add("generationRuns/findLatestForThread", getByID("threadId", genOf, persist.GenerationRunStore.FindLatestForThread, "run", appendGenerationRun))
	intsOf := func(s *persist.Store) persist.InterruptStore { return s.Interrupts }
	add("interrupts/create", intCreate)
	add("interrupts/resolve", intResolve)
	add("interrupts/cancel", writeByID("interruptId", intsOf, persist.InterruptStore.Cancel))
	add("interrupts/commitBatch", intCommitBatch)
	add("interrupts/get", getByID("interruptId", intsOf, persist.InterruptStore.Get, "interrupt", appendInterrupt))
	add("interrupts/list", getByID("threadId", intsOf, persist.InterruptStore.List, "interrupts", listOf(appendInterrupt)))
	add("interrupts/listPending", getByID("threadId", intsOf, persist.InterruptStore.ListPending, "interrupts", listOf(appendInterrupt)))
	add("interrupts/listByRun", getByID("runId", intsOf, persist.InterruptStore.ListByRun, "interrupts", listOf(appendInterrupt)))
	add("interrupts/listPendingByRun", getByID("runId", intsOf, persist.InterruptStore.ListPendingByRun, "interrupts", listOf(appendInterrupt)))
	add("metadata/get", metaGet)
	add("metadata/set", metaSet)
	add("metadata/delete", metaDelete)
	artsOf := func(s *persist.Store) persist.ArtifactStore { return s.Artifacts }
	add("artifacts/save", artSave)
	add("artifacts/get", getByID("artifactId", artsOf, persist.ArtifactStore.Get, "artifact", appendArtifact))
	add("artifacts/list", getByID("runId", artsOf, persist.ArtifactStore.List, "artifacts", listOf(appendArtifact)))
	add("artifacts/listForThread", getByID("threadId", artsOf, persist.ArtifactStore.ListForThread, "artifacts", listOf(appendArtifact)))
	add("artifacts/delete", writeByID("artifactId", artsOf, persist.ArtifactStore.Delete))
	add("artifacts/deleteForRun", writeByID("runId", artsOf, persist.ArtifactStore.DeleteForRun))
	blobsOf := func(s *persist.Store) persist.BlobStore { return s.Blobs }
	add("blobs/put", blobPut, "raw", "bucket")
	add("blobs/get", blobGet, "bucket")
	add("blobs/head", getByID("key", blobsOf, persist.BlobStore.Head, "blob", appendBlobRecord), "bucket")
	add("blobs/delete", writeByID("key", blobsOf, persist.BlobStore.Delete), "bucket")
	add("blobs/list", blobList, "bucket")
	add("locks/acquire", lockAcquire, "unclocked")
	add("locks/renew", lockRoute((*persist.DriverLockSteps).Renew, lockReply), "unclocked")
	add("locks/release", lockRoute((*persist.DriverLockSteps).Release, lockHeld), "unclocked")
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
			return nil, reqErr(CodeUnavailable, "opening the persistence of %s: %v", ckptdriver.QuoteShort(ns.name), err)
		}
		ns.pstore, ns.pblobs = s, true
		return s, nil
	}
	d := ns.pdriver
	if d == nil {
		return nil, reqErr(CodeUnsupported, "this server keeps no persistence state (its backend has no persistence driver)")
	}
	// The tenant's lease clock judges lock leases, as it judges writer
	// leases: outside --dev the backend's own (Redis's TIME, so that
	// several servers behind one balancer agree on every expiry whatever
	// their clocks); in --dev the namespace's, which a request's Ckpt-Now
	// sets.
	pcheck, _ := d.(ckptdriver.Checker) // the driver's own, before the --dev clock wraps it
	pport, _ := d.(pdriver.Porter)
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
		return nil, reqErr(CodeBadRequest, "namespace %s: %v", ckptdriver.QuoteShort(ns.name), err)
	}
	ns.pstore, ns.pblobs, ns.pcheck, ns.pport = s, h.opts.Bucket != nil, pcheck, pport
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
func decode(c *call, field func(x *pdriver.Reader, name string) bool) error {
	r := ckptdriver.NewJSONReader(c.body)
	defer r.Close()
	x := pdriver.NewReader(r)
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
	if err != nil && r.Err() != nil || err != nil && x.Err() == nil {
		return reqErr(CodeBadRequest, "the body is not one JSON object: %v", err)
	}
	if unknownName != "" {
		return reqErr(CodeBadRequest, "the body has a member %s that %s does not take", ckptdriver.QuoteShort(unknownName), "this method")
	}
	return x.Err()
}

// only decodes a body whose one member, name, read reads.
func only(c *call, name string, read func(x *pdriver.Reader)) error {
	return decode(c, func(x *pdriver.Reader, n string) bool {
		if n != name {
			return false
		}
		read(x)
		return true
	})
}

// one decodes a body of one id field.
func one(c *call, name string, id *string) error {
	return only(c, name, func(x *pdriver.Reader) { x.ID(id, "/"+name) })
}

// startOf decodes a createOrResume's body, whose members are names: each
// is read as the record's member of that name, so that a start is exactly
// as strict as the record it starts.
func startOf(c *call, rec interface {
	ReadMember(*pdriver.Reader, []byte) bool
}, names ...string) error {
	return decode(c, func(x *pdriver.Reader, n string) bool {
		return slices.Contains(names, n) && rec.ReadMember(x, []byte(n))
	})
}

// reply writes v, which app appends, as the member name, unless err.
func reply[T any](c *call, name string, app func([]byte, T) []byte, v T, err error) error {
	if err != nil {
		return err
	}
	c.out.name(name)
	c.out.b = app(c.out.b, v)
	return nil
}

// listOf appends a list of the records one appends.
func listOf[T any](one func([]byte, T) []byte) func([]byte, []T) []byte {
	return func(b []byte, recs []T) []byte { return appendList(b, recs, one) }
}

// getByID serves a read of one id, the member field: what m returns from
// the store that of picks is the reply's member name, which app appends.
func getByID[S, T any](field string, of func(*persist.Store) S, m func(S, context.Context, string) (T, error), name string, app func([]byte, T) []byte) persistRoute {
	return func(h *handler, c *call, s *persist.Store) error {
		var id string
		if err := one(c, field, &id); err != nil {
			return err
		}
		v, err := m(of(s), c.ctx, id)
		return reply(c, name, app, v, err)
	}
}

// writeByID serves a write of one id, the member field: m on the store
// that of picks, which answers {}.
func writeByID[S any](field string, of func(*persist.Store) S, m func(S, context.Context, string) error) persistRoute {
	return func(h *handler, c *call, s *persist.Store) error {
		var id string
		if err := one(c, field, &id); err != nil {
			return err
		}
		return m(of(s), c.ctx, id)
	}
}

// update serves a run store's update: runId, and patch, which read reads.
func update[S, P any](of func(*persist.Store) S, read func(x *pdriver.Reader, p *P), m func(S, context.Context, string, P) error) persistRoute {
	return func(h *handler, c *call, s *persist.Store) error {
		var id string
		var p P
		err := decode(c, func(x *pdriver.Reader, n string) bool {
			switch n {
			case "runId":
				x.ID(&id, "/runId")
			case "patch":
				read(x, &p)
			default:
				return false
			}
			return true
		})
		if err != nil {
			return err
		}
		return m(of(s), c.ctx, id, p)
	}
}

func runsCreateOrResume(h *handler, c *call, s *persist.Store) error {
	var in persist.RunRecord
	if err := startOf(c, &in, "runId", "threadId", "startedAt", "status"); err != nil {
		return err
	}
	rec, err := s.Runs.CreateOrResume(c.ctx, persist.RunStart{
		RunID: in.RunID, ThreadID: in.ThreadID, StartedAt: in.StartedAt, Status: in.Status,
	})
	return reply(c, "run", appendRun, rec, err)
}

func runsListReclaimable(h *handler, c *call, s *persist.Store) error {
	var q persist.ReclaimQuery
	err := decode(c, func(x *pdriver.Reader, n string) bool {
		switch n {
		case "now":
			x.Int(&q.Now, "/now")
		case "ttlMs":
			x.Int(&q.TTLMs, "/ttlMs")
		default:
			return false
		}
		return true
	})
	if err != nil {
		return err
	}
	recs, err := s.Runs.ListReclaimable(c.ctx, q)
	return reply(c, "runs", listOf(appendRun), recs, err)
}

func genCreateOrResume(h *handler, c *call, s *persist.Store) error {
	var in persist.GenerationRunRecord
	err := startOf(c, &in, "runId", "threadId", "activity", "provider", "model", "startedAt", "status")
	if err != nil {
		return err
	}
	rec, err := s.GenerationRuns.CreateOrResume(c.ctx, persist.GenerationRunStart{
		RunID: in.RunID, ThreadID: in.ThreadID, Activity: in.Activity, Provider: in.Provider, Model: in.Model,
		StartedAt: in.StartedAt, Status: in.Status,
	})
	return reply(c, "run", appendGenerationRun, rec, err)
}

// recordOf decodes a body of one record, which read reads; method needs it
// present and not null.
func recordOf[T any](c *call, method string, read func(x *pdriver.Reader) *T) (*T, error) {
	var rec *T
	if err := only(c, "record", func(x *pdriver.Reader) { rec = read(x) }); err != nil {
		return nil, err
	}
	if rec == nil {
		return nil, fmt.Errorf("%w: %s needs a record", persist.ErrInvalidID, method)
	}
	return rec, nil
}

func intCreate(h *handler, c *call, s *persist.Store) error {
	in, err := recordOf(c, "interrupts/create", readNewInterrupt)
	if err != nil {
		return err
	}
	return s.Interrupts.Create(c.ctx, *in)
}

func intResolve(h *handler, c *call, s *persist.Store) error {
	var id string
	var resp json.RawMessage
	err := decode(c, func(x *pdriver.Reader, n string) bool {
		switch n {
		case "interruptId":
			x.ID(&id, "/interruptId")
		case "response":
			x.RawOrNull(&resp)
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

func intCommitBatch(h *handler, c *call, s *persist.Store) error {
	var entries []*persist.InterruptCommitEntry
	if err := only(c, "entries", func(x *pdriver.Reader) { entries = pdriver.ReadList[persist.InterruptCommitEntry](x, "/entries") }); err != nil {
		return err
	}
	batch := make([]persist.InterruptCommitEntry, len(entries))
	for i, e := range entries {
		batch[i] = *e
	}
	return s.Interrupts.CommitBatch(c.ctx, batch) // c.ctx carries Idempotency-Key as the op token
}

// metaKey reads a metadata route's namespace and key, and its value when
// value is not nil.
func metaKey(c *call, value *json.RawMessage) (ns, key string, err error) {
	err = decode(c, func(x *pdriver.Reader, n string) bool {
		switch {
		case n == "namespace":
			x.ID(&ns, "/namespace")
		case n == "key":
			x.ID(&key, "/key")
		case n == "value" && value != nil:
			x.RawOrNull(value)
		default:
			return false
		}
		return true
	})
	return ns, key, err
}

func metaGet(h *handler, c *call, s *persist.Store) error {
	ns, key, err := metaKey(c, nil)
	if err != nil {
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
	var v json.RawMessage
	ns, key, err := metaKey(c, &v)
	if err != nil {
		return err
	}
	if v == nil {
		v = json.RawMessage("null") // absent is null: set's value is required
	}
	return s.Metadata.Set(c.ctx, ns, key, v)
}

func metaDelete(h *handler, c *call, s *persist.Store) error {
	ns, key, err := metaKey(c, nil)
	if err != nil {
		return err
	}
	return s.Metadata.Delete(c.ctx, ns, key)
}

func artSave(h *handler, c *call, s *persist.Store) error {
	rec, err := recordOf(c, "artifacts/save", func(x *pdriver.Reader) *persist.ArtifactRecord {
		return pdriver.Read[persist.ArtifactRecord](x, "/record")
	})
	if err != nil {
		return err
	}
	return s.Artifacts.Save(c.ctx, rec)
}

// readBlobPut reads a put's key and options (the Ckpt-Blob-Put JSON):
// every fault wraps a persist sentinel, ErrInvalidEntry but for the key's.
func readBlobPut(b []byte, key *string, o *persist.BlobPutOptions) error {
	r := ckptdriver.NewJSONReader(b)
	defer r.Close()
	x := pdriver.Reader{JSON: r}
	var unknownName string
	err := r.Object("", func(name []byte) error {
		switch string(name) {
		case "key":
			x.ID(key, "/key")
		case "contentType":
			x.OptText(&o.ContentType, "/contentType")
		case "customMetadata":
			x.StringMap(&o.CustomMetadata, "/customMetadata")
		case "expectedLength":
			x.OptInt(&o.ExpectedLength, "/expectedLength")
		default:
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
	switch {
	case err != nil && (r.Err() != nil || x.Err() == nil):
		return fmt.Errorf("%w: %s is not one JSON object: %v", pdriver.ErrInvalidEntry, HeaderBlobPut, err)
	case unknownName != "":
		return fmt.Errorf("%w: %s has no member %s", pdriver.ErrInvalidEntry, HeaderBlobPut, ckptdriver.QuoteShort(unknownName))
	}
	return x.Err()
}

func blobPut(h *handler, c *call, s *persist.Store) error {
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
	return reply(c, "blob", appendBlobRecord, &rec, err)
}

func blobGet(h *handler, c *call, s *persist.Store) error {
	var key string
	var rng *persist.BlobRange
	err := decode(c, func(x *pdriver.Reader, n string) bool {
		switch n {
		case "key":
			x.ID(&key, "/key")
		case "range":
			if off, n, ok := readRange(x, "/range", false); ok {
				rng = &persist.BlobRange{Offset: off, Length: n}
			}
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
	var w object
	w.start()
	w.name("blob")
	w.b = appendBlobRecord(w.b, &obj.BlobRecord)
	if obj.Range != nil {
		w.name("range")
		w.b = appendRange(w.b, obj.Range.Offset, &obj.Range.Length)
	}
	hd := c.w.Header()
	hd.Set("Content-Type", "application/octet-stream")
	hd.Set(HeaderBlob, url.PathEscape(string(w.end())))
	c.w.WriteHeader(http.StatusOK)
	c.streamed = true
	if _, err := io.Copy(c.w, obj.Body); err != nil {
		// The status is sent: only a cut connection tells the client
		// that the bytes are not whole.
		panic(http.ErrAbortHandler)
	}
	return nil
}

func blobList(h *handler, c *call, s *persist.Store) error {
	var opts persist.BlobListOptions
	err := decode(c, func(x *pdriver.Reader, n string) bool {
		switch n {
		case "prefix":
			x.Text(&opts.Prefix, "/prefix")
		case "cursor":
			x.Text(&opts.Cursor, "/cursor")
		case "limit":
			var l *int64
			x.OptInt(&l, "/limit")
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
	c.out.b = appendList(c.out.b, page.Objects, func(b []byte, r persist.BlobRecord) []byte { return appendBlobRecord(b, &r) })
	if page.Cursor != "" {
		c.out.str("cursor", page.Cursor)
	}
	if page.Truncated {
		c.out.bool("truncated", true)
	}
	return nil
}

// serverLockSteps returns the driver-backed lock steps of the store.
func serverLockSteps(s *persist.Store) (*persist.DriverLockSteps, error) {
	if l, ok := s.Locks.(*persist.Locks); ok {
		if st, ok := l.Steps().(*persist.DriverLockSteps); ok {
			return st, nil
		}
	}
	return nil, reqErr(CodeUnsupported, "this server's lock store runs no driver steps")
}

// lockCall returns the store's lock steps and the key and token of a lock
// route, and reads its waitMs when wait is not nil.
func lockCall(c *call, s *persist.Store, wait *int64) (steps *persist.DriverLockSteps, key, token string, err error) {
	if steps, err = serverLockSteps(s); err != nil {
		return nil, "", "", err
	}
	err = decode(c, func(x *pdriver.Reader, n string) bool {
		switch {
		case n == "key":
			x.ID(&key, "/key")
		case n == "token":
			x.ID(&token, "/token")
		case n == "waitMs" && wait != nil:
			x.Int(wait, "/waitMs")
		default:
			return false
		}
		return true
	})
	if err != nil {
		return nil, "", "", err
	}
	// The token is an id like the key (docs/persistence.md, rule 2), checked
	// by the lock steps: a server takes every token a store in the process
	// takes.
	return steps, key, token, nil
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

// lockHeld writes only whether the step's token held the lease: all a
// release says.
func lockHeld(c *call, st persist.LockStep) { c.out.bool("held", st.Held) }

func lockAcquire(h *handler, c *call, s *persist.Store) error {
	var waitMs int64
	steps, key, token, err := lockCall(c, s, &waitMs)
	if err != nil {
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

// lockRoute serves a lock step that takes no wait (renew, release); write
// answers its state.
func lockRoute(step func(*persist.DriverLockSteps, context.Context, string, string) (persist.LockStep, error), write func(*call, persist.LockStep)) persistRoute {
	return func(h *handler, c *call, s *persist.Store) error {
		steps, key, token, err := lockCall(c, s, nil)
		if err != nil {
			return err
		}
		st, err := step(steps, c.ctx, key, token)
		if err != nil {
			return err
		}
		write(c, st)
		return nil
	}
}
