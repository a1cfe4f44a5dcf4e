import { ceilMsLua, type LeanLua, leanTable } from './lean.js';

/**
 * Lua twins of `@sluice/core` `algorithms/token-bucket.ts`, expression for expression (same float
 * operations in the same order, so both stores agree to the bit). One twin per refill mode, as the
 * TypeScript has `continuousBucket` and `steppedBucket`: a script pays, on every call, for each
 * function it defines, so a continuous bucket's script holds no stepped code.
 *
 * Params (ARGV order): capacity, refillAmount, refillInterval, strict (0/1).
 */

/**
 * Continuous refill, in the lean shape (see `lean.ts`). State: one number, `emptyAt`.
 * Params in scope: capacity, refill_amount, refill_interval, strict (0/1).
 */

// Whole tokens in accrued ms of refill (compared in ms, not tokens).
const whole = (accrued: string) =>
  `math.max(0, math.min(capacity, math.floor((${accrued} + EPSILON) / per_token)))`;

// peek of the state held in the local \`at\`.
const peekAt = (at: string) => `do
  -- empty_at: a bucket idle long enough is full, the empty instant is clamped.
  local floor = now - full_span
  local empty = ${at}
  if ${at} == nil or ${at} < floor then empty = floor end
  local accrued = now - empty
  ${ceilMsLua('reset_after', 'empty + full_span - now')}
  remaining, delay = ${whole('accrued')}, 0
  if cost > capacity then
    reason, retry_after = COST, -1
  elseif accrued + EPSILON >= cost * per_token then
    reason, retry_after = NONE, 0
  else
    reason = RATE
    ${ceilMsLua('retry_after', 'empty + cost * per_token - now')}
  end
end`;

export const TOKEN_BUCKET_LEAN: LeanLua = {
  locals: ['capacity', 'refill_amount', 'refill_interval', 'strict'],
  limit: 'capacity',
  prepare: `
local per_token = refill_interval / refill_amount
local full_span = capacity * per_token
`,
  peek: peekAt('state'),
  consume: `do
  local floor = now - full_span
  local empty = state
  if state == nil or state < floor then empty = floor end
  local accrued = now - empty
  if cost <= capacity and accrued + EPSILON >= cost * per_token then
    next, changed = empty + cost * per_token, true
    reason, remaining, retry_after, delay = NONE, ${whole('now - next')}, 0, 0
    ${ceilMsLua('reset_after', 'next + full_span - now')}
  else
    next, changed = state, false
    -- Strict: keep the whole tokens, drop the progress toward the next one, restart the clock now.
    if strict == 1 and cost <= capacity then next, changed = now - ${whole('accrued')} * per_token, true end
    ${peekAt('next')}
  end
end`,
  ttl: 'state + full_span - now',
  // The tokens go back: the empty instant moves back by their refill time (a compensation: right
  // even if others wrote the state since).
  refund: `do
  local empty = state - cost * per_token
  if empty > now - full_span then next = empty end
end`,
};

/** {@link TOKEN_BUCKET_LEAN} in the table shape of the batch scripts. */
export const TOKEN_BUCKET_LUA = leanTable('token_bucket', TOKEN_BUCKET_LEAN);

/** Stepped refill. State `{ tokens, lastRefill }`. */
export const STEPPED_TOKEN_BUCKET_LUA = `
local stepped_token_bucket
do
  local function prepare(p)
    return { capacity = p[1], amount = p[2], interval = p[3], strict = p[4] == 1 }
  end

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

  local function consume(state, now, cost, c)
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

  local function peek(state, now, cost, c)
    local tokens, last = refill(state, now, c)
    return report(tokens, last, now, cost, c)
  end

  local function ttl(state, now, c)
    local tokens, last = state[1], state[2]
    if tokens >= c.capacity then return 0 end
    return last + math.ceil((c.capacity - tokens) / c.amount) * c.interval - now
  end

  local function refund(state, now, cost, c)
    if state[1] + cost >= c.capacity then return nil end
    return { state[1] + cost, state[2] }
  end

  stepped_token_bucket = { nparams = 4, prepare = prepare, consume = consume, peek = peek, ttl = ttl, refund = refund }
end
`;
