package redisstore

// The Lua scripts, one per driver call that reads more than one key or
// writes anything. A script checks before its first write, so a call that
// fails changed nothing.
//
// Conventions shared by every script:
//
//   - A record is a hash with one field per JSON member of the record, the
//     member's raw JSON as its value, so that a patch is HSET and HDEL of
//     the fields it names and Lua never parses or re-encodes JSON (cjson
//     would turn 2^53−1 into a float). Fields whose name starts with '~'
//     are the driver's: the record's members in the indexes ('~m', '~t',
//     '~r') and a blob's bucket object ('~o').
//   - Pairs at the end of ARGV are (field, raw JSON) to set; an empty value
//     deletes the field (no raw JSON value is empty).
//   - Every index is a sorted set with all scores 0, read with the lex
//     commands: a member is scope(id) ‖ time(8 bytes) ‖ id (see keys.go),
//     whose byte order is the contract's order. Lua never compares strings
//     with <, whose order is the server's locale.
//   - A write that is not naturally idempotent records its reply under its
//     op key (the engine's "o:<kind>:<token>", kept OpTokenTTL) and a resend of the
//     same call (go-redis resending after a lost reply) returns that reply
//     without checking or writing again. The reply is kept as cjson of an
//     array of strings and integers, which cjson round-trips.
//   - The clock: A.now is the driver's Options.Now in ms, or "" for the
//     server's TIME, read inside the script so that every process using
//     the store judges leases by one clock.

import "github.com/redis/go-redis/v9"

// persistLib is prepended to every persistence script.
const persistLib = nowLua + `
local function set_pairs(rec, first)
  for i = first, #ARGV, 2 do
    if ARGV[i + 1] == '' then redis.call('HDEL', rec, ARGV[i]) else redis.call('HSET', rec, ARGV[i], ARGV[i + 1]) end
  end
end
local function replay(op)
  local r = redis.call('GET', op)
  if r then return cjson.decode(r) end
  return nil
end
local function record(op, ttl, reply)
  redis.call('SET', op, cjson.encode(reply), 'PX', ttl)
  return reply
end
`

func newPersistScript(src string) *redis.Script { return redis.NewScript(persistLib + src) }

// createRunScript: KEYS rec, runs, active, op; ARGV status, member, ttl,
// pairs…. An insert records 'new' under its op key: a resend after a lost
// reply must answer 'new' too, not the run as an update that came between
// the two sends left it (plinz's runs history caught that). A resume
// writes nothing.
var createRunScript = newPersistScript(`
local r = replay(KEYS[4])
if r then return r end
if redis.call('EXISTS', KEYS[1]) == 1 then return {'found', redis.call('HGETALL', KEYS[1])} end
set_pairs(KEYS[1], 4)
redis.call('HSET', KEYS[1], '~m', ARGV[2])
redis.call('ZADD', KEYS[2], 0, ARGV[2])
if ARGV[1] == 'running' then redis.call('ZADD', KEYS[3], 0, ARGV[2]) end
return record(KEYS[4], ARGV[3], {'new'})
`)

// updateRunScript: KEYS rec, active, reclaim, op; ARGV ttl, mode
// (keep|set|clear of detachedSince), reclaim member, pairs….
var updateRunScript = newPersistScript(`
local r = replay(KEYS[4])
if r then return r end
if redis.call('EXISTS', KEYS[1]) == 0 then return record(KEYS[4], ARGV[1], {0}) end
local old = redis.call('HGET', KEYS[1], '~r')
set_pairs(KEYS[1], 4)
local rm = old
if ARGV[2] == 'set' then
  rm = ARGV[3]
  redis.call('HSET', KEYS[1], '~r', rm)
elseif ARGV[2] == 'clear' then
  rm = false
  redis.call('HDEL', KEYS[1], '~r')
end
local am = redis.call('HGET', KEYS[1], '~m')
local running = redis.call('HGET', KEYS[1], 'status') == '"running"'
if running then redis.call('ZADD', KEYS[2], 0, am) else redis.call('ZREM', KEYS[2], am) end
if old then redis.call('ZREM', KEYS[3], old) end
if rm and running then redis.call('ZADD', KEYS[3], 0, rm) end
return record(KEYS[4], ARGV[1], {1})
`)

// createGenRunScript: KEYS rec, gens, op; ARGV member, ttl, pairs…; as
// createRunScript.
var createGenRunScript = newPersistScript(`
local r = replay(KEYS[3])
if r then return r end
if redis.call('EXISTS', KEYS[1]) == 1 then return {'found', redis.call('HGETALL', KEYS[1])} end
set_pairs(KEYS[1], 3)
redis.call('HSET', KEYS[1], '~m', ARGV[1])
redis.call('ZADD', KEYS[2], 0, ARGV[1])
return record(KEYS[3], ARGV[2], {'new'})
`)

// patchScript: KEYS rec, op; ARGV ttl, pairs…. A patch of a record whose
// indexes it cannot move (generation runs).
var patchScript = newPersistScript(`
local r = replay(KEYS[2])
if r then return r end
if redis.call('EXISTS', KEYS[1]) == 0 then return record(KEYS[2], ARGV[1], {0}) end
set_pairs(KEYS[1], 2)
return record(KEYS[2], ARGV[1], {1})
`)

// listScript: KEYS index; ARGV min, max, limit, record key prefix, id
// offset (1-based byte where the id starts in a member), rev ("1": from
// the end). Replies with the HGETALL of each listed record, in index
// order; a member whose record is missing replies an empty array there.
var listScript = newPersistScript(`
local ms
if ARGV[6] == '1' then
  ms = redis.call('ZREVRANGEBYLEX', KEYS[1], ARGV[2], ARGV[1], 'LIMIT', 0, tonumber(ARGV[3]))
else
  ms = redis.call('ZRANGEBYLEX', KEYS[1], ARGV[1], ARGV[2], 'LIMIT', 0, tonumber(ARGV[3]))
end
local out = {}
local off = tonumber(ARGV[5])
for i, m in ipairs(ms) do out[i] = redis.call('HGETALL', ARGV[4] .. string.sub(m, off)) end
return out
`)

// createInterruptScript: KEYS rec, thread, run, threadPending,
// runPending; ARGV thread member, run member, pairs….
var createInterruptScript = newPersistScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
set_pairs(KEYS[1], 3)
redis.call('HSET', KEYS[1], '~t', ARGV[1], '~r', ARGV[2])
redis.call('ZADD', KEYS[2], 0, ARGV[1])
redis.call('ZADD', KEYS[3], 0, ARGV[2])
redis.call('ZADD', KEYS[4], 0, ARGV[1])
redis.call('ZADD', KEYS[5], 0, ARGV[2])
return 1
`)

// finishInterruptScript (resolve, cancel): KEYS rec, threadPending,
// runPending, op; ARGV ttl, pairs….
var finishInterruptScript = newPersistScript(`
local r = replay(KEYS[4])
if r then return r end
if redis.call('EXISTS', KEYS[1]) == 0 then return record(KEYS[4], ARGV[1], {0}) end
set_pairs(KEYS[1], 2)
local m = redis.call('HMGET', KEYS[1], '~t', '~r')
redis.call('ZREM', KEYS[2], m[1])
redis.call('ZREM', KEYS[3], m[2])
return record(KEYS[4], ARGV[1], {1})
`)

// commitScript: KEYS op, threadPending, runPending, rec…; ARGV ttl,
// resolvedAt, then per record its status JSON and response ("" absent).
// Every check comes before the first write: all or nothing.
var commitScript = newPersistScript(`
local r = replay(KEYS[1])
if r then return r end
for i = 4, #KEYS do
  local st = redis.call('HGET', KEYS[i], 'status')
  if not st then return {'NOT_FOUND', i - 3} end
  if st ~= '"pending"' then return {'NOT_PENDING', i - 3, st} end
end
for i = 4, #KEYS do
  local j = 3 + 2 * (i - 4)
  redis.call('HSET', KEYS[i], 'status', ARGV[j], 'resolvedAt', ARGV[2])
  if ARGV[j + 1] ~= '' then redis.call('HSET', KEYS[i], 'response', ARGV[j + 1]) end
  local m = redis.call('HMGET', KEYS[i], '~t', '~r')
  redis.call('ZREM', KEYS[2], m[1])
  redis.call('ZREM', KEYS[3], m[2])
end
return record(KEYS[1], ARGV[1], {'ok'})
`)

// metaScript: KEYS meta, op; ARGV ttl, field, value ("" deletes).
var metaScript = newPersistScript(`
local r = replay(KEYS[2])
if r then return r end
if ARGV[3] == '' then redis.call('HDEL', KEYS[1], ARGV[2]) else redis.call('HSET', KEYS[1], ARGV[2], ARGV[3]) end
return record(KEYS[2], ARGV[1], {'ok'})
`)

// saveArtifactScript: KEYS rec, thread, run, op; ARGV ttl, thread member,
// run member, pairs…. An upsert replaces the whole record and moves it in
// both indexes.
var saveArtifactScript = newPersistScript(`
local r = replay(KEYS[4])
if r then return r end
local m = redis.call('HMGET', KEYS[1], '~t', '~r')
if m[1] then redis.call('ZREM', KEYS[2], m[1]) end
if m[2] then redis.call('ZREM', KEYS[3], m[2]) end
redis.call('DEL', KEYS[1])
set_pairs(KEYS[1], 4)
redis.call('HSET', KEYS[1], '~t', ARGV[2], '~r', ARGV[3])
redis.call('ZADD', KEYS[2], 0, ARGV[2])
redis.call('ZADD', KEYS[3], 0, ARGV[3])
return record(KEYS[4], ARGV[1], {'ok'})
`)

// deleteArtifactScript: KEYS rec, thread, run. Deleting twice is deleting
// once, so no op key.
var deleteArtifactScript = newPersistScript(`
local m = redis.call('HMGET', KEYS[1], '~t', '~r')
if m[1] then redis.call('ZREM', KEYS[2], m[1]) end
if m[2] then redis.call('ZREM', KEYS[3], m[2]) end
redis.call('DEL', KEYS[1])
return 1
`)

// deleteRunArtifactsScript: KEYS run, thread, op; ARGV ttl, min, max,
// limit, record key prefix, id offset. The count is recorded: a resend
// must report what the first send removed, or the caller's loop would
// stop early.
var deleteRunArtifactsScript = newPersistScript(`
local r = replay(KEYS[3])
if r then return r end
local ms = redis.call('ZRANGEBYLEX', KEYS[1], ARGV[2], ARGV[3], 'LIMIT', 0, tonumber(ARGV[4]))
local off = tonumber(ARGV[6])
for _, m in ipairs(ms) do
  local rec = ARGV[5] .. string.sub(m, off)
  local t = redis.call('HGET', rec, '~t')
  if t then redis.call('ZREM', KEYS[2], t) end
  redis.call('ZREM', KEYS[1], m)
  redis.call('DEL', rec)
end
return record(KEYS[3], ARGV[1], {#ms})
`)

// putBlobScript: KEYS rec, blobs, op; ARGV ttl, blob key, object,
// createdAt, pairs…. Recorded: a resend must not report the first send's
// own object as the replaced one (the caller would delete the new bytes).
var putBlobScript = newPersistScript(`
local r = replay(KEYS[3])
if r then return r end
local cur = redis.call('HMGET', KEYS[1], 'createdAt', '~o')
local created, replaced = ARGV[4], ''
if cur[1] then created, replaced = cur[1], cur[2] or '' end
redis.call('DEL', KEYS[1])
set_pairs(KEYS[1], 5)
redis.call('HSET', KEYS[1], 'createdAt', created, '~o', ARGV[3])
redis.call('ZADD', KEYS[2], 0, ARGV[2])
return record(KEYS[3], ARGV[1], {created, replaced})
`)

// deleteBlobScript: KEYS rec, blobs, op; ARGV ttl, blob key. Recorded: a
// resend must return the object, or its bytes would stay in the bucket.
var deleteBlobScript = newPersistScript(`
local r = replay(KEYS[3])
if r then return r end
local obj = redis.call('HGET', KEYS[1], '~o')
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[2])
return record(KEYS[3], ARGV[1], {obj or ''})
`)

// listBlobsScript: KEYS blobs; ARGV min, max, limit, record key prefix.
var listBlobsScript = newPersistScript(`
local ks = redis.call('ZRANGEBYLEX', KEYS[1], ARGV[1], ARGV[2], 'LIMIT', 0, tonumber(ARGV[3]))
local out = {}
for i, k in ipairs(ks) do out[i] = redis.call('HGETALL', ARGV[4] .. k) end
return out
`)
