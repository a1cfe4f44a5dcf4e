
local EPSILON = 1e-2
local NONE, RATE, COST = 0, 1, 2

-- decision.ts ceilMs: ms to whole ms, rounded up, never negative; within EPSILON of a whole ms
-- rounds down to it (the algorithms read time EPSILON late).
local function ceil_ms(ms)
  if ms <= EPSILON then return 0 end
  return math.ceil(ms - EPSILON)
end

local function fmt(x)
  return string.format('%.17g', x)
end

local function decide(allowed, limit, remaining, reset_after, retry_after, delay, reason)
  return { allowed, limit, remaining, reset_after, retry_after, delay, reason }
end

-- A state is a list of numbers, stored as one string: '12.5' or '3,1700000000000'.
local function decode(raw)
  -- Most states are one number ('12.5'): no pattern matching for those.
  local one = tonumber(raw)
  if one ~= nil then return { one } end
  local state = {}
  for token in string.gmatch(raw, '[^,]+') do state[#state + 1] = tonumber(token) end
  return state
end

-- A one-number state goes to Redis as a Lua number, which Redis writes exactly itself (%.17g, or
-- the shortest round-trip form from Redis 7.2): no string.format on the hot path. `exact` asks
-- for the string (the split journal compares it later with what the key holds).
local function encode(state, exact)
  if #state == 1 then
    if exact then return fmt(state[1]) end
    return state[1]
  end
  local parts = {}
  for i = 1, #state do parts[i] = fmt(state[i]) end
  return table.concat(parts, ',')
end

-- The time of the call and its replay grace (see nowArg in script-command.ts): 'now' (the store's
-- clock), 'now,grace' (a caller's replayed now: keys live grace ms longer in wall time), or ''
-- (Redis TIME, µs precision).
local function read_now(arg)
  local now = tonumber(arg)
  if now ~= nil then return now, 0 end
  if arg == '' then
    local t = redis.call('TIME')
    return tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000, 0
  end
  local comma = string.find(arg, ',', 1, true)
  return tonumber(string.sub(arg, 1, comma - 1)), tonumber(string.sub(arg, comma + 1))
end

local function copy(list)
  local out = {}
  for i = 1, #list do out[i] = list[i] end
  return out
end

local set, ttl_key = KEYS[1], KEYS[2]
local now, grace = read_now(ARGV[1])
local op, id = ARGV[2], ARGV[3]

local function score_of(reply)
  if reply[2] == nil then return nil end
  return tonumber(reply[2])
end

-- The set expires when its newest lease would (newest + ttl - now, ms rounded up; plus the replay
-- grace while it lives); its ttl with it.
local function expire_with(ttl)
  local newest = score_of(redis.call('ZRANGE', set, -1, -1, 'WITHSCORES'))
  local px = math.ceil(newest + ttl - now)
  if px > 0 then px = px + grace end
  px = fmt(px)
  redis.call('PEXPIRE', set, px)
  redis.call('SET', ttl_key, fmt(ttl), 'PX', px)
end

if op == 'release' then
  local ttl = redis.call('GET', ttl_key)
  if ttl then
    ttl = tonumber(ttl)
    redis.call('ZREMRANGEBYSCORE', set, '-inf', fmt(now - ttl))
  end
  local released = redis.call('ZREM', set, id)
  if redis.call('ZCARD', set) == 0 then
    redis.call('DEL', set, ttl_key)
  elseif ttl then
    expire_with(ttl)
  end
  return { fmt(now), released }
end

local limit, ttl = tonumber(ARGV[4]), tonumber(ARGV[5])
local cutoff = now - ttl

if op == 'peek' then
  -- Leases with startedAt <= cutoff are stale: count only the live ones, write nothing.
  local live = '(' .. fmt(cutoff)
  local count = redis.call('ZCOUNT', set, live, '+inf')
  local held = redis.call('ZSCORE', set, id)
  local allowed = count < limit or (held and tonumber(held) > cutoff)
  local oldest = score_of(redis.call('ZRANGEBYSCORE', set, live, '+inf', 'WITHSCORES', 'LIMIT', 0, 1))
  local newest = score_of(redis.call('ZREVRANGEBYSCORE', set, '+inf', live, 'WITHSCORES', 'LIMIT', 0, 1))
  return { fmt(now), allowed and 1 or 0, count, oldest and fmt(oldest) or false, newest and fmt(newest) or false }
end

redis.call('ZREMRANGEBYSCORE', set, '-inf', fmt(cutoff))
local count = redis.call('ZCARD', set)
local held = redis.call('ZSCORE', set, id)
local allowed = held or count < limit
if allowed then
  -- A renewal moves its lease to now; a new lease is added.
  if redis.call('ZADD', set, fmt(now), id) == 1 then count = count + 1 end
  expire_with(ttl)
end
local oldest, newest = nil, nil
if count > 0 then
  oldest = score_of(redis.call('ZRANGE', set, 0, 0, 'WITHSCORES'))
  newest = score_of(redis.call('ZRANGE', set, -1, -1, 'WITHSCORES'))
end
return { fmt(now), allowed and 1 or 0, count, oldest and fmt(oldest) or false, newest and fmt(newest) or false }
