package streamstest

// The producer fault run: the workload and checker shared by the fault
// tests of every engine (a ckptserver killed with SIGKILL and restarted,
// a redis-server killed under AOF always, memkv's injected commit faults,
// lost replies). They differ only in the fault; what they hold the server
// to is here, once.
//
// Invariants the checker asserts, per stream, over a catch-up read of the
// whole stream from -1 after the faults:
//
//   - Each page starts where the last ended, its Stream-Next-Offset is
//     strictly above its start (or equal, on the empty page at the tail),
//     and it holds exactly Next−start messages (JSON mode counts messages),
//     so every message has one offset and they strictly increase.
//   - Every message is one a producer of the stream sent, byte for byte,
//     and no (producer, seq) appears twice.
//   - A producer's messages appear in seq order with no gap: 0, 1, 2, …
//     up to at least its last acknowledged seq, and at most one more (the
//     seq still unanswered when the run stopped, which may or may not be
//     stored).
//   - A seq answered 200 is at the offset that reply acknowledged
//     (Stream-Next-Offset − 1); a seq answered 204 (the server had applied
//     it already: a retry after a lost reply or an unknown commit) is
//     stored once, wherever it is.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore/streams"
)

// Producers is a fault run's workload over HTTP: Streams JSON-mode streams
// of the Durable Streams protocol, each appended to by PerStream
// idempotent producers at once (Producer-Id, Producer-Epoch 0,
// Producer-Seq 0, 1, 2, …, one message per append). A producer sends a
// seq again, with the same headers and body, until the server answers it
// 200 or 204, so a fault (a killed server, a lost reply, a failed commit)
// only delays it. Transport errors and 429, 500, 502, 503 and 504 are
// retried; any other answer is a failure of the run.
type Producers struct {
	// URL is the stream mount, "http://host:port/streams". A server
	// restarted mid-run must come back at the same address.
	URL string
	// Client sends the requests; nil is a client with a 10 s timeout.
	Client *http.Client
	// Header is added to every request (Ckpt-Namespace, Authorization).
	Header http.Header
	// Name prefixes the stream names (name-0, name-1, …); it should be
	// new to the server.
	Name string
	// Streams and PerStream are the streams and the producers of each.
	Streams, PerStream int
	// Pad is the bytes of padding in each message (default 64).
	Pad int
	// RetryWait is the pause before a request is sent again (default
	// 5 ms).
	RetryWait time.Duration
	// Finish bounds how long Stop waits for the appends in flight to be
	// answered (default 30 s); a seq still unanswered then is reported
	// as such.
	Finish time.Duration
}

// Report is what a producer fault run did and found.
type Report struct {
	// Streams and Producers are the run's streams and producers.
	Streams, Producers int
	// Acked is the appends answered 200 (new data) or 204 (already
	// applied), Duplicates the 204s among them, and FirstTry204 the 204s
	// to a seq's first request: the server retried its own commit after
	// an unknown result, met the producer state it had written, and
	// answered duplicate (the data is stored once either way).
	Acked, Duplicates, FirstTry204 int
	// Retries is the requests sent again after a failed attempt, and
	// Failures why those attempts failed: "cut" (a connection that broke
	// with the request in flight), "refused" (no server listening),
	// "timeout", or the HTTP status.
	Retries  int
	Failures map[string]int
	// Unanswered is the seqs still unanswered when the run stopped.
	Unanswered int
	// Read is the messages Check read back, DuplicatesFound the
	// (producer, seq) pairs among them stored more than once.
	Read, DuplicatesFound int
}

// String is the report in one line, for a test's log.
func (r Report) String() string {
	kinds := make([]string, 0, len(r.Failures))
	for k := range r.Failures {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var f strings.Builder
	for i, k := range kinds {
		if i > 0 {
			f.WriteString(", ")
		}
		fmt.Fprintf(&f, "%s %d", k, r.Failures[k])
	}
	return fmt.Sprintf("%d streams × %d producers: %d appends acknowledged (%d of them 204 duplicates, %d of those to a first request), %d retries (%s), %d unanswered at the stop; read back %d messages, %d stored twice",
		r.Streams, r.Producers/max(r.Streams, 1), r.Acked, r.Duplicates, r.FirstTry204, r.Retries, f.String(), r.Unanswered, r.Read, r.DuplicatesFound)
}

// ProducerRun is a running Producers workload.
type ProducerRun struct {
	cfg    Producers
	stop   chan struct{}
	finish context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	acked  atomic.Int64
	prods  []*producer

	mu       sync.Mutex
	failures map[string]int
	errs     []string
}

// producer is one producer's record; only its goroutine writes it until
// the run stops.
type producer struct {
	id      string
	stream  int
	acks    []ack // by seq
	pending bool  // seq len(acks) was sent and never answered
	retries int
}

// ack is the answer to one seq.
type ack struct {
	dup, first bool        // a 204; to the seq's first request
	next       streams.Pos // Stream-Next-Offset of a 200
}

// Start creates the streams (retrying like an append) and starts the
// producers. t only reports a stream that cannot be created.
func (p Producers) Start(t testing.TB) *ProducerRun {
	t.Helper()
	if p.Client == nil {
		p.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if p.Pad <= 0 {
		p.Pad = 64
	}
	if p.RetryWait <= 0 {
		p.RetryWait = 5 * time.Millisecond
	}
	if p.Finish <= 0 {
		p.Finish = 30 * time.Second
	}
	r := &ProducerRun{cfg: p, stop: make(chan struct{}), failures: map[string]int{}}
	r.finish, r.cancel = context.WithCancel(context.Background())
	for s := range p.Streams {
		deadline := time.Now().Add(p.Finish)
		for {
			code, _, err := r.send(http.MethodPut, s, nil, nil)
			if err == nil && (code == http.StatusCreated || code == http.StatusOK) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("streamstest: create %s: %d, %v", r.streamURL(s), code, err)
			}
			time.Sleep(p.RetryWait)
		}
		for i := range p.PerStream {
			r.prods = append(r.prods, &producer{id: fmt.Sprintf("s%d-p%d", s, i), stream: s})
		}
	}
	for _, pr := range r.prods {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.produce(pr)
		}()
	}
	return r
}

// Acked is the appends answered so far, for a test that faults the
// server once the run has made progress.
func (r *ProducerRun) Acked() int64 { return r.acked.Load() }

// WaitAcked waits until at least n appends are answered, or the run
// fails or d passes (an error).
func (r *ProducerRun) WaitAcked(n int64, d time.Duration) error {
	deadline := time.Now().Add(d)
	for r.Acked() < n {
		if err := r.failed(); err != nil {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("streamstest: %d appends answered after %v, waiting for %d", r.Acked(), d, n)
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

func (r *ProducerRun) failed() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.errs) > 0 {
		return errors.New(r.errs[0])
	}
	return nil
}

// Stop stops the producers once each has its seq in flight answered (or
// Producers.Finish passes) and returns the report so far. Call it once.
func (r *ProducerRun) Stop() Report {
	close(r.stop)
	t := time.AfterFunc(r.cfg.Finish, r.cancel)
	r.wg.Wait()
	t.Stop()
	r.cancel()
	rep := Report{Streams: r.cfg.Streams, Producers: len(r.prods), Failures: map[string]int{}}
	r.mu.Lock()
	for k, v := range r.failures {
		rep.Failures[k] = v
	}
	r.mu.Unlock()
	for _, p := range r.prods {
		rep.Acked += len(p.acks)
		for _, a := range p.acks {
			if a.dup {
				rep.Duplicates++
			}
			if a.first {
				rep.FirstTry204++
			}
		}
		rep.Retries += p.retries
		if p.pending {
			rep.Unanswered++
		}
	}
	return rep
}

func (r *ProducerRun) streamURL(s int) string {
	return fmt.Sprintf("%s/%s-%d", r.cfg.URL, r.cfg.Name, s)
}

// message is the body of seq of producer id: compact JSON, as the server
// stores it, so a read returns these bytes.
func (r *ProducerRun) message(id string, seq int64) []byte {
	return fmt.Appendf(nil, `{"p":%q,"s":%d,"x":%q}`, id, seq, strings.Repeat(string(rune('a'+seq%26)), r.cfg.Pad))
}

// send makes one request to stream s and returns its status and headers,
// the body read and discarded.
func (r *ProducerRun) send(method string, s int, body []byte, hdr http.Header) (int, http.Header, error) {
	ctx, cancel := context.WithTimeout(r.finish, r.cfg.Finish)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, r.streamURL(s), bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range r.cfg.Header {
		req.Header[k] = v
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := r.cfg.Client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return 0, nil, err
	}
	return resp.StatusCode, resp.Header, nil
}

// produce is producer p's loop: seq after seq until the run stops, each
// sent until answered.
func (r *ProducerRun) produce(p *producer) {
	for seq := int64(0); ; seq++ {
		select {
		case <-r.stop:
			return
		default:
		}
		body := r.message(p.id, seq)
		hdr := http.Header{"Producer-Id": {p.id}, "Producer-Epoch": {"0"}, "Producer-Seq": {strconv.FormatInt(seq, 10)}}
		for attempt := 0; ; attempt++ {
			if attempt > 0 {
				p.retries++
				select {
				case <-r.finish.Done():
					p.pending = true
					return
				case <-time.After(r.cfg.RetryWait):
				}
			}
			code, h, err := r.send(http.MethodPost, p.stream, body, hdr)
			if kind := failure(code, err); kind != "" {
				r.mu.Lock()
				r.failures[kind]++
				r.mu.Unlock()
				continue
			}
			var a ack
			switch code {
			case http.StatusOK:
				start, perr := streams.ParseOffset(h.Get("Stream-Next-Offset"))
				if perr != nil || start.Pos < 1 || h.Get("Producer-Seq") != strconv.FormatInt(seq, 10) {
					r.fail("%s seq %d: 200 with Stream-Next-Offset %q, Producer-Seq %q", p.id, seq, h.Get("Stream-Next-Offset"), h.Get("Producer-Seq"))
					p.pending = true
					return
				}
				a.next = start.Pos
			case http.StatusNoContent:
				got, perr := strconv.ParseInt(h.Get("Producer-Seq"), 10, 64)
				if perr != nil || got < seq {
					r.fail("%s seq %d: 204 with Producer-Seq %q: not a duplicate of it", p.id, seq, h.Get("Producer-Seq"))
					p.pending = true
					return
				}
				a.dup, a.first = true, attempt == 0
			default:
				r.fail("%s seq %d: status %d", p.id, seq, code)
				p.pending = true
				return
			}
			p.acks = append(p.acks, a)
			r.acked.Add(1)
			break
		}
	}
}

func (r *ProducerRun) fail(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// failure names why an attempt is to be retried, or "" when it was
// answered.
func failure(code int, err error) string {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		return "timeout"
	case err != nil:
		var te interface{ Timeout() bool }
		if errors.As(err, &te) && te.Timeout() {
			return "timeout"
		}
		return "cut"
	}
	switch code {
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return strconv.Itoa(code)
	}
	return ""
}

// Check reads every stream back from -1 and asserts the invariants at the
// top of this file, reporting each breach on t. Call it after Stop, with
// the server up; it returns the report with Read and DuplicatesFound.
func (r *ProducerRun) Check(t testing.TB, rep Report) Report {
	t.Helper()
	r.mu.Lock()
	errs := r.errs
	r.mu.Unlock()
	for _, e := range errs {
		t.Errorf("streamstest: the run failed: %s", e)
	}
	byID := map[string]*producer{}
	for _, p := range r.prods {
		byID[p.id] = p
	}
	for s := range r.cfg.Streams {
		msgs, err := r.readAll(s)
		if err != nil {
			t.Errorf("streamstest: read back %s: %v", r.streamURL(s), err)
			continue
		}
		rep.Read += len(msgs)
		last := map[string]int64{} // the producer's last seq seen, -1 before
		for _, p := range r.prods {
			if p.stream == s {
				last[p.id] = -1
			}
		}
		seen := map[string]bool{}
		for pos, raw := range msgs {
			var m struct {
				P string `json:"p"`
				S int64  `json:"s"`
			}
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Errorf("streamstest: %s at %d: not a message of the run: %s", r.streamURL(s), pos, raw)
				continue
			}
			p, ok := byID[m.P]
			if !ok || p.stream != s {
				t.Errorf("streamstest: %s at %d: a message of no producer of the stream: %s", r.streamURL(s), pos, raw)
				continue
			}
			key := fmt.Sprintf("%s/%d", m.P, m.S)
			if seen[key] {
				rep.DuplicatesFound++
				t.Errorf("streamstest: %s at %d: %s seq %d stored twice", r.streamURL(s), pos, m.P, m.S)
				continue
			}
			seen[key] = true
			if want := r.message(m.P, m.S); !bytes.Equal(raw, want) {
				t.Errorf("streamstest: %s at %d: %s, want %s", r.streamURL(s), pos, raw, want)
			}
			if m.S != last[m.P]+1 {
				t.Errorf("streamstest: %s at %d: %s seq %d after seq %d: out of order or a gap", r.streamURL(s), pos, m.P, m.S, last[m.P])
			}
			last[m.P] = m.S
			sent := int64(len(p.acks))
			if p.pending {
				sent++
			}
			switch {
			case m.S >= sent:
				t.Errorf("streamstest: %s at %d: %s seq %d was never sent", r.streamURL(s), pos, m.P, m.S)
			case m.S < int64(len(p.acks)) && !p.acks[m.S].dup && p.acks[m.S].next != streams.Pos(pos+1):
				t.Errorf("streamstest: %s: %s seq %d is at offset %s, its 200 acknowledged %s", r.streamURL(s), m.P, m.S,
					streams.Pos(pos).Offset(), (p.acks[m.S].next - 1).Offset())
			}
		}
		for id, l := range last {
			if n := int64(len(byID[id].acks)); l < n-1 {
				t.Errorf("streamstest: %s: %s has seqs up to %d acknowledged, the stream only up to %d", r.streamURL(s), id, n-1, l)
			}
		}
	}
	return rep
}

// readAll reads stream s from -1 to its tail, page by page, and returns
// its messages by position, checking the page offsets as the file's
// invariants say.
func (r *ProducerRun) readAll(s int) ([]json.RawMessage, error) {
	var all []json.RawMessage
	off := streams.OffsetStart
	for {
		req, err := http.NewRequest(http.MethodGet, r.streamURL(s)+"?offset="+off, nil)
		if err != nil {
			return nil, err
		}
		for k, v := range r.cfg.Header {
			req.Header[k] = v
		}
		resp, err := r.cfg.Client.Do(req)
		if err != nil {
			return nil, err
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			return nil, fmt.Errorf("offset %s: status %d: %s", off, resp.StatusCode, body)
		}
		var page []json.RawMessage
		if err := json.Unmarshal(body, &page); err != nil {
			return nil, fmt.Errorf("offset %s: not a JSON array: %v", off, err)
		}
		next, err := streams.ParseOffset(resp.Header.Get("Stream-Next-Offset"))
		if err != nil || next.Now {
			return nil, fmt.Errorf("offset %s: Stream-Next-Offset %q", off, resp.Header.Get("Stream-Next-Offset"))
		}
		start := streams.Pos(len(all))
		if next.Pos != start+streams.Pos(len(page)) || (len(page) > 0 && next.Pos <= start) {
			return nil, fmt.Errorf("offset %s: %d messages and Stream-Next-Offset %s: offsets not contiguous and increasing", off, len(page), next.Pos.Offset())
		}
		all = append(all, page...)
		off = next.Pos.Offset()
		if resp.Header.Get("Stream-Up-To-Date") == "true" {
			return all, nil
		}
		if len(page) == 0 {
			return nil, fmt.Errorf("offset %s: an empty page short of the tail", off)
		}
	}
}

// LoseReplies is an http.RoundTripper for a fault run's client: it sends
// every request through Next, and loses the reply of a POST at random
// (with probability Rate, drawn from a generator of Seed): the server has
// served the request (its data is written) and the client gets an error,
// so it sends the request again. Lost counts the replies lost.
type LoseReplies struct {
	Next http.RoundTripper
	Rate float64
	Seed uint64

	lost atomic.Int64
	mu   sync.Mutex
	rnd  *rand.Rand
}

// RoundTrip implements http.RoundTripper.
func (l *LoseReplies) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := l.Next.RoundTrip(req)
	if err != nil || req.Method != http.MethodPost {
		return resp, err
	}
	l.mu.Lock()
	if l.rnd == nil {
		l.rnd = rand.New(rand.NewPCG(l.Seed, l.Seed))
	}
	lose := l.rnd.Float64() < l.Rate
	l.mu.Unlock()
	if !lose {
		return resp, nil
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	l.lost.Add(1)
	return nil, errReplyLost
}

// Lost returns how many replies l has lost.
func (l *LoseReplies) Lost() int64 { return l.lost.Load() }

var errReplyLost = errors.New("streamstest: the reply was lost on purpose")
