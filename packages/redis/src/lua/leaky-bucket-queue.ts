import { ceilMsLua, type LeanLua, leanTable, retryMsLua, slackLua } from './lean.js';

/**
 * Lua twin of `@sluice/core` `algorithms/leaky-bucket-queue.ts`, expression for expression, in the
 * lean shape (see `lean.ts`).
 *
 * Params (ARGV order): rate, period, burst, queue, maxDelay (0 = no bound). State: one number,
 * `drainAt`.
 */

// Whole free places when the queue drains at `drain`.
const free = (drain: string) =>
  `math.max(0, math.min(capacity, math.floor((room - (${drain} - now) + slack) / interval)))`;

// consuming false reports the queue as it stands (peek); true reports it after this request.
const evaluate = (consuming: boolean) => `do
  local drain_at = now
  if state ~= nil and not (state < now) then drain_at = state end
  local new_drain_at = drain_at + cost * interval
  -- The queue ahead of and including this request, in ms; the first burst units go at once.
  local backlog = new_drain_at - now
  local held = math.max(0, backlog - burst * interval)
  local allowed = backlog <= room + slack
  retry_after, delay = 0, 0
  if allowed then
    reason = NONE
${
  consuming
    ? `    next, changed = new_drain_at, true
    remaining = ${free('new_drain_at')}
    ${ceilMsLua('reset_after', 'new_drain_at - now')}
    ${ceilMsLua('delay', 'held')}`
    : `    remaining = ${free('drain_at')}
    ${ceilMsLua('reset_after', 'drain_at - now')}`
}
  else
    remaining = ${free('drain_at')}
    ${ceilMsLua('reset_after', 'drain_at - now')}
    if cost > capacity then
      reason, retry_after = COST, -1
    else
      reason = RATE
      -- Wait until the queue has drained enough for this cost to fit under both bounds.
      ${retryMsLua('retry_after', 'drain_at + cost * interval - room - now')}
    end
  end
end`;

export const LEAKY_BUCKET_QUEUE_LEAN: LeanLua = {
  locals: ['rate', 'period', 'burst', 'queue', 'max_delay_bound'],
  width: 1,
  limit: 'capacity',
  prepare: `
local interval = period / rate
${slackLua('interval')}
local max_delay = math.huge
if max_delay_bound ~= 0 then max_delay = max_delay_bound end
-- The deepest backlog either bound allows, in ms, and the most units it can ever hold.
local room = math.min((burst + queue) * interval, burst * interval + max_delay)
local capacity = math.min(burst + queue, burst + math.floor((max_delay + slack) / interval))
`,
  peek: evaluate(false),
  consume: `next, changed = state, false
${evaluate(true)}`,
  ttl: 'state - now',
  // The held request's slot leaves the queue: everyone behind keeps their turn.
  refund: `do
  local drain_at = state - cost * interval
  if drain_at > now then next = drain_at end
end`,
};

/** {@link LEAKY_BUCKET_QUEUE_LEAN} in the table shape of the batch scripts. */
export const LEAKY_BUCKET_QUEUE_LUA = leanTable('leaky_bucket_queue', LEAKY_BUCKET_QUEUE_LEAN);
