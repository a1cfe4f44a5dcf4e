import './types.js';

// The public API of @sluice/core (keys, algorithms, limiters, shedders, stores), so a Hono app needs one import.
export * from '@sluice/core';
export type { HonoAccessOptions } from './access.js';
export type { RefusalHandler } from './exchange.js';
export type {
  AdaptiveConcurrencyGuardOptions,
  ConcurrencyLimitOptions,
  FleetShedOptions,
  UtilizationShedOptions,
} from './guards.js';
export { adaptiveConcurrency, concurrencyLimit, fleetShed, utilizationShed } from './guards.js';
export type { RateLimitMiddleware, RateLimitOptions } from './rate-limit.js';
export { rateLimit } from './rate-limit.js';
