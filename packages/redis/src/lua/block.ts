/**
 * The Lua twin of `@sluice/core`'s `block.ts` (blocks after a refusal), for the batch script: the
 * same doubles in the same order, so a block ends at the same millisecond on every store. Needs
 * the prelude (`decide`, `ceil_ms`, `fmt`, `decode`) and `expire` of `WRITE_LUA`.
 *
 * A block record is the field `<limit's field>:b` of the user key's hash (beside the limit's
 * state), `'until,strikes,forget'`: the streak is forgotten at `forget` (the block's end plus its
 * decay), read as no record from then on; the hash lives at least that long (`expire`, GT).
 *
 * - `read_block(key, field, now)`: the record, or nil when there is none or it is forgotten.
 * - `block_left(rec, now)`: ms left of the block (0: not blocked). `rec`: a decoded record or nil.
 * - `blocked_decision(left)`: the refusal of a blocked key (reason `BLOCKED`, nothing left).
 * - `start_block(key, field, rec, b, now, grace)`: writes the next block of the streak for policy `b`
 *   (`duration`, `factor`, `max`, `decay`); returns its duration.
 * - `blocking(d, duration, reset)`: a refusal's retry and reset pushed to the block's end (with
 *   `reset`, the limit's state forgotten: exactly the block's end).
 */
export const BLOCK_LUA = `
local BLOCKED = 3

local function retry_ms(ms)
  return math.max(1, ceil_ms(ms))
end

local function read_block(key, field, now)
  local raw = redis.call('HGET', key, field)
  if not raw then return nil end
  local rec = decode(raw)
  if now >= rec[3] then return nil end
  return rec
end

local function block_left(rec, now)
  if rec ~= nil and now < rec[1] then return rec[1] - now end
  return 0
end

local function blocked_decision(left)
  return decide(false, 0, 0, ceil_ms(left), retry_ms(left), 0, BLOCKED)
end

-- core's startBlock: the streak goes on while the record lives; each block is factor times the
-- one before, up to max (multiplied step by step, as the TypeScript does, for the same doubles).
local function start_block(key, field, rec, b, now, grace)
  local strikes = 1
  if rec ~= nil and now < rec[1] + b.decay then strikes = rec[2] + 1 end
  local duration = b.duration
  for _ = 2, strikes do
    if duration >= b.max or b.factor == 1 then break end
    duration = duration * b.factor
  end
  duration = math.min(b.max, duration)
  redis.call('HSET', key, field, fmt(now + duration) .. ',' .. strikes .. ',' .. fmt(now + duration + b.decay))
  expire(key, math.ceil(duration + b.decay) + grace)
  return duration
end

local function blocking(d, duration, reset)
  if reset then
    d[4], d[5] = ceil_ms(duration), retry_ms(duration)
  else
    d[4] = math.max(d[4], ceil_ms(duration))
    d[5] = math.max(d[5], retry_ms(duration))
  end
  return d
end
`;
