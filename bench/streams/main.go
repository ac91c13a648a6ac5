// Command streams benchmarks Durable Streams servers over HTTP with one
// client and one set of payloads, so that ckptserver on each engine and
// any other server of the protocol compare like for like:
//
//   - appends/s with 1 and 16 producers: each producer appends 200-byte
//     messages to a stream of its own, one request at a time, as an
//     idempotent producer (Producer-Id, Producer-Epoch, Producer-Seq);
//   - catch-up read MB/s: reading a 16 MiB byte stream from offset -1
//     to its tail, following Stream-Next-Offset;
//   - append-to-live-reader latency, p50 and p99: a long-poll reader
//     waits on the second URL of the target (another server on the same
//     backend, or the same server) and the time from the append's send
//     on the first to the reader's reply is one sample.
//
// Usage:
//
//	go run ./bench/streams -target mem=http://127.0.0.1:8080/streams \
//	    -target other=http://127.0.0.1:4437/v1/stream -baseline other -rounds 3
//
// A target is NAME=URL or NAME=URL,READER-URL: URL is the base under which
// streams live (a stream's URL is the base, a slash and its name). The
// command runs the targets interleaved (round 1: every target, every
// measure; round 2: the same; …), so a machine whose speed drifts slows
// them alike; it prints each measurement as it runs, in Go's benchmark
// format (benchstat reads it), then the medians over rounds and, with
// -baseline, every target's ratio to the baseline's median.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"
)

type target struct {
	name, url, reader string
}

type targets []target

func (t *targets) String() string { return fmt.Sprint(*t) }

func (t *targets) Set(s string) error {
	name, urls, ok := strings.Cut(s, "=")
	if !ok || name == "" || urls == "" {
		return errors.New("want NAME=URL or NAME=URL,READER-URL")
	}
	u, r, _ := strings.Cut(urls, ",")
	if r == "" {
		r = u
	}
	*t = append(*t, target{name, strings.TrimSuffix(u, "/"), strings.TrimSuffix(r, "/")})
	return nil
}

type config struct {
	targets      targets
	baseline     string
	rounds       int
	duration     time.Duration
	producers    []int
	size         int
	catchupBytes int
	catchupReads int
	liveSamples  int
	measures     map[string]bool
}

func main() {
	var c config
	var producers, measures string
	flag.Var(&c.targets, "target", "NAME=URL[,READER-URL]: a server's stream base URL (repeat for each target)")
	flag.StringVar(&c.baseline, "baseline", "", "the target the others' ratios are to")
	flag.IntVar(&c.rounds, "rounds", 3, "interleaved rounds over all targets")
	flag.DurationVar(&c.duration, "duration", 3*time.Second, "how long each appends/s measurement appends")
	flag.StringVar(&producers, "producers", "1,16", "producer counts of the appends/s measurements")
	flag.IntVar(&c.size, "size", 200, "bytes of one appended message")
	flag.IntVar(&c.catchupBytes, "catchup-bytes", 16<<20, "size of the stream the catch-up measurement reads")
	flag.IntVar(&c.catchupReads, "catchup-reads", 4, "whole-stream reads per catch-up measurement")
	flag.IntVar(&c.liveSamples, "live-samples", 200, "appends per live-latency measurement")
	flag.StringVar(&measures, "measures", "append,catchup,live", "which measurements to run")
	flag.Parse()
	if len(c.targets) == 0 || c.rounds < 1 || c.size < 1 || c.duration <= 0 {
		fmt.Fprintln(os.Stderr, "streams: at least one -target, and positive -rounds, -size and -duration")
		flag.Usage()
		os.Exit(2)
	}
	for _, p := range strings.Split(producers, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "streams: -producers: %q is not a positive count\n", p)
			os.Exit(2)
		}
		c.producers = append(c.producers, n)
	}
	c.measures = map[string]bool{}
	for _, m := range strings.Split(measures, ",") {
		c.measures[strings.TrimSpace(m)] = true
	}
	if err := run(context.Background(), &c, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "streams:", err)
		os.Exit(1)
	}
}

// client is shared by every measurement: enough idle connections that 16
// producers and the live reader never redial.
var client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256}}

// result is one measurement's figures by unit.
type result map[string]float64

func run(ctx context.Context, c *config, w io.Writer) error {
	all := map[string]map[string][]result{} // target → measure → rounds
	var order []string
	for r := range c.rounds {
		for _, t := range c.targets {
			if all[t.name] == nil {
				all[t.name] = map[string][]result{}
			}
			for _, m := range measuresOf(c) {
				res, err := m.fn(ctx, c, t)
				if err != nil {
					return fmt.Errorf("round %d, %s, %s: %w", r+1, t.name, m.name, err)
				}
				if r == 0 && t.name == c.targets[0].name {
					order = append(order, m.name)
				}
				all[t.name][m.name] = append(all[t.name][m.name], res)
				fmt.Fprintf(w, "BenchmarkStreams/target=%s/%s\t1", t.name, m.name)
				for _, u := range units(res) {
					fmt.Fprintf(w, "\t%.6g %s", res[u], u)
				}
				fmt.Fprintln(w)
			}
		}
	}
	fmt.Fprintln(w)
	return summary(c, all, order, w)
}

type measure struct {
	name string
	fn   func(context.Context, *config, target) (result, error)
}

func measuresOf(c *config) []measure {
	var out []measure
	if c.measures["append"] {
		for _, p := range c.producers {
			out = append(out, measure{fmt.Sprintf("append/producers=%d", p), func(ctx context.Context, c *config, t target) (result, error) {
				return appends(ctx, c, t, p)
			}})
		}
	}
	if c.measures["catchup"] {
		out = append(out, measure{"catchup", catchUp})
	}
	if c.measures["live"] {
		out = append(out, measure{"live/long-poll", live})
	}
	return out
}

func units(r result) []string {
	var us []string
	for u := range r {
		us = append(us, u)
	}
	slices.Sort(us)
	return us
}

// summary prints the median of every figure over the rounds and, with a
// baseline, each target's median over the baseline's.
func summary(c *config, all map[string]map[string][]result, order []string, w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "medians of %d rounds\ttarget\tvalue\tunit", c.rounds)
	if c.baseline != "" {
		fmt.Fprintf(tw, "\tratio to %s", c.baseline)
	}
	fmt.Fprintln(tw)
	for _, m := range order {
		for _, t := range c.targets {
			rs := all[t.name][m]
			for _, u := range units(rs[0]) {
				v := median(rs, u)
				fmt.Fprintf(tw, "%s\t%s\t%.6g\t%s", m, t.name, v, u)
				if b := all[c.baseline][m]; len(b) > 0 {
					fmt.Fprintf(tw, "\t%.2f", v/median(b, u))
				}
				fmt.Fprintln(tw)
			}
		}
	}
	return tw.Flush()
}

func median(rs []result, unit string) float64 {
	var vs []float64
	for _, r := range rs {
		vs = append(vs, r[unit])
	}
	slices.Sort(vs)
	if n := len(vs); n%2 == 0 {
		return (vs[n/2-1] + vs[n/2]) / 2
	}
	return vs[len(vs)/2]
}

// do sends one request and reads the whole reply; any status but 2xx and
// 304 is an error.
func do(ctx context.Context, method, url string, body []byte, hd http.Header) (*http.Response, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return nil, nil, err
	}
	for k, v := range hd {
		req.Header[k] = v
	}
	res, err := client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	out, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		return nil, nil, err
	}
	if res.StatusCode >= 300 && res.StatusCode != http.StatusNotModified {
		return nil, nil, fmt.Errorf("%s %s: %s: %.200s", method, url, res.Status, out)
	}
	return res, out, nil
}

var streamN atomic.Int64

// newStream creates a byte stream with a fresh name under base.
func newStream(ctx context.Context, base, what string) (string, error) {
	name := fmt.Sprintf("bench-%s-%d-%d", what, time.Now().UnixNano(), streamN.Add(1))
	_, _, err := do(ctx, "PUT", base+"/"+name, nil, http.Header{"Content-Type": {"application/octet-stream"}})
	return name, err
}

func appends(ctx context.Context, c *config, t target, producers int) (result, error) {
	names := make([]string, producers)
	for i := range names {
		var err error
		if names[i], err = newStream(ctx, t.url, "append"); err != nil {
			return nil, err
		}
	}
	msg := bytes.Repeat([]byte("x"), c.size)
	var (
		total atomic.Int64
		wg    sync.WaitGroup
		errs  = make([]error, producers)
	)
	deadline := time.Now().Add(c.duration)
	start := time.Now()
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			hd := http.Header{"Content-Type": {"application/octet-stream"}, "Producer-Id": {"bench"}, "Producer-Epoch": {"0"}}
			for seq := 0; time.Now().Before(deadline); seq++ {
				hd["Producer-Seq"] = []string{strconv.Itoa(seq)}
				if _, _, err := do(ctx, "POST", t.url+"/"+names[p], msg, hd); err != nil {
					errs[p] = err
					return
				}
				total.Add(1)
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return result{"appends/s": float64(total.Load()) / el.Seconds()}, nil
}

func catchUp(ctx context.Context, c *config, t target) (result, error) {
	name, err := newStream(ctx, t.url, "catchup")
	if err != nil {
		return nil, err
	}
	// Filled with 64 KiB appends: the read does not see how the bytes
	// were appended, and 200-byte appends would take minutes to fill it.
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 4096)
	for n := 0; n < c.catchupBytes; n += len(chunk) {
		part := chunk[:min(len(chunk), c.catchupBytes-n)]
		if _, _, err := do(ctx, "POST", t.url+"/"+name, part, http.Header{"Content-Type": {"application/octet-stream"}}); err != nil {
			return nil, err
		}
	}
	start := time.Now()
	reqs := 0
	for range c.catchupReads {
		off, n := "-1", 0
		for {
			res, body, err := do(ctx, "GET", t.url+"/"+name+"?offset="+off, nil, nil)
			if err != nil {
				return nil, err
			}
			reqs++
			n += len(body)
			off = res.Header.Get("Stream-Next-Offset")
			if res.Header.Get("Stream-Up-To-Date") == "true" {
				break
			}
		}
		if n != c.catchupBytes {
			return nil, fmt.Errorf("catch-up read %d bytes, want %d", n, c.catchupBytes)
		}
	}
	el := time.Since(start).Seconds()
	return result{"MB/s": float64(c.catchupReads*c.catchupBytes) / 1e6 / el, "reqs/read": float64(reqs) / float64(c.catchupReads)}, nil
}

func live(ctx context.Context, c *config, t target) (result, error) {
	name, err := newStream(ctx, t.url, "live")
	if err != nil {
		return nil, err
	}
	res, _, err := do(ctx, "GET", t.url+"/"+name+"?offset=now", nil, nil)
	if err != nil {
		return nil, err
	}
	off := res.Header.Get("Stream-Next-Offset")
	msg := bytes.Repeat([]byte("y"), c.size)
	lat := make([]time.Duration, 0, c.liveSamples)
	for range c.liveSamples {
		type got struct {
			at   time.Time
			next string
			err  error
		}
		ch := make(chan got, 1)
		go func() {
			res, body, err := do(ctx, "GET", t.reader+"/"+name+"?live=long-poll&offset="+off, nil, nil)
			switch {
			case err != nil:
			case res.StatusCode == http.StatusNoContent:
				err = errors.New("the long-poll ended without the append")
			case len(body) != c.size:
				err = fmt.Errorf("the long-poll read %d bytes, want %d", len(body), c.size)
			}
			if err != nil {
				ch <- got{err: err}
				return
			}
			ch <- got{at: time.Now(), next: res.Header.Get("Stream-Next-Offset")}
		}()
		// Give the reader time to reach its wait: a reader that came after
		// the append would read it at once and measure nothing.
		time.Sleep(5 * time.Millisecond)
		sent := time.Now()
		if _, _, err := do(ctx, "POST", t.url+"/"+name, msg, http.Header{"Content-Type": {"application/octet-stream"}}); err != nil {
			return nil, err
		}
		g := <-ch
		if g.err != nil {
			return nil, g.err
		}
		lat = append(lat, g.at.Sub(sent))
		off = g.next
	}
	slices.Sort(lat)
	ms := func(q int) float64 { return float64(lat[(len(lat)-1)*q/100].Microseconds()) / 1000 }
	return result{"p50-ms": ms(50), "p99-ms": ms(99)}, nil
}
