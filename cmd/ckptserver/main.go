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
// balancer over one Redis or FoundationDB. Besides /v1/ it serves /healthz
// (the process is up), /readyz (the store answers) and /metrics
// (Prometheus), by exact path: any other path or method is the protocol's
// JSON error, never a redirect. The bodies in flight share a budget
// (--max-inflight-bytes): past it a request gets 503 OVERLOADED with
// Retry-After. SIGTERM or SIGINT drains the requests in flight, then
// exits.
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
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

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
	bucket                                 string
	dev                                    bool
	lease, renewAfter                      time.Duration
	maxBody, maxBlob, maxInflight          int64
	readHeaderTimeout, readTimeout         time.Duration
	writeTimeout, idleTimeout              time.Duration
	shutdownTimeout                        time.Duration
	logLevel, logFormat                    string
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
	fs.Int64Var(&c.maxBlob, "max-blob-bytes", httpstore.DefaultMaxBlobBytes, "largest blob a blobs/put stores; larger ones get 413 and store nothing")
	fs.DurationVar(&c.readHeaderTimeout, "read-header-timeout", 10*time.Second, "time to read a request's headers")
	fs.DurationVar(&c.readTimeout, "read-timeout", 2*time.Minute, "time to read a whole request")
	fs.DurationVar(&c.writeTimeout, "write-timeout", 2*time.Minute, "time from the end of a request's headers to the end of its reply")
	fs.DurationVar(&c.idleTimeout, "idle-timeout", 2*time.Minute, "how long an idle keep-alive connection stays open")
	fs.DurationVar(&c.shutdownTimeout, "shutdown-timeout", 30*time.Second, "how long SIGTERM waits for requests in flight")
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
	case c.logFormat != "json" && c.logFormat != "text":
		return nil, usage("--log-format must be json or text")
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
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "ckptserver: %v\nRun 'ckptserver -h' for the flags.\n", err)
		return 2
	}
	if err != nil {
		fmt.Fprintf(stderr, "ckptserver: %v\n", err)
		return 2
	}
	if err := serve(ctx, &setup{c: c, tokens: tokens, lease: lease, bucket: bucket, log: log}, stdout); err != nil {
		log.Error("ckptserver failed", "err", err)
		if errors.Is(err, storeurl.ErrBadURL) {
			return 2
		}
		return 1
	}
	return 0
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
}

func serve(ctx context.Context, s *setup, stdout io.Writer) error {
	c, log := s.c, s.log
	openCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	opened, err := storeurl.Open(openCtx, c.store, storeurl.Options{Lease: s.lease})
	cancel()
	if err != nil {
		return fmt.Errorf("--store: %w", err)
	}
	defer func() { _ = opened.Close() }()

	var draining atomic.Bool
	srv, err := s.newServer(opened, &draining)
	if err != nil {
		return err
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
	log.Info("listening", "addr", ln.Addr().String(), "tls", scheme == "https", "store", opened.Desc, "dev", c.dev, "namespaces", len(s.tokens), "bucket", redact(c.bucket))

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
	// Drain: /readyz turns 503 so a load balancer stops sending, the
	// listener closes, and the requests in flight finish.
	draining.Store(true)
	log.Info("shutting down: draining requests in flight", "timeout", c.shutdownTimeout)
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

// newServer returns the HTTP server of opened: the protocol under /v1/,
// /healthz, /readyz (503 once draining is set, or while the store does not
// answer) and /metrics, with TLS when --tls-cert is set.
func (s *setup) newServer(opened *storeurl.Opened, draining *atomic.Bool) (*http.Server, error) {
	c := s.c
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), version.Collector())
	api := httpstore.NewHandler(opened, httpstore.HandlerOptions{
		Dev: c.dev, Tokens: s.tokens, Lease: s.lease, MaxBodyBytes: c.maxBody, Logger: s.log, Registerer: reg,
		Bucket: s.bucket, MaxBlobBytes: c.maxBlob, MaxInflightBytes: c.maxInflight,
	})
	healthz := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok\n")
	})
	readyz := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if draining.Load() {
			http.Error(w, "shutting down", http.StatusServiceUnavailable)
			return
		}
		pctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := opened.Ping(pctx); err != nil {
			http.Error(w, "the store does not answer: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, "ok\n")
	})
	srv := &http.Server{
		Handler: &top{api: api, get: map[string]http.Handler{
			"/healthz": healthz, "/readyz": readyz,
			"/metrics": promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}),
		}},
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
			return nil, fmt.Errorf("--tls-cert, --tls-key: %w", err)
		}
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	return srv, nil
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
