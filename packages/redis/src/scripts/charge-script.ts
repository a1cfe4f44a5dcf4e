import { LIBRARY_LUA } from '../lua/algorithms.js';

/**
 * Takes up to `cost` units from each call's limit without refusing, as `chargeStep` in
 * `@sluice/core` does (its twin): the units the limit can admit now (`peek`'s remaining), at most
 * `cost`, consumed at once and written (with `PX` recomputed). A limit is never driven below zero;
 * the units it has no room for are forgiven. Calls are independent: no all-or-nothing rule.
 *
 * KEYS[i]  the hash of call i's user key (all in one hash slot on a Cluster)
 * ARGV[1]  now, ms since the epoch, as a decimal string; 'now,grace' for a replayed now (see
 *          `nowArg`); '' reads Redis TIME
 * ARGV[2…] per call i, in order, as the refund script reads them (`pushCallArgs`): algorithm
 *          code (see LUA_ALGORITHMS), cost, field, the algorithm's params
 *
 * Returns the units each call took, in order.
 */
export const CHARGE_SCRIPT = `${LIBRARY_LUA}
local now, grace = read_now(ARGV[1])
local calls = read_calls(2)
local taken = {}
for i = 1, #calls do
  local call = calls[i]
  local take = math.min(call.cost, call.algorithm.peek(call.state, now, 1, call.c)[3])
  taken[i] = 0
  if take > 0 then
    local decision, next, changed = call.algorithm.consume(call.state, now, take, call.c)
    -- remaining said these units fit; an algorithm that disagrees takes nothing rather than refuse.
    if decision[1] then
      if changed then write(KEYS[i], call.field, call.algorithm, call.c, next, now, grace) end
      taken[i] = take
    end
  end
end
return taken
`;
