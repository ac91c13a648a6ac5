// Package redisstore is the ckptstore contract on Redis: a Store (with
// Pruner and Forker) and an InstanceStore over a go-redis
// redis.UniversalClient — a single server, Sentinel (a failover client) or
// Cluster.
//
// # Invariants
//
// Every write is one Lua script (EVALSHA, falling back to EVAL on
// NOSCRIPT) that runs all of its state checks, in the order of SPEC.md,
// and then all of its writes, atomically; a script that fails a check
// returns before its first write, so a failed call changes nothing. The
// pure checks (ids, entries, keep) run in Go first, with the shared
// validators of package ckptstore, exactly as memstore runs them.
//
//   - A thread's members sorted set holds exactly the ids of the stored
//     checkpoints of that thread, scored by createdAt.
//   - The refs hash maps each blob key to the number of stored checkpoints
//     that use it; a key whose count reaches 0 is removed from it and from
//     the refkeys sorted set, which holds exactly the keys of refs.
//   - A thread's fence f only grows; the current lease's fence is f.
//   - Stored checkpoints are never modified: only created and deleted.
//
// # Keys
//
// All keys of a store begin with the hash tag "{prefix}:" (Options.Prefix,
// '%', '{' and '}' escaped), so they hash to one Redis Cluster slot and
// every script, including those that find checkpoint keys while walking a
// chain, is legal on a cluster; this is why Cluster works, and also why one
// store lives on one shard (use several prefixes to spread tenants). A
// different prefix is a separate tenant on the same server. After the tag
// comes a fixed kind and then the id, so ids may hold any bytes (':', '{',
// NUL) without two keys colliding:
//
//	{p}:c:<checkpoint id>  hash: t thread, p parent, h header, b body, v conversation, k blob keys
//	{p}:t:<thread id>      hash: h head, f highest fence, o lease owner token, x lease expiry (ms)
//	{p}:m:<thread id>      sorted set: checkpoint ids scored by createdAt
//	{p}:refs               hash: blob key → reference count (> 0)
//	{p}:refkeys            sorted set, all scores 0: the keys of refs, in byte order
//	{p}:o:<op token>       a write that succeeded, for Options.OpTTL (a list of the deleted ids for DeleteCheckpoints)
//	{p}:i:<instance key>   hash: an InstanceRecord (see instance.go)
//
// The header and body of a checkpoint are binary strings built from the
// parts of internal/cpcodec, the encoding fdbstore stores too (codec.go);
// the scripts only copy them, never parse them.
//
// # Order
//
// List reads the members sorted set: Redis orders it by score and equal
// scores by the bytes of the member, which is exactly createdAt, then id
// bytes (-0 and 0 are equal scores). The score is the shortest decimal that
// parses back to the same float64, so no two createdAt values collapse;
// createdAt itself is kept as its IEEE-754 bits in the header, so it
// round-trips exactly. BlobReferences pages through refkeys with
// ZRANGEBYLEX (equal scores again sort by bytes), PageSize keys per round
// trip; BlobReferencesSeq streams them.
//
// # Leases and time
//
// Lease times are integer milliseconds from Options.Now, read in Go and
// passed to the scripts; the server's clock is never used. A lease is live
// while now < expiry. Fences are compared as the decimal strings HINCRBY
// keeps, so no fence passes through a Lua double.
//
// # Retries
//
// go-redis resends a command when the connection breaks before the reply
// arrives (the client's redis.Options.MaxRetries), and the script may or
// may not have run.
// Each write carries a random operation token; a script that succeeds sets
// {p}:o:<token> (holding the deleted ids, for DeleteCheckpoints) for OpTTL, and a
// resent script that finds it returns that result without checking or
// writing again. So a resend never counts twice and never reports a false
// error (ErrDuplicateID, ErrConflict, ErrNotHead…) for its own success.
// AcquireWriter needs no key: a resend finds its own owner token in place
// and returns that lease. Renew and Release are idempotent as they are.
// When every resend fails too, the call returns the network error and the
// outcome is unknown; read the head to learn it.
//
// # Durability
//
// A write is acknowledged once the primary has applied it. What survives a
// crash depends on the server's configuration:
//
//   - appendonly yes with appendfsync always: every acknowledged write is on
//     disk before the reply; a kill -9 or a power loss loses nothing
//     acknowledged (the restart test proves the kill -9 case).
//   - appendonly yes with appendfsync everysec (Redis's default fsync): a
//     killed process loses nothing acknowledged, since the AOF is written
//     before the reply, but a power loss or kernel crash may lose about the
//     last second.
//   - no AOF (RDB snapshots only, or none): a crash loses every write since
//     the last snapshot. Not suitable for checkpoints.
//
// A script is written to the AOF and to replicas as one MULTI/EXEC of its
// effects, so a crash never leaves half a write (Redis drops a truncated
// final transaction when it loads the AOF, with aof-load-truncated yes, its
// default). For failover (Sentinel, Cluster), set Options.MinReplicas: each
// write then waits (WAIT) until that many replicas have it, and fails with
// ErrNotReplicated when they don't within ReplicaTimeout.
//
// # Tests and benchmarks
//
// go test ./redisstore/... runs the conformance suite on miniredis and on
// real redis-server processes (a single server, the same server behind a
// proxy that loses replies and cuts requests, and a three-master cluster),
// plus the fault, restart (AOF, kill -9) and replica tests. The real
// servers need redis-server and redis-cli on PATH (Debian: redis-server,
// redis-tools; make deps installs them); without them those tests skip,
// and fail under CI=true. BenchmarkAppend compares Append with
// redis-benchmark running an equivalent script on the same server:
//
//	go test -run '^$' -bench BenchmarkAppend -benchtime 3000x ./redisstore
package redisstore
