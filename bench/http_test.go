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
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/ckptstore/ckptstore/httpstore"
	"github.com/ckptstore/ckptstore/storeurl"
)

func BenchmarkHTTPHop(b *testing.B) {
	inner := []backend{
		{"mem", openSpec("mem", storeurl.Options{})},
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
		h := httpstore.NewHandler(o, httpstore.HandlerOptions{
			Tokens: map[string]string{token: "bench"}, Registerer: prometheus.NewRegistry(),
		})
		srv := httptest.NewServer(h)
		c, err := httpstore.NewClient(srv.URL, httpstore.ClientOptions{Token: token})
		if err != nil {
			b.Fatal(err)
		}
		return &storeurl.Opened{Store: c, Instances: c.Instances(), Kind: "http", Desc: "http " + o.Desc, Close: func() error { return nil }},
			func() { srv.Close(); free() }
	}}
}
