package redisstore

import (
	"context"
	"fmt"
	"net/url"

	"github.com/redis/go-redis/v9"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/storeurl"
)

// init registers redisstore's schemes with storeurl.
func init() {
	storeurl.Register("redis://[user:password@]host:port[/db][?prefix=P&<go-redis options>] | rediss://… | unix:///path/to/socket[?db=N&prefix=P]",
		openURL, "redis", "rediss", "unix")
}

// openURL opens redisstore on the server of a go-redis URL. The query
// parameter prefix (not a go-redis option) sets redisstore's key prefix;
// the rest of the URL goes to redis.ParseURL, which refuses options it does
// not know. The server is pinged, so an unreachable one fails here rather
// than in every request.
func openURL(ctx context.Context, spec string, opts storeurl.Options) (*storeurl.Opened, error) {
	u, err := url.Parse(spec)
	if err != nil {
		return nil, storeurl.BadURL("%v", err)
	}
	q := u.Query()
	prefix := q.Get("prefix")
	q.Del("prefix")
	u.RawQuery = q.Encode()
	ropts, err := redis.ParseURL(u.String())
	if err != nil {
		return nil, storeurl.BadURL("%s: %v", u.Redacted(), err)
	}
	client := redis.NewClient(ropts)
	st, in, err := openPrefix(client, opts.Lease, prefix)
	if err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("%w: %v", storeurl.ErrBadURL, err)
	}
	if err := client.Ping(ctx).Err(); err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("redis %s: %w", u.Redacted(), err)
	}
	shown := prefix
	if shown == "" {
		shown = DefaultPrefix
	}
	return &storeurl.Opened{
		Store:     st,
		Instances: in,
		Kind:      "redis",
		Desc:      fmt.Sprintf("redis %s (redisstore, prefix %q)", u.Redacted(), shown),
		Close:     client.Close,
		Handle:    redis.UniversalClient(client),
		OpenNamespace: func(name string, lease ckptstore.Options) (ckptstore.Store, ckptstore.InstanceStore, error) {
			return openPrefix(client, lease, storeurl.RedisNamespacePrefix(prefix, name))
		},
	}, nil
}

// openPrefix opens the store and the instance store of one prefix, with
// one Options value for both.
func openPrefix(client redis.UniversalClient, lease ckptstore.Options, prefix string) (*Store, *InstanceStore, error) {
	o := Options{Options: lease, Prefix: prefix}
	st, err := New(client, o)
	if err != nil {
		return nil, nil, err
	}
	in, err := NewInstances(client, o)
	if err != nil {
		return nil, nil, err
	}
	return st, in, nil
}
