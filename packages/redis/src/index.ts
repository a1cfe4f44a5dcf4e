export type { BreakerOptions, BreakerState } from './breaker.js';
export { escapeKey, leaseKeys } from './keys.js';
export type { FailurePolicy, RedisStoreErrorEvent, RedisStoreOptions } from './options.js';
export type { RedisLeases } from './redis-leases.js';
export { RedisStore } from './redis-store.js';
export { BATCH_SCRIPT } from './scripts/batch-script.js';
export { LEASE_SCRIPT } from './scripts/lease-script.js';
export { REFUND_SCRIPT, SPLIT_REFUND_SCRIPT } from './scripts/refund-script.js';
export { hashSlot } from './slot.js';
