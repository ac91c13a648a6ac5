// Package streams is the Durable Streams contract: append-only logs
// addressed by server-minted offsets, with closure, forks, TTL and expiry,
// idempotent producers and JSON mode (the protocol of docs/streams.md).
//
// It is the portable layer, run once for every engine: the pure checks of
// headers and bodies, offsets and their sentinels, JSON mode's message
// boundaries and array flattening, fork resolution, TTL arithmetic and the
// producer rules. An engine supplies a Driver whose every write (create,
// append, close, fork, delete) is one atomic step that calls the decision
// functions of this package (DecideCreate, DecideAppend, ResolveFork) on
// the state it read in that step.
package streams

import (
	"context"
	"mime"
	"strings"
	"time"
)

// DefaultContentType is the content type of a stream created without one.
const DefaultContentType = "application/octet-stream"

// Config is what creating a stream sets.
type Config struct {
	// ContentType is the stream's MIME type, as the creator sent it.
	ContentType string
	// TTL is the sliding time-to-live in seconds, when HasTTL: the stream
	// expires TTL seconds after its last read or write.
	TTL    int64
	HasTTL bool
	// ExpiresAt is the absolute expiry; zero for none.
	ExpiresAt time.Time
}

// Matches reports whether c and o are the same configuration: the same
// media type (case-insensitive, parameters ignored), TTL and expiry.
func (c *Config) Matches(o *Config) bool {
	return SameMediaType(c.ContentType, o.ContentType) && c.HasTTL == o.HasTTL && c.TTL == o.TTL &&
		c.ExpiresAt.Equal(o.ExpiresAt)
}

// JSON reports whether the stream is in JSON mode.
func (c *Config) JSON() bool { return MediaType(c.ContentType) == "application/json" }

// MediaType is ct's media type, lower-case, without parameters.
func MediaType(ct string) string {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		mt, _, _ = strings.Cut(ct, ";")
		mt = strings.ToLower(strings.TrimSpace(mt))
	}
	return mt
}

// SameMediaType reports whether a and b name the same media type.
func SameMediaType(a, b string) bool { return MediaType(a) == MediaType(b) }

// Fork is where a fork branches off its source.
type Fork struct {
	// Source is the source stream's name.
	Source string
	// Pos is the fork point: positions below it are the source's.
	Pos Pos
}

// Info is a stream's state as a reader sees it.
type Info struct {
	Config
	// Closed: the stream takes no more appends.
	Closed bool
	// Tail is the position after the last unit.
	Tail Pos
	// Accessed is the last read or write, from which a TTL counts.
	Accessed time.Time
	// Fork is set on a fork.
	Fork *Fork
	// Created tells apart the streams that held one name in turn (the
	// creation time in ns, say): it is part of a read's ETag.
	Created int64
}

// Deadline is when the stream expires; zero for never.
func (i *Info) Deadline() time.Time {
	if i.HasTTL {
		return i.Accessed.Add(time.Duration(i.TTL) * time.Second)
	}
	return i.ExpiresAt
}

// Expired reports whether the stream has expired at now.
func (i *Info) Expired(now time.Time) bool {
	d := i.Deadline()
	return !d.IsZero() && !now.Before(d)
}

// Chunk is the data of one append (or a slice of it): bytes, or in JSON
// mode messages joined by commas, Ends[i] being the end of message i in
// Data. A chunk's length is its number of units.
type Chunk struct {
	// Start is the position of the chunk's first unit.
	Start Pos
	Data  []byte
	// Ends is nil for bytes.
	Ends []int32
}

// Len is the number of units of c.
func (c *Chunk) Len() Pos {
	if c.Ends != nil {
		return Pos(len(c.Ends))
	}
	return Pos(len(c.Data))
}

// End is the position after c.
func (c *Chunk) End() Pos { return c.Start + c.Len() }

// Slice returns the units of c in [from, to), which must lie within c.
func (c *Chunk) Slice(from, to Pos) Chunk {
	i, j := from-c.Start, to-c.Start
	if c.Ends == nil {
		return Chunk{Start: from, Data: c.Data[i:j:j]}
	}
	if i == j {
		return Chunk{Start: from, Ends: []int32{}}
	}
	lo := int32(0)
	if i > 0 {
		lo = c.Ends[i-1] + 1 // past the comma
	}
	hi := c.Ends[j-1]
	ends := make([]int32, j-i)
	for k := range ends {
		ends[k] = c.Ends[int(i)+k] - lo
	}
	return Chunk{Start: from, Data: c.Data[lo:hi:hi], Ends: ends}
}

// Take appends to out the units of c from from (below to), about budget
// bytes of them and at least one unit, and returns out, where it stopped
// and the budget left: every driver's read of its chunks pages by it.
func (c *Chunk) Take(out []Chunk, from, to Pos, budget int) ([]Chunk, Pos, int) {
	end := min(c.End(), to)
	if c.Ends == nil {
		end = min(end, from+Pos(budget))
		budget -= int(end - from)
	} else {
		j := from
		for j < end && budget > 0 {
			k := j - c.Start
			lo := int32(0)
			if k > 0 {
				lo = c.Ends[k-1] + 1
			}
			budget -= int(c.Ends[k]-lo) + 1
			j++
		}
		end = j
	}
	return append(out, c.Slice(from, end)), end, budget
}

// Producer is an idempotent producer's request tuple.
type Producer struct {
	ID         string
	Epoch, Seq int64
}

// ProducerState is what a stream keeps of a producer: its epoch and the
// highest sequence it accepted in that epoch.
type ProducerState struct {
	Epoch, LastSeq int64
}

// Writers is a stream's writer state besides its producers.
type Writers struct {
	// LastSeq is the last Stream-Seq accepted ("" for none).
	LastSeq string
	// MaxEpoch is the highest epoch any producer wrote, for the opt-in
	// per-stream epoch fence.
	MaxEpoch int64
	// ClosedBy is the producer tuple of the append that closed the
	// stream, if a producer closed it.
	ClosedBy *Producer
}

// CreateRequest creates a stream (PUT).
type CreateRequest struct {
	// Config: ContentType "" means the default, or the source's for a fork.
	Config
	// Closed creates the stream closed.
	Closed bool
	// Body is the initial data, already checked (CheckBody); nil for none.
	Body *Chunk
	// Fork, when set, makes the stream a fork.
	Fork *ForkRequest
}

// ForkRequest is the fork part of a CreateRequest.
type ForkRequest struct {
	// Source is the source stream's name.
	Source string
	// Offset is the anchor, when HasOffset; else the source's tail.
	Offset    Pos
	HasOffset bool
	// Sub counts units past Offset, within the data that starts there.
	Sub int64
}

// AppendRequest appends to a stream (POST).
type AppendRequest struct {
	// ContentType is the body's; ignored when Body is nil.
	ContentType string
	// Body is the data, already checked (CheckBody); nil for a close-only
	// request.
	Body *Chunk
	// Close closes the stream after the append, in the same step.
	Close bool
	// Seq is Stream-Seq, when HasSeq.
	Seq    string
	HasSeq bool
	// Producer is the idempotent producer, if any.
	Producer *Producer
	// EpochFence turns on the per-stream epoch fence for this request: a
	// producer epoch below the highest any producer wrote is stale.
	EpochFence bool
	// ExpectTail, when HasExpectTail, makes the request conditional: it
	// applies only while the stream's tail is ExpectTail, else
	// ErrTailMismatch, so a writer that names the offsets of its data
	// never has them placed elsewhere. A producer's duplicate is still a
	// duplicate (its first try met the condition).
	ExpectTail    Pos
	HasExpectTail bool
}

// AppendResult is a successful append.
type AppendResult struct {
	// Next is the tail after the append.
	Next Pos
	// Closed: the stream is closed now.
	Closed bool
	// Duplicate: the producer's request was already applied; nothing was
	// written.
	Duplicate bool
	// Epoch and Seq echo the producer's epoch and highest accepted
	// sequence, when the request had a producer.
	Epoch, Seq int64
}

// ReadResult is the data from a position on.
type ReadResult struct {
	// Info is the stream at the time of the read.
	Info Info
	// Chunks hold the units from the read's start to Next.
	Chunks []Chunk
	// Next is the position after the data returned.
	Next Pos
}

// Driver is an engine's stream storage within one namespace. Every write
// is one atomic step (one lock, transaction or script) that reads the
// stream's state, decides with this package's functions, and writes.
// Reads and writes renew a sliding TTL; now is the clock of the request.
type Driver interface {
	// Create creates name, or reports the existing stream when the
	// request matches it (created false). The fork, if any, is resolved
	// against its source in the same step (ResolveFork).
	Create(ctx context.Context, name string, req *CreateRequest, now time.Time) (info Info, created bool, err error)
	// Append decides req with DecideAppend and applies it.
	Append(ctx context.Context, name string, req *AppendRequest, now time.Time) (AppendResult, error)
	// Delete deletes name: soft when forks still read it.
	Delete(ctx context.Context, name string, now time.Time) error
	// Head returns the stream's state; touch renews its TTL.
	Head(ctx context.Context, name string, touch bool, now time.Time) (Info, error)
	// Read returns the data from from on, about max bytes of it (at least
	// one unit when there is any), and renews the TTL. from past the
	// tail is ErrBadRequest.
	Read(ctx context.Context, name string, from Pos, max int, now time.Time) (ReadResult, error)
	// Wait returns once the stream's tail is past tail, it is closed or
	// gone, or ctx is done (ctx.Err()). It may return early: the caller
	// reads again.
	Wait(ctx context.Context, name string, tail Pos) error
}

// Sweeper is a Driver that removes expired streams in the background, a
// bounded batch at a time, so that a stream nobody reads again does not
// keep its storage. Reads never depend on it: an expired stream is 404
// whether or not a sweep removed it.
type Sweeper interface {
	// SweepExpired looks at up to max streams, the next ones after the
	// last call's, removes those expired at now, and returns how many it
	// removed.
	SweepExpired(ctx context.Context, now time.Time, max int) (int, error)
}
