package main

// export, import, copy and verify of the persistence stores (runs,
// generation runs, interrupts, metadata, artifacts, blob metadata) beside
// the checkpoints, and the copy of blob bytes between buckets.
//
// Invariants:
//
//   - Records move only through driver.Porter (a ckptserver's export and
//     import routes, which call the namespace's driver.Porter): Dump on
//     the source, Load on the destination. Load is idempotent by content and never
//     overwrites, so a rerun after any interruption loads what is missing
//     and nothing twice; a destination record that differs is refused
//     (reported, exit 1) and left as it is.
//   - A blob row is loaded only after its bytes are in the destination
//     bucket (when buckets are given), so a destination row never names
//     an object that is not there. Bucket objects are immutable and
//     uniquely named (persist.Blobs puts each under a random name), so an
//     object already present with the row's size is the same bytes, and
//     a resumed copy skips it.
//   - Op-token markers and lock leases are not records (see
//     persist/driver's Porter) and are never copied.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"iter"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/ckptstore/ckptstore/blobs"
	"github.com/ckptstore/ckptstore/httpstore"
	pdriver "github.com/ckptstore/ckptstore/persist/driver"
)

// porter is what export, import, copy and verify need of a store's
// persistence records: its driver's Porter, or a ckptserver's
// persist/export and persist/import routes for a tenant's namespace.
type porter = recordPorter[pdriver.Record]

// driverPorter is the porter of a persistence driver.
type driverPorter struct{ p pdriver.Porter }

func (d driverPorter) Dump(ctx context.Context) iter.Seq2[pdriver.Record, error] {
	return d.p.Dump(ctx, pdriver.DumpPosition{})
}

func (d driverPorter) Load(ctx context.Context, recs []pdriver.Record) (int, error) {
	return d.p.Load(ctx, recs)
}

func (driverPorter) maxBatch() int { return 0 }

// serverPorter is the porter of a ckptserver's namespace: the records go
// through its export pages and import calls, so a tenant moves its own
// records with only a token, and never another tenant's.
type serverPorter struct {
	c    *httpstore.Client
	desc string
	// stderr gets the note of a server that keeps no persistence state.
	stderr io.Writer
}

// Dump pages through persist/export, each page resumed at the cursor the
// one before returned. A server that keeps no persistence (UNSUPPORTED
// on the first page) is a store without records, and Dump says so on
// stderr.
func (s serverPorter) Dump(ctx context.Context) iter.Seq2[pdriver.Record, error] {
	page := func(ctx context.Context, cursor string) ([]pdriver.Record, string, error) {
		return s.c.ExportPersistence(ctx, cursor, httpstore.MaxExportRecords)
	}
	none := func(err error) bool { return errors.Is(err, errors.ErrUnsupported) }
	return serverDump(ctx, page, none, s.stderr, s.desc, "no persistence records")
}

func (s serverPorter) Load(ctx context.Context, recs []pdriver.Record) (int, error) {
	return s.c.ImportPersistence(ctx, recs)
}

func (serverPorter) maxBatch() int { return httpstore.MaxImportRecords }

// porterOf returns the porter of s's persistence records, nil when s
// keeps no persistence state.
func porterOf(s *store, stderr io.Writer) (porter, error) {
	if s.server {
		return serverPorter{c: s.client, desc: s.desc, stderr: stderr}, nil
	}
	if s.persist == nil {
		return nil, nil
	}
	p, ok := s.persist.(pdriver.Porter)
	if !ok {
		return nil, fmt.Errorf("%s: the persistence driver %T cannot export or import (no driver.Porter)", s.desc, s.persist)
	}
	return driverPorter{p}, nil
}

// isPersist reports whether v is an object whose first member is
// "persist": a persistence record line.
func isPersist(v jsontext.Value) bool { return firstMember(v, "persist") }

// writePersist writes every persistence record of s to w, one line each
// (Record.MarshalJSON, raw values kept byte for byte), and returns how
// many.
func writePersist(ctx context.Context, s *store, w, stderr io.Writer) (int, error) {
	p, err := porterOf(s, stderr)
	if p == nil || err != nil {
		return 0, err
	}
	marshal := func(r *pdriver.Record) ([]byte, error) {
		b, err := r.MarshalJSON()
		if err != nil {
			return nil, fmt.Errorf("persistence: %s %q: %w", r.Kind, r.ID(), err)
		}
		return b, nil
	}
	return writeRecords(ctx, p, w, "persistence", marshal, func(*pdriver.Record) bool { return true })
}

// blobCopier copies the bytes of blob rows from one bucket to another.
type blobCopier struct {
	from, to blobs.Bucket
	// copied and present count objects; bytes the bytes copied.
	copied, present int
	bytes           int64
}

// copyObject makes the row's object present in the destination bucket:
// skipped when an object of the row's size is there already, else read
// from the source, hashed on the way and checked against the row's etag
// (a mismatch deletes what was put and fails).
func (c *blobCopier) copyObject(ctx context.Context, m *pdriver.BlobMeta) error {
	if o, err := c.to.Head(ctx, m.Object); err == nil && o.Size == m.Size {
		c.present++
		return nil
	} else if err != nil && !errors.Is(err, blobs.ErrNotFound) {
		return fmt.Errorf("blob %q: destination bucket: %w", m.Key, err)
	}
	rc, err := c.from.Get(ctx, m.Object)
	if errors.Is(err, blobs.ErrNotFound) {
		return recordRefused(pdriver.KindBlob, m.Key, nil, "its object %q is not in the source bucket", m.Object)
	}
	if err != nil {
		return fmt.Errorf("blob %q: source bucket: %w", m.Key, err)
	}
	defer rc.Close()
	h := sha256.New()
	cr := &countReader{r: io.TeeReader(rc, h)}
	if err := c.to.Put(ctx, m.Object, cr); err != nil {
		return fmt.Errorf("blob %q: destination bucket: %w", m.Key, err)
	}
	if sum := hex.EncodeToString(h.Sum(nil)); sum != m.ETag || cr.n != m.Size {
		_ = c.to.Delete(context.WithoutCancel(ctx), m.Object)
		return recordRefused(pdriver.KindBlob, m.Key, nil, "the source object holds %d bytes of SHA-256 %s, the row says %d bytes of %s", cr.n, sum, m.Size, m.ETag)
	}
	c.copied++
	c.bytes += cr.n
	return nil
}

type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// recordRefused is the failure of the persistence record of kind and id
// that the migration did not load: the destination holds another record
// under its identity, or its blob bytes could not be copied.
func recordRefused(kind pdriver.RecordKind, id string, err error, format string, args ...any) *failure {
	return &failure{what: fmt.Sprintf("%s %q", kind, id), reason: "refused: " + fmt.Sprintf(format, args...), err: err}
}

// loader gathers persistence records into Load batches for a destination.
type loader struct {
	batcher[pdriver.Record]
	blobs *blobCopier // nil: no bytes to copy
}

func newLoader(m *migrator, dst *store, bc *blobCopier) (*loader, error) {
	p, err := porterOf(dst, m.e.stderr)
	if err != nil {
		return nil, err
	}
	return &loader{batcher: batcher[pdriver.Record]{m: m, p: p}, blobs: bc}, nil
}

// add queues r, flushing the batch when it is full. A record that cannot
// go into this destination is recorded as failed.
func (l *loader) add(ctx context.Context, r pdriver.Record, size int) error {
	if l.p == nil {
		return fmt.Errorf("%s keeps no persistence state, and the source holds %s records", l.m.dst.desc, r.Kind)
	}
	l.seen++
	if r.Kind == pdriver.KindBlob && l.blobs != nil {
		if err := l.blobs.copyObject(ctx, r.Blob); err != nil {
			if f, ok := errors.AsType[*failure](err); ok {
				l.fail(f)
				return nil
			}
			return err
		}
	}
	return l.queue(ctx, r, size, l.flush)
}

// flush loads the batch. A batch the destination refuses (a differing
// record, or too large for one transaction) is loaded in halves, down to
// the single records at fault: a conflicting one is reported and left, an
// invalid one stops the migration.
func (l *loader) flush(ctx context.Context) error {
	if len(l.batch) == 0 {
		return nil
	}
	return l.load(ctx, l.take())
}

func (l *loader) load(ctx context.Context, recs []pdriver.Record) error {
	n, err := l.p.Load(ctx, recs)
	if err == nil {
		l.loaded += n
		return l.batchDone()
	}
	conflict := errors.Is(err, pdriver.ErrRecordConflict)
	if !conflict && !errors.Is(err, pdriver.ErrInvalidEntry) || ctx.Err() != nil {
		return err
	}
	if len(recs) == 1 {
		if conflict {
			l.fail(recordRefused(recs[0].Kind, recs[0].ID(), err, "the destination holds another record under its identity"))
			return nil
		}
		return err
	}
	half := len(recs) / 2
	if err := l.load(ctx, recs[:half:half]); err != nil {
		return err
	}
	return l.load(ctx, recs[half:])
}

// summary prints what the loader did and returns an error naming the
// refused records.
func (l *loader) summary(w io.Writer) error {
	if l.seen == 0 && len(l.failed) == 0 {
		return nil
	}
	line := fmt.Sprintf("persistence: %d records, %d loaded, %d already present, %d refused", l.seen, l.loaded, l.seen-l.loaded-len(l.failed), len(l.failed))
	if l.blobs != nil {
		line += fmt.Sprintf("; blob bytes: %d objects copied (%d bytes), %d already there", l.blobs.copied, l.blobs.bytes, l.blobs.present)
	}
	fmt.Fprintln(w, line)
	if len(l.failed) > 0 {
		return fmt.Errorf("%d persistence records not loaded (listed above): %w", len(l.failed), errors.Join(l.failed...))
	}
	return nil
}

// copyPersist copies every persistence record of src into dst (and the
// blob bytes, when bc is set).
func copyPersist(ctx context.Context, m *migrator, src, dst *store, bc *blobCopier) error {
	ps, err := porterOf(src, m.e.stderr)
	if ps == nil || err != nil {
		return err
	}
	l, err := newLoader(m, dst, bc)
	if err != nil {
		return err
	}
	return copyRecords(ctx, m, ps, l, "source persistence", func(r *pdriver.Record) (int, error) {
		b, err := r.MarshalJSON()
		if err != nil {
			return 0, fmt.Errorf("source persistence: %s %q: %w", r.Kind, r.ID(), err)
		}
		return len(b), nil
	})
}

// openBuckets opens copy's --bucket and --to-bucket: both, or neither
// (the stores share one bucket, or the bytes are copied otherwise).
func openBuckets(ctx context.Context, e *env, from, to string) (*blobCopier, error) {
	switch {
	case from == "" && to == "":
		return nil, nil
	case from == "" || to == "":
		return nil, usageErr("--bucket and --to-bucket go together: the source's bucket and the destination's (give neither when both stores use one bucket)")
	case from == to:
		return nil, usageErr("--bucket and --to-bucket name the same bucket: give neither when both stores use one bucket")
	}
	fb, err := e.openBucket(ctx, from)
	if err != nil {
		return nil, fmt.Errorf("--bucket: %w", err)
	}
	tb, err := e.openBucket(ctx, to)
	if err != nil {
		return nil, fmt.Errorf("--to-bucket: %w", err)
	}
	return &blobCopier{from: fb, to: tb}, nil
}

// lookup reads what d holds under r's identity (ok false: nothing).
func lookup(ctx context.Context, d pdriver.Driver, r pdriver.Record) (pdriver.Record, bool, error) {
	out := pdriver.Record{Kind: r.Kind}
	var err error
	switch r.Kind {
	case pdriver.KindRun:
		out.Run, err = d.GetRun(ctx, r.Run.RunID)
		return out, out.Run != nil, err
	case pdriver.KindGenerationRun:
		out.GenerationRun, err = d.GetGenerationRun(ctx, r.GenerationRun.RunID)
		return out, out.GenerationRun != nil, err
	case pdriver.KindInterrupt:
		out.Interrupt, err = d.GetInterrupt(ctx, r.Interrupt.InterruptID)
		return out, out.Interrupt != nil, err
	case pdriver.KindMetadata:
		v, err := d.GetMetadata(ctx, r.Metadata.Namespace, r.Metadata.Key)
		out.Metadata = &pdriver.MetadataEntry{Namespace: r.Metadata.Namespace, Key: r.Metadata.Key, Value: v}
		return out, v != nil, err
	case pdriver.KindArtifact:
		out.Artifact, err = d.GetArtifact(ctx, r.Artifact.ArtifactID)
		return out, out.Artifact != nil, err
	default:
		out.Blob, err = d.GetBlob(ctx, r.Blob.Key)
		return out, out.Blob != nil, err
	}
}

// verifyPersist compares the persistence records of a and b: every record
// of a is in b, equal, and b holds no more; with bc, every blob row's
// object is in the destination bucket with its size. b is read by point
// reads of its driver; a ckptserver's namespace, which has no route for
// them, is read whole first into an index of one SHA-256 of each record's
// JSON line by identity (some 100 bytes a record).
func verifyPersist(ctx context.Context, v *verifier, a, b *store, bc *blobCopier) (int, error) {
	pa, err := porterOf(a, v.e.stderr)
	if err != nil {
		return 0, err
	}
	pb, err := porterOf(b, v.e.stderr)
	if err != nil {
		return 0, err
	}
	var index map[string][sha256.Size]byte // b's records, when b is a server
	nb := 0
	if pb != nil {
		if b.server {
			index = map[string][sha256.Size]byte{}
		}
		for r, err := range pb.Dump(ctx) {
			if err != nil {
				return 0, err
			}
			nb++
			if index != nil {
				line, err := r.MarshalJSON()
				if err != nil {
					return 0, err
				}
				index[string(r.Kind)+"\x00"+r.ID()] = sha256.Sum256(line)
			}
		}
	}
	na := 0
	if pa != nil {
		for r, err := range pa.Dump(ctx) {
			if err != nil {
				return na, err
			}
			na++
			if pb == nil {
				v.diff("the source holds persistence records and %s keeps none", b.desc)
				return na, nil
			}
			var ok, equal bool
			if index != nil {
				var sum [sha256.Size]byte
				sum, ok = index[string(r.Kind)+"\x00"+r.ID()]
				line, err := r.MarshalJSON()
				if err != nil {
					return na, err
				}
				equal = ok && sum == sha256.Sum256(line)
			} else {
				got, found, err := lookup(ctx, b.persist, r)
				if err != nil {
					return na, err
				}
				ok, equal = found, found && pdriver.Equal(got, r)
			}
			switch {
			case !ok:
				v.diff("%s %q is only in the source", r.Kind, r.ID())
			case !equal:
				v.diff("%s %q differs", r.Kind, r.ID())
			case r.Kind == pdriver.KindBlob && bc != nil:
				if o, err := bc.to.Head(ctx, r.Blob.Object); err != nil || o.Size != r.Blob.Size {
					v.diff("blob %q: its object %q is not in the destination bucket with %d bytes (%v)", r.ID(), r.Blob.Object, r.Blob.Size, err)
				}
			}
		}
	}
	if nb > na {
		v.diff("the destination holds %d persistence records, the source %d", nb, na)
	}
	return na, nil
}
