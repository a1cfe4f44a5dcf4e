import { WRITE_LUA } from '../lua/algorithms.js';
import { PRELUDE_LUA } from '../lua/prelude.js';

/**
 * One sync cycle of one node (one hash slot on a Cluster): adds each key's delta to the fleet's
 * state (the Lua twin of `synced/merge-rules.ts`, rule by rule) and returns every key's state.
 * States are stored as `RedisStore` stores them (a hash per user key, one field per limit, the
 * same list of numbers), so a `RedisStore` on the same prefix reads and decides on them.
 *
 * Idempotent per batch: the node numbers its batches, and the ack key holds the last one applied.
 * A batch whose reply was lost (a timeout) is sent again with its number; if Redis had applied it,
 * the deltas are skipped and only the states are returned, so nothing is counted twice.
 *
 * KEYS[1]   the node's ack key (in this hash slot; one per chunk of a batch, see `sync-batch.ts`)
 * KEYS[i+1] the hash of entry i's user key
 * ARGV[1]   the batch's number (integer ≥ 1, increasing per node)
 * ARGV[2]   now, ms since the epoch (for the keys' expiry)
 * ARGV[3]   grace: ms a key outlives its state (nodes whose clocks lag still read it)
 * ARGV[4]   ms the ack key lives
 * ARGV[5]   S, the number of limits (spaces) in this call, then for each: its rule code, its
 *           field (the limit's fingerprint) and the rule's params
 *             1 counter:       window
 *             2 sub-windows:   precision, size
 *             3 virtual clock: offset
 * then, per entry, in order, one argument: the index of its limit (1…S), and its delta after a
 *           comma when it has one (none: a pull), the numbers comma-joined
 *             1 counter:       count, windowStart
 *             2 sub-windows:   index, c0 … cP
 *             3 virtual clock: step, floor
 *
 * Deltas may be negative (refunds): counts stop at 0, the virtual clock's floor stops a refund at
 * a full limit (see `MergeRule.refund`).
 *
 * Returns `{ applied, state1, …, stateN }`: applied 1 when this call added the deltas, 0 when an
 * earlier call had; each state encoded as stored ('' for none).
 */
export const SYNC_SCRIPT = `${PRELUDE_LUA}${WRITE_LUA}
local seq = tonumber(ARGV[1])
local now, grace = tonumber(ARGV[2]), tonumber(ARGV[3])
local acked = redis.call('GET', KEYS[1])
local fresh = acked == false or tonumber(acked) < seq
local out = { fresh and 1 or 0 }
local codes, fields, p1, p2 = {}, {}, {}, {}
local a = 6
for s = 1, tonumber(ARGV[5]) do
  local code = tonumber(ARGV[a])
  codes[s], fields[s], p1[s] = code, ARGV[a + 1], tonumber(ARGV[a + 2])
  if code == 2 then
    p2[s] = tonumber(ARGV[a + 3])
    a = a + 4
  else
    a = a + 3
  end
end
for i = 2, #KEYS do
  local spec = ARGV[a]
  a = a + 1
  local s, delta
  local comma = string.find(spec, ',', 1, true)
  if comma == nil then
    s = tonumber(spec)
  else
    s = tonumber(string.sub(spec, 1, comma - 1))
    delta = {}
    for n in string.gmatch(string.sub(spec, comma + 1), '[^,]+') do delta[#delta + 1] = tonumber(n) end
  end
  local code = codes[s]
  local raw = redis.call('HGET', KEYS[i], fields[s])
  local state = nil
  if raw then state = decode(raw) end
  local expiry = nil
  if delta ~= nil and fresh then
    if code == 2 then
      local precision, size = p1[s], p2[s]
      if state == nil then
        state = delta
        for j = 2, precision + 2 do state[j] = math.max(0, state[j]) end
      else
        local top = math.max(delta[1], state[1])
        local sum = { top }
        for j = 1, precision + 1 do sum[j + 1] = 0 end
        for _, list in ipairs({ state, delta }) do
          local shift = top - list[1]
          for j = 0, precision - shift do sum[j + shift + 2] = sum[j + shift + 2] + list[j + 2] end
        end
        -- A refund's negative counts stop at 0, as the algorithm's refund does.
        for j = 2, precision + 2 do sum[j] = math.max(0, sum[j]) end
        state = sum
      end
      expiry = (state[1] + precision + 1) * size
    elseif code == 3 then
      local d1, d2 = delta[1], delta[2]
      if state == nil then state = { d2 } else state = { math.max(state[1] + d1, d2) } end
      expiry = state[1] + p1[s]
    elseif state == nil or state[2] <= delta[2] then
      -- Counter. A delta of a window older than the state's is over: dropped. A refund's negative
      -- count stops at 0, as the algorithm's refund does.
      local d1, d2 = delta[1], delta[2]
      if state == nil or state[2] < d2 then state = { math.max(0, d1), d2 } else state = { math.max(0, state[1] + d1), d2 } end
      expiry = d2 + p1[s]
    end
  end
  if expiry ~= nil then
    local px = math.ceil(expiry - now) + grace
    if px > 0 then
      redis.call('HSET', KEYS[i], fields[s], encode(state, true))
      expire(KEYS[i], px)
    else
      redis.call('HDEL', KEYS[i], fields[s])
    end
  end
  if state == nil then out[i] = '' else out[i] = encode(state, true) end
end
if fresh then redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[4]) end
return out
`;
