
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

local function expire(key, px)
  if redis.call('PEXPIRE', key, px, 'GT') == 0 then redis.call('PEXPIRE', key, px, 'NX') end
end

local function write(key, field, algorithm, c, state, now, grace, exact)
  if state ~= nil then
    local ttl = algorithm.ttl(state, now, c)
    if ttl > 0 then
      local raw = encode(state, exact)
      redis.call('HSET', key, field, raw)
      -- Redis writes a number argument exactly (%.17g), so PX needs no formatting here.
      expire(key, math.ceil(ttl) + grace)
      return raw
    end
  end
  redis.call('HDEL', key, field)
  return false
end

local seq = tonumber(ARGV[1])
local now, grace = tonumber(ARGV[2]), tonumber(ARGV[3])
local acked = redis.call('GET', KEYS[1])
local fresh = acked == false or tonumber(acked) < seq
local out = { fresh and 1 or 0 }
local codes, fields, p1, p2 = {}, {}, {}, {}
local a = 6
for s = 1, tonumber(ARGV[5]) do
  local code = tonumber(ARGV[a])
  codes[s], fields[s], p1[s] = code, ARGV[a + 1], tonumber(ARGV[a + 2])
  if code == 2 then
    p2[s] = tonumber(ARGV[a + 3])
    a = a + 4
  else
    a = a + 3
  end
end
for i = 2, #KEYS do
  local spec = ARGV[a]
  a = a + 1
  local s, delta
  local comma = string.find(spec, ',', 1, true)
  if comma == nil then
    s = tonumber(spec)
  else
    s = tonumber(string.sub(spec, 1, comma - 1))
    delta = {}
    for n in string.gmatch(string.sub(spec, comma + 1), '[^,]+') do delta[#delta + 1] = tonumber(n) end
  end
  local code = codes[s]
  local raw = redis.call('HGET', KEYS[i], fields[s])
  local state = nil
  if raw then state = decode(raw) end
  local expiry = nil
  if delta ~= nil and fresh then
    if code == 2 then
      local precision, size = p1[s], p2[s]
      if state == nil then
        state = delta
        for j = 2, precision + 2 do state[j] = math.max(0, state[j]) end
      else
        local top = math.max(delta[1], state[1])
        local sum = { top }
        for j = 1, precision + 1 do sum[j + 1] = 0 end
        for _, list in ipairs({ state, delta }) do
          local shift = top - list[1]
          for j = 0, precision - shift do sum[j + shift + 2] = sum[j + shift + 2] + list[j + 2] end
        end
        -- A refund's negative counts stop at 0, as the algorithm's refund does.
        for j = 2, precision + 2 do sum[j] = math.max(0, sum[j]) end
        state = sum
      end
      expiry = (state[1] + precision + 1) * size
    elseif code == 3 then
      local d1, d2 = delta[1], delta[2]
      if state == nil then state = { d2 } else state = { math.max(state[1] + d1, d2) } end
      expiry = state[1] + p1[s]
    elseif state == nil or state[2] <= delta[2] then
      -- Counter. A delta of a window older than the state's is over: dropped. A refund's negative
      -- count stops at 0, as the algorithm's refund does.
      local d1, d2 = delta[1], delta[2]
      if state == nil or state[2] < d2 then state = { math.max(0, d1), d2 } else state = { math.max(0, state[1] + d1), d2 } end
      expiry = d2 + p1[s]
    end
  end
  if expiry ~= nil then
    local px = math.ceil(expiry - now) + grace
    if px > 0 then
      redis.call('HSET', KEYS[i], fields[s], encode(state, true))
      expire(KEYS[i], px)
    else
      redis.call('HDEL', KEYS[i], fields[s])
    end
  end
  if state == nil then out[i] = '' else out[i] = encode(state, true) end
end
if fresh then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[4]) end
return out
