package redistest

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Group is a primary with replicas under a group of Sentinels (each a
// redis-server --sentinel), started by StartGroup: the topology of a small
// deployment that survives the loss of its primary.
type Group struct {
	// MasterName is the name the Sentinels monitor the primary by.
	MasterName string
	// Primary is the server that was primary at the start; a failover
	// makes one of Replicas primary instead.
	Primary   *Server
	Replicas  []*Server
	Sentinels []*Server
}

// GroupOptions shape StartGroup's group.
type GroupOptions struct {
	Replicas, Sentinels int
	// Quorum is how many Sentinels must agree that the primary is down.
	Quorum int
	// DownAfter is how long the primary must not answer before a
	// Sentinel thinks it down (down-after-milliseconds).
	DownAfter time.Duration
}

// StartGroup starts a primary, o.Replicas replicas of it (each after its
// first full sync), and o.Sentinels Sentinels monitoring it as "primary".
// It returns once every Sentinel knows every replica and every other
// Sentinel, so that a failover can start at once. The servers are killed
// when t ends.
func StartGroup(t testing.TB, o GroupOptions) *Group {
	t.Helper()
	// No diskless-sync delay: a replica syncs at once, not after 5 s.
	g := &Group{MasterName: "primary", Primary: Start(t, "--repl-diskless-sync-delay", "0")}
	host, port, _ := net.SplitHostPort(g.Primary.Addr)
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	for range o.Replicas {
		r := Start(t, "--replicaof", host, port)
		if err := r.WaitLog(ctx, "MASTER <-> REPLICA sync: Finished with success"); err != nil {
			t.Fatalf("redistest: replica: %v\n%s", err, r.Log())
		}
		g.Replicas = append(g.Replicas, r)
	}
	conf := fmt.Sprintf("sentinel monitor %s %s %s %d\nsentinel down-after-milliseconds %s %d\nsentinel failover-timeout %s 10000\nsentinel parallel-syncs %s 2\n",
		g.MasterName, host, port, o.Quorum, g.MasterName, o.DownAfter.Milliseconds(), g.MasterName, g.MasterName)
	for range o.Sentinels {
		s := startSentinel(t, conf)
		g.Sentinels = append(g.Sentinels, s)
	}
	for _, s := range g.Sentinels {
		c := redis.NewSentinelClient(&redis.Options{Addr: s.Addr})
		for {
			m, err := c.Master(ctx, g.MasterName).Result()
			if err == nil && m["num-slaves"] == strconv.Itoa(o.Replicas) && m["num-other-sentinels"] == strconv.Itoa(o.Sentinels-1) {
				break
			}
			select {
			case <-ctx.Done():
				_ = c.Close()
				t.Fatalf("redistest: Sentinel %s does not know the group after %v: %v %v\n%s", s.Addr, startTimeout, m, err, s.Log())
			case <-time.After(50 * time.Millisecond):
			}
		}
		_ = c.Close()
	}
	return g
}

// startSentinel starts a redis-server --sentinel with the config conf,
// written to a file of its own directory (a Sentinel rewrites its file).
func startSentinel(t testing.TB, conf string) *Server {
	t.Helper()
	bin := Binary(t)
	dir, err := os.MkdirTemp("", "redistest-sentinel-")
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	file := filepath.Join(dir, "sentinel.conf")
	if err := os.WriteFile(file, []byte(conf), 0o600); err != nil {
		t.Fatalf("redistest: %v", err)
	}
	s, err := launchIn(&Server{bin: bin, Dir: dir, conf: file, args: []string{"--sentinel"}, ready: "+monitor master"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// URL is the redis+sentinel:// URL of g: every Sentinel, the master name,
// then query (maybe "", else parameters without the leading & or ?).
func (g *Group) URL(query string) string {
	addrs := make([]string, len(g.Sentinels))
	for i, s := range g.Sentinels {
		addrs[i] = s.Addr
	}
	u := "redis+sentinel://" + strings.Join(addrs, ",") + "/0?master_name=" + url.QueryEscape(g.MasterName)
	if query != "" {
		u += "&" + query
	}
	return u
}

// Master returns the address that the first Sentinel to answer names as
// the primary.
func (g *Group) Master(ctx context.Context) (string, error) {
	var last error
	for _, s := range g.Sentinels {
		c := redis.NewSentinelClient(&redis.Options{Addr: s.Addr, MaxRetries: -1})
		hp, err := c.GetMasterAddrByName(ctx, g.MasterName).Result()
		_ = c.Close()
		if err == nil && len(hp) == 2 {
			return net.JoinHostPort(hp[0], hp[1]), nil
		}
		last = err
	}
	return "", fmt.Errorf("redistest: no Sentinel names a primary: %v", last)
}
