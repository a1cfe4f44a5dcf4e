import { LIBRARY_LUA } from '../lua/algorithms.js';

/**
 * Gives back the units of calls admitted earlier whose request never ran, as `MemoryStore.refund`
 * does: each call whose key holds state gets `refund(state, now, cost)` written (with `PX`
 * recomputed, or the key deleted when nothing is left); a refund that gives nothing back returns
 * the state itself, and nothing is written. Calls are independent: there is no all-or-nothing rule for a refund.
 *
 * KEYS[i]  the hash of call i's user key (all in one hash slot on a Cluster)
 * ARGV[1]  now, ms since the epoch, as a decimal string; 'now,grace' for a replayed now (see
 *          `nowArg`); '' reads Redis TIME
 * ARGV[2…] per call i, in order: algorithm code (see LUA_ALGORITHMS), cost, field (the
 *          limit's, in the hash), the algorithm's params
 *
 * Returns the number of keys changed.
 */
export const REFUND_SCRIPT = `${LIBRARY_LUA}
local now, grace = read_now(ARGV[1])
local calls = read_calls(2)
local changed = 0
for i = 1, #calls do
  local call = calls[i]
  if call.algorithm.refund ~= nil and call.state ~= nil then
    -- A refund that gives nothing back returns the state itself: nothing to write.
    local next = call.algorithm.refund(call.state, now, call.cost, call.c)
    if next ~= call.state then
      write(KEYS[i], call.field, call.algorithm, call.c, next, now, grace)
      changed = changed + 1
    end
  end
end
return changed
`;
