package redis

import goredis "github.com/redis/go-redis/v9"

// The scripts run atomically on the server. Every key they touch shares the
// hash tag {app|user}, so on Redis Cluster they run on one node; the app:
// scope hash is passed only when the client is not a cluster client (see
// Store.oneNode). A session script is given one key of the tag (the
// session's meta hash, which routes it on Cluster) and builds the others
// from the base "<prefix>{app|user}:" and the ids passed in ARGV: the
// client does not build, and the server does not parse, keys it can
// derive.
//
// Deltas travel as "<n> k1 v1 ... kn vn" groups in ARGV, values already JSON.
const luaLib = `
-- unlisted reports whether a session id is unlisted (sessions.Unlisted).
local function unlisted(id)
  return string.sub(id, 1, 1) == '~'
end

local function apply(key, argv, i)
  local n = tonumber(argv[i]); i = i + 1
  for _ = 1, n do
    if key then redis.call('HSET', key, argv[i], argv[i + 1]) end
    i = i + 2
  end
  return i
end

-- touch renews the TTL of every session of a tree (root and sub-conversations)
-- and of the user's index and user: hash.
local function touch(ttl, base, root, tree, index, user)
  if ttl <= 0 then return end
  local ids = redis.call('SMEMBERS', tree)
  ids[#ids + 1] = root
  for _, sid in ipairs(ids) do
    redis.call('PEXPIRE', base .. 'meta:' .. sid, ttl)
    redis.call('PEXPIRE', base .. 'state:' .. sid, ttl)
    redis.call('PEXPIRE', base .. 'events:' .. sid, ttl)
  end
  redis.call('PEXPIRE', tree, ttl)
  redis.call('PEXPIRE', index, ttl)
  redis.call('PEXPIRE', user, ttl)
end
`

// lineLib is what the scripts of a session's lease and line share. A
// session's line is the ZSET line:<id> (ticket token -> its Seq) and the
// ZSET waiting:<id> (token -> the time, in ms of the server's clock, by
// which its waiter must poll again, else it is dropped from the line).
// While the line is not empty a released lease is not deleted but set to
// the marker "line" (keeping the lease's expiry): the open script and SET
// NX find it busy, and only the line's first ticket takes it.
const lineLib = `
local function nowMs()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- lineOf is the line of the lease lock "<prefix>{<app>|<user>}:lock:<id>":
-- the prefix has no braces and app and user are escaped, so the first
-- "}:lock:" ends the hash tag.
local function lineOf(lock)
  local i = string.find(lock, '}:lock:', 1, true)
  return string.sub(lock, 1, i + 1) .. 'line:' .. string.sub(lock, i + 7)
end

-- free releases the lease lock: to the line when it has waiters, whom it
-- wakes (see lineBell).
local function free(lock)
  local line = lineOf(lock)
  if redis.call('ZCARD', line) > 0 then
    redis.call('SET', lock, 'line', 'KEEPTTL')
    redis.call('PUBLISH', line, '')
  else
    redis.call('DEL', lock)
  end
end

-- evict drops the waiters that stopped polling, and the marker of a
-- line left empty.
local function evict(lock, line, waiting, now)
  local gone = 0
  for _, tok in ipairs(redis.call('ZRANGE', line, 0, -1)) do
    local by = redis.call('ZSCORE', waiting, tok)
    if not by or tonumber(by) <= now then
      redis.call('ZREM', line, tok)
      redis.call('ZREM', waiting, tok)
      gone = gone + 1
    end
  end
  local left = redis.call('ZCARD', line)
  if left == 0 and redis.call('GET', lock) == 'line' then redis.call('DEL', lock) end
  if gone > 0 and left > 0 then redis.call('PUBLISH', line, '') end
end

-- alive moves a waiter's deadline, and the line's expiry, to now + ms.
local function alive(line, waiting, tok, now, ms)
  redis.call('ZADD', waiting, now + ms, tok)
  redis.call('PEXPIRE', line, ms)
  redis.call('PEXPIRE', waiting, ms)
end
`

// openScript reads a session, and may take its run lease first and create
// it when it is missing, in one step. KEYS meta [app]; ARGV base id root
// token lockMillis mode nowMicros ttlMillis since recent, then, in mode
// "1" and "2", the session, user and app delta groups of the create.
//
//   - token: with one (non-empty), the run lease lock:<id> is taken first (SET
//     PX lockMillis) unless another token holds it: then the reply is {0}
//     and nothing else is done. A lease this token holds already (a retried
//     call) is kept as it is.
//   - mode: "0" reads the session; "1" creates it first when it is missing,
//     as Create does (state, user: and app: state, index entry unless
//     unlisted, tree membership, TTLs), then reads it; "2" creates it when
//     it is missing and answers {1, 0} when it exists, without reading it.
//   - since ("1": from the latest compaction event, meta's compaction) and
//     recent (0: no limit) select the events read; see
//     sessions.Window.Start. A session created by this call has none.
//
// Returns {0} (busy), {1} (no such session; a lease taken stays held),
// {1, 0} (mode 2, the session exists), or {1, created, updated, state,
// events, user[, app]}: created is 1 when this call created it, updated
// meta's update time, state, user and app the hashes' fields and values
// (app only with the app key), events the window's event JSON.
var openScript = newLuaScript(luaLib + `
local base, id, root, token = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
if token ~= '' then
  local lock = base .. 'lock:' .. id
  local held = redis.call('GET', lock)
  if not held then
    redis.call('SET', lock, token, 'PX', ARGV[5])
  elseif held ~= token then
    return {0}
  end
end
local meta, state, events, user = KEYS[1], base .. 'state:' .. id, base .. 'events:' .. id, base .. 'user'
local mode, created = ARGV[6], 0
if mode ~= '0' then
  if redis.call('EXISTS', meta) == 1 then
    if mode == '2' then return {1, 0} end
  else
    local now, index, tree = ARGV[7], base .. 'index', base .. 'tree:' .. root
    redis.call('DEL', state, events)
    redis.call('HSET', meta, 'created', now, 'updated', now, 'last', '')
    local i = apply(state, ARGV, 11)
    i = apply(user, ARGV, i)
    apply(KEYS[2], ARGV, i)
    if not unlisted(id) then redis.call('ZADD', index, now, id) end
    if id ~= root then redis.call('SADD', tree, id) end
    touch(tonumber(ARGV[8]), base, root, tree, index, user)
    created = 1
  end
end
local m = redis.call('HMGET', meta, 'updated', 'compaction')
if not m[1] then return {1} end
local evs = {}
if created == 0 then
  local start = 0
  if ARGV[9] == '1' and m[2] then start = tonumber(m[2]) end
  local recent = tonumber(ARGV[10])
  if recent > 0 then
    local len = redis.call('LLEN', events)
    if len - recent > start then start = len - recent end
  end
  evs = redis.call('LRANGE', events, start, -1)
end
local out = {1, created, m[1], redis.call('HGETALL', state), evs, redis.call('HGETALL', user)}
if KEYS[2] then out[7] = redis.call('HGETALL', KEYS[2]) end
return out
`)

// appendLib is appendScript's work as a function, appendBatch, which
// appendEndScript calls too. appendScript stores a batch of events on a
// session, and may release
// the session's run lease with it. KEYS meta [app] (an unlisted session's
// append leaves the index alone); ARGV base id root ttlMillis lastEventID
// n compaction compactionEnd token, then for each of the n events
// updatedMicros eventJSON and its session, user and app delta groups.
// compaction is the place in the batch (from 1; 0: none) of its last
// compaction event and compactionEnd that event's endTimestamp (float
// seconds); where reads since the latest compaction start becomes the
// meta field compaction: the index of that event, or of the first of the
// events stored just before it with a later timestamp
// (sessions.CompactionStart; they are read 8 at a time from the tail).
// Appends the events in order as one step, unless lastEventID (the id of the batch's last event) is
// already the session's last event: a retried append whose first reply
// was lost, which stored the whole batch. Then, with a non-empty token, it
// releases the lease lock:<id> (see lineLib's free) if that token holds
// it. Returns {status,
// released}: status 0 when the session does not exist (nothing is done,
// the lease is left), 1 when appended, 2 for a retry; released 1 when the
// lease was deleted.
const appendLib = luaLib + lineLib + `
-- uncovered reports whether the stored event JSON e is one a compaction
-- ending at time stop does not cover: not a compaction, and later.
local function uncovered(e, stop)
  local ok, ev = pcall(cjson.decode, e)
  if not ok or type(ev) ~= 'table' then return false end
  if type(ev.actions) == 'table' and type(ev.actions.compaction) == 'table' then return false end
  return type(ev.timestamp) == 'number' and ev.timestamp > stop
end

-- windowStart is where reads since the compaction event at index last of
-- the list key start (see sessions.CompactionStart).
local function windowStart(key, last, stop)
  local len, start = last + 1, last
  while start > 0 do
    local lo = math.max(start - 8, 0)
    local chunk = redis.call('LRANGE', key, lo - len, start - 1 - len)
    for x = #chunk, 1, -1 do
      if not uncovered(chunk[x], stop) then return start end
      start = start - 1
    end
  end
  return start
end

-- appendBatch is the append (KEYS and ARGV as appendScript's, ARGV
-- beyond the events' groups left alone): it returns {status, released}.
local function appendBatch()
  if redis.call('EXISTS', KEYS[1]) == 0 then return {0, 0} end
  local base, id, root, ttl, lastid, n, comp, compEnd, token = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4]), ARGV[5], tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8]), ARGV[9]
  local status = 2
  if lastid == '' or redis.call('HGET', KEYS[1], 'last') ~= lastid then
    status = 1
    local state, events, index, user, tree = base .. 'state:' .. id, base .. 'events:' .. id, base .. 'index', base .. 'user', base .. 'tree:' .. root
    local i, now = 10, nil
    for j = 1, n do
      now = ARGV[i]
      local len = redis.call('RPUSH', events, ARGV[i + 1])
      if j == comp then redis.call('HSET', KEYS[1], 'compaction', windowStart(events, len - 1, compEnd)) end
      i = apply(state, ARGV, i + 2)
      i = apply(user, ARGV, i)
      i = apply(KEYS[2], ARGV, i)
    end
    redis.call('HSET', KEYS[1], 'updated', now, 'last', lastid)
    if not unlisted(id) then redis.call('ZADD', index, now, id) end
    touch(ttl, base, root, tree, index, user)
  end
  local released = 0
  if token ~= '' then
    local lock = base .. 'lock:' .. id
    if redis.call('GET', lock) == token then
      free(lock)
      released = 1
    end
  end
  return {status, released}
end
`

var appendScript = newLuaScript(appendLib + `return appendBatch()`)

// appendEndScript is appendScript, then, once it released the lease, the
// end of a run's log with its index entry, as runWriteScript writes them,
// in the same step (Store.AppendEventsReleaseEnd; a single node, where a
// script may touch keys of any slot). KEYS meta app frames index; ARGV
// appendScript's, then runWriteScript's nine last (its end "1"). Returns
// {status, released} as appendScript when it did not release the lease
// (lost, or the session does not exist: nothing of the run is written),
// else {status, 1, last}: last the run write's reply, 0 when it refused
// frames that would leave a hole.
var appendEndScript = newLuaScript(appendLib + runWriteLib + `
local r = appendBatch()
if r[2] == 1 then
  r[3] = writeRun(KEYS[3], KEYS[4], ARGV, #ARGV - 9) or 0
end
return r
`)

// deleteScript: KEYS meta index tree; ARGV base id. Deletes the session and
// every sub-conversation under it. Returns 0 when the session does not exist.
var deleteScript = newLuaScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local base, id = ARGV[1], ARGV[2]
local doomed = {id}
local prefix = id .. '/'
for _, sid in ipairs(redis.call('SMEMBERS', KEYS[3])) do
  if string.sub(sid, 1, #prefix) == prefix then doomed[#doomed + 1] = sid end
end
for _, sid in ipairs(doomed) do
  redis.call('DEL', base .. 'meta:' .. sid, base .. 'state:' .. sid, base .. 'events:' .. sid)
  redis.call('ZREM', KEYS[2], sid)
  redis.call('SREM', KEYS[3], sid)
end
return 1
`)

// listScript: KEYS index user; ARGV base offset count (0: all). Index
// entries whose session expired are removed on the way, and so are those of
// unlisted sessions (written before they were unlisted), without reading
// the sessions. Returns
// {more, user, {{id, updated, state}, ...}}.
var listScript = newLuaScript(luaLib + `
local base, offset, count = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local out, stale = {}, {}
local pos, done = offset, false
while not done do
  local ids = redis.call('ZREVRANGE', KEYS[1], pos, pos + 99)
  if #ids == 0 then break end
  for _, sid in ipairs(ids) do
    local updated = false
    if not unlisted(sid) then updated = redis.call('HGET', base .. 'meta:' .. sid, 'updated') end
    if updated then
      out[#out + 1] = {sid, updated, redis.call('HGETALL', base .. 'state:' .. sid)}
      if count > 0 and #out == count then done = true; break end
    else
      stale[#stale + 1] = sid
    end
  end
  pos = pos + #ids
end
for _, sid in ipairs(stale) do redis.call('ZREM', KEYS[1], sid) end
local more = 0
if count > 0 and redis.call('ZCARD', KEYS[1]) > offset + #out then more = 1 end
return {more, redis.call('HGETALL', KEYS[2]), out}
`)

// renewScript: KEYS lock; ARGV token ttlMillis. Extends the lease only while
// token still holds it; returns 0 when the lease was lost.
var renewScript = goredis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
`)

// releaseScript: KEYS lock; ARGV token. Releases the lease (see lineLib's
// free) only while token still holds it.
var releaseScript = goredis.NewScript(lineLib + `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  free(KEYS[1])
  return 1
end
return 0
`)

// joinScript: KEYS lock line waiting seq; ARGV token max aliveMillis
// seqMillis. Puts token at the end of the line, numbered by the counter
// seq (kept seqMillis after its last use), unless max (> 0) waiters are in
// it. Returns the ticket's Seq, or -1 when the line is full.
var joinScript = goredis.NewScript(lineLib + `
local now = nowMs()
evict(KEYS[1], KEYS[2], KEYS[3], now)
local max = tonumber(ARGV[2])
if max > 0 and redis.call('ZCARD', KEYS[2]) >= max then return -1 end
local seq = redis.call('INCR', KEYS[4])
redis.call('PEXPIRE', KEYS[4], ARGV[4])
redis.call('ZADD', KEYS[2], seq, ARGV[1])
alive(KEYS[2], KEYS[3], ARGV[1], now, tonumber(ARGV[3]))
return seq
`)

// takeScript: KEYS lock line waiting; ARGV token lockMillis aliveMillis.
// One poll of a ticket: it takes the lease (as Acquire's SET, with
// lockMillis) when it is first in line and the lease is free or the
// line's marker, and leaves the line. Returns 1 when token holds the lease
// (also when a retried call took it already), 0 when it must wait, -1 when
// it is no longer in line (dropped by a later ticket's DropAhead, or it
// stopped polling for aliveMillis).
var takeScript = goredis.NewScript(lineLib + `
if redis.call('GET', KEYS[1]) == ARGV[1] then return 1 end
local now = nowMs()
evict(KEYS[1], KEYS[2], KEYS[3], now)
if not redis.call('ZSCORE', KEYS[2], ARGV[1]) then return -1 end
local head = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
local cur = redis.call('GET', KEYS[1])
if head ~= ARGV[1] or (cur and cur ~= 'line') then
  alive(KEYS[2], KEYS[3], ARGV[1], now, tonumber(ARGV[3]))
  return 0
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
return 1
`)

// dropAheadScript: KEYS line waiting; ARGV token. Takes the tokens ahead
// of token out of the line (their next poll finds them out of it, and the
// line's message wakes them). Returns how many, or -1 when token is not in
// the line.
var dropAheadScript = goredis.NewScript(`
local mine = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not mine then return -1 end
local ahead = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. mine)
for _, tok in ipairs(ahead) do
  redis.call('ZREM', KEYS[1], tok)
  redis.call('ZREM', KEYS[2], tok)
end
if #ahead > 0 then redis.call('PUBLISH', KEYS[1], '') end
return #ahead
`)

// leaveScript: KEYS lock line waiting; ARGV token. Takes token out of the
// line, waking the waiters left (the next may go); the marker goes with
// the line's last waiter.
var leaveScript = goredis.NewScript(`
local was = redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZREM', KEYS[3], ARGV[1])
if redis.call('ZCARD', KEYS[2]) == 0 then
  if redis.call('GET', KEYS[1]) == 'line' then redis.call('DEL', KEYS[1]) end
elseif was == 1 then
  redis.call('PUBLISH', KEYS[2], '')
end
return 1
`)
