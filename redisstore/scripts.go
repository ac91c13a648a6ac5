package redisstore

// The Lua scripts. Each write is one script, so its checks and its writes
// run as one atomic step on the server (a script that fails a check returns
// before its first write). Go runs the pure validations first and passes
// everything a script needs as arguments, including the time, read from
// Options.Now, so the server's clock never decides a lease.
//
// Scripts reply with an array whose first element is "ok" or the wire code
// of a contract error without its SANDBOX_SNAPSHOT_ prefix ("STALE_HEAD",
// "WRITER_LOST", …; see scriptError); the rest is the result or details.
//
// Thread hash fields (KEYS "t:<thread>"):
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
// Checkpoint hash fields (KEYS "c:<id>"): t thread, p parent ("" = none),
// h header, b body, v conversation (see codec.go), k the blob keys,
// '\n'-separated.
//
// Writes that change checkpoints first look for their operation key
// ("o:<token>"). It exists only when this very call already succeeded (a
// reply lost, the command resent); the script then returns the recorded
// result without checking or writing again. A failed call records nothing:
// it changed nothing, so checking again is correct.

import "github.com/redis/go-redis/v9"

// luaLib is prepended to every script that checks writers or counts blobs.
const luaLib = `
local function writer_lost(tkey, token, fence, now)
  local l = redis.call('HMGET', tkey, 'o', 'f', 'x')
  if not l[1] then return 'the thread has no lease' end
  if l[1] ~= token or l[2] ~= fence then return 'the thread has a newer lease (fence ' .. tostring(l[2]) .. ')' end
  if tonumber(now) >= tonumber(l[3]) then return 'the lease expired at ' .. l[3] .. ' ms' end
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
`

// appendScript: Append steps 3–6 and the write.
//
// KEYS: thread, members, checkpoint, refs, refkeys, op.
// ARGV: opTTL ms, now ms, token, fence, id, thread id, expected head,
// parent, score, header, body, blob keys, conversation.
var appendScript = redis.NewScript(luaLib + `
if redis.call('EXISTS', KEYS[6]) == 1 then return {'ok'} end
local lost = writer_lost(KEYS[1], ARGV[3], ARGV[4], ARGV[2])
if lost then return {'WRITER_LOST', lost} end
if redis.call('EXISTS', KEYS[3]) == 1 then return {'DUPLICATE_ID', ''} end
local head = redis.call('HGET', KEYS[1], 'h') or ''
if head ~= ARGV[7] then return {'STALE_HEAD', head} end
if ARGV[8] ~= ARGV[7] then return {'PARENT_MISMATCH', ''} end
redis.call('HSET', KEYS[3], 't', ARGV[6], 'p', ARGV[8], 'h', ARGV[10], 'b', ARGV[11], 'k', ARGV[12], 'v', ARGV[13])
redis.call('ZADD', KEYS[2], ARGV[9], ARGV[5])
redis.call('HSET', KEYS[1], 'h', ARGV[5])
add_refs(KEYS[4], KEYS[5], ARGV[12])
redis.call('SET', KEYS[6], '1', 'PX', ARGV[1])
return {'ok'}
`)

// deleteHeadScript: DeleteHead's writer and head checks and the delete.
//
// KEYS: thread, members, checkpoint, refs, refkeys, op.
// ARGV: opTTL ms, now ms, token, fence, id, thread id.
var deleteHeadScript = redis.NewScript(luaLib + `
if redis.call('EXISTS', KEYS[6]) == 1 then return {'ok'} end
local lost = writer_lost(KEYS[1], ARGV[3], ARGV[4], ARGV[2])
if lost then return {'WRITER_LOST', lost} end
local head = redis.call('HGET', KEYS[1], 'h') or ''
local c = redis.call('HMGET', KEYS[3], 't', 'p', 'k')
if head ~= ARGV[5] or c[1] ~= ARGV[6] then return {'NOT_HEAD', head} end
redis.call('DEL', KEYS[3])
redis.call('ZREM', KEYS[2], ARGV[5])
if c[2] == '' then redis.call('HDEL', KEYS[1], 'h') else redis.call('HSET', KEYS[1], 'h', c[2]) end
drop_refs(KEYS[4], KEYS[5], c[3])
redis.call('SET', KEYS[6], '1', 'PX', ARGV[1])
return {'ok'}
`)

// pruneScript: DeleteCheckpoints' writer check, the walk from the head and
// the deletes. The chain's checkpoint keys are found while walking, so they
// cannot be declared in KEYS; they share the store's hash tag, so the
// script stays within one cluster slot. The walk stops at a checkpoint of
// another thread, a missing one, or one already seen (an id reused after
// pruning can make a parent link point forward).
//
// KEYS: thread, members, refs, refkeys, op.
// ARGV: opTTL ms, now ms, token, fence, thread id, keep, checkpoint key prefix.
var pruneScript = redis.NewScript(luaLib + `
if redis.call('EXISTS', KEYS[5]) == 1 then return redis.call('LRANGE', KEYS[5], 0, -1) end
local lost = writer_lost(KEYS[1], ARGV[3], ARGV[4], ARGV[2])
if lost then return {'WRITER_LOST', lost} end
local keep = tonumber(ARGV[6])
local chain, seen = {}, {}
local id = redis.call('HGET', KEYS[1], 'h') or ''
while id ~= '' and not seen[id] do
  local c = redis.call('HMGET', ARGV[7] .. id, 't', 'p')
  if c[1] ~= ARGV[5] then break end
  seen[id] = true
  chain[#chain + 1] = id
  id = c[2]
end
local out = {'ok'}
for i = #chain, keep + 1, -1 do
  local cid = chain[i]
  local ck = ARGV[7] .. cid
  local k = redis.call('HGET', ck, 'k')
  redis.call('DEL', ck)
  redis.call('ZREM', KEYS[2], cid)
  drop_refs(KEYS[3], KEYS[4], k)
  out[#out + 1] = cid
end
for i = 1, #out, 1000 do
  redis.call('RPUSH', KEYS[5], unpack(out, i, math.min(i + 999, #out)))
end
redis.call('PEXPIRE', KEYS[5], ARGV[1])
return out
`)

// forkScript: ForkFromCheckpoint's checks after the pure ones, in the
// order of SPEC.md, and the copy. The body, conversation and blob keys are
// copied on the server; Go supplies the new header.
//
// KEYS: source checkpoint, thread, members, checkpoint, refs, refkeys, op.
// ARGV: opTTL ms, now ms, token, fence, source thread, destination thread,
// destination id, writer thread matches ("1"/"0"), score, header.
var forkScript = redis.NewScript(luaLib + `
if redis.call('EXISTS', KEYS[7]) == 1 then
  local c = redis.call('HMGET', KEYS[4], 'b', 'v')
  return {'ok', c[1], c[2]}
end
local src = redis.call('HMGET', KEYS[1], 't', 'b', 'k', 'v')
if not src[1] then return {'FORK_SOURCE_NOT_FOUND', ''} end
if src[1] ~= ARGV[5] then return {'FORK_SOURCE_THREAD_MISMATCH', src[1]} end
if ARGV[8] ~= '1' then return {'WRITER_LOST', 'the writer is for another thread'} end
local lost = writer_lost(KEYS[2], ARGV[3], ARGV[4], ARGV[2])
if lost then return {'WRITER_LOST', lost} end
if (redis.call('HGET', KEYS[2], 'h') or '') ~= '' or redis.call('ZCARD', KEYS[3]) > 0 then
  return {'FORK_DESTINATION_NOT_EMPTY', 'the destination thread has checkpoints'}
end
if redis.call('EXISTS', KEYS[4]) == 1 then
  return {'FORK_DESTINATION_NOT_EMPTY', 'the destination checkpoint id is used'}
end
redis.call('HSET', KEYS[4], 't', ARGV[6], 'p', '', 'h', ARGV[10], 'b', src[2], 'k', src[3], 'v', src[4])
redis.call('ZADD', KEYS[3], ARGV[9], ARGV[7])
redis.call('HSET', KEYS[2], 'h', ARGV[7])
add_refs(KEYS[5], KEYS[6], src[3])
redis.call('SET', KEYS[7], '1', 'PX', ARGV[1])
return {'ok', src[2], src[4]}
`)

// acquireScript takes a thread's lease. A retry of the same call finds its
// own token in place and returns that lease again.
//
// KEYS: thread. ARGV: token, now ms, expiry ms.
var acquireScript = redis.NewScript(`
local l = redis.call('HMGET', KEYS[1], 'o', 'f', 'x')
if l[1] == ARGV[1] then return {'ok', l[2], l[3]} end
if l[1] and tonumber(ARGV[2]) < tonumber(l[3]) then return {'WRITER_CONFLICT', l[3]} end
local f = redis.call('HINCRBY', KEYS[1], 'f', 1)
redis.call('HSET', KEYS[1], 'o', ARGV[1], 'x', ARGV[3])
return {'ok', f, ARGV[3]}
`)

// renewScript extends the live lease of the writer. Repeating it sets the
// same expiry again.
//
// KEYS: thread. ARGV: token, fence, now ms, expiry ms.
var renewScript = redis.NewScript(luaLib + `
local lost = writer_lost(KEYS[1], ARGV[1], ARGV[2], ARGV[3])
if lost then return {'WRITER_LOST', lost} end
redis.call('HSET', KEYS[1], 'x', ARGV[4])
return {'ok'}
`)

// releaseScript ends the writer's lease if it is still the thread's lease;
// expired or not, as memstore does. The fence stays.
//
// KEYS: thread. ARGV: token, fence.
var releaseScript = redis.NewScript(`
local l = redis.call('HMGET', KEYS[1], 'o', 'f')
if l[1] == ARGV[1] and l[2] == ARGV[2] then redis.call('HDEL', KEYS[1], 'o', 'x') end
return {'ok'}
`)

// listScript reads a thread's checkpoints in one atomic step, in the order
// of the members sorted set: by score (createdAt), ties by id bytes.
//
// KEYS: members. ARGV: checkpoint key prefix.
// Reply: id, parent, header, body, conversation for each checkpoint.
var listScript = redis.NewScript(`
local ids = redis.call('ZRANGE', KEYS[1], 0, -1)
local out = {}
for _, id in ipairs(ids) do
  local c = redis.call('HMGET', ARGV[1] .. id, 'p', 'h', 'b', 'v')
  out[#out + 1] = id
  for i = 1, 4 do out[#out + 1] = c[i] end
end
return out
`)

// blobPageScript reads one page of blob references: up to ARGV[2] keys
// from ARGV[1] (a ZRANGEBYLEX bound) with their counts, in one atomic step.
//
// KEYS: refs, refkeys. Reply: key, count for each key.
var blobPageScript = redis.NewScript(`
local keys = redis.call('ZRANGEBYLEX', KEYS[2], ARGV[1], '+', 'LIMIT', 0, tonumber(ARGV[2]))
if #keys == 0 then return {} end
local counts = redis.call('HMGET', KEYS[1], unpack(keys))
local out = {}
for i, k in ipairs(keys) do
  out[#out + 1] = k
  out[#out + 1] = counts[i]
end
return out
`)

// upsertInstanceScript replaces an instance record: the old hash goes, so
// optional fields left out are cleared, never merged.
//
// KEYS: record. ARGV: provider, providerSandboxId, threadId, updatedAt,
// latestSnapshotId ("" = absent), latestRunId ("" = absent).
var upsertInstanceScript = redis.NewScript(`
redis.call('DEL', KEYS[1])
local f = {'p', ARGV[1], 's', ARGV[2], 't', ARGV[3], 'u', ARGV[4]}
if ARGV[5] ~= '' then f[#f + 1] = 'ls'; f[#f + 1] = ARGV[5] end
if ARGV[6] ~= '' then f[#f + 1] = 'lr'; f[#f + 1] = ARGV[6] end
redis.call('HSET', KEYS[1], unpack(f))
return {'ok'}
`)
