package httpstore_test

// Benchmarks of /streams/ over loopback HTTP, on memstore and on a
// redis-server: appends/s with 1 and 16 producers (200-byte messages,
// each producer on a stream of its own), catch-up reads (b.SetBytes: MB/s),
// and the latency from an append on one server to a long-poll reader on
// another (p50 and p99, reported as metrics). STREAMS_BENCH_URL=<base>
// (the URL under which streams live, e.g. http://host:4437/v1/stream)
// adds a target served elsewhere, for comparisons with the same client.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore/httpstore"
	"github.com/ckptstore/ckptstore/internal/redistest"
	"github.com/ckptstore/ckptstore/storeurl"
)

var benchClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256}}

// benchTargets returns the stream base URLs of two servers on one
// backend, per target.
func benchTargets(b *testing.B) map[string][2]string {
	opts := httpstore.HandlerOptions{Dev: true, Streams: httpstore.StreamsOptions{LongPollTimeout: 10 * time.Second}}
	mem := streamServersB(b, "", opts)
	mkv := streamServersB(b, "memkv", opts)
	rs := redistest.Start(b)
	red := streamServersB(b, "redis://"+rs.Addr, opts)
	out := map[string][2]string{
		"mem":   {mem[0] + "/streams", mem[1] + "/streams"},
		"redis": {red[0] + "/streams", red[1] + "/streams"},
		"memkv": {mkv[0] + "/streams", mkv[1] + "/streams"},
	}
	if u := os.Getenv("STREAMS_BENCH_URL"); u != "" {
		out["external"] = [2]string{u, u}
	}
	return out
}

func bdo(b *testing.B, method, url string, body []byte, hd map[string]string) (*http.Response, []byte) {
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	if body == nil {
		req.Body, req.ContentLength = nil, 0
	}
	for k, v := range hd {
		req.Header.Set(k, v)
	}
	res, err := benchClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	out, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		b.Fatal(err)
	}
	if res.StatusCode >= 300 && res.StatusCode != http.StatusNotModified {
		b.Fatalf("%s %s: %d %s", method, url, res.StatusCode, out)
	}
	return res, out
}

var benchRun atomic.Int64

func benchStream(b *testing.B, base, what string) string {
	u := fmt.Sprintf("%s/bench-%s-%d-%d", base, what, time.Now().UnixNano(), benchRun.Add(1))
	bdo(b, "PUT", u, nil, map[string]string{"Content-Type": "application/octet-stream"})
	return u
}

func BenchmarkStreamsAppend(b *testing.B) {
	msg := bytes.Repeat([]byte("x"), 200)
	for name, srv := range benchTargets(b) {
		for _, producers := range []int{1, 16} {
			b.Run(fmt.Sprintf("%s/producers=%d", name, producers), func(b *testing.B) {
				urls := make([]string, producers)
				for i := range urls {
					urls[i] = benchStream(b, srv[0], "append")
				}
				var next atomic.Int64
				var wg sync.WaitGroup
				b.ResetTimer()
				start := time.Now()
				for p := range producers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						hd := map[string]string{"Content-Type": "application/octet-stream", "Producer-Id": "p", "Producer-Epoch": "0"}
						for seq := 0; next.Add(1) <= int64(b.N); seq++ {
							hd["Producer-Seq"] = fmt.Sprint(seq)
							bdo(b, "POST", urls[p], msg, hd)
						}
					}()
				}
				wg.Wait()
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "appends/s")
			})
		}
	}
}

func BenchmarkStreamsCatchUp(b *testing.B) {
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 4096) // 64 KiB
	const total = 16 << 20
	for name, srv := range benchTargets(b) {
		b.Run(name, func(b *testing.B) {
			u := benchStream(b, srv[0], "catchup")
			for range total / len(chunk) {
				bdo(b, "POST", u, chunk, map[string]string{"Content-Type": "application/octet-stream"})
			}
			b.SetBytes(total)
			b.ResetTimer()
			for range b.N {
				off, n := "-1", 0
				for {
					res, body := bdo(b, "GET", u+"?offset="+off, nil, nil)
					n += len(body)
					off = res.Header.Get("Stream-Next-Offset")
					if res.Header.Get("Stream-Up-To-Date") == "true" {
						break
					}
				}
				if n != total {
					b.Fatalf("read %d bytes, want %d", n, total)
				}
			}
		})
	}
}

func BenchmarkStreamsLiveLatency(b *testing.B) {
	msg := bytes.Repeat([]byte("y"), 200)
	for name, srv := range benchTargets(b) {
		b.Run(name, func(b *testing.B) {
			u := benchStream(b, srv[0], "live")
			reader := srv[1] + u[len(srv[0]):]
			res, _ := bdo(b, "GET", u+"?offset=now", nil, nil)
			off := res.Header.Get("Stream-Next-Offset")
			lat := make([]time.Duration, 0, b.N)
			for range b.N {
				got := make(chan time.Time, 1)
				ready := make(chan struct{})
				go func() {
					req, _ := http.NewRequestWithContext(context.Background(), "GET", reader+"?live=long-poll&offset="+off, nil)
					close(ready)
					res, err := benchClient.Do(req)
					if err != nil {
						b.Error(err)
						got <- time.Time{}
						return
					}
					_, _ = io.ReadAll(res.Body)
					res.Body.Close()
					off = res.Header.Get("Stream-Next-Offset")
					got <- time.Now()
				}()
				<-ready
				time.Sleep(2 * time.Millisecond) // the reader reaches its wait
				sent := time.Now()
				bdo(b, "POST", u, msg, map[string]string{"Content-Type": "application/octet-stream"})
				lat = append(lat, (<-got).Sub(sent))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}

// streamServersB is streamServers/streamServersOn for a benchmark: url ""
// is one mem store under both servers, "memkv" one memkv engine (in the
// process, as memkv is).
func streamServersB(b *testing.B, url string, opts httpstore.HandlerOptions) []string {
	b.Helper()
	var urls []string
	if url == "" || url == "memkv" {
		if url == "" {
			url = "mem"
		}
		o := mustOpen(b, url)
		for range 2 {
			urls = append(urls, serveB(b, httpstore.NewHandler(o, opts)))
		}
		return urls
	}
	for range 2 {
		o := mustOpen(b, url)
		urls = append(urls, serveB(b, httpstore.NewHandler(o, opts)))
	}
	return urls
}

func mustOpen(b *testing.B, url string) *storeurl.Opened {
	o, err := storeurl.Open(context.Background(), url, storeurl.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = o.Close() })
	return o
}

func serveB(b *testing.B, h http.Handler) string {
	srv := httptest.NewServer(h)
	b.Cleanup(srv.Close)
	return srv.URL
}
