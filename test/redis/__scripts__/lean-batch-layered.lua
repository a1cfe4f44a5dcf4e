
local EPSILON = 1e-2
local NONE, RATE, COST = 0, 1, 2
-- read_now, inline: the caller's time, or Redis TIME; the replay grace.
local now, grace = tonumber(ARGV[1]), 0
if now == nil then
  if ARGV[1] == '' then
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
  else
    local comma = string.find(ARGV[1], ',', 1, true)
    now, grace = tonumber(string.sub(ARGV[1], 1, comma - 1)), tonumber(string.sub(ARGV[1], comma + 1))
  end
end
local cost_1, cost_2, cost_3 = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local raw_1 = redis.call('HMGET', KEYS[1], "v37oe4", "1ngzxmm", "2x43v1")
local fresh_1 = not raw_1[1] and not raw_1[2] and not raw_1[3]
local state_1 = tonumber(raw_1[1])
local state_2, state_2b
if raw_1[2] then
  local comma = string.find(raw_1[2], ',', 1, true)
  state_2, state_2b = tonumber(string.sub(raw_1[2], 1, comma - 1)), tonumber(string.sub(raw_1[2], comma + 1))
end
local state_3 = tonumber(raw_1[3])
local reason_1, remaining_1, reset_after_1, retry_after_1, delay_1
local reason_2, remaining_2, reset_after_2, retry_after_2, delay_2
local reason_3, remaining_3, reset_after_3, retry_after_3, delay_3
if ARGV[2] == 'peek' then
do
  local capacity, refill_amount, refill_interval, strict = 10, 10, 1000, 0
local per_token = refill_interval / refill_amount
local full_span = capacity * per_token
local slack = math.min(EPSILON, per_token / 2)
  local state = state_1
  local cost = cost_1
  local reason, remaining, reset_after, retry_after, delay, changed, next, next2
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
  reason_1, remaining_1, reset_after_1, retry_after_1, delay_1 = reason, remaining, reset_after, retry_after, delay
end
do
  local limit, window = 300, 60000
  local state, state2 = state_2, state_2b
  local cost = cost_2
  local reason, remaining, reset_after, retry_after, delay, changed, next, next2
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
  reason_2, remaining_2, reset_after_2, retry_after_2, delay_2 = reason, remaining, reset_after, retry_after, delay
end
do
  local rate, period, burst = 5000, 3600000, 100
local emission = period / rate
local tolerance = emission * burst
local slack = math.min(EPSILON, emission / 2)
  local state = state_3
  local cost = cost_3
  local reason, remaining, reset_after, retry_after, delay, changed, next, next2
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
  reason_3, remaining_3, reset_after_3, retry_after_3, delay_3 = reason, remaining, reset_after, retry_after, delay
end
  return { 0, reason_1, remaining_1, reset_after_1, retry_after_1, delay_1, reason_2, remaining_2, reset_after_2, retry_after_2, delay_2, reason_3, remaining_3, reset_after_3, retry_after_3, delay_3 }
end
local packed_1, packed_2, packed_3
local value_1, value_2, value_3
local px_1, px_2, px_3
do
  local capacity, refill_amount, refill_interval, strict = 10, 10, 1000, 0
local per_token = refill_interval / refill_amount
local full_span = capacity * per_token
local slack = math.min(EPSILON, per_token / 2)
  local state = state_1
  local cost = cost_1
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
if reason == NONE and delay == 0 and remaining <= capacity and remaining % 1 == 0 then
  local p = reset_after * (capacity + 1) + remaining
  if p <= 9007199254740991 then packed_1 = p end
end
if changed then
  value_1 = false
  if next ~= nil then
    local state = next
    local ttl_ms = state + full_span - now
    if ttl_ms > 0 then value_1, px_1 = next, math.ceil(ttl_ms) + grace end
  end
end
  reason_1, remaining_1, reset_after_1, retry_after_1, delay_1 = reason, remaining, reset_after, retry_after, delay
end
do
  local limit, window = 300, 60000
  local state, state2 = state_2, state_2b
  local cost = cost_2
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
if reason == NONE and delay == 0 and remaining <= limit and remaining % 1 == 0 then
  local p = reset_after * (limit + 1) + remaining
  if p <= 9007199254740991 then packed_2 = p end
end
if changed then
  value_2 = false
  if next ~= nil then
    local state, state2 = next, next2
    local ttl_ms = state2 + window - now
    if ttl_ms > 0 then value_2, px_2 = string.format('%.17g,%.17g', next, next2), math.ceil(ttl_ms) + grace end
  end
end
  reason_2, remaining_2, reset_after_2, retry_after_2, delay_2 = reason, remaining, reset_after, retry_after, delay
end
do
  local rate, period, burst = 5000, 3600000, 100
local emission = period / rate
local tolerance = emission * burst
local slack = math.min(EPSILON, emission / 2)
  local state = state_3
  local cost = cost_3
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
if reason == NONE and delay == 0 and remaining <= burst and remaining % 1 == 0 then
  local p = reset_after * (burst + 1) + remaining
  if p <= 9007199254740991 then packed_3 = p end
end
if changed then
  value_3 = false
  if next ~= nil then
    local state = next
    local ttl_ms = state - now
    if ttl_ms > 0 then value_3, px_3 = next, math.ceil(ttl_ms) + grace end
  end
end
  reason_3, remaining_3, reset_after_3, retry_after_3, delay_3 = reason, remaining, reset_after, retry_after, delay
end
local all = reason_1 == NONE and reason_2 == NONE and reason_3 == NONE
if not all then
  -- A refusal: the refusing limits write what they changed, the others consume nothing.
if reason_1 == NONE then
  value_1 = nil
do
  local capacity, refill_amount, refill_interval, strict = 10, 10, 1000, 0
local per_token = refill_interval / refill_amount
local full_span = capacity * per_token
local slack = math.min(EPSILON, per_token / 2)
  local state = state_1
  local cost = cost_1
  local reason, remaining, reset_after, retry_after, delay, changed, next, next2
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
  reason_1, remaining_1, reset_after_1, retry_after_1, delay_1 = reason, remaining, reset_after, retry_after, delay
end
end
if reason_2 == NONE then
  value_2 = nil
do
  local limit, window = 300, 60000
  local state, state2 = state_2, state_2b
  local cost = cost_2
  local reason, remaining, reset_after, retry_after, delay, changed, next, next2
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
  reason_2, remaining_2, reset_after_2, retry_after_2, delay_2 = reason, remaining, reset_after, retry_after, delay
end
end
if reason_3 == NONE then
  value_3 = nil
do
  local rate, period, burst = 5000, 3600000, 100
local emission = period / rate
local tolerance = emission * burst
local slack = math.min(EPSILON, emission / 2)
  local state = state_3
  local cost = cost_3
  local reason, remaining, reset_after, retry_after, delay, changed, next, next2
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
  reason_3, remaining_3, reset_after_3, retry_after_3, delay_3 = reason, remaining, reset_after, retry_after, delay
end
end
end
do
  local px = 0
  if value_1 and value_2 and value_3 then
    redis.call('HSET', KEYS[1], "v37oe4", value_1, "1ngzxmm", value_2, "2x43v1", value_3)
    px = math.max(px_1, px_2, px_3)
  else
  if value_1 then redis.call('HSET', KEYS[1], "v37oe4", value_1); px = math.max(px, px_1) end
  if value_2 then redis.call('HSET', KEYS[1], "1ngzxmm", value_2); px = math.max(px, px_2) end
  if value_3 then redis.call('HSET', KEYS[1], "2x43v1", value_3); px = math.max(px, px_3) end
  end
  if px > 0 then if redis.call('PEXPIRE', KEYS[1], px, 'GT') == 0 and fresh_1 then redis.call('PEXPIRE', KEYS[1], px, 'NX') end end
  if value_1 == false then redis.call('HDEL', KEYS[1], "v37oe4") end
  if value_2 == false then redis.call('HDEL', KEYS[1], "1ngzxmm") end
  if value_3 == false then redis.call('HDEL', KEYS[1], "2x43v1") end
end
if all and packed_1 and packed_2 and packed_3 then return { packed_1, packed_2, packed_3 } end
return { 0, reason_1, remaining_1, reset_after_1, retry_after_1, delay_1, reason_2, remaining_2, reset_after_2, retry_after_2, delay_2, reason_3, remaining_3, reset_after_3, retry_after_3, delay_3 }
