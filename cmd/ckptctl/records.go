package main

// What export, import, copy and verify share between the two kinds of
// records they move beside the checkpoints, persistence records and
// stream records: the porter of a store's records (its driver, or a
// ckptserver's export and import routes), the paging of an export route,
// the writing of every record as a line, the gathering of records into
// Load batches and the copy loop. How a batch is loaded, what a refusal
// leaves out and what the summary says stay with each kind (persist.go,
// streams.go).

import (
	"context"
	"fmt"
	"io"
	"iter"
)

// recordPorter is what export, import, copy and verify need of a store's
// records of one kind R.
type recordPorter[R any] interface {
	// Dump yields every record, from the start.
	Dump(ctx context.Context) iter.Seq2[R, error]
	// Load stores recs, as the kind's Load does (idempotent by content,
	// never overwriting), and returns how many it stored.
	Load(ctx context.Context, recs []R) (int, error)
	// maxBatch is the most records one Load takes, 0 for no bound.
	maxBatch() int
}

// serverDump pages through a ckptserver's export route by page, each page
// resumed at the cursor the one before returned, up to the page whose
// next cursor is "". A first page that fails with an error none accepts
// (a server that keeps no such records) ends the dump with no record and
// a note on stderr: "ckptctl: desc: what: err".
func serverDump[R any](ctx context.Context, page func(ctx context.Context, cursor string) ([]R, string, error), none func(error) bool, stderr io.Writer, desc, what string) iter.Seq2[R, error] {
	return func(yield func(R, error) bool) {
		cursor := ""
		for first := true; ; first = false {
			recs, next, err := page(ctx, cursor)
			if first && none(err) {
				fmt.Fprintf(stderr, "ckptctl: %s: %s: %v\n", desc, what, err)
				return
			}
			if err != nil {
				var zero R
				yield(zero, err)
				return
			}
			for _, r := range recs {
				if !yield(r, nil) {
					return
				}
			}
			if next == "" {
				return
			}
			cursor = next
		}
	}
}

// writeRecords writes every record p dumps to w, one line each (marshal's
// bytes), and returns how many of them counts. A failed dump is prefixed
// with what.
func writeRecords[R any](ctx context.Context, p recordPorter[R], w io.Writer, what string, marshal func(*R) ([]byte, error), counts func(*R) bool) (int, error) {
	n := 0
	for r, err := range p.Dump(ctx) {
		if err != nil {
			return n, fmt.Errorf("%s: %w", what, err)
		}
		b, err := marshal(&r)
		if err != nil {
			return n, err
		}
		if _, err := w.Write(append(b, '\n')); err != nil {
			return n, err
		}
		if counts(&r) {
			n++
		}
	}
	return n, nil
}

// batcher gathers records of one kind into Load batches for a destination
// and counts what became of them; a loader embeds it and brings its own
// flush.
type batcher[R any] struct {
	m      *migrator
	p      recordPorter[R] // nil: the destination keeps no such records
	batch  []R
	size   int // about the batch's bytes on the wire
	loaded int // records newly stored
	seen   int // records read from the source
	failed []error
}

// queue appends r (about size bytes), first flushing the batch when it
// holds the migration's --batch records, the porter's maxBatch, or would
// pass --batch-bytes with r.
func (b *batcher[R]) queue(ctx context.Context, r R, size int, flush func(context.Context) error) error {
	full := len(b.batch) >= b.m.opts.batchCount || b.p.maxBatch() > 0 && len(b.batch) >= b.p.maxBatch()
	if len(b.batch) > 0 && (full || b.size+size > b.m.opts.batchBytes) {
		if err := flush(ctx); err != nil {
			return err
		}
	}
	b.batch = append(b.batch, r)
	b.size += size
	return nil
}

// take returns the batch and starts an empty one.
func (b *batcher[R]) take() []R {
	recs := b.batch
	b.batch, b.size = nil, 0
	return recs
}

// batchDone counts a committed batch and runs the env's afterBatch.
func (b *batcher[R]) batchDone() error {
	var err error
	b.m.update("", func() {
		b.m.batches++
		if b.m.e.afterBatch != nil {
			err = b.m.e.afterBatch()
		}
	})
	return err
}

// fail records f, a record left out, and reports it on stderr.
func (b *batcher[R]) fail(f *failure) {
	b.failed = append(b.failed, f)
	fmt.Fprintf(b.m.e.stderr, "ckptctl %s: %v\n", b.m.opts.verb, f)
}

// recordLoader is a loader of records of one kind, for copyRecords.
type recordLoader[R any] interface {
	add(ctx context.Context, r R, size int) error
	flush(ctx context.Context) error
	summary(w io.Writer) error
}

// copyRecords loads every record src dumps into l (size is about a
// record's bytes on the wire), then prints l's summary. A failed dump is
// prefixed with what.
func copyRecords[R any](ctx context.Context, m *migrator, src recordPorter[R], l recordLoader[R], what string, size func(*R) (int, error)) error {
	for r, err := range src.Dump(ctx) {
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		n, err := size(&r)
		if err != nil {
			return err
		}
		if err := l.add(ctx, r, n); err != nil {
			return err
		}
	}
	if err := l.flush(ctx); err != nil {
		return err
	}
	return l.summary(m.e.stdout)
}
