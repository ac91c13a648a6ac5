package main

// export, import, copy, verify and check of a tenant's Durable Streams
// beside its checkpoints and persistence records.
//
// Invariants:
//
//   - Streams move only through streams.Porter (Dump on the source, Load
//     on the destination), directly on an engine's namespace (--namespace:
//     streams live in namespaces only) or through a ckptserver's
//     streams/export and streams/import routes. Load is idempotent by
//     content and never overwrites, so a rerun after any interruption
//     finishes what is pending and writes nothing twice.
//   - A stream the destination holds with other content is refused
//     (reported, exit 1) and left as it is, and so is every fork of it and
//     every data record of it: a fork loaded onto another stream of its
//     source's name would read that stream's data.
//   - Memory: one page of records, one Load batch, and the names of the
//     refused streams.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/ckptstore/ckptstore/httpstore"
	"github.com/ckptstore/ckptstore/streams"
)

// streamPorter is what export, import, copy and verify need of a store's
// streams: its namespace's stream driver, or a ckptserver's routes.
type streamPorter = recordPorter[streams.Record]

type driverStreams struct{ p streams.Porter }

func (d driverStreams) Dump(ctx context.Context) iter.Seq2[streams.Record, error] {
	return streams.Dump(ctx, d.p, streams.Position{})
}

func (d driverStreams) Load(ctx context.Context, recs []streams.Record) (int, error) {
	return streams.Load(ctx, d.p, recs)
}

func (driverStreams) maxBatch() int { return 0 }

// serverStreams is the streamPorter of a ckptserver's namespace.
type serverStreams struct {
	c      *httpstore.Client
	desc   string
	stderr io.Writer
}

// Dump pages through streams/export. A server that keeps no streams
// (UNSUPPORTED on the first page), or that has no such route (NOT_FOUND:
// a server older than it), has none, and Dump says so on stderr.
func (s serverStreams) Dump(ctx context.Context) iter.Seq2[streams.Record, error] {
	page := func(ctx context.Context, cursor string) ([]streams.Record, string, error) {
		return s.c.ExportStreams(ctx, cursor, httpstore.MaxStreamExportRecords)
	}
	// A backend without streams, or a server older than the stream routes.
	none := func(err error) bool {
		var he *httpstore.Error
		return errors.Is(err, errors.ErrUnsupported) || errors.As(err, &he) && he.Code == httpstore.CodeNotFound
	}
	return serverDump(ctx, page, none, s.stderr, s.desc, "no streams")
}

func (s serverStreams) Load(ctx context.Context, recs []streams.Record) (int, error) {
	return s.c.ImportStreams(ctx, recs)
}

func (serverStreams) maxBatch() int { return httpstore.MaxStreamImportRecords }

// streamPorterOf returns the streamPorter of s, nil when s keeps no
// streams (an engine URL without --namespace, or an engine without them).
func streamPorterOf(s *store, stderr io.Writer) (streamPorter, error) {
	if s.server {
		return serverStreams{c: s.client, desc: s.desc, stderr: stderr}, nil
	}
	if s.streams == nil {
		return nil, nil
	}
	p, ok := s.streams.(streams.Porter)
	if !ok {
		return nil, fmt.Errorf("%s: the stream driver %T cannot export or import (no streams.Porter)", s.desc, s.streams)
	}
	return driverStreams{p}, nil
}

// isStream reports whether v is a stream record line: an object whose
// first member is "stream" or "streamData".
func isStream(v jsontext.Value) bool { return firstMember(v, "stream") || firstMember(v, "streamData") }

// writeStreams writes every stream record of s to w, one line each, and
// returns how many streams.
func writeStreams(ctx context.Context, s *store, w, stderr io.Writer) (int, error) {
	p, err := streamPorterOf(s, stderr)
	if p == nil || err != nil {
		return 0, err
	}
	marshal := func(r *streams.Record) ([]byte, error) { return json.Marshal(*r) }
	return writeRecords(ctx, p, w, "streams", marshal, func(r *streams.Record) bool { return r.Stream != nil })
}

// parseStreamRecord reads one stream record line, refusing unknown
// members.
func parseStreamRecord(v []byte) (streams.Record, error) {
	var r streams.Record
	d := json.NewDecoder(bytes.NewReader(v))
	d.DisallowUnknownFields()
	if err := d.Decode(&r); err != nil {
		return r, usageErr("a stream record: %v", err)
	}
	return r, nil
}

// streamLoader gathers stream records into Load batches.
type streamLoader struct {
	batcher[streams.Record]
	heads   int // streams read from the source
	refused map[string]bool
}

func newStreamLoader(m *migrator, dst *store) (*streamLoader, error) {
	p, err := streamPorterOf(dst, m.e.stderr)
	if err != nil {
		return nil, err
	}
	return &streamLoader{batcher: batcher[streams.Record]{m: m, p: p}, refused: map[string]bool{}}, nil
}

func recordName(r *streams.Record) string {
	if r.Stream != nil {
		return r.Stream.Name
	}
	if r.Data != nil {
		return r.Data.Name
	}
	return ""
}

// add queues r, flushing the batch when it is full.
func (l *streamLoader) add(ctx context.Context, r streams.Record, size int) error {
	if l.p == nil {
		return fmt.Errorf("%s keeps no streams (give --namespace for an engine URL), and the source holds stream %q", l.m.dst.desc, recordName(&r))
	}
	l.seen++
	if r.Stream != nil {
		l.heads++
	}
	return l.queue(ctx, r, size, l.flush)
}

// flush loads the batch. A batch that meets a conflict is loaded again
// record by record (what was stored is skipped), so that the refused
// stream, its data and its forks are left out and the rest is loaded.
func (l *streamLoader) flush(ctx context.Context) error {
	if len(l.batch) == 0 {
		return nil
	}
	recs := l.take()
	if len(l.refused) == 0 {
		n, err := l.p.Load(ctx, recs)
		if err == nil {
			l.loaded += n
			return l.batchDone()
		}
		if !errors.Is(err, streams.ErrImportConflict) || ctx.Err() != nil {
			return err
		}
	}
	for i := range recs {
		r := &recs[i]
		name := recordName(r)
		if l.refused[name] {
			continue
		}
		if h := r.Stream; h != nil && h.Fork != nil && l.refused[h.Fork.Source] {
			l.refuse(name, nil, "its fork source %q was refused", h.Fork.Source)
			continue
		}
		n, err := l.p.Load(ctx, recs[i:i+1])
		if errors.Is(err, streams.ErrImportConflict) {
			l.refuse(name, err, "the destination holds other content under its name")
			continue
		}
		if err != nil {
			return err
		}
		l.loaded += n
	}
	return l.batchDone()
}

func (l *streamLoader) refuse(name string, err error, format string, args ...any) {
	l.refused[name] = true
	l.fail(&failure{what: fmt.Sprintf("stream %q", name), reason: "refused: " + fmt.Sprintf(format, args...), err: err})
}

// summary prints what the loader did and returns an error naming the
// refused streams.
func (l *streamLoader) summary(w io.Writer) error {
	if l.seen == 0 && len(l.failed) == 0 {
		return nil
	}
	fmt.Fprintf(w, "streams: %d streams in %d records, %d records loaded, %d already present or refused, %d streams refused\n",
		l.heads, l.seen, l.loaded, l.seen-l.loaded, len(l.failed))
	if len(l.failed) > 0 {
		return fmt.Errorf("%d streams not loaded (listed above): %w", len(l.failed), errors.Join(l.failed...))
	}
	return nil
}

// copyStreams copies every stream of src into dst.
func copyStreams(ctx context.Context, m *migrator, src, dst *store) error {
	ps, err := streamPorterOf(src, m.e.stderr)
	if ps == nil || err != nil {
		return err
	}
	l, err := newStreamLoader(m, dst)
	if err != nil {
		return err
	}
	return copyRecords(ctx, m, ps, l, "source streams", func(r *streams.Record) (int, error) {
		return recordSize(r), nil
	})
}

// recordSize is about the bytes of r on the wire.
func recordSize(r *streams.Record) int {
	if r.Data != nil {
		return 128 + len(r.Data.Data)*4/3 + 12*len(r.Data.Ends)
	}
	return 512 + 64*len(r.Stream.Producers)
}

// streamDigests returns, by stream name, a SHA-256 of each stream's head
// (without its serial) and of its data, whatever the records' boundaries
// (some 100 bytes a stream).
func streamDigests(ctx context.Context, p streamPorter) (map[string][sha256.Size]byte, error) {
	out := map[string][sha256.Size]byte{}
	if p == nil {
		return out, nil
	}
	var name string
	h := sha256.New()
	end := func() {
		if name != "" {
			out[name] = [sha256.Size]byte(h.Sum(nil))
		}
	}
	for r, err := range p.Dump(ctx) {
		if err != nil {
			return nil, err
		}
		if s := r.Stream; s != nil {
			end()
			name = s.Name
			h.Reset()
			hd := *s
			hd.Serial = 0
			b, err := json.Marshal(hd)
			if err != nil {
				return nil, err
			}
			h.Write(b)
			continue
		}
		// Units, not records: a message's bytes and its end.
		d := r.Data
		if d.Ends == nil {
			h.Write(d.Data)
			continue
		}
		lo := int32(0)
		for _, e := range d.Ends {
			h.Write(d.Data[lo:e])
			h.Write([]byte{0})
			lo = e + 1
		}
	}
	end()
	return out, nil
}

// verifyStreams compares the streams of a and b by digest and returns
// how many the source holds.
func verifyStreams(ctx context.Context, v *verifier, a, b *store) (int, error) {
	pa, err := streamPorterOf(a, v.e.stderr)
	if err != nil {
		return 0, err
	}
	pb, err := streamPorterOf(b, v.e.stderr)
	if err != nil {
		return 0, err
	}
	da, err := streamDigests(ctx, pa)
	if err != nil {
		return 0, fmt.Errorf("source streams: %w", err)
	}
	db, err := streamDigests(ctx, pb)
	if err != nil {
		return 0, fmt.Errorf("destination streams: %w", err)
	}
	for name, x := range da {
		y, ok := db[name]
		switch {
		case !ok:
			v.diff("stream %q is only in the source", name)
		case x != y:
			v.diff("stream %q differs", name)
		}
	}
	for name := range db {
		if _, ok := da[name]; !ok {
			v.diff("stream %q is only in the destination", name)
		}
	}
	return len(da), nil
}
