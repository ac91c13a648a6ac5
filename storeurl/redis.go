package storeurl

import (
	"context"
	"fmt"
	"net/url"

	"github.com/redis/go-redis/v9"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/redisstore"
)

// openRedis opens redisstore on the server of a go-redis URL. The query
// parameter prefix (not a go-redis option) sets redisstore's key prefix;
// the rest of the URL goes to redis.ParseURL, which refuses options it does
// not know. The server is pinged, so an unreachable one fails here rather
// than in every request.
func openRedis(ctx context.Context, spec string, opts Options) (*Opened, error) {
	u, err := url.Parse(spec)
	if err != nil {
		return nil, badURL("%v", err)
	}
	q := u.Query()
	prefix := q.Get("prefix")
	q.Del("prefix")
	u.RawQuery = q.Encode()
	ropts, err := redis.ParseURL(u.String())
	if err != nil {
		return nil, badURL("%s: %v", u.Redacted(), err)
	}
	client := redis.NewClient(ropts)
	st, in, err := openRedisPrefix(client, opts.Lease, prefix)
	if err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("%w: %v", ErrBadURL, err)
	}
	if err := client.Ping(ctx).Err(); err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("redis %s: %w", u.Redacted(), err)
	}
	shown := prefix
	if shown == "" {
		shown = redisstore.DefaultPrefix
	}
	return &Opened{
		Store:     st,
		Instances: in,
		Kind:      "redis",
		Desc:      fmt.Sprintf("redis %s (redisstore, prefix %q)", u.Redacted(), shown),
		Close:     client.Close,
		Redis:     client,
		namespace: func(name string, lease ckptstore.Options) (ckptstore.Store, *ckptstore.PortableInstances, error) {
			return openRedisPrefix(client, lease, RedisNamespacePrefix(prefix, name))
		},
	}, nil
}

// openRedisPrefix opens the store and the instance store of one prefix,
// with one Options value for both.
func openRedisPrefix(client redis.UniversalClient, lease ckptstore.Options, prefix string) (*ckptstore.Portable, *ckptstore.PortableInstances, error) {
	o := redisstore.Options{Options: lease, Prefix: prefix}
	st, err := redisstore.New(client, o)
	if err != nil {
		return nil, nil, err
	}
	in, err := redisstore.NewInstances(client, o)
	if err != nil {
		return nil, nil, err
	}
	return st, in, nil
}
