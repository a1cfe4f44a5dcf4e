import type { Request, Response } from 'express';
import type { ExpressRateLimitStore, ResolvedExpressRateLimitOptions } from './types.js';

/**
 * `skipSuccessfulRequests` / `skipFailedRequests`: gives a request's hit back once its outcome is
 * known. Listening starts before anything is awaited (a client can hang up while the store
 * answers); the hit is given back once at most, and not after the window it was counted in ended.
 * A failing `decrement` is logged, never an unhandled rejection.
 * @returns `arm(key, resetTime)`, called once the hit is counted; `undefined` when neither option is on
 */
export function watchOutcome(
  req: Request,
  res: Response,
  options: ResolvedExpressRateLimitOptions,
  store: ExpressRateLimitStore,
): ((key: string, resetTime: Date | undefined) => void) | undefined {
  const { skipFailedRequests: failed, skipSuccessfulRequests: succeeded } = options;
  if ((!failed && !succeeded) || typeof res.once !== 'function') return undefined;
  const event = (name: string) => new Promise<void>((resolve) => res.once(name, () => resolve()));
  const finished = event('finish');
  const closed = failed ? event('close') : undefined;
  const errored = failed ? event('error') : undefined;
  return (key, resetTime) => {
    let given = false;
    const giveBack = async (): Promise<void> => {
      if (given || (resetTime !== undefined && Date.now() >= resetTime.getTime())) return;
      given = true;
      await store.decrement(key);
    };
    const log = (error: unknown) =>
      options.logger.error(error, 'sluice (fromExpressRateLimit): giving a hit back failed');
    finished
      .then(async () => {
        const success = await options.requestWasSuccessful(req, res);
        if (success ? succeeded : failed) await giveBack();
      })
      .catch(log);
    closed?.then(() => (res.writableEnded ? undefined : giveBack())).catch(log);
    errored?.then(giveBack).catch(log);
  };
}
