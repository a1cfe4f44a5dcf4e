import { type LeanLua, leanTable } from './lean.js';

/**
 * Lua twin of `@sluice/core` `algorithms/gcra.ts`, expression for expression, in the lean shape
 * (see `lean.ts`).
 *
 * Params (ARGV order): rate, period, burst. State: one number, the theoretical arrival time.
 */
export const GCRA_LEAN: LeanLua = {
  locals: ['rate', 'period', 'burst'],
  limit: 'burst',
  lua: `
local emission = period / rate
local tolerance = emission * burst

-- consuming false reports the meter as it stands (peek); true reports it after this request.
local function evaluate(state, now, cost, consuming)
  local tat = now
  if state ~= nil and not (state < now) then tat = state end
  local increment = emission * cost
  local new_tat = tat + increment
  local wait = new_tat - tolerance - now
  local allowed = wait <= EPSILON
  local ttl = tat - now
  if allowed and consuming then ttl = new_tat - now end
  local headroom = tolerance - ttl
  local remaining = math.max(0, math.floor((headroom + EPSILON) / emission))
  if allowed then return NONE, remaining, ceil_ms(ttl), 0, 0, new_tat, true end
  if increment > tolerance + EPSILON then return COST, remaining, ceil_ms(ttl), -1, 0, state, false end
  return RATE, remaining, ceil_ms(ttl), ceil_ms(wait), 0, state, false
end

local function consume(state, now, cost) return evaluate(state, now, cost, true) end

-- The state and changed flag it also returns are ignored.
local function peek(state, now, cost) return evaluate(state, now, cost, false) end

local function ttl(state, now) return state - now end
`,
  refund: `
local function refund(state, now, cost)
  local tat = state - emission * cost
  if tat <= now then return nil end
  return tat
end
`,
};

/** {@link GCRA_LEAN} in the table shape of the batch scripts. */
export const GCRA_LUA = leanTable('gcra', GCRA_LEAN);
