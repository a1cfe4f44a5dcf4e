export type { BreakerOptions, BreakerState } from './gate/breaker.js';
export type { FailurePolicy, StoreLogger } from './gate/failure-options.js';
export type { NodeRedisClient } from './node-redis.js';
export type { RedisStoreErrorEvent, RedisStoreOptions } from './options.js';
export type { RedisLeases } from './redis-leases.js';
export { RedisStore } from './redis-store.js';
export type { SyncedStoreOptions } from './synced/options.js';
export { SyncedStore } from './synced-store.js';
