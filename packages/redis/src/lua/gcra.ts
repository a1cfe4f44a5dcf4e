import { ceilMsLua, type LeanLua, leanTable, retryMsLua, slackLua } from './lean.js';

/**
 * Lua twin of `@sluice/core` `algorithms/gcra.ts`, expression for expression, in the lean shape
 * (see `lean.ts`).
 *
 * Params (ARGV order): rate, period, burst. State: one number, the theoretical arrival time.
 */

// consuming false reports the meter as it stands (peek); true reports it after this request.
const evaluate = (consuming: boolean) => `do
  local tat = now
  if state ~= nil and not (state < now) then tat = state end
  local increment = emission * cost
  local new_tat = tat + increment
  local wait = new_tat - tolerance - now
  local allowed = wait <= slack
  local ttl = tat - now
  ${consuming ? 'if allowed then ttl = new_tat - now end' : ''}
  local headroom = tolerance - ttl
  remaining, delay = math.min(burst, math.max(0, math.floor((headroom + slack) / emission))), 0
  ${ceilMsLua('reset_after', 'ttl')}
  if allowed then
    reason, retry_after = NONE, 0
    ${consuming ? 'next, changed = new_tat, true' : ''}
  elseif increment > tolerance + slack then
    reason, retry_after = COST, -1
  else
    reason = RATE
    ${retryMsLua('retry_after', 'wait')}
  end
end`;

export const GCRA_LEAN: LeanLua = {
  locals: ['rate', 'period', 'burst'],
  width: 1,
  limit: 'burst',
  prepare: `
local emission = period / rate
local tolerance = emission * burst
${slackLua('emission')}
`,
  peek: evaluate(false),
  consume: `next, changed = state, false
${evaluate(true)}`,
  ttl: 'state - now',
  refund: `do
  local tat = state - emission * cost
  if tat > now then next = tat end
end`,
};

/** {@link GCRA_LEAN} in the table shape of the batch scripts. */
export const GCRA_LUA = leanTable('gcra', GCRA_LEAN);
