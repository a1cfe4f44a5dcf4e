-- Smyte's RL.REDUCE as a Redis script: the EVALSHA side of bench/src/server/compare.ts.
-- KEYS[1] bucket; ARGV[1] max, ARGV[2] refill amount, ARGV[3] refill time (ms), ARGV[4] take.
-- Returns the tokens before taking, with Redis TIME as the clock.
local max = tonumber(ARGV[1])
local refill = tonumber(ARGV[2])
local ms = tonumber(ARGV[3])
local take = tonumber(ARGV[4])
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local s = redis.call('HMGET', KEYS[1], 'v', 't')
local v = tonumber(s[1])
local last = tonumber(s[2])
if v == nil then
  v = max
  last = now
else
  local n = math.floor(math.max(0, now - last) / ms)
  v = math.min(max, v + n * refill)
  last = last + n * ms
end
if take > 0 then
  redis.call('HSET', KEYS[1], 'v', math.max(v - take, 0), 't', last)
  redis.call('PEXPIRE', KEYS[1], math.ceil(max / refill) * ms)
end
return v
