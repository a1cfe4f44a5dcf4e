import { type LeanLua, stateNames } from '../lua/lean.js';
import { CONSTANTS_LUA, READ_NOW_INLINE_LUA } from '../lua/prelude.js';
import { expireLua, leanNextLua, luaString, packLua, twoNumberStateLua } from './single-script.js';

/** One limit of a lean batch: its lean twin, its params as exact decimal strings, its field. */
export interface LeanLimit {
  readonly lean: LeanLua;
  /** In the order of `lean.locals` (`String` of a double round-trips; Lua reads the literal back). */
  readonly params: readonly string[];
  /** Its field in the hash of a user key (the algorithm's fingerprint, name bound). */
  readonly field: string;
}

/**
 * Most limits one lean batch script inlines: Lua allows 200 locals per function, and each limit
 * takes 10 or 11 at the top level, each user key 2 more.
 */
export const MAX_LEAN_BATCH = 12;

/**
 * A block of the lean twin, run for limit `i` over its params and its state. `consume`: also sets
 * `packed_<i>` to the decision as one integer when the single-limit script would pack it, and
 * `value_<i>`, `px_<i>` to what it leaves to write (see `leanNextLua`).
 */
function run(limit: LeanLimit, i: number, consume: boolean): string {
  const { lean, params } = limit;
  return `do
  local ${lean.locals.join(', ')} = ${params.join(', ')}
${lean.prepare}
  local ${stateNames(lean, 'state')} = ${lean.width === 1 ? `state_${i}` : `state_${i}, state_${i}b`}
  local cost = cost_${i}
  local reason, remaining, reset_after, retry_after, delay, changed, next, next2
${consume ? lean.consume : lean.peek}
${consume ? packLua(lean.limit, `packed_${i}`) : ''}
${consume ? leanNextLua(lean, `value_${i}`, `px_${i}`) : ''}
  reason_${i}, remaining_${i}, reset_after_${i}, retry_after_${i}, delay_${i} = reason, remaining, reset_after, retry_after, delay
end`;
}

/**
 * Reads the fields of user key `k` (the limits `members`, 1-based) with one `HMGET`: `state_<i>`
 * (and `state_<i>b`) per limit, and `fresh_<k>` when none was there (the hash may have no ttl).
 * `HMGET` of a key holding another type raises WRONGTYPE, as every other script does.
 */
function read(limits: readonly LeanLimit[], k: number, members: readonly number[]): string {
  const fields = members.map((i) => luaString(limits[i - 1]!.field));
  const states = members.map((i, p) => {
    const raw = `raw_${k}[${p + 1}]`;
    if (limits[i - 1]!.lean.width === 1) return `local state_${i} = tonumber(${raw})`;
    return `local state_${i}, state_${i}b\n${twoNumberStateLua(raw, `state_${i}`, `state_${i}b`)}`;
  });
  return `local raw_${k} = redis.call('HMGET', KEYS[${k}], ${fields.join(', ')})
local fresh_${k} = ${members.map((_, p) => `not raw_${k}[${p + 1}]`).join(' and ')}
${states.join('\n')}`;
}

/**
 * Writes what the limits of user key `k` left to write: their fields in one `HSET` when every one
 * of them changed (the hot path), else one by one; then the hash's ttl, the longest of theirs
 * (`expireLua`); then the fields as good as fresh are deleted (after the `HSET`, so that the hash
 * never empties and comes back without a ttl).
 */
function write(limits: readonly LeanLimit[], k: number, members: readonly number[]): string {
  const field = (i: number) => luaString(limits[i - 1]!.field);
  const one = members
    .map(
      (i) =>
        `if value_${i} then redis.call('HSET', KEYS[${k}], ${field(i)}, value_${i}); px = math.max(px, px_${i}) end`,
    )
    .join('\n  ');
  const sets =
    members.length === 1
      ? one
      : `if ${members.map((i) => `value_${i}`).join(' and ')} then
    redis.call('HSET', KEYS[${k}], ${members.map((i) => `${field(i)}, value_${i}`).join(', ')})
    px = math.max(${members.map((i) => `px_${i}`).join(', ')})
  else
  ${one}
  end`;
  return `do
  local px = 0
  ${sets}
  if px > 0 then ${expireLua(`KEYS[${k}]`, 'px', `fresh_${k}`)} end
  ${members.map((i) => `if value_${i} == false then redis.call('HDEL', KEYS[${k}], ${field(i)}) end`).join('\n  ')}
end`;
}

/**
 * The batch script for one ordered list of limits that all have a lean twin (`lua/lean.ts`), with
 * their params and fields written in as constants, for one pattern of user keys (`keyOf[j]`: the
 * 1-based index in KEYS of limit j's user key): what {@link batchScript} does for them in 'consume'
 * and 'peek' mode (not 'split'), with the same reply, as straight-line Lua. The generic batch script
 * makes a table and closures per call and parses every call's params from ARGV on every run
 * (~9 µs of Redis time per limit); this one makes no function and no table but its reply, reads
 * each user key's limits with one `HMGET` and writes them with one `HSET` and one `PEXPIRE`, and
 * takes 2 + N arguments.
 *
 * KEYS[k]  the hash of user key k (all in one hash slot on a Cluster)
 * ARGV[1]  now, ms since the epoch, as a decimal string; 'now,grace' for a replayed now (see
 *          `nowArg`); '' reads Redis TIME
 * ARGV[2]  mode: 'consume' or 'peek' (no writes)
 * ARGV[2+i] cost of limit i
 *
 * Returns what the batch script returns (`{ 0, d1…, dN }`) or, when every limit admitted without
 * delay and each decision packs into one integer as a single-limit script packs it, those N
 * integers (`{ p1…, pN }`: a reply of N elements rather than 1 + 5N, ~1 µs less of Redis time for
 * three limits; see `readBatchDecisions` in wire.ts).
 *
 * All-or-nothing, as `batchStep` in `@sluice/core`: when every limit admits, every changed state
 * is written; when one refuses, a refusing limit writes what it changed (a strict token bucket
 * restarts its clock) and every admitting limit reports its current state (peek), consuming nothing.
 */
export function leanBatchScript(limits: readonly LeanLimit[], keyOf: readonly number[]): string {
  const indices = limits.map((_, j) => j + 1);
  const keys = [...new Set(keyOf)].sort((a, b) => a - b);
  const members = (k: number) => indices.filter((i) => keyOf[i - 1] === k);
  const decisions = indices
    .map((i) => `reason_${i}, remaining_${i}, reset_after_${i}, retry_after_${i}, delay_${i}`)
    .join(', ');
  const list = (name: string) => indices.map((i) => `${name}_${i}`).join(', ');
  return `${CONSTANTS_LUA}
${READ_NOW_INLINE_LUA}
local ${list('cost')} = ${indices.map((i) => `tonumber(ARGV[${2 + i}])`).join(', ')}
${keys.map((k) => read(limits, k, members(k))).join('\n')}
${indices.map((i) => `local reason_${i}, remaining_${i}, reset_after_${i}, retry_after_${i}, delay_${i}`).join('\n')}
if ARGV[2] == 'peek' then
${limits.map((limit, j) => run(limit, j + 1, false)).join('\n')}
  return { 0, ${decisions} }
end
local ${list('packed')}
local ${list('value')}
local ${list('px')}
${limits.map((limit, j) => run(limit, j + 1, true)).join('\n')}
local all = ${indices.map((i) => `reason_${i} == NONE`).join(' and ')}
if not all then
  -- A refusal: the refusing limits write what they changed, the others consume nothing.
${limits
  .map(
    (limit, j) => `if reason_${j + 1} == NONE then
  value_${j + 1} = nil
${run(limit, j + 1, false)}
end`,
  )
  .join('\n')}
end
${keys.map((k) => write(limits, k, members(k))).join('\n')}
if all and ${list('packed').replaceAll(', ', ' and ')} then return { ${list('packed')} } end
return { 0, ${decisions} }
`.replace(/\n{2,}/g, '\n');
}
