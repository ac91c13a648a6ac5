// Package redisstore is the Redis engine: the ckptstore contract (a
// driver.Store; New returns the portable store over it), an instance store
// and the persistence contract (Persistence, a persist/driver.Driver) over
// a go-redis redis.UniversalClient — a single server, Sentinel (a failover
// client) or Cluster. The rules are docs/contract.md's and
// docs/persistence.md's.
//
// # Invariants
//
// Every write is one Lua script (EVALSHA, falling back to EVAL on
// NOSCRIPT) that runs all of its state checks, in the order of
// docs/contract.md, and then all of its writes, atomically; a script that
// fails a check returns before its first write, so a failed call changes
// nothing. The pure checks (ids, entries, keep, limits, cursors, the
// writer's thread) run in Go first, in the portable store
// (ckptstore.Store), as for every driver. Three calls span a whole thread and are one script per batch of
// Options.BatchSize checkpoints instead, so that no script holds the
// server (which runs one at a time) for longer than a batch: List (see
// Order), a long DeleteCheckpoints and DeleteThread (see Batches).
//
//   - A thread's list index holds exactly one member per stored
//     checkpoint of that thread: its position and id (see Order), also
//     kept in the checkpoint's l field.
//   - The refs hash maps each blob key to the number of stored checkpoints
//     that use it; a key whose count reaches 0 is removed from it and from
//     the refkeys sorted set, which holds exactly the keys of refs.
//   - The threads sorted set holds exactly the ids of the threads that
//     have a head, a checkpoint or a transcript; every script that adds or
//     removes one of them updates it.
//   - A thread's fence f only grows; the current lease's fence is f.
//   - Stored checkpoints are never modified: only created and deleted.
//
// Driver.Check, the engine's one checker, reads the whole keyspace,
// persistence keys included, and reports every broken invariant;
// the package's own tests run it after every conformance, fault and
// cluster run.
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
//	{p}:c:<checkpoint id>  hash: t thread, p parent, h header, b body, v conversation, k blob keys, l list member
//	{p}:t:<thread id>      hash: h head, f highest fence, o lease owner token, x lease expiry (ms)
//	{p}:l:<thread id>      sorted set, all scores 0: the list member of each checkpoint of the thread
//	{p}:v:<thread id>      string: the thread's transcript, byte for byte
//	{p}:threads            sorted set, all scores 0: ids of the threads with a head, a checkpoint or a transcript
//	{p}:refs               hash: blob key → reference count (> 0)
//	{p}:refkeys            sorted set, all scores 0: the keys of refs, in byte order
//	{p}:o:<kind>:<token>   a write that succeeded, for Options.OpTTL (see Retries); upper-case kinds are Persistence's
//	{p}:i:<instance key>   hash: an InstanceRecord (see instance.go)
//	{p}:p:…                the persistence state (Persistence; docs/persistence.md lists its keys)
//
// The header and body of a checkpoint are binary strings built from the
// parts of internal/cpcodec, the encoding fdbstore stores too (codec.go);
// the scripts only copy or compare them, never parse them.
//
// This layout replaced one whose thread index was a sorted set scored by
// createdAt ("{p}:m:<thread>"), without list members, transcripts or a
// thread index. This version reads a keyspace of that layout as empty
// threads (Check reports it): run Store.Upgrade once, with the writers
// stopped, to move it.
//
// # Order
//
// A list member is the 8-byte position of createdAt followed by the id:
// the float's bits made to sort as unsigned big-endian integers, with -0
// taken as 0 (see orderMember). Members of equal score sort by their bytes,
// so the list index sorts exactly as List does, createdAt and then id
// bytes, and no float score is ever compared (a score keeps every float64,
// but a position (createdAt, id) is not a score range: ties need the id).
// createdAt itself is kept as its IEEE-754 bits in the header, so it
// round-trips exactly.
//
// ListPage is one script with one ZRANGEBYLEX (ZREVRANGEBYLEX in
// reverse) of Limit+1 members, starting at the exclusive bound "(" +
// member of the cursor's position, and an HMGET per checkpoint: a cursor
// names a position, so a page starts exactly after it whether or not the
// checkpoint it came from is still stored. Threads is one ZRANGEBYLEX of
// the threads set. ListBlobReferences pages through refkeys the same way,
// PageSize keys per round trip; BlobReferencesSeq streams them.
//
// List reads BatchSize checkpoints per script, page after page by
// position as ListPage does. A thread of at most BatchSize checkpoints is
// read in one atomic step. For a longer one, List promises what a paged
// read can: every checkpoint that stays in the thread for the whole call is
// returned exactly once, all in List order; one appended or deleted during
// the call may or may not be returned. Under the contract's single writer
// per thread, a List that no commit of its thread overlaps is exact.
//
// # Batches
//
// DeleteThread deletes the BatchSize oldest checkpoints (in List order)
// per script, each script checking the lease; the script that leaves the
// list empty also removes the head and the transcript. DeleteCheckpoints
// walks the chain from the head: a chain that fits in one batch is walked
// and pruned in one atomic script; a longer one is walked BatchSize
// checkpoints per script (each checking the lease, writing nothing), then
// deleted BatchSize per script from the end farthest from the head, so
// what is left is always a chain from the head. Either call, stopped by an
// error midway, leaves a state that is a smaller delete of the same
// thread, and finishes when called again. Import is one script per batch,
// whatever its size: the caller sizes its batches.
//
// # Leases and time
//
// Every lease is judged by one clock: the server's TIME, in integer
// milliseconds, read inside each script that takes, renews or checks a
// lease (AcquireWriter, Renew, and every write that checks its writer),
// so that servers behind a balancer, whatever their own clocks, agree on
// whether a lease has expired. Options.Now, when set, is a test clock that
// replaces TIME: its reading is passed to the scripts. A lease is live
// while now < expiry. Release needs no clock. The persistence locks
// (Persistence) use the same rule, so writer leases and lock leases are
// judged alike. Fences are compared as the decimal strings HINCRBY keeps,
// so no fence passes through a Lua double.
//
// A Lease's ExpiresAt is therefore the server's time, not the caller's:
// compare it only with other times from the same store. RenewAfter is a
// duration, to be measured on the holder's own clock from when it got
// the lease or its last renewal; that stays right whatever the skew
// between the two clocks, and it is what a holder should schedule by.
//
// # Retries
//
// go-redis resends a command when the connection breaks before the reply
// arrives (the client's redis.Options.MaxRetries), and the script may or
// may not have run. Each write carries an operation token: the caller's
// (ckptstore.WithOpToken) for Append, DeleteHead, ForkFromCheckpoint and
// AcquireWriter when the context carries one, else a random one (and a
// random one per batch for the batched writes and Import). A script that
// succeeds sets {p}:o:<kind>:<token> for OpTTL, holding its result (the
// deleted ids of a prune batch, the count of a DeleteThread batch or an
// Import, the lease of an AcquireWriter), and a resent or repeated script
// that finds it returns that result without checking or writing again. So
// a resend never counts twice and never reports a false error
// (ErrDuplicateID, ErrConflict, ErrNotHead…) for its own success, and a
// caller's repeated call reports the first one's success. AcquireWriter
// with a caller's token uses it as the owner token; its repeat returns the
// lease the first call took, even once that lease has ended. The kind in
// the key keeps one write's token from answering another kind of write.
// Renew records its op key too: a resent renewal that arrives after the
// renewed lease expired and was taken over reports the renewal it made,
// not ErrWriterLost. Release and SaveThread are idempotent as they are. When every
// resend fails too, the call returns the network error and the outcome is
// unknown; read the head to learn it.
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
// default). For failover (Sentinel, Cluster), set Options.MinReplicas
// (min_replicas=N on a storeurl URL): each write then waits (WAIT) until
// that many replicas have it, and fails with ErrNotReplicated when they
// don't within ReplicaTimeout. docs/scaling.md says what each topology
// promises, with the figures of a primary killed under load.
//
// # Store URLs
//
// The package registers its URL schemes with storeurl (see openURL in
// storeurl.go for the rules): redis://, rediss:// and unix:// open one
// server; redis+sentinel://sentinel:port[,…]?master_name=NAME (and
// rediss+sentinel://) the primary a Sentinel group names, following its
// failovers; redis+cluster://node:port[,…] (and rediss+cluster://) a Redis
// Cluster. Every form takes prefix, min_replicas and replica_timeout
// besides go-redis's own options.
//
// # Tests and benchmarks
//
// go test ./redisstore/... runs the conformance suite on miniredis and on
// real redis-server processes (a single server, the same server behind a
// proxy that loses replies and cuts requests, and a three-master cluster),
// with Check after each store, plus the fault, restart (AOF, kill -9),
// replica, batching and checker tests. TestBigThread reports the longest
// script (from the server's SLOWLOG) of List, ListPage, a prune and
// DeleteThread of a long thread; REDISSTORE_BIG=1 makes it 10,000
// checkpoints. TestLinearizableThroughFaults checks concurrent histories
// through the fault proxy with porcupine (internal/linz); LINZ_RUNS sets
// how many. The real
// servers need redis-server and redis-cli on PATH (Debian: redis-server,
// redis-tools; make deps installs them); without them those tests skip,
// and fail under CI=true. BenchmarkAppend compares Append with
// redis-benchmark running an equivalent script on the same server:
//
//	go test -run '^$' -bench BenchmarkAppend -benchtime 3000x ./redisstore
package redisstore
