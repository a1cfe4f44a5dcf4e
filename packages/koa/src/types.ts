import type { Decision } from '@sluice/core';

declare module 'koa' {
  interface DefaultState {
    /** The rate-limit Decision of the last sluice middleware that limited this request: `ctx.state.rateLimit`. */
    rateLimit?: Decision;
  }
}
