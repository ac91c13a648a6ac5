// Package localredis starts a throwaway redis-server for benchmarks and
// tests: on a free 127.0.0.1 port, with no persistence, in a temporary
// directory that Stop removes.
//
// Invariants: the server listens on loopback only; Start returns only once
// the server answers PING (or fails within ten seconds); Stop kills the
// process and waits for it, so no server outlives its caller's Stop.
package localredis

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrNotInstalled means redis-server is not on PATH.
var ErrNotInstalled = errors.New("redis-server not found on PATH (apt-get install redis-server)")

// readyTimeout bounds how long a new server may take to answer PING.
const readyTimeout = 10 * time.Second

// Server is a running redis-server.
type Server struct {
	// Addr is the server's host:port.
	Addr string

	cmd    *exec.Cmd
	exited chan struct{}
	dir    string
}

// Start runs a redis-server, or fails with ErrNotInstalled or the reason
// it could not start.
func Start() (*Server, error) {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, ErrNotInstalled
	}
	dir, err := os.MkdirTemp("", "ckptstore-redis")
	if err != nil {
		return nil, err
	}
	for range 5 { // another process may take the free port before the server does
		var port int
		if port, err = freePort(); err != nil {
			break
		}
		s := &Server{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir, exited: make(chan struct{})}
		s.cmd = exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
			"--save", "", "--appendonly", "no", "--daemonize", "no", "--protected-mode", "yes")
		s.cmd.Dir = dir
		if err = s.cmd.Start(); err != nil {
			break
		}
		go func() { _ = s.cmd.Wait(); close(s.exited) }()
		if s.ready() {
			return s, nil
		}
		s.kill()
		err = fmt.Errorf("redis-server did not answer on %s within %v", s.Addr, readyTimeout)
	}
	_ = os.RemoveAll(dir)
	return nil, err
}

// ready waits for the server to answer PING; false when it exits or the
// time is up.
func (s *Server) ready() bool {
	c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(readyTimeout)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			return true
		}
		select {
		case <-s.exited:
			return false
		case <-time.After(20 * time.Millisecond):
		}
	}
	return false
}

func (s *Server) kill() {
	_ = s.cmd.Process.Kill()
	<-s.exited
}

// Stop kills the server and removes its directory.
func (s *Server) Stop() {
	s.kill()
	_ = os.RemoveAll(s.dir)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
