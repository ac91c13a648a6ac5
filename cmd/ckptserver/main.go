// Command ckptserver serves a ckptstore store over HTTP (docs/http-api.md),
// for harnesses in any language: the TypeScript client @ckptstore/client
// (clients/ts) and the Go client httpstore.Client speak its protocol.
//
//	ckptserver --listen 127.0.0.1:0 --store mem --dev
//	ckptserver --listen :7070 --store 'redis://…' --tokens tokens.txt [--tls-cert c --tls-key k] [--bucket s3://…]
//
// It prints "listening on http://HOST:PORT" on one line once it accepts
// connections. Besides the checkpoint store it serves each namespace's
// persistence stores (runs, interrupts, metadata, artifacts, blobs, locks:
// docs/persistence.md) from the same key space; the blob bytes go to the
// --bucket (mem://, file:///dir, s3://…), and without one the blob routes
// answer 501. The server keeps no state of its own — leases, op tokens
// and data live in the store — so several servers may run behind one load
// balancer over one Redis or FoundationDB. A store that does not answer at
// startup does not stop the server: it serves 503s, not ready, and retries
// opening it with backoff (backend.go). Besides /v1/ it serves /healthz
// (the process is up), /readyz (the store answers) and /metrics
// (Prometheus; on an address of its own with --metrics-listen), by exact
// path: any other path or method is the protocol's
// JSON error, never a redirect. The bodies in flight share a budget
// (--max-inflight-bytes): past it a request gets 503 OVERLOADED with
// Retry-After. SIGTERM or SIGINT turns /readyz to 503, keeps serving for
// --shutdown-delay (0 by default) so that a load balancer stops sending,
// then closes the listener, lets the requests in flight finish (up to
// --shutdown-timeout) and exits. OpenTelemetry traces are off unless the
// OTEL_* variables ask for them (OTEL_TRACES_EXPORTER=otlp: tracing.go,
// docs/operations.md).
//
// Exit codes: 0 after a clean shutdown, 1 when serving fails, 2 for a bad
// command line.
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/blobs"
	_ "github.com/ckptstore/ckptstore/blobs/s3blob" // --bucket s3://…
	_ "github.com/ckptstore/ckptstore/fdbstore"     // memkv, fdb:
	"github.com/ckptstore/ckptstore/httpstore"
	"github.com/ckptstore/ckptstore/internal/version"
	_ "github.com/ckptstore/ckptstore/memstore"   // mem
	_ "github.com/ckptstore/ckptstore/redisstore" // redis://, rediss://, unix://, redis+sentinel://, redis+cluster://
	"github.com/ckptstore/ckptstore/storeurl"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// config is the parsed command line.
type config struct {
	listen, store, tokens, tlsCert, tlsKey string
	metricsListen                          string
	bucket                                 string
	dev                                    bool
	lease, renewAfter                      time.Duration
	maxBody, maxBlob, maxInflight          int64
	readHeaderTimeout, readTimeout         time.Duration
	writeTimeout, idleTimeout              time.Duration
	shutdownDelay, shutdownTimeout         time.Duration
	logLevel, logFormat                    string
	streams                                httpstore.StreamsOptions
	streamsSweep                           time.Duration
}

// usageError is a command line that cannot run.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usage(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

func parseFlags(args []string, out io.Writer) (*config, error) {
	c := &config{}
	fs := flag.NewFlagSet("ckptserver", flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = func() {
		fmt.Fprintf(out, "ckptserver serves a ckptstore store over HTTP (docs/http-api.md).\n\nUsage: ckptserver --store URL (--tokens FILE | --dev) [flags]\n\nStores: %s\n\nFlags:\n", storeurl.Forms())
		fs.PrintDefaults()
	}
	fs.StringVar(&c.listen, "listen", "127.0.0.1:7070", "address to listen on; port 0 picks a free one (the bound address is printed)")
	fs.StringVar(&c.metricsListen, "metrics-listen", "", "serve /metrics on this address of its own (plain HTTP, no auth: a private network's) and not on --listen; none = /metrics on --listen, beside the API")
	fs.StringVar(&c.store, "store", "mem", "the store URL: "+storeurl.Forms())
	fs.StringVar(&c.bucket, "bucket", "", "the blob bucket of the persistence blobs routes: mem://, file:///dir[?create=true], s3://BUCKET?endpoint=…&region=…; none = those routes answer 501")
	fs.StringVar(&c.tokens, "tokens", "", "file of bearer tokens: one `token namespace` per line (# comments); required outside --dev")
	fs.StringVar(&c.tlsCert, "tls-cert", "", "TLS certificate file (PEM); with --tls-key, serve HTTPS")
	fs.StringVar(&c.tlsKey, "tls-key", "", "TLS private key file (PEM)")
	fs.BoolVar(&c.dev, "dev", false, "development mode: no auth, client-named namespaces (Ckpt-Namespace), client clock and lease options; loopback addresses only")
	fs.DurationVar(&c.lease, "lease", 0, "writer lease duration of every namespace (0 = 120s; in --dev a client may set its own)")
	fs.DurationVar(&c.renewAfter, "renew-after", 0, "renew-after of every namespace (0 = 45s, or 3/8 of --lease)")
	fs.Int64Var(&c.maxBody, "max-body-bytes", httpstore.DefaultMaxBodyBytes, "largest request body; larger ones get 413")
	fs.Int64Var(&c.maxInflight, "max-inflight-bytes", 0, fmt.Sprintf("request-body bytes all requests in flight may hold together; a request past it gets 503 OVERLOADED with Retry-After (0 = %d × --max-body-bytes, 256 MiB by default; at least --max-body-bytes)", httpstore.DefaultMaxInflightFactor))
	fs.Int64Var(&c.streams.MaxAppendBytes, "streams-max-append-bytes", httpstore.DefaultMaxAppendBytes, "largest body of one Durable Streams create or append (docs/streams.md); larger ones get 413")
	fs.DurationVar(&c.streams.LongPollTimeout, "streams-long-poll-timeout", httpstore.DefaultLongPollTimeout, "how long a Durable Streams long-poll waits for data before its 204")
	fs.Int64Var(&c.streams.MaxLiveReaders, "streams-max-live-readers", httpstore.DefaultMaxLiveReaders, "Durable Streams long-poll and SSE readers this server serves at once; more get 429")
	fs.DurationVar(&c.streams.SSEDuration, "streams-sse-duration", httpstore.DefaultSSEDuration, "how long one Durable Streams SSE reply lasts before the server ends it (the client reconnects)")
	fs.DurationVar(&c.streamsSweep, "streams-sweep-interval", 30*time.Second, "how often a sweep removes expired Durable Streams, at most 1000 per namespace a time (reads answer 404 for an expired stream either way)")
	fs.Int64Var(&c.maxBlob, "max-blob-bytes", httpstore.DefaultMaxBlobBytes, "largest blob a blobs/put stores; larger ones get 413 and store nothing")
	fs.DurationVar(&c.readHeaderTimeout, "read-header-timeout", 10*time.Second, "time to read a request's headers")
	fs.DurationVar(&c.readTimeout, "read-timeout", 2*time.Minute, "time to read a whole request")
	fs.DurationVar(&c.writeTimeout, "write-timeout", 2*time.Minute, "time from the end of a request's headers to the end of its reply")
	fs.DurationVar(&c.idleTimeout, "idle-timeout", 2*time.Minute, "how long an idle keep-alive connection stays open")
	fs.DurationVar(&c.shutdownDelay, "shutdown-delay", 0, "on SIGTERM, how long /readyz answers 503 while the listener still serves, so that a load balancer stops sending first (0 = close at once; 5s–15s behind Kubernetes: docs/operations.md)")
	fs.DurationVar(&c.shutdownTimeout, "shutdown-timeout", 30*time.Second, "after --shutdown-delay, how long SIGTERM waits for requests in flight")
	fs.StringVar(&c.logLevel, "log-level", "info", "debug (one line per request) | info | warn | error")
	fs.StringVar(&c.logFormat, "log-format", "json", "json | text")
	fs.Bool("version", false, "print the version and exit (run answers it before parsing)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, usage("unexpected arguments %q", fs.Args())
	}
	switch {
	case c.dev && c.tokens != "":
		return nil, usage("--dev and --tokens exclude each other: --dev has no auth")
	case !c.dev && c.tokens == "":
		return nil, usage("--tokens FILE is required outside --dev")
	case (c.tlsCert == "") != (c.tlsKey == ""):
		return nil, usage("--tls-cert and --tls-key go together")
	case c.maxBody <= 0:
		return nil, usage("--max-body-bytes must be positive")
	case c.maxInflight < 0 || c.maxInflight > 0 && c.maxInflight < c.maxBody:
		return nil, usage("--max-inflight-bytes must be 0 or at least --max-body-bytes (%d)", c.maxBody)
	case c.maxBlob <= 0:
		return nil, usage("--max-blob-bytes must be positive")
	case c.streams.MaxAppendBytes <= 0 || c.streams.LongPollTimeout <= 0 || c.streams.MaxLiveReaders <= 0 || c.streams.SSEDuration <= 0 || c.streamsSweep <= 0:
		return nil, usage("--streams-max-append-bytes, --streams-long-poll-timeout, --streams-max-live-readers, --streams-sse-duration and --streams-sweep-interval must be positive")
	case c.shutdownDelay < 0:
		return nil, usage("--shutdown-delay must not be negative")
	case c.shutdownTimeout <= 0:
		return nil, usage("--shutdown-timeout must be positive")
	case c.logFormat != "json" && c.logFormat != "text":
		return nil, usage("--log-format must be json or text")
	}
	if c.metricsListen != "" {
		if _, _, err := net.SplitHostPort(c.metricsListen); err != nil {
			return nil, usage("--metrics-listen %q: %v", c.metricsListen, err)
		}
	}
	if c.dev {
		if err := checkLoopback(c.listen); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// checkLoopback refuses a --dev listen address that is reachable from
// other machines: --dev has no auth.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usage("--listen %q: %v", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	if ip == nil || !ip.IsLoopback() {
		return usage("--dev has no auth, so it listens on a loopback address only (127.0.0.1, ::1, localhost), not %q", addr)
	}
	return nil
}

// readTokens reads a tokens file: each line "token namespace", blank lines
// and lines starting with # ignored. A token is at least 16 bytes, without
// spaces; the namespace is the rest of the line.
func readTokens(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tokens := map[string]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		tok, ns, ok := strings.Cut(line, " ")
		if !ok {
			tok, ns, ok = strings.Cut(line, "\t")
		}
		ns = strings.TrimSpace(ns)
		switch {
		case !ok || ns == "":
			return nil, fmt.Errorf("%s:%d: want `token namespace`", path, n)
		case len(tok) < 16:
			return nil, fmt.Errorf("%s:%d: a token must be at least 16 bytes", path, n)
		case len(ns) > httpstore.MaxNamespaceBytes:
			return nil, fmt.Errorf("%s:%d: the namespace is longer than %d bytes", path, n, httpstore.MaxNamespaceBytes)
		}
		if _, dup := tokens[tok]; dup {
			return nil, fmt.Errorf("%s:%d: a repeated token", path, n)
		}
		tokens[tok] = ns
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(tokens) == 0 {
		return nil, fmt.Errorf("%s: no tokens", path)
	}
	return tokens, nil
}

func newLogger(c *config, w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.logLevel)); err != nil {
		return nil, usage("--log-level: %v", err)
	}
	opts := &slog.HandlerOptions{Level: level}
	if c.logFormat == "text" {
		return slog.New(slog.NewTextHandler(w, opts)), nil
	}
	return slog.New(slog.NewJSONHandler(w, opts)), nil
}

// run is the whole command; it returns the exit code. Cancelling ctx (the
// signals, in main) shuts the server down gracefully.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if version.Requested(args) {
		fmt.Fprintln(stdout, version.Line("ckptserver"))
		return 0
	}
	c, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	var log *slog.Logger
	if err == nil {
		log, err = newLogger(c, stderr)
	}
	if log != nil {
		redisLog.to(log)
	}
	var tokens map[string]string
	if err == nil && c.tokens != "" {
		if tokens, err = readTokens(c.tokens); err != nil {
			err = usage("--tokens: %v", err)
		}
	}
	var lease ckptstore.Options
	if err == nil {
		lease = ckptstore.Options{LeaseDuration: c.lease, RenewAfter: c.renewAfter}
		if _, lerr := lease.Resolve(); lerr != nil {
			err = usage("--lease, --renew-after: %v", lerr)
		}
	}
	var bucket blobs.Bucket
	if err == nil {
		if bucket, err = openBucket(ctx, c.bucket); err != nil && !errors.As(err, new(*usageError)) {
			fmt.Fprintf(stderr, "ckptserver: %v\n", err)
			return 1
		}
	}
	var tp trace.TracerProvider
	stopTracing := func(context.Context) error { return nil }
	if err == nil {
		tp, stopTracing, err = newTracerProvider(ctx, os.Getenv)
	}
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "ckptserver: %v\nRun 'ckptserver -h' for the flags.\n", err)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "ckptserver: %v\n", err)
		return 2
	}
	defer func() {
		// The spans still batched go out before the process exits.
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := stopTracing(sctx); err != nil {
			log.Warn("flushing traces", "err", err)
		}
	}()
	if err := serve(ctx, &setup{c: c, tokens: tokens, lease: lease, bucket: bucket, log: log, tp: tp}, stdout); err != nil {
		log.Error("ckptserver failed", "err", err)
		if errors.Is(err, storeurl.ErrBadURL) {
			return 2
		}
		return 1
	}
	return 0
}

// redisLog is go-redis's logger once a server has run: go-redis writes its
// own lines (a pool that cannot dial, a Sentinel failover) through one
// global logger, which would put plain text lines in the JSON log.
var redisLog redisLogger

// redisLogger sends go-redis's log lines to the server's logger, as
// warnings (go-redis logs only what goes wrong, with no level of its own)
// whose detail is go-redis's line.
type redisLogger struct {
	once sync.Once
	log  atomic.Pointer[slog.Logger]
}

// to makes log the logger of go-redis's lines (the last server's, when
// tests run several in one process).
func (l *redisLogger) to(log *slog.Logger) {
	l.log.Store(log)
	l.once.Do(func() { redis.SetLogger(l) })
}

// Printf implements go-redis's internal.Logging.
func (l *redisLogger) Printf(ctx context.Context, format string, args ...any) {
	if log := l.log.Load(); log != nil {
		log.WarnContext(ctx, "go-redis", "detail", fmt.Sprintf(format, args...))
	}
}

// openBucket opens the --bucket URL (nil for ""): a URL blobs.Open cannot
// accept is a usage error, a bucket that cannot be reached another.
func openBucket(ctx context.Context, rawURL string) (blobs.Bucket, error) {
	if rawURL == "" {
		return nil, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	b, err := blobs.Open(ctx, rawURL)
	if errors.Is(err, blobs.ErrInvalidURL) {
		return nil, usage("--bucket: %v", err)
	}
	if err != nil {
		return nil, fmt.Errorf("--bucket: %w", err)
	}
	return b, nil
}

// setup is what run read and checked before serving.
type setup struct {
	c      *config
	tokens map[string]string // --tokens; nil for none
	lease  ckptstore.Options
	// bucket is --bucket's, nil without one.
	bucket blobs.Bucket
	log    *slog.Logger
	// tp traces the requests and the store's engine; nil: tracing is off
	// (tracing.go).
	tp trace.TracerProvider
}

func serve(ctx context.Context, s *setup, stdout io.Writer) error {
	c, log := s.c, s.log
	// A URL that cannot work is a usage error, at once; a store that does
	// not answer is retried in the background while the server serves
	// 503s (backend.go).
	b := &backend{}
	opened, openErr := s.open(ctx, firstOpenTimeout)
	switch {
	case errors.Is(openErr, storeurl.ErrBadURL):
		return fmt.Errorf("--store: %w", openErr)
	case openErr != nil:
		opened = nil
		b.failed(openErr)
	default:
		b.set(opened)
	}
	defer func() { _ = b.close() }()

	var draining atomic.Bool
	srv, msrv, err := s.newServer(b, &draining)
	if err != nil {
		return err
	}
	// The metrics listener, when apart, opens first and closes last, so
	// that a drain can be watched.
	metricsAddr := ""
	if msrv != nil {
		mln, err := net.Listen("tcp", c.metricsListen)
		if err != nil {
			return fmt.Errorf("--metrics-listen: %w", err)
		}
		metricsAddr = mln.Addr().String()
		go func() {
			if err := msrv.Serve(mln); !errors.Is(err, http.ErrServerClosed) {
				log.Error("the metrics listener failed", "err", err)
			}
		}()
		defer msrv.Close()
	}
	scheme := "http"
	if srv.TLSConfig != nil {
		scheme = "https"
	}
	ln, err := net.Listen("tcp", c.listen)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "listening on %s://%s\n", scheme, ln.Addr())
	desc := redact(c.store)
	if opened != nil {
		desc = opened.Desc
	}
	log.Info("listening", "addr", ln.Addr().String(), "tls", scheme == "https", "store", desc, "ready", opened != nil, "metrics_addr", metricsAddr, "dev", c.dev, "namespaces", len(s.tokens), "bucket", redact(c.bucket), "tracing", s.tp != nil)
	if opened == nil {
		rctx, stopRetry := context.WithCancel(ctx)
		retried := make(chan struct{})
		go func() {
			defer close(retried)
			s.retryOpen(rctx, b, openErr)
		}()
		defer func() { stopRetry(); <-retried }() // before b.close
	}

	if ls, ok := srv.Handler.(*top).api.(httpstore.LiveReadsStopper); ok {
		srv.RegisterOnShutdown(ls.StopLiveReads)
	}
	if sw, ok := srv.Handler.(*top).api.(httpstore.StreamsSweeper); ok {
		sctx, stopSweep := context.WithCancel(ctx)
		swept := make(chan struct{})
		go func() {
			defer close(swept)
			sweepStreams(sctx, sw, c.streamsSweep, log)
		}()
		defer func() { stopSweep(); <-swept }()
	}
	errc := make(chan error, 1)
	go func() {
		if scheme == "https" {
			errc <- srv.ServeTLS(ln, "", "")
		} else {
			errc <- srv.Serve(ln)
		}
	}()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// Drain: /readyz turns 503 and, for --shutdown-delay, the listener
	// still serves, so that a load balancer that polls /readyz (or an
	// endpoint list being updated, in Kubernetes) stops sending before any
	// connection is refused. Keep-alives end meanwhile: each connection
	// closes after its next reply, so its client's next request opens a new
	// one, which the balancer sends elsewhere. Then the listener closes
	// and the requests in flight finish, for up to --shutdown-timeout.
	draining.Store(true)
	if c.shutdownDelay > 0 {
		srv.SetKeepAlivesEnabled(false)
		log.Info("shutting down: /readyz answers 503, still serving until the delay ends", "delay", c.shutdownDelay.Seconds())
		t := time.NewTimer(c.shutdownDelay)
		select {
		case <-t.C:
		case err := <-errc:
			t.Stop()
			return err
		}
	}
	log.Info("shutting down: the listener closes, the requests in flight finish", "timeout", c.shutdownTimeout.Seconds())
	sctx, cancel := context.WithTimeout(context.Background(), c.shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	log.Info("shut down")
	return nil
}

// redact is a URL for logs, without a password.
func redact(raw string) string {
	if u, err := url.Parse(raw); err == nil {
		return u.Redacted()
	}
	return "(unparsable)"
}

// newServer returns the HTTP server of b: the protocol under /v1/,
// /healthz, /readyz (503 once draining is set, while the store is not
// open or does not answer) and /metrics, with TLS when --tls-cert is set;
// and, with --metrics-listen, the server of /metrics alone (which the
// first then does not serve), else nil.
func (s *setup) newServer(b *backend, draining *atomic.Bool) (srv, metricsSrv *http.Server, err error) {
	c := s.c
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), version.Collector())
	api := httpstore.NewHandler(b, httpstore.HandlerOptions{
		Dev: c.dev, Tokens: s.tokens, Lease: s.lease, MaxBodyBytes: c.maxBody, Logger: s.log, Registerer: reg,
		Bucket: s.bucket, MaxBlobBytes: c.maxBlob, MaxInflightBytes: c.maxInflight, TracerProvider: s.tp,
		Streams: c.streams,
	})
	healthz := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok\n")
	})
	readyz := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if draining.Load() {
			httpstore.WriteError(w, http.StatusServiceUnavailable, httpstore.CodeUnavailable, "shutting down")
			return
		}
		if why := b.notReady(); why != "" {
			httpstore.WriteError(w, http.StatusServiceUnavailable, httpstore.CodeUnavailable, why)
			return
		}
		pctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := b.opened.Load().Ping(pctx); err != nil {
			httpstore.WriteError(w, http.StatusServiceUnavailable, httpstore.CodeUnavailable, "the store does not answer: "+err.Error())
			return
		}
		_, _ = io.WriteString(w, "ok\n")
	})
	get := map[string]http.Handler{"/healthz": healthz, "/readyz": readyz}
	metrics := &top{api: notFound{}, get: map[string]http.Handler{
		"/metrics": promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}),
	}}
	if c.metricsListen == "" {
		get["/metrics"] = metrics.get["/metrics"]
		metrics = nil
	}
	srv = &http.Server{
		Handler:           &top{api: api, get: get},
		ReadHeaderTimeout: c.readHeaderTimeout,
		ReadTimeout:       c.readTimeout,
		WriteTimeout:      c.writeTimeout,
		IdleTimeout:       c.idleTimeout,
		// OPTIONS * reaches top too (a JSON NOT_FOUND), rather than
		// net/http's empty 200.
		DisableGeneralOptionsHandler: true,
		ErrorLog:                     slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	if c.tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(c.tlsCert, c.tlsKey)
		if err != nil {
			return nil, nil, fmt.Errorf("--tls-cert, --tls-key: %w", err)
		}
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	var msrv *http.Server
	if metrics != nil {
		msrv = &http.Server{
			Handler:           metrics,
			ReadHeaderTimeout: c.readHeaderTimeout,
			ReadTimeout:       c.readTimeout,
			WriteTimeout:      c.writeTimeout,
			IdleTimeout:       c.idleTimeout,
			ErrorLog:          srv.ErrorLog,
			// As on --listen: OPTIONS * is a JSON NOT_FOUND too.
			DisableGeneralOptionsHandler: true,
		}
	}
	return srv, msrv, nil
}

// notFound answers every request of the metrics listener but GET /metrics
// with the protocol's JSON NOT_FOUND.
type notFound struct{}

func (notFound) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	httpstore.WriteError(w, http.StatusNotFound, httpstore.CodeNotFound, "no path "+strconv.Quote(r.URL.Path)+" here: the metrics listener serves GET /metrics")
}

// top routes a request by its exact path: the GET endpoints by name, and
// everything else to the API handler, which answers a path it does not
// serve with a JSON NOT_FOUND. No path is cleaned or redirected (as
// http.ServeMux would: /v1//get, /v1/../v1/get), so every answer to an
// odd path is the protocol's typed JSON error.
type top struct {
	api http.Handler
	get map[string]http.Handler // by exact path; GET and HEAD only
}

func (t *top) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h, ok := t.get[r.URL.Path]
	if !ok {
		t.api.ServeHTTP(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		httpstore.WriteError(w, http.StatusMethodNotAllowed, httpstore.CodeMethodNotAllowed, r.URL.Path+": use GET")
		return
	}
	h.ServeHTTP(w, r)
}

// sweepStreams removes expired Durable Streams every interval until ctx
// ends: a bounded batch per namespace each time.
func sweepStreams(ctx context.Context, sw httpstore.StreamsSweeper, interval time.Duration, log *slog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n, err := sw.SweepStreams(ctx, 1000)
		if err != nil && ctx.Err() == nil {
			log.Warn("sweeping expired streams", "err", err.Error(), "removed", n)
		} else if n > 0 {
			log.Debug("swept expired streams", "removed", n)
		}
	}
}
