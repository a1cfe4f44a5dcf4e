import { PRELUDE_LUA } from '../lua/prelude.js';

/**
 * Lua twin of `@sluice/core` `concurrency/memory-leases.ts`: one lease set per `(space, key)`, a
 * sorted set of lease id → `startedAt` (ms), each operation one atomic step (see `LeaseStore`).
 * The set's ttl lives beside it (KEYS[2]) because a release carries no ttl: as in memory, a
 * release sweeps with the ttl of the last acquire that wrote the set.
 *
 * KEYS[1]  the lease set (sorted set: member = lease id, score = startedAt ms)
 * KEYS[2]  the ttl of the last admitted acquire, ms (a string; same expiry as KEYS[1])
 * ARGV[1]  now, ms since the epoch, as a decimal string; 'now,grace' for a replayed now (see
 *          `nowArg`); '' reads Redis TIME
 * ARGV[2]  operation: 'acquire', 'peek' (no writes) or 'release'
 * ARGV[3]  the lease id ('' for a peek that holds none)
 * ARGV[4]  limit: most leases held at once (acquire, peek)
 * ARGV[5]  ttl, ms (acquire, peek)
 *
 * Returns `{ now, … }`, `now` as a `%.17g` string, then for 'acquire' and 'peek'
 * `allowed 0/1, count, oldest, newest`: the leases held after the step and their lowest and
 * highest `startedAt` as `%.17g` strings (nil when none), the inputs of core's `leaseDecision`;
 * for 'release', `released 0/1`.
 */
export const LEASE_SCRIPT = `${PRELUDE_LUA}
local set, ttl_key = KEYS[1], KEYS[2]
local now, grace = read_now(ARGV[1])
local op, id = ARGV[2], ARGV[3]

local function score_of(reply)
  if reply[2] == nil then return nil end
  return tonumber(reply[2])
end

-- The set expires when its newest lease would (newest + ttl - now, ms rounded up; plus the replay
-- grace while it lives); its ttl with it.
local function expire_with(ttl)
  local newest = score_of(redis.call('ZRANGE', set, -1, -1, 'WITHSCORES'))
  local px = math.ceil(newest + ttl - now)
  if px > 0 then px = px + grace end
  px = fmt(px)
  redis.call('PEXPIRE', set, px)
  redis.call('SET', ttl_key, fmt(ttl), 'PX', px)
end

if op == 'release' then
  local ttl = redis.call('GET', ttl_key)
  if ttl then
    ttl = tonumber(ttl)
    redis.call('ZREMRANGEBYSCORE', set, '-inf', fmt(now - ttl))
  end
  local released = redis.call('ZREM', set, id)
  if redis.call('ZCARD', set) == 0 then
    redis.call('DEL', set, ttl_key)
  elseif ttl then
    expire_with(ttl)
  end
  return { fmt(now), released }
end

local limit, ttl = tonumber(ARGV[4]), tonumber(ARGV[5])
local cutoff = now - ttl

if op == 'peek' then
  -- Leases with startedAt <= cutoff are stale: count only the live ones, write nothing.
  local live = '(' .. fmt(cutoff)
  local count = redis.call('ZCOUNT', set, live, '+inf')
  local held = redis.call('ZSCORE', set, id)
  local allowed = count < limit or (held and tonumber(held) > cutoff)
  local oldest = score_of(redis.call('ZRANGEBYSCORE', set, live, '+inf', 'WITHSCORES', 'LIMIT', 0, 1))
  local newest = score_of(redis.call('ZREVRANGEBYSCORE', set, '+inf', live, 'WITHSCORES', 'LIMIT', 0, 1))
  return { fmt(now), allowed and 1 or 0, count, oldest and fmt(oldest) or false, newest and fmt(newest) or false }
end

redis.call('ZREMRANGEBYSCORE', set, '-inf', fmt(cutoff))
local count = redis.call('ZCARD', set)
local held = redis.call('ZSCORE', set, id)
local allowed = held or count < limit
if allowed then
  -- A renewal moves its lease to now; a new lease is added.
  if redis.call('ZADD', set, fmt(now), id) == 1 then count = count + 1 end
  expire_with(ttl)
end
local oldest, newest = nil, nil
if count > 0 then
  oldest = score_of(redis.call('ZRANGE', set, 0, 0, 'WITHSCORES'))
  newest = score_of(redis.call('ZRANGE', set, -1, -1, 'WITHSCORES'))
end
return { fmt(now), allowed and 1 or 0, count, oldest and fmt(oldest) or false, newest and fmt(newest) or false }
`;
