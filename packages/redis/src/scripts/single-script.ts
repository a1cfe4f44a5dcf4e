import { type LuaAlgorithm, WRITE_LUA } from '../lua/algorithms.js';
import { PRELUDE_LUA } from '../lua/prelude.js';

/**
 * One limit of one algorithm kind, what the batch script does for a single call. Each EVALSHA
 * runs a script's whole body, defining every function in it, so the batch script (every
 * algorithm) would make a single limit pay for all six: this one holds the prelude, `write` and
 * the one algorithm fragment, composed from the same fragments as the batch script.
 *
 * KEYS[1]  state key
 * ARGV[1]  now, ms since the epoch, as a decimal string; '' reads Redis TIME
 * ARGV[2]  mode: 'consume' or 'peek' (no writes)
 * ARGV[3]  cost
 * ARGV[4…] the algorithm's params, in the order of `LUA_ALGORITHMS`
 *
 * Returns the decision as the batch script does per call (reason, remaining, resetAfter,
 * retryAfter, delay), without the delay when it is 0: every element costs Redis time to write.
 */
export function singleScript(algorithm: LuaAlgorithm): string {
  return `${PRELUDE_LUA}
${algorithm.lua}
${WRITE_LUA}
local now = read_now(ARGV[1])
local algorithm = ${algorithm.table}
local c = algorithm.prepare({ ${algorithm.params.map((_, j) => `tonumber(ARGV[${4 + j}])`).join(', ')} })
local raw = redis.call('GET', KEYS[1])
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
  if changed then write(KEYS[1], algorithm, c, next, now) end
end
if d[6] ~= 0 then return { d[7], d[3], d[4], d[5], d[6] } end
return { d[7], d[3], d[4], d[5] }
`;
}
