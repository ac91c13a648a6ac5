package httpstore

// The persistence export and import routes (persist/export,
// persist/import): a tenant's records of every persistence store, in
// pages, through its namespace's driver (persist/driver's Porter), so that
// ckptctl can export, import and copy them with only a token. Invariants:
// a page holds at most MaxExportRecords records and stops before
// MaxExportBytes (one larger record goes alone); an import holds at most
// MaxImportRecords records, is checked whole before the driver loads it,
// and never loads a blob row whose object lies outside the server's blob
// prefix, so that a row cannot make blobs/get read another object of the
// bucket (a checkpoint's content).

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"iter"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/ckptstore/ckptstore/persist"
	pdriver "github.com/ckptstore/ckptstore/persist/driver"
)

// Bounds of the export and import routes.
const (
	// MaxExportRecords is the most records one persist/export page holds,
	// and DefaultExportRecords its page size when the request names none.
	MaxExportRecords     = 1000
	DefaultExportRecords = 100
	// MaxExportBytes is the size of a page's records past which the page
	// ends; a page's first record is always sent, however large.
	MaxExportBytes = 4 << 20
	// MaxImportRecords is the most records one persist/import loads.
	MaxImportRecords = 1000
)

func init() {
	routes["persist/export"] = &route{name: "persist/export", persist: true, serve: (*handler).persistExport}
	routes["persist/import"] = &route{name: "persist/import", persist: true, serve: (*handler).persistImport}
}

// porter returns the namespace's persistence driver as a Porter.
func (h *handler) porter(ns *namespace) (pdriver.Porter, error) {
	if _, err := h.persistOf(ns); err != nil {
		return nil, err
	}
	ns.pmu.Lock()
	defer ns.pmu.Unlock()
	if ns.pport == nil {
		return nil, reqErr(CodeUnsupported, "this server's persistence driver cannot export or import records")
	}
	return ns.pport, nil
}

// persistExport answers {records, next?}: the records after cursor, at
// most limit of them, and the cursor of the next page when there is one.
func (h *handler) persistExport(c *call) error {
	p, err := h.porter(c.ns)
	if err != nil {
		return err
	}
	return servePage(c, exportRoute[pdriver.Record]{
		def: DefaultExportRecords,
		max: MaxExportRecords,
		badLimit: func(limit int64) error {
			return fmt.Errorf("%w: limit %d is not 1 to %d", pdriver.ErrInvalidEntry, limit, MaxExportRecords)
		},
		dump: func(cursor string) (iter.Seq2[pdriver.Record, error], error) {
			after, err := pdriver.ParseCursor(cursor)
			if err != nil {
				return nil, err
			}
			return p.Dump(c.ctx, after), nil
		},
		marshal: func(r pdriver.Record) ([]byte, error) {
			b, err := r.MarshalJSON()
			if err != nil {
				return nil, fmt.Errorf("%w: the stored %s %q: %v", pdriver.ErrCorrupt, r.Kind, r.ID(), err)
			}
			return b, nil
		},
		cursor: func(r pdriver.Record) string { return p.PositionOf(r).Cursor() },
	})
}

// persistImport loads {records} into the namespace's driver and answers
// {loaded}: how many records it stored (the others were there, equal).
// A blob row whose object lies outside the server's blob prefix fails
// the call before anything is loaded.
func (h *handler) persistImport(c *call) error {
	p, err := h.porter(c.ns)
	if err != nil {
		return err
	}
	prefix := h.opts.BlobPrefix
	if prefix == "" {
		prefix = persist.DefaultBlobPrefix
	}
	return serveImport(c, readRecords, func(recs []pdriver.Record) (int, error) {
		for _, r := range recs {
			if r.Kind == pdriver.KindBlob && !strings.HasPrefix(r.Blob.Object, prefix) {
				return 0, fmt.Errorf("%w: blob %q names the object %q, outside this server's blob prefix %q", pdriver.ErrInvalidEntry, r.Blob.Key, r.Blob.Object, prefix)
			}
		}
		return p.Load(c.ctx, recs)
	})
}

// readRecords reads an array of at most MaxImportRecords persistence
// records (Record.UnmarshalJSON each, raw values kept byte for byte): the
// member's bytes as sent, then each element's.
func readRecords(x *pdriver.Reader, path string) []pdriver.Record {
	v, ok, err := x.JSON.PaddedView()
	if err != nil || !ok {
		x.Add(cmp.Or(err, fmt.Errorf("%w: %s is not an array of records", pdriver.ErrInvalidEntry, path)))
		return nil
	}
	recs, err := parseRecords(v, path)
	x.Add(err)
	return recs
}

// parseRecords reads b, a JSON array of records.
func parseRecords(b []byte, path string) ([]pdriver.Record, error) {
	d := jsontext.NewDecoder(bytes.NewReader(b))
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '[' {
		return nil, fmt.Errorf("%w: %s is not an array of records", pdriver.ErrInvalidEntry, path)
	}
	recs := []pdriver.Record{}
	for i := 0; d.PeekKind() != ']'; i++ {
		if i == MaxImportRecords {
			return nil, fmt.Errorf("%w: %s holds more than %d records", pdriver.ErrInvalidEntry, path, MaxImportRecords)
		}
		v, err := d.ReadValue()
		if err != nil {
			return nil, fmt.Errorf("%w: %s/%d: %v", pdriver.ErrInvalidEntry, path, i, err)
		}
		var r pdriver.Record
		// v is the decoder's buffer, which its next read may reuse.
		if err := r.UnmarshalJSON(bytes.Clone(v)); err != nil {
			return nil, fmt.Errorf("%s/%d: %w", path, i, err)
		}
		recs = append(recs, r)
	}
	return recs, nil
}

// ExportPersistence reads one page of the namespace's persistence records
// (every record of the runs, generation runs, interrupts, metadata,
// artifacts and blob rows, in the server driver's dump order): those
// after cursor ("" is the start), at most limit (0: the server's default
// page, DefaultExportRecords; at most MaxExportRecords). next is the
// cursor of the following page, "" after the last.
func (c *Client) ExportPersistence(ctx context.Context, cursor string, limit int) (recs []pdriver.Record, next string, err error) {
	if limit < 0 || limit > MaxExportRecords {
		return nil, "", fmt.Errorf("%w: limit %d is not 0 to %d", pdriver.ErrInvalidEntry, limit, MaxExportRecords)
	}
	return exportCall(ctx, c, "persist/export", cursor, limit, readRecords)
}

// ImportPersistence loads recs (at most MaxImportRecords) into the
// namespace's persistence and returns how many it stored, as a driver's
// Load does: a record stored already with equal content is skipped, one
// stored with other content fails the call with
// persist/driver.ErrRecordConflict and nothing is written (on Redis, per
// record: see Porter.Load). A blob row's object must lie under the
// server's blob prefix, and its bytes are not carried: the row names an
// object of the server's bucket. A lost reply is retried; the load is
// idempotent by content.
func (c *Client) ImportPersistence(ctx context.Context, recs []pdriver.Record) (int, error) {
	if len(recs) > MaxImportRecords {
		return 0, fmt.Errorf("%w: %d records is more than %d a call", pdriver.ErrInvalidEntry, len(recs), MaxImportRecords)
	}
	body := make([]byte, 1, 2+256*len(recs))
	body[0] = '['
	for i, r := range recs {
		b, err := r.MarshalJSON()
		if err != nil {
			return 0, fmt.Errorf("record %d: %w", i, err)
		}
		if i > 0 {
			body = append(body, ',')
		}
		body = append(body, b...)
	}
	return importCall(ctx, c, "persist/import", append(body, ']'))
}
