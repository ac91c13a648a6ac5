package httpstore

// The stream export and import routes (streams/export, streams/import): a
// tenant's Durable Streams, heads and data, in pages, through its
// namespace's stream driver (streams.Porter), so that ckptctl can export,
// import and copy them with only a token. Invariants: a page holds at
// most MaxStreamExportRecords records and stops before MaxExportBytes (one
// larger record goes alone), each page one bounded Dump from the cursor;
// an import holds at most MaxStreamImportRecords records, each loaded in
// one step of the driver (streams.Load), and the call ends at the first
// that fails.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"

	pdriver "github.com/ckptstore/ckptstore/persist/driver"
	"github.com/ckptstore/ckptstore/streams"
)

// Bounds of the stream export and import routes. A data record holds at
// most streams.MaxDataRecord bytes (more only for one larger JSON
// message), so a page is about MaxExportBytes at most.
const (
	// MaxStreamExportRecords is the most records one streams/export page
	// holds, and DefaultStreamExportRecords its page size when the
	// request names none.
	MaxStreamExportRecords     = 1000
	DefaultStreamExportRecords = 100
	// MaxStreamImportRecords is the most records one streams/import
	// loads.
	MaxStreamImportRecords = 1000
)

func init() {
	routes["streams/export"] = &route{name: "streams/export", persist: true, serve: (*handler).streamsExport}
	routes["streams/import"] = &route{name: "streams/import", persist: true, serve: (*handler).streamsImport}
}

// streamPorter returns the namespace's stream driver as a Porter.
func (h *handler) streamPorter(ns *namespace) (streams.Porter, error) {
	d, err := h.streamDriver(ns)
	if err != nil {
		return nil, err
	}
	p, ok := d.(streams.Porter)
	if !ok {
		return nil, reqErr(CodeUnsupported, "this server's stream driver cannot export or import streams")
	}
	return p, nil
}

// streamsExport answers {records, next?}: the records after cursor, at
// most limit of them, and the cursor of the next page when there is one.
func (h *handler) streamsExport(c *call) error {
	p, err := h.streamPorter(c.ns)
	if err != nil {
		return err
	}
	return servePage(c, exportRoute[streams.Record]{
		def: DefaultStreamExportRecords,
		max: MaxStreamExportRecords,
		badLimit: func(limit int64) error {
			return reqErr(CodeBadRequest, "limit %d is not 1 to %d", limit, MaxStreamExportRecords)
		},
		dump: func(cursor string) (iter.Seq2[streams.Record, error], error) {
			after, err := streams.ParsePosition(cursor)
			if err != nil {
				return nil, err
			}
			return streams.Dump(c.ctx, p, after), nil
		},
		marshal: func(r streams.Record) ([]byte, error) { return json.Marshal(r) },
		cursor:  func(r streams.Record) string { return streams.PositionOf(r).String() },
	})
}

// streamsImport loads {records} into the namespace's stream driver and
// answers {loaded}: how many records it stored (the others were there,
// equal).
func (h *handler) streamsImport(c *call) error {
	p, err := h.streamPorter(c.ns)
	if err != nil {
		return err
	}
	return serveImport(c, readStreamRecords, func(recs []streams.Record) (int, error) {
		return streams.Load(c.ctx, p, recs)
	})
}

// readStreamRecords reads an array of at most MaxStreamImportRecords
// stream records.
func readStreamRecords(x *pdriver.Reader, path string) []streams.Record {
	v, ok, err := x.JSON.PaddedView()
	if err != nil || !ok {
		if err == nil {
			err = reqErr(CodeBadRequest, "%s is not an array of stream records", path)
		}
		x.Add(err)
		return nil
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(v, &raw); err != nil {
		x.Add(reqErr(CodeBadRequest, "%s is not an array of stream records: %v", path, err))
		return nil
	}
	if len(raw) > MaxStreamImportRecords {
		x.Add(reqErr(CodeBadRequest, "%s holds more than %d records", path, MaxStreamImportRecords))
		return nil
	}
	recs := make([]streams.Record, len(raw))
	for i, m := range raw {
		if err := unmarshalStrict(m, &recs[i]); err != nil {
			x.Add(reqErr(CodeBadRequest, "%s/%d: %v", path, i, err))
			return nil
		}
	}
	return recs
}

// unmarshalStrict decodes b into v, refusing unknown members.
func unmarshalStrict(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("more than one value")
	}
	return nil
}

// ExportStreams reads one page of the namespace's streams (heads and
// data, in the server driver's dump order): the records after cursor (""
// is the start), at most limit (0: DefaultStreamExportRecords; at most
// MaxStreamExportRecords). next is the cursor of the following page, ""
// after the last.
func (c *Client) ExportStreams(ctx context.Context, cursor string, limit int) (recs []streams.Record, next string, err error) {
	if limit < 0 || limit > MaxStreamExportRecords {
		return nil, "", fmt.Errorf("%w: limit %d is not 0 to %d", streams.ErrBadRequest, limit, MaxStreamExportRecords)
	}
	return exportCall(ctx, c, "streams/export", cursor, limit, readStreamRecords)
}

// ImportStreams loads recs (at most MaxStreamImportRecords) into the
// namespace's streams and returns how many it stored, as streams.Load
// does: a record stored already with equal content is skipped, one that
// meets other content fails the call with streams.ErrImportConflict
// (STREAM_IMPORT_CONFLICT, 409), nothing of it written, the records
// before it stored. A lost reply is retried; the load is idempotent by
// content.
func (c *Client) ImportStreams(ctx context.Context, recs []streams.Record) (int, error) {
	if len(recs) > MaxStreamImportRecords {
		return 0, fmt.Errorf("%w: %d records is more than %d a call", streams.ErrBadRequest, len(recs), MaxStreamImportRecords)
	}
	body, err := json.Marshal(recs)
	if err != nil {
		return 0, err
	}
	return importCall(ctx, c, "streams/import", body)
}
