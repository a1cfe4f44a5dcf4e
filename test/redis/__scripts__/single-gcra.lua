
local EPSILON = 1e-2
local NONE, RATE, COST = 0, 1, 2

local rate, period, burst = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])

local emission = period / rate
local tolerance = emission * burst
local slack = math.min(EPSILON, emission / 2)

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
else
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
  -- One call is the whole batch: it writes whatever it changed, admitted or not.
  local value, px
if changed then
  value = false
  if next ~= nil then
    local state = next
    local ttl_ms = state - now
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
if reason == NONE and delay == 0 and remaining <= burst and remaining % 1 == 0 then
  local p = reset_after * (burst + 1) + remaining
  if p <= 9007199254740991 then packed = p end
end
if packed then return packed end
if delay ~= 0 then return { reason, remaining, reset_after, retry_after, delay } end
return { reason, remaining, reset_after, retry_after }
