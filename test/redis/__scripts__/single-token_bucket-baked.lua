
local EPSILON = 1e-2
local NONE, RATE, COST = 0, 1, 2

local capacity, refill_amount, refill_interval, strict = 20, 20, 10000, 0

local per_token = refill_interval / refill_amount
local full_span = capacity * per_token
local slack = math.min(EPSILON, per_token / 2)

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
local cost = tonumber(ARGV[3])
local raw = redis.call('HGET', KEYS[1], ARGV[4])
local state = tonumber(raw)
local reason, remaining, reset_after, retry_after, delay, changed, next
if ARGV[2] == 'peek' then
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
else
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
  -- One call is the whole batch: it writes whatever it changed, admitted or not.
  local value, px
if changed then
  value = false
  if next ~= nil then
    local state = next
    local ttl_ms = state + full_span - now
    if ttl_ms > 0 then value, px = next, math.ceil(ttl_ms) + grace end
  end
end
  if value then
    redis.call('HSET', KEYS[1], ARGV[4], value)
    if redis.call('PEXPIRE', KEYS[1], px, 'GT') == 0 and not raw then redis.call('PEXPIRE', KEYS[1], px, 'NX') end
  elseif value == false then
    redis.call('HDEL', KEYS[1], ARGV[4])
  end
end
local packed
if reason == NONE and delay == 0 and remaining <= capacity and remaining % 1 == 0 then
  local p = reset_after * (capacity + 1) + remaining
  if p <= 9007199254740991 then packed = p end
end
if packed then return packed end
if delay ~= 0 then return { reason, remaining, reset_after, retry_after, delay } end
return { reason, remaining, reset_after, retry_after }
