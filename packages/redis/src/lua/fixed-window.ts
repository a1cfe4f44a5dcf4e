import { ceilMsLua, type LeanLua, leanTable, retryMsLua } from './lean.js';

/**
 * Lua twin of `@sluice/core` `algorithms/fixed-window.ts`, expression for expression, in the lean
 * shape (see `lean.ts`).
 *
 * Params (ARGV order): limit, window. State `count, windowStart`.
 */

// window_start and current: sets the locals start and count. Time is read EPSILON late: a window
// boundary EPSILON away is already crossed. Replayed (client-supplied) times may go backwards: a
// late request counts in the newest window stored, so it can never reset a newer window's count.
const CURRENT = `local start = math.floor((now + EPSILON) / window) * window
  if state ~= nil and state2 > start then start = state2 end
  local count = 0
  if state ~= nil and state2 == start then count = state end`;

// consuming false reports the window as it stands (peek); true reports it after this request.
const evaluate = (consuming: boolean) => `do
  ${CURRENT}
  local full_reset
  ${ceilMsLua('full_reset', 'start + window - now', 'EPSILON')}
  delay = 0
  if cost > limit then
    reason, remaining, retry_after, reset_after = COST, math.max(0, limit - count), -1, 0
    if count > 0 then reset_after = full_reset end
  elseif count + cost <= limit then
    reason, retry_after = NONE, 0
${
  consuming
    ? `    remaining, reset_after = limit - count - cost, full_reset
    next, next2, changed = count + cost, start, true`
    : `    remaining, reset_after = limit - count - 0, 0
    if count > 0 then reset_after = full_reset end`
}
  else
    reason, remaining, reset_after = RATE, math.max(0, limit - count), full_reset
    ${retryMsLua('retry_after', 'start + window - now', 'EPSILON')}
  end
end`;

export const FIXED_WINDOW_LEAN: LeanLua = {
  locals: ['limit', 'window'],
  width: 2,
  limit: 'limit',
  prepare: '',
  peek: evaluate(false),
  consume: `next, next2, changed = state, state2, false
${evaluate(true)}`,
  ttl: 'state2 + window - now',
  // Only into the window the units were counted in; once it has passed there is nothing to undo.
  refund: `next, next2 = state, state2
if state2 == math.floor((now + EPSILON) / window) * window then
  if state - cost > 0 then next, next2 = state - cost, state2 else next, next2 = nil, nil end
end`,
};

/** {@link FIXED_WINDOW_LEAN} in the table shape of the batch scripts. */
export const FIXED_WINDOW_LUA = leanTable('fixed_window', FIXED_WINDOW_LEAN);
