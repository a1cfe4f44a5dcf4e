/**
 * Lua twin of `@sluice/core` `algorithms/leaky-bucket-queue.ts`, expression for expression.
 *
 * Params (ARGV order): rate, period, burst, queue, maxDelay (0 = no bound). State `{ drainAt }`.
 */
export const LEAKY_BUCKET_QUEUE_LUA = `
local leaky_bucket_queue = { nparams = 5 }

function leaky_bucket_queue.prepare(p)
  local c = { rate = p[1], period = p[2], burst = p[3], queue = p[4], bounded = p[5] ~= 0 }
  c.interval = c.period / c.rate
  c.max_delay = math.huge
  if c.bounded then c.max_delay = p[5] end
  c.capacity = c.burst + c.queue
  return c
end

local function evaluate(state, now, cost, c, consuming)
  local drain_at = now
  if state ~= nil and not (state[1] < now) then drain_at = state[1] end
  local new_drain_at = drain_at + cost * c.interval
  -- Units queued ahead of and including this request; the first burst of them go at once.
  local depth = (new_drain_at - now) / c.interval
  local delay = math.max(0, (depth - c.burst) * c.interval)
  local allowed = depth <= c.capacity + EPSILON and delay <= c.max_delay + EPSILON
  if allowed and not consuming then
    local queued = (drain_at - now) / c.interval
    return decide(true, c.capacity, math.max(0, math.floor(c.capacity - queued + EPSILON)),
      ceil_ms(drain_at - now), 0, 0, NONE), state, false
  end
  if allowed then
    local remaining = math.max(0, math.floor(c.capacity - depth + EPSILON))
    return decide(true, c.capacity, remaining, ceil_ms(new_drain_at - now), 0, ceil_ms(delay - EPSILON), NONE),
      { new_drain_at }, true
  end
  local queued = (drain_at - now) / c.interval
  local remaining = math.max(0, math.floor(c.capacity - queued + EPSILON))
  if cost > c.capacity then
    return decide(false, c.capacity, remaining, ceil_ms(drain_at - now), -1, 0, COST), state, false
  end
  -- Wait until the queue has drained enough for this cost to fit under both bounds.
  local fit = c.capacity
  if c.bounded then fit = c.max_delay / c.interval + c.burst end
  local fit_depth = math.min(c.capacity, fit)
  local wait = drain_at + cost * c.interval - fit_depth * c.interval - now
  return decide(false, c.capacity, remaining, ceil_ms(drain_at - now), math.max(1, ceil_ms(wait)), 0, RATE),
    state, false
end

function leaky_bucket_queue.consume(state, now, cost, c) return evaluate(state, now, cost, c, true) end

function leaky_bucket_queue.peek(state, now, cost, c)
  local decision = evaluate(state, now, cost, c, false)
  return decision
end

function leaky_bucket_queue.ttl(state, now) return state[1] - now end
`;
