// Package redistest runs real redis-server processes for tests, and a TCP
// proxy that loses connections on purpose.
//
// Start finds redis-server on PATH. When it is missing, a test fails under
// CI (CI=true), where the server must have been installed (make deps), and
// is skipped with the reason everywhere else. Each server listens on a free
// 127.0.0.1 port, keeps its files in a temporary directory, saves no RDB
// snapshots unless asked to, and is killed when the test ends.
//
// Readiness is read from the server's own log ("Ready to accept
// connections"), not polled; the log is drained for the server's whole
// life so that it never blocks on a full pipe.
package redistest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// startTimeout bounds how long a server may take to say it is ready.
const startTimeout = 30 * time.Second

// Server is a redis-server process started by Start.
type Server struct {
	// Addr is host:port of the server.
	Addr string
	// Dir is the server's working directory (AOF and RDB files).
	Dir string

	bin  string
	port int
	args []string

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

// Binary returns the path of redis-server, or fails or skips t as the
// package doc says.
func Binary(t testing.TB) string {
	t.Helper()
	return lookTool(t, "redis-server")
}

func lookTool(t testing.TB, name string) string {
	t.Helper()
	bin, err := exec.LookPath(name)
	if err == nil {
		return bin
	}
	msg := fmt.Sprintf("%s not found on PATH (install the Debian packages redis-server and redis-tools, or run make deps): %v", name, err)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// Tool returns the path of a redis-tools program (redis-benchmark,
// redis-cli), failing or skipping t like Binary.
func Tool(t testing.TB, name string) string {
	t.Helper()
	return lookTool(t, name)
}

// Start runs a redis-server with the extra config arguments (as on its
// command line: "--appendonly", "yes") and kills it when t ends.
func Start(t testing.TB, args ...string) *Server {
	t.Helper()
	s := &Server{bin: Binary(t), Dir: t.TempDir(), args: args}
	var err error
	for range 5 { // another process may take the free port first
		s.port, err = freePort()
		if err != nil {
			t.Fatalf("redistest: free port: %v", err)
		}
		if err = s.start(); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
	t.Cleanup(s.Kill)
	return s
}

// Restart starts the server again on the same port and directory, after
// Kill. Its AOF, if enabled, is replayed.
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
	argv := append([]string{
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--dir", s.Dir,
		"--save", "",
		"--daemonize", "no",
		"--logfile", "",
		"--protected-mode", "yes",
	}, s.args...)
	cmd := exec.Command(s.bin, argv...)
	cmd.Dir = s.Dir
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = cmd.Stdout
	ready := make(chan struct{})
	s.mu.Lock()
	s.lines = nil
	s.waits = []logWait{{substr: "Ready to accept connections", ch: ready}}
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
