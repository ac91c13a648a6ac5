package redisstore

// The instance store keeps one hash per record, "{prefix}:i:<key>", with
// fields p (provider), s (providerSandboxId), t (threadId), u (updatedAt,
// decimal) and, when present, ls (latestSnapshotId) and lr (latestRunId).
// Every record has u, so a hash without u does not exist. An Upsert
// replaces the hash in one script (DEL, then HSET), so fields left out are
// cleared and no reader sees half a record. Upsert and Delete record an op
// key for Options.OpTTL ("{prefix}:o:n:<token>"), so that a command go-redis
// resends after a lost reply does not write again over a later write.

import (
	"context"
	"crypto/rand"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/ckptstore/ckptstore"
)

// instances is the Redis driver.InstanceStore. It is safe for concurrent
// use.
type instances struct {
	r     runner // the client, and the replicas a write waits for
	base  string // + key: a record
	ops   string // + token: the op key of a write, so that a resend does not write again
	opTTL string
}

// op returns a fresh op key.
func (s *instances) op() key { return key(s.ops + rand.Text()) }

// NewInstances returns the instance store that goes with New(client,
// opts): its keys under opts.Prefix, with the same hash tag and escaping
// as the Store's (the two never share a key), its op keys kept for
// opts.OpTTL, and each Upsert and Delete waiting for opts.MinReplicas
// replicas as a Store's writes do (ErrNotReplicated). It checks opts as
// New does, so one Options value serves both; an error wraps
// driver.ErrInvalidOptions. The lease, page and batch options are
// checked but unused.
func NewInstances(client redis.UniversalClient, opts Options) (*ckptstore.InstanceStore, error) {
	o, r, err := resolveClient(client, opts)
	if err != nil {
		return nil, err
	}
	return ckptstore.NewInstanceStore(newInstanceStore(r, o.Prefix, o.OpTTL)), nil
}

// NewInstanceStore is the shorthand of NewInstances(client,
// Options{Prefix: prefix}): the instance store under prefix ("" means
// DefaultPrefix), with DefaultOpTTL and no waiting for replicas. Every
// prefix is valid, so it has no error to return; use NewInstances to
// share a Store's Options.
func NewInstanceStore(client redis.UniversalClient, prefix string) *ckptstore.InstanceStore {
	return ckptstore.NewInstanceStore(newInstanceStore(runner{c: client}, prefix, DefaultOpTTL))
}

func newInstanceStore(r runner, prefix string, opTTL time.Duration) *instances {
	base := keyBase(prefix)
	return &instances{r: r, base: base + "i:", ops: base + "o:" + string(rune(opInstance)) + ":",
		opTTL: strconv.FormatInt(ceilMillis(opTTL), 10)}
}

// Get implements driver.InstanceStore.
func (s *instances) Get(ctx context.Context, key string) (*ckptstore.InstanceRecord, error) {
	v, err := s.r.c.HMGet(ctx, s.base+key, "p", "s", "t", "u", "ls", "lr").Result()
	if err != nil {
		return nil, fmt.Errorf("redisstore: get instance %q: %w", key, err)
	}
	if v[3] == nil {
		return nil, nil
	}
	str := func(i int) string { s, _ := v[i].(string); return s }
	updated, err := strconv.ParseInt(str(3), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("%w: instance %q has updatedAt %q", ErrCorrupt, key, str(3))
	}
	return &ckptstore.InstanceRecord{Key: key, Provider: str(0), ProviderSandboxID: str(1),
		ThreadID: str(2), UpdatedAt: updated, LatestSnapshotID: str(4), LatestRunID: str(5)}, nil
}

// Upsert implements driver.InstanceStore.
func (s *instances) Upsert(ctx context.Context, rec *ckptstore.InstanceRecord) error {
	_, err := run(ctx, s.r, upsertInstanceScript, upsertInstanceArgs{
		Record: key(s.base + rec.Key), Op: s.op(), TTL: s.opTTL, Provider: rec.Provider, SandboxID: rec.ProviderSandboxID,
		ThreadID: rec.ThreadID, UpdatedAt: strconv.FormatInt(rec.UpdatedAt, 10),
		LatestSnapshot: rec.LatestSnapshotID, LatestRun: rec.LatestRunID}, true)
	if err != nil {
		return fmt.Errorf("redisstore: upsert instance %q: %w", rec.Key, err)
	}
	return nil
}

// Delete implements driver.InstanceStore.
func (s *instances) Delete(ctx context.Context, k string) error {
	_, err := run(ctx, s.r, deleteInstanceScript, deleteInstanceArgs{Record: key(s.base + k), Op: s.op(), TTL: s.opTTL}, true)
	if err != nil {
		return fmt.Errorf("redisstore: delete instance %q: %w", k, err)
	}
	return nil
}
