import type { Decision } from '@sluice/core';

// `req.rateLimit` for apps on Express, typed where Express's own types declare requests (a global
// namespace: no import of express, so an app on Fastify compiles without it). On Fastify the same
// property is set; `NestRequest` types it on both.
declare global {
  namespace Express {
    interface Request {
      /** The rate-limit Decision of the last sluice limit that limited this request. */
      rateLimit?: Decision;
    }
  }
}
