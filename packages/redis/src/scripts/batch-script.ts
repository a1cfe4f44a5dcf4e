import { LUA_ALGORITHMS, type LuaAlgorithm, libraryLua } from '../lua/algorithms.js';
import { BLOCK_LUA } from '../lua/block.js';

/** ARGV per entry of a batch's per-call options: call index, shadow 0/1, block duration, factor, max, decay, reset 0/1. */
export const OPTION_WIDTH = 7;

/**
 * Evaluates one batch of layered limits, all-or-nothing, as `batchStep` in `@sluice/core`
 * does: if every limit admits, every new state is written; if any refuses, nothing is consumed,
 * limits that would have admitted report their current state (`peek`), and a limit that refused
 * by itself keeps its refusal state (a strict token bucket restarts its clock). A call in shadow
 * mode never counts as a refusal of the batch; a call with a block is refused while its block
 * record (the field `<field>:b` of the same hash) says so, without running its algorithm, and a
 * refusal of its own starts the next block (`lua/block.ts`, the twin of core's `block.ts`).
 *
 * KEYS[i]  the hash of call i's user key (all in one hash slot on a Cluster)
 * ARGV[1]  now, ms since the epoch, as a decimal string; 'now,grace' for a replayed now (see
 *          `nowArg`); '' reads Redis TIME
 * ARGV[2]  mode: 'consume', 'peek' (no writes), or 'split' (consume, and return what the
 *          split refund needs to undo it: one slot of a batch split across Cluster slots)
 * ARGV[3]  E, the number of calls with options (0 for a batch of plain limits)
 * ARGV[4…] E entries of {@link OPTION_WIDTH}: call index, shadow 0/1, block duration ms (0: no
 *          block), factor, max ms, decay ms, reset 0/1 (a block that starts deletes the limit's
 *          state: `BlockOptions.reset`)
 * then     per call i, in order: algorithm code (see LUA_ALGORITHMS), cost, field (the
 *          limit's, in the hash), the algorithm's params
 *
 * Returns `{ now, d1…, dN, [journal] }`: `now` as a `%.17g` string in 'split' mode, with
 * `,grace` when ARGV[1] had one (0 in the other modes, which have no use for it); each decision as 5 integers (reason 0 allowed / 1
 * rate-limited / 2 cost-exceeds-limit, remaining, resetAfter, retryAfter, delay); in
 * 'split' mode, then per call `written 0/1, previous value or nil, new value or nil`.
 *
 * `algorithms`: the fragments the script holds (every call's algorithm must be among them). Each
 * EVALSHA runs the script's whole body, defining every function in it, so a store registers one
 * script per set of algorithm kinds its batches use rather than paying for all six on every call.
 */
export function batchScript(algorithms: readonly LuaAlgorithm[] = LUA_ALGORITHMS): string {
  return `${libraryLua(algorithms)}
${BLOCK_LUA}
local now, grace = read_now(ARGV[1])
local mode = ARGV[2]
local shadow, block = {}, {}
local noptions = tonumber(ARGV[3])
for j = 0, noptions - 1 do
  local o = 4 + j * ${OPTION_WIDTH}
  local i = tonumber(ARGV[o])
  shadow[i] = ARGV[o + 1] == '1'
  local duration = tonumber(ARGV[o + 2])
  if duration > 0 then
    block[i] = { duration = duration, factor = tonumber(ARGV[o + 3]), max = tonumber(ARGV[o + 4]), decay = tonumber(ARGV[o + 5]), reset = ARGV[o + 6] == '1' }
  end
end
local calls = read_calls(4 + noptions * ${OPTION_WIDTH})
local left = {}
for i, b in pairs(block) do
  b.key, b.field = KEYS[i], calls[i].field .. ':b'
  b.rec = read_block(b.key, b.field, now)
  left[i] = block_left(b.rec, now)
end
-- Undoing a split batch must run at the exact now it consumed at (Redis TIME differs per node),
-- with the same replay grace.
local out = { 0 }
if mode == 'split' then
  out[1] = fmt(now)
  if grace > 0 then out[1] = out[1] .. ',' .. fmt(grace) end
end

if mode == 'peek' then
  for i = 1, #calls do
    local call = calls[i]
    if (left[i] or 0) > 0 then
      push_decision(out, blocked_decision(left[i]))
    else
      push_decision(out, call.algorithm.peek(call.state, now, call.cost, call.c))
    end
  end
  return out
end

local decisions, nexts, changed, all = {}, {}, {}, true
for i = 1, #calls do
  local call = calls[i]
  if (left[i] or 0) > 0 then
    decisions[i], nexts[i], changed[i] = blocked_decision(left[i]), call.state, false
  else
    decisions[i], nexts[i], changed[i] = call.algorithm.consume(call.state, now, call.cost, call.c)
  end
  if not decisions[i][1] and not shadow[i] then all = false end
end

local written = {}
for i = 1, #calls do
  local call = calls[i]
  if all or not decisions[i][1] then
    if changed[i] then written[i] = write(KEYS[i], call.field, call.algorithm, call.c, nexts[i], now, grace, mode == 'split') end
  else
    decisions[i] = call.algorithm.peek(call.state, now, call.cost, call.c)
  end
  -- A limit with a block that refused by itself starts the next block.
  local b = block[i]
  if b and decisions[i][7] == RATE then
    decisions[i] = blocking(decisions[i], start_block(b.key, b.field, b.rec, b, now, grace), b.reset)
    -- reset: the block forgets the limit's state (a refused limit is never undone by a split refund).
    if b.reset then
      redis.call('HDEL', KEYS[i], call.field)
      written[i] = nil
    end
  end
  push_decision(out, decisions[i])
end

if mode == 'split' then
  for i = 1, #calls do
    if written[i] == nil then
      out[#out + 1] = 0
      out[#out + 1] = false
      out[#out + 1] = false
    else
      out[#out + 1] = 1
      out[#out + 1] = calls[i].raw
      out[#out + 1] = written[i]
    end
  end
end
return out
`;
}

/** {@link batchScript} with every algorithm: the script for any batch. */
export const BATCH_SCRIPT = batchScript();
