import { LIBRARY_LUA } from '../lua/algorithms.js';

/**
 * Gives back units taken earlier, as `MemoryStore.refund` does: each call whose key holds state
 * gets `refund(state, now, cost)` written (with `PX` recomputed, or the key deleted when nothing is
 * left); a refund that gives nothing back returns the state itself, and nothing is written. Calls
 * are independent: there is no all-or-nothing rule for a refund. With `report`, each call is then
 * reported as `peek` sees it after the refund.
 *
 * KEYS[i]  state key of call i (all in one hash slot on a Cluster)
 * ARGV[1]  now, ms since the epoch, as a decimal string; '' reads Redis TIME
 * ARGV[2…] per call i, in order: algorithm code (see LUA_ALGORITHMS), cost, the algorithm's params
 *
 * Returns the number of keys changed; with `report`, `{ changed, d1…, dN }`, each decision as 7
 * integers (as the batch script).
 */
function refundScript(report: boolean): string {
  return `${LIBRARY_LUA}
local now = read_now(ARGV[1])
local calls = read_calls(2)
local changed = 0
${report ? 'local out = { 0 }' : ''}
for i = 1, #calls do
  local call = calls[i]
  if call.algorithm.refund ~= nil and call.state ~= nil then
    -- A refund that gives nothing back returns the state itself: nothing to write.
    local next = call.algorithm.refund(call.state, now, call.cost, call.c)
    if next ~= call.state then
      write(KEYS[i], call, next, now)
      call.state = next
      changed = changed + 1
    end
  end
  ${report ? 'push_decision(out, call.algorithm.peek(call.state, now, call.cost, call.c))' : ''}
end
${report ? 'out[1] = changed\nreturn out' : 'return changed'}
`;
}

/** Gives back the units of calls admitted with a delay whose request never ran (`store.refund`). */
export const REFUND_SCRIPT = refundScript(false);

/**
 * Gives back what one Cluster slot consumed for a request that another slot refused, at the `now`
 * that slot's batch consumed at, and reports the slot's limits as they stand after it (a refused
 * request reports its admitting limits as `peek` would, as the one-slot batch does).
 */
export const SPLIT_REFUND_SCRIPT = refundScript(true);
