import { type LuaAlgorithm, WRITE_LUA } from '../lua/algorithms.js';
import { type LeanLua, stateNames } from '../lua/lean.js';
import { CONSTANTS_LUA, PRELUDE_LUA, READ_NOW_INLINE_LUA } from '../lua/prelude.js';

/**
 * A single-limit script's reply: an admission without delay, the hot path, is one integer,
 * `resetAfter * (limit + 1) + remaining` (see `readSingleDecision` in wire.ts), when that is exact:
 * whole numbers, `remaining ≤ limit`, below 2^53 (a table reply costs Redis ~0.5 µs more: it is
 * written with a deferred length). Otherwise the list, without the delay when it is 0.
 */
function replyLua(
  limit: string,
  reason: string,
  remaining: string,
  resetAfter: string,
  retryAfter: string,
  delay: string,
): string {
  return `${packLua(limit, 'local packed', reason, remaining, resetAfter, delay)}
if packed then return packed end
if ${delay} ~= 0 then return { ${reason}, ${remaining}, ${resetAfter}, ${retryAfter}, ${delay} } end
return { ${reason}, ${remaining}, ${resetAfter}, ${retryAfter} }`;
}

/**
 * Sets `out` (an assignable Lua name, or `local <name>` to declare it) to a decision packed into one
 * integer, `resetAfter * (limit + 1) + remaining`, when that is exact (an admission without delay,
 * whole numbers, `remaining ≤ limit`, below 2^53; see `readSingleDecision` in wire.ts), else nil.
 */
export function packLua(
  limit: string,
  out: string,
  reason = 'reason',
  remaining = 'remaining',
  resetAfter = 'reset_after',
  delay = 'delay',
): string {
  const name = out.replace(/^local /, '');
  return `${out.startsWith('local ') ? `${out}\n` : ''}if ${reason} == NONE and ${delay} == 0 and ${remaining} <= ${limit} and ${remaining} % 1 == 0 then
  local p = ${resetAfter} * (${limit} + 1) + ${remaining}
  if p <= 9007199254740991 then ${name} = p end
end`;
}

/**
 * One limit of one algorithm kind, what the batch script does for a single call. Each EVALSHA
 * runs a script's whole body, defining every function in it, so the batch script (every
 * algorithm) would make a single limit pay for all six: this one holds the prelude, `write` and
 * the one algorithm fragment, composed from the same fragments as the batch script.
 *
 * KEYS[1]  the hash of the user key
 * ARGV[1]  now, ms since the epoch, as a decimal string; 'now,grace' for a replayed now (see
 *          `nowArg`); '' reads Redis TIME
 * ARGV[2]  mode: 'consume' or 'peek' (no writes)
 * ARGV[3]  cost
 * ARGV[4]  the limit's field in the hash
 * ARGV[5…] the algorithm's params, in the order of `LUA_ALGORITHMS`
 *
 * Returns the decision as the batch script does per call (reason, remaining, resetAfter,
 * retryAfter, delay), without the delay when it is 0, or one integer for an admission without
 * delay (see `replyLua`): every element costs Redis time to write.
 */
export function singleScript(algorithm: LuaAlgorithm): string {
  return `${PRELUDE_LUA}
${algorithm.lua}
${WRITE_LUA}
local now, grace = read_now(ARGV[1])
local algorithm = ${algorithm.table}
local c = algorithm.prepare({ ${algorithm.params.map((_, j) => `tonumber(ARGV[${5 + j}])`).join(', ')} })
local raw = redis.call('HGET', KEYS[1], ARGV[4])
local state = nil
if raw then state = decode(raw) end
local cost = tonumber(ARGV[3])
local d
if ARGV[2] == 'peek' then
  d = algorithm.peek(state, now, cost, c)
else
  local next, changed
  d, next, changed = algorithm.consume(state, now, cost, c)
  -- One call is the whole batch: it writes whatever it changed, admitted or not.
  if changed then write(KEYS[1], ARGV[4], algorithm, c, next, now, grace) end
end
${replyLua('d[2]', 'd[7]', 'd[3]', 'd[4]', 'd[5]', 'd[6]')}
`;
}

// Redis writes a number argument exactly (%.17g), so a one-number state is stored as the number;
// tonumber(false), for no field, is nil.
const ONE_NUMBER_STATE = `local raw = redis.call('HGET', KEYS[1], ARGV[4])
local state = tonumber(raw)`;

/**
 * Sets `first, second` from `raw`, a two-number state stored as '%.17g,%.17g' (as `encode` writes
 * it), when `raw` is not false (no key): the lean scripts read two-number states with it.
 */
export function twoNumberStateLua(raw: string, first: string, second: string): string {
  return `if ${raw} then
  local comma = string.find(${raw}, ',', 1, true)
  ${first}, ${second} = tonumber(string.sub(${raw}, 1, comma - 1)), tonumber(string.sub(${raw}, comma + 1))
end`;
}

const TWO_NUMBER_STATE = `local state, state2
local raw = redis.call('HGET', KEYS[1], ARGV[4])
${twoNumberStateLua('raw', 'state', 'state2')}`;

/**
 * What a lean twin's consume leaves to write, inline, after its block ran (`changed`, `next`,
 * `next2`, the params, `now` and `grace` in scope): when `changed`, sets `value` (a declared Lua
 * name) to the new state as stored (`next`, or `'%.17g,%.17g'` of `next, next2`) and `px` to its
 * ttl in ms, rounded up, plus `grace` (see `WRITE_LUA`); or `value` to false when there is no state
 * or its ttl is ≤ 0 (the field is deleted: it is as good as fresh). Unchanged: `value` stays nil.
 */
export function leanNextLua(lean: LeanLua, value: string, px: string): string {
  const stored = lean.width === 1 ? 'next' : `string.format('%.17g,%.17g', next, next2)`;
  return `if changed then
  ${value} = false
  if next ~= nil then
    local ${stateNames(lean, 'state')} = ${stateNames(lean, 'next')}
    local ttl_ms = ${lean.ttl}
    if ttl_ms > 0 then ${value}, ${px} = ${stored}, math.ceil(ttl_ms) + grace end
  end
end`;
}

/**
 * Lengthens the life of hash `key` to `px` ms when it is shorter (`GT`); a hash that may have no
 * ttl yet (`fresh`, a Lua expression: none of the fields the script read was there) takes it with
 * `NX` when `GT` did not apply. See `WRITE_LUA`.
 */
export function expireLua(key: string, px: string, fresh: string): string {
  return `if redis.call('PEXPIRE', ${key}, ${px}, 'GT') == 0 and ${fresh} then redis.call('PEXPIRE', ${key}, ${px}, 'NX') end`;
}

/** A Lua string literal of `text` (a hash field: a fingerprint, ASCII). */
export function luaString(text: string): string {
  return JSON.stringify(text);
}

/**
 * The single-limit script of an algorithm with a lean twin (see `lua/lean.ts`), for one algorithm
 * object: its params are written into the script as constants (one script per set of params, few
 * in an application), so a call carries 4 arguments (with the limit's field); the twin's blocks are inlined, so the script
 * defines no function and makes no table but its reply (a closure or a table costs Redis time on
 * every call).
 *
 * KEYS[1]  the hash of the user key
 * ARGV[1]  now, ms since the epoch, as a decimal string; 'now,grace' for a replayed now (see
 *          `nowArg`); '' reads Redis TIME
 * ARGV[2]  mode: 'consume' or 'peek' (no writes)
 * ARGV[3]  cost
 * ARGV[4]  the limit's field in the hash
 *
 * `params`: the algorithm's params as exact decimal strings (`String` of a double round-trips, and
 * Lua reads the literal back to the same double), in the order of `lean.locals`. Without them, the
 * script is for any params of the kind, read from ARGV[5…] as {@link singleScript} does.
 *
 * Returns what {@link singleScript} returns.
 */
export function leanSingleScript(lean: LeanLua, params?: readonly string[]): string {
  const values = params ?? lean.locals.map((_, j) => `tonumber(ARGV[${5 + j}])`);
  return `${CONSTANTS_LUA}
local ${lean.locals.join(', ')} = ${values.join(', ')}
${lean.prepare}
${READ_NOW_INLINE_LUA}
local cost = tonumber(ARGV[3])
${lean.width === 1 ? ONE_NUMBER_STATE : TWO_NUMBER_STATE}
local reason, remaining, reset_after, retry_after, delay, changed, ${stateNames(lean, 'next')}
if ARGV[2] == 'peek' then
${lean.peek}
else
${lean.consume}
  -- One call is the whole batch: it writes whatever it changed, admitted or not.
  local value, px
${leanNextLua(lean, 'value', 'px')}
  if value then
    redis.call('HSET', KEYS[1], ARGV[4], value)
    ${expireLua('KEYS[1]', 'px', 'not raw')}
  elseif value == false then
    redis.call('HDEL', KEYS[1], ARGV[4])
  end
end
${replyLua(lean.limit, 'reason', 'remaining', 'reset_after', 'retry_after', 'delay')}
`;
}
