import { LIBRARY_LUA } from '../lua/algorithms.js';

/**
 * Undoes what a batch wrote in one hash slot when another slot of the same request refused
 * (Cluster only). Compare-and-set per key: a key still holding exactly the value the batch wrote
 * is restored to its previous value (TTL recomputed at `now`); a key someone else has written
 * since is left alone, because undoing on top of their write could admit more than the limit.
 * Then reports every call as `peek` would, on the state as it now stands.
 *
 * KEYS[i]  state key of call i (all in one hash slot)
 * ARGV[1]  now used by the batch, ms since the epoch (the batch's returned `now`)
 * ARGV[2…] per call i: algorithm code, cost, the algorithm's params; then, after every call's
 *          group, per call i: `written 0/1, hadPrevious 0/1, previous value, isSet 0/1,
 *          written value` (values '' when absent; `written 0` leaves the key alone)
 *
 * Returns `{ d1…, dN, r1…, rN }`: each decision as 7 integers (as the batch script), then per call
 * 1 when the key was restored, 0 when it was left alone.
 */
export const ROLLBACK_SCRIPT = `${LIBRARY_LUA}
local now = read_now(ARGV[1])
local calls, a = read_calls(2)
local out, restored = {}, {}
for i = 1, #calls do
  local call = calls[i]
  local previous, written = false, false
  if ARGV[a + 1] == '1' then previous = ARGV[a + 2] end
  if ARGV[a + 3] == '1' then written = ARGV[a + 4] end
  restored[i] = 0
  if ARGV[a] == '1' and call.raw == written then
    local state = nil
    if previous then state = decode(previous) end
    write(KEYS[i], call, state, now)
    call.state = state
    restored[i] = 1
  end
  a = a + 5
  push_decision(out, call.algorithm.peek(call.state, now, call.cost, call.c))
end
for i = 1, #calls do out[#out + 1] = restored[i] end
return out
`;
