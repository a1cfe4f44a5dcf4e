
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


local sliding_window_counter
do
  local function prepare(p)
    local c = { limit = p[1], window = p[2], precision = p[3] }
    c.size = c.window / c.precision
    return c
  end

  -- Counts aligned to the sub-window containing now, newest first (length precision + 1).
  local function align(state, index, c)
    local counts = {}
    for i = 1, c.precision + 1 do counts[i] = 0 end
    if state == nil then return counts end
    -- Replayed times may go backwards: count them in the newest sub-window we have.
    local shift = math.max(0, index - state[1])
    local i = 0
    while i + shift <= c.precision do
      counts[i + shift + 1] = state[i + 2]
      i = i + 1
    end
    return counts
  end

  -- Time is read EPSILON late: a sub-window boundary EPSILON away is already crossed, and the
  -- oldest sub-window's weight is the one EPSILON later.
  local function sub_window(now, c) return math.floor((now + EPSILON) / c.size) end

  local function weighted(oldest, elapsed, c) return oldest * math.max(0, c.size - elapsed - EPSILON) end

  local function estimate(counts, elapsed, c)
    local total = 0
    for i = 1, c.precision do total = total + counts[i] end
    return total + weighted(counts[c.precision + 1], elapsed, c) / c.size
  end

  -- Earliest offset from now at which estimate + cost <= limit, walking sub-window boundaries.
  local function wait_for(counts, elapsed, cost, c)
    local shifted = copy(counts)
    local offset, at = 0, elapsed
    for _ = 0, c.precision + 1 do
      local full = 0
      for i = 1, c.precision do full = full + shifted[i] end
      local oldest = shifted[c.precision + 1]
      local room = c.limit - cost - full
      if room >= 0 then
        if weighted(oldest, at, c) <= room * c.size then return offset end
        return offset + c.size * (1 - room / oldest) - at
      end
      offset = offset + (c.size - at)
      at = 0
      local next = { 0 }
      for i = 1, c.precision do next[i + 1] = shifted[i] end
      shifted = next
    end
    return offset
  end

  -- Time until every count has left the window (weight of the oldest sub-window reaches 0).
  local function reset_after(counts, index, now, c)
    for i = 0, c.precision do
      if counts[i + 1] > 0 then return ceil_ms((index - i + c.precision + 1) * c.size - now) end
    end
    return 0
  end

  local function evaluate(counts, index, now, cost, c, consuming)
    local elapsed = now - index * c.size
    local used = estimate(counts, elapsed, c)
    if cost > c.limit then
      return decide(false, c.limit, math.max(0, math.floor(c.limit - used)),
        reset_after(counts, index, now, c), -1, 0, COST)
    end
    if used + cost <= c.limit then
      if not consuming then
        return decide(true, c.limit, math.max(0, math.floor(c.limit - used)),
          reset_after(counts, index, now, c), 0, 0, NONE)
      end
      local after = copy(counts)
      after[1] = after[1] + cost
      return decide(true, c.limit, math.max(0, math.floor(c.limit - used - cost)),
        reset_after(after, index, now, c), 0, 0, NONE)
    end
    return decide(false, c.limit, math.max(0, math.floor(c.limit - used)),
      reset_after(counts, index, now, c), math.max(1, ceil_ms(wait_for(counts, elapsed, cost, c))), 0, RATE)
  end

  local function consume(state, now, cost, c)
    local index = sub_window(now, c)
    local counts = align(state, index, c)
    local decision = evaluate(counts, index, now, cost, c, true)
    if not decision[1] then return decision, state, false end
    counts[1] = counts[1] + cost
    local stored = index
    if state ~= nil then stored = math.max(index, state[1]) end
    local next = { stored }
    for i = 1, #counts do next[i + 1] = counts[i] end
    return decision, next, true
  end

  local function peek(state, now, cost, c)
    local index = sub_window(now, c)
    return evaluate(align(state, index, c), index, now, cost, c, false)
  end

  local function ttl(state, now, c)
    local index = state[1]
    for i = 0, c.precision do
      if state[i + 2] > 0 then return (index - i + c.precision + 1) * c.size - now end
    end
    return 0
  end

  -- From the sub-window the units were counted in, while it is still one of the N + 1 held.
  local function refund(state, now, cost, c)
    local offset = state[1] - sub_window(now, c)
    if offset < 0 or offset > c.precision or state[offset + 2] <= 0 then return state end
    local next = copy(state)
    next[offset + 2] = math.max(0, next[offset + 2] - cost)
    for i = 2, #next do
      if next[i] > 0 then return next end
    end
    return nil
  end

  sliding_window_counter = { nparams = 3, prepare = prepare, consume = consume, peek = peek, ttl = ttl, refund = refund }
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
local algorithm = sliding_window_counter
local c = algorithm.prepare({ tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]) })
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
