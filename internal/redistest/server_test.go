package redistest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestLaunchStop(t *testing.T) {
	Binary(t)
	s, err := Launch("--appendonly", "yes")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
	defer c.Close()
	ctx := context.Background()
	if got, err := c.ConfigGet(ctx, "appendonly").Result(); err != nil || got["appendonly"] != "yes" {
		t.Fatalf("Launch's arguments were not passed on: appendonly = %v (%v)", got, err)
	}
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("the server does not serve: %v", err)
	}

	s.Kill()
	s.Restart(t)
	if got, err := c.Get(ctx, "k").Result(); err != nil || got != "v" {
		t.Fatalf("after Kill and Restart: k = %q (%v), want the AOF's v", got, err)
	}

	s.Stop()
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("the server still answers after Stop")
	}
	if _, err := os.Stat(s.Dir); !os.IsNotExist(err) {
		t.Errorf("Stop left %s: %v", s.Dir, err)
	}
	s.Stop() // a second Stop does nothing
}

func TestLaunchBadArgs(t *testing.T) {
	Binary(t)
	s, err := Launch("--no-such-directive", "x")
	if err == nil {
		s.Stop()
		t.Fatal("Launch started a server that rejects its arguments")
	}
	if errors.Is(err, ErrNotInstalled) || !strings.Contains(err.Error(), "no-such-directive") {
		t.Errorf("the error does not carry the server's log: %v", err)
	}
}

func TestLaunchNotInstalled(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	s, err := Launch()
	if !errors.Is(err, ErrNotInstalled) {
		if s != nil {
			s.Stop()
		}
		t.Fatalf("Launch without redis-server on PATH: %v, want ErrNotInstalled", err)
	}
	if !strings.Contains(err.Error(), "redis-server") {
		t.Errorf("the error does not name the program: %v", err)
	}
}

// recorder is a testing.TB that records Skip and Fatal instead of ending
// the goroutine; any other method panics on the nil embedded TB.
type recorder struct {
	testing.TB
	skipped, failed string
}

func (r *recorder) Helper()           {}
func (r *recorder) Skip(args ...any)  { r.skipped = fmt.Sprint(args...) }
func (r *recorder) Fatal(args ...any) { r.failed = fmt.Sprint(args...) }

// TestMissingProgramPolicy: a missing program skips a test with the reason,
// but fails it under CI=true, where make deps must have installed it.
func TestMissingProgramPolicy(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	for _, tc := range []struct {
		ci       string
		wantSkip bool
	}{{"", true}, {"false", true}, {"true", false}} {
		t.Setenv("CI", tc.ci)
		r := &recorder{}
		if bin := Tool(r, "redis-cli"); bin != "" {
			t.Fatalf("CI=%q: Tool returned %q without redis-cli on PATH", tc.ci, bin)
		}
		if s := Start(r); s != nil {
			t.Fatalf("CI=%q: Start returned a server without redis-server on PATH", tc.ci)
		}
		got := r.skipped
		if !tc.wantSkip {
			got = r.failed
		}
		if !strings.Contains(got, "redis-server") || !strings.Contains(got, "make deps") {
			t.Errorf("CI=%q: skipped %q, failed %q; want the reason in the %s", tc.ci, r.skipped, r.failed,
				map[bool]string{true: "skip", false: "failure"}[tc.wantSkip])
		}
		if (r.skipped != "") == (r.failed != "") {
			t.Errorf("CI=%q: skipped %q and failed %q; want exactly one", tc.ci, r.skipped, r.failed)
		}
	}
}
