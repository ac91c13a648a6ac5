package redisstore

// The Lua scripts. Each write is one script (or, for a thread too large
// for one bounded step, one script per batch), so its checks and its writes
// run as one atomic step on the server: a script that fails a check returns
// before its first write. The portable store runs the pure checks first
// and passes everything a script needs as arguments. The lease clock is
// the server's: each script that judges a lease reads TIME itself (now_ms),
// unless the store was given a test clock (Options.Now), whose reading
// then comes in A.now; so every process sharing a prefix judges every
// lease by one clock, whatever its own clock says.
//
// Each script's parameters are a struct (see lua.go): K.<name> are its
// KEYS, A.<name> its ARGV. Scripts reply with an array whose first element
// is "ok" or the wire code of a contract error without its
// SANDBOX_SNAPSHOT_ prefix ("STALE_HEAD", "WRITER_LOST", …); the rest is
// the result, or the error's fields, never its message: Go writes every
// message with driver's formatters (scriptCall.failure), as memstore and
// fdbstore do, so the engines word each error alike. The fields:
//
//	WRITER_LOST                 "none" (no lease), "fence" and the lease's fence,
//	                            "expired" and the expiry (ms), or "thread"
//	                            (fork: the writer is of another thread)
//	WRITER_CONFLICT             the live lease's expiry (ms)
//	STALE_HEAD                  the thread's head
//	DUPLICATE_ID                none (Append), or the id and the thread
//	                            holding it (Import)
//	NOT_HEAD                    the thread's head
//	FORK_SOURCE_THREAD_MISMATCH the source checkpoint's thread
//	FORK_DESTINATION_NOT_EMPTY  "checkpoints", "transcript" or "id"
//	PARENT_MISMATCH, FORK_SOURCE_NOT_FOUND: none
//
// Two replies are neither "ok" nor an error:
// "walk" (prune: the chain is longer than one batch, here is part of it)
// and "COMPARE" (import: stored checkpoints whose bytes differ from the
// batch's, for Go to compare by content); both come before any write.
//
// Thread hash fields (K.thread, "t:<thread>"):
//
//	h  head checkpoint id (absent when none)
//	f  highest fence ever issued (only grows; survives release and expiry)
//	o  owner token of the current lease (absent when released)
//	x  expiry of the current lease, integer ms since the epoch
//
// The current lease's fence is always f: f grows only when a lease is
// taken. Fences are compared as the decimal strings HINCRBY stores and Go
// formats, so no fence passes through a Lua double.
//
// Checkpoint hash fields ("c:<id>"): t thread, p parent ("" = none), h
// header, b body, v conversation (see codec.go), k the blob keys,
// '\n'-separated, l the checkpoint's member in its thread's list index.
//
// Writes first look for their operation key ("o:<token>"). It exists only
// when this very call already succeeded (a reply lost, the command resent,
// or a caller's op token repeated); the script then returns the recorded
// result without checking or writing again. A failed call records nothing:
// it changed nothing, so checking again is correct.
//
// Lua compares strings only with == and ~= (byte equality): its < uses the
// server's collation locale, so every ordering is left to sorted sets.

// nowLua is the engine's lease clock in Lua, for every script that judges
// a lease (writer leases here, lock leases in persist_scripts.go):
// now_ms(a) is a, a test clock's reading in ms, or when a is "" the
// server's TIME in whole ms.
const nowLua = `
local function now_ms(a)
  if a ~= '' then return tonumber(a) end
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
`

// luaLib is prepended to every script that checks writers, counts blobs or
// keeps the thread index.
const luaLib = nowLua + `
local function writer_lost(tkey, token, fence, now)
  local l = redis.call('HMGET', tkey, 'o', 'f', 'x')
  if not l[1] then return {'WRITER_LOST', 'none'} end
  if l[1] ~= token or l[2] ~= fence then return {'WRITER_LOST', 'fence', l[2] or ''} end
  if now >= tonumber(l[3]) then return {'WRITER_LOST', 'expired', l[3]} end
  return nil
end
local function add_refs(refs, rk, keys)
  if not keys then return end
  for k in string.gmatch(keys, '[^\n]+') do
    if redis.call('HINCRBY', refs, k, 1) == 1 then redis.call('ZADD', rk, 0, k) end
  end
end
local function drop_refs(refs, rk, keys)
  if not keys then return end
  for k in string.gmatch(keys, '[^\n]+') do
    if redis.call('HINCRBY', refs, k, -1) <= 0 then
      redis.call('HDEL', refs, k)
      redis.call('ZREM', rk, k)
    end
  end
end
local function sync_thread(threads, tkey, lkey, vkey, id)
  if redis.call('HEXISTS', tkey, 'h') == 1 or redis.call('ZCARD', lkey) > 0 or redis.call('EXISTS', vkey) == 1 then
    redis.call('ZADD', threads, 0, id)
  else
    redis.call('ZREM', threads, id)
  end
end
local function push_list(key, list, ttl)
  for i = 1, #list, 1000 do
    redis.call('RPUSH', key, unpack(list, i, math.min(i + 999, #list)))
  end
  redis.call('PEXPIRE', key, ttl)
end
`

// appendArgs are appendScript's parameters.
type appendArgs struct {
	Thread, List, Checkpoint, Refs, RefKeys, Threads, Op key
	TTL, Now, Token, Fence                               string
	ID, ThreadID, Expected, Parent, Member, Header       string
	Body                                                 []byte
	Blobs                                                string
	Conv                                                 []byte
}

// appendScript: Append steps 3–6 and the write.
var appendScript = newScript[appendArgs]("append", true, `
if redis.call('EXISTS', K.op) == 1 then return {'ok'} end
local lost = writer_lost(K.thread, A.token, A.fence, now_ms(A.now))
if lost then return lost end
if redis.call('EXISTS', K.checkpoint) == 1 then return {'DUPLICATE_ID'} end
local head = redis.call('HGET', K.thread, 'h') or ''
if head ~= A.expected then return {'STALE_HEAD', head} end
if A.parent ~= A.expected then return {'PARENT_MISMATCH'} end
redis.call('HSET', K.checkpoint, 't', A.threadid, 'p', A.parent, 'h', A.header, 'b', A.body, 'k', A.blobs, 'v', A.conv, 'l', A.member)
redis.call('ZADD', K.list, 0, A.member)
redis.call('HSET', K.thread, 'h', A.id)
-- A thread with a head is in the thread index already.
if head == '' then redis.call('ZADD', K.threads, 0, A.threadid) end
add_refs(K.refs, K.refkeys, A.blobs)
redis.call('SET', K.op, '1', 'PX', A.ttl)
return {'ok'}
`)

// deleteHeadArgs are deleteHeadScript's parameters.
type deleteHeadArgs struct {
	Thread, List, Checkpoint, Refs, RefKeys, Transcript, Threads, Op key
	TTL, Now, Token, Fence                                           string
	ID, ThreadID                                                     string
}

// deleteHeadScript: DeleteHead's writer and head checks and the delete.
var deleteHeadScript = newScript[deleteHeadArgs]("deleteHead", true, `
if redis.call('EXISTS', K.op) == 1 then return {'ok'} end
local lost = writer_lost(K.thread, A.token, A.fence, now_ms(A.now))
if lost then return lost end
local head = redis.call('HGET', K.thread, 'h') or ''
local c = redis.call('HMGET', K.checkpoint, 't', 'p', 'k', 'l')
if head ~= A.id or c[1] ~= A.threadid then return {'NOT_HEAD', head} end
redis.call('DEL', K.checkpoint)
redis.call('ZREM', K.list, c[4])
if c[2] == '' then redis.call('HDEL', K.thread, 'h') else redis.call('HSET', K.thread, 'h', c[2]) end
drop_refs(K.refs, K.refkeys, c[3])
sync_thread(K.threads, K.thread, K.list, K.transcript, A.threadid)
redis.call('SET', K.op, '1', 'PX', A.ttl)
return {'ok'}
`)

// pruneArgs are pruneScript's parameters.
type pruneArgs struct {
	Thread, List, Refs, RefKeys, Op key
	TTL, Now, Token, Fence          string
	ThreadID                        string
	Keep                            int
	CP                              string // checkpoint key prefix
	From                            string // "" = the head
	Hops                            int    // the most checkpoints to walk
	Budget                          int    // the most to delete at once; 0 = walk only
}

// pruneScript: DeleteCheckpoints' writer check and one bounded part of
// the walk from the head. The chain's checkpoint keys are found while
// walking, so they cannot be declared in KEYS; they share the store's hash
// tag, so the script stays within one cluster slot. The walk stops at a
// checkpoint of another thread, a missing one, or one already seen (an id
// reused after pruning can make a parent link point forward).
//
// When the walk starts at the head, reaches the end of the chain within
// Hops and leaves at most Budget checkpoints to delete, the script deletes
// them too: a small prune is one atomic step, replying {"ok", ids…}.
// Otherwise it replies {"walk", next id ("" = the end), walked ids…} and
// writes nothing; Go walks on and deletes with pruneBatchScript.
var pruneScript = newScript[pruneArgs]("prune", true, `
if redis.call('EXISTS', K.op) == 1 then return redis.call('LRANGE', K.op, 0, -1) end
local lost = writer_lost(K.thread, A.token, A.fence, now_ms(A.now))
if lost then return lost end
local keep, hops = tonumber(A.keep), tonumber(A.hops)
local chain, seen = {}, {}
local id = A.from
if id == '' then id = redis.call('HGET', K.thread, 'h') or '' end
while id ~= '' and #chain < hops do
  local c = redis.call('HMGET', A.cp .. id, 't', 'p')
  if c[1] ~= A.threadid or seen[id] then id = ''; break end
  seen[id] = true
  chain[#chain + 1] = id
  id = c[2]
end
if A.from ~= '' or id ~= '' or #chain - keep > tonumber(A.budget) then
  local out = {'walk', id}
  for i = 1, #chain do out[#out + 1] = chain[i] end
  return out
end
local out = {'ok'}
for i = #chain, keep + 1, -1 do
  local cid = chain[i]
  local ck = A.cp .. cid
  local c = redis.call('HMGET', ck, 'k', 'l')
  redis.call('DEL', ck)
  redis.call('ZREM', K.list, c[2])
  drop_refs(K.refs, K.refkeys, c[1])
  out[#out + 1] = cid
end
push_list(K.op, out, A.ttl)
return out
`)

// pruneBatchArgs are pruneBatchScript's parameters.
type pruneBatchArgs struct {
	Thread, List, Refs, RefKeys, Op key
	TTL, Now, Token, Fence          string
	ThreadID                        string
	CP                              string
	IDs                             []any // the checkpoints to delete, farthest from the head first
}

// pruneBatchScript deletes one batch of a long prune: the checkpoints of
// A.ids that are still stored in the thread (a repeated batch deletes
// nothing more), after the writer check. It replies {"ok", deleted ids…}.
var pruneBatchScript = newScript[pruneBatchArgs]("pruneBatch", true, `
if redis.call('EXISTS', K.op) == 1 then return redis.call('LRANGE', K.op, 0, -1) end
local lost = writer_lost(K.thread, A.token, A.fence, now_ms(A.now))
if lost then return lost end
local out = {'ok'}
for i = A.ids, #ARGV do
  local cid = ARGV[i]
  local ck = A.cp .. cid
  local c = redis.call('HMGET', ck, 't', 'k', 'l')
  if c[1] == A.threadid then
    redis.call('DEL', ck)
    redis.call('ZREM', K.list, c[3])
    drop_refs(K.refs, K.refkeys, c[2])
    out[#out + 1] = cid
  end
end
push_list(K.op, out, A.ttl)
return out
`)

// deleteThreadArgs are deleteThreadScript's parameters.
type deleteThreadArgs struct {
	Thread, List, Transcript, Refs, RefKeys, Threads, Op key
	TTL, Now, Token, Fence                               string
	ThreadID                                             string
	CP                                                   string
	Batch                                                int
}

// deleteThreadScript deletes one batch of a thread: the writer check, then
// its Batch oldest checkpoints (by List order), and, once none is left, its
// head and transcript. It replies {"ok", deleted count, "1" when the
// thread is gone or "0"}. Each batch is atomic; the whole thread is
// deleted by repeating it until it replies "1".
var deleteThreadScript = newScript[deleteThreadArgs]("deleteThread", true, `
if redis.call('EXISTS', K.op) == 1 then
  local n, done = string.match(redis.call('GET', K.op), '^(%d+):(%d)$')
  return {'ok', n, done}
end
local lost = writer_lost(K.thread, A.token, A.fence, now_ms(A.now))
if lost then return lost end
local members = redis.call('ZRANGE', K.list, 0, tonumber(A.batch) - 1)
local n = 0
for _, m in ipairs(members) do
  local ck = A.cp .. string.sub(m, 9)
  local c = redis.call('HMGET', ck, 't', 'k')
  if c[1] == A.threadid then
    redis.call('DEL', ck)
    drop_refs(K.refs, K.refkeys, c[2])
    n = n + 1
  end
  redis.call('ZREM', K.list, m)
end
local done = '0'
if redis.call('ZCARD', K.list) == 0 then
  done = '1'
  redis.call('HDEL', K.thread, 'h')
  redis.call('DEL', K.transcript)
  sync_thread(K.threads, K.thread, K.list, K.transcript, A.threadid)
end
redis.call('SET', K.op, n .. ':' .. done, 'PX', A.ttl)
return {'ok', n, done}
`)

// forkArgs are forkScript's parameters.
type forkArgs struct {
	Source, Thread, List, Checkpoint, Refs, RefKeys, Transcript, Threads, Op key
	TTL, Now, Token, Fence                                                   string
	SourceThread, DestThread, DestID                                         string
	WriterMatches                                                            bool
	Member, Header                                                           string
}

// forkScript: ForkFromCheckpoint's checks after the pure ones, in the
// order of docs/contract.md, and the copy. The body, conversation and blob
// keys are copied on the server; Go supplies the new header. The
// destination's transcript becomes the copied conversation ("[]" for an
// empty one), in the same step.
var forkScript = newScript[forkArgs]("fork", true, `
if redis.call('EXISTS', K.op) == 1 then
  local c = redis.call('HMGET', K.checkpoint, 'b', 'v')
  return {'ok', c[1], c[2]}
end
local src = redis.call('HMGET', K.source, 't', 'b', 'k', 'v')
if not src[1] then return {'FORK_SOURCE_NOT_FOUND'} end
if src[1] ~= A.sourcethread then return {'FORK_SOURCE_THREAD_MISMATCH', src[1]} end
if A.writermatches ~= '1' then return {'WRITER_LOST', 'thread'} end
local lost = writer_lost(K.thread, A.token, A.fence, now_ms(A.now))
if lost then return lost end
if (redis.call('HGET', K.thread, 'h') or '') ~= '' or redis.call('ZCARD', K.list) > 0 then
  return {'FORK_DESTINATION_NOT_EMPTY', 'checkpoints'}
end
if redis.call('EXISTS', K.transcript) == 1 then
  return {'FORK_DESTINATION_NOT_EMPTY', 'transcript'}
end
if redis.call('EXISTS', K.checkpoint) == 1 then
  return {'FORK_DESTINATION_NOT_EMPTY', 'id'}
end
redis.call('HSET', K.checkpoint, 't', A.destthread, 'p', '', 'h', A.header, 'b', src[2], 'k', src[3], 'v', src[4], 'l', A.member)
redis.call('ZADD', K.list, 0, A.member)
redis.call('HSET', K.thread, 'h', A.destid)
local conv = src[4]
if conv == '' then conv = '[]' end
redis.call('SET', K.transcript, conv)
redis.call('ZADD', K.threads, 0, A.destthread)
add_refs(K.refs, K.refkeys, src[3])
redis.call('SET', K.op, '1', 'PX', A.ttl)
return {'ok', src[2], src[4]}
`)

// acquireArgs are acquireScript's parameters.
type acquireArgs struct {
	Thread, Op       key
	Token, Now, Span string // Span: the lease duration, ms
	TTL              string
	ThreadID         string // recorded with the lease, for Check
}

// acquireScript takes a thread's lease. A retry of the same call finds its
// own token in place and returns that lease again; once that lease is gone
// (released, expired, taken over), the op key still names it, so a call
// repeated with the caller's op token reports the lease it took instead of
// taking a second one.
var acquireScript = newScript[acquireArgs]("acquire", true, `
local l = redis.call('HMGET', K.thread, 'o', 'f', 'x')
if l[1] == A.token then return {'ok', l[2], l[3]} end
local rec = redis.call('GET', K.op)
if rec then
  local f, x = string.match(rec, '^(%d+):(%d+):')
  return {'ok', f, x}
end
local now = now_ms(A.now)
if l[1] and now < tonumber(l[3]) then return {'WRITER_CONFLICT', l[3]} end
local exp = tostring(now + tonumber(A.span))
local f = redis.call('HINCRBY', K.thread, 'f', 1)
redis.call('HSET', K.thread, 'o', A.token, 'x', exp)
redis.call('SET', K.op, f .. ':' .. exp .. ':' .. A.threadid, 'PX', A.ttl)
return {'ok', f, exp}
`)

// renewArgs are renewScript's parameters.
type renewArgs struct {
	Thread, Op              key
	Token, Fence, Now, Span string // Span: the lease duration, ms
	TTL                     string
}

// renewScript extends the live lease of the writer. It records its op
// key: a resend that arrives once the renewed lease has expired and been
// taken over must still report the renewal that happened, not
// ErrWriterLost (which would tell the caller the lease could be taken
// earlier than it could). The op key holds the new expiry, which a resend
// reports. Replies {"ok", expiry ms}.
var renewScript = newScript[renewArgs]("renew", true, `
local rec = redis.call('GET', K.op)
if rec then return {'ok', rec} end
local now = now_ms(A.now)
local lost = writer_lost(K.thread, A.token, A.fence, now)
if lost then return lost end
local exp = tostring(now + tonumber(A.span))
redis.call('HSET', K.thread, 'x', exp)
redis.call('SET', K.op, exp, 'PX', A.ttl)
return {'ok', exp}
`)

// releaseArgs are releaseScript's parameters.
type releaseArgs struct {
	Thread       key
	Token, Fence string
}

// releaseScript ends the writer's lease if it is still the thread's lease;
// expired or not, as memstore does. The fence stays.
var releaseScript = newScript[releaseArgs]("release", false, `
local l = redis.call('HMGET', K.thread, 'o', 'f')
if l[1] == A.token and l[2] == A.fence then redis.call('HDEL', K.thread, 'o', 'x') end
return {'ok'}
`)

// saveThreadArgs are saveThreadScript's parameters.
type saveThreadArgs struct {
	Transcript, Threads, Op key
	ThreadID                string
	Messages                []byte
	TTL                     string
}

// saveThreadScript replaces a thread's transcript and enters the thread in
// the thread index, in one step. Its op key keeps a resend from writing
// again: a resend that came after another SaveThread would put the older
// transcript back over the newer one.
var saveThreadScript = newScript[saveThreadArgs]("saveThread", false, `
if redis.call('EXISTS', K.op) == 1 then return {'ok'} end
redis.call('SET', K.transcript, A.messages)
redis.call('ZADD', K.threads, 0, A.threadid)
redis.call('SET', K.op, '1', 'PX', A.ttl)
return {'ok'}
`)

// importArgs are importScript's parameters.
type importArgs struct {
	Thread, List, Refs, RefKeys, Transcript, Threads, Op key
	TTL, Now, Token, Fence                               string
	ThreadID                                             string
	CP                                                   string
	SetHead                                              bool
	Head                                                 string
	HasTranscript                                        bool
	Messages                                             []byte
	// CPs holds importFields values per checkpoint: id, parent, header,
	// body, blob keys, conversation, list member, and the body and
	// conversation of a stored copy that Go found equal by content ("" and
	// "" when none).
	CPs []any
}

// importFields is the number of ARGV values per checkpoint of an import.
const importFields = 9

// importScript stores one import batch, after the writer check, the id
// checks (an id stored in another thread, or stored here with other bytes)
// and the head check. A stored checkpoint whose bytes differ from the
// batch's may still hold equal content (nil and empty slices encode apart),
// so instead of failing the script replies {"COMPARE", index, parent,
// header, body, conversation, …} for Go to compare; Go repeats the batch
// with the stored body and conversation of those it found equal. It
// replies {"ok", newly written count}.
var importScript = newScript[importArgs]("import", true, `
if redis.call('EXISTS', K.op) == 1 then return {'ok', redis.call('GET', K.op)} end
local lost = writer_lost(K.thread, A.token, A.fence, now_ms(A.now))
if lost then return lost end
local new, cmp = {}, {'COMPARE'}
for i = A.cps, #ARGV, 9 do
  local id = ARGV[i]
  local c = redis.call('HMGET', A.cp .. id, 't', 'p', 'h', 'b', 'v')
  if c[1] then
    if c[1] ~= A.threadid then return {'DUPLICATE_ID', id, c[1]} end
    local same = c[2] == ARGV[i + 1] and c[3] == ARGV[i + 2] and
      ((c[4] == ARGV[i + 3] and c[5] == ARGV[i + 5]) or
       (ARGV[i + 7] ~= '' and c[4] == ARGV[i + 7] and c[5] == ARGV[i + 8]))
    if not same then
      cmp[#cmp + 1] = (i - A.cps) / 9
      for j = 2, 5 do cmp[#cmp + 1] = c[j] end
    end
  else
    new[#new + 1] = i
  end
end
if #cmp > 1 then return cmp end
if A.sethead == '1' then
  local head = redis.call('HGET', K.thread, 'h') or ''
  if head ~= '' and head ~= A.head then return {'STALE_HEAD', head} end
end
for _, i in ipairs(new) do
  redis.call('HSET', A.cp .. ARGV[i], 't', A.threadid, 'p', ARGV[i + 1], 'h', ARGV[i + 2], 'b', ARGV[i + 3],
    'k', ARGV[i + 4], 'v', ARGV[i + 5], 'l', ARGV[i + 6])
  redis.call('ZADD', K.list, 0, ARGV[i + 6])
  add_refs(K.refs, K.refkeys, ARGV[i + 4])
end
if A.sethead == '1' then
  if A.head == '' then redis.call('HDEL', K.thread, 'h') else redis.call('HSET', K.thread, 'h', A.head) end
end
if A.hastranscript == '1' then redis.call('SET', K.transcript, A.messages) end
sync_thread(K.threads, K.thread, K.list, K.transcript, A.threadid)
redis.call('SET', K.op, #new, 'PX', A.ttl)
return {'ok', #new}
`)

// pageArgs are pageScript's parameters.
type pageArgs struct {
	List    key
	CP      string
	From    string // a ZRANGEBYLEX bound: where the page starts
	Limit   int
	Reverse bool
}

// pageScript reads one page of a thread's list index and the checkpoints
// it names, in one atomic step: up to Limit members from From, forward
// (ZRANGEBYLEX) or backward (ZREVRANGEBYLEX). A member is the 8-byte
// position of createdAt followed by the id (see orderMember), so the
// sorted set's byte order is List order and a cursor's position is one lex
// bound. Reply: id, parent, header, body, conversation per checkpoint.
var pageScript = newScript[pageArgs]("page", false, `
local ms
if A.reverse == '1' then
  ms = redis.call('ZREVRANGEBYLEX', K.list, A.from, '-', 'LIMIT', 0, tonumber(A.limit))
else
  ms = redis.call('ZRANGEBYLEX', K.list, A.from, '+', 'LIMIT', 0, tonumber(A.limit))
end
local out = {}
for _, m in ipairs(ms) do
  local id = string.sub(m, 9)
  local c = redis.call('HMGET', A.cp .. id, 'p', 'h', 'b', 'v')
  out[#out + 1] = id
  for i = 1, 4 do out[#out + 1] = c[i] end
end
return out
`)

// blobPageArgs are blobPageScript's parameters.
type blobPageArgs struct {
	Refs, RefKeys key
	From          string // a ZRANGEBYLEX bound
	Limit         int
}

// blobPageScript reads one page of blob references: up to Limit keys from
// From with their counts, in one atomic step. Reply: key, count per key.
var blobPageScript = newScript[blobPageArgs]("blobPage", false, `
local keys = redis.call('ZRANGEBYLEX', K.refkeys, A.from, '+', 'LIMIT', 0, tonumber(A.limit))
if #keys == 0 then return {} end
local counts = redis.call('HMGET', K.refs, unpack(keys))
local out = {}
for i, k in ipairs(keys) do
  out[#out + 1] = k
  out[#out + 1] = counts[i]
end
return out
`)

// upsertInstanceArgs are upsertInstanceScript's parameters.
type upsertInstanceArgs struct {
	Record, Op                               key
	Provider, SandboxID, ThreadID, UpdatedAt string
	LatestSnapshot, LatestRun                string // "" = absent
	TTL                                      string
}

// upsertInstanceScript replaces an instance record: the old hash goes, so
// optional fields left out are cleared, never merged. Its op key keeps a
// resend from writing again over a later Upsert or Delete.
var upsertInstanceScript = newScript[upsertInstanceArgs]("upsertInstance", false, `
if redis.call('EXISTS', K.op) == 1 then return {'ok'} end
redis.call('SET', K.op, '1', 'PX', A.ttl)
redis.call('DEL', K.record)
local f = {'p', A.provider, 's', A.sandboxid, 't', A.threadid, 'u', A.updatedat}
if A.latestsnapshot ~= '' then f[#f + 1] = 'ls'; f[#f + 1] = A.latestsnapshot end
if A.latestrun ~= '' then f[#f + 1] = 'lr'; f[#f + 1] = A.latestrun end
redis.call('HSET', K.record, unpack(f))
return {'ok'}
`)

// deleteInstanceArgs are deleteInstanceScript's parameters.
type deleteInstanceArgs struct {
	Record, Op key
	TTL        string
}

// deleteInstanceScript deletes an instance record, once: a resend that
// came after a later Upsert must not delete that record.
var deleteInstanceScript = newScript[deleteInstanceArgs]("deleteInstance", false, `
if redis.call('EXISTS', K.op) == 1 then return {'ok'} end
redis.call('DEL', K.record)
redis.call('SET', K.op, '1', 'PX', A.ttl)
return {'ok'}
`)
