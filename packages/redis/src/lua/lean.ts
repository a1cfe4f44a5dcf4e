/**
 * The lean shape of an algorithm's Lua twin, for algorithms whose state is one number (continuous
 * token bucket, GCRA). Each EVALSHA runs a script's whole body, so every function (a closure and
 * its upvalues) and every table a script makes costs Redis time on every call, and feeds its
 * garbage collector. A lean twin is straight-line Lua, blocks over agreed locals:
 *
 * - params: plain locals (`locals`), already in scope; `prepare` derives the others from them.
 * - `peek`: reads `state` (a number, or nil for none), `now`, `cost`; sets the decision, `reason,
 *   remaining, reset_after, retry_after, delay` (declared by the script around it).
 * - `consume`: the same, and sets `next` (the new state, or nil) and `changed`.
 * - `ttl`: an expression of `state` and `now`, ms the stored state stays meaningful.
 * - `refund`: reads `state`, `now`, `cost`; sets `next`, the state with `cost` given back, or nil.
 *
 * The single-limit script inlines the blocks: it defines no function and makes no table but its
 * reply. The batch scripts wrap the same blocks in functions ({@link leanTable}). Blocks need only
 * `EPSILON` and `NONE`/`RATE`/`COST` of the prelude ({@link ceilMsLua} inlines `ceil_ms`).
 */
export interface LeanLua {
  /** The Lua locals the fragment reads its params from, in the order of `LuaAlgorithm.params`. */
  readonly locals: readonly string[];
  /** The local that holds the algorithm's `limit` (the single-limit reply packs remaining with it). */
  readonly limit: string;
  readonly prepare: string;
  readonly peek: string;
  readonly consume: string;
  readonly ttl: string;
  readonly refund: string;
}

/**
 * `decision.ts` `ceilMs`, inline: sets `out` to `ms` in whole ms, rounded up, never negative; within
 * EPSILON of a whole ms rounds down to it (the algorithms read time EPSILON late).
 */
export function ceilMsLua(out: string, ms: string): string {
  return `do
  local ms = ${ms}
  if ms <= EPSILON then ${out} = 0 else ${out} = math.ceil(ms - EPSILON) end
end`;
}

/**
 * The lean twin wrapped in the table shape the batch, refund and split-refund scripts share with
 * the other algorithms (`prepare`, `consume`, `peek`, `ttl`, `refund` over `c` and state lists):
 * `prepare` binds the params and returns the blocks as functions in `c`, adapted by `one_number`.
 */
export function leanTable(table: string, lean: LeanLua): string {
  const n = lean.locals.length;
  return `
local ${table}
do
  local function prepare(p)
    local ${lean.locals.join(', ')} = ${lean.locals.map((_, i) => `p[${i + 1}]`).join(', ')}
${lean.prepare}
    local function peek(state, now, cost)
      local reason, remaining, reset_after, retry_after, delay
${lean.peek}
      return reason, remaining, reset_after, retry_after, delay
    end
    local function consume(state, now, cost)
      local reason, remaining, reset_after, retry_after, delay, next, changed
${lean.consume}
      return reason, remaining, reset_after, retry_after, delay, next, changed
    end
    local function ttl(state, now) return ${lean.ttl} end
    local function refund(state, now, cost)
      local next
${lean.refund}
      return next
    end
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
