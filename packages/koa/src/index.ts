import './types.js';

// The public API of @sluice/core (keys, algorithms, limiters, shedders, stores), so a Koa app needs one import.
export * from '@sluice/core';
export type { RefusalHandler } from './exchange.js';
export type { ConcurrencyLimitOptions, FleetShedOptions, UtilizationShedOptions } from './guards.js';
export { concurrencyLimit, fleetShed, utilizationShed } from './guards.js';
export type { RateLimitOptions } from './rate-limit.js';
export { rateLimit } from './rate-limit.js';
