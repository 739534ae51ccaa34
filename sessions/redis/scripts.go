package redis

import goredis "github.com/redis/go-redis/v9"

// The scripts run atomically on the server. Every key they touch shares the
// hash tag {app|user}, so on Redis Cluster they run on one node; the app:
// scope hash is passed only when the client is not a cluster client (see
// Store.sameSlotApp). Keys of other sessions in the same tag are built inside
// the scripts from the base "<prefix>{app|user}:" passed in ARGV.
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

// createScript: KEYS lock meta state events index user tree [app];
// ARGV token base id root createdMicros ttlMillis, then the session, user
// and app delta groups. An unlisted session (id starting with "~") gets no
// index entry. With a non-empty token, it creates only while that
// token holds the run lease (the lease taken in the same pipeline). Returns
// {0} when the session exists (or the lease is another's), else {1, state,
// user}.
var createScript = goredis.NewScript(luaLib + `
if ARGV[1] ~= '' and redis.call('GET', KEYS[1]) ~= ARGV[1] then return {0} end
if redis.call('EXISTS', KEYS[2]) == 1 then return {0} end
local base, id, root, now, ttl = ARGV[2], ARGV[3], ARGV[4], ARGV[5], tonumber(ARGV[6])
redis.call('DEL', KEYS[3], KEYS[4])
redis.call('HSET', KEYS[2], 'created', now, 'updated', now, 'last', '')
local i = apply(KEYS[3], ARGV, 7)
i = apply(KEYS[6], ARGV, i)
apply(KEYS[8], ARGV, i)
if not unlisted(id) then redis.call('ZADD', KEYS[5], now, id) end
if id ~= root then redis.call('SADD', KEYS[7], id) end
touch(ttl, base, root, KEYS[7], KEYS[5], KEYS[6])
return {1, redis.call('HGETALL', KEYS[3]), redis.call('HGETALL', KEYS[6])}
`)

// getScript: KEYS meta state events user; ARGV sinceCompaction ("1":
// from the latest compaction event, the meta field compaction) numRecent
// (0: no limit); see sessions.Window.Start. Returns {} when the session does
// not exist, else {meta, state, events, user}: the events of the window
// alone, read with one LRANGE from its start.
var getScript = goredis.NewScript(`
local meta = redis.call('HGETALL', KEYS[1])
if #meta == 0 then return {} end
local start = 0
if ARGV[1] == '1' then
  for i = 1, #meta, 2 do
    if meta[i] == 'compaction' then start = tonumber(meta[i + 1]) end
  end
end
local recent = tonumber(ARGV[2])
if recent > 0 then
  local len = redis.call('LLEN', KEYS[3])
  if len - recent > start then start = len - recent end
end
return {meta, redis.call('HGETALL', KEYS[2]), redis.call('LRANGE', KEYS[3], start, -1), redis.call('HGETALL', KEYS[4])}
`)

// appendScript: KEYS meta state events index user tree [app];
// (an unlisted session's append leaves the index alone);
// ARGV base id root ttlMillis lastEventID n compaction, then for each of
// the n events updatedMicros eventJSON and its session, user and app delta
// groups. compaction is the place in the batch (from 1; 0: none) of its
// last compaction event, whose index in the events list becomes the meta
// field compaction, where reads since the latest compaction start.
// Appends the events in order as one step. Returns 0 when the session does
// not exist, 1 when appended, 2 when lastEventID (the id of the batch's last
// event) is already the session's last event: a retried append whose first
// reply was lost, which stored the whole batch.
var appendScript = goredis.NewScript(luaLib + `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
local base, id, root, ttl, lastid, n, comp = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4]), ARGV[5], tonumber(ARGV[6]), tonumber(ARGV[7])
if lastid ~= '' and redis.call('HGET', KEYS[1], 'last') == lastid then return 2 end
local i, now = 8, nil
for j = 1, n do
  now = ARGV[i]
  local len = redis.call('RPUSH', KEYS[3], ARGV[i + 1])
  if j == comp then redis.call('HSET', KEYS[1], 'compaction', len - 1) end
  i = apply(KEYS[2], ARGV, i + 2)
  i = apply(KEYS[5], ARGV, i)
  i = apply(KEYS[7], ARGV, i)
end
redis.call('HSET', KEYS[1], 'updated', now, 'last', lastid)
if not unlisted(id) then redis.call('ZADD', KEYS[4], now, id) end
touch(ttl, base, root, KEYS[6], KEYS[4], KEYS[5])
return 1
`)

// deleteScript: KEYS meta index tree; ARGV base id. Deletes the session and
// every sub-conversation under it. Returns 0 when the session does not exist.
var deleteScript = goredis.NewScript(`
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
var listScript = goredis.NewScript(luaLib + `
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

// releaseWrittenScript: KEYS lock meta; ARGV token lastEventID (see
// Store.AppendEventsRelease). Deletes the
// lease while token holds it, and only once the session's last event is
// lastEventID (the turn's write is stored).
var releaseWrittenScript = goredis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] and redis.call('HGET', KEYS[2], 'last') == ARGV[2] then return redis.call('DEL', KEYS[1]) end
return 0
`)

// releaseScript: KEYS lock; ARGV token. Deletes the lease only while token
// still holds it.
var releaseScript = goredis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`)
