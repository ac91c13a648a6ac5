package streams

// Check: the consistency check of a namespace's streams, through the
// Porter every driver has, so that one walk serves every engine.

import (
	"context"
	"fmt"
	"strings"
)

// Problem is one broken invariant of a stream.
type Problem struct {
	// Stream is the stream's name (a nameless one's dump name).
	Stream string
	// What says what is wrong.
	What string
}

// Check walks every stream of p, heads and data, in pages, and returns
// the broken invariants it finds: a head that is not well-formed, a fork
// whose source is missing or shorter than its fork point, data that does
// not run without gap from the fork point to the tail or is not JSON
// messages in a JSON stream, an import left pending, and a soft-deleted
// or nameless stream that no fork reads (leaked). It holds one page of
// heads, one data page, and an entry of each stream's name and tail.
func Check(ctx context.Context, p Porter) ([]Problem, error) {
	var out []Problem
	bad := func(name, format string, args ...any) {
		out = append(out, Problem{Stream: name, What: fmt.Sprintf(format, args...)})
	}
	tails := map[string]Pos{}
	read := map[string]bool{} // the sources some fork reads
	var deleted []string      // the soft-deleted and nameless streams
	for after := uint64(0); ; {
		heads, err := p.PortList(ctx, after, dumpPage)
		if err != nil {
			return out, err
		}
		if len(heads) == 0 {
			break
		}
		for i := range heads {
			h := &heads[i]
			after = h.Serial
			if err := checkHead(h); err != nil {
				bad(h.Name, "%s", strings.TrimPrefix(err.Error(), "streams: "))
			}
			tail := h.Tail
			if h.Pending != nil {
				bad(h.Name, "an import is pending at %d of %d: import the same records again to finish it", *h.Pending, h.Tail)
				tail = *h.Pending
			}
			tails[h.Name] = h.Tail
			if h.Deleted {
				deleted = append(deleted, h.Name)
			}
			if f := h.Fork; f != nil {
				read[f.Source] = true
				st, ok := tails[f.Source]
				switch {
				case !ok:
					bad(h.Name, "its fork source %q is missing", f.Source)
				case f.Pos > st:
					bad(h.Name, "its fork point %d is past its source %q's tail %d", f.Pos, f.Source, st)
				}
			}
			if err := checkData(ctx, p, h, tail, bad); err != nil {
				return out, err
			}
		}
	}
	for _, name := range deleted {
		if !read[name] {
			bad(name, "soft-deleted, and no fork reads it: its data is leaked")
		}
	}
	return out, nil
}

// checkData reads h's own data from its fork point to tail.
func checkData(ctx context.Context, p Porter, h *StreamRecord, tail Pos, bad func(string, string, ...any)) error {
	isJSON := MediaType(h.ContentType) == "application/json"
	for from := h.Base(); from < tail; {
		chunks, err := p.PortData(ctx, h.Serial, from, tail, MaxDataRecord)
		if err != nil {
			return err
		}
		if len(chunks) == 0 {
			bad(h.Name, "no data from %d to its tail %d", from, tail)
			return nil
		}
		for _, c := range chunks {
			if c.Start != from || c.Len() <= 0 {
				bad(h.Name, "data at %d where %d was expected", c.Start, from)
				return nil
			}
			if (c.Ends != nil) != isJSON {
				bad(h.Name, "data at %d of the wrong mode for its content type", c.Start)
			} else if isJSON {
				r := Record{Data: &DataRecord{Name: "x", Start: c.Start, Data: c.Data, Ends: c.Ends}}
				if err := CheckRecord(&r, true); err != nil {
					bad(h.Name, "the JSON messages at %d are malformed", c.Start)
				}
			}
			from = c.End()
		}
	}
	return nil
}
