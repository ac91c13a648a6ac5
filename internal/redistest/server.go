// Package redistest runs real redis-server processes for the module's
// tests and benchmarks, and a TCP proxy that loses connections on purpose.
//
// Launch starts a server for callers that have no testing.TB (a TestMain,
// a benchmark harness): it returns ErrNotInstalled when redis-server is
// not on PATH, and the caller stops the server with Stop. Start is Launch
// for a test: a missing redis-server fails the test under CI (CI=true),
// where the server must have been installed (make deps), and skips it with
// the reason everywhere else; the server is stopped when the test ends.
//
// Invariants:
//
//   - A server listens on a free 127.0.0.1 port only, keeps its files in a
//     temporary directory of its own, and saves no RDB snapshots unless its
//     arguments ask for them.
//   - Readiness is read from the server's own log ("Ready to accept
//     connections"), not polled; the log is drained for the server's whole
//     life so that it never blocks on a full pipe.
//   - Kill returns only once the process has exited, and Stop also removes
//     the directory, so neither a process nor its files outlive Stop.
package redistest

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// startTimeout bounds how long a server may take to say it is ready.
const startTimeout = 30 * time.Second

// ErrNotInstalled means a Redis program (redis-server, redis-cli,
// redis-benchmark) is not on PATH. The errors of Launch wrap it and name
// the program, so callers can tell a machine without Redis from a server
// that failed to start.
var ErrNotInstalled = errors.New("not found on PATH")

// Server is a redis-server process started by Launch or Start.
type Server struct {
	// Addr is host:port of the server.
	Addr string
	// Dir is the server's working directory (AOF and RDB files); Stop
	// removes it.
	Dir string

	bin  string
	port int
	args []string
	// conf is a config file given before the arguments ("" for none), and
	// ready the log line that says the server is ready: a Sentinel logs
	// its monitor, not "Ready to accept connections".
	conf, ready string

	mu    sync.Mutex
	cmd   *exec.Cmd
	done  chan struct{} // closed when the process has exited
	lines []string
	waits []logWait
}

type logWait struct {
	substr string
	ch     chan struct{}
}

// lookTool finds a Redis program on PATH, or returns an error wrapping
// ErrNotInstalled that says how to install it.
func lookTool(name string) (string, error) {
	bin, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("redistest: %s %w (install the Debian packages redis-server and redis-tools, or run make deps): %v",
			name, ErrNotInstalled, err)
	}
	return bin, nil
}

// stopTest ends t for err: a missing program skips it with the reason,
// except under CI=true, where the program must be installed and any error
// fails the test.
func stopTest(t testing.TB, err error) {
	t.Helper()
	if errors.Is(err, ErrNotInstalled) && os.Getenv("CI") != "true" {
		t.Skip(err.Error())
	} else {
		t.Fatal(err)
	}
}

// Binary returns the path of redis-server, or fails or skips t as the
// package doc says.
func Binary(t testing.TB) string {
	t.Helper()
	return Tool(t, "redis-server")
}

// Tool returns the path of a redis-tools program (redis-benchmark,
// redis-cli), failing or skipping t like Binary.
func Tool(t testing.TB, name string) string {
	t.Helper()
	bin, err := lookTool(name)
	if err != nil {
		stopTest(t, err)
	}
	return bin
}

// Launch runs a redis-server with the extra config arguments (as on its
// command line: "--appendonly", "yes") in a new temporary directory and
// returns once the server is ready. The caller must call Stop. The error
// wraps ErrNotInstalled when redis-server is not on PATH; otherwise it
// carries the server's log.
func Launch(args ...string) (*Server, error) {
	bin, err := lookTool("redis-server")
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "redistest-")
	if err != nil {
		return nil, fmt.Errorf("redistest: %w", err)
	}
	return launchIn(&Server{bin: bin, Dir: dir, args: args})
}

// launchIn starts s, whose bin, Dir and args are set, on a free port; on
// failure it removes s.Dir.
func launchIn(s *Server) (*Server, error) {
	var err error
	for range 5 { // another process may take the free port first
		if s.port, err = freePort(); err != nil {
			err = fmt.Errorf("free port: %w", err)
			break
		}
		if err = s.start(); err == nil {
			break
		}
	}
	if err != nil {
		_ = os.RemoveAll(s.Dir)
		return nil, fmt.Errorf("redistest: %w", err)
	}
	s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
	return s, nil
}

// Start is Launch for a test: it fails or skips t as the package doc says
// when the server cannot start, and stops the server when t ends.
func Start(t testing.TB, args ...string) *Server {
	t.Helper()
	s, err := Launch(args...)
	if err != nil {
		stopTest(t, err)
		return nil // only reached with a testing.TB whose Skip/Fatal return
	}
	t.Cleanup(s.Stop)
	return s
}

// Stop kills the server like Kill and removes its directory, after which
// it cannot be restarted. Stopping a stopped server does nothing.
func (s *Server) Stop() {
	s.Kill()
	_ = os.RemoveAll(s.Dir)
}

// Restart starts the server again on the same port and directory, after
// Kill (not Stop, which removes the directory). Its AOF, if enabled, is
// replayed.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	if err := s.start(); err != nil {
		t.Fatalf("redistest: restart: %v", err)
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) start() error {
	var argv []string
	if s.conf != "" {
		argv = append(argv, s.conf)
	}
	argv = append(append(argv,
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--dir", s.Dir,
		"--save", "",
		"--daemonize", "no",
		"--logfile", "",
		"--protected-mode", "yes"),
		s.args...)
	cmd := exec.Command(s.bin, argv...)
	cmd.Dir = s.Dir
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = cmd.Stdout
	ready := make(chan struct{})
	readyLine := s.ready
	if readyLine == "" {
		readyLine = "Ready to accept connections"
	}
	s.mu.Lock()
	s.lines = nil
	s.waits = []logWait{{substr: readyLine, ch: ready}}
	s.mu.Unlock()
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			s.logLine(sc.Text())
		}
		_ = cmd.Wait()
		close(done)
	}()
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()
	select {
	case <-ready:
		return nil
	case <-done:
		return fmt.Errorf("redis-server exited before it was ready:\n%s", s.Log())
	case <-time.After(startTimeout):
		s.Kill()
		return fmt.Errorf("redis-server not ready after %v:\n%s", startTimeout, s.Log())
	}
}

func (s *Server) logLine(line string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lines = append(s.lines, line)
	kept := s.waits[:0]
	for _, w := range s.waits {
		if strings.Contains(line, w.substr) {
			close(w.ch)
		} else {
			kept = append(kept, w)
		}
	}
	s.waits = kept
}

// WaitLog waits until the server logs a line containing substr (already
// logged lines since the last start count), or ctx ends.
func (s *Server) WaitLog(ctx context.Context, substr string) error {
	s.mu.Lock()
	for _, l := range s.lines {
		if strings.Contains(l, substr) {
			s.mu.Unlock()
			return nil
		}
	}
	ch := make(chan struct{})
	s.waits = append(s.waits, logWait{substr: substr, ch: ch})
	done := s.done
	s.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-done:
		return fmt.Errorf("redis-server exited before logging %q", substr)
	case <-ctx.Done():
		return fmt.Errorf("waiting for %q in the redis-server log: %w", substr, ctx.Err())
	}
}

// Log returns what the server has logged since it last started.
func (s *Server) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.lines, "\n")
}

// Kill ends the server with SIGKILL (as a crash would) and waits for it to
// exit. It does nothing when the server is not running.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	<-done
}

// Pause stops the server with SIGSTOP: it keeps its connections but
// answers nothing, as a replica stuck behind a slow disk or a network
// stall would, until Resume. t fails if the server is not running.
func (s *Server) Pause(t testing.TB) { s.signal(t, syscall.SIGSTOP) }

// Resume continues a server stopped by Pause (SIGCONT).
func (s *Server) Resume(t testing.TB) { s.signal(t, syscall.SIGCONT) }

func (s *Server) signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	s.mu.Lock()
	cmd := s.cmd
	s.mu.Unlock()
	if cmd == nil {
		t.Fatalf("redistest: signal %v to a server that is not running", sig)
	}
	if err := cmd.Process.Signal(sig); err != nil {
		t.Fatalf("redistest: signal %v: %v", sig, err)
	}
}

// Client returns a go-redis client of the server, closed when t ends.
// opts may be nil; its Addr is set.
func (s *Server) Client(t testing.TB, opts *redis.Options) *redis.Client {
	return NewClient(t, s.Addr, opts)
}

// NewClient returns a go-redis client of addr, closed when t ends. opts
// may be nil; its Addr is set.
func NewClient(t testing.TB, addr string, opts *redis.Options) *redis.Client {
	t.Helper()
	if opts == nil {
		opts = &redis.Options{}
	}
	o := *opts
	o.Addr = addr
	c := redis.NewClient(&o)
	t.Cleanup(func() { _ = c.Close() })
	return c
}
