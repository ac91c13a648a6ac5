package localredis

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func TestStartStop(t *testing.T) {
	s, err := Start()
	if errors.Is(err, ErrNotInstalled) && os.Getenv("CI") != "true" {
		t.Skip(err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	ctx := context.Background()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("the server does not serve: %v", err)
	}
	s.Stop()
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("the server still answers after Stop")
	}
	if _, err := os.Stat(s.dir); !os.IsNotExist(err) {
		t.Errorf("Stop left %s: %v", s.dir, err)
	}
}
