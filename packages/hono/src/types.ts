import type { Decision } from '@sluice/core';

declare module 'hono' {
  interface ContextVariableMap {
    /** The rate-limit Decision of the last sluice middleware that limited this request: `c.get('rateLimit')`. */
    rateLimit: Decision | undefined;
  }
}
