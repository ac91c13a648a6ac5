package main

// The redisstore mutants: the Lua of scripts.go (each a string in Go, so a
// mutant is an edit of the script text, kept valid Lua) and the Go around
// it. Ids start with rs-. They are caught by redisstore's own tests
// (conformance on miniredis and on a real redis-server, interleavings,
// resends, Check), run without -race and without its slow fault, cluster,
// replica and restart runs; a mutant that only such a run could catch
// names it in its -run pattern.

const (
	rsScripts = "redisstore/scripts.go"
	rsStore   = "redisstore/store.go"
	rsThread  = "redisstore/thread.go"
	rsCheck   = "redisstore/check.go"
)

// redisTests is the selection every redisstore mutant runs: the package
// less its runs that take seconds each and test the deployment (faults
// through a proxy, a cluster, replicas, a restart), stopping at the first
// failure.
var redisTests = testSel{pkgs: []string{"./redisstore/"}, skip: "TestConformanceThroughFaults|TestCluster|TestMinReplicas|TestRestart|TestLinearizableThroughFaults|TestFaultsKeepCountsAndChains", failfast: true}

// rs is a redisstore mutant. Its tests run first with a -run pattern,
// rsFirst's or the conformance suite on miniredis, and, only if those all
// pass, with the whole selection (testWidening).
func rs(id, file, old, new, desc string) mutant {
	run, ok := rsFirst[id]
	if !ok {
		run = `^TestConformance$/^miniredis$`
	}
	return withTests(redisTests, run, one(id, file, old, new, desc))
}

// rsFirst holds the -run patterns of the mutants that a test outside the
// conformance suite is likely to catch first.
var rsFirst = func() map[string]string {
	m := map[string]string{}
	for _, id := range []string{"rs-append-no-op", "rs-append-no-op-record", "rs-fork-no-op", "rs-import-no-op",
		"rs-save-no-op", "rs-renew-no-op", "rs-acquire-no-op", "rs-acquire-same-token"} {
		m[id] = `^(TestConformance|TestResent|TestRenewResent|TestLastWrite|TestAcquireWriterOpToken)`
	}
	for _, id := range []string{"rs-check-zero-count", "rs-check-recount", "rs-check-uncounted", "rs-check-fence-down",
		"rs-check-op-ttl", "rs-check-thread-index"} {
		m[id] = `^TestCheck`
	}
	for _, id := range []string{"rs-go-list-inclusive", "rs-go-readpage-more"} {
		m[id] = `^(TestLongThreadsInBatches|TestListPageTies)$`
	}
	for _, id := range []string{"rs-go-orderbits-negzero", "rs-go-orderbits-neg"} {
		m[id] = `^TestOrderMemberSortsLikeList$`
	}
	for _, id := range []string{"rs-go-prune-cycle", "rs-go-prune-reverse", "rs-prunebatch-skip-writer", "rs-prunebatch-other-thread"} {
		m[id] = `^(TestPruneStopsOnParentCycle|TestLongDeletes)`
	}
	return m
}()

// Script texts that occur in several scripts, made unique by what follows.
const (
	rsLost = `local lost = writer_lost(K.thread, A.token, A.fence, A.now)
if lost then return {'WRITER_LOST', lost} end`
)

func init() {
	mutants = append(mutants, rsLibMutants()...)
	mutants = append(mutants, rsAppendMutants()...)
	mutants = append(mutants, rsPruneForkMutants()...)
	mutants = append(mutants, rsLeaseMutants()...)
	mutants = append(mutants, rsGoMutants()...)
}

// rsLibMutants break luaLib: the writer check, blob counts and the thread index.
func rsLibMutants() []mutant {
	return []mutant{
		// ---- luaLib: the writer check ----
		rs("rs-writer-no-token", rsScripts, `if l[1] ~= token or l[2] ~= fence then`, `if l[2] ~= fence then`,
			"writer_lost ignores the owner token"),
		rs("rs-writer-no-fence", rsScripts, `if l[1] ~= token or l[2] ~= fence then`, `if l[1] ~= token then`,
			"writer_lost ignores the fence"),
		rs("rs-writer-expiry-edge", rsScripts, `if tonumber(now) >= tonumber(l[3]) then`, `if tonumber(now) > tonumber(l[3]) then`,
			"writer_lost accepts a lease at now == expiry"),
		rs("rs-writer-no-expiry", rsScripts, `if tonumber(now) >= tonumber(l[3]) then`, `if false then`,
			"writer_lost accepts an expired lease"),
		equiv(rs("rs-writer-no-owner-check", rsScripts, `if not l[1] then return 'the thread has no lease' end`, ``,
			"writer_lost skips its no-lease check"),
			"with no owner, l[1] is false, which differs from every token, so the next check reports the writer lost"),
		// ---- luaLib: blob counts and the thread index ----
		rs("rs-addrefs-no-refkey", rsScripts, `if redis.call('HINCRBY', refs, k, 1) == 1 then redis.call('ZADD', rk, 0, k) end`,
			`redis.call('HINCRBY', refs, k, 1)`, "add_refs counts a new blob key but does not enter it in refkeys"),
		rs("rs-addrefs-twice", rsScripts, `if redis.call('HINCRBY', refs, k, 1) == 1 then`, `if redis.call('HINCRBY', refs, k, 2) == 2 then`,
			"add_refs counts each reference twice"),
		rs("rs-droprefs-keep-zero", rsScripts, `if redis.call('HINCRBY', refs, k, -1) <= 0 then`, `if redis.call('HINCRBY', refs, k, -1) < 0 then`,
			"drop_refs keeps a count that reaches 0"),
		rs("rs-droprefs-no-hdel", rsScripts, `redis.call('HDEL', refs, k)`, ``,
			"drop_refs leaves the count key at 0 (refkeys hides it, as BlobReferences hides fdbstore's)"),
		rs("rs-droprefs-no-zrem", rsScripts, `redis.call('ZREM', rk, k)`, ``,
			"drop_refs leaves the key in refkeys"),
		rs("rs-sync-no-transcript", rsScripts, `or redis.call('ZCARD', lkey) > 0 or redis.call('EXISTS', vkey) == 1 then`, `or redis.call('ZCARD', lkey) > 0 then`,
			"sync_thread drops a thread that only has a transcript from the thread index"),
		rs("rs-sync-no-zrem", rsScripts, `else redis.call('ZREM', threads, id) end`, `end`,
			"sync_thread never removes an emptied thread from the thread index"),
		rs("rs-pushlist-no-expire", rsScripts, `redis.call('PEXPIRE', key, ttl)`, ``,
			"push_list leaves the prune op key without an expiry"),
	}
}

// rsAppendMutants break the append and deleteHead scripts.
func rsAppendMutants() []mutant {
	return []mutant{
		// ---- append ----
		rs("rs-append-no-op", rsScripts, `if redis.call('EXISTS', K.op) == 1 then return {'ok'} end
local lost = writer_lost(K.thread, A.token, A.fence, A.now)
if lost then return {'WRITER_LOST', lost} end
if redis.call('EXISTS', K.checkpoint) == 1 then`, rsLost+`
if redis.call('EXISTS', K.checkpoint) == 1 then`, "append does not look for its op key: a resend fails or doubles"),
		rs("rs-append-skip-writer", rsScripts, rsLost+`
if redis.call('EXISTS', K.checkpoint) == 1 then return {'DUPLICATE_ID', ''} end`,
			`if redis.call('EXISTS', K.checkpoint) == 1 then return {'DUPLICATE_ID', ''} end`, "append skips the writer check"),
		rs("rs-append-skip-dup", rsScripts, `if redis.call('EXISTS', K.checkpoint) == 1 then return {'DUPLICATE_ID', ''} end`, ``,
			"append skips the duplicate id check"),
		rs("rs-append-skip-head", rsScripts, `if head ~= A.expected then return {'STALE_HEAD', head} end`, ``,
			"append skips the expected head check"),
		rs("rs-append-skip-parent", rsScripts, `if A.parent ~= A.expected then return {'PARENT_MISMATCH', ''} end`, ``,
			"append skips the parent check"),
		rs("rs-append-swap-dup-head", rsScripts, `if redis.call('EXISTS', K.checkpoint) == 1 then return {'DUPLICATE_ID', ''} end
local head = redis.call('HGET', K.thread, 'h') or ''
if head ~= A.expected then return {'STALE_HEAD', head} end`, `local head = redis.call('HGET', K.thread, 'h') or ''
if head ~= A.expected then return {'STALE_HEAD', head} end
if redis.call('EXISTS', K.checkpoint) == 1 then return {'DUPLICATE_ID', ''} end`, "append checks the head before the duplicate id"),
		rs("rs-append-swap-writer-dup", rsScripts, rsLost+`
if redis.call('EXISTS', K.checkpoint) == 1 then return {'DUPLICATE_ID', ''} end`, `if redis.call('EXISTS', K.checkpoint) == 1 then return {'DUPLICATE_ID', ''} end
`+rsLost, "append checks the duplicate id before the writer"),
		rs("rs-append-no-list", rsScripts, `redis.call('ZADD', K.list, 0, A.member)
redis.call('HSET', K.thread, 'h', A.id)
-- A thread`, `redis.call('HSET', K.thread, 'h', A.id)
-- A thread`, "append does not enter the checkpoint in the list index"),
		rs("rs-append-no-thread-index", rsScripts, `if head == '' then redis.call('ZADD', K.threads, 0, A.threadid) end`, ``,
			"append does not enter a new thread in the thread index"),
		rs("rs-append-no-refs", rsScripts, `add_refs(K.refs, K.refkeys, A.blobs)`, ``, "append counts no blob references"),
		rs("rs-append-op-no-ttl", rsScripts, `add_refs(K.refs, K.refkeys, A.blobs)
redis.call('SET', K.op, '1', 'PX', A.ttl)`, `add_refs(K.refs, K.refkeys, A.blobs)
redis.call('SET', K.op, '1')`, "append's op key never expires"),
		rs("rs-append-no-op-record", rsScripts, `add_refs(K.refs, K.refkeys, A.blobs)
redis.call('SET', K.op, '1', 'PX', A.ttl)`, `add_refs(K.refs, K.refkeys, A.blobs)`, "append records no op key: a resend after a lost reply fails"),

		// ---- deleteHead ----
		rs("rs-dh-skip-writer", rsScripts, rsLost+`
local head = redis.call('HGET', K.thread, 'h') or ''
local c = redis.call('HMGET', K.checkpoint, 't', 'p', 'k', 'l')`, `local head = redis.call('HGET', K.thread, 'h') or ''
local c = redis.call('HMGET', K.checkpoint, 't', 'p', 'k', 'l')`, "DeleteHead skips the writer check"),
		rs("rs-dh-no-thread-check", rsScripts, `if head ~= A.id or c[1] ~= A.threadid then`, `if head ~= A.id then`,
			"DeleteHead deletes a head id that names another thread's (or no) checkpoint"),
		rs("rs-dh-skip-head", rsScripts, `if head ~= A.id or c[1] ~= A.threadid then`, `if c[1] ~= A.threadid then`,
			"DeleteHead deletes any checkpoint of the thread, not only the head"),
		rs("rs-dh-head-not-parent", rsScripts, `if c[2] == '' then redis.call('HDEL', K.thread, 'h') else redis.call('HSET', K.thread, 'h', c[2]) end`,
			`redis.call('HDEL', K.thread, 'h')`, "DeleteHead leaves the thread without a head instead of the parent"),
		rs("rs-dh-no-refs", rsScripts, `drop_refs(K.refs, K.refkeys, c[3])`, ``, "DeleteHead drops no blob references"),
		rs("rs-dh-no-list", rsScripts, `redis.call('ZREM', K.list, c[4])`, ``, "DeleteHead leaves the list index entry"),
		rs("rs-dh-no-sync", rsScripts, `drop_refs(K.refs, K.refkeys, c[3])
sync_thread(K.threads, K.thread, K.list, K.transcript, A.threadid)`, `drop_refs(K.refs, K.refkeys, c[3])`,
			"DeleteHead of a root leaves the emptied thread in the thread index"),
	}
}

// rsPruneForkMutants break the prune, deleteThread and fork scripts.
func rsPruneForkMutants() []mutant {
	return []mutant{
		// ---- prune ----
		rs("rs-prune-skip-writer", rsScripts, rsLost+`
local keep, hops`, `local keep, hops`, "DeleteCheckpoints skips the writer check"),
		rs("rs-prune-other-thread", rsScripts, `if c[1] ~= A.threadid or seen[id] then id = ''; break end`, `if not c[1] or seen[id] then id = ''; break end`,
			"the prune walk follows parents into another thread"),
		equiv(rs("rs-prune-no-seen", rsScripts, `if c[1] ~= A.threadid or seen[id] then id = ''; break end`, `if c[1] ~= A.threadid then id = ''; break end`,
			"the prune walk does not stop at a parent cycle"),
			"a cycle then fills the walk to Hops, so the script replies walk and Go's own seen set ends the chain at the same id; only the number of scripts changes"),
		rs("rs-prune-keep-plus-one", rsScripts, `for i = #chain, keep + 1, -1 do`, `for i = #chain, keep + 2, -1 do`,
			"a one-step prune keeps one checkpoint too many"),
		rs("rs-prune-keep-minus-one", rsScripts, `for i = #chain, keep + 1, -1 do`, `for i = #chain, keep, -1 do`,
			"a one-step prune deletes one checkpoint too many"),
		rs("rs-prune-no-refs", rsScripts, `drop_refs(K.refs, K.refkeys, c[1])`, ``, "a one-step prune drops no blob references"),
		rs("rs-prune-no-list", rsScripts, `redis.call('ZREM', K.list, c[2])
  drop_refs(K.refs, K.refkeys, c[1])`, `drop_refs(K.refs, K.refkeys, c[1])`, "a one-step prune leaves list index entries"),
		rs("rs-prunebatch-skip-writer", rsScripts, `if redis.call('EXISTS', K.op) == 1 then return redis.call('LRANGE', K.op, 0, -1) end
`+rsLost+`
local out = {'ok'}
for i = A.ids, #ARGV do`, `if redis.call('EXISTS', K.op) == 1 then return redis.call('LRANGE', K.op, 0, -1) end
local out = {'ok'}
for i = A.ids, #ARGV do`, "a prune batch skips the writer check"),
		rs("rs-prunebatch-other-thread", rsScripts, `local c = redis.call('HMGET', ck, 't', 'k', 'l')
  if c[1] == A.threadid then`, `local c = redis.call('HMGET', ck, 't', 'k', 'l')
  if c[1] then`, "a prune batch deletes a walked id that another thread stored meanwhile"),

		// ---- deleteThread ----
		rs("rs-dt-skip-writer", rsScripts, rsLost+`
local members = redis.call('ZRANGE', K.list, 0, tonumber(A.batch) - 1)`, `local members = redis.call('ZRANGE', K.list, 0, tonumber(A.batch) - 1)`,
			"DeleteThread skips the writer check"),
		rs("rs-dt-no-refs", rsScripts, `drop_refs(K.refs, K.refkeys, c[2])
    n = n + 1`, `n = n + 1`, "DeleteThread drops no blob references"),
		equiv(rs("rs-dt-other-thread", rsScripts, `local c = redis.call('HMGET', ck, 't', 'k')
  if c[1] == A.threadid then`, `local c = redis.call('HMGET', ck, 't', 'k')
  if c[1] then`, "DeleteThread deletes a listed id that another thread reused"),
			"every script that deletes a checkpoint removes its list member in the same step, so a listed id never names a checkpoint of another thread"),
		rs("rs-dt-keep-transcript", rsScripts, `redis.call('DEL', K.transcript)`, ``, "DeleteThread keeps the transcript"),
		rs("rs-dt-keep-head", rsScripts, `done = '1'
  redis.call('HDEL', K.thread, 'h')`, `done = '1'`, "DeleteThread keeps the head"),
		rs("rs-dt-first-batch-done", rsScripts, `if redis.call('ZCARD', K.list) == 0 then`, `if true then`,
			"DeleteThread ends after its first batch"),

		// ---- fork ----
		rs("rs-fork-no-op", rsScripts, `if redis.call('EXISTS', K.op) == 1 then
  local c = redis.call('HMGET', K.checkpoint, 'b', 'v')
  return {'ok', c[1], c[2]}
end`, ``, "fork does not look for its op key: a resend fails"),
		rs("rs-fork-skip-notfound", rsScripts, `if not src[1] then return {'FORK_SOURCE_NOT_FOUND', ''} end`, ``,
			"fork skips the source-exists check (a missing source reports a thread mismatch)"),
		rs("rs-fork-skip-mismatch", rsScripts, `if src[1] ~= A.sourcethread then return {'FORK_SOURCE_THREAD_MISMATCH', src[1]} end`, ``,
			"fork skips the source thread check"),
		rs("rs-fork-skip-writer-thread", rsScripts, `if A.writermatches ~= '1' then return {'WRITER_LOST', 'the writer is for another thread'} end`, ``,
			"fork skips the writer's thread check"),
		rs("rs-fork-skip-writer", rsScripts, rsLost+`
if (redis.call('HGET', K.thread, 'h') or '') ~= ''`, `if (redis.call('HGET', K.thread, 'h') or '') ~= ''`, "fork skips the writer check"),
		rs("rs-fork-skip-dest-head", rsScripts, `if (redis.call('HGET', K.thread, 'h') or '') ~= '' or redis.call('ZCARD', K.list) > 0 then`,
			`if redis.call('ZCARD', K.list) > 0 then`, "fork into a thread whose head names a pruned checkpoint"),
		rs("rs-fork-skip-dest-list", rsScripts, `if (redis.call('HGET', K.thread, 'h') or '') ~= '' or redis.call('ZCARD', K.list) > 0 then`,
			`if (redis.call('HGET', K.thread, 'h') or '') ~= '' then`, "fork into a thread with checkpoints but no head"),
		rs("rs-fork-skip-dest-transcript", rsScripts, `if redis.call('EXISTS', K.transcript) == 1 then
  return {'FORK_DESTINATION_NOT_EMPTY', 'the destination thread has a transcript'}
end`, ``, "fork into a thread with a transcript"),
		rs("rs-fork-skip-dest-id", rsScripts, `if redis.call('EXISTS', K.checkpoint) == 1 then
  return {'FORK_DESTINATION_NOT_EMPTY', 'the destination checkpoint id is used'}
end`, ``, "fork onto a used checkpoint id"),
		rs("rs-fork-swap-writer-source", rsScripts, `local src = redis.call('HMGET', K.source, 't', 'b', 'k', 'v')`,
			`local lost0 = writer_lost(K.thread, A.token, A.fence, A.now)
if A.writermatches == '1' and lost0 then return {'WRITER_LOST', lost0} end
local src = redis.call('HMGET', K.source, 't', 'b', 'k', 'v')`, "fork checks the writer before the source"),
		rs("rs-fork-no-transcript", rsScripts, `redis.call('SET', K.transcript, conv)`, ``, "fork leaves the destination without a transcript"),
		rs("rs-fork-empty-transcript", rsScripts, `if conv == '' then conv = '[]' end`, ``, "fork of a root without conversation stores an empty transcript, not []"),
		rs("rs-fork-no-refs", rsScripts, `add_refs(K.refs, K.refkeys, src[3])`, ``, "fork counts no blob references"),
		rs("rs-fork-no-thread-index", rsScripts, `redis.call('ZADD', K.threads, 0, A.destthread)`, ``, "fork does not enter the destination in the thread index"),
		rs("rs-fork-no-list", rsScripts, `redis.call('ZADD', K.list, 0, A.member)
redis.call('HSET', K.thread, 'h', A.destid)`, `redis.call('HSET', K.thread, 'h', A.destid)`, "fork does not enter the root in the list index"),
	}
}

// rsLeaseMutants break the lease, transcript and import scripts.
func rsLeaseMutants() []mutant {
	return []mutant{
		// ---- leases ----
		rs("rs-acquire-ignore-live", rsScripts, `if l[1] and tonumber(A.now) < tonumber(l[3]) then`, `if false then`,
			"AcquireWriter takes over a live lease"),
		rs("rs-acquire-expiry-edge", rsScripts, `if l[1] and tonumber(A.now) < tonumber(l[3]) then`, `if l[1] and tonumber(A.now) <= tonumber(l[3]) then`,
			"AcquireWriter refuses a lease at now == expiry"),
		rs("rs-acquire-no-op", rsScripts, `local rec = redis.call('GET', K.op)
if rec then`, `local rec = false
if rec then`, "AcquireWriter repeated with an op token after release takes a second lease"),
		rs("rs-acquire-same-token", rsScripts, `if l[1] == A.token then return {'ok', l[2], l[3]} end`, ``,
			"AcquireWriter retried while its lease holds reports the op record, not the lease (a renewed expiry is lost)"),
		rs("rs-acquire-fence-not-stored", rsScripts, `local f = redis.call('HINCRBY', K.thread, 'f', 1)`,
			`local f = tonumber(redis.call('HGET', K.thread, 'f') or '0') + 1`, "AcquireWriter issues a fence it does not store"),
		rs("rs-renew-skip-writer", rsScripts, `if redis.call('EXISTS', K.op) == 1 then return {'ok'} end
`+rsLost+`
redis.call('HSET', K.thread, 'x', A.expiry)`, `redis.call('HSET', K.thread, 'x', A.expiry)`, "RenewWriter skips the writer check"),
		rs("rs-renew-no-op", rsScripts, `if redis.call('EXISTS', K.op) == 1 then return {'ok'} end
`+rsLost+`
redis.call('HSET', K.thread, 'x', A.expiry)`, rsLost+`
redis.call('HSET', K.thread, 'x', A.expiry)`, "RenewWriter resent after a takeover reports the writer lost"),
		rs("rs-renew-no-extend", rsScripts, `redis.call('HSET', K.thread, 'x', A.expiry)`, ``, "RenewWriter does not move the expiry"),
		rs("rs-release-no-fence", rsScripts, `if l[1] == A.token and l[2] == A.fence then redis.call('HDEL', K.thread, 'o', 'x') end`,
			`if l[1] == A.token then redis.call('HDEL', K.thread, 'o', 'x') end`, "ReleaseWriter ignores the fence (issue 13 survivor c)"),
		rs("rs-release-no-token", rsScripts, `if l[1] == A.token and l[2] == A.fence then redis.call('HDEL', K.thread, 'o', 'x') end`,
			`if l[2] == A.fence then redis.call('HDEL', K.thread, 'o', 'x') end`, "ReleaseWriter ignores the owner token"),
		rs("rs-release-resets-fence", rsScripts, `redis.call('HDEL', K.thread, 'o', 'x')`, `redis.call('HDEL', K.thread, 'o', 'x', 'f')`,
			"ReleaseWriter resets the fence"),
		rs("rs-release-keeps-expiry", rsScripts, `redis.call('HDEL', K.thread, 'o', 'x')`, `redis.call('HDEL', K.thread, 'o')`,
			"ReleaseWriter leaves the expiry without an owner"),

		// ---- transcripts and import ----
		rs("rs-save-no-index", rsScripts, `redis.call('SET', K.transcript, A.messages)
redis.call('ZADD', K.threads, 0, A.threadid)`, `redis.call('SET', K.transcript, A.messages)`, "SaveThread does not enter the thread in the thread index"),
		rs("rs-save-no-op", rsScripts, `if redis.call('EXISTS', K.op) == 1 then return {'ok'} end
redis.call('SET', K.transcript, A.messages)`, `redis.call('SET', K.transcript, A.messages)`,
			"SaveThread resent after a later SaveThread writes the older transcript again"),
		rs("rs-import-skip-writer", rsScripts, rsLost+`
local new, cmp = {}, {'COMPARE'}`, `local new, cmp = {}, {'COMPARE'}`, "Import skips the writer check"),
		rs("rs-import-skip-other-thread", rsScripts, `if c[1] ~= A.threadid then return {'DUPLICATE_ID', id .. ' is stored in thread ' .. c[1]} end`, ``,
			"Import accepts an id stored in another thread"),
		rs("rs-import-bytes-only", rsScripts, `(ARGV[i + 7] ~= '' and c[4] == ARGV[i + 7] and c[5] == ARGV[i + 8])`, `false`,
			"Import does not accept a stored copy that Go found equal by content"),
		rs("rs-import-skip-body", rsScripts, `((c[4] == ARGV[i + 3] and c[5] == ARGV[i + 5]) or`, `(true or`,
			"Import takes a stored id with the same parent and header as the same checkpoint"),
		rs("rs-import-skip-head", rsScripts, `if head ~= '' and head ~= A.head then return {'STALE_HEAD', head} end`, ``,
			"Import replaces a head it did not expect"),
		rs("rs-import-head-empty", rsScripts, `if head ~= '' and head ~= A.head then return {'STALE_HEAD', head} end`, `if head ~= A.head then return {'STALE_HEAD', head} end`,
			"Import refuses to set the head of a thread without one"),
		rs("rs-import-no-refs", rsScripts, `add_refs(K.refs, K.refkeys, ARGV[i + 4])`, ``, "Import counts no blob references"),
		rs("rs-import-no-list", rsScripts, `redis.call('ZADD', K.list, 0, ARGV[i + 6])`, ``, "Import does not enter its checkpoints in the list index"),
		rs("rs-import-no-transcript", rsScripts, `if A.hastranscript == '1' then redis.call('SET', K.transcript, A.messages) end`, ``,
			"Import drops the transcript"),
		equiv(rs("rs-import-no-clear-head", rsScripts, `if A.head == '' then redis.call('HDEL', K.thread, 'h') else`, `if A.head == '' then else`,
			"Import with SetHead and no head keeps the old head"),
			"the head check before lets SetHead with no head through only on a thread without a head: there is nothing to clear"),
		rs("rs-import-no-sync", rsScripts, `if A.hastranscript == '1' then redis.call('SET', K.transcript, A.messages) end
sync_thread(K.threads, K.thread, K.list, K.transcript, A.threadid)`, `if A.hastranscript == '1' then redis.call('SET', K.transcript, A.messages) end`,
			"Import does not update the thread index"),
		rs("rs-import-no-op", rsScripts, `if redis.call('EXISTS', K.op) == 1 then return {'ok', redis.call('GET', K.op)} end`, ``,
			"Import resent after a lost reply counts its checkpoints as not new"),
	}
}

// rsGoMutants break the reads, the Go around the scripts and Check.
func rsGoMutants() []mutant {
	return []mutant{
		// ---- reads ----
		rs("rs-page-no-reverse", rsScripts, `if A.reverse == '1' then`, `if false then`, "a reverse page is read forward"),
		rs("rs-blobpage-no-count", rsScripts, `out[#out + 1] = counts[i]`, `out[#out + 1] = '1'`, "BlobReferences reports every count as 1"),
		rs("rs-go-list-inclusive", rsStore, `from = "(" + orderMember(last.CreatedAt, last.ID)`, `from = "[" + orderMember(last.CreatedAt, last.ID)`,
			"List repeats the last checkpoint of each page"),
		rs("rs-go-readpage-more", rsStore, `return out, len(res)/5 > limit, nil`, `return out, len(res)/5 >= limit, nil`,
			"a page of exactly limit checkpoints says more follow"),
		rs("rs-go-orderbits-negzero", rsStore, `if f == 0 { f = 0 // -0 sorts as 0
	}`, ``, "-0 sorts before 0"),
		rs("rs-go-orderbits-neg", rsStore, `if u>>63 == 1 { return ^u }`, `if u>>63 == 1 { return u }`, "negative createdAt sorts after positive"),
		rs("rs-go-member-no-position", rsStore, `binary.BigEndian.PutUint64(b, orderBits(createdAt))`, `binary.BigEndian.PutUint64(b, 0)`,
			"list members ignore createdAt: List sorts by id alone"),
		rs("rs-go-page-after-inclusive", rsThread, `from = "(" + orderMember(p.After.CreatedAt, p.After.ID)`, `from = "[" + orderMember(p.After.CreatedAt, p.After.ID)`,
			"ListPage repeats the cursor's checkpoint"),
		rs("rs-go-threads-inclusive", rsThread, `from = "(" + p.After`, `from = "[" + p.After`, "Threads repeats the cursor's thread"),
		rs("rs-go-threads-more", rsThread, `more := len(ids) > p.Limit`, `more := len(ids) >= p.Limit`, "Threads gives a cursor after a last full page"),
		rs("rs-go-loadthread-nil", rsThread, `return driver.EmptyTranscript(), nil`, `return nil, nil`, "LoadThread of a thread never saved returns nil, not []"),

		// ---- Go around the scripts ----
		rs("rs-go-fork-writer-thread", rsStore, `WriterMatches: precheck.WriterThread(in.Writer, dst) == nil,`, `WriterMatches: true,`,
			"fork does not check that the writer is the destination's"),
		rs("rs-go-acquire-expiry", rsStore, `Expiry: itoa(now + s.leaseMs)`, `Expiry: itoa(now + s.leaseMs - 1)`, "AcquireWriter's lease is 1 ms short"),
		rs("rs-go-renew-expiry", rsStore, `exp := now + s.leaseMs`, `exp := now + s.leaseMs/2`, "RenewWriter extends by half a lease"),
		rs("rs-go-prune-cycle", rsStore, `if seen[id] { // a cycle through reused ids: the chain ends here`, `if false { // a cycle through reused ids: the chain ends here`,
			"a long prune's walk does not stop at a cycle across stretches"),
		rs("rs-go-prune-reverse", rsStore, `slices.Reverse(doomed) // farthest from the head first`, ``,
			"a long prune deletes nearest the head first: a failure midway leaves a broken chain"),
		rs("rs-go-import-equal", rsThread, `if !driver.EqualCheckpoints(got, want) {`, `if !driver.EqualCheckpoints(got, got) {`,
			"Import accepts a stored id with other content as the same checkpoint"),
		rs("rs-go-dt-count", rsThread, `total += int(n)`, `total += min(int(n), 1)`, "DeleteThread counts batches, not checkpoints"),
		rs("rs-go-optoken-ignored", rsStore, `if t, ok := driver.OpToken(ctx); ok {`, `if t, ok := driver.OpToken(ctx); ok && false {`,
			"writes ignore the caller's op token"),

		// ---- Check ----
		rs("rs-check-zero-count", rsCheck, `case count <= 0:`, `case count < 0:`, "Check accepts a blob count at 0"),
		rs("rs-check-recount", rsCheck, `case count != recount[key]:`, `case false:`, "Check does not recount blob references"),
		rs("rs-check-uncounted", rsCheck, `if _, ok := c.refs[key]; !ok {`, `if false {`, "Check misses a used blob key that is not counted"),
		rs("rs-check-fence-down", rsCheck, `if f, ok := c.fences[a.thread]; !ok || f < a.fence {`, `if f, ok := c.fences[a.thread]; !ok && f < a.fence {`,
			"Check misses a fence that went down"),
		rs("rs-check-op-ttl", rsCheck, `if ttl == -1 {`, `if false {`, "Check misses an op key without an expiry"),
		rs("rs-check-thread-index", rsCheck, `for _, th := range diff(want, threads) {`, `for _, th := range diff(want, want) {`,
			"Check misses a thread missing from the thread index"),
	}
}
