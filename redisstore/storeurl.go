package redisstore

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/extra/redisotel/v9"
	"github.com/redis/go-redis/v9"

	"github.com/ckptstore/ckptstore"
	pdriver "github.com/ckptstore/ckptstore/persist/driver"
	"github.com/ckptstore/ckptstore/storeurl"
)

// init registers redisstore's schemes with storeurl (see openURL).
func init() {
	const ours = "prefix=P&min_replicas=N&replica_timeout=D&"
	storeurl.Register("redis://[user:password@]host:port[/db][?"+ours+"<go-redis options>] | rediss://… | unix:///path/to/socket[?db=N&"+ours+"…]",
		openURL, "redis", "rediss", "unix")
	storeurl.Register("redis+sentinel://[user:password@]host:port[,host:port…][/db]?master_name=NAME[&addr=host:port&password=P&"+ours+"<go-redis failover options>] | rediss+sentinel://…",
		openURL, "redis+sentinel", "rediss+sentinel")
	storeurl.Register("redis+cluster://[user:password@]host:port[,host:port…][?addr=host:port&"+ours+"<go-redis cluster options>] | rediss+cluster://…",
		openURL, "redis+cluster", "rediss+cluster")
}

// openURL opens redisstore from a storeurl URL, in one of three topologies:
//
//   - redis://, rediss://, unix://: one server (a primary, with or without
//     replicas), through redis.ParseURL and redis.NewClient.
//   - redis+sentinel://, rediss+sentinel://: the primary that a Sentinel
//     group names, through redis.ParseFailoverURL and
//     redis.NewFailoverClient, which follows a failover to the promoted
//     replica. The hosts are Sentinels (the first in the authority, more
//     after commas or as addr=); master_name is required. The URL's
//     user:password are the Sentinels' credentials, username= and
//     password= the data nodes', as go-redis reads them.
//   - redis+cluster://, rediss+cluster://: a Redis Cluster, through
//     redis.ParseClusterURL and redis.NewClusterClient; the hosts are seed
//     nodes (after commas or as addr=). A cluster has no database number,
//     so a path is refused.
//
// Three query parameters are ours, not go-redis's, on every form: prefix
// (the key prefix, DefaultPrefix when absent), min_replicas (a whole
// number, Options.MinReplicas) and replica_timeout (a Go duration,
// Options.ReplicaTimeout). The rest goes to go-redis, which refuses a
// parameter it does not know. Every refusal wraps storeurl.ErrBadURL and
// names the parameter. The server is pinged, so an unreachable one fails
// here rather than in every request.
func openURL(ctx context.Context, spec string, opts storeurl.Options) (*storeurl.Opened, error) {
	var more []string // the hosts after the first of a Sentinel or Cluster URL
	if scheme, _, _ := strings.Cut(spec, ":"); strings.HasSuffix(scheme, "+sentinel") || strings.HasSuffix(scheme, "+cluster") {
		spec, more = splitHosts(spec)
	}
	u, err := url.Parse(spec)
	if err != nil {
		return nil, storeurl.BadURL("%v", err)
	}
	shownURL := u.Redacted()
	if len(more) > 0 {
		shownURL += " (and " + strings.Join(more, ",") + ")"
	}
	ro, err := ourParams(u)
	if err != nil {
		return nil, storeurl.BadURL("%s: %v", shownURL, err)
	}
	base, topology, _ := strings.Cut(u.Scheme, "+")
	var client redis.UniversalClient
	switch topology {
	case "":
		o, err := redis.ParseURL(u.String())
		if err != nil {
			return nil, storeurl.BadURL("%s: %v", shownURL, err)
		}
		client = redis.NewClient(o)
	case "sentinel":
		toGoRedis(u, base, more)
		o, err := redis.ParseFailoverURL(u.String())
		if err != nil {
			return nil, storeurl.BadURL("%s: %v", shownURL, err)
		}
		if o.MasterName == "" {
			return nil, storeurl.BadURL("%s: master_name is required: the name the Sentinels know the primary by", shownURL)
		}
		client = redis.NewFailoverClient(o)
	case "cluster":
		if u.Path != "" && u.Path != "/" {
			return nil, storeurl.BadURL("%s: the path %q: a Redis Cluster has no database number", shownURL, u.Path)
		}
		toGoRedis(u, base, more)
		o, err := redis.ParseClusterURL(u.String())
		if err != nil {
			return nil, storeurl.BadURL("%s: %v", shownURL, err)
		}
		client = redis.NewClusterClient(o)
	default:
		return nil, storeurl.BadURL("%s: unknown Redis topology %q", shownURL, topology)
	}
	if opts.TracerProvider != nil {
		// go-redis's own spans, one per command and pipeline, beneath the
		// store call that sent them; without the statements, which hold
		// whole checkpoints (tenants' data, megabytes per span).
		if err := redisotel.InstrumentTracing(client, redisotel.WithTracerProvider(opts.TracerProvider),
			redisotel.WithDBStatement(false), redisotel.WithCallerEnabled(false)); err != nil {
			_ = client.Close()
			return nil, fmt.Errorf("redis %s: tracing: %w", shownURL, err)
		}
	}
	st, in, err := openPrefix(client, opts.Lease, ro)
	if err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("%w: %s: %v", storeurl.ErrBadURL, shownURL, err)
	}
	if err := client.Ping(ctx).Err(); err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("redis %s: %w", shownURL, err)
	}
	shown := ro.Prefix
	if shown == "" {
		shown = DefaultPrefix
	}
	desc := fmt.Sprintf("redis %s (redisstore, prefix %q", shownURL, shown)
	if ro.MinReplicas > 0 {
		wait := ro.ReplicaTimeout
		if wait == 0 {
			wait = DefaultReplicaTimeout
		}
		desc += fmt.Sprintf(", writes wait for %d replicas up to %v", ro.MinReplicas, wait)
	}
	// The persistence drivers share the client and the hash tag of their
	// key space's checkpoints ({prefix}:p:…); one per key space, so that
	// one lock subscription serves it. Each judges its leases by its
	// tenant's lease clock: nil, the server's TIME.
	var persist storeurl.DriverCache
	sdrivers := newStreamsCache(client, ro.Prefix)
	persistOf := func(name string, now func() time.Time) (pdriver.Driver, error) {
		return persist.Get(name, func() (pdriver.Driver, error) {
			prefix := ro.Prefix
			if name != "" {
				prefix = NamespacePrefix(ro.Prefix, name)
			}
			return NewPersistence(PersistenceOptions{Client: client, Prefix: prefix, Now: now})
		})
	}
	own, err := persistOf("", opts.Lease.Now)
	if err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("redis %s: %w", shownURL, err)
	}
	return &storeurl.Opened{
		Tenant: storeurl.Tenant{Store: st, Instances: in, Persistence: own},
		Kind:   "redis",
		Desc:   desc + ")",
		Close: func() error {
			err := errors.Join(persist.Close(), sdrivers.close())
			return errors.Join(err, client.Close())
		},
		Handle: client,
		OpenTenant: func(name string, lease ckptstore.Options) (*storeurl.Tenant, error) {
			o := ro
			o.Prefix = NamespacePrefix(ro.Prefix, name)
			st, in, err := openPrefix(client, lease, o)
			if err != nil {
				return nil, err
			}
			p, err := persistOf(name, lease.Now)
			if err != nil {
				return nil, err
			}
			sd, err := sdrivers.get(name)
			if err != nil {
				return nil, err
			}
			return &storeurl.Tenant{Store: st, Instances: in, Persistence: p, Streams: sd}, nil
		},
	}, nil
}

// ourParams takes the query parameters that are redisstore's (prefix,
// min_replicas, replica_timeout) out of u and returns them as Options
// (without the lease options).
func ourParams(u *url.URL) (Options, error) {
	q := u.Query()
	var o Options
	for _, name := range []string{"prefix", "min_replicas", "replica_timeout"} {
		if len(q[name]) > 1 {
			return o, fmt.Errorf("%s is given %d times", name, len(q[name]))
		}
	}
	o.Prefix = q.Get("prefix")
	if v := q.Get("min_replicas"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return o, fmt.Errorf("min_replicas=%q: want a whole number of replicas, 0 or more", v)
		}
		o.MinReplicas = n
	}
	if v := q.Get("replica_timeout"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return o, fmt.Errorf("replica_timeout=%q: want a positive Go duration (500ms, 2s)", v)
		}
		o.ReplicaTimeout = d
	}
	q.Del("prefix")
	q.Del("min_replicas")
	q.Del("replica_timeout")
	u.RawQuery = q.Encode()
	return o, nil
}

// splitHosts cuts the hosts after the first one out of the authority of
// spec (host:port[,host:port…], each host maybe an [IPv6] literal, which
// url.Parse cannot read in a list) and returns spec with the first host
// only, and the others.
func splitHosts(spec string) (string, []string) {
	scheme, rest, ok := strings.Cut(spec, "://")
	if !ok {
		return spec, nil
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	auth, tail := rest[:end], rest[end:]
	user := ""
	if i := strings.LastIndex(auth, "@"); i >= 0 {
		user, auth = auth[:i+1], auth[i+1:]
	}
	hosts := strings.Split(auth, ",")
	return scheme + "://" + user + hosts[0] + tail, hosts[1:]
}

// toGoRedis rewrites a URL of our Sentinel or Cluster form for go-redis's
// parsers: the scheme becomes base (redis or rediss), and the further
// hosts become addr= parameters, which both parsers read as more
// addresses (and check).
func toGoRedis(u *url.URL, base string, more []string) {
	u.Scheme = base
	if len(more) > 0 {
		q := u.Query()
		for _, h := range more {
			q.Add("addr", h)
		}
		u.RawQuery = q.Encode()
	}
}

// openPrefix opens the store and the instance store of o.Prefix, with the
// lease options lease and the rest of o for both.
func openPrefix(client redis.UniversalClient, lease ckptstore.Options, o Options) (*ckptstore.Store, *ckptstore.InstanceStore, error) {
	o.Options = lease
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
