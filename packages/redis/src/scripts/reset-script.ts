/**
 * Forgets the state of limits on one user key (`RedisStore.reset`): deletes their fields from the
 * user key's hash (the hash goes when its last field does). A key of another type under the hash's
 * name (written by something else) is deleted whole: resetting repairs it, where `HDEL` would fail
 * with WRONGTYPE as every other script does.
 *
 * KEYS[1]  the hash of the user key
 * ARGV[i]  the field of limit i
 *
 * Returns the number of fields (or keys) deleted.
 */
export const RESET_SCRIPT = `
if redis.call('TYPE', KEYS[1]).ok == 'hash' then return redis.call('HDEL', KEYS[1], unpack(ARGV)) end
return redis.call('DEL', KEYS[1])
`;
