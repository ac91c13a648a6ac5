package httpstore

// The paging that the export and import routes of persistence records
// (persist/export, persist/import) and of streams (streams/export,
// streams/import) share, server side and client side: one page is
// {records, next?} for a request {cursor?, limit?}, one import is
// {records} answered with {loaded}. Each kind of record brings its own
// bounds, parser, cursor and error texts. Invariant: a page holds at most
// its route's limit of records and stops before MaxExportBytes (its first
// record always goes, however large).

import (
	"context"
	"iter"

	pdriver "github.com/ckptstore/ckptstore/persist/driver"
)

// exportRoute is what an export route serves one kind of record R by.
type exportRoute[R any] struct {
	// def is the page size of a request that names no limit, max the
	// largest limit accepted; badLimit is the error of one out of 1 to
	// max.
	def, max int
	badLimit func(limit int64) error
	// dump yields the records after cursor (one past the page is read, so
	// that the last page says it is the last).
	dump func(cursor string) (iter.Seq2[R, error], error)
	// marshal is a record's JSON, cursor the cursor after it.
	marshal func(R) ([]byte, error)
	cursor  func(R) string
}

// servePage answers {records, next?}: the records after the request's
// cursor, at most its limit of them, and the cursor of the next page when
// there is one.
func servePage[R any](c *call, e exportRoute[R]) error {
	var cursor string
	var limit *int64
	err := decode(c, func(x *pdriver.Reader, n string) bool {
		switch n {
		case "cursor":
			x.Text(&cursor, "/cursor")
		case "limit":
			x.OptInt(&limit, "/limit")
		default:
			return false
		}
		return true
	})
	if err != nil {
		return err
	}
	n := e.def
	if limit != nil {
		if *limit < 1 || *limit > int64(e.max) {
			return e.badLimit(*limit)
		}
		n = int(*limit)
	}
	recs, err := e.dump(cursor)
	if err != nil {
		return err
	}
	var page []byte
	var last R
	count := 0
	next := ""
	for r, err := range recs {
		if err != nil {
			return err
		}
		b, err := e.marshal(r)
		if err != nil {
			return err
		}
		if count == n || count > 0 && len(page)+len(b) > MaxExportBytes {
			next = e.cursor(last)
			break
		}
		if count > 0 {
			page = append(page, ',')
		}
		page = append(page, b...)
		last = r
		count++
	}
	c.out.name("records")
	c.out.b = append(append(append(c.out.b, '['), page...), ']')
	if next != "" {
		c.out.str("next", next)
	}
	return nil
}

// serveImport reads {records} with read, loads them with load and answers
// {loaded}: how many records it stored.
func serveImport[R any](c *call, read func(x *pdriver.Reader, path string) []R, load func([]R) (int, error)) error {
	var recs []R
	err := decode(c, func(x *pdriver.Reader, n string) bool {
		if n != "records" {
			return false
		}
		recs = read(x, "/records")
		return true
	})
	if err != nil {
		return err
	}
	loaded, err := load(recs)
	if err != nil {
		return err
	}
	c.out.int("loaded", int64(loaded))
	return nil
}

// exportCall reads one page of route: the records after cursor, at most
// limit (0: the route's default), read by read, and the next page's
// cursor ("" after the last). The caller checks limit.
func exportCall[R any](ctx context.Context, c *Client, route, cursor string, limit int, read func(x *pdriver.Reader, path string) []R) (recs []R, next string, err error) {
	err = pc{c.c}.call(ctx, route, false, "", func(o *object) error {
		if cursor != "" {
			o.str("cursor", cursor)
		}
		if limit > 0 {
			o.int("limit", int64(limit))
		}
		return nil
	}, func(x *pdriver.Reader, name string) bool {
		switch name {
		case "records":
			recs = read(x, "/records")
		case "next":
			x.Text(&next, "/next")
		default:
			return false
		}
		return true
	})
	if err != nil {
		return nil, "", err
	}
	return recs, next, nil
}

// importCall sends records, a JSON array as it goes on the wire, to
// route and returns how many the server stored. It is a write: a lost
// reply is retried, the load being idempotent by content.
func importCall(ctx context.Context, c *Client, route string, records []byte) (int, error) {
	var loaded int64
	err := pc{c.c}.call(ctx, route, true, "", func(o *object) error {
		o.name("records")
		o.b = append(o.b, records...)
		return nil
	}, func(x *pdriver.Reader, name string) bool {
		if name != "loaded" {
			return false
		}
		x.Int(&loaded, "/loaded")
		return true
	})
	return int(loaded), err
}
