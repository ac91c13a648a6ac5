package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/httpstore"
	"github.com/ckptstore/ckptstore/persist"
)

// server is a ckptserver run in process.
type server struct {
	url  string
	stop context.CancelFunc
	code chan int
	errs *logBuf // its stderr: the log
}

// logBuf is a server's stderr, written by its goroutines as a test reads it.
type logBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// start runs ckptserver with args and waits for its "listening on" line.
func start(t *testing.T, args ...string) *server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	s := &server{stop: cancel, code: make(chan int, 1), errs: &logBuf{}}
	go func() {
		s.code <- run(ctx, args, pw, s.errs)
		pw.Close()
	}()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		cancel()
		t.Fatalf("ckptserver %v: no address line (exit %d): %v", args, <-s.code, err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if !ok {
		t.Fatalf("first line %q", line)
	}
	s.url = url
	t.Cleanup(func() {
		cancel()
		<-s.code
	})
	return s
}

func post(t *testing.T, hc *http.Client, url, body string, header ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestFlagsRefused(t *testing.T) {
	dir := t.TempDir()
	weak := filepath.Join(dir, "weak")
	_ = os.WriteFile(weak, []byte("short ns\n"), 0o600)
	for _, args := range [][]string{
		{"--dev", "--listen", "0.0.0.0:0"},
		{"--dev", "--listen", ":0"},
		{"--dev", "--listen", "192.0.2.1:0"},
		{"--listen", "127.0.0.1:0"}, // neither --dev nor --tokens
		{"--dev", "--tokens", weak},
		{"--tokens", weak},
		{"--tokens", filepath.Join(dir, "missing")},
		{"--dev", "--listen", "127.0.0.1:0", "--tls-cert", "c"},
		{"--dev", "--listen", "127.0.0.1:0", "--store", "postgres://x"},
		{"--dev", "--listen", "127.0.0.1:0", "--store", "redis+sentinel://127.0.0.1:1?master_name=m&replica_timeout=soon"},
		{"--dev", "--listen", "127.0.0.1:0", "--store", "redis+cluster://127.0.0.1:1/3"},
		{"--dev", "--listen", "127.0.0.1:0", "--lease", "1s", "--renew-after", "2s"},
		{"--dev", "extra"},
		{"--dev", "--listen", "127.0.0.1:0", "--bucket", "ftp://x"},
		{"--dev", "--listen", "127.0.0.1:0", "--bucket", "mem://x/y"},
		{"--dev", "--listen", "127.0.0.1:0", "--bucket", "s3://b?nope=1"},
		{"--dev", "--listen", "127.0.0.1:0", "--max-blob-bytes", "0"},
		{"--dev", "--listen", "127.0.0.1:0", "--max-inflight-bytes", "1000"},
		{"--dev", "--listen", "127.0.0.1:0", "--max-inflight-bytes", "-1"},
		{"--dev", "--listen", "127.0.0.1:0", "--shutdown-delay", "-1s"},
		{"--dev", "--listen", "127.0.0.1:0", "--metrics-listen", "no-port"},
		{"--dev", "--listen", "127.0.0.1:0", "--shutdown-timeout", "0s"},
	} {
		var stderr strings.Builder
		if code := run(context.Background(), args, io.Discard, &stderr); code != 2 {
			t.Errorf("ckptserver %q: exit %d, want 2 (%s)", args, code, stderr.String())
		}
	}
}

func TestDevServer(t *testing.T) {
	s := start(t, "--dev", "--listen", "127.0.0.1:0", "--store", "mem", "--log-level", "debug")
	ctx := context.Background()
	c, err := httpstore.NewClient(s.url, httpstore.ClientOptions{Namespace: "dev-test"})
	if err != nil {
		t.Fatal(err)
	}
	l, err := c.AcquireWriter(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	cp := &ckptstore.Checkpoint{ID: "c1", ThreadID: "t", CreatedAt: 1, Reason: ckptstore.ReasonAutomatic}
	if err := c.Append(ctx, cp, "", l.Writer); err != nil {
		t.Fatal(err)
	}
	if h, err := c.GetHead(ctx, "t"); err != nil || h != "c1" {
		t.Fatalf("Head = %q, %v", h, err)
	}
	for path, want := range map[string]string{"/healthz": "ok", "/readyz": "ok"} {
		if code, body := get(t, s.url+path); code != 200 || !strings.Contains(body, want) {
			t.Errorf("%s: %d %q", path, code, body)
		}
	}
	code, body := get(t, s.url+"/metrics")
	for _, want := range []string{
		`ckptstore_http_requests_total{rpc="append",status="200"} 1`,
		`ckptstore_http_request_duration_seconds_bucket{rpc="append"`,
		`ckptstore_http_requests_in_flight{rpc="append"} 0`,
	} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// A second namespace is another, empty store.
	other, _ := httpstore.NewClient(s.url, httpstore.ClientOptions{Namespace: "dev-test-2"})
	if h, err := other.GetHead(ctx, "t"); err != nil || h != "" {
		t.Errorf("another namespace sees head %q, %v", h, err)
	}
}

// TestDrain sends half a request, shuts the server down, then sends the
// rest: the request in flight is served, and the server exits cleanly.
func TestDrain(t *testing.T) {
	s := start(t, "--dev", "--listen", "127.0.0.1:0")
	pr, pw := io.Pipe()
	req, _ := http.NewRequest(http.MethodPost, s.url+"/v1/getHead", pr)
	req.Header.Set("Content-Type", "application/json")
	type result struct {
		code int
		body string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- result{err: err}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		done <- result{code: resp.StatusCode, body: string(b)}
	}()
	if _, err := pw.Write([]byte(`{"threadId":`)); err != nil {
		t.Fatal(err)
	}
	// The server has the request once /metrics counts it in flight.
	for {
		_, m := get(t, s.url+"/metrics")
		if strings.Contains(m, `ckptstore_http_requests_in_flight{rpc="getHead"} 1`) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	s.stop()
	// The listener closes: new connections are refused.
	for {
		conn, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
		if err != nil {
			break
		}
		conn.Close()
		time.Sleep(time.Millisecond)
	}
	if _, err := pw.Write([]byte(`"t"}`)); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	r := <-done
	if r.err != nil || r.code != 200 || r.body != `{"headId":null}` {
		t.Errorf("the request in flight: %d %q %v", r.code, r.body, r.err)
	}
	if code := <-s.code; code != 0 {
		t.Errorf("exit %d after a drain", code)
	}
	s.code <- 0 // for the cleanup
}

// TestShutdownDelay: on SIGTERM with --shutdown-delay, /readyz answers 503
// while the listener still serves (a new connection's request succeeds),
// and only then does the listener close and the server exit cleanly.
func TestShutdownDelay(t *testing.T) {
	s := start(t, "--dev", "--listen", "127.0.0.1:0", "--shutdown-delay", "3s")
	if code, _ := get(t, s.url+"/readyz"); code != 200 {
		t.Fatalf("/readyz before SIGTERM: %d", code)
	}
	s.stop()
	// Each request on a new connection: the delay is about new ones.
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	var code int
	var body string
	for code != 503 {
		code, body = getWith(t, hc, s.url+"/readyz")
		time.Sleep(time.Millisecond)
	}
	if !strings.Contains(body, `"code":"UNAVAILABLE"`) || !strings.Contains(body, "shutting down") {
		t.Errorf("/readyz while draining: %q", body)
	}
	if code, body := post(t, hc, s.url+"/v1/getHead", `{"threadId":"t"}`); code != 200 || body != `{"headId":null}` {
		t.Errorf("a request while /readyz is 503: %d %q, want it served", code, body)
	}
	select {
	case c := <-s.code:
		t.Fatalf("exit %d before the delay ended", c)
	default:
	}
	for {
		conn, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
		if err != nil {
			break
		}
		conn.Close()
		time.Sleep(10 * time.Millisecond)
	}
	if c := <-s.code; c != 0 {
		t.Errorf("exit %d after the delay", c)
	}
	s.code <- 0 // for the cleanup
}

func getWith(t *testing.T, hc *http.Client, url string) (int, string) {
	t.Helper()
	resp, err := hc.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestTokens(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tokens")
	const tokA, tokB = "token-a-0123456789abcdef", "token-b-0123456789abcdef"
	_ = os.WriteFile(file, []byte("# tenants\n"+tokA+" tenant a\n\n"+tokB+"\ttenant}b\n"), 0o600)
	s := start(t, "--tokens", file, "--listen", "127.0.0.1:0", "--max-body-bytes", "4096")
	ctx := context.Background()
	a, _ := httpstore.NewClient(s.url, httpstore.ClientOptions{Token: tokA})
	b, _ := httpstore.NewClient(s.url, httpstore.ClientOptions{Token: tokB})
	la, err := a.AcquireWriter(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.AcquireWriter(ctx, "t"); err != nil {
		t.Errorf("tenant b sees tenant a's lease: %v", err)
	}
	if _, err := a.AcquireWriter(ctx, "t"); !errors.Is(err, ckptstore.ErrWriterConflict) {
		t.Errorf("tenant a's own lease: %v", err)
	}
	hc := http.DefaultClient
	for _, tc := range []struct {
		name   string
		header []string
		status int
		code   string
	}{
		{"no token", nil, 401, "UNAUTHORIZED"},
		{"unknown token", []string{"Authorization", "Bearer token-c-0123456789abcdef"}, 401, "UNAUTHORIZED"},
		{"a token's prefix", []string{"Authorization", "Bearer " + tokA[:20]}, 401, "UNAUTHORIZED"},
		{"basic auth", []string{"Authorization", "Basic " + tokA}, 401, "UNAUTHORIZED"},
		{"client clock", []string{"Authorization", "Bearer " + tokA, "Ckpt-Now", "1"}, 400, "BAD_REQUEST"},
		{"lease option", []string{"Authorization", "Bearer " + tokA, "Ckpt-Lease-Duration-Ms", "1000"}, 400, "BAD_REQUEST"},
		{"renew option", []string{"Authorization", "Bearer " + tokA, "Ckpt-Renew-After-Ms", "10"}, 400, "BAD_REQUEST"},
		{"another namespace", []string{"Authorization", "Bearer " + tokA, "Ckpt-Namespace", "tenant%7Db"}, 400, "BAD_REQUEST"},
		{"its own namespace", []string{"Authorization", "Bearer " + tokA, "Ckpt-Namespace", "tenant%20a"}, 200, ""},
	} {
		status, body := post(t, hc, s.url+"/v1/getHead", `{"threadId":"t"}`, tc.header...)
		if status != tc.status || !strings.Contains(body, tc.code) {
			t.Errorf("%s: %d %s, want %d %s", tc.name, status, body, tc.status, tc.code)
		}
	}
	// The body limit: 413 above --max-body-bytes, nothing written.
	big := &ckptstore.Checkpoint{ID: "big", ThreadID: "t", CreatedAt: 1, Reason: ckptstore.ReasonAutomatic,
		Conversation: []byte(`["` + strings.Repeat("x", 5000) + `"]`)}
	var he *httpstore.Error
	if err := a.Append(ctx, big, "", la.Writer); !errors.As(err, &he) || he.Status != 413 || he.Code != "PAYLOAD_TOO_LARGE" {
		t.Errorf("a body above the limit: %v", err)
	}
	if h, err := a.GetHead(ctx, "t"); err != nil || h != "" {
		t.Errorf("after a refused body, head %q, %v", h, err)
	}
}

func TestTLS(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, pool := selfSigned(t, dir)
	s := start(t, "--dev", "--listen", "127.0.0.1:0", "--tls-cert", certFile, "--tls-key", keyFile)
	if !strings.HasPrefix(s.url, "https://") {
		t.Fatalf("TLS server at %s", s.url)
	}
	tr := httpstore.NewTransport()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	c, err := httpstore.NewClient(s.url, httpstore.ClientOptions{HTTPClient: &http.Client{Transport: tr}})
	if err != nil {
		t.Fatal(err)
	}
	if h, err := c.GetHead(context.Background(), "t"); err != nil || h != "" {
		t.Errorf("over TLS: %q, %v", h, err)
	}
}

func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ckptserver test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	_ = os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	_ = os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// TestBucketFlag: --bucket opens the blobs.Open forms (mem://, a file
// directory, s3:// with s3blob linked) into a working bucket, and a server
// starts with one.
func TestBucketFlag(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	for _, u := range []string{"", "mem://", "file://" + dir + "?create=true", "s3://bucket?endpoint=http://127.0.0.1:1&region=us-east-1&use_path_style=true"} {
		b, err := openBucket(ctx, u)
		if err != nil {
			t.Fatalf("--bucket %q: %v", u, err)
		}
		if (b == nil) != (u == "") {
			t.Fatalf("--bucket %q: bucket %v", u, b)
		}
		if b == nil || strings.HasPrefix(u, "s3:") {
			continue // no S3 server here: opening is all the flag does
		}
		if err := b.Put(ctx, "tanstack-blobs/x", strings.NewReader("bytes")); err != nil {
			t.Fatalf("--bucket %q: put: %v", u, err)
		}
		rc, err := b.Get(ctx, "tanstack-blobs/x")
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(rc)
		rc.Close()
		if string(got) != "bytes" {
			t.Fatalf("--bucket %q: read %q", u, got)
		}
	}
	// A bucket that cannot be opened (no directory) is not a usage error.
	var stderr strings.Builder
	if code := run(ctx, []string{"--dev", "--listen", "127.0.0.1:0", "--bucket", "file:///no/such/dir"}, io.Discard, &stderr); code != 1 || !strings.Contains(stderr.String(), "--bucket") {
		t.Errorf("a missing bucket directory: exit %d, %s", code, stderr.String())
	}
	start(t, "--dev", "--listen", "127.0.0.1:0", "--bucket", "file://"+dir)
}

// TestPersistence serves TanStack AI's persistence from the server's own
// wiring: the store URL's persistence driver, --bucket for the bytes and
// --max-blob-bytes for their limit, beside the checkpoints of one namespace.
func TestPersistence(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := start(t, "--dev", "--listen", "127.0.0.1:0", "--store", "memkv", "--bucket", "file://"+dir, "--max-blob-bytes", "8")
	c, err := httpstore.NewClient(s.url, httpstore.ClientOptions{Namespace: "tenant"})
	if err != nil {
		t.Fatal(err)
	}
	p := c.Persistence()
	run, err := p.Runs.CreateOrResume(ctx, persist.RunStart{RunID: "r1", ThreadID: "t1", StartedAt: 5})
	if err != nil || run.Status != persist.RunRunning {
		t.Fatalf("createOrResume: %+v, %v", run, err)
	}
	if err := c.SaveThread(ctx, "t1", json.RawMessage(`[{"role":"user","content":"hi"}]`)); err != nil {
		t.Fatal(err)
	}
	if err := p.Runs.Update(ctx, "r1", persist.RunPatch{Status: persist.Set(persist.RunCompleted)}); err != nil {
		t.Fatal(err)
	}
	if active, err := p.Runs.FindActiveRun(ctx, "t1"); err != nil || active != nil {
		t.Fatalf("findActiveRun after completion: %+v, %v", active, err)
	}
	if _, err := p.Blobs.Put(ctx, "k", strings.NewReader("8 bytes!"), persist.BlobPutOptions{}); err != nil {
		t.Fatalf("a put at the limit: %v", err)
	}
	if _, err := p.Blobs.Put(ctx, "k", strings.NewReader("nine byte"), persist.BlobPutOptions{}); err == nil {
		t.Fatal("a put above --max-blob-bytes was stored")
	}
	obj, err := p.Blobs.Get(ctx, "k", nil)
	if err != nil || obj == nil {
		t.Fatalf("get: %+v, %v", obj, err)
	}
	got, _ := io.ReadAll(obj.Body)
	obj.Body.Close()
	if string(got) != "8 bytes!" {
		t.Fatalf("the refused put changed the bytes: %q", got)
	}
	// The bytes are in the --bucket directory (its objects under d/), the
	// row in the store.
	var files int
	_ = filepath.WalkDir(filepath.Join(dir, "d"), func(_ string, d os.DirEntry, _ error) error {
		if d != nil && !d.IsDir() {
			files++
		}
		return nil
	})
	if files != 1 {
		out, _ := exec.Command("find", dir).CombinedOutput()
		t.Fatalf("%d objects in the bucket, want 1:\n%s", files, out)
	}
	// Another namespace sees none of it.
	other, _ := httpstore.NewClient(s.url, httpstore.ClientOptions{Namespace: "other"})
	if r, err := other.Persistence().Runs.Get(ctx, "r1"); err != nil || r != nil {
		t.Fatalf("another namespace reads the run: %+v, %v", r, err)
	}
	held := false
	if err := p.Locks.WithLock(ctx, "sandbox:t1", func(context.Context) error { held = true; return nil }); err != nil || !held {
		t.Fatalf("withLock: %v (ran %v)", err, held)
	}
}

// TestRequestLog: each request's log record carries its request id (the
// client's X-Request-Id when it is a sane token, else one the server made,
// returned in the reply either way), its tenant, its route and its
// duration in seconds.
func TestRequestLog(t *testing.T) {
	file := filepath.Join(t.TempDir(), "tokens")
	const tok = "token-a-0123456789abcdef"
	_ = os.WriteFile(file, []byte(tok+" tenant a\n"), 0o600)
	s := start(t, "--tokens", file, "--listen", "127.0.0.1:0", "--log-level", "debug")
	send := func(id, auth string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, s.url+"/v1/getHead", strings.NewReader(`{"threadId":"t"}`))
		req.Header.Set("Content-Type", "application/json")
		if id != "" {
			req.Header.Set("X-Request-Id", id)
		}
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.Header.Get("X-Request-Id")
	}
	made := regexp.MustCompile(`^[0-9a-f]{16}$`)
	for _, tc := range []struct {
		sent, auth, tenant string
		status             int
		kept               bool
	}{
		{"client-id-1", tok, "tenant a", 200, true},
		{"Root=1-67a2-abc/def+x@y:z_w.v", tok, "tenant a", 200, true},
		{"", tok, "tenant a", 200, false},
		{"has space", tok, "tenant a", 200, false},
		{strings.Repeat("x", 129), tok, "tenant a", 200, false},
		{"ünïcode", tok, "tenant a", 200, false},
		{"no-token-id", "", "", 401, true},
	} {
		status, id := send(tc.sent, tc.auth)
		if status != tc.status {
			t.Errorf("X-Request-Id %q: status %d, want %d", tc.sent, status, tc.status)
		}
		if tc.kept && id != tc.sent || !tc.kept && !made.MatchString(id) {
			t.Errorf("X-Request-Id %q: the reply's is %q", tc.sent, id)
			continue
		}
		var rec map[string]any
		for _, line := range strings.Split(s.errs.String(), "\n") {
			var r map[string]any
			if json.Unmarshal([]byte(line), &r) == nil && r["request_id"] == id {
				rec = r
			}
		}
		if rec == nil {
			t.Errorf("X-Request-Id %q: no log record with request_id %q:\n%s", tc.sent, id, s.errs.String())
			continue
		}
		d, isFloat := rec["duration"].(float64)
		if rec["msg"] != "request" || rec["tenant"] != tc.tenant || rec["rpc"] != "getHead" || rec["status"] != float64(tc.status) || !isFloat || d <= 0 || d > 60 {
			t.Errorf("X-Request-Id %q: log record %v, want tenant %q, rpc getHead, status %d, duration in seconds", tc.sent, rec, tc.tenant, tc.status)
		}
	}
}

// TestMetricsListen: with --metrics-listen, /metrics is served there, with
// the rpc, status and code labels, and not on the public listener.
func TestMetricsListen(t *testing.T) {
	s := start(t, "--dev", "--listen", "127.0.0.1:0", "--metrics-listen", "127.0.0.1:0")
	// The listening record follows the stdout line that start waited for.
	var rec struct {
		Msg         string `json:"msg"`
		MetricsAddr string `json:"metrics_addr"`
	}
	for rec.Msg != "listening" {
		time.Sleep(time.Millisecond)
		for _, line := range strings.Split(s.errs.String(), "\n") {
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "listening" {
				break
			}
		}
	}
	addr := rec.MetricsAddr
	if addr == "" {
		t.Fatalf("no metrics_addr in the listening record:\n%s", s.errs.String())
	}
	if code, body := post(t, http.DefaultClient, s.url+"/v1/getHead", `{"threadId":"t"}`); code != 200 {
		t.Fatalf("getHead: %d %s", code, body)
	}
	if code, body := post(t, http.DefaultClient, s.url+"/v1/getHead", `{}`); code != 400 {
		t.Fatalf("getHead without a thread: %d %s", code, body)
	}
	if code, body := get(t, s.url+"/metrics"); code != 404 || !strings.Contains(body, `"code":"NOT_FOUND"`) {
		t.Errorf("/metrics on the public listener: %d %q, want 404 NOT_FOUND", code, body)
	}
	code, body := get(t, "http://"+addr+"/metrics")
	for _, want := range []string{
		`ckptstore_http_requests_total{rpc="getHead",status="200"} 1`,
		`ckptstore_http_requests_total{rpc="getHead",status="400"} 1`,
		`ckptstore_http_errors_total{code="SANDBOX_SNAPSHOT_INVALID_ID",rpc="getHead"} 1`,
		`ckptstore_http_request_duration_seconds_count{rpc="getHead"} 2`,
		`ckptstore_http_requests_in_flight{rpc="getHead"} 0`,
		`ckptstore_http_body_bytes_in_flight 0`,
		`go_goroutines `,
	} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("the metrics listener's /metrics lacks %s (%d)", want, code)
		}
	}
	if strings.Contains(body, `method="`) {
		t.Errorf("a method label is left:\n%s", body)
	}
	for _, path := range []string{"/healthz", "/v1/getHead"} {
		if code, body := get(t, "http://"+addr+path); code != 404 || !strings.Contains(body, `"code":"NOT_FOUND"`) {
			t.Errorf("%s on the metrics listener: %d %q, want 404", path, code, body)
		}
	}
}
