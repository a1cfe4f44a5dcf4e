
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


local stepped_token_bucket
do
  local function peek(c, state, state2, now, cost)
    local capacity, refill_amount, refill_interval, strict = c[1], c[2], c[3], c[4]
local slack = math.min(EPSILON, refill_interval / 2)
local span = math.ceil(capacity / refill_amount) * refill_interval
    local reason, remaining, reset_after, retry_after, delay
do
  local tokens, last = capacity, now
  if state ~= nil and state2 + span > now then
    local steps = 0
    if now > state2 then steps = math.floor((now - state2 + slack) / refill_interval) end
    tokens, last = math.min(capacity, state + steps * refill_amount), state2 + steps * refill_interval
  end
  do
    if tokens >= capacity then reset_after = 0 else
    do local ms = last + math.ceil((capacity - tokens) / refill_amount) * refill_interval - now; if ms <= slack then reset_after = 0 else reset_after = math.ceil(ms - slack) end end
  end
    remaining, delay = tokens, 0
    if cost > capacity then
      reason, retry_after = COST, -1
    elseif tokens >= cost then
      reason, retry_after = NONE, 0
    else
      reason = RATE
      do local ms = last + math.ceil((cost - tokens) / refill_amount) * refill_interval - now; if ms <= slack then retry_after = 0 else retry_after = math.ceil(ms - slack) end end; retry_after = math.max(1, retry_after)
    end
  end
end
    return reason, remaining, reset_after, retry_after, delay
  end
  local function consume(c, state, state2, now, cost)
    local capacity, refill_amount, refill_interval, strict = c[1], c[2], c[3], c[4]
local slack = math.min(EPSILON, refill_interval / 2)
local span = math.ceil(capacity / refill_amount) * refill_interval
    local reason, remaining, reset_after, retry_after, delay, changed, next, next2
do
  local tokens, last = capacity, now
  if state ~= nil and state2 + span > now then
    local steps = 0
    if now > state2 then steps = math.floor((now - state2 + slack) / refill_interval) end
    tokens, last = math.min(capacity, state + steps * refill_amount), state2 + steps * refill_interval
  end
  if cost <= capacity and tokens >= cost then
    local left = tokens - cost
    next, next2, changed = left, last, true
    reason, remaining, retry_after, delay = NONE, left, 0, 0
    if left >= capacity then reset_after = 0 else
    do local ms = last + math.ceil((capacity - left) / refill_amount) * refill_interval - now; if ms <= slack then reset_after = 0 else reset_after = math.ceil(ms - slack) end end
  end
  else
    -- A refusal writes nothing, except that a strict bucket restarts its refill clock (keeping the
    -- tokens in hand) when the cost could fit.
    next, next2, changed = state, state2, false
    if strict == 1 and cost <= capacity then next, next2, changed, last = tokens, now, true, now end
    do
    if tokens >= capacity then reset_after = 0 else
    do local ms = last + math.ceil((capacity - tokens) / refill_amount) * refill_interval - now; if ms <= slack then reset_after = 0 else reset_after = math.ceil(ms - slack) end end
  end
    remaining, delay = tokens, 0
    if cost > capacity then
      reason, retry_after = COST, -1
    elseif tokens >= cost then
      reason, retry_after = NONE, 0
    else
      reason = RATE
      do local ms = last + math.ceil((cost - tokens) / refill_amount) * refill_interval - now; if ms <= slack then retry_after = 0 else retry_after = math.ceil(ms - slack) end end; retry_after = math.max(1, retry_after)
    end
  end
  end
end
    return reason, remaining, reset_after, retry_after, delay, changed, next, next2
  end
  local function ttl(c, state, state2, now)
    local capacity, refill_amount, refill_interval, strict = c[1], c[2], c[3], c[4]
local slack = math.min(EPSILON, refill_interval / 2)
local span = math.ceil(capacity / refill_amount) * refill_interval
    return state2 + span - now
  end
  local function refund(c, state, state2, now, cost)
    local capacity, refill_amount, refill_interval, strict = c[1], c[2], c[3], c[4]
local slack = math.min(EPSILON, refill_interval / 2)
local span = math.ceil(capacity / refill_amount) * refill_interval
    local next, next2
if state + cost < capacity then next, next2 = state + cost, state2
  elseif state2 ~= now then next, next2 = capacity, state2 end
    return next, next2
  end
  stepped_token_bucket = lean_table(4, peek, consume, ttl, refund)
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


local leaky_bucket_queue
do
  local function peek(c, state, state2, now, cost)
    local rate, period, burst, queue, max_delay_bound = c[1], c[2], c[3], c[4], c[5]

local interval = period / rate
local slack = math.min(EPSILON, interval / 2)
local max_delay = math.huge
if max_delay_bound ~= 0 then max_delay = max_delay_bound end
-- The deepest backlog either bound allows, in ms, and the most units it can ever hold.
local room = math.min((burst + queue) * interval, burst * interval + max_delay)
local capacity = math.min(burst + queue, burst + math.floor((max_delay + slack) / interval))

    local reason, remaining, reset_after, retry_after, delay
do
  local drain_at = now
  if state ~= nil and not (state < now) then drain_at = state end
  local new_drain_at = drain_at + cost * interval
  -- The queue ahead of and including this request, in ms; the first burst units go at once.
  local backlog = new_drain_at - now
  local held = math.max(0, backlog - burst * interval)
  local allowed = backlog <= room + slack
  retry_after, delay = 0, 0
  if allowed then
    reason = NONE
    remaining = math.max(0, math.min(capacity, math.floor((room - (drain_at - now) + slack) / interval)))
    do local ms = drain_at - now; if ms <= slack then reset_after = 0 else reset_after = math.ceil(ms - slack) end end
  else
    remaining = math.max(0, math.min(capacity, math.floor((room - (drain_at - now) + slack) / interval)))
    do local ms = drain_at - now; if ms <= slack then reset_after = 0 else reset_after = math.ceil(ms - slack) end end
    if cost > capacity then
      reason, retry_after = COST, -1
    else
      reason = RATE
      -- Wait until the queue has drained enough for this cost to fit under both bounds.
      do local ms = drain_at + cost * interval - room - now; if ms <= slack then retry_after = 0 else retry_after = math.ceil(ms - slack) end end; retry_after = math.max(1, retry_after)
    end
  end
end
    return reason, remaining, reset_after, retry_after, delay
  end
  local function consume(c, state, state2, now, cost)
    local rate, period, burst, queue, max_delay_bound = c[1], c[2], c[3], c[4], c[5]

local interval = period / rate
local slack = math.min(EPSILON, interval / 2)
local max_delay = math.huge
if max_delay_bound ~= 0 then max_delay = max_delay_bound end
-- The deepest backlog either bound allows, in ms, and the most units it can ever hold.
local room = math.min((burst + queue) * interval, burst * interval + max_delay)
local capacity = math.min(burst + queue, burst + math.floor((max_delay + slack) / interval))

    local reason, remaining, reset_after, retry_after, delay, changed, next, next2
next, changed = state, false
do
  local drain_at = now
  if state ~= nil and not (state < now) then drain_at = state end
  local new_drain_at = drain_at + cost * interval
  -- The queue ahead of and including this request, in ms; the first burst units go at once.
  local backlog = new_drain_at - now
  local held = math.max(0, backlog - burst * interval)
  local allowed = backlog <= room + slack
  retry_after, delay = 0, 0
  if allowed then
    reason = NONE
    next, changed = new_drain_at, true
    remaining = math.max(0, math.min(capacity, math.floor((room - (new_drain_at - now) + slack) / interval)))
    do local ms = new_drain_at - now; if ms <= slack then reset_after = 0 else reset_after = math.ceil(ms - slack) end end
    do local ms = held; if ms <= slack then delay = 0 else delay = math.ceil(ms - slack) end end
  else
    remaining = math.max(0, math.min(capacity, math.floor((room - (drain_at - now) + slack) / interval)))
    do local ms = drain_at - now; if ms <= slack then reset_after = 0 else reset_after = math.ceil(ms - slack) end end
    if cost > capacity then
      reason, retry_after = COST, -1
    else
      reason = RATE
      -- Wait until the queue has drained enough for this cost to fit under both bounds.
      do local ms = drain_at + cost * interval - room - now; if ms <= slack then retry_after = 0 else retry_after = math.ceil(ms - slack) end end; retry_after = math.max(1, retry_after)
    end
  end
end
    return reason, remaining, reset_after, retry_after, delay, changed, next, next2
  end
  local function ttl(c, state, state2, now)
    local rate, period, burst, queue, max_delay_bound = c[1], c[2], c[3], c[4], c[5]

local interval = period / rate
local slack = math.min(EPSILON, interval / 2)
local max_delay = math.huge
if max_delay_bound ~= 0 then max_delay = max_delay_bound end
-- The deepest backlog either bound allows, in ms, and the most units it can ever hold.
local room = math.min((burst + queue) * interval, burst * interval + max_delay)
local capacity = math.min(burst + queue, burst + math.floor((max_delay + slack) / interval))

    return state - now
  end
  local function refund(c, state, state2, now, cost)
    local rate, period, burst, queue, max_delay_bound = c[1], c[2], c[3], c[4], c[5]

local interval = period / rate
local slack = math.min(EPSILON, interval / 2)
local max_delay = math.huge
if max_delay_bound ~= 0 then max_delay = max_delay_bound end
-- The deepest backlog either bound allows, in ms, and the most units it can ever hold.
local room = math.min((burst + queue) * interval, burst * interval + max_delay)
local capacity = math.min(burst + queue, burst + math.floor((max_delay + slack) / interval))

    local next, next2
do
  local drain_at = state - cost * interval
  if drain_at > now then next = drain_at end
end
    return next, next2
  end
  leaky_bucket_queue = lean_table(5, peek, consume, ttl, refund)
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


local ALGORITHMS = { [1] = token_bucket, [2] = stepped_token_bucket, [3] = gcra, [4] = fixed_window, [5] = sliding_window_log, [6] = sliding_window_counter, [7] = leaky_bucket_queue }

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
