import { EPSILON } from '@sluice/core/adapter';

/** The constants of the prelude, all a lean single-limit script holds of it (see `lean.ts`). */
export const CONSTANTS_LUA = `
local EPSILON = ${EPSILON.toExponential()}
local NONE, RATE, COST = 0, 1, 2
`;

/**
 * `read_now` of the prelude, inline, for the scripts that define no function (a closure costs
 * Redis time on every call): sets the locals `now` and `grace` from ARGV[1] as `read_now` does.
 */
export const READ_NOW_INLINE_LUA = `-- read_now, inline: the caller's time, or Redis TIME; the replay grace.
local now, grace = tonumber(ARGV[1]), 0
if now == nil then
  if ARGV[1] == '' then
    local t = redis.call('TIME')
    now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
  else
    local comma = string.find(ARGV[1], ',', 1, true)
    now, grace = tonumber(string.sub(ARGV[1], 1, comma - 1)), tonumber(string.sub(ARGV[1], comma + 1))
  end
end`;

/** The constants and `ceil_ms` (the sliding windows' fragments use it; the lean twins inline it). */
const DECISION_LUA = `${CONSTANTS_LUA}
-- decision.ts ceilMs: ms to whole ms, rounded up, never negative; within EPSILON of a whole ms
-- rounds down to it (the algorithms read time EPSILON late).
local function ceil_ms(ms)
  if ms <= EPSILON then return 0 end
  return math.ceil(ms - EPSILON)
end
`;

/**
 * Lua shared by every script: the constants and helpers of `@sluice/core`'s `decision.ts` and
 * `algorithm.ts`, the state codec, and `read_now`. Numbers cross the boundary as strings written with
 * `%.17g`, which round-trips every double, so Lua and TypeScript compute on the same bits.
 *
 * A decision is `{ allowed, limit, remaining, resetAfter, retryAfter, delay, reason }` with
 * `reason` one of `NONE`, `RATE` ('rate-limited'), `COST` ('cost-exceeds-limit').
 */
export const PRELUDE_LUA = `${DECISION_LUA}
local function fmt(x)
  return string.format('%.17g', x)
end

local function decide(allowed, limit, remaining, reset_after, retry_after, delay, reason)
  return { allowed, limit, remaining, reset_after, retry_after, delay, reason }
end

-- A state is a list of numbers, stored as one string: '12.5' or '3,1700000000000'.
local function decode(raw)
  -- Most states are one number ('12.5'): no pattern matching for those.
  local one = tonumber(raw)
  if one ~= nil then return { one } end
  local state = {}
  for token in string.gmatch(raw, '[^,]+') do state[#state + 1] = tonumber(token) end
  return state
end

-- A one-number state goes to Redis as a Lua number, which Redis writes exactly itself (%.17g, or
-- the shortest round-trip form from Redis 7.2): no string.format on the hot path. \`exact\` asks
-- for the string (the split journal compares it later with what the key holds).
local function encode(state, exact)
  if #state == 1 then
    if exact then return fmt(state[1]) end
    return state[1]
  end
  local parts = {}
  for i = 1, #state do parts[i] = fmt(state[i]) end
  return table.concat(parts, ',')
end

-- The time of the call and its replay grace (see nowArg in script-command.ts): 'now' (the store's
-- clock), 'now,grace' (a caller's replayed now: keys live grace ms longer in wall time), or ''
-- (Redis TIME, µs precision).
local function read_now(arg)
  local now = tonumber(arg)
  if now ~= nil then return now, 0 end
  if arg == '' then
    local t = redis.call('TIME')
    return tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000, 0
  end
  local comma = string.find(arg, ',', 1, true)
  return tonumber(string.sub(arg, 1, comma - 1)), tonumber(string.sub(arg, comma + 1))
end

local function copy(list)
  local out = {}
  for i = 1, #list do out[i] = list[i] end
  return out
end
`;
