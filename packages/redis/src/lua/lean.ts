/**
 * The lean shape of an algorithm's Lua twin, for algorithms whose state is one or two numbers
 * (continuous and stepped token bucket, GCRA, fixed window, leaky bucket queue). Each EVALSHA runs
 * a script's whole body, so every function (a closure and its upvalues) and every table a script
 * makes costs Redis time on every call, and feeds its garbage collector. A lean twin is
 * straight-line Lua, blocks over agreed locals:
 *
 * - params: plain locals (`locals`), already in scope; `prepare` derives the others from them.
 * - the state: `state` (a number, or nil for none) and, for a state of two numbers, `state2`.
 * - `peek`: reads the state, `now`, `cost`; sets the decision, `reason, remaining, reset_after,
 *   retry_after, delay` (declared by the script around it).
 * - `consume`: the same, and sets the new state `next` (nil for none) and `next2`, and `changed`.
 * - `ttl`: an expression of the state and `now`, ms the stored state stays meaningful.
 * - `refund`: reads the state, `now`, `cost`; sets `next` (and `next2`), the state with `cost`
 *   given back (the state itself when nothing goes back), or nil for none.
 *
 * The single-limit script inlines the blocks: it defines no function and makes no table but its
 * reply. The batch scripts wrap the same blocks in functions ({@link leanTable}). Blocks need only
 * `EPSILON` and `NONE`/`RATE`/`COST` of the prelude ({@link ceilMsLua} inlines `ceil_ms`, with the
 * slack `prepare` derives: {@link slackLua}).
 */
export interface LeanLua {
  /** The Lua locals the fragment reads its params from, in the order of `LuaAlgorithm.params`. */
  readonly locals: readonly string[];
  /** The local that holds the algorithm's `limit` (the single-limit reply packs remaining with it). */
  readonly limit: string;
  /** Numbers in a state: stored as one number, or as `'%.17g,%.17g'`. */
  readonly width: 1 | 2;
  readonly prepare: string;
  readonly peek: string;
  readonly consume: string;
  readonly ttl: string;
  readonly refund: string;
}

/**
 * `decision.ts` `ceilMs`, inline: sets `out` to `ms` in whole ms, rounded up, never negative; within
 * `slack` (a Lua name: `slack` of the twins, `slackFor` in TypeScript) of a whole ms rounds down to it
 * (the algorithms read time that much late).
 */
export function ceilMsLua(out: string, ms: string, slack = 'slack'): string {
  return `do local ms = ${ms}; if ms <= ${slack} then ${out} = 0 else ${out} = math.ceil(ms - ${slack}) end end`;
}

/** `decision.ts` `retryMs`, inline: {@link ceilMsLua}, never below 1 (a refusal's `retryAfter`). */
export function retryMsLua(out: string, ms: string, slack = 'slack'): string {
  return `${ceilMsLua(out, ms, slack)}; ${out} = math.max(1, ${out})`;
}

/** `algorithm.ts` `slackFor`, in the twins' `prepare`: the local `slack` for a unit of `unit` ms. */
export const slackLua = (unit: string) => `local slack = math.min(EPSILON, ${unit} / 2)`;

/** The Lua names of a lean state's numbers: `state`, `state2`; `next`, `next2`. */
export function stateNames(lean: LeanLua, name: 'state' | 'next'): string {
  return lean.width === 1 ? name : `${name}, ${name}2`;
}

/**
 * The lean twin wrapped in the table shape the batch, refund and split-refund scripts share with
 * the other algorithms (`prepare`, `consume`, `peek`, `ttl`, `refund` over `c` and state lists),
 * adapted by `lean_table`. Each function binds the params from `c` (the list of params) and derives
 * the others itself: the functions are made once per script run, not once per call.
 */
export function leanTable(table: string, lean: LeanLua): string {
  const bind = `local ${lean.locals.join(', ')} = ${lean.locals.map((_, i) => `c[${i + 1}]`).join(', ')}
${lean.prepare}`;
  // Every width has the same signatures here (state2 and next2 stay nil for one number).
  return `
local ${table}
do
  local function peek(c, state, state2, now, cost)
    ${bind}
    local reason, remaining, reset_after, retry_after, delay
${lean.peek}
    return reason, remaining, reset_after, retry_after, delay
  end
  local function consume(c, state, state2, now, cost)
    ${bind}
    local reason, remaining, reset_after, retry_after, delay, changed, next, next2
${lean.consume}
    return reason, remaining, reset_after, retry_after, delay, changed, next, next2
  end
  local function ttl(c, state, state2, now)
    ${bind}
    return ${lean.ttl}
  end
  local function refund(c, state, state2, now, cost)
    ${bind}
    local next, next2
${lean.refund}
    return next, next2
  end
  ${table} = lean_table(${lean.locals.length}, peek, consume, ttl, refund)
end
`;
}

/**
 * Adapts a lean algorithm to the table shape: `c` is the list of params, states are lists of one
 * or two numbers, decisions are tables (see `decide`; the limit, unused by the scripts, is 0).
 * Defined by `libraryLua` before the fragments.
 */
export const LEAN_TABLE_LUA = `
-- The same list when the numbers did not change: a refund that gives nothing back is the state itself.
local function listed(list, a, b)
  if a == nil then return nil end
  if list ~= nil and list[1] == a and list[2] == b then return list end
  return { a, b }
end

local function unlist(list)
  if list == nil then return nil end
  return list[1], list[2]
end

local function lean_table(nparams, peek, consume, ttl, refund)
  return {
    nparams = nparams,
    prepare = function(p) return p end,
    consume = function(state, now, cost, c)
      local a, b = unlist(state)
      local reason, remaining, reset_after, retry_after, delay, changed, next, next2 = consume(c, a, b, now, cost)
      return decide(reason == NONE, 0, remaining, reset_after, retry_after, delay, reason), listed(state, next, next2), changed
    end,
    peek = function(state, now, cost, c)
      local a, b = unlist(state)
      local reason, remaining, reset_after, retry_after, delay = peek(c, a, b, now, cost)
      return decide(reason == NONE, 0, remaining, reset_after, retry_after, delay, reason)
    end,
    ttl = function(state, now, c) return ttl(c, state[1], state[2], now) end,
    refund = function(state, now, cost, c) return listed(state, refund(c, state[1], state[2], now, cost)) end,
  }
end
`;
