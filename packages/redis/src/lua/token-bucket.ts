import { ceilMsLua, type LeanLua, leanTable, retryMsLua, slackLua } from './lean.js';

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
  `math.max(0, math.min(capacity, math.floor((${accrued} + slack) / per_token)))`;

// peek of the state held in the local `at`.
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
  elseif accrued + slack >= cost * per_token then
    reason, retry_after = NONE, 0
  else
    reason = RATE
    ${retryMsLua('retry_after', 'empty + cost * per_token - now')}
  end
end`;

export const TOKEN_BUCKET_LEAN: LeanLua = {
  locals: ['capacity', 'refill_amount', 'refill_interval', 'strict'],
  width: 1,
  limit: 'capacity',
  prepare: `
local per_token = refill_interval / refill_amount
local full_span = capacity * per_token
${slackLua('per_token')}
`,
  peek: peekAt('state'),
  consume: `do
  local floor = now - full_span
  local empty = state
  if state == nil or state < floor then empty = floor end
  local accrued = now - empty
  if cost <= capacity and accrued + slack >= cost * per_token then
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

// timeToReachLua: sets `out` to the ms until `tokens` (refilled at `last`) reach `want`.
const timeToReachLua = (out: string, tokens: string, last: string, want: string) =>
  `if ${tokens} >= ${want} then ${out} = 0 else
    ${ceilMsLua(out, `${last} + math.ceil((${want} - ${tokens}) / refill_amount) * refill_interval - now`)}
  end`;

// refill: Smyte's (adjustAmount), whole steps since the last refill, the refill mark advanced by
// whole steps even while the bucket is capped at full; a state with no refill mark for \`span\` (a
// whole refill from empty) is dropped, and reads as a fresh key. Sets the locals tokens, last.
const REFILL = `local tokens, last = capacity, now
  if state ~= nil and state2 + span > now then
    local steps = 0
    if now > state2 then steps = math.floor((now - state2 + slack) / refill_interval) end
    tokens, last = math.min(capacity, state + steps * refill_amount), state2 + steps * refill_interval
  end`;

// report: the decision for `tokens` in hand, refilled at `last`.
const report = (last: string) => `do
    ${timeToReachLua('reset_after', 'tokens', last, 'capacity')}
    remaining, delay = tokens, 0
    if cost > capacity then
      reason, retry_after = COST, -1
    elseif tokens >= cost then
      reason, retry_after = NONE, 0
    else
      reason = RATE
      ${retryMsLua('retry_after', `${last} + math.ceil((cost - tokens) / refill_amount) * refill_interval - now`)}
    end
  end`;

/**
 * Stepped refill, in the lean shape (see `lean.ts`). State `tokens, lastRefill`.
 * Params in scope: capacity, refill_amount, refill_interval, strict (0/1).
 */
export const STEPPED_TOKEN_BUCKET_LEAN: LeanLua = {
  locals: ['capacity', 'refill_amount', 'refill_interval', 'strict'],
  width: 2,
  limit: 'capacity',
  prepare: `${slackLua('refill_interval')}
local span = math.ceil(capacity / refill_amount) * refill_interval`,
  peek: `do
  ${REFILL}
  ${report('last')}
end`,
  consume: `do
  ${REFILL}
  if cost <= capacity and tokens >= cost then
    local left = tokens - cost
    next, next2, changed = left, last, true
    reason, remaining, retry_after, delay = NONE, left, 0, 0
    ${timeToReachLua('reset_after', 'left', 'last', 'capacity')}
  else
    -- A refusal writes nothing, except that a strict bucket restarts its refill clock (keeping the
    -- tokens in hand) when the cost could fit.
    next, next2, changed = state, state2, false
    if strict == 1 and cost <= capacity then next, next2, changed, last = tokens, now, true, now end
    ${report('last')}
  end
end`,
  ttl: 'state2 + span - now',
  // Full again with its mark at now: the state a fresh key's first request leaves, dropped.
  refund: `if state + cost < capacity then next, next2 = state + cost, state2
  elseif state2 ~= now then next, next2 = capacity, state2 end`,
};

/** {@link STEPPED_TOKEN_BUCKET_LEAN} in the table shape of the batch scripts. */
export const STEPPED_TOKEN_BUCKET_LUA = leanTable('stepped_token_bucket', STEPPED_TOKEN_BUCKET_LEAN);
