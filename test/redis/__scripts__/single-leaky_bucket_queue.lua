
local EPSILON = 1e-2
local NONE, RATE, COST = 0, 1, 2

local rate, period, burst, queue, max_delay_bound = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])

local interval = period / rate
local slack = math.min(EPSILON, interval / 2)
local max_delay = math.huge
if max_delay_bound ~= 0 then max_delay = max_delay_bound end
-- The deepest backlog either bound allows, in ms, and the most units it can ever hold.
local room = math.min((burst + queue) * interval, burst * interval + max_delay)
local capacity = math.min(burst + queue, burst + math.floor((max_delay + slack) / interval))

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
else
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
if reason == NONE and delay == 0 and remaining <= capacity and remaining % 1 == 0 then
  local p = reset_after * (capacity + 1) + remaining
  if p <= 9007199254740991 then packed = p end
end
if packed then return packed end
if delay ~= 0 then return { reason, remaining, reset_after, retry_after, delay } end
return { reason, remaining, reset_after, retry_after }
