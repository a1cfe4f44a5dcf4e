/**
 * Lua twin of `@sluice/core` `algorithms/sliding-window-log.ts`, expression for expression.
 *
 * Params (ARGV order): limit, window. State: admitted units by millisecond, oldest first,
 * flattened `{ time1, units1, time2, units2, … }` (one entry per distinct time).
 */
export const SLIDING_WINDOW_LOG_LUA = `
local sliding_window_log
do
  local function prepare(p) return { limit = p[1], window = p[2] } end

  -- Index of the first entry still inside (now - window, now], and the units those entries hold.
  local function live(log, now, c)
    local first = 1
    while first <= #log and log[first] <= now + EPSILON - c.window do first = first + 2 end
    local used = 0
    for i = first + 1, #log, 2 do used = used + log[i] end
    return first, used
  end

  local function evaluate(log, first, used, now, cost, c, consuming)
    local newest = nil
    if #log >= first then newest = log[#log - 1] end
    if cost > c.limit then
      local reset = 0
      if newest ~= nil then reset = ceil_ms(newest + c.window - now) end
      return decide(false, c.limit, math.max(0, c.limit - used), reset, -1, 0, COST)
    end
    if used + cost <= c.limit then
      if not consuming then
        local reset = 0
        if newest ~= nil then reset = ceil_ms(newest + c.window - now) end
        return decide(true, c.limit, c.limit - used, reset, 0, 0, NONE)
      end
      return decide(true, c.limit, c.limit - used - cost, ceil_ms(math.max(newest or now, now) + c.window - now), 0, 0, NONE)
    end
    -- Wait until enough of the oldest entries have left the window.
    local freed, retry_at = 0, now
    local i = first
    while i <= #log and used - freed + cost > c.limit do
      freed = freed + log[i + 1]
      retry_at = log[i] + c.window
      i = i + 2
    end
    return decide(false, c.limit, math.max(0, c.limit - used), ceil_ms(newest + c.window - now), math.max(1, ceil_ms(retry_at - now)), 0, RATE)
  end

  local function consume(state, now, cost, c)
    local log = state or {}
    local first, used = live(log, now, c)
    local decision = evaluate(log, first, used, now, cost, c, true)
    if not decision[1] then return decision, state, false end
    -- Replayed (client-supplied) times may arrive out of order: keep the log sorted.
    local at = #log + 1
    while at > first and log[at - 2] > now do at = at - 2 end
    local kept = {}
    for j = first, at - 1 do kept[#kept + 1] = log[j] end
    -- Requests in the same millisecond share one entry: they leave the window together, so the
    -- decisions are the same and a busy key's log stays at most one entry per millisecond.
    if at > first and log[at - 2] == now then
      kept[#kept] = kept[#kept] + cost
    else
      kept[#kept + 1] = now
      kept[#kept + 1] = cost
    end
    for j = at, #log do kept[#kept + 1] = log[j] end
    return decision, kept, true
  end

  local function peek(state, now, cost, c)
    local log = state or {}
    local first, used = live(log, now, c)
    return evaluate(log, first, used, now, cost, c, false)
  end

  local function ttl(state, now, c)
    if #state == 0 then return 0 end
    return state[#state - 1] + c.window - now
  end

  -- Takes this request's units out of the entry of its millisecond.
  local function refund(state, now, cost, c)
    for i = #state - 1, 1, -2 do
      if state[i] == now and state[i + 1] >= cost then
        local next = copy(state)
        if next[i + 1] == cost then
          table.remove(next, i)
          table.remove(next, i)
        else
          next[i + 1] = next[i + 1] - cost
        end
        if #next == 0 then return nil end
        return next
      end
    end
    return state
  end

  sliding_window_log = { nparams = 2, prepare = prepare, consume = consume, peek = peek, ttl = ttl, refund = refund }
end
`;
