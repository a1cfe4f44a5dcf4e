import { expressRateLimitMiddleware, sendMessage } from './erl/middleware.js';
import { resolveOptions } from './erl/options.js';
import type { ExpressRateLimitOptions } from './erl/types.js';

const PLAN: unique symbol = Symbol('sluice.expressRateLimit');

/** express-rate-limit's options, checked: what `rateLimit()` turns into express-rate-limit's middleware. */
export interface ExpressRateLimitPlan {
  readonly [PLAN]: () => ReturnType<typeof expressRateLimitMiddleware>;
}

/**
 * express-rate-limit 8, option for option, as `rateLimit()` options: `rateLimit(fromExpressRateLimit(options))`
 * is the middleware express-rate-limit's `rateLimit(options)` is, with its `resetKey(key)` and
 * `getKey(key)`. Every option keeps its meaning and call signature (`(req, res)`, async
 * included), its `store` contract (rate-limit-redis and the others keep working), its headers
 * and its answers (a store failure is a 500 through `next(error)` unless `passOnStoreError`).
 * Without a `store`, clients are counted as express-rate-limit's MemoryStore counts them: a
 * window opening at a client's first hit. The options are checked now: a value it would fail on
 * under traffic, and the options express-rate-limit ignores, are refused with a coded
 * `SluiceError` naming the option. The differences kept on purpose are listed in
 * docs/migrating-from-express-rate-limit.md.
 * @example app.use(rateLimit(fromExpressRateLimit({ windowMs: 15 * 60 * 1000, limit: 100 })));
 */
export function fromExpressRateLimit(options?: ExpressRateLimitOptions): ExpressRateLimitPlan {
  const { options: resolved, store, check } = resolveOptions(options, sendMessage);
  return { [PLAN]: () => expressRateLimitMiddleware(resolved, store, check) };
}

/** Whether `rateLimit()` was handed `fromExpressRateLimit`'s plan. */
export const isExpressRateLimitPlan = (options: unknown): options is ExpressRateLimitPlan =>
  typeof options === 'object' && options !== null && PLAN in options;

/** express-rate-limit's middleware for a plan. */
export const expressRateLimit = (plan: ExpressRateLimitPlan): ReturnType<typeof expressRateLimitMiddleware> =>
  plan[PLAN]();
