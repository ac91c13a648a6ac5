package redistest

import (
	"context"
	"os/exec"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"
)

// Cluster is a Redis Cluster of masters without replicas, started by
// StartCluster.
type Cluster struct {
	Nodes []*Server
	Addrs []string
}

// StartCluster starts n ≥ 3 cluster-enabled servers, joins them with
// redis-cli --cluster create (slots spread evenly) and waits until every
// node logs that the cluster state is ok. The servers are killed when t
// ends.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	cli := Tool(t, "redis-cli")
	c := &Cluster{}
	for range n {
		bus, err := freePort() // the cluster bus port, given explicitly so it is free too
		if err != nil {
			t.Fatalf("redistest: free port: %v", err)
		}
		s := Start(t, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-port", strconv.Itoa(bus), "--cluster-node-timeout", "5000")
		c.Nodes = append(c.Nodes, s)
		c.Addrs = append(c.Addrs, s.Addr)
	}
	args := append([]string{"--cluster", "create"}, c.Addrs...)
	args = append(args, "--cluster-yes")
	if out, err := exec.Command(cli, args...).CombinedOutput(); err != nil {
		t.Fatalf("redistest: redis-cli --cluster create: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	for _, s := range c.Nodes {
		if err := s.WaitLog(ctx, "Cluster state changed: ok"); err != nil {
			t.Fatalf("redistest: %v\n%s", err, s.Log())
		}
	}
	return c
}

// Client returns a cluster client of c, closed when t ends.
func (c *Cluster) Client(t testing.TB) *redis.ClusterClient {
	t.Helper()
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs})
	t.Cleanup(func() { _ = cc.Close() })
	return cc
}
