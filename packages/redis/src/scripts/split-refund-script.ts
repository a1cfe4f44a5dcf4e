import { LIBRARY_LUA } from '../lua/algorithms.js';

/**
 * Gives back what one Cluster slot consumed for a request that another slot refused (the batch
 * ran in 'split' mode), at the `now` that slot's batch consumed at. Per call that wrote its key:
 *
 * - the key still holds exactly what the batch wrote (nobody wrote it since): the previous value
 *   is restored, TTL recomputed. Exact whatever the times, a request out of order included.
 * - someone wrote it since: `refund(state, now, cost)` (`Algorithm.refund`), a compensation that
 *   stays right on top of their writes and gives nothing back for units whose window has passed,
 *   so it never over-admits. Restoring the previous value there would erase their consumption.
 *
 * Then each call is reported as `peek` sees it now, as the one-slot batch reports the limits that
 * would have admitted a refused request.
 *
 * KEYS[i]  the hash of call i's user key (all in one hash slot)
 * ARGV[1]  now the batch used, ms since the epoch, and its replay grace (the batch's returned `now`)
 * ARGV[2…] per call i: algorithm code, cost, field, the algorithm's params; then, after every call's
 *          group, per call i: `written 0/1, hadPrevious 0/1, previous value, isSet 0/1,
 *          written value` (values '' when absent; `written 0`: nothing was consumed, nothing to do)
 *
 * Returns `{ restored, d1…, dN }`: how many keys were restored (the others were refunded), then
 * each decision as 5 integers (as the batch script).
 */
export const SPLIT_REFUND_SCRIPT = `${LIBRARY_LUA}
local now, grace = read_now(ARGV[1])
local calls, a = read_calls(2)
local out, restored = { 0 }, 0
for i = 1, #calls do
  local call = calls[i]
  if ARGV[a] == '1' then
    local written = false
    if ARGV[a + 3] == '1' then written = ARGV[a + 4] end
    if call.raw == written then
      local state = nil
      if ARGV[a + 1] == '1' then state = decode(ARGV[a + 2]) end
      write(KEYS[i], call.field, call.algorithm, call.c, state, now, grace)
      call.state = state
      restored = restored + 1
    elseif call.state ~= nil and call.algorithm.refund ~= nil then
      local next = call.algorithm.refund(call.state, now, call.cost, call.c)
      if next ~= call.state then
        write(KEYS[i], call.field, call.algorithm, call.c, next, now, grace)
        call.state = next
      end
    end
  end
  a = a + 5
  push_decision(out, call.algorithm.peek(call.state, now, call.cost, call.c))
end
out[1] = restored
return out
`;
