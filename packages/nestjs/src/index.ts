import './types.js';

// The public API of @sluice/core (keys, algorithms, limiters, shedders, stores), so a Nest app needs one import.
export * from '@sluice/core';
export { RateLimitException } from './exception.js';
export type {
  AdaptiveConcurrencyGuardOptions,
  ConcurrencyLimitOptions,
  FleetShedOptions,
  UtilizationShedOptions,
} from './guards.js';
export {
  AdaptiveConcurrencyGuard,
  ConcurrencyLimitGuard,
  FleetShedGuard,
  UtilizationShedGuard,
} from './guards.js';
export type { RateLimitGuardOptions, RateLimitOptions } from './rate-limit.js';
export { RATE_LIMIT, RateLimit, RateLimitGuard, SKIP_RATE_LIMIT, SkipRateLimit } from './rate-limit.js';
export type { NestRequest } from './request.js';
export type { SluiceThrottlerStorageOptions, ThrottlerRecord } from './throttler-storage.js';
export { SluiceThrottlerStorage } from './throttler-storage.js';
