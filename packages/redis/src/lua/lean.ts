/**
 * The lean shape of an algorithm's Lua twin, for algorithms whose state is one number (continuous
 * token bucket, GCRA). Each EVALSHA runs a script's whole body, so every function and table a
 * script makes costs Redis time on every call. A lean fragment makes no table: its params are
 * plain locals already in scope (the single-limit script writes them as constants, the batch
 * script binds them per call), a state is a plain number (or nil), and its functions return the
 * decision as values, not as a table:
 *
 * - `peek(state, now, cost)` → reason, remaining, resetAfter, retryAfter, delay
 * - `consume(state, now, cost)` → the same five, then the next state and whether it changed
 * - `ttl(state, now)` → ms the stored state stays meaningful
 * - `refund(state, now, cost)` → the state with `cost` given back, or nil (as good as fresh)
 *
 * The fragment needs only `EPSILON`, `NONE`/`RATE`/`COST` and `ceil_ms` of the prelude.
 */
export interface LeanLua {
  /** The Lua locals the fragment reads its params from, in the order of `LuaAlgorithm.params`. */
  readonly locals: readonly string[];
  /** The local that holds the algorithm's `limit` (the single-limit reply packs remaining with it). */
  readonly limit: string;
  /** Derived params and `peek`, `consume`, `ttl`. */
  readonly lua: string;
  /** `refund`: only the refund scripts need it, so the single-limit script leaves it out. */
  readonly refund: string;
}

/**
 * The lean fragment wrapped in the table shape the batch, refund and split-refund scripts share
 * with the other algorithms (`prepare`, `consume`, `peek`, `ttl`, `refund` over `c` and state
 * lists): `prepare` binds the params and returns the lean functions as `c`. Same Lua source as the
 * single-limit script, so both compute on the same bits.
 */
export function leanTable(table: string, lean: LeanLua): string {
  const n = lean.locals.length;
  return `
local ${table}
do
  local function prepare(p)
    local ${lean.locals.join(', ')} = ${lean.locals.map((_, i) => `p[${i + 1}]`).join(', ')}
${lean.lua}
${lean.refund}
    return { consume = consume, peek = peek, ttl = ttl, refund = refund }
  end
  ${table} = one_number(${n}, prepare)
end
`;
}

/**
 * Adapts a lean algorithm to the table shape: states as one-element lists, decisions as tables
 * (see `decide`; the limit, unused by the scripts, is 0). Defined by `libraryLua` before the
 * fragments.
 */
export const ONE_NUMBER_LUA = `
local function one_number(nparams, prepare)
  -- The same list when the number did not change: a refund that gives nothing back is the state itself.
  local function listed(list, n)
    if n == nil then return nil end
    if list ~= nil and list[1] == n then return list end
    return { n }
  end
  local function first(list)
    if list == nil then return nil end
    return list[1]
  end
  return {
    nparams = nparams,
    prepare = prepare,
    consume = function(state, now, cost, c)
      local reason, remaining, reset_after, retry_after, delay, next, changed = c.consume(first(state), now, cost)
      return decide(reason == NONE, 0, remaining, reset_after, retry_after, delay, reason), listed(state, next), changed
    end,
    peek = function(state, now, cost, c)
      local reason, remaining, reset_after, retry_after, delay = c.peek(first(state), now, cost)
      return decide(reason == NONE, 0, remaining, reset_after, retry_after, delay, reason)
    end,
    ttl = function(state, now, c) return c.ttl(state[1], now) end,
    refund = function(state, now, cost, c) return listed(state, c.refund(state[1], now, cost)) end,
  }
end
`;
