package main

// The bad-input battery: what a tenant with a valid token, or anyone who
// can reach the port, may send, and what the server must still do — keep
// its memory within the in-flight budget, keep serving the others, answer
// every odd path with the protocol's typed JSON error and never echo an
// input unbounded. The memory cases run the real binary as a child
// process (built here without -race), since VmHWM is a process's figure.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	attackerToken = "attacker-token-0123456789"
	otherToken    = "other-tenant-token-0123456789"
)

// tokensFile writes the battery's tokens: an attacker and another tenant.
func tokensFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens")
	body := attackerToken + " attacker\n" + otherToken + " other\n"
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
	buildDir  string
)

// ckptserverBinary builds ckptserver once per test run, without the race
// detector, whose shadow memory would swamp the figures measured.
func ckptserverBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		gobin, err := exec.LookPath("go")
		if err != nil {
			buildErr = fmt.Errorf("no go command on PATH: %w", err)
			return
		}
		if buildDir, err = os.MkdirTemp("", "ckptserver-badinput"); err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(buildDir, "ckptserver")
		out, err := exec.Command(gobin, "build", "-o", builtBin, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return builtBin
}

// TestMain removes the binary the battery built.
func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		_ = os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// child is a ckptserver running as a child process.
type child struct {
	url string
	pid int
}

// startChild runs the built ckptserver with args on a free loopback port
// and waits for its address line; it is killed when the test ends.
func startChild(t *testing.T, args ...string) *child {
	t.Helper()
	cmd := exec.Command(ckptserverBinary(t), append([]string{"--listen", "127.0.0.1:0"}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("ckptserver %v: no address line: %v\n%s", args, err, stderr.String())
	}
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if !ok {
		t.Fatalf("first line %q", line)
	}
	return &child{url: url, pid: cmd.Process.Pid}
}

// vmHWM is the process's peak resident set size, in bytes.
func vmHWM(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc/%d/status to read the peak RSS from (not Linux?): %v", pid, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("VmHWM line %q: %v", line, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}

// filler is an endless-looking body of n bytes, made as it is read: the
// test holds none of it.
type filler struct {
	prefix string
	n      int64
}

var fill = []byte(strings.Repeat("a", 64<<10))

func (f *filler) Read(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, io.EOF
	}
	var k int
	if f.prefix != "" {
		k = copy(p, f.prefix)
		f.prefix = f.prefix[k:]
	} else {
		k = copy(p, fill[:min(int64(len(fill)), f.n)])
	}
	f.n -= int64(k)
	return k, nil
}

// metric is the value of the sample of /metrics whose line starts with
// name (labels included), summed over every match of the pattern.
func metric(t *testing.T, url, pattern string) float64 {
	t.Helper()
	_, body := get(t, url+"/metrics")
	re := regexp.MustCompile(`(?m)^` + pattern + ` (\S+)$`)
	var sum float64
	for _, m := range re.FindAllStringSubmatch(body, -1) {
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatalf("metric %s: %v", m[0], err)
		}
		sum += v
	}
	return sum
}

// TestBadInputMemory sends 8 concurrent 200 MB chunked bodies with a
// valid token, to a checkpoint read, a write and a persistence route, at
// the default limits (64 MiB a body, 256 MiB in flight). Each is refused
// (413 past the body limit, or 503 OVERLOADED past the budget) and the
// peak RSS stays within the budget plus a margin, while the other tenant's
// small requests are all served. Before the budget and the bounded
// reads, the same storm took the server past 1.3 GB.
func TestBadInputMemory(t *testing.T) {
	s := startChild(t, "--store", "mem", "--tokens", tokensFile(t))
	const (
		budget = 256 << 20
		// margin: the process at rest (about 20 MiB), one 256 KiB piece
		// per request past the budget's accounting, the other tenant's
		// requests, and the collector's slack on the pieces of refused
		// bodies; the storm without a budget took about 1.3 GB.
		margin = 128 << 20
		bodies = 8
		size   = 200_000_000
	)
	routes := []string{"get", "append", "runs/createOrResume"}
	var wg sync.WaitGroup
	results := make([]string, bodies)
	for i := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequest(http.MethodPost, s.url+"/v1/"+routes[i%len(routes)],
				&filler{prefix: `{"threadId":"`, n: size})
			req.ContentLength = -1 // chunked
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+attackerToken)
			resp, err := (&http.Client{Transport: &http.Transport{}}).Do(req)
			if err != nil {
				results[i] = "closed: " + err.Error()
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			var e struct{ Code string }
			_ = json.Unmarshal(b, &e)
			results[i] = fmt.Sprintf("%d %s", resp.StatusCode, e.Code)
			if resp.StatusCode == http.StatusServiceUnavailable && resp.Header.Get("Retry-After") == "" {
				results[i] += " without Retry-After"
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	// The other tenant, meanwhile: small requests, each answered 200.
	hc := &http.Client{}
	served := 0
	for stop := false; !stop; {
		select {
		case <-done:
			stop = true
		default:
		}
		code, body := post(t, hc, s.url+"/v1/getHead", `{"threadId":"t"}`, "Authorization", "Bearer "+otherToken)
		if code != http.StatusOK {
			t.Errorf("the other tenant's getHead during the storm: %d %s", code, body)
			break
		}
		served++
	}
	<-done
	if served == 0 {
		t.Error("the other tenant got no request served during the storm")
	}
	for i, r := range results {
		if r != "413 PAYLOAD_TOO_LARGE" && r != "503 OVERLOADED" && !strings.HasPrefix(r, "closed: ") {
			t.Errorf("body %d (%s): %s, want 413 PAYLOAD_TOO_LARGE or 503 OVERLOADED with Retry-After", i, routes[i%len(routes)], r)
		}
	}
	// A closed connection counts only after the server refused: every
	// body got its refusal, whatever the client saw of it.
	refused := metric(t, s.url, `ckptstore_http_requests_total\{rpc="(?:get|append|runs/createOrResume)",status="(?:413|503)"\}`)
	if refused != bodies {
		t.Errorf("the server refused %v bodies, want %d (%v)", refused, bodies, results)
	}
	if v := metric(t, s.url, `ckptstore_http_body_bytes_in_flight`); v != 0 {
		t.Errorf("body bytes in flight after the storm: %v, want 0", v)
	}
	hwm := vmHWM(t, s.pid)
	t.Logf("peak RSS %d MiB (budget %d MiB + margin %d MiB); the other tenant got %d requests served; %v",
		hwm>>20, budget>>20, margin>>20, served, results)
	if hwm > budget+margin {
		t.Errorf("peak RSS %d MiB, more than the budget %d MiB + margin %d MiB", hwm>>20, budget>>20, margin>>20)
	}
}

// TestBadInputCancelReleases cancels a request in the middle of its body:
// the budget it held comes back to zero.
func TestBadInputCancelReleases(t *testing.T) {
	s := start(t, "--listen", "127.0.0.1:0", "--store", "mem", "--tokens", tokensFile(t))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.url+"/v1/saveThread", pr)
	req.ContentLength = -1
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+attackerToken)
	errc := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	go func() { _, _ = pw.Write([]byte(`{"threadId":"t","messages":["` + strings.Repeat("x", 1<<20))) }()
	waitMetric(t, s.url, func(v float64) bool { return v > 0 }, "the request's body to be reserved")
	cancel()
	pw.CloseWithError(context.Canceled)
	<-errc
	waitMetric(t, s.url, func(v float64) bool { return v == 0 }, "the budget to come back to 0")
}

// waitMetric polls ckptstore_http_body_bytes_in_flight until ok, for at
// most 10 s.
func waitMetric(t *testing.T, url string, ok func(float64) bool, what string) {
	t.Helper()
	var v float64
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if v = metric(t, url, `ckptstore_http_body_bytes_in_flight`); ok(v) {
			return
		}
	}
	t.Fatalf("waiting for %s: body bytes in flight %v", what, v)
}

// TestBadInputOddPaths: every path and method the server does not serve is
// the protocol's typed JSON error, never a redirect or plain text.
func TestBadInputOddPaths(t *testing.T) {
	s := start(t, "--listen", "127.0.0.1:0", "--store", "mem", "--tokens", tokensFile(t))
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, tc := range []struct {
		method, path string
		status       int
		code         string
	}{
		{"POST", "/v1//get", 404, "NOT_FOUND"},
		{"POST", "/v1/../v1/get", 404, "NOT_FOUND"},
		{"POST", "/v1/./get", 404, "NOT_FOUND"},
		{"POST", "/V1/GET", 404, "NOT_FOUND"},
		{"POST", "/v1/GET", 404, "NOT_FOUND"},
		{"POST", "/", 404, "NOT_FOUND"},
		{"GET", "/", 404, "NOT_FOUND"},
		{"POST", "/nope", 404, "NOT_FOUND"},
		{"POST", "/v1", 404, "NOT_FOUND"},
		{"POST", "/v1/", 404, "NOT_FOUND"},
		{"POST", "/v1/get/", 404, "NOT_FOUND"},
		{"GET", "/healthz/", 404, "NOT_FOUND"},
		{"GET", "//healthz", 404, "NOT_FOUND"},
		{"GET", "/v1/get", 405, "METHOD_NOT_ALLOWED"},
		{"POST", "/healthz", 405, "METHOD_NOT_ALLOWED"},
		{"PUT", "/readyz", 405, "METHOD_NOT_ALLOWED"},
		{"DELETE", "/metrics", 405, "METHOD_NOT_ALLOWED"},
	} {
		req, err := http.NewRequest(tc.method, s.url+tc.path, strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+attackerToken)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e struct{ Code, Message string }
		if err := json.Unmarshal(b, &e); err != nil || resp.StatusCode != tc.status || e.Code != tc.code ||
			resp.Header.Get("Content-Type") != "application/json" || e.Message == "" {
			t.Errorf("%s %s: %d %s %q, want %d and a JSON %s", tc.method, tc.path, resp.StatusCode,
				resp.Header.Get("Content-Type"), b, tc.status, tc.code)
		}
		if tc.status == 405 && resp.Header.Get("Allow") == "" {
			t.Errorf("%s %s: 405 without Allow", tc.method, tc.path)
		}
	}
	// OPTIONS * (which http.Client cannot send) is no exception.
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 404 || !strings.Contains(string(b), `"NOT_FOUND"`) {
		t.Errorf("OPTIONS *: %d %q, want a JSON NOT_FOUND", resp.StatusCode, b)
	}
	// The endpoints themselves answer as before, HEAD included.
	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		resp, err := hc.Head(s.url + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("HEAD %s: %d", path, resp.StatusCode)
		}
	}
}

// TestBadInputNoEcho: an error about a huge input quotes a short prefix of
// it, so a reply never grows with what the client sent.
func TestBadInputNoEcho(t *testing.T) {
	s := start(t, "--listen", "127.0.0.1:0", "--store", "mem", "--tokens", tokensFile(t))
	dev := start(t, "--dev", "--listen", "127.0.0.1:0", "--store", "mem")
	huge := strings.Repeat("€", 34_000) // 102 KB, within the header limit; 64 bytes cut a rune
	auth := []string{"Authorization", "Bearer " + attackerToken}
	const maxReply = 4 << 10
	for _, tc := range []struct {
		name, url, body string
		header          []string
		status          int
	}{
		{"path", s.url + "/v1/" + huge, `{}`, auth, 404},
		{"Content-Type", s.url + "/v1/getHead", `{}`, append([]string{"Content-Type", "application/" + huge}, auth...), 415},
		{"Ckpt-Now", dev.url + "/v1/getHead", `{"threadId":"t"}`, []string{"Ckpt-Now", huge}, 400},
		{"Ckpt-Lease-Duration-Ms", dev.url + "/v1/getHead", `{"threadId":"t"}`, []string{"Ckpt-Namespace", "fresh", "Ckpt-Lease-Duration-Ms", huge}, 400},
		{"Ckpt-Namespace", dev.url + "/v1/getHead", `{"threadId":"t"}`, []string{"Ckpt-Namespace", huge}, 400},
		{"a member's name", s.url + "/v1/runs/get", `{"` + strings.Repeat("n", 1<<20) + `":1}`, auth, 400},
		{"a nested member's name", s.url + "/v1/runs/update", `{"runId":"r","patch":{"error":{"message":"m","` + strings.Repeat("n", 1<<20) + `":1}}}`, auth, 400},
		{"a namespace too long for a token", s.url + "/v1/getHead", `{"threadId":"t"}`, append([]string{"Ckpt-Namespace", huge}, auth...), 400},
	} {
		code, body := post(t, http.DefaultClient, tc.url, tc.body, tc.header...)
		var e struct{ Code, Message string }
		if err := json.Unmarshal([]byte(body), &e); err != nil || e.Code == "" {
			t.Errorf("%s: %d %.200q: not a JSON error", tc.name, code, body)
		}
		if code != tc.status {
			t.Errorf("%s: %d %.200q, want %d", tc.name, code, body, tc.status)
		}
		if strings.Contains(e.Message, `\x`) {
			t.Errorf("%s: the message quotes a rune cut in two: %.200q", tc.name, e.Message)
		}
		if len(body) > maxReply {
			t.Errorf("%s: a reply of %d bytes echoes the input (%.200q…)", tc.name, len(body), body)
		}
	}
}

// (The blob-metadata and id-limit cases of the battery go below.)
