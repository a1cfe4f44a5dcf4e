import type { Algorithm } from '../algorithm.js';
import type { BlockOptions } from '../block.js';
import type { Decision } from '../decision.js';
import type { Duration } from '../duration.js';
import type { Store } from '../store.js';
import type { HeaderFormat } from './headers.js';
import type { RequestAccess, WarningCode } from './keys.js';
import type { PlanCacheOptions, PlanFunction } from './plan-cache.js';

/**
 * A limit's key: `byIp()`, `byToken()`… or your own function, synchronous or async (a tenant
 * looked up from a session). `undefined` skips the limit for the request.
 */
export type LimitKey<Req> = (
  req: Req,
  access: RequestAccess<Req>,
) => string | undefined | Promise<string | undefined>;

/** How a finished response is told apart for `count`: its status, and whether it was sent whole. */
export interface ResponseOutcome {
  /** The response's status code (as set when it ended). */
  readonly statusCode: number;
  /** `false` when the response never finished: the client left or the connection failed. */
  readonly finished: boolean;
}

/**
 * Which responses keep the units their request took:
 * - `'all'`: every admitted request counts.
 * - `'failed'`: only failed responses count (status ≥ 400, or never finished); a successful
 *   one gives its units back when it ends. The login brute-force limit: failed attempts count,
 *   a user who logs in is not slowed down.
 * - `'successful'`: only successful responses count (status < 400 and finished).
 * - a function of the request and its `ResponseOutcome`: `true` keeps the units.
 */
export type CountWhen<Req> =
  | 'all'
  | 'failed'
  | 'successful'
  | ((req: Req, outcome: ResponseOutcome) => boolean);

/** One named limit of an HTTP middleware. */
export interface HttpLimit<Req> {
  /**
   * Shown in `RateLimit` headers and `decision.policy`, and part of the stored key: two
   * middlewares with the same algorithm settings count separately unless they share a name.
   * @default the algorithm's kind, e.g. `'token-bucket'`
   */
  name?: string;
  /**
   * What the limit counts against. Returning `undefined` skips this limit for the request.
   * @default byIp()
   */
  key?: LimitKey<Req>;
  /**
   * The algorithm and its parameters, e.g. `tokenBucket({ capacity: 20, refillInterval: '1s' })`;
   * or a function of the request answering one, sync or async (plan tiers): its answers are
   * cached per key (`planCache`), and such a limit needs a `name`.
   */
  algorithm: Algorithm | PlanFunction<Req>;
  /**
   * `false`: shadow mode, for rolling a new limit out. The limit counts and reports (hooks,
   * `req.rateLimit.limits`, metrics; headers with `shadowHeaders`) but never refuses a request
   * nor vetoes the other limits.
   * @default true
   */
  enforce?: boolean;
  /**
   * After this limit refuses a client, refuse it for a while (`reason: 'blocked'`, 429): ms,
   * `'15m'`, or `{ duration, factor, max, decay }` to lengthen the block for repeat offenders.
   * On Redis the block holds across processes, and blocked keys are answered by the deny cache.
   * @default no block
   */
  block?: Duration | BlockOptions;
}

/** A warning about the app's configuration, given once. */
export interface SluiceWarning {
  readonly code: WarningCode;
  readonly message: string;
}

/**
 * Options every adapter shares. Resolved once, when the middleware is created. All optional:
 * options without `limits`, `algorithm` or `name` limit each client address to 100 requests a
 * minute (`slidingWindowCounter({ limit: 100, window: '1m' })`, named `'default'`).
 */
export interface HttpLimitOptions<Req> {
  /**
   * Several limits checked together in one store call, all-or-nothing: every limit admits and
   * consumes, or none does. Use either `limits`, or the single-limit shorthand `algorithm` (with
   * optional `key` and `name`).
   * @default one limit, `{ name: 'default', key: byIp(), algorithm: slidingWindowCounter({ limit: 100, window: '1m' }) }`,
   * when neither `limits` nor `algorithm` nor `name` is given
   * @example [{ name: 'burst', key: byIp(), algorithm: tokenBucket({ capacity: 20, refillInterval: '10s' }) },
   *           { name: 'daily', key: byToken(), algorithm: slidingWindowLog({ limit: 1000, window: '1d' }) }]
   */
  limits?: readonly HttpLimit<Req>[];
  /**
   * Single-limit shorthand: the algorithm, or a function of the request answering one. A `name`
   * without it is refused (`ERR_SLUICE_MISSING_OPTION`).
   * @default `slidingWindowCounter({ limit: 100, window: '1m' })` named `'default'`, when neither
   * `limits` nor `name` is given
   */
  algorithm?: Algorithm | PlanFunction<Req>;
  /** Single-limit shorthand: the key. @default byIp() */
  key?: LimitKey<Req>;
  /** Single-limit shorthand: the name. @default the algorithm's kind (`'default'` for the default limit) */
  name?: string;
  /** Single-limit shorthand: `false` for shadow mode (see `HttpLimit.enforce`). @default true */
  enforce?: boolean;
  /** Single-limit shorthand: the block after a refusal (see `HttpLimit.block`). @default no block */
  block?: Duration | BlockOptions;
  /** Where limit state lives. @default a new `MemoryStore()` per middleware */
  store?: Store;
  /**
   * RateLimit header format on allowed and refused responses, or `false` for none.
   * @default 'ietf'
   */
  headers?: HeaderFormat | false;
  /** Requests for which this returns (or resolves to) `true` are not limited and get no headers. */
  skip?: (req: Req) => boolean | Promise<boolean>;
  /**
   * Client addresses (the framework's `req.ip`) and CIDR ranges that are never limited, e.g.
   * `['127.0.0.1', '10.0.0.0/8', '2001:db8::/32']`.
   * @default []
   */
  allowList?: readonly string[];
  /**
   * Units a request takes from every limit: an integer ≥ 1, or a function of the request (a bulk
   * endpoint that costs one unit per item), sync or async. With `settle`, this is the estimate
   * taken before the request runs.
   * @default 1
   */
  cost?: number | ((req: Req) => number | Promise<number>);
  /**
   * Which responses keep their units (see `CountWhen`); the others give them back when the
   * response ends. `'failed'` makes a login limit count only failed attempts. Needs a store with
   * `refund` (every built-in store has it); otherwise creation fails with `ERR_SLUICE_UNSUPPORTED`.
   * @default 'all'
   */
  count?: CountWhen<Req>;
  /**
   * For limits whose `algorithm` is a function: how many keys' plans are kept per limit and for
   * how long. A key whose plan changes carries its consumption over to the new plan.
   * @default { max: 10000, ttl: '1m' }
   */
  planCache?: PlanCacheOptions;
  /**
   * `'refuse'`: answer 429 at once. `'delay'`: hold the request instead, for the Decision's
   * `delay` (queue algorithms such as `leakyBucketQueue`) or, for other algorithms, until its
   * `retryAfter` and then check once more; refuse only when the wait would exceed `maxDelay`.
   * A held request whose client disconnects gives its queue slot back (on stores with `refund`).
   * @default 'refuse'
   */
  onLimit?: 'refuse' | 'delay';
  /**
   * Longest time a request is held in `'delay'` mode: ms or `'2s'`. Longer waits are refused.
   * @default '5s'
   */
  maxDelay?: Duration;
  /**
   * When the store fails (or a key, skip, cost or plan function throws or rejects): `'allow'` lets the request through
   * without headers (fail open), `'deny'` answers 503 with `Retry-After: 1` (fail closed). Either
   * way `onError` is told; the error never becomes an unhandled rejection.
   * @default 'allow'
   */
  storeFailure?: 'allow' | 'deny';
  /** Called for every refused request (after headers are set, before the response). For metrics. */
  onLimited?: (req: Req, decision: Decision) => void;
  /**
   * Called for every decision, allowed or refused, shadow limits included (in `decision.limits`,
   * marked `shadow: true`), before the response; not for requests that were not limited (skipped,
   * allow-listed, no key, store failure under `'allow'`). For metrics (`@sluice/otel`).
   * @default none
   */
  onDecision?: (req: Req, decision: Decision) => void;
  /**
   * Called when a limit's refusal starts a block (a limit with `block`; shadow limits too), with
   * the request's decision; `decision.limits` holds the blocking limit's decision, whose
   * `retryAfter` is when the block ends. Not called for the requests refused during the block.
   * @default none
   */
  onBlocked?: (req: Req, decision: Decision) => void;
  /**
   * Whether limits in shadow mode (`enforce: false`) appear in the RateLimit headers.
   * @default false
   */
  shadowHeaders?: boolean;
  /**
   * Called when the store or a key/cost/skip function fails.
   * @default logs through the framework (Fastify `request.log.error`, or `console.error` when the
   * app has no Fastify logger; Express, Koa and Hono `console.error`; Nest's `Logger`), in a few
   * lines: the first error of each distinct message with its stack (up to 10 messages), then a
   * count at most every 10 s. A function given here is called for every error.
   */
  onError?: (error: Error, req: Req) => void;
  /**
   * Configuration warnings, each given once (`X-Forwarded-For` without trust proxy, trust proxy
   * trusting everything, `byRoute()` before routing).
   * @default Fastify `app.log.warn` (`process.emitWarning` when the app has no Fastify logger),
   * Express and Koa `process.emitWarning`, Hono `console.warn`, Nest's `Logger`
   */
  onWarning?: (warning: SluiceWarning) => void;
  /**
   * How a request is held in `'delay'` mode: resolve after `ms`, reject when `signal` aborts (the
   * client disconnected). Replace it to use fake timers in tests.
   * @default a timer (the global `setTimeout`), cleared when `signal` aborts
   */
  hold?: (ms: number, signal: AbortSignal) => Promise<void>;
}

/**
 * The options that make the limits (the rest are settings): what Fastify's route options merge
 * by name over the plugin's.
 */
export const LIMIT_OPTIONS = [
  'limits',
  'algorithm',
  'key',
  'name',
  'enforce',
  'block',
] as const satisfies readonly (keyof HttpLimitOptions<unknown>)[];

/** The option names every adapter accepts; each adapter adds its own. */
export const HTTP_OPTIONS = [
  ...LIMIT_OPTIONS,
  'store',
  'headers',
  'skip',
  'allowList',
  'cost',
  'count',
  'planCache',
  'onLimit',
  'maxDelay',
  'storeFailure',
  'onLimited',
  'onDecision',
  'onBlocked',
  'shadowHeaders',
  'onError',
  'onWarning',
  'hold',
] as const satisfies readonly (keyof HttpLimitOptions<unknown>)[];

/** Compile-time check: an option added to the interface but not to `HTTP_OPTIONS` is an error here. */
type AssertNever<T extends never> = T;
export type UnlistedHttpOptions = AssertNever<
  Exclude<keyof HttpLimitOptions<unknown>, (typeof HTTP_OPTIONS)[number]>
>;
