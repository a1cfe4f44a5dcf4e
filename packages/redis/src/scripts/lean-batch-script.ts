import { type LeanLua, stateNames } from '../lua/lean.js';
import { CONSTANTS_LUA, READ_NOW_INLINE_LUA } from '../lua/prelude.js';
import { leanWriteLua, packLua, twoNumberStateLua } from './single-script.js';

/** One limit of a lean batch: its lean twin and its params as exact decimal strings. */
export interface LeanLimit {
  readonly lean: LeanLua;
  /** In the order of `lean.locals` (`String` of a double round-trips; Lua reads the literal back). */
  readonly params: readonly string[];
  /** Shadow mode: the limit's refusal does not veto the batch (written into the script). */
  readonly shadow?: boolean;
}

/**
 * Most limits one lean batch script inlines: Lua allows 200 locals per function, and each limit
 * takes 11 or 12 at the top level (14 limits of two-number states still compile, 15 do not).
 */
export const MAX_LEAN_BATCH = 12;

// The per-limit Lua locals of limit i: its state, its decision, and what consume sets.
const outputs = (i: number) =>
  [
    `reason_${i}`,
    `remaining_${i}`,
    `reset_after_${i}`,
    `retry_after_${i}`,
    `delay_${i}`,
    `changed_${i}`,
    `next_${i}`,
    `next_${i}b`,
  ].join(', ');

/**
 * A block of the lean twin, run for limit `i` over its params and the state in `state`. `packs`:
 * also sets `packed_<i>` to the decision as one integer when the single-limit script would pack it.
 */
function run(limit: LeanLimit, i: number, block: string, state: string, packs = false): string {
  const { lean, params } = limit;
  return `do
  local ${lean.locals.join(', ')} = ${params.join(', ')}
${lean.prepare}
  local ${stateNames(lean, 'state')} = ${lean.width === 1 ? state : `${state}, ${state}b`}
  local cost = cost_${i}
  local reason, remaining, reset_after, retry_after, delay, changed, next, next2
${block}
${packs ? packLua(lean.limit, `packed_${i}`) : ''}
  ${outputs(i)} = reason, remaining, reset_after, retry_after, delay, changed, next, ${lean.width === 1 ? 'nil' : 'next2'}
end`;
}

/** `write()` of the batch script, inline, for limit `i` (see `leanWriteLua`). */
function write(limit: LeanLimit, i: number): string {
  const bind = `    local ${limit.lean.locals.join(', ')} = ${limit.params.join(', ')}
${limit.lean.prepare}`;
  return leanWriteLua(limit.lean, `KEYS[${i}]`, `changed_${i}`, `next_${i}`, `next_${i}b`, bind);
}

/**
 * Reads limit i's state into `state_<i>` (and `state_<i>b`). `GET`, not one `MGET` for all keys
 * (~0.3 µs less for three): a key holding another type must raise WRONGTYPE, as in every other
 * script, not read as no state and be overwritten.
 */
function read(limit: LeanLimit, i: number): string {
  if (limit.lean.width === 1) return `local state_${i} = tonumber(redis.call('GET', KEYS[${i}]))`;
  return `local state_${i}, state_${i}b
do
  local raw = redis.call('GET', KEYS[${i}])
  ${twoNumberStateLua('raw', `state_${i}`, `state_${i}b`)}
end`;
}

/**
 * The batch script for one ordered list of limits that all have a lean twin (`lua/lean.ts`), with
 * their params written in as constants: what {@link batchScript} does for them in 'consume' and
 * 'peek' mode (not 'split'), with the same reply, as straight-line Lua. The generic batch script
 * makes a table and closures per call and parses every call's params from ARGV on every run
 * (~9 µs of Redis time per limit); this one makes no function and no table but its reply, and
 * takes 2 + N arguments.
 *
 * KEYS[i]  state key of limit i (all in one hash slot on a Cluster)
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
 * All-or-nothing, as `settleBatch` in `@sluice/core`: when every limit admits (limits in shadow
 * mode left out of the test: they never veto), every changed state is written; when one refuses, a refusing limit writes what it changed (a strict token bucket
 * restarts its clock) and every admitting limit reports its current state (peek), consuming nothing.
 */
export function leanBatchScript(limits: readonly LeanLimit[]): string {
  const indices = limits.map((_, j) => j + 1);
  const decisions = indices
    .map((i) => `reason_${i}, remaining_${i}, reset_after_${i}, retry_after_${i}, delay_${i}`)
    .join(', ');
  const enforced = indices.filter((i) => limits[i - 1]!.shadow !== true);
  const admitted = enforced.length === 0 ? 'true' : enforced.map((i) => `reason_${i} == NONE`).join(' and ');
  return `${CONSTANTS_LUA}
${READ_NOW_INLINE_LUA}
local ${indices.map((i) => `cost_${i}`).join(', ')} = ${indices.map((i) => `tonumber(ARGV[${2 + i}])`).join(', ')}
${limits.map((limit, j) => read(limit, j + 1)).join('\n')}
${indices.map((i) => `local ${outputs(i)}`).join('\n')}
local ${indices.map((i) => `packed_${i}`).join(', ')}
if ARGV[2] == 'peek' then
${limits.map((limit, j) => run(limit, j + 1, limit.lean.peek, `state_${j + 1}`)).join('\n')}
  return { 0, ${decisions} }
end
${limits.map((limit, j) => run(limit, j + 1, limit.lean.consume, `state_${j + 1}`, true)).join('\n')}
if ${admitted} then
${limits.map((limit, j) => write(limit, j + 1)).join('\n')}
  if ${indices.map((i) => `packed_${i}`).join(' and ')} then return { ${indices.map((i) => `packed_${i}`).join(', ')} } end
else
${limits
  .map(
    (limit, j) => `if reason_${j + 1} ~= NONE then
${write(limit, j + 1)}
else
${run(limit, j + 1, limit.lean.peek, `state_${j + 1}`)}
end`,
  )
  .join('\n')}
end
return { 0, ${decisions} }
`.replace(/\n{2,}/g, '\n');
}
