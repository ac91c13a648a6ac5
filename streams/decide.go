package streams

import "errors"

// The decision functions a driver calls inside its atomic step, on the
// state it read in that step. They write nothing; the driver applies what
// they return. So every engine decides alike, and a retried request meets
// the state its first try left.

// NameLookupErr maps the error of a create's lookup of its own name: a
// deleted stream that forks still read holds the name (ErrExists), no
// stream (ErrNotFound: none, or it expired) is nil, any other error is
// the lookup's.
func NameLookupErr(err error) error {
	switch {
	case errors.Is(err, ErrGone):
		return errorf(ErrExists, "the name is held by a deleted stream that forks still read")
	case errors.Is(err, ErrNotFound):
		return nil
	}
	return err
}

// SourceLookupErr maps the error of a fork's lookup of its source: a
// deleted source is ErrSourceGone; any other error is the lookup's.
func SourceLookupErr(err error) error {
	if errors.Is(err, ErrGone) {
		return errorf(ErrSourceGone, "the fork's source is deleted")
	}
	return err
}

// DecideCreate decides a create of a name: the configuration the new
// stream sets and its fork point (nil for a plain create), or the error
// that refuses the request. old is the live stream that holds the name
// (nil for none; DecideExisting decides against it, and on nil error the
// driver answers with old and writes nothing but its access time). src is
// the fork source, looked up when req.Fork is set, and run the number of
// units from an anchor in src to the end of the chunk that holds it (see
// ResolveFork), read only when a sub-offset needs it.
func DecideCreate(req *CreateRequest, old, src *Info, run func(anchor Pos) (Pos, error)) (Config, *Fork, error) {
	var (
		cfg  Config
		fork *Fork
	)
	if f := req.Fork; f != nil {
		var err error
		if cfg, err = ForkConfig(src, req); err != nil {
			return Config{}, nil, err
		}
		var runErr error
		pos, err := ResolveFork(src, f, func(anchor Pos) Pos {
			n, err := run(anchor)
			runErr = err
			return n
		})
		if runErr != nil {
			return Config{}, nil, runErr
		}
		if err != nil {
			return Config{}, nil, err
		}
		fork = &Fork{Source: f.Source, Pos: pos}
	} else {
		cfg = CreateConfig(req)
	}
	if old != nil {
		if err := DecideExisting(old, &cfg, req, fork); err != nil {
			return Config{}, nil, err
		}
	}
	return cfg, fork, nil
}

// DecideExisting decides a create of a name that holds info: nil when the
// request matches (the reply is 200), ErrExists when it does not. want is
// the request's configuration after fork resolution (ForkConfig).
func DecideExisting(info *Info, want *Config, req *CreateRequest, fork *Fork) error {
	if !info.Matches(want) || info.Closed != req.Closed {
		return errorf(ErrExists, "the stream exists with another configuration or closure")
	}
	if (info.Fork == nil) != (fork == nil) || (fork != nil && *fork != *info.Fork) {
		return errorf(ErrExists, "the stream exists with another fork source or offset")
	}
	return nil
}

// CreateConfig is the configuration a plain (not fork) create sets.
func CreateConfig(req *CreateRequest) Config {
	c := req.Config
	if c.ContentType == "" {
		c.ContentType = DefaultContentType
	}
	return c
}

// ForkConfig is the configuration of a fork of src: the source's content
// type when the request names none (another is ErrContentType), and the
// expiry of the protocol's table: the request's TTL or Expires-At if it
// sends one, else the source's.
func ForkConfig(src *Info, req *CreateRequest) (Config, error) {
	c := req.Config
	if c.ContentType == "" {
		c.ContentType = src.ContentType
	} else if !SameMediaType(c.ContentType, src.ContentType) {
		return c, errorf(ErrContentType, "the fork's content type is not its source's")
	}
	if !c.HasTTL && c.ExpiresAt.IsZero() {
		c.TTL, c.HasTTL, c.ExpiresAt = src.TTL, src.HasTTL, src.ExpiresAt
	}
	return c, nil
}

// ResolveFork returns the fork point of req in the source src: the anchor
// (the request's offset, else the source's tail), which must not pass the
// tail, plus the sub-offset, which must stay within the data that starts
// at the anchor; run is the number of units from the anchor to the end of
// the chunk that holds it (0 at the tail).
func ResolveFork(src *Info, req *ForkRequest, run func(anchor Pos) Pos) (Pos, error) {
	anchor := src.Tail
	if req.HasOffset {
		anchor = req.Offset
	}
	if anchor > src.Tail {
		return 0, errorf(ErrBadRequest, "Stream-Fork-Offset is past the source's tail")
	}
	if req.Sub == 0 {
		return anchor, nil
	}
	if !req.HasOffset {
		return 0, errorf(ErrBadRequest, "Stream-Fork-Sub-Offset needs a Stream-Fork-Offset")
	}
	if Pos(req.Sub) > run(anchor) {
		return 0, errorf(ErrBadRequest, "Stream-Fork-Sub-Offset %d passes the data at the fork offset", req.Sub)
	}
	return anchor + Pos(req.Sub), nil
}

// Decision is what DecideAppend tells a driver to do.
type Decision struct {
	// Write: append req.Body (when not nil), set the producer state
	// (when req.Producer is set), Stream-Seq and MaxEpoch, and close when
	// req.Close.
	Write bool
	// State is the producer's new state, when Write and req.Producer.
	State ProducerState
	// Result is the reply, whose Next the driver fills in after writing.
	Result AppendResult
}

// DecideAppend decides req against a stream (info, its writers, and the
// state of req's producer: nil when the stream has none for it). In the
// order of the protocol: a closed stream; the content type; the producer
// (epoch fence, stale epoch, a new epoch, duplicates, gaps); then the
// expected tail (after the producer, so a retry whose first try applied
// is a duplicate, not a mismatch); Stream-Seq.
func DecideAppend(info *Info, w *Writers, ps *ProducerState, req *AppendRequest) (Decision, error) {
	p := req.Producer
	res := AppendResult{Next: info.Tail, Closed: info.Closed}
	if p != nil {
		res.Epoch = p.Epoch
	}
	if info.Closed {
		if p != nil {
			if err := staleEpoch(w, ps, req); err != nil {
				return Decision{}, err
			}
			if c := w.ClosedBy; c != nil && *c == *p {
				res.Duplicate, res.Seq = true, p.Seq
				return Decision{Result: res}, nil
			}
		}
		if req.Body == nil && req.Close && p == nil {
			return Decision{Result: res}, nil // closing again: idempotent
		}
		e := errorf(ErrClosed, "the stream is closed")
		e.Tail = info.Tail
		return Decision{}, e
	}
	if req.Body != nil && !SameMediaType(req.ContentType, info.ContentType) {
		return Decision{}, errorf(ErrContentType, "the body's content type %s is not the stream's %s", quoteShort(req.ContentType), quoteShort(info.ContentType))
	}
	var st ProducerState
	if p != nil {
		if err := staleEpoch(w, ps, req); err != nil {
			return Decision{}, err
		}
		switch {
		case ps == nil || p.Epoch > ps.Epoch:
			if p.Seq != 0 {
				if ps != nil {
					return Decision{}, errorf(ErrBadRequest, "a new producer epoch starts at Producer-Seq 0")
				}
				e := errorf(ErrSeqGap, "producer sequence gap: expected 0, received %d", p.Seq)
				e.Expected, e.Received = 0, p.Seq
				return Decision{}, e
			}
		case p.Seq <= ps.LastSeq:
			res.Duplicate, res.Seq = true, ps.LastSeq
			return Decision{Result: res}, nil
		case p.Seq > ps.LastSeq+1:
			e := errorf(ErrSeqGap, "producer sequence gap: expected %d, received %d", ps.LastSeq+1, p.Seq)
			e.Expected, e.Received = ps.LastSeq+1, p.Seq
			return Decision{}, e
		}
		st = ProducerState{Epoch: p.Epoch, LastSeq: p.Seq}
		res.Seq = p.Seq
	}
	if req.HasExpectTail && info.Tail != req.ExpectTail {
		e := errorf(ErrTailMismatch, "the tail is %s, not the expected %s", info.Tail.Offset(), req.ExpectTail.Offset())
		e.Tail = info.Tail
		return Decision{}, e
	}
	if req.HasSeq && w.LastSeq != "" && req.Seq <= w.LastSeq {
		return Decision{}, errorf(ErrSeqConflict, "Stream-Seq %s is not above the last, %s", quoteShort(req.Seq), quoteShort(w.LastSeq))
	}
	if req.Body == nil && !req.Close {
		return Decision{}, errorf(ErrBadRequest, "an empty append: send data, or Stream-Closed: true")
	}
	res.Closed = req.Close
	if req.Body != nil {
		res.Next = info.Tail + req.Body.Len()
	}
	return Decision{Write: true, State: st, Result: res}, nil
}

// staleEpoch fences a producer epoch below the producer's own, or, with
// the per-stream fence on, below the highest any producer wrote.
func staleEpoch(w *Writers, ps *ProducerState, req *AppendRequest) error {
	p := req.Producer
	cur := int64(-1)
	if ps != nil {
		cur = ps.Epoch
	}
	if req.EpochFence && w.MaxEpoch > cur {
		cur = w.MaxEpoch
	}
	if p.Epoch < cur {
		e := errorf(ErrStaleEpoch, "producer epoch %d is below %d", p.Epoch, cur)
		e.Epoch = cur
		return e
	}
	return nil
}

// Apply updates w for a written decision d of req.
func (w *Writers) Apply(req *AppendRequest, d *Decision) {
	if req.HasSeq {
		w.LastSeq = req.Seq
	}
	if p := req.Producer; p != nil {
		if p.Epoch > w.MaxEpoch {
			w.MaxEpoch = p.Epoch
		}
		if req.Close {
			c := *p
			w.ClosedBy = &c
		}
	}
}
