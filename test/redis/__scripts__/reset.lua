
if redis.call('TYPE', KEYS[1]).ok == 'hash' then return redis.call('HDEL', KEYS[1], unpack(ARGV)) end
return redis.call('DEL', KEYS[1])
