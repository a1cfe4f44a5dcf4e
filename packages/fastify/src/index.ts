import './types.js';

// The public API of @sluice/core (keys, algorithms, limiters, shedders, stores), so a Fastify app needs one import.
export * from '@sluice/core';
export { fromFastifyRateLimit } from './compat/from-fastify-rate-limit.js';
export type {
  ErrorResponseContext,
  FastifyRateLimitOptions,
  FastifyRateLimitRouteOptions,
} from './compat/options.js';
export { normalizeIP as normalizeFastifyRateLimitIP } from './compat/peer-key.js';
export type { PeerCheck as FastifyRateLimitCheck } from './compat/peer-limit.js';
export type { SluiceHook } from './hook.js';
export type {
  AdaptiveConcurrencyGuardOptions,
  ConcurrencyLimitOptions,
  FastifyHookOptions,
  FleetShedOptions,
  SluiceOptions,
  SluicePluginOptions,
  UtilizationShedOptions,
} from './options.js';
export { sluice, sluice as default } from './plugin.js';
export { RateLimitedError } from './refused-error.js';
