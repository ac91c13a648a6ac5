package bench

// BenchmarkHTTPHop: the cost of the HTTP hop. The same Append workload as
// BenchmarkAppend (16 writers — and 1, for the latency of the hop alone —
// each on its own thread under its own lease,
// 2 KB checkpoints) runs on a store in process (via=process) and on the
// same kind of store behind an httpstore handler on a loopback TCP
// listener, through the Go client (via=http): appends/s side by side, and
// the p50 of one append, whose difference is the hop. The handler runs as
// ckptserver runs it outside --dev: bearer-token auth and Prometheus
// metrics on.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/httpstore"
	"github.com/ckptstore/ckptstore/internal/workload"
	"github.com/ckptstore/ckptstore/storeurl"
)

func BenchmarkHTTPHop(b *testing.B) {
	inner := []backend{
		{"mem", openMem},
		{"redis", openRedis},
	}
	for _, be := range inner {
		b.Run("store="+be.name, func(b *testing.B) {
			for _, writers := range []int{16, 1} {
				b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
					b.Run("via=process", func(b *testing.B) { benchAppend(b, be, writers, "2KB") })
					b.Run("via=http", func(b *testing.B) { benchAppend(b, viaHTTP(be), writers, "2KB") })
				})
			}
		})
	}
}

// viaHTTP is be behind a handler and a client: each round's fresh store is
// served by a fresh loopback server.
func viaHTTP(be backend) backend {
	const token = "bench-token-0123456789"
	return backend{name: "http-" + be.name, open: func(b *testing.B) (*storeurl.Opened, func()) {
		o, free := be.open(b)
		h := httpstore.NewHandler(oneStore{o}, httpstore.HandlerOptions{
			Tokens: map[string]string{token: "bench"}, Registerer: prometheus.NewRegistry(),
		})
		srv := httptest.NewServer(h)
		c, err := httpstore.NewClient(srv.URL, httpstore.ClientOptions{Token: token})
		if err != nil {
			b.Fatal(err)
		}
		return &storeurl.Opened{Tenant: storeurl.Tenant{Store: c.Store, Instances: c.Instances()}, Kind: "http", Desc: "http " + o.Desc, Close: func() error { return nil }},
			func() { srv.Close(); free() }
	}}
}

// oneStore is a handler's backend that serves the benchmark's store (its
// fresh namespace) as every namespace, the token's included.
type oneStore struct{ o *storeurl.Opened }

func (s oneStore) Namespace(string, ckptstore.Options) (*storeurl.Tenant, error) {
	t := s.o.Tenant
	return &t, nil
}

// BenchmarkHTTPFloor: what the hop cannot cost less than with net/http on
// this machine. The same writers POST the same append bodies (the JSON
// the Go client sends for BenchmarkHTTPHop's 2 KB checkpoints) over
// keep-alive loopback connections to a handler that reads the body and
// writes a fixed reply: no decoding, no auth, no metrics, no store. With
// w writers in a closed loop on c cores, an append's p50 is about w × (the
// CPU of one request, client and server) ÷ c, so this figure at 16
// writers bounds BenchmarkHTTPHop's from below (docs/benchmarks.md).
func BenchmarkHTTPFloor(b *testing.B) {
	bodies := floorBodies(b, 256)
	for _, writers := range []int{16, 1} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			reply := []byte(`{"headId":"c0123456789abcdef"}`)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write(reply)
			}))
			defer srv.Close()
			hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: writers}}
			defer hc.CloseIdleConnections()
			m := newMetrics()
			hists := make([]*hdrhistogram.Histogram, writers)
			var failed sync.Once
			var wg sync.WaitGroup
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			for i := range writers {
				hists[i] = workload.NewHistogram()
				n := b.N / writers
				if i < b.N%writers {
					n++
				}
				wg.Go(func() {
					for j := range n {
						t := time.Now()
						err := floorPost(hc, srv.URL+"/v1/append", bodies[(i+j)%len(bodies)])
						workload.RecordDuration(hists[i], time.Since(t))
						if err != nil {
							failed.Do(func() { b.Error(err) })
							return
						}
					}
				})
			}
			wg.Wait()
			m.elapsed = time.Since(start)
			b.StopTimer()
			for _, h := range hists {
				m.hist.Merge(h)
			}
			m.report(b, &storeurl.Opened{}, "requests/s")
		})
	}
}

// floorBodies are n append bodies as the Go client writes them.
func floorBodies(b *testing.B, n int) [][]byte {
	g := workload.NewGenSeed(harness("2KB"), 1, 1)
	out := make([][]byte, n)
	head := ""
	var prev *ckptstore.Checkpoint
	for i := range out {
		cp, _ := g.Next("bench/floor", g.NewID(), head, prev)
		body, err := json.Marshal(map[string]any{
			"checkpoint": cp, "expectedHeadId": head,
			"writer": ckptstore.Writer{ThreadID: "bench/floor", OwnerToken: "owner-0123456789", Fence: 1},
		})
		if err != nil {
			b.Fatal(err)
		}
		out[i] = body
		head, prev = cp.ID, cp
	}
	return out
}

func floorPost(hc *http.Client, url string, body []byte) error {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return err
}
