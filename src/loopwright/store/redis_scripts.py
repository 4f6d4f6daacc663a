"""The Lua scripts of :class:`~loopwright.store.redis_store.RedisStore` (its key layout
is described there). Each runs atomically on the server; the store registers them once
(``EVALSHA``, loaded again if the server lost them)."""

from __future__ import annotations

READ_SCRIPT = """
local prefix, out = ARGV[1], {}
for i = 2, #ARGV do
  local key = prefix .. ':s:' .. ARGV[i]
  local meta = redis.call('HMGET', key .. ':meta', 'message_count', 'last', 'created_at', 'checkpoints')
  for j = 1, 4 do
    out[#out + 1] = meta[j]
  end
  out[#out + 1] = redis.call('LINDEX', key .. ':msgs', -1)
end
return out
"""
"""What a batch of saves depends on, five values per session (``ARGV``: the prefix, then
the session ids): its message count, last checkpoint, creation time, checkpoint count
and last stored message (nil where absent). One command for the batch, not two per
session."""

WRITE_SCRIPT = """
local prefix, ttl, at = ARGV[1], tonumber(ARGV[2]), 3
local function take()
  at = at + 1
  return ARGV[at - 1]
end
local function key(sid, part)
  return prefix .. ':s:' .. sid .. ':' .. part
end
local saves = {}
for n = 1, tonumber(take()) do
  -- one take() per statement: the order of evaluation within one is not Lua's promise
  local s = {}
  s.sid = take()
  s.count = take()
  s.last = take()
  s.start = tonumber(take())
  s.stored = tonumber(take())
  s.number = take()
  s.now = take()
  s.done = take() == '1'
  s.drop = {}
  for j = 1, tonumber(take()) do
    s.drop[j] = take()
  end
  s.fields = {}
  for j = 1, tonumber(take()) * 2 do
    s.fields[j] = take()
  end
  local rows = tonumber(take())
  s.first, s.after = at, at + rows
  at = at + rows
  s.entry = take()
  saves[n] = s
end
local records, releases = {}, {}
for n = 1, tonumber(take()) do
  local r = {}
  r.key = key(take(), 'intents')
  r.call = take()
  r.record = take()
  records[n] = r
end
for n = 1, tonumber(take()) do
  local r = {}
  r.key = prefix .. ':lock:' .. take()
  r.owner = take()
  releases[n] = r
end
-- a key of the wrong type would fail its command half-way through the batch, after
-- the writes before it (a script is not rolled back): checked before anything is written
local wrong = {}
local function want(k, kind)
  local t = redis.call('TYPE', k).ok
  if t ~= 'none' and t ~= kind then
    wrong[#wrong + 1] = k
    wrong[#wrong + 1] = t
  end
end
if #saves > 0 then
  want(prefix .. ':sessions', 'zset')
  want(prefix .. ':unfinished', 'zset')
end
for _, s in ipairs(saves) do
  want(key(s.sid, 'msgs'), 'list')
  want(key(s.sid, 'ckpt'), 'hash')
  want(key(s.sid, 'meta'), 'hash')
end
for _, r in ipairs(records) do
  want(r.key, 'hash')
end
for _, r in ipairs(releases) do
  want(r.key, 'string')
end
if #wrong > 0 then
  return wrong
end
-- what WATCH would guard: every session as it was read, or nothing is written
for _, s in ipairs(saves) do
  local now = redis.call('HMGET', key(s.sid, 'meta'), 'message_count', 'last')
  if (now[1] or '') ~= s.count or (now[2] or '') ~= s.last then
    return 0
  end
end
for _, s in ipairs(saves) do
  local msgs, ckpt = key(s.sid, 'msgs'), key(s.sid, 'ckpt')
  if s.start < s.stored then
    if s.start == 0 then
      redis.call('DEL', msgs)
    else
      redis.call('LTRIM', msgs, 0, s.start - 1)
    end
    if #s.drop > 0 then
      redis.call('HDEL', ckpt, unpack(s.drop))
    end
  end
  for i = s.first, s.after - 1, 1000 do
    redis.call('RPUSH', msgs, unpack(ARGV, i, math.min(i + 999, s.after - 1)))
  end
  redis.call('HSET', ckpt, s.number, s.entry)
  redis.call('HSET', key(s.sid, 'meta'), unpack(s.fields))
  redis.call('ZADD', prefix .. ':sessions', s.now, s.sid)
  if s.done then
    redis.call('ZREM', prefix .. ':unfinished', s.sid)
  else
    redis.call('ZADD', prefix .. ':unfinished', s.now, s.sid)
  end
  if ttl > 0 then
    for _, part in ipairs({'meta', 'msgs', 'ckpt', 'intents'}) do
      redis.call('EXPIRE', key(s.sid, part), ttl)
    end
  end
end
for _, r in ipairs(records) do
  redis.call('HSET', r.key, r.call, r.record)
  if ttl > 0 then
    redis.call('EXPIRE', r.key, ttl)
  end
end
for _, r in ipairs(releases) do
  if redis.call('GET', r.key) == r.owner then
    redis.call('DEL', r.key)
  end
end
return 1
"""
"""One group-commit batch of writes, run atomically by the server (``RedisStore.write``):
the checkpoints (message rows, checkpoint entry, session meta, the session indexes),
intent records, retention and lock releases (only a lock its releaser still holds). It
writes nothing if a session's counters changed since the batch read them (another
writer saved it): the batch reads again; nor if a key it writes holds another Redis type
than the store's (someone ``SET`` a string there): it returns those keys and their types
(flat), whose writes fail alone (``RedisStore.write``). ``ARGV``: the prefix, the retention (0: none),
then counted groups -- the saves (session, counters as read, start, stored, checkpoint
number, time, done, the checkpoints a rewrite drops, the meta fields, the new message
rows, the checkpoint entry), the intent records (session, call, record), the lock
releases (session, owner). One command for the whole batch instead of about eight per
checkpoint: redis-py's per-command cost was most of the client's CPU."""


SESSIONS_SCRIPT = """
local prefix, out = ARGV[1], {}
local locks, states = ARGV[2]:find('L') ~= nil, ARGV[2]:find('S') ~= nil
for i = 3, #ARGV, 2 do
  local sid, wanted = ARGV[i], ARGV[i + 1]
  local base = prefix .. ':s:' .. sid
  if locks then
    local lock = prefix .. ':lock:' .. sid
    out[#out + 1] = redis.call('GET', lock)
    out[#out + 1] = redis.call('PTTL', lock)
  end
  local last = states and redis.call('HGET', base .. ':meta', 'last')
  local entry, rows = false, false
  if states and (wanted ~= '' or last) then
    entry = redis.call('HGET', base .. ':ckpt', wanted ~= '' and wanted or last)
  end
  if entry then
    local ok, decoded = pcall(cjson.decode, entry)
    local count = ok and type(decoded) == 'table' and tonumber(decoded.message_count)
    if count and count > 0 then
      rows = redis.call('LRANGE', base .. ':msgs', 0, count - 1)
    elseif count then
      rows = {}
    end
  end
  if states then
    out[#out + 1] = last
    out[#out + 1] = entry
    out[#out + 1] = rows
  end
end
return out
"""
"""Sessions read in one command (``ARGV``: the prefix, what to read -- ``L`` the locks,
``S`` the checkpoints, or both --, then pairs of session id and checkpoint number, empty
for the latest): per session its lock's holder and milliseconds left (``L``), its last
checkpoint number, the checkpoint's entry and its message rows (``S``; nil where
absent, rows nil where the entry is unreadable)."""

LOCK_SCRIPT = """
local prefix, n = ARGV[1], tonumber(ARGV[2])
for i = 3, 2 + 4 * n, 4 do
  if (redis.call('GET', prefix .. ':lock:' .. ARGV[i]) or '') ~= ARGV[i + 1] then
    return 0
  end
end
for i = 3, 2 + 4 * n, 4 do
  redis.call('SET', prefix .. ':lock:' .. ARGV[i], ARGV[i + 2], 'PX', ARGV[i + 3])
end
return 1
"""
"""Take locks if their holders are still the ones read (``ARGV``: the prefix, the count,
then per lock the session, the holder read (empty: none), the new owner, its TTL in ms);
0 and nothing set if one changed."""
