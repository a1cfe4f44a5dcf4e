import type { Store } from '@sluice/core';
import type { FastifyRequest } from 'fastify';

/** A count or a window that may depend on the request and its key (sync or async). */
export type PerRequest<T> = T | ((request: FastifyRequest, key: string) => T | Promise<T>);

/** What `errorResponseBuilder` receives, as @fastify/rate-limit gives it. */
export interface ErrorResponseContext {
  /** 429, or 403 when `ban` is reached. */
  statusCode: number;
  /** Whether `ban` was reached. */
  ban: boolean;
  /** When to retry, in words: `'1 second'`, `'7 seconds'`, `'1 minute'`. */
  after: string;
  max: number;
  /** ms until the client may retry. */
  ttl: number;
}

/** The hooks a limit may run in: those with Fastify's `(request, reply, done)` signature. */
export type PeerHook = 'onRequest' | 'preValidation' | 'preHandler';

/**
 * The options of a limit as @fastify/rate-limit 11 takes them: the plugin's, a route's
 * `config.rateLimit`, `app.rateLimit()` and `app.createRateLimit()`.
 */
export interface FastifyRateLimitRouteOptions {
  /**
   * Requests per `timeWindow` per key, or a function of `(request, key)`. Not a finite number ≥ 0
   * (NaN, -5): the default, as @fastify/rate-limit does.
   * @default 1000
   */
  max?: PerRequest<number>;
  /**
   * The window: ms, a string (`'1 minute'`, `'30s'`), or a function of `(request, key)` in ms. It
   * opens at a key's first request. A number that is not finite and ≥ 0: the default.
   * @default 60000
   */
  timeWindow?: PerRequest<number> | string;
  /** The key of a request, sync or async. @default the client address, IPv6 by its /64 */
  keyGenerator?: (request: FastifyRequest) => string | number | Promise<string | number>;
  /** The prefix length IPv6 addresses are keyed by (default key only). @default 64 */
  ipv6Subnet?: number;
  /** Keys never limited, or a function of `(request, key)`, sync or async. @default none */
  allowList?: readonly string[] | ((request: FastifyRequest, key: string) => boolean | Promise<boolean>);
  /** Refusals in a window after which a key is answered 403 instead of 429. @default none */
  ban?: number;
  /** The hook the limit runs in. @default 'onRequest' */
  hook?: PeerHook;
  /** Each refused request restarts the key's window. @default false */
  continueExceeding?: boolean;
  /** A refused key is blocked a window, twice as long at each further block of a streak. @default false */
  exponentialBackoff?: boolean;
  /** Routes with the same `groupId` share their counters (route config only). @default the route's own */
  groupId?: string;
  /** The refusal, thrown to the app's error handler. @default an Error with `statusCode` and "Rate limit exceeded, retry in …" */
  errorResponseBuilder?: (request: FastifyRequest, context: ErrorResponseContext) => unknown;
  /** `RateLimit-Limit`, `-Remaining`, `-Reset` instead of `X-RateLimit-*`. @default false */
  enableDraftSpec?: boolean;
  /** Called for each admitted request with its key. */
  onExceeding?: (request: FastifyRequest, key: string) => void;
  /** Called for each refused request with its key. */
  onExceeded?: (request: FastifyRequest, key: string) => void;
  /** Called when a request is refused with 403 (`ban`). */
  onBanReach?: (request: FastifyRequest, key: string) => void;
  /** A store error lets the request through (`true`) or fails it with the error (`false`, 500). @default false */
  skipOnError?: boolean;
}

/** The headers each of `addHeaders` / `addHeadersOnExceeding` switches, by their lower-case names. */
export type HeaderSwitches = Readonly<Record<string, boolean>>;

/** The options of `app.register(fromFastifyRateLimit, options)`: @fastify/rate-limit 11's. */
export interface FastifyRateLimitOptions extends FastifyRateLimitRouteOptions {
  /** Every route is limited (`true`) or only those with a `config.rateLimit` (`false`). @default true */
  global?: boolean;
  /** Keys kept in memory (the default store's `maxKeys`). @default 100000 (sluice's; @fastify/rate-limit keeps 5000) */
  cache?: number;
  /**
   * An ioredis client: the counters live in Redis through `RedisStore` from `@sluice/redis`, which
   * the app passes in as `redisStore` (the adapter imports no store).
   */
  redis?: unknown;
  /** The Redis key prefix. @default 'fastify-rate-limit-' */
  nameSpace?: string;
  /** Headers sent on refusals, by name (`{ 'retry-after': false }`). @default all */
  addHeaders?: HeaderSwitches;
  /** Headers sent on admitted requests, by name. @default all */
  addHeadersOnExceeding?: HeaderSwitches;
  /**
   * A sluice store (`MemoryStore`, `RedisStore`…) for the counters. Not an @fastify/rate-limit
   * store class: those are refused (`ERR_SLUICE_UNSUPPORTED`).
   * @default a `MemoryStore` of `cache` keys, or a `RedisStore` on `redis`
   */
  store?: Store;
}
