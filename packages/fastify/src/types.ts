import type { Decision } from '@sluice/core';
import type { SluiceHook } from './hook.js';
import type { SluiceOptions } from './options.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Per-route limits: options that add to or override the global ones, or `false` to exempt the route. */
    rateLimit?: SluiceOptions | false;
  }
  interface FastifyRequest {
    /** The rate-limit Decision of the last sluice hook that limited this request. */
    rateLimit: Decision | undefined;
  }
  interface FastifyInstance {
    /** A hook applying these limits, for a route's `onRequest` or `preHandler`. */
    rateLimit(options: SluiceOptions): SluiceHook;
  }
}
