
local EPSILON = 1e-2
local NONE, RATE, COST = 0, 1, 2

local limit, window = tonumber(ARGV[5]), tonumber(ARGV[6])

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
else
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
  -- One call is the whole batch: it writes whatever it changed, admitted or not.
  local value, px
if changed then
  value = false
  if next ~= nil then
    local state, state2 = next, next2
    local ttl_ms = state2 + window - now
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
if reason == NONE and delay == 0 and remaining <= limit and remaining % 1 == 0 then
  local p = reset_after * (limit + 1) + remaining
  if p <= 9007199254740991 then packed = p end
end
if packed then return packed end
if delay ~= 0 then return { reason, remaining, reset_after, retry_after, delay } end
return { reason, remaining, reset_after, retry_after }
