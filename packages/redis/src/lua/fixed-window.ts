/**
 * Lua twin of `@sluice/core` `algorithms/fixed-window.ts`, expression for expression.
 *
 * Params (ARGV order): limit, window. State `{ count, windowStart }`.
 */
export const FIXED_WINDOW_LUA = `
local fixed_window
do
  local function prepare(p) return { limit = p[1], window = p[2] } end

  -- Time is read EPSILON late: a window boundary EPSILON away is already crossed. Replayed
  -- (client-supplied) times may go backwards: a late request counts in the newest window stored,
  -- so it can never reset a newer window's count.
  local function window_start(state, now, c)
    local start = math.floor((now + EPSILON) / c.window) * c.window
    if state ~= nil and state[2] > start then return state[2] end
    return start
  end

  local function current(state, start)
    if state ~= nil and state[2] == start then return state[1] end
    return 0
  end

  local function evaluate(count, start, now, cost, c, consuming)
    local reset_after = ceil_ms(start + c.window - now)
    if cost > c.limit then
      local reset = 0
      if count > 0 then reset = reset_after end
      return decide(false, c.limit, math.max(0, c.limit - count), reset, -1, 0, COST)
    end
    if count + cost <= c.limit then
      local taken, reset = 0, 0
      if consuming then taken = cost end
      if count > 0 or consuming then reset = reset_after end
      return decide(true, c.limit, c.limit - count - taken, reset, 0, 0, NONE)
    end
    return decide(false, c.limit, math.max(0, c.limit - count), reset_after, reset_after, 0, RATE)
  end

  local function consume(state, now, cost, c)
    local start = window_start(state, now, c)
    local count = current(state, start)
    local decision = evaluate(count, start, now, cost, c, true)
    if not decision[1] then return decision, state, false end
    return decision, { count + cost, start }, true
  end

  local function peek(state, now, cost, c)
    local start = window_start(state, now, c)
    return evaluate(current(state, start), start, now, cost, c, false)
  end

  local function ttl(state, now, c) return state[2] + c.window - now end

  -- Only into the window the units were counted in; once it has passed there is nothing to undo.
  local function refund(state, now, cost, c)
    if state[2] ~= math.floor((now + EPSILON) / c.window) * c.window then return state end
    local count = state[1] - cost
    if count <= 0 then return nil end
    return { count, state[2] }
  end

  fixed_window = { nparams = 2, prepare = prepare, consume = consume, peek = peek, ttl = ttl, refund = refund }
end
`;
