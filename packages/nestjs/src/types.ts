import type { Decision } from '@sluice/core';

declare global {
  namespace Express {
    interface Request {
      /** The rate-limit Decision of the last sluice limit that limited this request. */
      rateLimit?: Decision;
    }
  }
}
