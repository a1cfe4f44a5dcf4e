import type { Decision } from '@sluice/core';
import type { NextFunction, Request, Response } from 'express';

/** A value, or express-rate-limit's "value determining middleware": `(req, res)` answering it, sync or async. */
export type ValueOrFunction<T> = T | ((req: Request, res: Response) => T | Promise<T>);

/** What an express-rate-limit store answers for a client: its hits in the window and when the window ends. */
export interface ClientRateLimitInfo {
  totalHits: number;
  resetTime: Date | undefined;
}

/**
 * An express-rate-limit 7/8 store (rate-limit-redis, rate-limit-memcached, rate-limit-postgresql,
 * a store of the app's own): the contract `fromExpressRateLimit` drives, unchanged.
 */
export interface ExpressRateLimitStore {
  /** Called once at creation with the resolved options (`windowMs`, `limit`…). */
  init?(options: ResolvedExpressRateLimitOptions): void | Promise<void>;
  /** The client's current hits, without counting one (`middleware.getKey(key)`). */
  get?(key: string): ClientRateLimitInfo | undefined | Promise<ClientRateLimitInfo | undefined>;
  /** Counts one hit (refused ones included) and answers the client's hits and window end. */
  increment(key: string): ClientRateLimitInfo | Promise<ClientRateLimitInfo>;
  /** Gives one hit back (`skipSuccessfulRequests` / `skipFailedRequests`). */
  decrement(key: string): void | Promise<void>;
  /** Forgets the client (`middleware.resetKey(key)`). */
  resetKey(key: string): void | Promise<void>;
  /** Forgets every client. */
  resetAll?(): void | Promise<void>;
  /** Releases timers and connections. */
  shutdown?(): void | Promise<void>;
  /** `true` when its counts live in this process only (express-rate-limit's MemoryStore). */
  localKeys?: boolean;
  /** The store's key prefix, where it has one. */
  prefix?: string;
}

/** The callback store of express-rate-limit 5 and before (`incr(key, cb)`), still accepted by 8. */
export interface LegacyExpressRateLimitStore {
  incr(
    key: string,
    callback: (error: Error | undefined, totalHits: number, resetTime: Date | undefined) => void,
  ): void;
  decrement(key: string): void;
  resetKey(key: string): void;
  resetAll?(): void;
}

/** express-rate-limit's logger: `error(error, message)` and `warn(warning, message)`. */
export interface ExpressRateLimitLogger {
  error(...args: unknown[]): void;
  warn(...args: unknown[]): void;
}

/** Answers a request over its limit (express-rate-limit's `handler`). */
export type ExpressRateLimitHandler = (
  req: Request,
  res: Response,
  next: NextFunction,
  options: ResolvedExpressRateLimitOptions,
) => unknown;

/** express-rate-limit's IETF header drafts. */
export type HeaderDraft = 'draft-6' | 'draft-7' | 'draft-8';

/**
 * The request property (`req.rateLimit` unless `requestPropertyName` says otherwise): express-rate-limit's
 * `{ limit, used, remaining, resetTime, key }` (and its hidden `current`), which is also a sluice `Decision`.
 */
export interface ExpressRateLimitInfo extends Decision {
  /** Hits counted in the window, this one included. */
  readonly used: number;
  /** When the window ends, as the store said; `undefined` when the store does not say. */
  readonly resetTime: Date | undefined;
  /** The client's key. */
  readonly key: string;
}

/** Every option of express-rate-limit 8, with its call signatures; an option given as `undefined` is left out, as there. */
export interface ExpressRateLimitOptions {
  /** The window, ms: an integer from 1 to 2³¹−1 (a Node timer's range). @default 60_000 */
  windowMs?: number | undefined;
  /** Requests per window per client: an integer ≥ 0 (0 refuses every request), or `(req, res)` answering it, sync or async. @default 5 */
  limit?: ValueOrFunction<number> | undefined;
  /** The old name of `limit`; `limit` wins when both are given. @default 5 */
  max?: ValueOrFunction<number> | undefined;
  /** The body of a refusal, sent with `res.send`: a value, or `(req, res)` answering it, sync or async. @default 'Too many requests, please try again later.' */
  message?: unknown | undefined;
  /** The status of a refusal: an integer from 100 to 999 (what Node can send). @default 429 */
  statusCode?: number | undefined;
  /** Answers a refusal instead of `statusCode` + `message`; a throw goes to `next(error)`. @default sends `statusCode` and `message` */
  handler?: ExpressRateLimitHandler | undefined;
  /** `X-RateLimit-Limit`, `-Remaining`, `-Reset` (epoch seconds). @default true */
  legacyHeaders?: boolean | undefined;
  /** The express-rate-limit 5 name of `legacyHeaders`. @default true */
  headers?: boolean | undefined;
  /** IETF headers: `true` (draft-6), `'draft-6'`, `'draft-7'`, `'draft-8'`; an unknown value warns and sends none. @default false */
  standardHeaders?: boolean | HeaderDraft | undefined;
  /** draft-8's quota name: a string or `(req, res)`. @default `${limit}-in-${window}` ("5-in-2hrs") */
  identifier?: ValueOrFunction<string> | undefined;
  /** Where the request's `ExpressRateLimitInfo` goes on `req`. @default 'rateLimit' */
  requestPropertyName?: string | undefined;
  /** Give failed requests (status ≥ 400, a closed or failed response) their hit back. @default false */
  skipFailedRequests?: boolean | undefined;
  /** Give successful requests their hit back. @default false */
  skipSuccessfulRequests?: boolean | undefined;
  /** The client's key, `(req, res)`, sync or async. @default the client address, IPv6 by `ipv6Subnet` */
  keyGenerator?: (req: Request, res: Response) => string | Promise<string> | undefined;
  /** The default key's IPv6 prefix length, an integer from 32 to 64, `false` for the full address, or `(req, res)`. @default 56 */
  ipv6Subnet?: number | false | ((req: Request, res: Response) => number | Promise<number>) | undefined;
  /** `true`: the request is not counted. `(req, res)`, sync or async. @default never */
  skip?: (req: Request, res: Response) => boolean | Promise<boolean> | undefined;
  /** What "successful" means to the two `skip…Requests` options, `(req, res)`, sync or async. @default `res.statusCode < 400` */
  requestWasSuccessful?: (req: Request, res: Response) => boolean | Promise<boolean> | undefined;
  /** An express-rate-limit store (or a legacy callback store). @default a memory store whose window starts at a client's first hit */
  store?: ExpressRateLimitStore | LegacyExpressRateLimitStore | undefined;
  /** express-rate-limit's checks: `false` turns them all off, an object turns named ones on or off. @default true */
  validate?: boolean | Record<string, boolean> | undefined;
  /** `true`: a store failure lets the request through (logged); `false`: it goes to `next(error)` (a 500). @default false */
  passOnStoreError?: boolean | undefined;
  /** Where errors and warnings go. @default the console */
  logger?: ExpressRateLimitLogger | undefined;
}

/** The options as the store's `init` and the `handler` receive them: defaults filled in, the store's contract promised. */
export interface ResolvedExpressRateLimitOptions {
  readonly windowMs: number;
  readonly limit: ValueOrFunction<number>;
  readonly message: unknown;
  readonly statusCode: number;
  readonly handler: ExpressRateLimitHandler;
  readonly legacyHeaders: boolean;
  /** `true` is resolved to `'draft-6'` (typed as express-rate-limit types it, for its stores' `init`). (A name that is no draft stays as given, warned about, and sends no standard headers, as in express-rate-limit.) */
  readonly standardHeaders: boolean | HeaderDraft;
  readonly identifier: ValueOrFunction<string>;
  readonly requestPropertyName: string;
  readonly skipFailedRequests: boolean;
  readonly skipSuccessfulRequests: boolean;
  readonly keyGenerator: (req: Request, res: Response) => string | Promise<string>;
  readonly ipv6Subnet: Exclude<ExpressRateLimitOptions['ipv6Subnet'], undefined>;
  readonly skip: (req: Request, res: Response) => boolean | Promise<boolean>;
  readonly requestWasSuccessful: (req: Request, res: Response) => boolean | Promise<boolean>;
  /** The store in its promise form (a legacy store wrapped); typed as express-rate-limit types it, for its stores' `init`. */
  readonly store: ExpressRateLimitStore | LegacyExpressRateLimitStore;
  readonly validate: boolean | Record<string, boolean>;
  readonly passOnStoreError: boolean;
  readonly logger: ExpressRateLimitLogger;
  readonly [other: string]: unknown;
}
