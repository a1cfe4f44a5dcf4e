export type { BreakerOptions, BreakerState, FailurePolicy, StoreLogger } from '@sluice/core/gate';
export type { NodeRedisClient } from './node-redis.js';
export type { RedisStoreErrorEvent, RedisStoreOptions } from './options.js';
export type { RedisLeases } from './redis-leases.js';
export { RedisStore } from './redis-store.js';
export type { SyncedStoreOptions } from './synced/options.js';
export { SyncedStore } from './synced-store.js';
