
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


local sliding_window_log
do
  local function prepare(p) return { limit = p[1], window = p[2] } end

  -- Index of the first entry still inside (now - window, now], and the units those entries hold.
  local function live(log, now, c)
    local first = 1
    while first <= #log and log[first] <= now + EPSILON - c.window do first = first + 2 end
    local used = 0
    for i = first + 1, #log, 2 do used = used + log[i] end
    return first, used
  end

  local function evaluate(log, first, used, now, cost, c, consuming)
    local newest = nil
    if #log >= first then newest = log[#log - 1] end
    if cost > c.limit then
      local reset = 0
      if newest ~= nil then reset = ceil_ms(newest + c.window - now) end
      return decide(false, c.limit, math.max(0, c.limit - used), reset, -1, 0, COST)
    end
    if used + cost <= c.limit then
      if not consuming then
        local reset = 0
        if newest ~= nil then reset = ceil_ms(newest + c.window - now) end
        return decide(true, c.limit, c.limit - used, reset, 0, 0, NONE)
      end
      return decide(true, c.limit, c.limit - used - cost, ceil_ms(math.max(newest or now, now) + c.window - now), 0, 0, NONE)
    end
    -- Wait until enough of the oldest entries have left the window.
    local freed, retry_at = 0, now
    local i = first
    while i <= #log and used - freed + cost > c.limit do
      freed = freed + log[i + 1]
      retry_at = log[i] + c.window
      i = i + 2
    end
    return decide(false, c.limit, math.max(0, c.limit - used), ceil_ms(newest + c.window - now), math.max(1, ceil_ms(retry_at - now)), 0, RATE)
  end

  local function consume(state, now, cost, c)
    local log = state or {}
    local first, used = live(log, now, c)
    local decision = evaluate(log, first, used, now, cost, c, true)
    if not decision[1] then return decision, state, false end
    -- Replayed (client-supplied) times may arrive out of order: keep the log sorted.
    local at = #log + 1
    while at > first and log[at - 2] > now do at = at - 2 end
    local kept = {}
    for j = first, at - 1 do kept[#kept + 1] = log[j] end
    -- Requests in the same millisecond share one entry: they leave the window together, so the
    -- decisions are the same and a busy key's log stays at most one entry per millisecond.
    if at > first and log[at - 2] == now then
      kept[#kept] = kept[#kept] + cost
    else
      kept[#kept + 1] = now
      kept[#kept + 1] = cost
    end
    for j = at, #log do kept[#kept + 1] = log[j] end
    return decision, kept, true
  end

  local function peek(state, now, cost, c)
    local log = state or {}
    local first, used = live(log, now, c)
    return evaluate(log, first, used, now, cost, c, false)
  end

  local function ttl(state, now, c)
    if #state == 0 then return 0 end
    return state[#state - 1] + c.window - now
  end

  -- Takes this request's units out of the entry of its millisecond.
  local function refund(state, now, cost, c)
    for i = #state - 1, 1, -2 do
      if state[i] == now and state[i + 1] >= cost then
        local next = copy(state)
        if next[i + 1] == cost then
          table.remove(next, i)
          table.remove(next, i)
        else
          next[i + 1] = next[i + 1] - cost
        end
        if #next == 0 then return nil end
        return next
      end
    end
    return state
  end

  sliding_window_log = { nparams = 2, prepare = prepare, consume = consume, peek = peek, ttl = ttl, refund = refund }
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

local now, grace = read_now(ARGV[1])
local algorithm = sliding_window_log
local c = algorithm.prepare({ tonumber(ARGV[5]), tonumber(ARGV[6]) })
local raw = redis.call('HGET', KEYS[1], ARGV[4])
local state = nil
if raw then state = decode(raw) end
local cost = tonumber(ARGV[3])
local d
if ARGV[2] == 'peek' then
  d = algorithm.peek(state, now, cost, c)
else
  local next, changed
  d, next, changed = algorithm.consume(state, now, cost, c)
  -- One call is the whole batch: it writes whatever it changed, admitted or not.
  if changed then write(KEYS[1], ARGV[4], algorithm, c, next, now, grace) end
end
local packed
if d[7] == NONE and d[6] == 0 and d[3] <= d[2] and d[3] % 1 == 0 then
  local p = d[4] * (d[2] + 1) + d[3]
  if p <= 9007199254740991 then packed = p end
end
if packed then return packed end
if d[6] ~= 0 then return { d[7], d[3], d[4], d[5], d[6] } end
return { d[7], d[3], d[4], d[5] }
