/**
 * Lua twin of `@sluice/core` `algorithms/gcra.ts`, expression for expression.
 *
 * Params (ARGV order): rate, period, burst. State `{ tat }` (theoretical arrival time).
 */
export const GCRA_LUA = `
local gcra
do
  local function prepare(p)
    local c = { rate = p[1], period = p[2], burst = p[3] }
    c.emission = c.period / c.rate
    c.tolerance = c.emission * c.burst
    return c
  end

  -- consuming false reports the meter as it stands (peek); true reports it after this request.
  local function evaluate(state, now, cost, c, consuming)
    local tat = now
    if state ~= nil and not (state[1] < now) then tat = state[1] end
    local increment = c.emission * cost
    local new_tat = tat + increment
    local wait = new_tat - c.tolerance - now
    local allowed = wait <= EPSILON
    local ttl = tat - now
    if allowed and consuming then ttl = new_tat - now end
    local headroom = c.tolerance - ttl
    local remaining = math.max(0, math.floor((headroom + EPSILON) / c.emission))
    if allowed then return decide(true, c.burst, remaining, ceil_ms(ttl), 0, 0, NONE), { new_tat }, true end
    local never = increment > c.tolerance + EPSILON
    if never then return decide(false, c.burst, remaining, ceil_ms(ttl), -1, 0, COST), state, false end
    return decide(false, c.burst, remaining, ceil_ms(ttl), ceil_ms(wait), 0, RATE), state, false
  end

  local function consume(state, now, cost, c) return evaluate(state, now, cost, c, true) end

  local function peek(state, now, cost, c)
    local decision = evaluate(state, now, cost, c, false)
    return decision
  end

  local function ttl(state, now) return state[1] - now end

  local function refund(state, now, cost, c)
    local tat = state[1] - c.emission * cost
    if tat <= now then return nil end
    return { tat }
  end

  gcra = { nparams = 3, prepare = prepare, consume = consume, peek = peek, ttl = ttl, refund = refund }
end
`;
