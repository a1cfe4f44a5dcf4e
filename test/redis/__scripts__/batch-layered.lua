
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


-- The same list when the numbers did not change: a refund that gives nothing back is the state itself.
local function listed(list, a, b)
  if a == nil then return nil end
  if list ~= nil and list[1] == a and list[2] == b then return list end
  return { a, b }
end

local function unlist(list)
  if list == nil then return nil end
  return list[1], list[2]
end

local function lean_table(nparams, peek, consume, ttl, refund)
  return {
    nparams = nparams,
    prepare = function(p) return p end,
    consume = function(state, now, cost, c)
      local a, b = unlist(state)
      local reason, remaining, reset_after, retry_after, delay, changed, next, next2 = consume(c, a, b, now, cost)
      return decide(reason == NONE, 0, remaining, reset_after, retry_after, delay, reason), listed(state, next, next2), changed
    end,
    peek = function(state, now, cost, c)
      local a, b = unlist(state)
      local reason, remaining, reset_after, retry_after, delay = peek(c, a, b, now, cost)
      return decide(reason == NONE, 0, remaining, reset_after, retry_after, delay, reason)
    end,
    ttl = function(state, now, c) return ttl(c, state[1], state[2], now) end,
    refund = function(state, now, cost, c) return listed(state, refund(c, state[1], state[2], now, cost)) end,
  }
end


local token_bucket
do
  local function peek(c, state, state2, now, cost)
    local capacity, refill_amount, refill_interval, strict = c[1], c[2], c[3], c[4]

local per_token = refill_interval / refill_amount
local full_span = capacity * per_token
local slack = math.min(EPSILON, per_token / 2)

    local reason, remaining, reset_after, retry_after, delay
do
  -- empty_at: a bucket idle long enough is full, the empty instant is clamped.
  local floor = now - full_span
  local empty = state
  if state == nil or state < floor then empty = floor end
  local accrued = now - empty
  do local ms = empty + full_span - now; if ms <= slack then reset_after = 0 else reset_after = math.ceil(ms - slack) end end
  remaining, delay = math.max(0, math.min(capacity, math.floor((accrued + slack) / per_token))), 0
  if cost > capacity then
    reason, retry_after = COST, -1
  elseif accrued + slack >= cost * per_token then
    reason, retry_after = NONE, 0
  else
    reason = RATE
    do local ms = empty + cost * per_token - now; if ms <= slack then retry_after = 0 else retry_after = math.ceil(ms - slack) end end; retry_after = math.max(1, retry_after)
  end
end
    return reason, remaining, reset_after, retry_after, delay
  end
  local function consume(c, state, state2, now, cost)
    local capacity, refill_amount, refill_interval, strict = c[1], c[2], c[3], c[4]

local per_token = refill_interval / refill_amount
local full_span = capacity * per_token
local slack = math.min(EPSILON, per_token / 2)

    local reason, remaining, reset_after, retry_after, delay, changed, next, next2
do
  local floor = now - full_span
  local empty = state
  if state == nil or state < floor then empty = floor end
  local accrued = now - empty
  if cost <= capacity and accrued + slack >= cost * per_token then
    next, changed = empty + cost * per_token, true
    reason, remaining, retry_after, delay = NONE, math.max(0, math.min(capacity, math.floor((now - next + slack) / per_token))), 0, 0
    do local ms = next + full_span - now; if ms <= slack then reset_after = 0 else reset_after = math.ceil(ms - slack) end end
  else
    next, changed = state, false
    -- Strict: keep the whole tokens, drop the progress toward the next one, restart the clock now.
    if strict == 1 and cost <= capacity then next, changed = now - math.max(0, math.min(capacity, math.floor((accrued + slack) / per_token))) * per_token, true end
    do
  -- empty_at: a bucket idle long enough is full, the empty instant is clamped.
  local floor = now - full_span
  local empty = next
  if next == nil or next < floor then empty = floor end
  local accrued = now - empty
  do local ms = empty + full_span - now; if ms <= slack then reset_after = 0 else reset_after = math.ceil(ms - slack) end end
  remaining, delay = math.max(0, math.min(capacity, math.floor((accrued + slack) / per_token))), 0
  if cost > capacity then
    reason, retry_after = COST, -1
  elseif accrued + slack >= cost * per_token then
    reason, retry_after = NONE, 0
  else
    reason = RATE
    do local ms = empty + cost * per_token - now; if ms <= slack then retry_after = 0 else retry_after = math.ceil(ms - slack) end end; retry_after = math.max(1, retry_after)
  end
end
  end
end
    return reason, remaining, reset_after, retry_after, delay, changed, next, next2
  end
  local function ttl(c, state, state2, now)
    local capacity, refill_amount, refill_interval, strict = c[1], c[2], c[3], c[4]

local per_token = refill_interval / refill_amount
local full_span = capacity * per_token
local slack = math.min(EPSILON, per_token / 2)

    return state + full_span - now
  end
  local function refund(c, state, state2, now, cost)
    local capacity, refill_amount, refill_interval, strict = c[1], c[2], c[3], c[4]

local per_token = refill_interval / refill_amount
local full_span = capacity * per_token
local slack = math.min(EPSILON, per_token / 2)

    local next, next2
do
  local empty = state - cost * per_token
  if empty > now - full_span then next = empty end
end
    return next, next2
  end
  token_bucket = lean_table(4, peek, consume, ttl, refund)
end


local fixed_window
do
  local function peek(c, state, state2, now, cost)
    local limit, window = c[1], c[2]

    local reason, remaining, reset_after, retry_after, delay
do
  local start = math.floor((now + EPSILON) / window) * window
  if state ~= nil and state2 > start then start = state2 end
  local count = 0
  if state ~= nil and state2 == start then count = state end
  local full_reset
  do local ms = start + window - now; if ms <= EPSILON then full_reset = 0 else full_reset = math.ceil(ms - EPSILON) end end
  delay = 0
  if cost > limit then
    reason, remaining, retry_after, reset_after = COST, math.max(0, limit - count), -1, 0
    if count > 0 then reset_after = full_reset end
  elseif count + cost <= limit then
    reason, retry_after = NONE, 0
    remaining, reset_after = limit - count - 0, 0
    if count > 0 then reset_after = full_reset end
  else
    reason, remaining, reset_after = RATE, math.max(0, limit - count), full_reset
    do local ms = start + window - now; if ms <= EPSILON then retry_after = 0 else retry_after = math.ceil(ms - EPSILON) end end; retry_after = math.max(1, retry_after)
  end
end
    return reason, remaining, reset_after, retry_after, delay
  end
  local function consume(c, state, state2, now, cost)
    local limit, window = c[1], c[2]

    local reason, remaining, reset_after, retry_after, delay, changed, next, next2
next, next2, changed = state, state2, false
do
  local start = math.floor((now + EPSILON) / window) * window
  if state ~= nil and state2 > start then start = state2 end
  local count = 0
  if state ~= nil and state2 == start then count = state end
  local full_reset
  do local ms = start + window - now; if ms <= EPSILON then full_reset = 0 else full_reset = math.ceil(ms - EPSILON) end end
  delay = 0
  if cost > limit then
    reason, remaining, retry_after, reset_after = COST, math.max(0, limit - count), -1, 0
    if count > 0 then reset_after = full_reset end
  elseif count + cost <= limit then
    reason, retry_after = NONE, 0
    remaining, reset_after = limit - count - cost, full_reset
    next, next2, changed = count + cost, start, true
  else
    reason, remaining, reset_after = RATE, math.max(0, limit - count), full_reset
    do local ms = start + window - now; if ms <= EPSILON then retry_after = 0 else retry_after = math.ceil(ms - EPSILON) end end; retry_after = math.max(1, retry_after)
  end
end
    return reason, remaining, reset_after, retry_after, delay, changed, next, next2
  end
  local function ttl(c, state, state2, now)
    local limit, window = c[1], c[2]

    return state2 + window - now
  end
  local function refund(c, state, state2, now, cost)
    local limit, window = c[1], c[2]

    local next, next2
next, next2 = state, state2
if state2 == math.floor((now + EPSILON) / window) * window then
  if state - cost > 0 then next, next2 = state - cost, state2 else next, next2 = nil, nil end
end
    return next, next2
  end
  fixed_window = lean_table(2, peek, consume, ttl, refund)
end


local gcra
do
  local function peek(c, state, state2, now, cost)
    local rate, period, burst = c[1], c[2], c[3]

local emission = period / rate
local tolerance = emission * burst
local slack = math.min(EPSILON, emission / 2)

    local reason, remaining, reset_after, retry_after, delay
do
  local tat = now
  if state ~= nil and not (state < now) then tat = state end
  local increment = emission * cost
  local new_tat = tat + increment
  local wait = new_tat - tolerance - now
  local allowed = wait <= slack
  local ttl = tat - now
  
  local headroom = tolerance - ttl
  remaining, delay = math.min(burst, math.max(0, math.floor((headroom + slack) / emission))), 0
  do local ms = ttl; if ms <= slack then reset_after = 0 else reset_after = math.ceil(ms - slack) end end
  if allowed then
    reason, retry_after = NONE, 0
    
  elseif increment > tolerance + slack then
    reason, retry_after = COST, -1
  else
    reason = RATE
    do local ms = wait; if ms <= slack then retry_after = 0 else retry_after = math.ceil(ms - slack) end end; retry_after = math.max(1, retry_after)
  end
end
    return reason, remaining, reset_after, retry_after, delay
  end
  local function consume(c, state, state2, now, cost)
    local rate, period, burst = c[1], c[2], c[3]

local emission = period / rate
local tolerance = emission * burst
local slack = math.min(EPSILON, emission / 2)

    local reason, remaining, reset_after, retry_after, delay, changed, next, next2
next, changed = state, false
do
  local tat = now
  if state ~= nil and not (state < now) then tat = state end
  local increment = emission * cost
  local new_tat = tat + increment
  local wait = new_tat - tolerance - now
  local allowed = wait <= slack
  local ttl = tat - now
  if allowed then ttl = new_tat - now end
  local headroom = tolerance - ttl
  remaining, delay = math.min(burst, math.max(0, math.floor((headroom + slack) / emission))), 0
  do local ms = ttl; if ms <= slack then reset_after = 0 else reset_after = math.ceil(ms - slack) end end
  if allowed then
    reason, retry_after = NONE, 0
    next, changed = new_tat, true
  elseif increment > tolerance + slack then
    reason, retry_after = COST, -1
  else
    reason = RATE
    do local ms = wait; if ms <= slack then retry_after = 0 else retry_after = math.ceil(ms - slack) end end; retry_after = math.max(1, retry_after)
  end
end
    return reason, remaining, reset_after, retry_after, delay, changed, next, next2
  end
  local function ttl(c, state, state2, now)
    local rate, period, burst = c[1], c[2], c[3]

local emission = period / rate
local tolerance = emission * burst
local slack = math.min(EPSILON, emission / 2)

    return state - now
  end
  local function refund(c, state, state2, now, cost)
    local rate, period, burst = c[1], c[2], c[3]

local emission = period / rate
local tolerance = emission * burst
local slack = math.min(EPSILON, emission / 2)

    local next, next2
do
  local tat = state - emission * cost
  if tat > now then next = tat end
end
    return next, next2
  end
  gcra = lean_table(3, peek, consume, ttl, refund)
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


local ALGORITHMS = { [1] = token_bucket, [4] = fixed_window, [3] = gcra }

local function read_calls(first)
  local calls, a = {}, first
  for i = 1, #KEYS do
    local algorithm = ALGORITHMS[tonumber(ARGV[a])]
    local params = {}
    for j = 1, algorithm.nparams do params[j] = tonumber(ARGV[a + 2 + j]) end
    local field = ARGV[a + 2]
    local raw = redis.call('HGET', KEYS[i], field)
    local state = nil
    if raw then state = decode(raw) end
    calls[i] = { algorithm = algorithm, cost = tonumber(ARGV[a + 1]), field = field, c = algorithm.prepare(params), raw = raw, state = state }
    a = a + 3 + algorithm.nparams
  end
  return calls, a
end

local function push_decision(out, d)
  local n = #out
  out[n + 1], out[n + 2], out[n + 3], out[n + 4], out[n + 5] = d[7], d[3], d[4], d[5], d[6]
end


local BLOCKED = 3

local function retry_ms(ms)
  return math.max(1, ceil_ms(ms))
end

local function read_block(key, field, now)
  local raw = redis.call('HGET', key, field)
  if not raw then return nil end
  local rec = decode(raw)
  if now >= rec[3] then return nil end
  return rec
end

local function block_left(rec, now)
  if rec ~= nil and now < rec[1] then return rec[1] - now end
  return 0
end

local function blocked_decision(left)
  return decide(false, 0, 0, ceil_ms(left), retry_ms(left), 0, BLOCKED)
end

-- core's startBlock: the streak goes on while the record lives; each block is factor times the
-- one before, up to max (multiplied step by step, as the TypeScript does, for the same doubles).
local function start_block(key, field, rec, b, now, grace)
  local strikes = 1
  if rec ~= nil and now < rec[1] + b.decay then strikes = rec[2] + 1 end
  local duration = b.duration
  for _ = 2, strikes do
    if duration >= b.max or b.factor == 1 then break end
    duration = duration * b.factor
  end
  duration = math.min(b.max, duration)
  redis.call('HSET', key, field, fmt(now + duration) .. ',' .. strikes .. ',' .. fmt(now + duration + b.decay))
  expire(key, math.ceil(duration + b.decay) + grace)
  return duration
end

local function blocking(d, duration, reset)
  if reset then
    d[4], d[5] = ceil_ms(duration), retry_ms(duration)
  else
    d[4] = math.max(d[4], ceil_ms(duration))
    d[5] = math.max(d[5], retry_ms(duration))
  end
  return d
end

local now, grace = read_now(ARGV[1])
local mode = ARGV[2]
local shadow, block = {}, {}
local noptions = tonumber(ARGV[3])
for j = 0, noptions - 1 do
  local o = 4 + j * 7
  local i = tonumber(ARGV[o])
  shadow[i] = ARGV[o + 1] == '1'
  local duration = tonumber(ARGV[o + 2])
  if duration > 0 then
    block[i] = { duration = duration, factor = tonumber(ARGV[o + 3]), max = tonumber(ARGV[o + 4]), decay = tonumber(ARGV[o + 5]), reset = ARGV[o + 6] == '1' }
  end
end
local calls = read_calls(4 + noptions * 7)
local left = {}
for i, b in pairs(block) do
  b.key, b.field = KEYS[i], calls[i].field .. ':b'
  b.rec = read_block(b.key, b.field, now)
  left[i] = block_left(b.rec, now)
end
-- Undoing a split batch must run at the exact now it consumed at (Redis TIME differs per node),
-- with the same replay grace.
local out = { 0 }
if mode == 'split' then
  out[1] = fmt(now)
  if grace > 0 then out[1] = out[1] .. ',' .. fmt(grace) end
end

if mode == 'peek' then
  for i = 1, #calls do
    local call = calls[i]
    if (left[i] or 0) > 0 then
      push_decision(out, blocked_decision(left[i]))
    else
      push_decision(out, call.algorithm.peek(call.state, now, call.cost, call.c))
    end
  end
  return out
end

local decisions, nexts, changed, all = {}, {}, {}, true
for i = 1, #calls do
  local call = calls[i]
  if (left[i] or 0) > 0 then
    decisions[i], nexts[i], changed[i] = blocked_decision(left[i]), call.state, false
  else
    decisions[i], nexts[i], changed[i] = call.algorithm.consume(call.state, now, call.cost, call.c)
  end
  if not decisions[i][1] and not shadow[i] then all = false end
end

local written = {}
for i = 1, #calls do
  local call = calls[i]
  if all or not decisions[i][1] then
    if changed[i] then written[i] = write(KEYS[i], call.field, call.algorithm, call.c, nexts[i], now, grace, mode == 'split') end
  else
    decisions[i] = call.algorithm.peek(call.state, now, call.cost, call.c)
  end
  -- A limit with a block that refused by itself starts the next block.
  local b = block[i]
  if b and decisions[i][7] == RATE then
    decisions[i] = blocking(decisions[i], start_block(b.key, b.field, b.rec, b, now, grace), b.reset)
    -- reset: the block forgets the limit's state (a refused limit is never undone by a split refund).
    if b.reset then
      redis.call('HDEL', KEYS[i], call.field)
      written[i] = nil
    end
  end
  push_decision(out, decisions[i])
end

if mode == 'split' then
  for i = 1, #calls do
    if written[i] == nil then
      out[#out + 1] = 0
      out[#out + 1] = false
      out[#out + 1] = false
    else
      out[#out + 1] = 1
      out[#out + 1] = calls[i].raw
      out[#out + 1] = written[i]
    end
  end
end
return out
