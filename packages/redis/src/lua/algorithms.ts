import type { AlgorithmKind } from '@sluice/core';
import { ALGORITHM_KIND_LIST, type AlgorithmParam } from '@sluice/core/adapter';
import { FIXED_WINDOW_LEAN, FIXED_WINDOW_LUA } from './fixed-window.js';
import { GCRA_LEAN, GCRA_LUA } from './gcra.js';
import { LEAKY_BUCKET_QUEUE_LEAN, LEAKY_BUCKET_QUEUE_LUA } from './leaky-bucket-queue.js';
import { LEAN_TABLE_LUA, type LeanLua } from './lean.js';
import { PRELUDE_LUA } from './prelude.js';
import { SLIDING_WINDOW_COUNTER_LUA } from './sliding-window-counter.js';
import { SLIDING_WINDOW_LOG_LUA } from './sliding-window-log.js';
import {
  STEPPED_TOKEN_BUCKET_LEAN,
  STEPPED_TOKEN_BUCKET_LUA,
  TOKEN_BUCKET_LEAN,
  TOKEN_BUCKET_LUA,
} from './token-bucket.js';

/** One algorithm as the scripts know it: its Lua table and the order its params travel in. */
export interface LuaAlgorithm<K extends AlgorithmKind = AlgorithmKind> {
  readonly kind: K;
  /**
   * For a kind with several twins (one per variant, as the TypeScript has): whether this twin is
   * the one for these params. The first entry of the kind that matches runs it.
   */
  readonly matches?: (params: Readonly<Record<string, number>>) => boolean;
  /** Name of the Lua table the fragment defines. */
  readonly table: string;
  /** `algorithm.params` names, in the ARGV order the fragment reads them (a variant may skip one). */
  readonly params: readonly AlgorithmParam<K>[];
  readonly lua: string;
  /**
   * The lean form of `lua`, for a state of one or two numbers (see `lean.ts`): its single-limit
   * script, and the layered limits it is part of, run it inlined.
   */
  readonly lean?: LeanLua;
}

/**
 * The Lua twins of every kind of core's `ALGORITHM_KINDS`, keyed by kind: a kind core declares and
 * this table lacks is a compile error, not a run-time "no Lua twin".
 */
const LUA_TWINS: { readonly [K in AlgorithmKind]: readonly LuaAlgorithm<K>[] } = {
  'token-bucket': [
    {
      kind: 'token-bucket',
      matches: (params) => params.stepped !== 1,
      table: 'token_bucket',
      params: ['capacity', 'refillAmount', 'refillInterval', 'strict'],
      lua: TOKEN_BUCKET_LUA,
      lean: TOKEN_BUCKET_LEAN,
    },
    {
      kind: 'token-bucket',
      matches: (params) => params.stepped === 1,
      table: 'stepped_token_bucket',
      params: ['capacity', 'refillAmount', 'refillInterval', 'strict'],
      lua: STEPPED_TOKEN_BUCKET_LUA,
      lean: STEPPED_TOKEN_BUCKET_LEAN,
    },
  ],
  gcra: [
    { kind: 'gcra', table: 'gcra', params: ['rate', 'period', 'burst'], lua: GCRA_LUA, lean: GCRA_LEAN },
  ],
  'fixed-window': [
    {
      kind: 'fixed-window',
      table: 'fixed_window',
      params: ['limit', 'window'],
      lua: FIXED_WINDOW_LUA,
      lean: FIXED_WINDOW_LEAN,
    },
  ],
  'sliding-window-log': [
    {
      kind: 'sliding-window-log',
      table: 'sliding_window_log',
      params: ['limit', 'window'],
      lua: SLIDING_WINDOW_LOG_LUA,
    },
  ],
  'sliding-window-counter': [
    {
      kind: 'sliding-window-counter',
      table: 'sliding_window_counter',
      params: ['limit', 'window', 'precision'],
      lua: SLIDING_WINDOW_COUNTER_LUA,
    },
  ],
  'leaky-bucket-queue': [
    {
      kind: 'leaky-bucket-queue',
      table: 'leaky_bucket_queue',
      params: ['rate', 'period', 'burst', 'queue', 'maxDelay'],
      lua: LEAKY_BUCKET_QUEUE_LUA,
      lean: LEAKY_BUCKET_QUEUE_LEAN,
    },
  ],
};

/**
 * The algorithms the scripts run, in the order of core's `ALGORITHM_KIND_LIST`. A call's ARGV
 * names its algorithm by position in this list (1-based, Lua's `ALGORITHMS[code]`), so the list
 * is the one place the code numbers come from.
 */
export const LUA_ALGORITHMS: readonly LuaAlgorithm[] = ALGORITHM_KIND_LIST.flatMap(
  (kind): readonly LuaAlgorithm[] => LUA_TWINS[kind],
);

/**
 * Storing a state, shared by every script that writes one: `write(key, field, algorithm, c, state,
 * now, grace, exact)` stores it in the hash `key` (the user key's) at `field` (the limit's), and
 * makes the hash live at least the algorithm's ttl rounded up, plus `grace` (ms, from `read_now`: a
 * replayed `now`'s state may be needed longer in wall time than in its own); or deletes the field
 * when there is no state or its ttl is ≤ 0 (it is as good as fresh). `c` holds the algorithm's
 * prepared params. Returns what it stored (a string when `exact`, see `encode`), or false when it
 * deleted the field.
 *
 * `expire(key, px)`: the hash lives as long as its longest-lived field needs. `PEXPIRE … GT` only
 * ever lengthens its life (another limit's field may need more than this one); a hash without a
 * ttl yet (just made) takes it with `NX`. Redis 7.0 or later.
 */
export const WRITE_LUA = `
local function expire(key, px)
  if redis.call('PEXPIRE', key, px, 'GT') == 0 then redis.call('PEXPIRE', key, px, 'NX') end
end

local function write(key, field, algorithm, c, state, now, grace, exact)
  if state ~= nil then
    local ttl = algorithm.ttl(state, now, c)
    if ttl > 0 then
      local raw = encode(state, exact)
      redis.call('HSET', key, field, raw)
      -- Redis writes a number argument exactly (%.17g), so PX needs no formatting here.
      expire(key, math.ceil(ttl) + grace)
      return raw
    end
  end
  redis.call('HDEL', key, field)
  return false
end
`;

/**
 * The prelude, the fragments of `algorithms` (by default every one), and the shared call
 * machinery of the batch scripts:
 *
 * - `read_calls(first)`: parses KEYS[i] (the hash of call i's user key) with its ARGV group
 *   `kind code, cost, field, params…` starting at ARGV[first]; returns the calls (algorithm, cost,
 *   field, prepared params, raw and decoded state) and the index of the first ARGV after them. A
 *   code whose fragment is not in the script is an error.
 * - `write(key, field, algorithm, c, state, now, grace, exact)`: see {@link WRITE_LUA}.
 * - `push_decision(out, d)`: appends a decision as 5 integers (reason, remaining, resetAfter,
 *   retryAfter, delay: see `DECISION_WIDTH` in wire.ts).
 */
export function libraryLua(algorithms: readonly LuaAlgorithm[] = LUA_ALGORITHMS): string {
  // A call names its algorithm by its code (position in LUA_ALGORITHMS, 1-based) in every script.
  const table = algorithms.map((a) => `[${LUA_ALGORITHMS.indexOf(a) + 1}] = ${a.table}`).join(', ');
  return [
    PRELUDE_LUA,
    LEAN_TABLE_LUA,
    ...algorithms.map((a) => a.lua),
    WRITE_LUA,
    `
local ALGORITHMS = { ${table} }

local function read_calls(first)
  local calls, a = {}, first
  for i = 1, #KEYS do
    local algorithm = ALGORITHMS[tonumber(ARGV[a])]
    local params = {}
    for j = 1, algorithm.nparams do params[j] = tonumber(ARGV[a + 2 + j]) end
    local field = ARGV[a + 2]
    local raw = redis.call('HGET', KEYS[i], field)
    local state = nil
    if raw then state = decode(raw) end
    calls[i] = { algorithm = algorithm, cost = tonumber(ARGV[a + 1]), field = field, c = algorithm.prepare(params), raw = raw, state = state }
    a = a + 3 + algorithm.nparams
  end
  return calls, a
end

local function push_decision(out, d)
  local n = #out
  out[n + 1], out[n + 2], out[n + 3], out[n + 4], out[n + 5] = d[7], d[3], d[4], d[5], d[6]
end
`,
  ].join('\n');
}

/** {@link libraryLua} with every algorithm. */
export const LIBRARY_LUA = libraryLua();
