/**
 * Lua twin of `@sluice/core` `algorithms/token-bucket.ts`, expression for expression (same float
 * operations in the same order, so both stores agree to the bit).
 *
 * Params (ARGV order): capacity, refillAmount, refillInterval, stepped (0/1), strict (0/1).
 * Continuous state `{ emptyAt }`; stepped state `{ tokens, lastRefill }`.
 */
export const TOKEN_BUCKET_LUA = `
local token_bucket = { nparams = 5 }

function token_bucket.prepare(p)
  local c = { capacity = p[1], amount = p[2], interval = p[3], stepped = p[4] == 1, strict = p[5] == 1 }
  c.per_token = c.interval / c.amount
  c.full_span = c.capacity * c.per_token
  return c
end

-- Continuous refill ------------------------------------------------------------------------------

local function empty_at(state, now, c)
  local floor = now - c.full_span
  if state == nil or state[1] < floor then return floor end
  return state[1]
end

-- Whole tokens in accrued ms of refill (compared in ms, not tokens).
local function whole(accrued, c)
  return math.max(0, math.min(c.capacity, math.floor((accrued + EPSILON) / c.per_token)))
end

local function continuous_peek(state, now, cost, c)
  local empty = empty_at(state, now, c)
  local accrued = now - empty
  local reset_after = ceil_ms(empty + c.full_span - now)
  if cost > c.capacity then return decide(false, c.capacity, whole(accrued, c), reset_after, -1, 0, COST) end
  if accrued + EPSILON >= cost * c.per_token then
    return decide(true, c.capacity, whole(accrued, c), reset_after, 0, 0, NONE)
  end
  return decide(false, c.capacity, whole(accrued, c), reset_after, ceil_ms(empty + cost * c.per_token - now), 0, RATE)
end

local function continuous_consume(state, now, cost, c)
  local empty = empty_at(state, now, c)
  local accrued = now - empty
  if cost <= c.capacity and accrued + EPSILON >= cost * c.per_token then
    local next = empty + cost * c.per_token
    return decide(true, c.capacity, whole(now - next, c), ceil_ms(next + c.full_span - now), 0, 0, NONE),
      { next }, true
  end
  if not c.strict or cost > c.capacity then return continuous_peek(state, now, cost, c), state, false end
  -- Strict: keep the whole tokens, drop the progress toward the next one, restart the clock now.
  local next = { now - whole(accrued, c) * c.per_token }
  return continuous_peek(next, now, cost, c), next, true
end

-- Stepped refill ---------------------------------------------------------------------------------

local function refill(state, now, c)
  if state == nil then return c.capacity, now end
  local tokens, last = state[1], state[2]
  local steps = 0
  if now > last then steps = math.floor((now - last + EPSILON) / c.interval) end
  local refilled = tokens + steps * c.amount
  if refilled >= c.capacity then return c.capacity, now end
  return refilled, last + steps * c.interval
end

local function time_to_hold(tokens, last, want, now, c)
  if tokens >= want then return 0 end
  return ceil_ms(last + math.ceil((want - tokens) / c.amount) * c.interval - now)
end

local function report(tokens, last, now, cost, c)
  local reset_after = time_to_hold(tokens, last, c.capacity, now, c)
  if cost > c.capacity then return decide(false, c.capacity, tokens, reset_after, -1, 0, COST) end
  if tokens >= cost then return decide(true, c.capacity, tokens, reset_after, 0, 0, NONE) end
  return decide(false, c.capacity, tokens, reset_after, time_to_hold(tokens, last, cost, now, c), 0, RATE)
end

local function stepped_consume(state, now, cost, c)
  local tokens, last = refill(state, now, c)
  if cost <= c.capacity and tokens >= cost then
    local left = tokens - cost
    return decide(true, c.capacity, left, time_to_hold(left, last, c.capacity, now, c), 0, 0, NONE),
      { left, last }, true
  end
  -- A refusal writes nothing, except that a strict bucket restarts its refill clock (keeping the
  -- tokens in hand) when the cost could fit.
  if not c.strict or cost > c.capacity then return report(tokens, last, now, cost, c), state, false end
  return report(tokens, now, now, cost, c), { tokens, now }, true
end

-- Dispatch ---------------------------------------------------------------------------------------

function token_bucket.consume(state, now, cost, c)
  if c.stepped then return stepped_consume(state, now, cost, c) end
  return continuous_consume(state, now, cost, c)
end

function token_bucket.peek(state, now, cost, c)
  if c.stepped then
    local tokens, last = refill(state, now, c)
    return report(tokens, last, now, cost, c)
  end
  return continuous_peek(state, now, cost, c)
end

function token_bucket.ttl(state, now, c)
  if not c.stepped then return state[1] + c.full_span - now end
  local tokens, last = state[1], state[2]
  if tokens >= c.capacity then return 0 end
  return last + math.ceil((c.capacity - tokens) / c.amount) * c.interval - now
end

-- The tokens go back (a compensation: right even if others wrote the state since).
function token_bucket.refund(state, now, cost, c)
  if c.stepped then
    if state[1] + cost >= c.capacity then return nil end
    return { state[1] + cost, state[2] }
  end
  -- The empty instant moves back by their refill time.
  local empty = state[1] - cost * c.per_token
  if empty <= now - c.full_span then return nil end
  return { empty }
end
`;
