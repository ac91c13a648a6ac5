package redisstore

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ckptstore/ckptstore"
	"github.com/ckptstore/ckptstore/driver"
)

// NewInstances takes the Store's Options: the same Prefix puts the records
// where NewInstanceStore(client, Prefix) finds them, OpTTL is the TTL of
// its op keys, and invalid options are an error, not a panic.
func TestNewInstancesTakesStoreOptions(t *testing.T) {
	ctx := context.Background()
	c := miniClient(t)
	in, err := NewInstances(c, Options{Prefix: "p{1}", OpTTL: 3 * time.Minute})
	require.NoError(t, err)
	rec := &ckptstore.InstanceRecord{Key: "k", Provider: "p", ThreadID: "t", UpdatedAt: 5}
	require.NoError(t, in.Upsert(ctx, rec))
	got, err := NewInstanceStore(c, "p{1}").Get(ctx, "k")
	require.NoError(t, err)
	assert.Equal(t, rec, got, "the shorthand with the same prefix reads the record")

	ops, err := c.Keys(ctx, keyBase("p{1}")+"o:*").Result()
	require.NoError(t, err)
	require.Len(t, ops, 1, "one op key for the Upsert")
	ttl, err := c.PTTL(ctx, ops[0]).Result()
	require.NoError(t, err)
	assert.Equal(t, 3*time.Minute, ttl, "op key TTL is Options.OpTTL")

	for name, o := range map[string]Options{
		"negative OpTTL":        {OpTTL: -1},
		"bad lease":             {Options: ckptstore.Options{LeaseDuration: time.Second, RenewAfter: time.Minute}},
		"page above max":        {PageSize: MaxPageSize + 1},
		"replicas on a wrapper": {MinReplicas: 1},
	} {
		client := redis.UniversalClient(c)
		if o.MinReplicas > 0 {
			client = struct{ redis.UniversalClient }{c} // neither *redis.Client nor *redis.ClusterClient
		}
		_, err := NewInstances(client, o)
		assert.ErrorIs(t, err, driver.ErrInvalidOptions, name)
	}
	_, err = NewInstances(nil, Options{})
	assert.ErrorIs(t, err, driver.ErrInvalidOptions, "nil client")
}

// With MinReplicas, an instance write waits for the replicas as a Store's
// does: miniredis answers WAIT with 0, so it fails with ErrNotReplicated
// after it happened on the primary.
func TestNewInstancesWaitsForReplicas(t *testing.T) {
	ctx := context.Background()
	c := miniClient(t)
	in, err := NewInstances(c, Options{MinReplicas: 1})
	require.NoError(t, err)
	rec := &ckptstore.InstanceRecord{Key: "k", UpdatedAt: 1}
	require.ErrorIs(t, in.Upsert(ctx, rec), ErrNotReplicated)
	got, err := in.Get(ctx, "k")
	require.NoError(t, err)
	assert.Equal(t, rec, got, "the primary has the write")
	assert.ErrorIs(t, in.Delete(ctx, "k"), ErrNotReplicated)
}
