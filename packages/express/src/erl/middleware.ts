import { decide, named } from '@sluice/core/adapter';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { CheckName } from './checks.js';
import { quotaName, setLegacyHeaders, setRetryAfter, setStandardHeaders } from './headers.js';
import { watchOutcome } from './outcome.js';
import type {
  ClientRateLimitInfo,
  ExpressRateLimitInfo,
  ExpressRateLimitStore,
  HeaderDraft,
  ResolvedExpressRateLimitOptions,
  ValueOrFunction,
} from './types.js';

/** express-rate-limit's middleware, with its `resetKey(key)` and `getKey(key)`. */
export type ExpressRateLimitMiddleware = RequestHandler & {
  /** Forgets a client's hits (the store's `resetKey`). */
  resetKey(key: string): void | Promise<void>;
  /** A client's hits without counting one (the store's `get`); throws when the store has no `get`. */
  getKey(key: string): ClientRateLimitInfo | undefined | Promise<ClientRateLimitInfo | undefined>;
};

const DRAFTS: readonly string[] = ['draft-6', 'draft-7', 'draft-8'] satisfies HeaderDraft[];

/** Stores already driven by a limiter: a second limiter on the same instance mixes their counts. */
const storesInUse = new WeakSet<object>();

const resolveValue = <T>(value: ValueOrFunction<T>, req: Request, res: Response): T | Promise<T> =>
  typeof value === 'function' ? (value as (req: Request, res: Response) => T | Promise<T>)(req, res) : value;

/**
 * express-rate-limit's request life over its store contract: skip → key → `increment` (every hit
 * counts, refused ones included) → the request property and headers → refuse past the limit, or
 * `next()`; the hit given back by outcome where asked. Every function option gets `(req, res)`
 * and is awaited; anything that throws (a key, `skip`, `limit`, the `handler`, the store unless
 * `passOnStoreError`) goes to `next(error)`: an app or store failure is a 500, never a 429.
 */
export function expressRateLimitMiddleware(
  options: ResolvedExpressRateLimitOptions,
  store: ExpressRateLimitStore,
  check: (name: CheckName) => void,
): ExpressRateLimitMiddleware {
  const { logger, windowMs, requestPropertyName: property } = options;
  if (storesInUse.has(store)) check('unsharedStore');
  storesInUse.add(store);
  initStore(options, store);
  const standard = String(options.standardHeaders);
  if (options.standardHeaders !== false && !DRAFTS.includes(standard)) check('headersDraftVersion');
  if (options.limit === 0) check('limit');
  const draft = DRAFTS.includes(standard) ? (standard as HeaderDraft) : undefined;
  // As there: `Retry-After` whenever some header option is on, even a draft name it does not know.
  const headersOn = options.legacyHeaders || options.standardHeaders !== false;

  async function limit(req: Request, res: Response, next: NextFunction): Promise<void> {
    const arm = watchOutcome(req, res, options, store);
    if (await options.skip(req, res)) return next();
    const answered: unknown = await options.keyGenerator(req, res);
    // express-rate-limit hands any answer to the store, which makes text of it: a numeric id is
    // a fine key; `undefined` (an anonymous request) is one shared key there too, so said once.
    if (typeof answered !== 'string' && typeof answered !== 'number') check('keyType');
    const key = String(answered);
    let hit: ClientRateLimitInfo;
    try {
      hit = await store.increment(key);
    } catch (error) {
      if (!options.passOnStoreError) throw error;
      logger.error(
        error,
        'sluice (fromExpressRateLimit): the store failed; allowing the request without rate limiting (passOnStoreError)',
      );
      return next();
    }
    const used = hit.totalHits;
    if (!Number.isInteger(used) || used < 1) check('positiveHits');
    // A numeric string is a number to express-rate-limit's comparison; anything else would
    // silently never limit there, so it is the app's error here (next(error)).
    const max = Number(await resolveValue(options.limit, req, res));
    if (!(max >= 0)) throw new TypeError(`limit answered ${String(max)}; it must answer a number ≥ 0`);
    const info = requestInfo(max, used, hit.resetTime, key, windowMs);
    (req as unknown as Record<string, unknown>)[property] = info;
    const facts = { limit: max, remaining: info.remaining, resetTime: hit.resetTime, windowMs };
    if (options.legacyHeaders) setLegacyHeaders(res, facts);
    if (draft !== undefined) {
      const quota = draft === 'draft-8' ? await resolveValue(options.identifier, req, res) : '';
      setStandardHeaders(res, draft, facts, quota, key);
    }
    arm?.(key, hit.resetTime);
    if (used <= max) return next();
    if (headersOn) setRetryAfter(res, facts);
    await options.handler(req, res, next, options);
  }

  const middleware = named(async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    let passed = false;
    const onward = ((error?: unknown) => {
      passed = true;
      next(error);
    }) as NextFunction;
    try {
      await limit(req, res, onward);
    } catch (error) {
      // Once the request has moved on (a handler that called next, then threw), a second next
      // would run the rest of the app twice: the error is logged instead.
      if (!passed) next(error);
      else logger.error(error, 'sluice (fromExpressRateLimit): an error after the request moved on');
    }
  }, 'sluiceExpressRateLimit') as ExpressRateLimitMiddleware;
  middleware.resetKey = (key) => store.resetKey(key);
  middleware.getKey = (key) => {
    if (typeof store.get !== 'function') throw new Error('getKey: the store has no get(key)');
    return store.get(key);
  };
  return middleware;
}

/** express-rate-limit's default `handler`: `statusCode`, then `message` (a value or `(req, res)`, awaited) via `res.send`. */
export async function sendMessage(
  req: Request,
  res: Response,
  _next: NextFunction,
  options: ResolvedExpressRateLimitOptions,
): Promise<void> {
  res.status(options.statusCode);
  const message = await resolveValue(options.message, req, res);
  if (!res.writableEnded) res.send(message);
}

/** A store's `init` runs once, now; its failure is logged (as express-rate-limit does): the first requests then meet the store's own error. */
function initStore(options: ResolvedExpressRateLimitOptions, store: ExpressRateLimitStore): void {
  const { logger } = options;
  if (typeof store.init !== 'function') return;
  try {
    const started = store.init(options);
    if (started instanceof Promise) {
      started.catch((error: unknown) =>
        logger.error(error, 'sluice (fromExpressRateLimit): the store failed to start (async init)'),
      );
    }
  } catch (error) {
    logger.error(error, 'sluice (fromExpressRateLimit): the store failed to start (init)');
  }
}

/** express-rate-limit's request property, which is also a sluice `Decision` (its hidden `current` included). */
function requestInfo(
  limit: number,
  used: number,
  resetTime: Date | undefined,
  key: string,
  windowMs: number,
): ExpressRateLimitInfo {
  const allowed = used <= limit;
  const resetAfter = resetTime === undefined ? windowMs : Math.max(0, resetTime.getTime() - Date.now());
  const decision = decide(
    allowed,
    limit,
    Math.max(limit - used, 0),
    resetAfter,
    allowed ? 0 : resetAfter,
    0,
    quotaName(limit, windowMs),
    allowed ? undefined : 'rate-limited',
  );
  // `limits` is a getter of the decision, which a spread does not copy.
  const info = { ...decision, limits: decision.limits, used, resetTime, key };
  Object.defineProperty(info, 'current', { value: used, enumerable: false });
  return info;
}
