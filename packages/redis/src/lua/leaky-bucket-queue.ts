/**
 * Lua twin of `@sluice/core` `algorithms/leaky-bucket-queue.ts`, expression for expression.
 *
 * Params (ARGV order): rate, period, burst, queue, maxDelay (0 = no bound). State `{ drainAt }`.
 */
export const LEAKY_BUCKET_QUEUE_LUA = `
local leaky_bucket_queue
do
  local function prepare(p)
    local c = { rate = p[1], period = p[2], burst = p[3], queue = p[4], bounded = p[5] ~= 0 }
    c.interval = c.period / c.rate
    c.max_delay = math.huge
    if c.bounded then c.max_delay = p[5] end
    -- The deepest backlog either bound allows, in ms, and the most units it can ever hold.
    c.room = math.min((c.burst + c.queue) * c.interval, c.burst * c.interval + c.max_delay)
    c.capacity = math.min(c.burst + c.queue, c.burst + math.floor((c.max_delay + EPSILON) / c.interval))
    return c
  end

  local function evaluate(state, now, cost, c, consuming)
    local drain_at = now
    if state ~= nil and not (state[1] < now) then drain_at = state[1] end
    local new_drain_at = drain_at + cost * c.interval
    -- The queue ahead of and including this request, in ms; the first burst units go at once.
    local backlog = new_drain_at - now
    local delay = math.max(0, backlog - c.burst * c.interval)
    local allowed = backlog <= c.room + EPSILON
    -- Whole free places when the queue drains at drain.
    local function free(drain)
      return math.max(0, math.min(c.capacity, math.floor((c.room - (drain - now) + EPSILON) / c.interval)))
    end
    if allowed and not consuming then
      return decide(true, c.capacity, free(drain_at), ceil_ms(drain_at - now), 0, 0, NONE), state, false
    end
    if allowed then
      return decide(true, c.capacity, free(new_drain_at), ceil_ms(new_drain_at - now), 0, ceil_ms(delay), NONE),
        { new_drain_at }, true
    end
    local remaining = free(drain_at)
    if cost > c.capacity then
      return decide(false, c.capacity, remaining, ceil_ms(drain_at - now), -1, 0, COST), state, false
    end
    -- Wait until the queue has drained enough for this cost to fit under both bounds.
    local wait = drain_at + cost * c.interval - c.room - now
    return decide(false, c.capacity, remaining, ceil_ms(drain_at - now), math.max(1, ceil_ms(wait)), 0, RATE),
      state, false
  end

  local function consume(state, now, cost, c) return evaluate(state, now, cost, c, true) end

  local function peek(state, now, cost, c)
    local decision = evaluate(state, now, cost, c, false)
    return decision
  end

  local function ttl(state, now) return state[1] - now end

  -- The held request's slot leaves the queue: everyone behind keeps their turn.
  local function refund(state, now, cost, c)
    local drain_at = state[1] - cost * c.interval
    if drain_at <= now then return nil end
    return { drain_at }
  end

  leaky_bucket_queue = { nparams = 5, prepare = prepare, consume = consume, peek = peek, ttl = ttl, refund = refund }
end
`;
