
local EPSILON = 1e-2
local NONE, RATE, COST = 0, 1, 2

local capacity, refill_amount, refill_interval, strict = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8])
local slack = math.min(EPSILON, refill_interval / 2)
local span = math.ceil(capacity / refill_amount) * refill_interval
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
local state, state2
local raw = redis.call('HGET', KEYS[1], ARGV[4])
if raw then
  local comma = string.find(raw, ',', 1, true)
  state, state2 = tonumber(string.sub(raw, 1, comma - 1)), tonumber(string.sub(raw, comma + 1))
end
local reason, remaining, reset_after, retry_after, delay, changed, next, next2
if ARGV[2] == 'peek' then
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
else
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
  -- One call is the whole batch: it writes whatever it changed, admitted or not.
  local value, px
if changed then
  value = false
  if next ~= nil then
    local state, state2 = next, next2
    local ttl_ms = state2 + span - now
    if ttl_ms > 0 then value, px = string.format('%.17g,%.17g', next, next2), math.ceil(ttl_ms) + grace end
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
