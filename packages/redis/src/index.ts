export type { BreakerOptions, BreakerState } from './breaker.js';
export { escapeKey } from './keys.js';
export type { FailurePolicy, RedisStoreErrorEvent, RedisStoreOptions } from './options.js';
export { RedisStore } from './redis-store.js';
export { BATCH_SCRIPT } from './scripts/batch-script.js';
export { ROLLBACK_SCRIPT } from './scripts/rollback-script.js';
export { hashSlot } from './slot.js';
