package workload

import (
	"context"
	"fmt"
	"net/url"

	"github.com/redis/go-redis/v9"

	"github.com/ckptstore/ckptstore/redisstore"
)

// openRedis opens redisstore on the server of a go-redis URL. The query
// parameter prefix (not a go-redis option) sets redisstore's key prefix;
// the rest of the URL goes to redis.ParseURL. The server is pinged, so an
// unreachable one fails here rather than in every worker.
func openRedis(ctx context.Context, spec string, cfg StoreConfig) (*Opened, error) {
	u, err := url.Parse(spec)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadSpec, err)
	}
	q := u.Query()
	prefix := q.Get("prefix")
	q.Del("prefix")
	u.RawQuery = q.Encode()
	opts, err := redis.ParseURL(u.String())
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadSpec, err)
	}
	client := redis.NewClient(opts)
	st, err := redisstore.New(client, redisstore.Options{Options: cfg.Lease, Prefix: prefix})
	if err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("%w: %v", ErrBadSpec, err)
	}
	if err := client.Ping(ctx).Err(); err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("redis %s: %w", u.Redacted(), err)
	}
	if prefix == "" {
		prefix = redisstore.DefaultPrefix
	}
	return &Opened{
		Store: st,
		Kind:  "redis",
		Desc:  fmt.Sprintf("redis %s (redisstore, prefix %q)", u.Redacted(), prefix),
		Close: client.Close,
	}, nil
}
