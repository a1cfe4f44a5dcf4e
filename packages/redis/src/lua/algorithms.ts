import type { AlgorithmKind } from '@sluice/core';
import { FIXED_WINDOW_LUA } from './fixed-window.js';
import { GCRA_LUA } from './gcra.js';
import { LEAKY_BUCKET_QUEUE_LUA } from './leaky-bucket-queue.js';
import { PRELUDE_LUA } from './prelude.js';
import { SLIDING_WINDOW_COUNTER_LUA } from './sliding-window-counter.js';
import { SLIDING_WINDOW_LOG_LUA } from './sliding-window-log.js';
import { TOKEN_BUCKET_LUA } from './token-bucket.js';

/** One algorithm as the scripts know it: its Lua table and the order its params travel in. */
export interface LuaAlgorithm {
  readonly kind: AlgorithmKind;
  /** Name of the Lua table the fragment defines. */
  readonly table: string;
  /** `algorithm.params` names, in the ARGV order the fragment reads them. */
  readonly params: readonly string[];
  readonly lua: string;
}

/**
 * The algorithms the scripts run. A call's ARGV names its algorithm by position in this list
 * (1-based, Lua's `ALGORITHMS[code]`), so the list is the one place the code numbers come from.
 */
export const LUA_ALGORITHMS: readonly LuaAlgorithm[] = [
  {
    kind: 'token-bucket',
    table: 'token_bucket',
    params: ['capacity', 'refillAmount', 'refillInterval', 'stepped', 'strict'],
    lua: TOKEN_BUCKET_LUA,
  },
  { kind: 'gcra', table: 'gcra', params: ['rate', 'period', 'burst'], lua: GCRA_LUA },
  { kind: 'fixed-window', table: 'fixed_window', params: ['limit', 'window'], lua: FIXED_WINDOW_LUA },
  {
    kind: 'sliding-window-log',
    table: 'sliding_window_log',
    params: ['limit', 'window'],
    lua: SLIDING_WINDOW_LOG_LUA,
  },
  {
    kind: 'sliding-window-counter',
    table: 'sliding_window_counter',
    params: ['limit', 'window', 'precision'],
    lua: SLIDING_WINDOW_COUNTER_LUA,
  },
  {
    kind: 'leaky-bucket-queue',
    table: 'leaky_bucket_queue',
    params: ['rate', 'period', 'burst', 'queue', 'maxDelay'],
    lua: LEAKY_BUCKET_QUEUE_LUA,
  },
];

/**
 * Storing a state, shared by every script that writes one: `write(key, call, state, now)` stores
 * it with `PX` = the algorithm's ttl rounded up, or deletes the key when there is no state or its
 * ttl is ≤ 0 (it is as good as fresh). `call` holds `algorithm` and its prepared params `c`.
 */
export const WRITE_LUA = `
local function write(key, call, state, now)
  if state ~= nil then
    local ttl = call.algorithm.ttl(state, now, call.c)
    if ttl > 0 then
      local raw = encode(state)
      -- A whole number below 1e14 reaches Redis exact as a Lua number (%.14g); format larger ones.
      local px = math.ceil(ttl)
      if px >= 1e14 then px = fmt(px) end
      redis.call('SET', key, raw, 'PX', px)
      return raw
    end
  end
  redis.call('DEL', key)
  return false
end
`;

/**
 * The prelude, the fragments of `algorithms` (by default every one), and the shared call
 * machinery of the batch scripts:
 *
 * - `read_calls(first)`: parses KEYS[i] with its ARGV group `kind code, cost, params…` starting at
 *   ARGV[first]; returns the calls (algorithm, cost, prepared params, raw and decoded state) and
 *   the index of the first ARGV after them. A code whose fragment is not in the script is an error.
 * - `write(key, call, state, now)`: see {@link WRITE_LUA}.
 * - `push_decision(out, d)`: appends a decision as 7 integers.
 */
export function libraryLua(algorithms: readonly LuaAlgorithm[] = LUA_ALGORITHMS): string {
  // A call names its algorithm by its code (position in LUA_ALGORITHMS, 1-based) in every script.
  const table = algorithms.map((a) => `[${LUA_ALGORITHMS.indexOf(a) + 1}] = ${a.table}`).join(', ');
  return [
    PRELUDE_LUA,
    ...algorithms.map((a) => a.lua),
    WRITE_LUA,
    `
local ALGORITHMS = { ${table} }

local function read_calls(first)
  local calls, a = {}, first
  for i = 1, #KEYS do
    local algorithm = ALGORITHMS[tonumber(ARGV[a])]
    local params = {}
    for j = 1, algorithm.nparams do params[j] = tonumber(ARGV[a + 1 + j]) end
    local raw = redis.call('GET', KEYS[i])
    local state = nil
    if raw then state = decode(raw) end
    calls[i] = { algorithm = algorithm, cost = tonumber(ARGV[a + 1]), c = algorithm.prepare(params), raw = raw, state = state }
    a = a + 2 + algorithm.nparams
  end
  return calls, a
end

local function push_decision(out, d)
  local allowed = 0
  if d[1] then allowed = 1 end
  out[#out + 1] = allowed
  for i = 2, 7 do out[#out + 1] = d[i] end
end
`,
  ].join('\n');
}

/** {@link libraryLua} with every algorithm. */
export const LIBRARY_LUA = libraryLua();
